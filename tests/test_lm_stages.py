"""The language-model stages end to end on a real corpus excerpt (gensim's Lee
background corpus, split 240/30/30 lines) with the tiny profile's settings."""

import functools
import json
import math
import os
import subprocess
import sys

import pytest
import torch
import yaml
from conftest import ROOT, run_stage, stage_argv
from gensim.test.utils import datapath

from firth.bpe import train_bpe
from firth.lm import stage as lm_stage
from firth.lm import train as lm_train

# every family, and a second seed (the tiny profile's DAG keeps only three runs)
LM_RUNS = {
    "kn3": {"family": "kn", "seed": 13},
    "ffnn": {"family": "ffnn", "seed": 13},
    "elman": {"family": "elman", "seed": 13},
    "lstm": {"family": "lstm", "seed": 13},
    "lstm-seed14": {"family": "lstm", "seed": 14},
    "gru": {"family": "gru", "seed": 13},
    "transformer": {"family": "transformer", "seed": 13},
}
RUNS = list(LM_RUNS)


def _project(root, unit="word"):
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["lm"]["common"]["unit"] = unit
    params["lm"]["runs"] = LM_RUNS
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    text = root / "data" / "subsampled" / "text"
    text.mkdir(parents=True)
    lines = [
        x.strip()
        for x in open(datapath("lee_background.cor"), encoding="utf-8")
        .read()
        .lower()
        .splitlines()
        if x.strip()
    ]
    # the first test line is planted in training: the audit must flag it
    for name, part in (
        ("train", [*lines[:240], lines[270]]),
        ("valid", lines[240:270]),
        ("test", lines[270:]),
    ):
        (text / f"{name}.txt").write_text("\n".join(part) + "\n")
    run_stage(root, "audit-text")
    tok_dir = root / "data" / "tokenizers" / "text"
    tok_dir.mkdir(parents=True)
    train_bpe(lines[:240], model="byte-level", vocab_size=400, min_frequency=2).save(
        str(tok_dir / "tokenizer.json")
    )
    return lines


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    _project(root)
    for r in RUNS:
        run_stage(root, f"train-lm@{r}")
        run_stage(root, f"evaluate-lm@{r}")
    run_stage(root, "report")
    return root


def _eval(root, run):
    return json.loads((root / "reports" / "lm" / run / "eval.json").read_text())


@pytest.mark.parametrize("run", RUNS)
def test_scores_and_baselines(project, run):
    e = _eval(project, run)
    lines = (project / "data/subsampled/text/test.txt").read_text().splitlines()
    t = e["test"]
    assert t["tokens"] == sum(len(x.split()) for x in lines) + len(lines)
    assert t["characters"] == sum(len(x) + 1 for x in lines)
    assert t["bits_per_char"] == pytest.approx(
        t["nll_bits"] / t["characters"], rel=1e-12
    )
    assert t["perplexity"] == pytest.approx(
        2 ** (t["nll_bits"] / t["tokens"]), rel=1e-9
    )
    # the uniform baseline: perplexity exactly V
    assert t["baselines"]["uniform"]["perplexity"] == pytest.approx(
        e["vocab"], rel=1e-12
    )
    assert t["perplexity"] < t["baselines"]["uniform"]["perplexity"]
    assert 0 < t["oov_rate"] < 0.5
    detail = json.loads((project / "reports/lm" / run / "eval_detail.json").read_text())
    assert detail["samples"] and all(s["prompt"] for s in detail["samples"])
    assert bool(detail["gradient_flow"]) == (
        run in ("elman", "lstm", "lstm-seed14", "gru")
    )


def test_clean_and_dirty_perplexity_use_the_audit(project):
    """The planted line is dirty; the KN model's clean perplexity equals scoring
    the clean lines alone."""
    from firth.lm import kneser_ney
    from firth.lm.data import Vocabulary
    from firth.lm.metrics import perplexity

    flags = (project / "data/audit/text/flags.tsv").read_text().splitlines()[1:]
    dirty = [row.endswith("\t1") for row in flags]
    assert dirty[0]
    lines = (project / "data/subsampled/text/test.txt").read_text().splitlines()
    assert len(dirty) == len(lines)
    c = _eval(project, "kn3")["test"]["contamination"]
    assert c["n_dirty"] == sum(dirty) and c["n_all"] == len(lines)
    lm = kneser_ney.load(project / "data/lm/kn3")
    vocab = Vocabulary.load(project / "data/lm/kn3/vocab.json")
    clean = [
        [vocab.tokens[i] for i in vocab.encode_line(x)]
        for x, d in zip(lines, dirty, strict=True)
        if not d
    ]
    res = lm.score(clean)
    assert c["clean"] == pytest.approx(perplexity(res["nll_nats"], res["tokens"]))
    for r in RUNS:
        t = _eval(project, r)["test"]
        assert t["contamination"]["all"] == pytest.approx(t["perplexity"], rel=1e-9)
    md = (project / "reports" / "index.md").read_text()
    assert "perplexity on all / dirty / clean" in md


def test_word_models_share_the_vocabulary(project):
    vocabs = {
        json.dumps(
            json.loads((project / "data/lm" / r / "vocab.json").read_text())["tokens"]
        )
        for r in RUNS
    }
    assert len(vocabs) == 1


def test_report_has_the_language_model_section(project):
    md = (project / "reports" / "index.md").read_text()
    assert "## Language models" in md
    assert "bits per character" in md and "Gradient flow" in md
    assert "The LSTM against the Kneser-Ney 3-gram in bits per character: " in md
    assert "paired bootstrap over" in md and "margin over KN per LSTM seed" in md
    assert "seeds 2 against 1" in md  # two LSTM seeds, one (deterministic) KN


def test_unknown_run_is_a_clear_error(project, capsys):
    with pytest.raises(SystemExit) as exc:
        run_stage(project, "train-lm@lstm", args=["nope"])
    assert exc.value.code == 2
    assert "lm.runs has no run 'nope'" in capsys.readouterr().err


def test_killed_stage_resumes_to_the_same_model(tmp_path, monkeypatch):
    _project(tmp_path)
    run_stage(tmp_path, "train-lm@lstm")
    whole = torch.load(tmp_path / "data/lm/lstm/model.pt", weights_only=True)
    ckpt = tmp_path / "data/checkpoints/lm/lstm.pt"
    assert not ckpt.exists()  # cleared after a finished run
    monkeypatch.setattr(
        lm_stage, "train", functools.partial(lm_train.train, stop_after=1)
    )
    with pytest.raises(KeyboardInterrupt):
        run_stage(tmp_path, "train-lm@lstm")
    assert ckpt.exists()
    monkeypatch.undo()
    run_stage(tmp_path, "train-lm@lstm")
    resumed = torch.load(tmp_path / "data/lm/lstm/model.pt", weights_only=True)
    for k, w in whole.items():
        assert torch.equal(resumed[k], w), k


def test_bpe_unit_scores_every_character(tmp_path):
    lines = _project(tmp_path, unit="bpe")
    for r in ("kn3", "lstm"):
        run_stage(tmp_path, f"train-lm@{r}")
        run_stage(tmp_path, f"evaluate-lm@{r}")
    kn, lstm = _eval(tmp_path, "kn3"), _eval(tmp_path, "lstm")
    assert kn["unit"] == lstm["unit"] == "bpe"
    assert (
        kn["test"]["tokens"]
        == lstm["test"]["tokens"]
        > sum(len(x.split()) for x in lines[270:])
    )
    assert kn["test"]["oov_rate"] == 0
    assert math.isfinite(lstm["test"]["bits_per_char"])


def _weights_in_a_fresh_process(root, threads: int, cbwr: str | None) -> bytes:
    """The LSTM run trained by its stage in a new process; MKL_CBWR set to
    ``cbwr``, or unset (MKL's default)."""
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["lm"]["common"]["threads"] = threads
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    if cbwr is not None:
        env["MKL_CBWR"] = cbwr
    subprocess.run(
        [sys.executable, str(ROOT / "stages" / "train_lm.py")]
        + stage_argv(root, "train-lm@lstm"),
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    state = torch.load(root / "data/lm/lstm/model.pt", weights_only=True)
    return b"".join(state[k].contiguous().numpy().tobytes() for k in sorted(state))


@pytest.mark.slow  # and alone: a second test process beside it breaks bit-identity
def test_where_training_is_bit_identical(tmp_path):
    """docs/measured.md, Determinism: the same seed, params, thread count and
    machine give byte-identical weights in fresh processes; with MKL's conditional
    numerical reproducibility (MKL_CBWR=AUTO,STRICT) also across thread counts."""
    _project(tmp_path)
    first = _weights_in_a_fresh_process(tmp_path, 2, None)
    assert _weights_in_a_fresh_process(tmp_path, 2, None) == first
    strict = _weights_in_a_fresh_process(tmp_path, 1, "AUTO,STRICT")
    assert _weights_in_a_fresh_process(tmp_path, 2, "AUTO,STRICT") == strict
