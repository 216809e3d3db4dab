"""What the benchmark scripts share: each measurement in a fresh process (so its
peak memory and its warm caches are its own), a description of the machine, and the
result written atomically as JSON."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import queue as queue_module
import statistics
import subprocess
import time
from pathlib import Path


def in_fresh_process(target, *args, label: str) -> dict:
    """Run ``target(*args, queue)`` in a spawned process and return the row it puts
    on the queue; a process that dies without one stops the benchmark, named."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    while True:
        try:
            row = queue.get(timeout=5)
            break
        except queue_module.Empty:
            if not proc.is_alive():
                raise SystemExit(
                    f"{label}: the benchmark process ended without a result "
                    f"(exit code {proc.exitcode})"
                ) from None
    proc.join()
    return row


def mean_sd(rows: list[dict], group: str, keys) -> dict[str, dict]:
    """Per value of ``rows``' field ``group`` (in first-seen order): the number of
    runs, and the mean and sample standard deviation (0 for one run) of each key."""
    out: dict[str, dict] = {}
    for name in dict.fromkeys(r[group] for r in rows):
        mine = [r for r in rows if r[group] == name]
        entry: dict = {"runs": len(mine)}
        for key in keys:
            vals = [r[key] for r in mine]
            entry[key] = round(statistics.fmean(vals), 5)
            entry[f"{key}_sd"] = (
                round(statistics.stdev(vals), 5) if len(vals) > 1 else 0.0
            )
        out[name] = entry
    return out


def repeat_seconds(fn, repeat: int) -> list[float]:
    """The wall seconds of each of ``repeat`` calls of ``fn()``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def stat_ticks(line: str) -> tuple[int, int]:
    """(all, stolen) CPU ticks from /proc/stat's "cpu" line."""
    fields = [int(x) for x in line.split()[1:9]]
    return sum(fields), fields[7]


def cpu_ticks() -> tuple[int, int]:
    """All CPU time and the part stolen by the hypervisor, in ticks since boot
    (/proc/stat; (0, 0) where there is none)."""
    try:
        return stat_ticks(Path("/proc/stat").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return 0, 0


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The share of CPU time the hypervisor took between two readings: a slow,
    shared virtual machine shows here, so the timings can be judged."""
    total = after[0] - before[0]
    return round((after[1] - before[1]) / total, 3) if total > 0 else None


def speed_probe(repeat: int = 3) -> dict:
    """Seconds of two fixed single-threaded workloads, best of ``repeat``: a pure
    Python loop (what starting a process, DVC and the stage scripts mostly do) and
    a float32 matrix product (what training does). This machine is a shared
    virtual one whose speed changes 2x between hours with little steal showing, so
    a timing is only comparable with the probe taken beside it."""
    import torch

    def loop():
        total = 0
        for i in range(2_000_000):
            total += i * i
        return total

    a = torch.randn(384, 384, generator=torch.Generator().manual_seed(0))

    def matmul():
        b = a
        for _ in range(40):
            b = torch.tanh(a @ b)
        return b

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {
            "python_loop_s": round(min(repeat_seconds(loop, repeat)), 3),
            "matmul_s": round(min(repeat_seconds(matmul, repeat)), 3),
        }
    finally:
        torch.set_num_threads(threads)


def head_commit(repo: Path) -> str:
    """The commit checked out in ``repo`` ("" outside a git repository)."""
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()


def machine() -> dict:
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        **cpu_model(),
    }


def cpu_model() -> dict:
    """The CPU's model name and the matrix units its speed depends on (Linux's
    /proc/cpuinfo; empty elsewhere): two 2-core machines can differ twofold in
    matrix products (docs/measured.md), so a timing names its CPU."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in text.splitlines())
        if value
    )
    flags = set(fields.get("flags", "").split())
    units = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return {"cpu": fields.get("model name", "unknown"), "cpu_units": units}


def write_result(path: str | Path, result: dict) -> None:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)
