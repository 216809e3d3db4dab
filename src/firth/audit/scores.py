"""Scores on all / dirty / clean evaluation examples, in the format of the GPT-3
paper's contamination table, and the per-example flags file the evaluation stages
read."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

from firth.errors import DataError

FLAG_COLUMNS = ("ngram", "exact", "near", "dirty")


def read_flags(path: Path, ids: Sequence[str]) -> list[bool]:
    """The ``dirty`` flag of every id in ``ids`` from an audit's flags.tsv."""
    if not path.exists():
        raise DataError(f"{path}: not found (run the audit stage first)")
    with open(path, encoding="utf-8", newline="") as f:
        rows = {r["id"]: r["dirty"] == "1" for r in csv.DictReader(f, delimiter="\t")}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise DataError(
            f"{path}: no flags for {len(missing)} evaluation ids (first: "
            f"{missing[0]!r}); the audit is older than the evaluation set, rerun it"
        )
    return [rows[i] for i in ids]


def split_scores(score: Callable[[list[int]], float], dirty: Sequence[bool]) -> dict:
    """``score(indices)`` on all examples, the dirty ones and the clean ones, their
    counts, the clean share, and the relative difference (clean - all) / all."""
    idx = list(range(len(dirty)))
    d = [i for i in idx if dirty[i]]
    c = [i for i in idx if not dirty[i]]
    s_all = score(idx)
    s_dirty = score(d) if d else None
    s_clean = score(c) if c else None
    return {
        "all": s_all,
        "dirty": s_dirty,
        "clean": s_clean,
        "n_all": len(idx),
        "n_dirty": len(d),
        "n_clean": len(c),
        "clean_share": len(c) / len(idx) if idx else None,
        "clean_vs_all": relative(s_clean, s_all),
    }


def relative(clean: float | None, whole: float | None) -> float | None:
    """(clean - all) / all; None without a clean score or when all is 0."""
    return (clean - whole) / whole if clean is not None and whole else None


def seed_mean(splits: list[dict]) -> dict:
    """The mean over seeds of split_scores results on the same flags."""
    out = dict(splits[0])
    for k in ("all", "dirty", "clean"):
        vals = [s[k] for s in splits if s[k] is not None]
        out[k] = sum(vals) / len(vals) if vals else None
    out["clean_vs_all"] = relative(out["clean"], out["all"])
    return out
