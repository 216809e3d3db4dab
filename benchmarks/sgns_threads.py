"""Firth's SGNS against gensim's skip-gram in words/s (benchmarks/peers.py), and
the fused CPU step against the sparse one it replaced: each trained on the
default's corpus at 1 and at 2 threads (one epoch, the default's settings, each
run in a fresh process), so a ratio splits into single-thread speed and scaling
over threads. Then where each Firth kernel spends its time: the sparse step under
torch.profiler (busiest operators by self CPU time), the fused step by wall time
of its compiled kernels.

    FIRTH_PROJECT=/path/to/trained/clone python benchmarks/sgns_threads.py

Writes benchmarks/results/sgns_threads.json."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from common import head_commit, in_fresh_process, machine, speed_probe, write_result

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))


TOOLS = ("firth-sgns", "firth-sgns-sparse", "gensim-sg-ns")
KERNEL = {"firth-sgns": "fused", "firth-sgns-sparse": "sparse"}


def _one(tool: str, threads: int, epochs: int, profile: bool, queue) -> None:
    import torch

    from firth.config import load_section
    from firth.embeddings.config import Embeddings
    from firth.embeddings.corpus import load_corpus
    from firth.embeddings.methods import train_gensim, train_method

    torch.set_num_threads(threads)
    cfg = load_section("embeddings", PROJECT / "params.yaml", schema=Embeddings)
    common = cfg.common.model_copy(
        update={"threads": threads, "device": "cpu", "epochs": epochs}
    )
    sgns = cfg.sgns.model_copy(update={"kernel": KERNEL.get(tool, "auto")})
    cfg = cfg.model_copy(update={"common": common, "sgns": sgns})
    data, sentences = load_corpus(
        PROJECT / "data/subsampled/text/train.txt",
        min_count=common.min_count,
        max_sentence_len=common.max_sentence_len,
    )
    row: dict = {"tool": tool, "threads": threads, "epochs": epochs}
    if tool == "gensim-sg-ns":
        out = train_gensim(data, sentences, cfg, seed=13)
    elif profile and tool == "firth-sgns":
        out, row["kernel_seconds"] = _timed_fused(data, sentences, cfg)
    elif profile:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            t0 = time.perf_counter()
            out = train_method("sgns", data, sentences, cfg, seed=13, progress=False)
            wall = time.perf_counter() - t0
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:12]
        row["profiled_wall_seconds"] = round(wall, 2)
        row["top_operators"] = [
            {
                "op": e.key,
                "calls": e.count,
                "self_cpu_seconds": round(e.self_cpu_time_total / 1e6, 3),
                "share": round(e.self_cpu_time_total / total, 3),
            }
            for e in top
        ]
    else:
        out = train_method("sgns", data, sentences, cfg, seed=13, progress=False)
    seconds = out.stats["seconds"]
    row["seconds"] = round(seconds, 2)
    if "compile_seconds" in out.stats:
        row["compile_seconds"] = round(out.stats["compile_seconds"], 2)
    row["words_per_second"] = round(data.vocab.total_tokens * epochs / seconds)
    queue.put(row)


def _timed_fused(data, sentences, cfg):
    """Train with the fused kernel, timing each of its compiled functions."""
    import time as _time

    from firth.embeddings import sgns_fused
    from firth.embeddings.methods import train_method

    spent: dict[str, float] = {}
    for name in ("batch_gradients", "damped_update_rows", "damped_update_threads"):
        fn = getattr(sgns_fused, name)

        def timed(*a, _fn=fn, _name=name):
            t0 = _time.perf_counter()
            out = _fn(*a)
            spent[_name] = spent.get(_name, 0.0) + _time.perf_counter() - t0
            return out

        setattr(sgns_fused, name, timed)
    out = train_method("sgns", data, sentences, cfg, seed=13, progress=False)
    return out, {k: round(v, 2) for k, v in spent.items()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--repeat", type=int, default=2, help="timed runs per setting")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/sgns_threads.json"))
    args = p.parse_args(argv)
    rows = []
    probe = speed_probe()
    for threads in args.threads:
        for tool in TOOLS:
            for _ in range(args.repeat):
                row = in_fresh_process(
                    _one, tool, threads, args.epochs, False, label=f"{tool} {threads}"
                )
                print(row, flush=True)
                rows.append(row)
    best = {}
    for r in rows:  # the faster of the repeats: the machine's noise only slows
        key = (r["tool"], r["threads"])
        best[key] = max(best.get(key, 0), r["words_per_second"])
    summary = {f"{tool} {t} threads": wps for (tool, t), wps in sorted(best.items())}
    ratios = {}
    for t in args.threads:
        ratios[f"firth/gensim at {t} threads"] = round(
            best["firth-sgns", t] / best["gensim-sg-ns", t], 3
        )
        ratios[f"fused/sparse at {t} threads"] = round(
            best["firth-sgns", t] / best["firth-sgns-sparse", t], 3
        )
    if len(args.threads) > 1:
        lo, hi = min(args.threads), max(args.threads)
        for tool in TOOLS:
            ratios[f"{tool} scaling {lo} -> {hi} threads"] = round(
                best[tool, hi] / best[tool, lo], 3
            )
    profiles = [
        in_fresh_process(_one, tool, t, args.epochs, True, label=f"profile {tool} {t}")
        for tool in KERNEL
        for t in args.threads
    ]
    write_result(
        args.out,
        {
            "command": " ".join(["python benchmarks/sgns_threads.py", *(argv or [])]),
            "head_commit": head_commit(ROOT),
            "project": str(PROJECT),
            "machine": machine(),
            "speed_probe_before": probe,
            "note": "words/s: the faster of the repeats; one epoch of the "
            "default's corpus, embeddings.common settings, seed 13",
            "rows": rows,
            "best_words_per_second": summary,
            "ratios": ratios,
            "firth_profiles": profiles,
            "speed_probe_after": speed_probe(),
        },
    )
    print(ratios)


if __name__ == "__main__":
    main()
