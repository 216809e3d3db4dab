"""Deterministic subsamples of the prepared corpora to a budget.

Units (documents, pairs, sentences) are visited in an order fixed by the seed and
taken until the budget is reached; the kept units are written in their original
order. A budget of 0 keeps everything, so a full run sets every budget to 0.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from firth.errors import DataError


def choose(sizes: list[int], budget: int, *, seed: int) -> list[int]:
    """Indices of units to keep, in original order: a seeded random order is walked
    until the sizes add up to ``budget`` (0 = keep all)."""
    if budget == 0 or sum(sizes) <= budget:
        return list(range(len(sizes)))
    order = list(range(len(sizes)))
    random.Random(seed).shuffle(order)
    kept, total = [], 0
    for i in order:
        if total >= budget:
            break
        kept.append(i)
        total += sizes[i]
    return sorted(kept)


def _units(path: Path, *, blank_separated: bool) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if blank_separated:
        return [u + "\n\n" for u in text.split("\n\n") if u.strip()]
    return [line + "\n" for line in text.splitlines() if line.strip()]


def subsample_file(
    src: Path,
    dst: Path,
    budget: int,
    *,
    seed: int,
    size: Callable[[str], int],
    blank_separated: bool = False,
) -> dict:
    """Subsample the units of ``src`` into ``dst``; return before/after counts."""
    if not src.exists():
        raise DataError(f"{src}: not found")
    units = _units(src, blank_separated=blank_separated)
    if not units:
        raise DataError(f"{src}: empty corpus, nothing to subsample")
    sizes = [size(u) for u in units]
    kept = choose(sizes, budget, seed=seed)
    dst.write_text("".join(units[i] for i in kept), encoding="utf-8")
    return {
        "units_in": len(units),
        "units_out": len(kept),
        "size_in": sum(sizes),
        "size_out": sum(sizes[i] for i in kept),
        "budget": budget,
    }


def words(unit: str) -> int:
    return len(unit.split())


def one(unit: str) -> int:
    return 1
