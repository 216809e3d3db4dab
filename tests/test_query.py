"""Asking trained models: neighbours and analogies checked by brute force on a
small vector file, the evaluation's exclusion rule, and the one-line message for a
run that is not trained yet."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

from firth.cli import app
from firth.embeddings.vectors import Embedding, save_word2vec
from firth.errors import DataError
from firth.query import NotTrained
from firth.query import embeddings as q

WORDS = ["the", "king", "queen", "man", "woman", "prince", "apple", "Paris"]


@pytest.fixture()
def repo(tmp_path):
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(len(WORDS), 6)).astype(np.float32)
    # plant the analogy: queen = king - man + woman (plus a little noise)
    m = {w: i for i, w in enumerate(WORDS)}
    matrix[m["queen"]] = (
        matrix[m["king"]] - matrix[m["man"]] + matrix[m["woman"]] + 0.05
    )
    folder = tmp_path / "data" / "embeddings" / "sgns" / "seed-13"
    folder.mkdir(parents=True)
    save_word2vec(folder / "vectors.txt", Embedding(WORDS, matrix))
    # the tiny profile with these seeds, and Firth's dvc.yaml: where each
    # stage writes is read from there, as in a checkout
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["embeddings"]["seeds"].update(sgns=[13, 14], glove=[13])
    params["evaluate_embeddings"]["restrict"] = 7
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    return tmp_path, folder


def cos(u, v):
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def test_neighbours_are_the_brute_force_top_k(repo):
    _, folder = repo
    emb = q.load_word2vec(folder / "vectors.txt")
    [row] = q.neighbours(folder, ["king"], k=3)
    king = emb.matrix[1]
    pairs = zip(WORDS, emb.matrix, strict=True)
    expect = sorted(
        ((w, cos(king, v)) for w, v in pairs if w != "king"), key=lambda p: -p[1]
    )[:3]
    assert [w for w, _ in row["neighbours"]] == [w for w, _ in expect]
    assert np.allclose([c for _, c in row["neighbours"]], [c for _, c in expect])
    [oov] = q.neighbours(folder, ["unseen"], k=3)
    assert oov == {"word": "unseen", "in_vocab": False, "neighbours": []}


def test_analogy_is_3cosadd_over_the_restricted_candidates_without_a_b_c(repo):
    _, folder = repo
    emb = q.load_word2vec(folder / "vectors.txt")
    unit = emb.matrix / np.linalg.norm(emb.matrix, axis=1, keepdims=True)
    got = q.analogy(folder, "man", "king", "WOMAN", k=3, restrict=7)
    assert got[0][0] == "queen"
    # brute force: every candidate among the 7 most frequent, a, b, c left out
    target = unit[1] - unit[3] + unit[4]
    scores = {
        w: cos(target, unit[i])
        for i, w in enumerate(WORDS[:7])
        if w not in ("man", "king", "woman")
    }
    best = sorted(scores.items(), key=lambda p: -p[1])[:3]
    assert [w for w, _ in got] == [w for w, _ in best]
    assert np.allclose([s for _, s in got], [s for _, s in best], atol=1e-5)
    with pytest.raises(DataError, match="Paris: not among the 7 most frequent"):
        q.analogy(folder, "man", "king", "Paris", k=3, restrict=7)


def test_a_run_not_trained_yet_names_the_dvc_target(repo):
    root, _ = repo
    params = yaml.safe_load((root / "params.yaml").read_text())
    with pytest.raises(NotTrained, match="dvc repro train-embeddings-sgns@14"):
        q.vectors_folder(root, params, "sgns", 14)
    with pytest.raises(Exception, match="seeds \\[13, 14\\].*not 99"):
        q.vectors_folder(root, params, "sgns", 99)
    res = CliRunner().invoke(app, ["neighbours", "glove", "king", "--repo", str(root)])
    assert res.exit_code == 2
    expect = "glove (seed 13) is not trained yet: dvc repro train-embeddings-glove@13"
    assert expect in res.output


def test_the_commands_print_what_the_functions_return(repo):
    root, folder = repo
    res = CliRunner().invoke(
        app, ["analogy", "sgns", "man", "king", "woman", "-k", "2", "--repo", str(root)]
    )
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "man : king :: woman : ?"
    assert lines[1].split()[1] == "queen"
    res = CliRunner().invoke(
        app, ["neighbours", "sgns", "king", "nope", "-k", "2", "--repo", str(root)]
    )
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == "king"
    assert "nope: not in the vocabulary (no vector)" in res.output
    assert (
        len(
            list(
                itertools.takewhile(
                    lambda s: s.startswith("  "), res.output.splitlines()[1:]
                )
            )
        )
        == 2
    )


def test_bio_spans_match_seqeval():
    """The entity spans `firth tag` prints, against seqeval's own chunking."""
    import random

    from seqeval.metrics.sequence_labeling import get_entities

    from firth.query.tag import read_input, spans

    rng = random.Random(0)
    for _ in range(200):
        tags = [rng.choice(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]) for _ in range(8)]
        tokens = [f"w{i}" for i in range(8)]
        expect = [(k, " ".join(tokens[a : b + 1])) for k, a, b in get_entities(tags)]
        assert spans(tokens, tags) == expect, tags
    assert read_input("New\tB-LOC\nYork\tI-LOC\n\nhi\tO\n") == [["New", "York"], ["hi"]]
    assert read_input("plain text here\n\nand more\n") == [
        ["plain", "text", "here"],
        ["and", "more"],
    ]


def test_a_loaded_model_is_kept_until_its_files_change(tmp_path):
    """firth.query.loaded: `firth serve` reads a run's model once; a file of it
    rewritten (a retrained run) is read again."""
    from firth.query import loaded

    f = tmp_path / "model.pt"
    f.write_bytes(b"1")
    made = []

    def make():
        made.append(f.read_bytes())
        return len(made)

    key = ("test", str(f))
    assert loaded(key, [f], make) == 1
    assert loaded(key, [f], make) == 1 and made == [b"1"]
    f.write_bytes(b"22")
    assert loaded(key, [f], make) == 2 and made == [b"1", b"22"]


def test_a_heatmap_carries_its_runs_attention_test(repo):
    """firth.query.translate.attention_test: `firth serve` and `firth translate`
    put the run's evaluate-attention result beside its heatmap, read from where
    dvc.yaml has that stage write; a run without the stage, or before it ran,
    has none (the page says the map's faithfulness is not measured)."""
    from firth.nmt.results import AttentionEval, Intervention
    from firth.query.translate import attention_note, attention_test
    from firth.results import save

    root, _ = repo
    assert (
        attention_test(root, "pointer") is None
    )  # in evaluate_attention.runs, not run
    assert attention_test(root, "none") is None  # no attention stage at all
    permute = Intervention(changed_share=0.8, mean_tv=0.7, bleu=4.1, chrf=26.8)
    record = AttentionEval(
        run="pointer",
        model="bahdanau",
        seed=13,
        pointer=True,
        test_pairs=600,
        test_sha256="0" * 64,
        original={"bleu": 59.4, "chrf": 74.3},
        interventions={"permute": permute},
        tau_sentences=10,
        mean_tau=0.3,
    )
    (root / "reports" / "attention" / "pointer").mkdir(parents=True)
    save(root / "reports" / "attention" / "pointer" / "eval.json", record)
    got = attention_test(root, "pointer")
    assert got["report"] == "reports/attention/pointer/eval.json"
    assert got["original"] == {"bleu": 59.4, "chrf": 74.3}
    assert got["interventions"]["permute"] == permute.model_dump()
    assert (got["test_pairs"], got["mean_tau"], got["tau_sentences"]) == (600, 0.3, 10)
    assert attention_note(got) == (
        "attention test (reports/attention/pointer/eval.json, 600 test verses): "
        "greedy BLEU 59.4 with its own attention; a random permutation of it 4.1 "
        "(80.0% of teacher-forced next tokens changed, mean total variation 0.70); "
        "Kendall tau with gradient x input 0.30 (first 10 verses)"
    )
    assert "not measured" in attention_note(None)
