"""Benchmark the contamination audit's streamed scan: training words per second and
peak memory while the n-gram overlap test (and, optionally, MinHash near duplicates)
reads a training corpus against an evaluation set, with the memory the evaluation
side takes on its own, and the time a corpus of 10^9 words would take at that rate.

    python benchmarks/audit.py      # the WNUT-16 test tweets against the text corpus

Defaults: evaluation set data/subsampled/tagged/wnut16/test.conll, corpus
data/subsampled/text/train.txt (read ``--passes`` times, as a corpus that many
times larger), the settings of params.yaml's audit section. Each measurement runs
in a fresh process. Writes benchmarks/results/audit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

from common import in_fresh_process, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
# the data and params a benchmark reads: a profile project (FIRTH_PROJECT, e.g.
# profiles/full, as the make targets set it) or the root's default
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _scan(spec: dict, near: bool, queue) -> None:
    from firth.audit.config import AuditParams
    from firth.audit.overlap import OverlapAudit, read_lines
    from firth.config import load_section
    from firth.sources.formats import read_conll

    cfg = load_section("audit", spec["params"], schema=AuditParams)
    test = [" ".join(t) for t, _ in read_conll(Path(spec["test"]))]
    base = _rss_mb()
    a = OverlapAudit.from_settings(test, cfg, near=near)
    after_index = _rss_mb()
    t0 = time.perf_counter()
    for _ in range(spec["passes"]):
        a.scan(read_lines([spec["corpus"]]))
    seconds = time.perf_counter() - t0
    r = a.result()
    queue.put(
        {
            "near_duplicates": near,
            "n": a.n,
            "evaluation_examples": len(test),
            "corpus_passes": spec["passes"],
            "training_lines": r.lines_read,
            "training_words": r.words_read,
            "seconds": round(seconds, 2),
            "words_per_second": round(r.words_read / seconds),
            "hours_per_billion_words": round(1e9 / (r.words_read / seconds) / 3600, 2),
            "dirty": int(r.dirty.sum()),
            "rss_mb_before_index": base,
            "rss_mb_after_index": after_index,
            "peak_rss_mb": _rss_mb(),
        }
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", default=str(PROJECT / "params.yaml"))
    p.add_argument(
        "--test", default=str(PROJECT / "data/subsampled/tagged/wnut16/test.conll")
    )
    p.add_argument("--corpus", default=str(PROJECT / "data/subsampled/text/train.txt"))
    p.add_argument("--passes", type=int, default=3, help="reads of the corpus")
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/audit.json"))
    args = p.parse_args(argv)
    spec = {k: getattr(args, k) for k in ("params", "test", "corpus", "passes")}
    rows = []
    for near in (False, True):
        rows.append(in_fresh_process(_scan, spec, near, label=f"near={near}"))
        print(json.dumps(rows[-1]), flush=True)
    write_result(
        args.out,
        {
            "command": " ".join(
                ["python benchmarks/audit.py", *(argv or sys.argv[1:])]
            ),
            "machine": machine(),
            "test": str(Path(args.test).resolve().relative_to(ROOT)),
            "corpus": str(Path(args.corpus).resolve().relative_to(ROOT)),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
