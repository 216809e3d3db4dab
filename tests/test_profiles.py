"""The profiles side by side: the committed default and full results compare with
`firth compare` (report folders), and the full profile is a project of its own."""

import json

from conftest import ROOT
from typer.testing import CliRunner

from firth.cli import app


def test_firth_compare_shows_default_against_full(tmp_path):
    out = tmp_path / "compare.json"
    result = CliRunner().invoke(
        app,
        [
            "compare",
            str(ROOT / "reports"),
            str(ROOT / "profiles" / "full" / "reports"),
            "--repo",
            str(ROOT),
            "--show",
            "all",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    # the profiles score different LM and NMT test sets: the command says so
    for task in ("reports/lm", "reports/nmt"):
        assert f"warning: {task}: " in result.output, result.output
        assert "scored different test splits" in result.output
    rows = json.loads(out.read_text())["metrics"]
    budget = {
        r["key"]: r for r in rows if r["path"] == "reports/data/subsample_text.json"
    }
    # both train on all the text (0); the default tests on a smaller subsample
    assert budget["train.budget"]["old"] == budget["train.budget"]["new"] == 0
    assert 0 < budget["test.budget"]["old"] < budget["test.budget"]["new"]
    ppl = {
        r["path"]: r
        for r in rows
        if r["key"] == "test.perplexity" and r["path"].startswith("reports/lm/")
    }
    # every family's first seed is in both profiles and compared side by side (the
    # default's second seeds and the full profile's third have one side only)
    both = [r for r in ppl.values() if r["old"] is not None and r["new"] is not None]
    assert "reports/lm/kn5/eval.json" in {r["path"] for r in both}
    assert {r["path"] for r in both} >= {
        f"reports/lm/{run}/eval.json"
        for run in ("kn5", "ffnn", "elman", "lstm", "gru", "transformer")
    }


def test_the_full_profile_keeps_the_canon_budgets():
    import yaml

    full = yaml.safe_load((ROOT / "profiles/full/params.yaml").read_text())
    default = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert full["subsample"]["text"]["max_train_tokens"] == 0
    assert full["subsample"]["parallel"]["max_train_pairs"] == 0
    # the default keeps every task: the same sections, LM families and NMT models
    assert set(full) == set(default)
    fam = {r["family"] for r in default["lm"]["runs"].values()}
    assert fam == {r["family"] for r in full["lm"]["runs"].values()}
    models = {
        (r["model"], r.get("pointer", False)) for r in default["nmt"]["runs"].values()
    }
    assert models == {
        (r["model"], r.get("pointer", False)) for r in full["nmt"]["runs"].values()
    }
    assert default["tagger"]["heads"] == full["tagger"]["heads"]
    assert default["tagger"]["data"] == full["tagger"]["data"]
    # two seeds wherever a finding compares the model
    assert len(default["embeddings"]["seeds"]["sgns"]) >= 2
    assert len(default["embeddings"]["seeds"]["ppmi-svd"]) >= 2
    assert len(default["tagger"]["seeds"]) >= 2
    runs = default["nmt"]["runs"].values()
    for model, pointer in (("bahdanau", False), ("none", False), ("target-lm", False),
                           ("bahdanau", True)):  # fmt: skip
        seeds = {r["seed"] for r in runs if (r["model"], r.get("pointer", False))
                 == (model, pointer)}  # fmt: skip
        assert len(seeds) >= 2, (model, pointer)
    lstm = {r["seed"] for r in default["lm"]["runs"].values() if r["family"] == "lstm"}
    assert len(lstm) >= 2
