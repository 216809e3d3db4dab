"""Benchmark the language models: Kneser-Ney build time and peak memory, and
evaluation speed, on the default text split (neural training throughput joins
when the neural LMs land, issue 4).

    python benchmarks/lm.py                       # orders 3 and 5
    python benchmarks/lm.py --orders 5

Each order runs in a fresh process, so its peak RSS is its own. Writes
benchmarks/results/lm.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = [line.rstrip("\n") for line in open(path, encoding="utf-8")]
    lines = [line for line in lines if line.strip()]
    return lines, [line.split() for line in lines]


def _kn(order: int, train: str, test: str, queue) -> None:
    from firth.lm.kneser_ney import build
    from firth.lm.metrics import bits_per_char, characters

    _, sents = _read(Path(train))
    test_lines, test_sents = _read(Path(test))
    tokens = sum(len(s) for s in sents)
    t0 = time.perf_counter()
    lm = build(sents, order=order)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = lm.score(test_sents)
    score_s = time.perf_counter() - t0
    queue.put(
        {
            "model": f"kn{order}",
            "train_tokens": tokens,
            "build_seconds": round(build_s, 2),
            "build_tokens_per_second": round(tokens / build_s),
            "ngrams_per_order": [len(g) for g in lm.grams],
            "discounts": [[round(d, 4) for d in ds] for ds in lm.discounts],
            "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            ),
            "eval_seconds": round(score_s, 2),
            "eval_tokens_per_second": round(res["tokens"] / score_s),
            "test_tokens": res["tokens"],
            "test_oov": res["oov"],
            "test_perplexity": round(res["perplexity"], 3),
            "test_bits_per_char": round(
                bits_per_char(res["nll_nats"], characters(test_lines)), 5
            ),
        }
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", default=str(ROOT / "data/subsampled/text/train.txt"))
    p.add_argument("--test", default=str(ROOT / "data/subsampled/text/test.txt"))
    p.add_argument("--orders", nargs="+", type=int, default=[3, 5])
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/lm.json"))
    args = p.parse_args(argv)
    ctx = mp.get_context("spawn")
    rows = []
    for order in args.orders:
        queue = ctx.Queue()
        proc = ctx.Process(target=_kn, args=(order, args.train, args.test, queue))
        proc.start()
        rows.append(queue.get())
        proc.join()
        print(json.dumps(rows[-1]), flush=True)
    result = {
        "command": " ".join(["python benchmarks/lm.py", *(argv or sys.argv[1:])]),
        "machine": {"platform": platform.platform(), "cpus": mp.cpu_count()},
        "rows": rows,
    }
    out = Path(args.out)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
