"""The front door, measured: clone the repository to a temporary folder and time
`make run` there (creating .venv included), then a second `dvc repro` (it must run
no stage), then `make test` in another fresh clone, as CI runs it, and `make
test-fast` (the tests without the end-to-end runs) in that clone after it.

Writes benchmarks/results/front_door.json: seconds per DVC stage (`make run` runs
the Prefect flow, stages at once: each stage's start, end and threads from the
flow's .dvc/tmp/firth-flow/run.json; a serial `dvc repro`: from the moment DVC
starts a stage to the moment the next one starts or the command ends), the set-up
time before the first stage (before the flow starts), each command's total, its
peak RSS (the largest process of the command's tree, from wait4), the share of CPU
time the hypervisor took meanwhile (steal), a fixed speed probe before and after
(this machine's speed changes between hours), and the test summary with the
slowest tests. Usage
(about 50 minutes on 2 cores; nothing else should run meanwhile):

    python benchmarks/front_door.py                 # both commands
    python benchmarks/front_door.py --skip-test     # make run and the no-op only
    python benchmarks/front_door.py --skip-run --only-fast --merge  # make test-fast
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    cpu_ticks,
    head_commit,
    machine,
    speed_probe,
    steal_share,
    write_result,
)

ROOT = Path(__file__).resolve().parents[1]
STAGE = re.compile(r"Running stage '([^']+)'")
FLOW = re.compile(r"\d+ stages, up to \d+ at once")  # flows/pipeline.py's first line
FLOW_RECORD = Path(".dvc/tmp/firth-flow/run.json")
SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed).*?)\s*=*$")


def stage_spans(starts: list[tuple[str, float]], total: float) -> list[dict]:
    """Each stage's seconds from the (name, start) of every stage a run began:
    a stage lasts until the next one starts, the last until ``total``."""
    return [
        {
            "stage": name,
            "seconds": round(
                (starts[i + 1][1] if i + 1 < len(starts) else total) - t, 2
            ),
        }
        for i, (name, t) in enumerate(starts)
    ]


def flow_spans(record: dict, offset: float) -> list[dict]:
    """Each stage's seconds, start (from the command's start: the flow began at
    ``offset``) and threads, from the flow's run.json, in order of start."""
    times = sorted(record["stages"].items(), key=lambda kv: kv[1]["start"])
    return [
        {
            "stage": name,
            "seconds": round(t["end"] - t["start"], 2),
            "start": round(offset + t["start"], 2),
            "threads": t["threads"],
        }
        for name, t in times
        if "end" in t
    ]


def timed(cmd: list[str], cwd: Path, log: Path, env: dict) -> dict:
    """Run ``cmd``, stream its output to ``log`` with the time of each line, and
    return the total seconds, the start time of each DVC stage, and the peak RSS,
    with the speed probe taken just before and just after."""
    host = machine()
    probe_before = speed_probe()
    start = time.monotonic()
    ticks = cpu_ticks()
    starts: list[tuple[str, float]] = []
    flow_start: float | None = None  # make run through the Prefect flow
    lines = []
    with log.open("w") as sink:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.monotonic() - start
            sink.write(f"{now:9.2f} {line}")
            sink.flush()
            lines.append(line.rstrip("\n"))
            match = STAGE.search(line)
            if match:
                starts.append((match.group(1), now))
            if flow_start is None and FLOW.search(line):
                flow_start = now
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    total = time.monotonic() - start
    ticks_after = cpu_ticks()
    stages = stage_spans(starts, total)
    setup = starts[0][1] if starts else None
    record = cwd / FLOW_RECORD
    if flow_start is not None and record.exists():  # stages ran concurrently
        flow = json.loads(record.read_text())
        stages, setup = flow_spans(flow, flow_start), flow_start
    return {
        "command": " ".join(cmd),
        "machine": host,
        "exit_code": proc.returncode,
        "seconds": round(total, 1),
        "setup_seconds": round(setup, 1) if setup is not None else None,
        "stages": stages,
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # KiB on Linux
        # a shared virtual machine's slow hours show here (the share of CPU time
        # the hypervisor took meanwhile), so that two timings can be compared
        "cpu_steal_share": steal_share(ticks, ticks_after),
        # the same fixed workloads before and after: the machine's speed that hour
        "speed_probe": {"before": probe_before, "after": speed_probe()},
        "tail": lines[-5:],
    }


def test_summary(log: str) -> dict:
    """pytest's closing lines (one per pytest run: `make test` runs two tiers) and
    the slowest tests of every run, slowest first, from a timed log (each line
    starts with the seconds since the command began)."""
    lines = [line.strip().split(" ", 1)[-1].strip() for line in log.splitlines()]
    summary = [m.group(1) for line in lines if (m := SUMMARY.match(line))]
    slowest = [
        line for line in lines if re.match(r"\d+\.\d+s (call|setup|teardown) ", line)
    ]
    return {
        "summary": "; ".join(summary) if summary else None,
        "slowest": sorted(slowest, key=lambda line: -float(line.split("s ", 1)[0])),
    }


def fresh_clone(where: Path, name: str) -> Path:
    path = where / name
    subprocess.run(["git", "clone", "-q", str(ROOT), str(path)], check=True)
    return path


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    # the clone must set up its own .venv: drop this checkout's from PATH
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if ".venv" not in p
    )
    env["DVC_NO_ANALYTICS"] = "1"
    return env


def time_fast(clone: Path, logs: Path, env: dict) -> dict:
    """`make test-fast` timed in ``clone`` (its .venv already set up), with its
    test summary."""
    fast = timed(["make", "test-fast"], clone, logs / "make_test_fast.log", env)
    fast.update(test_summary((logs / "make_test_fast.log").read_text()))
    print(f"make test-fast: {fast['seconds']:.0f} s, {fast['summary']}")
    return fast


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-test", action="store_true", help="time make run only")
    p.add_argument("--skip-run", action="store_true", help="time make test only")
    p.add_argument(
        "--only-fast",
        action="store_true",
        help="time make test-fast alone (after an untimed `make setup`)",
    )
    p.add_argument(
        "--every-stage",
        action="store_true",
        help="delete the clone's dvc.lock first, so every stage runs (as on a machine "
        "whose trained models differ from the committed ones); recorded as "
        "make_run_every_stage, the other entries kept",
    )
    p.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/front_door.json"
    )
    p.add_argument("--keep", action="store_true", help="keep the clones (path printed)")
    p.add_argument(
        "--merge",
        action="store_true",
        help="keep the other command's result from an earlier --out file",
    )
    args = p.parse_args()
    head = head_commit(ROOT)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    result: dict = {
        "machine": machine(),
        "commit": head,
        "note": "fresh `git clone` of the commit (uncommitted changes are not in it)"
        + ("; the checkout had uncommitted changes" if dirty else ""),
    }
    if args.merge and args.out.exists():
        earlier = json.loads(args.out.read_text())
        for key in (
            "make_run",
            "repro_again",
            "make_test",
            "make_test_fast",
            "make_run_every_stage",
        ):
            if key in earlier:
                # an entry merged before keeps the commit and machine it was
                # measured at
                commit = earlier[key].get("commit") or earlier.get("commit")
                host = earlier[key].get("machine") or earlier.get("machine")
                result[key] = {**earlier[key], "commit": commit, "machine": host}
    tmp = Path(tempfile.mkdtemp(prefix="firth-front-door-"))
    logs = args.out.parent / "front_door_logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = environment()
    try:
        if not args.skip_run:
            clone = fresh_clone(tmp, "run")
            if args.every_stage:
                (clone / "dvc.lock").unlink()
                run = timed(["make", "run"], clone, logs / "make_run_every.log", env)
                result["make_run_every_stage"] = {**run, "commit": head}
                print(f"make run, every stage: {run['seconds']:.0f} s")
            else:
                run = timed(["make", "run"], clone, logs / "make_run.log", env)
                result["make_run"] = run
                result.pop("repro_again", None)
            print(f"make run: {run['seconds']:.0f} s, exit {run['exit_code']}")
            if run["exit_code"] == 0 and not args.every_stage:
                again = timed(
                    [str(clone / ".venv/bin/dvc"), "repro"],
                    clone,
                    logs / "repro_again.log",
                    env,
                )
                again["noop"] = not again["stages"] and again["exit_code"] == 0
                result["repro_again"] = again
                print(
                    f"dvc repro again: {again['seconds']:.1f} s, no-op {again['noop']}"
                )
        if args.only_fast:
            clone = fresh_clone(tmp, "test")
            subprocess.run(["make", "setup"], cwd=clone, env=env, check=True)
            test_env = dict(env, PYTEST_ADDOPTS="--durations=15")
            result["make_test_fast"] = time_fast(clone, logs, test_env)
        elif not args.skip_test:
            clone = fresh_clone(tmp, "test")
            test_env = dict(env, PYTEST_ADDOPTS="--durations=15")
            test = timed(["make", "test"], clone, logs / "make_test.log", test_env)
            text = (logs / "make_test.log").read_text()
            test.update(test_summary(text))
            result["make_test"] = test
            print(f"make test: {test['seconds']:.0f} s, {test['summary']}")
            # the editing loop, in the same clone (its .venv already set up)
            result["make_test_fast"] = time_fast(clone, logs, test_env)
    finally:
        if args.keep:
            print(f"clones kept in {tmp}")
        else:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    write_result(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
