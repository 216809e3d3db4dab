"""The pipeline as a task graph (firth.dag): DVC's own graph read right, and the
schedules checked against closed forms, Graham's bound and brute force."""

from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

from firth import dag


def chain_and_one() -> tuple[dag.Dag, dict[str, float]]:
    """a (3 s) -> b (2 s), and c (4 s) on its own."""
    graph = dag.Dag(
        {
            "a": dag.Stage("a", frozenset()),
            "c": dag.Stage("c", frozenset()),
            "b": dag.Stage("b", frozenset({"a"})),
        }
    )
    return graph, {"a": 3.0, "b": 2.0, "c": 4.0}


def random_dag(rng: random.Random, n: int) -> tuple[dag.Dag, dict[str, float]]:
    names = [f"s{i}" for i in range(n)]
    stages = {}
    for i, name in enumerate(names):
        ups = {u for u in names[:i] if rng.random() < 0.3}
        stages[name] = dag.Stage(name, frozenset(ups))
    return dag.Dag(stages), {s: float(rng.randint(1, 9)) for s in names}


def brute_force_makespan(graph: dag.Dag, seconds, workers: int) -> float:
    """The optimum over every order of the stages fed to a greedy machine: each
    stage, in that order, starts on the worker free first, once its upstream
    stages end (every non-delay schedule is one of these; one is optimal)."""
    best = float("inf")
    for order in itertools.permutations(graph.stages):
        pos = {n: i for i, n in enumerate(order)}
        if any(pos[u] > pos[n] for n in order for u in graph.stages[n].upstream):
            continue
        free = [0.0] * workers
        end: dict[str, float] = {}
        for n in order:
            w = min(range(workers), key=lambda k: free[k])
            start = max([free[w], *(end[u] for u in graph.stages[n].upstream)])
            end[n] = start + seconds[n]
            free[w] = end[n]
        best = min(best, max(end.values()))
    return best


def test_the_worked_example():
    graph, secs = chain_and_one()
    assert dag.critical_path(graph, secs) == (5.0, ["a", "b"])
    assert dag.makespan(graph, secs, 1) == 9.0  # one worker: the sum
    assert dag.makespan(graph, secs, 2) == 5.0  # a and c at once, then b
    assert dag.ideal(graph, secs, 2) == 5.0  # max(5, 9 / 2)
    assert dag.ideal(graph, secs, 1) == 9.0


def test_makespan_between_the_bounds_and_exact_on_small_graphs():
    rng = random.Random(0)
    for trial in range(60):
        graph, secs = random_dag(rng, rng.randint(1, 7))
        total = sum(secs.values())
        path, _ = dag.critical_path(graph, secs)
        assert dag.makespan(graph, secs, 1) == total
        assert dag.makespan(graph, secs, len(graph)) == path  # enough workers
        for workers in (2, 3):
            got = dag.makespan(graph, secs, workers)
            bound = dag.ideal(graph, secs, workers)
            # Graham: any list schedule is within total / m + critical path
            assert bound - 1e-9 <= got <= total / workers + path + 1e-9
            if len(graph) <= 6:
                best = brute_force_makespan(graph, secs, workers)
                assert bound - 1e-9 <= best <= got + 1e-9, trial


def test_critical_path_is_the_longest_chain_by_brute_force():
    rng = random.Random(1)
    for _ in range(40):
        graph, secs = random_dag(rng, rng.randint(1, 8))
        length, path = dag.critical_path(graph, secs)
        assert length == sum(secs[s] for s in path)
        for a, b in itertools.pairwise(path):
            assert a in graph.stages[b].upstream

        best: dict[str, float] = {}  # longest chain ending at each stage
        for n, s in graph.stages.items():
            best[n] = secs[n] + max((best[u] for u in s.upstream), default=0.0)
        assert length == max(best.values())


def test_ready_after_and_subset():
    graph, _ = chain_and_one()
    assert graph.ready([]) == ["a", "c"]
    assert graph.ready(["a"], started=["c"]) == ["b"]
    assert graph.after(["a"]) == {"b"}
    assert graph.after(["b"]) == set()
    assert list(graph.subset(["b", "c"]).stages["b"].upstream) == []


def test_a_graph_out_of_order_or_with_unknown_stages_is_refused():
    with pytest.raises(ValueError, match="b comes before its upstream"):
        dag.Dag(
            {"b": dag.Stage("b", frozenset({"a"})), "a": dag.Stage("a", frozenset())}
        )
    with pytest.raises(ValueError, match="unknown stages"):
        dag.Dag({"b": dag.Stage("b", frozenset({"zz"}))})
    with pytest.raises(ValueError, match="workers must be at least 1"):
        dag.makespan(*chain_and_one(), 0)


def test_load_reads_dvcs_own_graph_of_the_real_pipeline():
    """Every stage of dvc.yaml, each edge of `dvc dag --dot` (DVC's CLI, the
    independent answer) and no other, the threads the params ask for."""
    graph = dag.load(ROOT, cpus=2)
    env = {"PATH": f"{sys.prefix}/bin", "DVC_NO_ANALYTICS": "1"}
    dot = subprocess.run(
        ["dvc", "dag", "--dot"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    edges = {(d, u) for u, d in re.findall(r'"([^"]+)"\s*->\s*"([^"]+)"', dot)}
    ours = {(n, u) for n, s in graph.stages.items() for u in s.upstream}
    assert ours == edges
    listed = subprocess.run(
        ["dvc", "stage", "list", "--name-only"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(graph.stages) == sorted(listed)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    lstm = graph.stages["train-lm@lstm"]
    assert lstm.threads == min(params["lm"]["common"]["threads"] or 2, 2)
    assert lstm.gpus == params["accel"]["processes"]
    assert graph.stages["prepare-text"].threads == 1
    assert lstm.cmd[0].startswith("python stages/train_lm.py lstm --train ")
    assert ("data/lm/lstm", False) in lstm.outs
    assert ("data/raw/text/bible-kjv", True) in graph.stages[
        "fetch-text@bible-kjv"
    ].outs
    # every stage after its upstream stages (Dag checks it), and targets narrow it
    sub = dag.load(ROOT, ["evaluate-lm@kn5"], cpus=2)
    assert "train-lm@kn5" in sub.stages and "train-lm@lstm" not in sub.stages
    assert list(sub.stages)[-1] == "evaluate-lm@kn5"
    with pytest.raises(KeyError, match="no-such-stage: no such stage"):
        dag.load(ROOT, ["no-such-stage"])


def bench_dag():
    """benchmarks/dag.py as a module (it imports benchmarks/common.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_dag", ROOT / "benchmarks" / "dag.py"
    )
    bench = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec.loader.exec_module(bench)
    return bench


def test_the_benchmarks_one_thread_params_change_only_the_threads_keys(tmp_path):
    bench = bench_dag()
    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    bench.one_thread(params)
    before = yaml.safe_load((ROOT / "params.yaml").read_text())
    after = yaml.safe_load(params.read_text())

    def threads(tree, path=()):
        if isinstance(tree, dict):
            for k, v in tree.items():
                yield from threads(v, (*path, k))
        elif path and path[-1] == "threads":
            yield path, tree

    assert [p for p, _ in threads(before)] == [p for p, _ in threads(after)]
    assert len(list(threads(after))) >= 5 and {v for _, v in threads(after)} == {1}

    def without(tree):
        if isinstance(tree, dict):
            return {k: without(v) for k, v in tree.items() if k != "threads"}
        return tree

    assert without(before) == without(after)

    def comments(text):  # each threads line's comment, kept by the rewrite
        return [
            line.split("#", 1)[1]
            for line in text.splitlines()
            if line.strip().startswith("threads:") and "#" in line
        ]

    kept = comments(params.read_text())
    assert kept and kept == comments((ROOT / "params.yaml").read_text())


def test_the_default_is_simulated_from_the_run_where_every_stage_ran(
    tmp_path, monkeypatch
):
    bench = bench_dag()
    monkeypatch.setattr(bench, "RESULTS", tmp_path)

    def rows(**seconds):
        return [{"stage": k, "seconds": v} for k, v in seconds.items()]

    # a plain clone lists the evaluation it skipped at the second DVC took to skip it
    plain = {"stages": rows(a=50.0, b=0.1)}
    every = {"stages": rows(a=40.0, b=30.0)}
    front = tmp_path / "front_door.json"
    front.write_text(json.dumps({"make_run": plain, "make_run_every_stage": every}))
    assert bench.default_seconds({}) == (
        {"a": 40.0, "b": 30.0},
        "benchmarks/results/front_door.json make_run_every_stage",
    )
    # a record that timed more stages wins; without the every-stage run, the
    # measure run's serial clone comes before the plain front door on a tie
    serial = {"measured": {"runs": {"serial": {"stages": rows(a=1.0, b=2.0)}}}}
    front.write_text(json.dumps({"make_run": plain}))
    assert bench.default_seconds(serial)[1] == (
        "benchmarks/results/dag.json measured.runs.serial"
    )
    front.write_text(json.dumps({"make_run": {"stages": rows(a=1.0, b=2.0, c=3.0)}}))
    assert bench.default_seconds(serial)[0] == {"a": 1.0, "b": 2.0, "c": 3.0}
    front.unlink()
    with pytest.raises(SystemExit, match="no serial timing"):
        bench.default_seconds({})


def test_the_front_door_reads_both_tiers_of_make_test():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import front_door

    # a timed log of `make test`: seconds since start, then pytest's own lines
    log = "\n".join(
        [
            "   1.00 .venv/bin/python -m pytest -q -m 'not e2e and not slow' -n auto",
            "  60.10 12.50s call     tests/test_a.py::test_x",
            "  60.20 ===== 673 passed, 1 skipped in 184.65s (0:03:04) =====",
            "  61.00 .venv/bin/python -m pytest -q -m 'e2e or slow'",
            " 700.00 246.51s call     tests/test_e2e.py::test_y",
            " 700.10 1.20s setup    tests/test_e2e.py::test_z",
            " 700.20 ===== 24 passed, 674 deselected in 660.66s (0:11:00) =====",
        ]
    )
    got = front_door.test_summary(log)
    assert got["summary"] == (
        "673 passed, 1 skipped in 184.65s (0:03:04); "
        "24 passed, 674 deselected in 660.66s (0:11:00)"
    )
    assert [line.split()[-1] for line in got["slowest"]] == [
        "tests/test_e2e.py::test_y",
        "tests/test_a.py::test_x",
        "tests/test_e2e.py::test_z",
    ]


def test_stage_seconds_adds_an_interrupted_stage_to_its_resumed_run(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import stage_seconds as ss

    out = tmp_path / "t.json"
    events = [(10.0, "Running stage 'a':"), (13.5, "Running stage 'b':")]
    # killed 4 s into b: a took 3.5 s, b has 4 s to its name so far
    ss.merge(out, ss.spans(events, end=17.5), "c1")
    stages = json.loads(out.read_text())["stages"]
    assert stages["a"]["seconds"] == 3.5 and stages["b"] == {"partial_seconds": 4.0}
    # resumed: b runs 6 s more from its checkpoint and ends well
    ss.merge(out, ss.spans([(0.0, "Running stage 'b':"), (6.0, "")], end=9.0), "c2")
    stages = json.loads(out.read_text())["stages"]
    assert stages["b"]["seconds"] == 10.0 and "partial_seconds" not in stages["b"]
    assert stages["a"]["seconds"] == 3.5 and stages["b"]["commit"] == "c2"
    assert ss.spans([], end=1.0) == []


def test_stage_seconds_passes_a_kill_on_as_dvcs_sigint_and_keeps_the_seconds(
    tmp_path,
):
    """SIGTERM to the timer (a background run ignores Ctrl-C's SIGINT) reaches the
    command's whole process group as the SIGINT DVC handles, even when the timer
    was started with SIGINT ignored, and the stage that was running keeps its
    seconds as partial."""
    import signal
    import subprocess
    import time

    # like DVC, the child keeps the SIGINT disposition it inherits
    child = (
        "import sys, time\n"
        "try:\n"
        "    print(\"Running stage 'x':\", flush=True)\n"
        "    time.sleep(20)\n"
        "except KeyboardInterrupt:\n"
        "    print('child stopped by SIGINT', flush=True); sys.exit(1)\n"
    )
    out = tmp_path / "t.json"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "stage_seconds.py"), str(out)]
        + ["--", sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
        # as `make run-full &` from a script starts it: SIGINT ignored, which DVC
        # and the stage would inherit
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stdout is not None
    assert "Running stage 'x'" in proc.stdout.readline()
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(timeout=30) == 1
    assert "child stopped by SIGINT" in rest
    stage = json.loads(out.read_text())["stages"]["x"]
    assert set(stage) == {"partial_seconds"} and 1.0 <= stage["partial_seconds"] < 30


def test_the_reports_dag_section_shows_the_measured_and_simulated_runs():
    from firth.dag_report import dag_section

    assert dag_section(None) is None and dag_section({"machine": {}}) is None
    workers = {
        str(w): {
            "makespan_seconds": 600 / w + 100,
            "ideal_seconds": 600 / w,
            "speedup": 0,
        }
        for w in (1, 2, 4)
    }
    stages = [{"stage": "a", "seconds": 1.0}]
    result = {
        "machine": {"cpus": 2},
        "measured": {
            "commit": "abcdef0123",
            "speedup_jobs2_vs_serial": 1.5,
            "runs": {
                "serial": {"seconds": 1800.0, "stages": stages},
                "jobs-2-1thread": {
                    "seconds": 1200.0,
                    "command": "flows/pipeline.py -j 2",
                    "stages": stages * 2,
                    "dvc_status_clean": True,
                    "cpu_steal_share": 0.123,
                },
            },
        },
        "simulated": {
            "commit": "abcdef0123",
            "default": {
                "source": "front_door.json",
                "unmeasured_stages": ["b"],
                "stages": 95,
                "work_seconds": 600.0,
                "critical_path": {"seconds": 100.0, "stages": ["a"]},
                "workers": workers,
            },
        },
    }
    sec = dag_section(result)
    assert "30.0 min" in sec.intro and "20.0 min" in sec.intro and "1.50x" in sec.intro
    (_, (_, measured)), (_, (header, rows)) = sec.tables
    assert measured == [
        ["serial", "1800", "1", "not measured"],
        ["jobs-2-1thread", "1200", "2", "12%"],
    ]
    assert header[-1] == "4 workers (s)"
    assert rows[0][:5] == ["default", "95", "1", "600", "100"]
    assert rows[0][5:] == ["700 (0.0x)", "400 (0.0x)", "250 (0.0x)"]
    assert "default: front_door.json" in sec.intro
    # what the simulation leaves out is named: here a task stage, so dag.json lists it
    assert "count 0 s (default 1: listed in dag.json)" in sec.intro
    result["simulated"]["default"]["unmeasured_stages"] = ["code-fetch"]
    assert "(default 1: the code-* manifest stages" in dag_section(result).intro
    result["simulated"]["default"]["unmeasured_stages"] = []
    assert "Every stage is measured." in dag_section(result).intro
    assert "lower bound" not in dag_section(result).intro
    assert sec.figures[0][1].startswith(b"\x89PNG")
    result["measured"]["runs"]["jobs-2-1thread"]["dvc_status_clean"] = False
    assert "NOT clean" in dag_section(result).intro
