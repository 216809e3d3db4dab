"""Prefect flows: fetch retries, and the retraining flow's regression gate on the
tiny profile (a planted regression is blocked, a planted improvement promoted)."""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, make_tiny_repo

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


FLAKY = """\
import sys
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
    env = make_tiny_repo(tmp_path, manifests=True)
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    for k in ("NAME", "EMAIL"):
        for who in ("AUTHOR", "COMMITTER"):
            monkeypatch.setenv(f"GIT_{who}_{k}", env[f"GIT_{who}_{k}"])
    # the baseline on main: a bigram Kneser-Ney model (order 2), the planted flaw
    # (on the tiny profile: test perplexity 50.7 against the trigram's 47.4)
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
        f"reports/lm/kn3/{f}"
        for f in ("train.json", "eval.json", "eval_detail.json", "items.json.gz")
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


NODE_STEP = """\
import os, sys, time
from pathlib import Path
name, seconds, out = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
node = os.environ.get("FIRTH_NODE_REPO", "here")
events = Path(os.environ["FIRTH_EVENTS"])
with events.open("a") as f:
    f.write(f"{name} start {time.time()} {node}\\n")
# The two trainings wait (up to 5 minutes) for each other to start: they overlap
# only if two workers run them at once, however slow a loaded machine starts them.
other = {"train-a": "train-b", "train-b": "train-a"}.get(name)
deadline = time.time() + 300
while other and f"{other} start" not in events.read_text() and time.time() < deadline:
    time.sleep(0.2)
time.sleep(seconds)
inputs = "".join(Path(p).read_text() for p in sys.argv[4:])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(f"{name}\\n{inputs}")
with events.open("a") as f:
    f.write(f"{name} end {time.time()} {node}\\n")
"""


def wait_for_workers(names, processes, logs, timeout=180):
    """Block until each pool lists its named workers (they heartbeat on start);
    fail with their logs when one has exited or the time is up."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            seen = {
                pool: {w.name for w in client.read_workers_for_work_pool(pool)}
                for pool in names
            }
        missing = [n for pool, ns in names.items() for n in ns if n not in seen[pool]]
        if not missing:
            return
        dead = [p.args[-1] for p in processes if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            text = "\n".join(
                f"--- {n}\n{(logs / f'{n}.log').read_text()[-2000:]}" for n in missing
            )
            pytest.fail(f"workers not started: {missing} (exited: {dead})\n{text}")
        time.sleep(1)


def stop_workers(workers, grace=10.0):
    """SIGTERM each worker's process group, then SIGKILL what is left after
    ``grace`` seconds in all (a process worker can take a minute to wind down
    after its last run: four of them, waited for one by one, cost four minutes)."""
    import os
    import signal

    for w in workers:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(w.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for w in workers:
        try:
            w.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.pid, signal.SIGKILL)
            w.wait()


def test_pools_fan_out_runs_ready_stages_at_once_on_two_workers_per_pool(
    tmp_path, harness, monkeypatch
):
    """End to end on this machine: the test's Prefect server, two process workers
    per pool (one flow run at a time each, each in its own clone), a local DVC
    remote. Both training stages run at once on the two GPU-pool workers; every
    stage runs exactly once across the nodes (the others restore it from the run
    cache); the orchestrator's final `dvc repro --pull` runs nothing."""
    import pools
    from prefect.settings import PREFECT_API_URL

    origin, remote, events = tmp_path / "origin", tmp_path / "remote", tmp_path / "ev"
    origin.mkdir()
    env = make_tiny_repo(origin)
    (origin / "step.py").write_text(NODE_STEP)

    def stage(name, ins=(), seconds=0.5):
        cmd = f"python step.py {name} {seconds} out/{name}.txt"
        cmd += "".join(f" out/{i}.txt" for i in ins)
        deps = ["step.py", *(f"out/{i}.txt" for i in ins)]
        return {"cmd": cmd, "deps": deps, "outs": [f"out/{name}.txt"]}

    spec = {
        "stages": {
            "prepare": stage("prepare"),
            "train-a": stage("train-a", ["prepare"], seconds=1),
            "train-b": stage("train-b", ["prepare"], seconds=1),
            "evaluate": stage("evaluate", ["train-a", "train-b"]),
        }
    }
    (origin / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    subprocess.run(
        ["dvc", "remote", "add", "-d", "shared", str(remote)],
        cwd=origin,
        env=env,
        check=True,
    )
    git(["add", "-A"], origin, env)
    git(["commit", "-qm", "toy pipeline"], origin, env)
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setenv("FIRTH_EVENTS", str(events))

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    for pool in ("firth-cpu", "firth-gpu"):
        with get_client(sync_client=True) as client:
            client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
        pools.run_stages.from_source(
            source=str(ROOT / "flows"), entrypoint="pools.py:run_stages"
        ).deploy(name=pool, work_pool_name=pool, print_next_steps=False)
    workers = []
    try:
        for pool in ("firth-cpu", "firth-gpu"):
            for i in (1, 2):
                node = tmp_path / f"{pool}-{i}"
                git(["clone", "-q", str(origin), str(node)], tmp_path, env)
                worker_env = env | {
                    "PREFECT_API_URL": PREFECT_API_URL.value(),
                    "PREFECT_WORKER_QUERY_SECONDS": "1",  # (default 10: slow to start)
                    "FIRTH_NODE_REPO": str(node),
                    "FIRTH_EVENTS": str(events),
                }
                log = (tmp_path / f"{pool}-{i}.log").open("w")
                workers.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "prefect", "worker", "start"]
                        + ["--pool", pool, "--type", "process", "--limit", "1"]
                        + ["--name", f"{pool}-{i}"],
                        env=worker_env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # (stopped with its children below)
                    )
                )
        coordinator = tmp_path / "coordinator"
        git(["clone", "-q", str(origin), str(coordinator)], tmp_path, env)
        # Fan out only once every worker has checked in: on a loaded machine a
        # worker takes a while to start, and one that is not polling yet would
        # leave both training runs to the other.
        wait_for_workers(
            {p: [f"{p}-{i}" for i in (1, 2)] for p in ("firth-cpu", "firth-gpu")},
            workers,
            tmp_path,
        )
        sent = pools.pipeline_on_pools(str(coordinator), jobs=8)
    finally:
        stop_workers(workers)
    assert sent == {s: True for s in spec["stages"]}
    rows = [line.split() for line in events.read_text().splitlines()]
    starts = [r for r in rows if r[1] == "start"]
    # every stage ran once, on a node of its pool (none on the orchestrator)
    assert sorted(r[0] for r in starts) == sorted(spec["stages"])
    where = {r[0]: Path(r[3]).name for r in starts}
    logs = "\n".join(
        f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(tmp_path.glob("*.log"))
    )
    assert {where["train-a"], where["train-b"]} == {"firth-gpu-1", "firth-gpu-2"}, logs
    assert where["prepare"].startswith("firth-cpu")
    t = {(r[0], r[1]): float(r[2]) for r in rows}
    assert t["train-a", "start"] < t["train-b", "end"]  # the two trainings
    assert t["train-b", "start"] < t["train-a", "end"]  # overlapped
    assert t["evaluate", "start"] >= max(t["train-a", "end"], t["train-b", "end"])
    # the orchestrator has every output, from the remote, and nothing is stale
    assert (coordinator / "out" / "evaluate.txt").read_text().startswith("evaluate")
    status = subprocess.run(
        ["dvc", "status"], cwd=coordinator, env=env, capture_output=True, text=True
    )
    assert "Data and pipelines are up to date" in status.stdout


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


# --- the DAG-parallel pipeline flow ---------------------------------------------------

# each stage appends "<name> start|end <time>" to ../events (outside every output)
STEP = """\
import sys, time
from pathlib import Path
name, seconds, out = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
events = Path("events")
with events.open("a") as f:
    f.write(f"{name} start {time.time()}\\n")
if name == "broken":
    sys.exit("broken: the input is not what it should be")
time.sleep(seconds)
inputs = "".join(Path(p).read_text() for p in sys.argv[4:])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(f"{name}\\n{inputs}")
with events.open("a") as f:
    f.write(f"{name} end {time.time()}\\n")
"""


def diamond(path, *, broken=False):
    """a -> (b, c) -> d, and e on its own; with ``broken``, c fails."""
    (path / "step.py").write_text(STEP)

    def stage(name, ins=(), seconds=1.5):
        cmd = f"python step.py {'broken' if broken and name == 'c' else name}"
        cmd += f" {seconds} out/{name}.txt {' '.join(f'out/{i}.txt' for i in ins)}"
        deps = ["step.py", *(f"out/{i}.txt" for i in ins)]
        return {"cmd": cmd.strip(), "deps": deps, "outs": [f"out/{name}.txt"]}

    spec = {
        "stages": {
            "a": stage("a", seconds=0.2),
            "b": stage("b", ["a"]),
            "c": stage("c", ["a"]),
            "d": stage("d", ["b", "c"], seconds=0.2),
            "e": stage("e", seconds=0.2),
        }
    }
    (path / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def events(path):
    rows = [line.split() for line in (path / "events").read_text().splitlines()]
    return {(name, kind): float(t) for name, kind, t in rows}


def test_parallel_flow_runs_independent_stages_at_once_and_writes_what_dvc_repro_writes(
    tmp_path, harness, monkeypatch
):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    for path in (serial, parallel):
        path.mkdir()
        env = make_tiny_repo(path)
        diamond(path)
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    subprocess.run(["dvc", "repro"], cwd=serial, env=env, check=True)
    ran = pipeline_flow.pipeline(str(parallel), jobs=2, cpus=2)
    assert ran == {s: True for s in "abcde"}
    t = events(parallel)
    # b and c both wait for a, then run side by side; d waits for both
    assert t["b", "start"] >= t["a", "end"] and t["c", "start"] >= t["a", "end"]
    assert t["b", "start"] < t["c", "end"] and t["c", "start"] < t["b", "end"]
    assert t["d", "start"] >= max(t["b", "end"], t["c", "end"])
    # never more than two at once
    marks = sorted((v, 1 if k == "start" else -1) for (_, k), v in t.items())
    assert max(itertools.accumulate(m for _, m in marks)) == 2

    # the same dvc.lock entries as a serial `dvc repro` (new entries are written as
    # stages finish, so their order may differ), and nothing stale
    def lock(path):
        return yaml.safe_load((path / "dvc.lock").read_text())

    assert lock(parallel) == lock(serial)
    status = subprocess.run(
        ["dvc", "status"], cwd=parallel, env=env, capture_output=True, text=True
    )
    assert "Data and pipelines are up to date" in status.stdout
    again = subprocess.run(
        ["dvc", "repro"], cwd=parallel, env=env, capture_output=True, text=True
    )
    assert "Running stage" not in again.stdout
    assert pipeline_flow.pipeline(str(parallel), jobs=2) == {s: False for s in "abcde"}
    record = json.loads((parallel / ".dvc/tmp/firth-flow/run.json").read_text())
    assert set(record["stages"]) == set("abcde") and record["jobs"] == 2
    assert (parallel / ".dvc/tmp/firth-flow/b.log").exists()


def test_a_failing_stage_fails_the_flow_with_its_own_error_and_keeps_the_rest(
    tmp_path, harness, monkeypatch
):
    env = make_tiny_repo(tmp_path)
    diamond(tmp_path, broken=True)
    for k in ("PATH", "PYTHONPATH"):
        monkeypatch.setenv(k, env[k])
    state = pipeline_flow.pipeline(str(tmp_path), jobs=2, return_state=True)
    assert state.is_failed()
    message = str(state.result(raise_on_failure=False))
    assert "1 stage(s) failed (c)" in message
    assert "the input is not what it should be" in message  # the stage's own words
    lock = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]
    assert {"a", "b"} <= set(lock) and "c" not in lock and "d" not in lock
    assert not (tmp_path / "out" / "d.txt").exists()  # never started
    # with --keep-going the stage that does not depend on c still runs
    (tmp_path / "dvc.lock").unlink()
    state = pipeline_flow.pipeline(
        str(tmp_path), jobs=1, keep_going=True, return_state=True
    )
    assert state.is_failed()
    lock = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]
    assert set(lock) == {"a", "b", "e"}


def test_schedule_shares_out_threads_and_gpus():
    from firth import dag

    def stage(name, threads=1, gpus=1):
        return dag.Stage(name, frozenset(), threads=threads, gpus=gpus)

    graph = dag.Dag(
        {
            "train-x": stage("train-x", threads=2),
            "train-y": stage("train-y", threads=2),
            "train-ddp": stage("train-ddp", threads=2, gpus=2),
            "evaluate-x": stage("evaluate-x"),
        }
    )
    cpu = pipeline_flow.Schedule(graph, jobs=3, cpus=3)
    assert cpu.take("train-x") == pipeline_flow.Slot(2, None)
    assert cpu.take("train-y") is None  # 2 + 2 threads > 3 CPUs
    assert cpu.take("evaluate-x") == pipeline_flow.Slot(1, None)
    cpu.give_back("train-x")
    assert cpu.take("train-y") is not None
    gpu = pipeline_flow.Schedule(graph, jobs=8, cpus=16, gpus=["0", "1", "2"])
    assert gpu.take("train-x").gpus == ("0",)
    assert gpu.take("train-ddp").gpus == ("1", "2")
    assert gpu.take("train-y") is None  # every GPU is held
    assert gpu.take("evaluate-x").env() == {"CUDA_VISIBLE_DEVICES": ""}
    gpu.give_back("train-ddp")
    assert gpu.take("train-y").env() == {"CUDA_VISIBLE_DEVICES": "1"}
    with pytest.raises(ValueError, match="train-ddp runs 2 processes"):
        pipeline_flow.Schedule(graph, jobs=2, cpus=2, gpus=["0"])
    one = pipeline_flow.Schedule(graph, jobs=1, cpus=16)
    assert one.take("evaluate-x") and one.take("train-x") is None  # --jobs 1


def test_the_flows_give_an_ephemeral_server_two_minutes_to_start():
    """Prefect's default 20 s was too short on a busy 2-core machine: the flow
    failed before its first stage ("Timed out while attempting to connect to
    ephemeral Prefect API server")."""
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS as t

    before = t.value()
    with pipeline_flow.patient_server():
        assert t.value() == max(120, before)
    assert t.value() == before
