"""Whether two report trees hold the same results, timings aside: every JSON,
CSV and gzipped per-item file under the first (a run's reports/) compared with
the same path under the second, ignoring keys that are times, speeds, memory or
revisions. For a refactor that must not change what the DAG computes (the
trainers are bit-identical at a seed on one machine).

    python benchmarks/same_metrics.py /tmp/clone/reports reports
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

SKIP = ("second", "rss", "time", "minutes", "revision", "retrieved", "speed", "per_s")


def strip(x):
    if isinstance(x, dict):
        return {
            k: strip(v) for k, v in x.items() if not any(s in k.lower() for s in SKIP)
        }
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def same(f: Path, g: Path) -> bool | None:
    if f.suffix == ".json":
        return strip(json.loads(f.read_text())) == strip(json.loads(g.read_text()))
    if f.name.endswith(".gz"):
        return gzip.open(f).read() == gzip.open(g).read()
    if f.suffix == ".csv":
        with f.open() as a, g.open() as b:
            return strip(list(csv.DictReader(a))) == strip(list(csv.DictReader(b)))
    return None  # figures and pages are not results


def main() -> None:
    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    equal, differ = 0, []
    for f in sorted(p for p in a.rglob("*") if p.is_file()):
        g = b / f.relative_to(a)
        verdict = same(f, g) if g.exists() else False
        if verdict is None:
            continue
        if verdict:
            equal += 1
        else:
            differ.append(str(f.relative_to(a)))
    print("\n".join(f"differs: {d}" for d in differ))
    print(f"{equal} files equal, {len(differ)} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
