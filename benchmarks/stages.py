"""Time every stage of the DAG and record its peak memory, to JSON.

Each stage is forced to rerun (``dvc repro --force --single-item``) in DVC's order,
inside a fresh child process whose RUSAGE_CHILDREN max RSS is the stage's peak
resident memory (dvc itself and the stage command it spawns). Run after a first
``make run`` so that downloads are cached ("after the first download").

    python benchmarks/stages.py [--out benchmarks/results/stages.json]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from common import machine, write_result

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
    " stderr=subprocess.PIPE).returncode\n"
    "wall = time.perf_counter() - t\n"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(rc, wall, rss)\n"
)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{e.get('PATH', '')}"
    return e


def stage_order() -> list[str]:
    out = subprocess.run(
        ["dvc", "repro", "--dry", "--force"],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return re.findall(r"Running stage '([^']+)'", out)


def measure(stage: str) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            "dvc",
            "repro",
            "--force",
            "--single-item",
            stage,
        ],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        check=True,
    )
    rc, wall, rss = proc.stdout.split()
    if rc != "0":
        raise SystemExit(f"stage {stage} failed (exit {rc})")
    return {
        "stage": stage,
        "seconds": round(float(wall), 2),
        "peak_rss_mb": round(int(rss) / 1024, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "stages.json"
    )
    args = p.parse_args()
    rows = []
    for stage in stage_order():
        row = measure(stage)
        print(
            f"{row['stage']:<36} {row['seconds']:>7.2f} s "
            f"{row['peak_rss_mb']:>8.1f} MB",
            flush=True,
        )
        rows.append(row)
    total = round(sum(r["seconds"] for r in rows), 2)
    result = {
        "benchmark": "stages",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "total_seconds": total,
        "max_peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
        "stages": rows,
        "note": "each stage forced with dvc repro --force --single-item; includes "
        "dvc's own start-up (about 1 s per stage); downloads already cached",
    }
    write_result(args.out, result)
    print(f"total {total} s -> {args.out}")


if __name__ == "__main__":
    main()
