"""The DAG in parallel, measured and simulated.

measure (about 55 minutes on 2 cores, 80 with --control; nothing else should run
meanwhile): fresh clones of this commit, each set up with `make setup` (not timed),
then
  - serial:          `dvc repro`, the params as committed (what `make run` runs:
                     each training stage on 2 threads);
  - jobs-2-1thread:  `python flows/pipeline.py --jobs 2` with every `threads` key
                     of params.yaml set to 1, so two stages share the two cores;
  - serial-1thread:  (--control) `dvc repro` with the same 1-thread params, which
                     separates the effect of the threads from that of the jobs;
each timed per stage. The parallel run must end with `dvc status` clean; with
--control its outputs are compared with serial-1thread's (the same hashes, apart
from the files that hold wall-clock readings: retrieval times, seconds, tokens/s).

simulate: for each profile, the makespan of its DAG on 1, 2, 4, 8 and 16 workers
(list scheduling, longest remaining chain first: firth.dag.makespan), its critical
path and the ideal bound max(critical path, work / workers), from measured
per-stage seconds: the default profile's from the measure run's serial clone or
benchmarks/results/front_door.json, whichever timed more stages, the full profile's from
benchmarks/results/full_stage_seconds.json (written by `make run-full`) or, for a
training stage it lacks, the training seconds of the stage's train.json. Stages
with no measurement count 0 s and are listed.

Both write benchmarks/results/dag.json (each keeps the other's part):

    python benchmarks/dag.py measure [--control] [--keep DIR]
    python benchmarks/dag.py simulate

--keep DIR leaves the clones in DIR, trained (the serial one is the default profile
after `make run`: benchmarks/query.py can then run there with FIRTH_PROJECT).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    cpu_ticks,
    head_commit,
    machine,
    stat_ticks,
    steal_share,
    write_result,
)
from front_door import (  # noqa: E402
    STAGE,
    environment,
    fresh_clone,
    stage_spans,
    timed,
)

from firth import dag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WORKERS = (1, 2, 4, 8, 16)
# keys of report files that hold wall-clock readings, not results
VOLATILE = ("second", "retrieved", "rss", "elapsed")


def one_thread(params: Path) -> None:
    """Set every ``threads`` key of ``params`` to 1, keeping its comments."""
    lines = params.read_text().splitlines(keepends=True)
    out = []
    for line in lines:
        key, sep, rest = line.partition(":")
        if sep and key.strip() == "threads":
            value, hash_, comment = rest.partition("#")
            line = f"{key}: 1{' ' * max(1, len(value) - 2)}{hash_}{comment}"
            if not line.endswith("\n"):
                line += "\n"
        out.append(line)
    params.write_text("".join(out))


def _run(cmd: list[str], cwd: Path, env: dict) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} in {cwd} failed:\n{proc.stderr[-2000:]}")


def _stable_outs(repo: Path) -> dict[str, str]:
    """Each output's hash from dvc.lock, except report files with clock readings
    (those are compared with the readings left out)."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    out = {}
    for entry in lock.values():
        for o in entry.get("outs", []):
            path = o["path"]
            if path.startswith(("reports/", "data/raw/")):
                out[path] = _without_clock(repo / path)
            else:
                out[path] = o["md5"]
    return out


def _without_clock(path: Path) -> str:
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    parts = []
    for f in files:
        if f.is_dir():
            continue
        if f.suffix == ".json":
            parts.append(json.dumps(_drop(json.loads(f.read_text())), sort_keys=True))
        elif f.suffix == ".csv":
            rows = [line.split(",") for line in f.read_text().splitlines()]
            keep = [i for i, h in enumerate(rows[0] if rows else []) if not _clock(h)]
            parts.append("\n".join(",".join(r[i] for i in keep) for r in rows))
        elif f.suffix in (".png", ".svg", ".html", ".md"):
            continue  # the report renders the readings too
        else:
            parts.append(f.read_bytes().hex())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _clock(key: str) -> bool:
    return any(v in key.lower() for v in VOLATILE)


def _drop(tree):
    if isinstance(tree, dict):
        return {k: _drop(v) for k, v in tree.items() if not _clock(k)}
    if isinstance(tree, list):
        return [_drop(v) for v in tree]
    return tree


def _flow_stages(clone: Path) -> list[dict]:
    """Each stage's seconds and start from the flow's run.json in ``clone``."""
    record = json.loads((clone / ".dvc/tmp/firth-flow/run.json").read_text())
    return [
        {"stage": s, "seconds": round(t["end"] - t["start"], 2), "start": t["start"]}
        for s, t in record["stages"].items()
    ]


def measure(control: bool, keep: Path | None = None) -> dict:
    env = environment()
    runs: dict = {}
    names = ("serial", "jobs-2-1thread") + (("serial-1thread",) if control else ())
    with tempfile.TemporaryDirectory(prefix="firth-dag-") as tmp:
        where = Path(tmp)
        if keep is not None:  # (the clones stay, trained, for other benchmarks)
            keep.mkdir(parents=True, exist_ok=False)
            where = keep
        clones = {}
        for name in names:
            clone = fresh_clone(where, name)
            _run(["make", "setup"], clone, env)
            if name != "serial":
                one_thread(clone / "params.yaml")
            clones[name] = clone
            venv = env | {"PATH": f"{clone / '.venv' / 'bin'}:{env['PATH']}"}
            if name.startswith("serial"):  # (timed records its steal share)
                log = where / f"{name}.log"
                runs[name] = timed(["dvc", "repro"], clone, log, venv)
                if runs[name]["exit_code"] != 0:
                    raise SystemExit(f"dvc repro failed in {clone}: see {log}")
            else:
                flow = [str(clone / ".venv/bin/python"), "flows/pipeline.py", "-j", "2"]
                start, ticks = time.monotonic(), cpu_ticks()
                _run(flow, clone, venv)
                runs[name] = {
                    "command": " ".join(flow[1:]),
                    "seconds": round(time.monotonic() - start, 1),
                    "stages": _flow_stages(clone),
                    "cpu_steal_share": steal_share(ticks, cpu_ticks()),
                }
                status = subprocess.run(
                    ["dvc", "status"],
                    cwd=clone,
                    env=venv,
                    capture_output=True,
                    text=True,
                ).stdout
                runs[name]["dvc_status_clean"] = "up to date" in status
        parallel = runs["jobs-2-1thread"]["seconds"]
        result: dict = {"runs": runs}
        serial = runs["serial"]["seconds"]
        result["speedup_jobs2_vs_serial"] = round(serial / parallel, 3)
        if control:
            a = _stable_outs(clones["serial-1thread"])
            b = _stable_outs(clones["jobs-2-1thread"])
            differ = sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p))
            control_s = runs["serial-1thread"]["seconds"]
            result["speedup_jobs2_vs_serial_1thread"] = round(control_s / parallel, 3)
            result["outputs_differing_from_serial_1thread"] = differ
    return result


def serial_from_log(log: Path) -> dict:
    """A serial run's record from the log ``timed`` wrote (each line prefixed with
    the seconds since the start): each stage runs to the next one's start, the
    total to the last line."""
    rows = []
    for line in log.read_text().splitlines():
        head, _, text = line.strip().partition(" ")
        try:
            rows.append((float(head), text))
        except ValueError:
            continue
    starts = [(m.group(1), t) for t, text in rows if (m := STAGE.search(text))]
    total = rows[-1][0]
    return {
        "command": "dvc repro",
        "exit_code": 0 if "Use `dvc push`" in rows[-1][1] else None,
        "seconds": round(total, 1),
        "stages": stage_spans(starts, total),
        "cpu_steal_share": None,
    }


def collect(keep: Path) -> dict:
    """The measured part from what ``measure --keep DIR`` and the flow left in
    DIR, for a measure that stopped after its serial run: DIR/serial.log, and the
    flow run by hand in DIR/jobs-2-1thread with ``python flows/pipeline.py -j 2``,
    its wall time in flow.start/flow.end (epoch seconds), /proc/stat's first line
    before and after in flow.stat, its exit code in flow.rc and `dvc status` after
    it in flow.status."""
    serial = serial_from_log(keep / "serial.log")
    ticks = [stat_ticks(line) for line in (keep / "flow.stat").read_text().splitlines()]
    seconds = float((keep / "flow.end").read_text()) - float(
        (keep / "flow.start").read_text()
    )
    flow = {
        "command": "flows/pipeline.py -j 2",
        "exit_code": int((keep / "flow.rc").read_text()),
        "seconds": round(seconds, 1),
        "stages": _flow_stages(keep / "jobs-2-1thread"),
        "dvc_status_clean": "up to date" in (keep / "flow.status").read_text(),
        "cpu_steal_share": steal_share(ticks[0], ticks[1]),
    }
    return {
        "runs": {"serial": serial, "jobs-2-1thread": flow},
        "speedup_jobs2_vs_serial": round(serial["seconds"] / flow["seconds"], 3),
        "collected_from": str(keep),
    }


def simulate(profile: str, repo: Path, seconds: dict[str, float], source: str) -> dict:
    """Makespans of ``repo``'s DAG with ``seconds`` per stage; a stage without a
    measurement counts 0 s and is listed (the makespans are then lower bounds)."""
    graph = dag.load(repo, cpus=1)
    missing = sorted(set(graph.stages) - set(seconds))
    secs = {s: float(seconds.get(s, 0.0)) for s in graph.stages}
    length, path = dag.critical_path(graph, secs)
    total = sum(secs.values())
    return {
        "source": source,
        "stages": len(graph),
        "unmeasured_stages": missing,
        "work_seconds": round(total, 1),
        "critical_path": {"seconds": round(length, 1), "stages": path},
        "workers": {
            str(w): {
                "makespan_seconds": round(dag.makespan(graph, secs, w), 1),
                "ideal_seconds": round(dag.ideal(graph, secs, w), 1),
                "speedup": round(total / dag.makespan(graph, secs, w), 2),
            }
            for w in WORKERS
        },
    }


def full_seconds(repo: Path) -> tuple[dict[str, float], str]:
    """The full profile's seconds per stage: the wall time `make run-full` measured
    (full_stage_seconds.json), else, for a training stage, the training time its
    own train.json records (a lower bound: no start-up or writing)."""
    wall = RESULTS / "full_stage_seconds.json"
    rows = json.loads(wall.read_text())["stages"] if wall.exists() else {}
    seconds = {s: r["seconds"] for s, r in rows.items() if "seconds" in r}
    recorded = 0
    for name, stage in dag.load(repo, cpus=1).stages.items():
        if name in seconds:
            continue
        for out, _ in stage.outs:
            if out.endswith("train.json") and (repo / out).exists():
                record = json.loads((repo / out).read_text())
                inits = record.get("inits")  # a tagger: one model per initialisation
                if isinstance(inits, list) and inits:
                    record = {"seconds": sum(i.get("train_seconds", 0) for i in inits)}
                for key in ("train_seconds", "seconds", "build_seconds"):
                    if isinstance(record.get(key), int | float):
                        seconds[name] = record[key]
                        recorded += 1
                        break
    source = f"benchmarks/results/full_stage_seconds.json (wall, {len(rows)} stages)"
    if recorded:
        source += f"; train.json training seconds for {recorded} more"
    return seconds, source


def default_seconds(result: dict) -> tuple[dict[str, float], str]:
    """The default profile's seconds per stage from whichever record timed more of
    its stages: the front door's `make run` with the clone's lock deleted
    (front_door.json make_run_every_stage: every stage runs), the measure run's
    serial clone (dag.json) or the front door's plain `make run`; the first on a
    tie. A plain fresh clone skips the evaluations whose committed inputs its
    retrained models reproduce bit for bit (listed with the seconds DVC took to
    say so), so its record is the last choice."""
    sources = []
    runs = {}
    front_door = RESULTS / "front_door.json"
    if front_door.exists():
        runs = json.loads(front_door.read_text())
    if runs.get("make_run_every_stage"):
        sources.append(
            (
                runs["make_run_every_stage"]["stages"],
                "benchmarks/results/front_door.json make_run_every_stage",
            )
        )
    measured = result.get("measured", {}).get("runs", {}).get("serial")
    if measured:
        sources.append(
            (measured["stages"], "benchmarks/results/dag.json measured.runs.serial")
        )
    if runs.get("make_run"):
        source = "benchmarks/results/front_door.json make_run"
        sources.append((runs["make_run"]["stages"], source))
    if not sources:
        raise SystemExit("no serial timing: run `dag.py measure` or front_door.py")
    rows, source = max(sources, key=lambda s: len(s[0]))  # the first on a tie
    return {r["stage"]: r["seconds"] for r in rows}, source


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("measure", "collect", "simulate"))
    p.add_argument("--out", type=Path, default=RESULTS / "dag.json")
    p.add_argument("--control", action="store_true", help="also serial, 1 thread")
    p.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="make the clones in DIR (a new folder) and keep them",
    )
    args = p.parse_args()
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    head = head_commit(ROOT)
    result["machine"] = machine()
    if args.what == "measure":
        result["measured"] = measure(args.control, args.keep) | {"commit": head}
    elif args.what == "collect":
        if args.keep is None:
            raise SystemExit("collect reads the folder of measure --keep DIR")
        result["measured"] = collect(args.keep) | {"commit": head}
    else:
        sims = {}
        seconds, source = default_seconds(result)
        sims["default"] = simulate("default", ROOT, seconds, source)
        full = ROOT / "profiles" / "full"
        sims["full"] = simulate("full", full, *full_seconds(full))
        result["simulated"] = sims | {"commit": head}
    write_result(args.out, result)
    print(json.dumps(result.get("simulated", result.get("measured")), indent=1)[:3000])


if __name__ == "__main__":
    main()
