"""Probes with control tasks (firth.probe) against independent answers: a probe
recovers a planted linearly encoded label and stays near chance on noise; the
control task gives one label per type from the empirical tag distribution; every
layer read from one-layer copies equals the network's own outputs; and the probe
stages end to end, with the scorecard's probing findings on their output."""

import itertools
import json
from collections import Counter

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT

from firth.probe.probe import control_labels, train_probe

KW = dict(hidden=32, epochs=150, lr=0.05, l2=0.0, seed=0)


def _split(x, y, n):
    return x[:n], y[:n], x[n : 2 * n], y[n : 2 * n], x[2 * n :], y[2 * n :]


def test_a_probe_recovers_a_planted_label_and_not_noise():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 5, (1500,), generator=g)
    centres = torch.randn(5, 16, generator=g) * 3
    planted = centres[y] + torch.randn(1500, 16, generator=g)
    noise = torch.randn(1500, 16, generator=g)
    for kind, batch in (("linear", 0), ("mlp", 0), ("linear", 64), ("mlp", 64)):
        kw = KW | {"batch": batch}
        r = train_probe(*_split(planted, y, 500), kind=kind, classes=5, **kw)
        assert r.correct.mean() > 0.95
        r = train_probe(*_split(noise, y, 500), kind=kind, classes=5, **kw)
        assert r.correct.mean() < 0.3  # chance is 0.2
        assert 1 <= r.epochs <= KW["epochs"]
    # one seed, one probe, in mini-batches too
    a = train_probe(*_split(planted, y, 500), kind="mlp", classes=5, **KW, batch=64)
    b = train_probe(*_split(planted, y, 500), kind="mlp", classes=5, **KW, batch=64)
    assert (a.correct == b.correct).all() and a.epochs == b.epochs


def test_control_labels_are_one_draw_per_type_from_the_tag_distribution():
    rng = np.random.default_rng(0)
    tags = list(rng.choice(["NN", "VB", "DT"], size=3000, p=[0.6, 0.3, 0.1]))
    words = [f"w{i}" for i in range(3000)]
    text = ["a", "b", "a", "c", "b", "a"]
    out = control_labels(words, tags, text, seed=1)
    assert out[0] == out[2] == out[5] and out[1] == out[4]  # consistent per type
    assert out == control_labels(words, tags, text, seed=1)  # deterministic
    many = control_labels(words, tags, [f"t{i}" for i in range(20_000)], seed=1)
    share = Counter(many)
    assert share["NN"] / 20_000 == pytest.approx(0.6, abs=0.02)
    assert share["DT"] / 20_000 == pytest.approx(0.1, abs=0.02)
    other = control_labels(words, tags, [f"t{i}" for i in range(200)], seed=2)
    assert other != many[:200]


@pytest.mark.parametrize("family", ["lstm", "gru", "transformer"])
def test_every_layer_is_read_and_the_top_equals_the_model(family):
    from firth.config import load_sections
    from firth.lm.config import Lm
    from firth.lm.models import build_model
    from firth.probe.representations import lm_layers

    lm, _ = load_sections("lm", ROOT / "params.yaml", schema=Lm)
    upd = {"layers": 2}
    lm = lm.model_copy(update={family: getattr(lm, family).model_copy(update=upd)})
    torch.manual_seed(0)
    model = build_model(family, 50, lm, eos=0).eval()
    ids = [0, 5, 9, 3, 7]
    layers = lm_layers(model, ids)
    assert len(layers) == 3 and all(t.shape[0] == 4 for t in layers)
    x = torch.tensor([ids])
    with torch.no_grad():
        if family == "transformer":
            top, _ = model(x, model.init_state(1, "cpu"))
            assert torch.allclose(layers[-1], top[0, 1:], atol=1e-5)
        else:
            out, _ = model.rnn(model.embedding(x))
            assert torch.allclose(layers[-1], out[0, 1:], atol=1e-5)
            assert torch.allclose(layers[0], model.embedding(x)[0, 1:])


def test_a_sentence_longer_than_the_transformers_window_is_read_as_a_stream():
    """Past max_len tokens the transformer LM reads in segments after `memory`
    tokens of context (firth.lm.models.Transformer.forward): the probe's top
    layer is the model's output over that stream, every token represented."""
    from firth.config import load_sections
    from firth.lm.config import Lm
    from firth.lm.models import build_model
    from firth.probe.representations import lm_layers

    lm, _ = load_sections("lm", ROOT / "params.yaml", schema=Lm)
    torch.manual_seed(0)
    model = build_model("transformer", 50, lm, eos=0).eval()
    n = 2 * model.max_len + 9  # three segments after the first window
    ids = [0] + [int(i) for i in torch.randint(1, 50, (n,))]
    layers = lm_layers(model, ids)
    assert all(t.shape[0] == n for t in layers)
    x, state, tops = torch.tensor([ids]), model.init_state(1, "cpu"), []
    sizes = [model.max_len] + [model.max_len - model.memory] * 3
    with torch.no_grad():
        starts = itertools.accumulate([0, *sizes[:-1]])
        for lo, size in zip(starts, sizes, strict=True):
            top, state = model(x[:, lo : lo + size], state)
            tops.append(top)
    assert torch.allclose(layers[-1], torch.cat(tops, 1)[0, 1:], atol=1e-5)
    short = lm_layers(model, ids[: model.max_len])  # one window: one pass
    assert torch.allclose(short[-1], layers[-1][: model.max_len - 1], atol=1e-5)


def _pos_data(folder, rng):
    """A planted POS corpus: the tag is a function of the word (with a little
    ambiguity), so a probe on word identity can learn it."""
    vocab = [f"w{i}" for i in range(60)]
    tag_of = {w: ["NN", "VB", "DT", "JJ"][i % 4] for i, w in enumerate(vocab)}
    folder.mkdir(parents=True)
    for split, n in (("train", 300), ("valid", 60), ("test", 60)):
        lines = []
        for _ in range(n):
            words = rng.choice(vocab, size=rng.integers(3, 9))
            lines += [f"{w}\t{tag_of[w]}" for w in words] + [""]
        (folder / f"{split}.conll").write_text("\n".join(lines) + "\n")
    return vocab


def test_probe_stages_end_to_end_and_the_findings(tmp_path):
    from firth.config import load_sections
    from firth.embeddings.vectors import Embedding, save_word2vec
    from firth.evidence import Evidence
    from firth.findings import mlp_probes_memorise, probes_need_training
    from firth.inference import Rule
    from firth.lm.config import Lm
    from firth.lm.data import build_vocabulary
    from firth.lm.models import build_model
    from firth.probe.results import ProbeEval, ProbeItems
    from firth.results import load, load_items
    from stages.probe_lm import main as probe_lm
    from stages.probe_vectors import main as probe_vectors

    rng = np.random.default_rng(0)
    pos = tmp_path / "pos"
    vocab_words = _pos_data(pos, rng)
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["lm"]["runs"] = {"lstm": {"family": "lstm", "seed": 13, "epochs": 0.1}}
    cfg["embeddings"]["seeds"]["sgns"] = [13]
    cfg["probe"].update(lm_runs=["lstm"], vectors=["sgns"], epochs=60)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(cfg))
    lm, _ = load_sections("lm", params, schema=Lm)
    vocab = build_vocabulary([" ".join(vocab_words[:40])], unit="word")
    model_dir = tmp_path / "lm"
    model_dir.mkdir()
    vocab.save(model_dir / "vocab.json")
    torch.manual_seed(99)  # "trained": other weights than the untrained twin's
    model = build_model("lstm", vocab.size, lm, eos=vocab.eos)
    torch.save(model.state_dict(), model_dir / "model.pt")
    probe_lm(
        ["lstm", "--params", str(params), "--model", str(model_dir), "--pos", str(pos),
         "--reports", str(tmp_path / "rep/lstm")]
    )  # fmt: skip
    e = load(tmp_path / "rep/lstm/eval.json", ProbeEval)
    assert e.kind == "lm" and e.layers == 2 and e.tags == 4
    assert e.coverage == pytest.approx(40 / 60, abs=0.1)  # w40..w59 are <unk>
    assert {(r.model, r.layer, r.probe) for r in e.rows} == {
        (m, k, p) for m in ("trained", "untrained") for k in (0, 1)
        for p in ("linear", "mlp")
    }  # fmt: skip
    for r in e.rows:
        assert r.selectivity == pytest.approx(
            r.task_accuracy - r.control_accuracy, abs=2e-4
        )  # each rounded to 4 places
    words = {f"w{i}": np.eye(60)[i] for i in range(60)}  # one-hot vectors
    save_word2vec(
        tmp_path / "vec/seed-13/vectors.txt",
        Embedding(list(words), np.stack(list(words.values())).astype(np.float32)),
    )
    probe_vectors(
        ["sgns", "--params", str(params), "--vectors", str(tmp_path / "vec"),
         "--pos", str(pos), "--reports", str(tmp_path / "rep/sgns")]
    )  # fmt: skip
    v = load(tmp_path / "rep/sgns/eval.json", ProbeEval)
    linear = next(r for r in v.rows if r.probe == "linear")
    # word identity determines the tag: the task is learnt; the control task's
    # labels are also a function of the type, so identity learns it too
    assert linear.task_accuracy > 95 and linear.control_accuracy > 80
    ev = Evidence(rule=Rule(resamples=200))
    ev.probe = {"lstm": e}
    ev.probe_items = {
        "lstm": load_items(tmp_path / "rep/lstm/items.json.gz", ProbeItems)
    }
    n = sum(1 for line in (pos / "test.conll").read_text().splitlines() if line)
    assert all(len(v) == n for v in ev.probe_items["lstm"].task.values())
    for finding in (probes_need_training, mlp_probes_memorise):
        f = finding(ev)
        assert f.verdict in ("holds", "does not hold", "inconclusive"), f.summary
        assert json.dumps(f.model_dump())  # serialisable for scorecard.json
    # `firth probe` prints the stage's rows, seed means per model, layer and probe
    import shutil

    from typer.testing import CliRunner

    from firth.cli import app

    shutil.copytree(tmp_path / "rep", tmp_path / "repo/reports/probe")
    res = CliRunner().invoke(app, ["probe", "lstm", "--repo", str(tmp_path / "repo")])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) == 1 + 8 and lines[0].split()[0] == "representation"
    row = next(
        r for r in e.rows if (r.model, r.layer, r.probe) == ("trained", 1, "mlp")
    )
    printed = next(x for x in lines if x.split()[1:4] == ["trained", "1", "mlp"])
    assert float(printed.split()[-1]) == pytest.approx(row.selectivity, abs=0.01)
    res = CliRunner().invoke(app, ["probe", "nope", "--repo", str(tmp_path / "repo")])
    assert res.exit_code == 2 and "probed: lstm, sgns" in res.output
