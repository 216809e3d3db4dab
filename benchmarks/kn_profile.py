"""Where Firth's Kneser-Ney spends its time, the two places peers.py finds it
behind KenLM (docs/measured.md, "Kneser-Ney against KenLM"): building the model
(against lmplz) and scoring the test split (against KenLM's query). cProfile over
``kneser_ney.build`` and ``lines.kn_by_line`` on the project's LM text, the same
vocabulary and order as peers.py's ngram task; the functions with the most
cumulative and own time of each, and the share of the phase they take.

    python benchmarks/kn_profile.py            # benchmarks/results/kn_profile.json
    FIRTH_PROJECT=/path/to/trained/clone python benchmarks/kn_profile.py
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

from common import head_commit, machine, speed_probe, write_result

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))


def _where(profile: cProfile.Profile, wall: float, top: int) -> dict:
    """The ``top`` functions by own time and by cumulative time, each with its
    seconds and share of the phase's wall time."""
    stats = pstats.Stats(profile)
    rows = []
    for (file, line, name), (_, calls, own, cum, _) in stats.stats.items():
        where = Path(file)
        short = (
            f"{where.relative_to(ROOT)}:{line}"
            if where.is_relative_to(ROOT)
            else f"{'/'.join(where.parts[-2:])}:{line}"
        )
        rows.append(
            {
                "function": f"{name} ({short})",
                "calls": calls,
                "own_seconds": round(own, 3),
                "cumulative_seconds": round(cum, 3),
                "own_share": round(own / wall, 4),
                "cumulative_share": round(cum / wall, 4),
            }
        )
    return {
        "wall_seconds": round(wall, 3),
        "by_own_time": sorted(rows, key=lambda r: -r["own_seconds"])[:top],
        "by_cumulative_time": sorted(rows, key=lambda r: -r["cumulative_seconds"])[
            :top
        ],
    }


def main(argv=None) -> None:
    from firth.config import load_sections
    from firth.lm import kneser_ney
    from firth.lm.config import Lm
    from firth.lm.data import build_vocabulary, read_lines
    from firth.lm.lines import kn_by_line

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/kn_profile.json"))
    args = p.parse_args(argv)
    cfg, _ = load_sections("lm", PROJECT / "params.yaml", schema=Lm)
    text = PROJECT / "data/subsampled/text"
    train_lines, test_lines = (
        read_lines(text / "train.txt"),
        read_lines(text / "test.txt"),
    )
    vocab = build_vocabulary(train_lines, unit="word", min_count=cfg.common.min_count)

    def words(lines):
        return [[vocab.tokens[i] for i in vocab.encode_line(x)] for x in lines]

    train, test = words(train_lines), words(test_lines)
    result = {
        "command": " ".join(
            ["python benchmarks/kn_profile.py", *(argv or sys.argv[1:])]
        ),
        "head_commit": head_commit(ROOT),
        "project": str(PROJECT),
        "machine": machine(),
        "speed_probe_before": speed_probe(),
        "order": cfg.kn.order,
        "train_tokens": sum(len(s) for s in train),
        "phases": {},
    }
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    lm = kneser_ney.build(train, order=cfg.kn.order)
    profile.disable()
    result["phases"]["build"] = _where(profile, time.perf_counter() - t0, args.top)
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    _, tokens = kn_by_line(lm, test)
    profile.disable()
    wall = time.perf_counter() - t0
    result["phases"]["score"] = _where(profile, wall, args.top)
    result["phases"]["score"]["tokens"] = int(tokens.sum())
    result["phases"]["score"]["tokens_per_second"] = round(int(tokens.sum()) / wall)
    result["speed_probe_after"] = speed_probe()
    write_result(args.out, result)
    for phase, r in result["phases"].items():
        print(f"{phase}: {r['wall_seconds']} s (under cProfile)")
        for row in r["by_cumulative_time"][:8]:
            print(f"  {row['cumulative_share']:6.1%}  {row['function']}")


if __name__ == "__main__":
    main()
