"""NLI: label normalisation and the local readers, the classifiers' structure
(padding-free max-pooling, the pair features written out, a hypothesis-only model
blind to the premise), the scores against a hand count, resume after a kill, and
the stages end to end on a fixture, where the hypothesis-only model must beat the
majority class through an annotation cue it can see and lose to the pair model on
the labels only the premise decides."""

from __future__ import annotations

import json
import random
import shutil

import pytest
import torch
import yaml
from conftest import ROOT, run_stage

from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.errors import ConfigError, DataError
from firth.nli.data import Vocab, batch, encode, split_valid, tokenize
from firth.nli.models import NliClassifier
from firth.nli.report import ENABLE, nli_section
from firth.nli.train import majority, scores, train
from firth.sources.fetch import fetch
from firth.sources.nli import LABELS, normalize_label, read_local

NOUNS = "man woman dog child girl boy cat player singer worker".split()
VERBS = "running sleeping eating singing dancing swimming reading cooking".split()
PLACES = "park street kitchen field beach room".split()
REASONS = "a prize fun money a friend".split()
ADJS = "tall young old happy tired small busy quiet".split()
HOURS = "one two three four five six seven eight nine ten eleven twelve".split()


def make_examples(n: int, seed: int) -> list[dict]:
    """Entailment repeats the premise's verb; contradiction swaps in another verb
    (only the premise tells them apart); neutral adds "for <reason>" (a cue in the
    hypothesis alone, as annotators left in SNLI)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        noun, verb, place = rng.choice(NOUNS), rng.choice(VERBS), rng.choice(PLACES)
        adj, hour = rng.choice(ADJS), rng.choice(HOURS)
        premise = f"A {adj} {noun} is {verb} in the {place} at {hour}."
        label = rng.choice(LABELS)
        if label == "entailment":
            hyp = f"A {noun} is {verb}."
        elif label == "contradiction":
            other = rng.choice([v for v in VERBS if v != verb])
            hyp = f"A {noun} is {other}."
        else:
            hyp = f"A {noun} is {verb} for {rng.choice(REASONS)}."
        out.append({"sentence1": premise, "sentence2": hyp, "gold_label": label})
    return out


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_labels_are_normalised_and_bad_ones_named():
    assert normalize_label("Entailment ", where="x") == "entailment"
    assert normalize_label(2, where="x") == "contradiction"
    assert normalize_label("1", where="x") == "neutral"
    assert normalize_label("-", where="x") is None
    assert normalize_label(-1, where="x") is None
    with pytest.raises(DataError, match=r"f.jsonl:7: label 'maybe'"):
        normalize_label("maybe", where="f.jsonl:7")
    with pytest.raises(DataError, match="outside 0..2"):
        normalize_label(3, where="x")


def test_local_folder_reads_splits_and_drops_examples_without_gold(tmp_path):
    folder = tmp_path / "snli_1.0"
    folder.mkdir()
    rows = make_examples(6, 1)
    rows[2]["gold_label"] = "-"
    write_jsonl(folder / "snli_1.0_train.jsonl", rows)
    write_jsonl(folder / "snli_1.0_dev.jsonl", make_examples(2, 2))
    write_jsonl(
        folder / "snli_1.0_test.jsonl",
        [{"premise": "p", "hypothesis": "h", "label": 0}],
    )
    rec = fetch(
        "toy",
        {"kind": "local", "format": "nli", "path": str(folder)},
        tmp_path / "out",
        cache_dir=tmp_path,
    )
    assert rec["counts"] == {
        "train_examples": 5,
        "valid_examples": 2,
        "test_examples": 1,
        "dropped_without_gold_label": 1,
    }
    lines = (tmp_path / "out" / "examples.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines if '"test"' in x] == [
        {
            "split": "test",
            "premise": "p",
            "hypothesis": "h",
            "label": "entailment",
        }
    ]
    bad = tmp_path / "bad_train.jsonl"
    bad.write_text('{"sentence1": "a", "sentence2": "b"}\n')
    with pytest.raises(
        DataError, match=r"bad_train.jsonl:1: no field 'label' or 'gold_label'"
    ):
        list(read_local(bad))


def test_valid_is_carved_by_premise():
    rows = [
        {"premise": f"p{i // 3}", "hypothesis": f"h{i}", "label": "neutral"}
        for i in range(300)
    ]
    keep, valid = split_valid(rows, 0.2, seed=13)
    assert 0 < len(valid) < 300 and len(keep) + len(valid) == 300
    assert not {r["premise"] for r in keep} & {r["premise"] for r in valid}


def _model(mode):
    torch.manual_seed(0)
    return NliClassifier(mode, 30, emb_dim=6, hidden=5, mlp=7, dropout=0.0).eval()


def _enc(pairs):
    rows = [{"premise": p, "hypothesis": h, "label": "neutral"} for p, h in pairs]
    vocab = Vocab.build(
        (
            tokenize(r[s], lowercase=True)
            for r in rows
            for s in ("premise", "hypothesis")
        ),
        1,
    )
    return encode(rows, vocab, lowercase=True, max_len=20)


def test_max_pool_ignores_padding_and_pair_features_are_written_out():
    m = _model("pair")
    enc = _enc([("a b c d e f", "a"), ("b", "c d e")])
    b = batch(enc, [0, 1])
    feats = m.features(b)
    for i in range(2):
        alone = batch(enc, [i])
        u = m.encoder(alone["premise"], alone["premise_len"])[0]
        v = m.encoder(alone["hypothesis"], alone["hypothesis_len"])[0]
        want = torch.cat([u, v, (u - v).abs(), u * v])
        assert torch.allclose(feats[i], want, atol=1e-6)


def test_hypothesis_only_model_is_blind_to_the_premise():
    m = _model("hypothesis")
    enc = _enc([("a b c", "d e"), ("f g h i j", "d e")])
    b = batch(enc, [0, 1])
    out = m(b)
    assert torch.allclose(out[0], out[1])
    assert m.mlp[1].in_features == 10  # 2 x hidden: v alone


def test_scores_against_a_hand_count():
    gold = [0, 0, 1, 1, 2, 2, 2]
    pred = [0, 1, 1, 1, 2, 0, 2]
    s = scores(gold, pred)
    assert s["accuracy"] == pytest.approx(5 / 7)
    assert s["confusion"] == [[1, 1, 0], [0, 2, 0], [1, 0, 2]]
    # entailment: tp 1, predicted 2, gold 2 -> P = R = F1 = 0.5
    assert s["per_label"]["entailment"]["f1"] == pytest.approx(0.5)
    # neutral: tp 2, predicted 3, gold 2 -> P 2/3, R 1, F1 0.8
    assert s["per_label"]["neutral"]["f1"] == pytest.approx(0.8)
    assert majority([2, 1, 1, 2]) == 1  # a tie goes to the first label
    assert majority([2, 2, 0]) == 2


def _cfg(**kw):
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    from firth.nli.config import Nli

    return Nli(**{**params["nli"], "data": [], **kw})


def test_killed_training_resumes_to_the_same_weights(tmp_path):
    rows = [
        {
            "premise": r["sentence1"],
            "hypothesis": r["sentence2"],
            "label": r["gold_label"],
        }
        for r in make_examples(300, 3)
    ]
    vocab = Vocab.build(
        (
            tokenize(r[s], lowercase=True)
            for r in rows
            for s in ("premise", "hypothesis")
        ),
        1,
    )
    enc = encode(rows, vocab, lowercase=True, max_len=20)
    cfg = _cfg(epochs=3, patience=0, dropout=0.2)

    def run(stop_after=None, ckpt=None):
        torch.manual_seed(4)
        m = NliClassifier(
            "pair", len(vocab.words), emb_dim=8, hidden=8, mlp=8, dropout=0.2
        )
        r = train(
            m,
            enc,
            enc,
            cfg,
            seed=4,
            accel=Accel.cpu(),
            checkpoint=ckpt,
            stop_after=stop_after,
        )
        return r

    full = run()
    ckpt = Checkpoint(tmp_path / "c.pt", "k")
    with pytest.raises(KeyboardInterrupt):
        run(stop_after=1, ckpt=ckpt)
    resumed = run(ckpt=ckpt)
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    for k, v in full.best_state.items():
        assert torch.equal(v, resumed.best_state[k]), k


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("nli")
    src = root / "toy-nli"
    src.mkdir()
    train_rows = make_examples(2000, 11)
    test_rows = make_examples(300, 12)
    # plant the first test pair in training: the audit must flag it
    train_rows.append(dict(test_rows[0]))
    write_jsonl(src / "train.jsonl", train_rows)
    write_jsonl(src / "test.jsonl", test_rows)
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["sources"]["nli"] = {
        "toy": {
            "kind": "local",
            "format": "nli",
            "path": str(src),
            "license": "test fixture",
        }
    }
    params["nli"].update(
        data=["toy"], seeds=[13, 14], epochs=5, emb_dim=16, hidden=24, mlp=32
    )
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(root, "fetch-nli@toy")
    run_stage(root, "audit-nli@toy")
    for model in ("pair", "hypothesis"):
        for seed in (13, 14):
            run_stage(root, f"train-nli@toy-{model}-{seed}")
        run_stage(root, f"evaluate-nli@toy-{model}")
    run_stage(root, "report")
    return root


def test_each_nli_stage_opens_only_what_dvc_yaml_passes_it(project):
    """The NLI stages (which the tiny profile's `dvc repro` does not run) opened
    nothing under data/ or reports/ but their deps and outs."""
    from conftest import OPENED
    from test_stage_paths import check_opened, stages

    found = stages(project)
    names = [n for n in found if "nli" in n and not n.startswith("code-")]
    assert len(names) == 8 and all(n in OPENED for n in [*names, "report"])
    errors = [
        e
        for n in [*names, "report"]
        for e in check_opened(project, found[n], OPENED[n])
    ]
    assert errors == []


def _json(root, *parts):
    return json.loads(root.joinpath(*parts).read_text())


def test_hypothesis_only_beats_majority_and_loses_to_the_pair_model(project):
    pair = _json(project, "reports", "nli", "toy-pair", "eval.json")
    hyp = _json(project, "reports", "nli", "toy-hypothesis", "eval.json")
    maj = pair["baselines"]["majority"]["accuracy"]
    share = max(pair["test_label_share"].values())
    assert maj == pytest.approx(
        pair["test_label_share"][pair["baselines"]["majority"]["label"]]
    )
    assert maj <= share
    # the neutral cue is in the hypothesis: about 1/3 certain + 1/3 of the rest
    assert hyp["accuracy"] > maj + 0.15
    # entailment and contradiction need the premise: hypothesis-only cannot pass 2/3
    assert hyp["accuracy"] < 0.72
    assert pair["accuracy"] > hyp["accuracy"] + 0.1
    assert [m["seed"] for m in pair["models"]] == [13, 14]
    assert pair["summary"]["accuracy"]["n"] == 2


def test_audit_flags_the_planted_pair_and_scores_split(project):
    rep = _json(project, "reports", "audit", "nli_toy.json")
    flags = (
        (project / "data" / "audit" / "nli" / "toy" / "flags.tsv")
        .read_text()
        .splitlines()
    )
    assert flags[1].split("\t")[0] == "0" and flags[1].endswith("\t1")
    side = rep["sides"]["train"]
    assert side["exact_duplicates"] >= 1
    # premises rarely repeat, so few pairs share an n-gram with training (the word
    # sets of this small vocabulary do overlap: MinHash flags many as near copies)
    assert 1 <= side["ngram_dirty"] < 60
    c = _json(project, "reports", "nli", "toy-pair", "eval.json")["contamination"]
    assert c["n_dirty"] == rep["dirty"] and c["n_all"] == 300


def test_evaluation_matches_the_saved_models_predictions(project):
    from firth.nli.models import build
    from firth.nli.train import predict

    ev = _json(project, "reports", "nli", "toy-pair", "eval.json")
    cfg = _cfg(emb_dim=16, hidden=24, mlp=32)
    folder = project / "data" / "nli" / "toy-pair" / "seed-14"
    vocab = Vocab(json.loads((folder / "vocab.json").read_text()))
    m = build("pair", len(vocab.words), cfg)
    m.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    test = [
        json.loads(x)
        for x in (project / "data/raw/nli/toy/examples.jsonl").read_text().splitlines()
    ]
    test = [r for r in test if r["split"] == "test"]
    enc = encode(test, vocab, lowercase=True, max_len=cfg.max_len)
    pred = predict(m, enc, batch_size=7, device=torch.device("cpu"))
    acc = sum(
        p == LABELS.index(r["label"]) for p, r in zip(pred, test, strict=True)
    ) / len(test)
    assert ev["models"][1]["accuracy"] == pytest.approx(acc)


def test_report_section_and_partial_row(project):
    md = (project / "reports" / "index.md").read_text()
    assert "Natural language inference" in md and "NLI: not run" not in md
    assert "NLI (toy, test accuracy)" in md
    assert nli_section({}, {}).intro == ENABLE


def test_bad_settings_name_the_key(project, tmp_path, capsys):
    root = tmp_path / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("nli", "reports"))
    with pytest.raises(SystemExit):
        run_stage(root, "train-nli@toy-pair-13", args=["toy", "premise", "13"])
    assert "key 'nli.models' has no 'premise'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_stage(root, "train-nli@toy-pair-13", args=["snli", "pair", "13"])
    assert "key 'nli.data' has no 'snli'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_stage(root, "train-nli@toy-pair-13", args=["toy", "pair", "99"])
    assert "key 'nli.seeds' has no seed 99" in capsys.readouterr().err


def test_default_profile_runs_no_nli_stage():
    """The offline default configures no NLI data: the matrix is empty (no stage)
    and a stage called anyway says what the params list."""
    from firth.nli.stage import setup

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["nli"]["data"] == [] and params["sources"]["nli"] == {}
    with pytest.raises(
        ConfigError, match=r"'nli.data' has no 'snli' \(it lists: nothing\)"
    ):
        setup(ROOT / "params.yaml", "snli", "pair")


def test_report_cards_settings_and_tasks_not_run(project):
    md = (project / "reports" / "index.md").read_text()
    nli = md[md.index("## Natural language inference") :]
    end = nli.find("\n## ", 5)  # the next section, if one follows
    nli = nli if end < 0 else nli[:end]
    # the NLI card carries its exact settings: params, training-data hash, source
    assert "| params nli | " in nli and "seeds=[13, 14]" in nli
    train = _json(project, "reports", "nli", "toy-pair", "seed-13", "train.json")
    assert f"| {train['examples_sha256'][:12]} |" in nli
    assert "| source nli/toy |" in nli
    # the tiny profile configures embeddings, LMs, NMT and taggers, not run here
    assert "## Language models\n\nNot run: configured, but no results yet: run " in md
    assert "`dvc repro evaluate-lm`" in md
    for title in ("Word embeddings", "Translation", "Sequence labelling"):
        assert f"## {title}\n\nNot run: " in md
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["lm"]["runs"] = {}
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(project, "report")
    md = (project / "reports" / "index.md").read_text()
    assert "## Language models\n\nNot run: `lm.runs` is empty in params.yaml" in md


def test_raw_examples_changed_after_the_fetch_are_refused(project, tmp_path, capsys):
    """The NLI stages check data/raw/nli/<data> against its fetch's sha256 before
    reading it (a flipped label is never trained or scored on)."""
    root = tmp_path / "edited"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("reports"))
    shutil.rmtree(root / "data" / "nli")
    path = root / "data" / "raw" / "nli" / "toy" / "examples.jsonl"
    path.write_text(path.read_text().replace('"entailment"', '"neutral"', 1))
    for stage in ("audit-nli@toy", "train-nli@toy-pair-13"):
        with pytest.raises(SystemExit):
            run_stage(root, stage)
        err = capsys.readouterr().err
        assert "examples.jsonl: has sha256" in err and "fetch it again" in err
