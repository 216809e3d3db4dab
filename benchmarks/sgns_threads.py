"""Why Firth's SGNS trails gensim's skip-gram in words/s (benchmarks/peers.py):
both trained on the default's corpus at 1 and at 2 threads (one epoch, the
default's settings, each run in a fresh process), so the ratio is split into
single-thread speed and scaling over threads; and Firth's run under
torch.profiler at each thread count, its busiest operators by self CPU time.

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
    cfg = cfg.model_copy(update={"common": common})
    data, sentences = load_corpus(
        PROJECT / "data/subsampled/text/train.txt",
        min_count=common.min_count,
        max_sentence_len=common.max_sentence_len,
    )
    row: dict = {"tool": tool, "threads": threads, "epochs": epochs}
    if tool == "gensim-sg-ns":
        out = train_gensim(data, sentences, cfg, seed=13)
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
    row["words_per_second"] = round(data.vocab.total_tokens * epochs / seconds)
    queue.put(row)


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
        for tool in ("firth-sgns", "gensim-sg-ns"):
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
    if len(args.threads) > 1:
        lo, hi = min(args.threads), max(args.threads)
        for tool in ("firth-sgns", "gensim-sg-ns"):
            ratios[f"{tool} scaling {lo} -> {hi} threads"] = round(
                best[tool, hi] / best[tool, lo], 3
            )
    profiles = [
        in_fresh_process(_one, "firth-sgns", t, args.epochs, True, label=f"profile {t}")
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
