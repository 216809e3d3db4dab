"""Prefect flows: fetch retries, and the retraining flow's regression gate on the
tiny profile (a planted regression is blocked, a planted improvement promoted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, make_tiny_repo
from prefect.testing.utilities import prefect_test_harness

sys.path.insert(0, str(ROOT / "flows"))
import pipeline as pipeline_flow  # noqa: E402
import retrain as retrain_flow  # noqa: E402

pytestmark = pytest.mark.e2e


def git(args, path, env=None):
    proc = subprocess.run(
        ["git", *args], cwd=path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def harness():
    with prefect_test_harness():
        yield


FLAKY = """\
import sys
from pathlib import Path
from pathlib import Path
count = Path("attempts")
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if n < 3:
    sys.exit(f"attempt {n}: connection reset")
Path("raw").mkdir(exist_ok=True)
Path("raw/data.txt").write_text("fetched\\n")
"""


def test_a_fetch_stage_that_fails_twice_then_succeeds_is_retried(
    tmp_path, harness, monkeypatch
):
    env = make_tiny_repo(tmp_path)
    (tmp_path / "flaky.py").write_text(FLAKY)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n"
        "  fetch-flaky:\n    cmd: python flaky.py\n    deps: [flaky.py]\n"
        "    outs: [raw]\n"
        "  count:\n    cmd: wc -l raw/data.txt > n.txt\n    deps: [raw]\n"
        "    outs: [n.txt]\n"
    )
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    state = pipeline_flow.pipeline(str(tmp_path), return_state=True)
    assert state.is_completed(), state.message
    assert state.result() == {"fetch-flaky": True, "count": True}
    assert (tmp_path / "attempts").read_text() == "3"  # failed, failed, succeeded


def _retrain_artifact() -> str:
    """The newest `firth-retrain` markdown artifact on the test server."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        [art] = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["firth-retrain"])
            ),
            sort=ArtifactSort.CREATED_DESC,
            limit=1,
        )
    return art.data


def _params(path):
    return yaml.safe_load((path / "params.yaml").read_text())


def _perplexity(path, rev="HEAD"):
    text = git(["show", f"{rev}:reports/lm/kn3/eval.json"], path)
    return json.loads(text)["test"]["perplexity"]


def test_retrain_promotes_an_improvement_and_blocks_a_regression(
    tmp_path, harness, monkeypatch
):
    env = make_tiny_repo(tmp_path)
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    for k in ("NAME", "EMAIL"):
        for who in ("AUTHOR", "COMMITTER"):
            monkeypatch.setenv(f"GIT_{who}_{k}", env[f"GIT_{who}_{k}"])
    # the baseline on main: a bigram Kneser-Ney model (order 2), the planted flaw
    # (on the tiny profile: test perplexity 49.0 against the trigram's 46.4)
    params = _params(tmp_path)
    params["lm"]["kn"]["order"] = 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    target = "evaluate-lm@kn3"
    subprocess.run(
        ["dvc", "repro", target], cwd=tmp_path, env=env, check=True, capture_output=True
    )
    git(["add", "-A"], tmp_path)
    git(["commit", "-qm", "baseline"], tmp_path)
    base_rev = git(["rev-parse", "HEAD"], tmp_path).strip()
    base_ppl = _perplexity(tmp_path)

    # planted improvement: order 3 -> promoted, committed on main
    state = retrain_flow.retrain(
        str(tmp_path),
        name="order-3",
        set_params=["lm.kn.order=3"],
        targets=[target],
        return_state=True,
    )
    assert state.is_completed(), state.message
    assert state.message.startswith("promoted order-3")
    assert git(["rev-parse", "HEAD~1"], tmp_path).strip() == base_rev
    assert _params(tmp_path)["lm"]["kn"]["order"] == 3
    better_ppl = _perplexity(tmp_path)
    assert better_ppl < 0.98 * base_ppl
    # the refresh fetched every source again, and the same bytes changed nothing
    changed = git(["diff", "--name-only", "HEAD~1", "HEAD"], tmp_path).split()
    assert set(changed) <= {"dvc.lock", "params.yaml"} | {
        f"reports/lm/kn3/{f}" for f in ("train.json", "eval.json", "eval_detail.json")
    }
    assert git(["status", "--porcelain", "--untracked-files=no"], tmp_path) == ""
    assert "**promoted**" in _retrain_artifact()
    assert "| reports/lm/kn3/eval.json | test.perplexity |" in _retrain_artifact()

    # planted regression: back to order 2 -> blocked, main and the tree untouched
    head = git(["rev-parse", "HEAD"], tmp_path).strip()
    state = retrain_flow.retrain(
        str(tmp_path),
        name="order-2",
        set_params=["lm.kn.order=2"],
        targets=[target],
        refresh_sources=False,  # (the first run checked the refresh)
        return_state=True,
    )
    assert state.is_failed()
    assert "reports/lm/kn3/eval.json:test.perplexity" in state.message
    assert git(["rev-parse", "HEAD"], tmp_path).strip() == head
    assert git(["status", "--porcelain", "--untracked-files=no"], tmp_path) == ""
    assert _params(tmp_path)["lm"]["kn"]["order"] == 3
    assert "**blocked: 1 tracked metrics regressed" in _retrain_artifact()
    # the blocked experiment is kept for inspection
    exps = subprocess.run(
        ["dvc", "exp", "list", "--name-only"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert "order-2" in exps  # (order-3 hangs off the previous commit)


def test_retrain_refuses_a_dirty_tree_or_another_branch(tmp_path, harness):
    env = make_tiny_repo(tmp_path)
    git(["add", "-A"], tmp_path, env)
    git(["commit", "-qm", "base"], tmp_path, env)
    (tmp_path / "params.yaml").write_text((tmp_path / "params.yaml").read_text() + "\n")
    state = retrain_flow.retrain(str(tmp_path), return_state=True)
    assert state.is_failed() and "uncommitted changes" in state.message
    git(["checkout", "-q", "-b", "other"], tmp_path, env)
    state = retrain_flow.retrain(str(tmp_path), return_state=True)
    assert state.is_failed() and "not on the baseline 'main'" in state.message


def test_prefect_yaml_entrypoints_are_the_flows():
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    names = {}
    for dep in spec["deployments"]:
        path, _, func = dep["entrypoint"].partition(":")
        flow = load_flow_from_entrypoint(f"{ROOT / path}:{func}")
        names[dep["name"]] = flow.name
        # every parameter the deployment sets is one the flow takes
        assert set(dep.get("parameters", {})) <= set(flow.parameters.properties)
        assert dep["work_pool"]["name"]
    assert names == {
        "firth-retrain": "firth-retrain",
        "firth-pipeline": "firth-pipeline",
        "firth-pipeline-pools": "firth-pipeline-pools",
        "firth-cpu": "firth-stages",
        "firth-gpu": "firth-stages",
    }
    pools = {d["name"]: d["work_pool"]["name"] for d in spec["deployments"]}
    assert pools["firth-gpu"] == "firth-gpu" and pools["firth-cpu"] == "firth-cpu"
    # the pools flow calls the stage deployments by their registered names
    orchestrator = next(d for d in spec["deployments"] if d["name"].endswith("pools"))
    assert orchestrator["parameters"] == {
        "cpu": "firth-stages/firth-cpu",
        "gpu": "firth-stages/firth-gpu",
    }
    [sched] = spec["deployments"][0]["schedules"]
    from prefect.schedules import Cron

    Cron(sched["cron"], timezone=sched["timezone"])  # a valid cron


def test_flows_serve_dry_run_prints_the_cron_deployment():
    from typer.testing import CliRunner

    from firth.cli import app

    res = CliRunner().invoke(
        app,
        ["flows", "serve", "--dry-run", "--cron", "15 4 * * 1", "--repo", str(ROOT)],
    )
    assert res.exit_code == 0, res.output
    assert "deployment: firth-retrain/firth-retrain" in res.output
    assert "schedule: cron 15 4 * * 1 (UTC)" in res.output
    bad = CliRunner().invoke(app, ["flows", "serve", "--dry-run", "--cron", "61 * * *"])
    assert bad.exit_code == 2


def test_pool_phases_respect_every_dependency_of_the_real_dag():
    import pools

    order = pipeline_flow.stage_order(ROOT)
    deps = pools.edges(ROOT)
    data, train, rest = pools.phases(order, deps)
    assert sorted(data + train + rest) == sorted(order)
    assert train and all(pools.is_training(s) for s in train)
    assert not any(pools.is_training(s) for s in data + rest)
    assert {"prepare-text", "tokenizer-parallel"} <= set(data)
    assert {"report", "evaluate-lm@kn5"} <= set(rest)
    phase = {s: i for i, group in enumerate((data, train, rest)) for s in group}
    position = {s: i for i, s in enumerate(data + train + rest)}
    for up, down in deps:  # every input is made in an earlier phase, or earlier on
        assert phase[up] <= phase[down] and position[up] < position[down], (up, down)
    with pytest.raises(ValueError, match="needs a trained model"):
        pools.phases(
            ["train-a", "evaluate-a", "train-b"],
            [("train-a", "evaluate-a"), ("evaluate-a", "train-b")],
        )


STAGE = """\
from pathlib import Path
runs = Path("runs.txt")
runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
Path("out.txt").write_text(Path("in.txt").read_text().upper())
"""


def test_a_worker_reuses_what_another_worker_pushed(tmp_path, harness, monkeypatch):
    """Node A runs a stage and pushes it with the run cache; node B, a fresh clone
    of the same commit, runs the same stage list and restores the output instead
    of running it again."""
    import pools

    a, b, remote = tmp_path / "a", tmp_path / "b", tmp_path / "remote"
    a.mkdir()
    env = make_tiny_repo(a)  # for its environment; the toy DAG replaces dvc.yaml
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    (a / "stage.py").write_text(STAGE)
    (a / "in.txt").write_text("real data\n")
    (a / "dvc.yaml").write_text(
        "stages:\n  upper:\n    cmd: python stage.py\n"
        "    deps: [stage.py, in.txt]\n    outs: [out.txt]\n"
    )
    subprocess.run(
        ["dvc", "remote", "add", "-d", "shared", str(remote)],
        cwd=a,
        env=env,
        check=True,
    )
    (a / ".gitignore").write_text("runs.txt\n")
    git(["add", "-A"], a, env)
    git(["commit", "-qm", "toy"], a, env)
    git(["clone", "-q", str(a), str(b)], tmp_path, env)

    assert pools.run_stages(["upper"], str(a)) == {"upper": True}
    assert (a / "runs.txt").read_text() == "1"
    assert pools.run_stages(["upper"], str(b)) == {"upper": False}  # restored
    assert not (b / "runs.txt").exists()  # the command never ran on node B
    assert (b / "out.txt").read_text() == "REAL DATA\n"


def test_flows_serve_registers_the_cron_deployment_on_a_local_server(tmp_path):
    """The real thing: `firth flows serve` starts Prefect's local server, registers
    the deployment with its cron schedule (the server's scheduler then creates the
    next runs), and SIGTERM stops both."""
    import os
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")  # its own SQLite database
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    args = ["--port", str(port), "--cron", "0 3 * * 0", "--repo", str(ROOT)]
    proc = subprocess.Popen(
        ["firth", "flows", "serve", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    api = f"http://127.0.0.1:{port}/api"

    def post(path):
        req = urllib.request.Request(
            api + path, data=b"{}", headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    try:
        deadline = time.monotonic() + 180
        deps, runs = [], []
        while time.monotonic() < deadline and not (deps and runs):
            time.sleep(2)
            assert proc.poll() is None, proc.stdout.read()
            try:
                deps = post("/deployments/filter")
                runs = post("/flow_runs/filter")
            except OSError:
                continue
        [dep] = deps
        assert dep["name"] == "firth-retrain"
        [sched] = dep["schedules"]
        assert sched["schedule"]["cron"] == "0 3 * * 0" and sched["active"]
        assert dep["parameters"] == {"repo": str(ROOT), "baseline": "main"}
        assert runs and all(r["state_name"] == "Scheduled" for r in runs)
        # the scheduler's runs fall on Sundays at 03:00 UTC
        assert all(r["expected_start_time"].endswith("T03:00:00Z") for r in runs)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert "Pausing all deployments" in out
    with pytest.raises(OSError):
        post("/deployments/filter")  # the local server stopped with it
