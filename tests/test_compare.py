"""firth compare: rules, flags and agreement with `dvc metrics diff` on a real repo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from firth import compare as cmp
from firth.cli import app
from firth.errors import ConfigError, DataError


def test_key_pattern_stays_inside_one_segment():
    rule = cmp.Rule("reports/tagging/*/eval.json:summary.*.f1.mean", "higher")
    assert rule.matches("reports/tagging/wnut16-crf/eval.json", "summary.sgns.f1.mean")
    assert not rule.matches("reports/tagging/x/eval.json", "summary.sgns.f1.std")
    assert not rule.matches("reports/tagging/x/eval.json", "summary.a.b.f1.mean")
    assert not rule.matches("reports/lm/x/eval.json", "summary.sgns.f1.mean")
    suffix = cmp.Rule("reports/embeddings/*/eval.json:*_3cosadd", "higher")
    assert suffix.matches("reports/embeddings/sgns/eval.json", "analogy_top_3cosadd")
    # a per-seed value one level down is not the seed mean
    assert not suffix.matches("reports/embeddings/sgns/eval.json", "runs.13.x_3cosadd")
    # the embedding rules come from the schema's tracked fields: seed means only
    ev = "reports/embeddings/sgns/eval.json"
    judged = {
        key: cmp.rule_for(ev, key, cmp.DEFAULT_RULES)
        for key in (
            "summary.analogy.analogy-google.top.3cosadd.mean",
            "summary.similarity.simlex999.spearman.mean",
            "summary.analogy.analogy-google.top.only_b.mean",
            "summary.analogy.analogy-google.top.3cosadd.sd",
            "runs.13.analogy.analogy-google.top.3cosadd",
        )
    }
    assert [r.better if r else None for r in judged.values()] == [
        "higher",
        "higher",
        None,
        None,
        None,
    ]
    deep = cmp.Rule("a:**.bleu")
    assert deep.matches("a", "bleu") and deep.matches("a", "x.y.bleu")
    assert not deep.matches("a", "x.bleu.n")


def test_first_matching_rule_wins_and_baselines_are_untracked():
    rows = cmp.compare(
        {"reports/nmt/copy-source/eval.json": {"beam.bleu": 50.0}},
        {"reports/nmt/copy-source/eval.json": {"beam.bleu": 40.0}},
    )
    assert rows[0].rule.better is None and rows[0].status == ""


@pytest.mark.parametrize(
    ("better", "old", "new", "abs_tol", "rel_tol", "status"),
    [
        ("higher", 30.0, 29.6, 0.5, 0.0, ""),  # inside the tolerance
        ("higher", 30.0, 29.4, 0.5, 0.0, "worse"),
        ("higher", 30.0, 30.6, 0.5, 0.0, "better"),
        ("lower", 100.0, 101.9, 0.0, 0.02, ""),  # 2% of 100 = 2
        ("lower", 100.0, 102.1, 0.0, 0.02, "worse"),
        ("lower", 100.0, 97.0, 0.0, 0.02, "better"),
        ("lower", 100.0, 103.0, 5.0, 0.02, ""),  # max(abs, rel * old) = 5
        ("higher", 0.5, float("nan"), 0.0, 0.0, "worse"),
    ],
)
def test_flag_beyond_tolerance_in_the_bad_direction(
    better, old, new, abs_tol, rel_tol, status
):
    rule = cmp.Rule("r/*:m", better, abs_tol=abs_tol, rel_tol=rel_tol)
    [row] = cmp.compare({"r/x": {"m": old}}, {"r/x": {"m": new}}, rules=(rule,))
    assert row.status == status
    assert bool(cmp.regressions([row])) == (status == "worse")


def _spread(mean: float, sd: float, n: int = 2) -> dict[str, float]:
    return {
        f"summary.random.f1.{k}": v for k, v in {"mean": mean, "sd": sd, "n": n}.items()
    }


@pytest.mark.parametrize(
    "new_mean, status",
    [
        # issue 39's case: the same seeds on another machine, 0.1183 -> 0.1053;
        # the band is 2 * sqrt(0.012^2 / 2 + 0.010^2 / 2) = 0.02209
        (0.1053, "noise"),
        (0.0900, "worse"),  # 0.028 below: past the band
        (0.1450, "better"),
        (0.1133, ""),  # within the rule's own tolerance (0.01)
    ],
)
def test_a_seed_mean_moving_within_its_seed_spread_is_noise(new_mean, status):
    path = "reports/tagging/wnut16-crf/eval.json"
    a = {path: _spread(0.1183, 0.012)}
    b = {path: _spread(new_mean, 0.010)}
    row = next(r for r in cmp.compare(a, b) if r.key == "summary.random.f1.mean")
    assert row.noise == pytest.approx(2 * (0.012**2 / 2 + 0.010**2 / 2) ** 0.5)
    assert row.status == status
    assert bool(cmp.regressions([row])) == (status == "worse")
    assert ("seeds ±0.0220" in cmp.render_text([row], "a", "b")) is True


def test_a_single_run_is_held_against_its_seed_folders():
    # LM test perplexity: lstm and lstm-seed14 on each side; rule: 2% relative
    def side(lstm: float, seed14: float) -> dict:
        return {
            "reports/lm/lstm/eval.json": {"test.perplexity": lstm},
            "reports/lm/lstm-seed14/eval.json": {"test.perplexity": seed14},
            "reports/lm/gru/eval.json": {"test.perplexity": 60.0},
        }

    a, b = side(51.8, 53.0), side(53.5, 53.0)
    rows = {(r.path, r.key): r for r in cmp.compare(a, b)}
    lstm = rows["reports/lm/lstm/eval.json", "test.perplexity"]
    # the baseline's seeds set the yardstick for both sides (B's own second value
    # would widen it with the very move it judges): sd(51.8, 53.0) = 0.8485
    assert lstm.noise == pytest.approx(2 * 2**0.5 * 0.8485, rel=1e-3)
    assert lstm.delta > lstm.rule.tolerance(51.8)  # 1.7 > 1.036: flagged before
    assert lstm.status == "noise"
    # one seed only (gru): the rule's tolerance alone
    gru = rows["reports/lm/gru/eval.json", "test.perplexity"]
    assert gru.noise is None
    b["reports/lm/gru/eval.json"]["test.perplexity"] = 62.0
    gru = next(r for r in cmp.compare(a, b) if r.path.endswith("gru/eval.json"))
    assert gru.status == "worse"
    # a real regression is still one: lstm far past the band
    b["reports/lm/lstm/eval.json"]["test.perplexity"] = 58.0
    worse = next(r for r in cmp.compare(a, b) if r.path.endswith("/lstm/eval.json"))
    assert worse.status == "worse"


def test_missing_tracked_metric_blocks_and_added_metric_does_not():
    rule = cmp.Rule("r/*:m", "higher")
    rows = cmp.compare({"r/x": {"m": 1.0}}, {"r/y": {"m": 1.0}}, rules=(rule,))
    assert {(r.path, r.status) for r in rows} == {("r/x", "missing"), ("r/y", "added")}
    assert [r.path for r in cmp.regressions(rows)] == ["r/x"]


def test_flatten_matches_dvc_numeric_leaves():
    data = {"a": {"b": 1, "c": [1, 2]}, "d": True, "e": "x", "f": 2.5}
    assert cmp.flatten(data) == {"a.b": 1, "f": 2.5}


def test_rules_file_errors_name_the_rule(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("- {pattern: 'a:b', better: up}\n")
    with pytest.raises(ConfigError, match="rule 1: better must be"):
        cmp.load_rules(path)
    path.write_text("- {pattern: 'a:b'}\n- {pattern: nocolon}\n")
    with pytest.raises(ConfigError, match="rule 2: pattern must be"):
        cmp.load_rules(path)
    path.write_text("- {pattern: 'a:b', abs_tol: -1}\n")
    with pytest.raises(ConfigError, match="abs_tol must be a number >= 0"):
        cmp.load_rules(path)
    path.write_text(cmp.rules_yaml())
    assert cmp.load_rules(path) == cmp.DEFAULT_RULES


WRITE = """\
import json, sys, yaml
from pathlib import Path
p = yaml.safe_load(open("params.yaml"))["model"]
out = Path("reports/lm/toy/eval.json")
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps({"test": {"perplexity": 100.0 / p["quality"],
    "tokens": 1000}, "seeds": [1, 2], "name": "toy"}))
Path("reports/nmt/toy").mkdir(parents=True, exist_ok=True)
Path("reports/nmt/toy/eval.json").write_text(json.dumps(
    {"beam": {"bleu": 20.0 * p["quality"], "chrf": 40.0}}))
"""

DVC_YAML = """\
stages:
  score:
    cmd: python write.py
    deps: [write.py]
    params: [model]
    metrics:
      - reports/lm/toy/eval.json: {cache: false}
      - reports/nmt/toy/eval.json: {cache: false}
"""


def _run(args, cwd, env):
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture
def toy_repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    (path / "write.py").write_text(WRITE)
    (path / "dvc.yaml").write_text(DVC_YAML)
    (path / "params.yaml").write_text("model:\n  quality: 1.0\n")
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["DVC_NO_ANALYTICS"] = "1"
    env |= {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    _run(["git", "init", "-q", "-b", "main"], path, env)
    _run(["dvc", "init", "-q"], path, env)
    _run(["dvc", "repro", "-q"], path, env)
    _run(["git", "add", "-A"], path, env)
    _run(["git", "commit", "-qm", "base"], path, env)
    return path, env


def _dvc_diff(a, b, path, env):
    out = json.loads(_run(["dvc", "metrics", "diff", "--json", a, b], path, env))
    return {
        (p, k): v["diff"]
        for p, keys in out.items()
        for k, v in keys.items()
        if "diff" in v
    }


def _ours(rows):
    return {(r.path, r.key): r.delta for r in rows if r.delta not in (None, 0)}


def test_revisions_and_experiments_agree_with_dvc_metrics_diff(toy_repo, monkeypatch):
    path, env = toy_repo
    params = path / "params.yaml"
    params.write_text("model:\n  quality: 0.8\n")
    _run(["dvc", "repro", "-q"], path, env)
    _run(["git", "commit", "-qam", "worse"], path, env)
    monkeypatch.chdir(path)
    m = cmp.load(["HEAD~1", "HEAD"], path)
    rows = cmp.compare(m["HEAD~1"], m["HEAD"])
    assert _ours(rows) == pytest.approx(_dvc_diff("HEAD~1", "HEAD", path, env))
    flagged = {(r.path, r.key) for r in cmp.regressions(rows)}
    assert flagged == {
        ("reports/lm/toy/eval.json", "test.perplexity"),  # 100 -> 125
        ("reports/nmt/toy/eval.json", "beam.bleu"),  # 20 -> 16
    }
    # a DVC experiment, by name
    _run(
        ["dvc", "exp", "run", "-q", "-n", "better", "-S", "model.quality=1.25"],
        path,
        env,
    )
    m = cmp.load(["HEAD", "better"], path)
    rows = cmp.compare(m["HEAD"], m["better"])
    assert _ours(rows) == pytest.approx(_dvc_diff("HEAD", "better", path, env))
    assert not cmp.regressions(rows)
    assert {r.key for r in rows if r.status == "better"} == {
        "test.perplexity",
        "beam.bleu",
    }


def test_report_folder_against_a_revision(toy_repo, tmp_path, monkeypatch):
    path, env = toy_repo
    copy = tmp_path / "old-reports"
    shutil.copytree(path / "reports", copy)
    (path / "params.yaml").write_text("model:\n  quality: 2.0\n")
    _run(["dvc", "repro", "-q"], path, env)
    monkeypatch.chdir(path)
    m = cmp.load([str(copy), "workspace"], path)
    rows = cmp.compare(m[str(copy)], m["workspace"])
    assert _ours(rows) == pytest.approx(_dvc_diff("HEAD", "workspace", path, env))
    with pytest.raises(DataError, match="no metrics file found"):
        cmp.load([str(tmp_path)], path)
    with pytest.raises(DataError, match="unknown revision"):
        cmp.load(["no-such-rev"], path)


def test_cli_table_html_json_and_exit_code(toy_repo, tmp_path, monkeypatch):
    path, env = toy_repo
    (path / "params.yaml").write_text("model:\n  quality: 0.5\n")
    _run(["dvc", "repro", "-q"], path, env)
    monkeypatch.chdir(path)
    html, js = tmp_path / "c.html", tmp_path / "c.json"
    args = ["compare", "HEAD", "workspace", "--html", str(html), "--json", str(js)]
    res = CliRunner().invoke(app, [*args, "--fail-on-regression"])
    assert res.exit_code == 1, res.output
    assert "REGRESSED: reports/lm/toy/eval.json:test.perplexity 100.0 -> 200.0" in (
        res.output
    )
    assert 'class="worse"' in html.read_text()
    data = json.loads(js.read_text())
    assert data["regressions"] == 2
    assert CliRunner().invoke(app, args).exit_code == 0  # flags, but no gate asked
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        yaml.safe_dump(
            [{"pattern": "reports/*:*", "better": "lower", "abs_tol": 1000.0}]
        )
    )
    res = CliRunner().invoke(
        app, [*args, "--rules", str(rules), "--fail-on-regression"]
    )
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["compare", "HEAD", "nope"])
    assert res.exit_code == 2 and "unknown revision" in res.output
    # a tracked metric that B lacks (a run only A has) is named missing, not a
    # regression to None; it still fails the gate
    old, new = tmp_path / "a-reports", tmp_path / "b-reports"
    shutil.copytree(path / "reports", old)
    shutil.copytree(path / "reports", new)
    (new / "lm" / "toy" / "eval.json").unlink()
    res = CliRunner().invoke(
        app, ["compare", str(old), str(new), "--fail-on-regression"]
    )
    assert res.exit_code == 1, res.output
    key = "reports/lm/toy/eval.json:test.perplexity"
    line = f"MISSING: {key} 200.0 in {old}, absent from {new}"
    assert line in res.output
    assert "-> None" not in res.output


def test_scores_on_different_test_splits_are_flagged(toy_repo, tmp_path, monkeypatch):
    """Where the two sides' eval files name different test splits (the default
    and full profiles), compare says so per task folder, from folders and from
    revisions alike; equal splits say nothing."""
    path, env = toy_repo
    monkeypatch.chdir(path)
    a, b = tmp_path / "a", tmp_path / "b"
    for side, sha in ((a, "1" * 64), (b, "2" * 64)):
        shutil.copytree(path / "reports", side)
        f = side / "nmt" / "toy" / "eval.json"
        f.write_text(json.dumps({**json.loads(f.read_text()), "test_sha256": sha}))
    tests: dict = {}
    cmp.load([str(a), str(b)], path, tests)
    [line] = cmp.split_warnings(tests[str(a)], tests[str(b)], (str(a), str(b)))
    assert line.startswith("warning: reports/nmt: ") and "111111111111 vs 2222" in line
    assert cmp.split_warnings(tests[str(a)], tests[str(a)], ("x", "y")) == []
    res = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 0 and "scored different test splits" in res.output


def test_every_training_curve_is_a_declared_plot():
    """`dvc plots diff A B` overlays what dvc.yaml declares: every curve a training
    stage writes (curve.csv, loss.csv) is a plot with its x and y."""
    from conftest import ROOT

    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    # ppmi-svd is closed-form and gensim's trainer reports no loss: no curve
    no_curve = {"train-embeddings-ppmi-svd", "train-embeddings-gensim"}
    trainers = {
        n: s
        for n, s in spec["stages"].items()
        if n.startswith("train-") and n not in no_curve
    }
    assert len(trainers) >= 5
    for name, stage in trainers.items():
        body = stage.get("do", stage)
        plots = [next(iter(p.items())) for p in body.get("plots", [])]
        curves = [(p, o) for p, o in plots if p.endswith(("curve.csv", "loss.csv"))]
        assert curves, f"{name}: no training curve declared under plots"
        for path, opts in curves:
            assert opts.get("x") and opts.get("y"), f"{name}: {path} needs x and y"
            assert opts.get("cache") is False, f"{name}: {path} must be committed"
