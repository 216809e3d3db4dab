"""Prepare a parallel corpus: normalise quirks, filter by length, split by id.

Ids of the form ``train-<n>``, ``valid-<n>`` or ``test-<n>`` (how ``hf:`` sources
name their official splits, e.g. Multi30k's test2016) keep that split. Other integer
ids (Bible verse ids) go to a split by ``id % split_mod``; other ids are hashed to an
integer first. A pair's id decides its split, so no id can land in two splits.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from firth.errors import DataError
from firth.prepare.normalize import normalize
from firth.sources.formats import read_pairs

SPLITS = ("train", "valid", "test")


def id_number(pair_id: str) -> int:
    if pair_id.isdigit():
        return int(pair_id)
    return int.from_bytes(hashlib.sha256(pair_id.encode()).digest()[:8], "big")


def official_split(pair_id: str) -> str | None:
    """The split named by an id ``<split>-<n>``, else None."""
    head, sep, tail = pair_id.partition("-")
    return head if sep and head in SPLITS and tail.isdigit() else None


def prepare_parallel(
    pairs_path: Path,
    out_dir: Path,
    *,
    max_len: int,
    max_ratio: float,
    split_mod: int,
    test_residue: int,
    valid_residue: int,
) -> dict:
    """Write ``{train,valid,test}.tsv`` (``id<TAB>source<TAB>target``); return stats."""
    if not pairs_path.exists():
        raise DataError(f"{pairs_path}: not found; is the source a parallel corpus?")
    seen: set[str] = set()
    dropped = Counter()
    kept = Counter()
    lengths = {s: [0, 0] for s in SPLITS}
    files = {s: open(out_dir / f"{s}.tsv", "w", encoding="utf-8") for s in SPLITS}
    try:
        for pid, src, tgt in read_pairs(pairs_path):
            if pid in seen:
                raise DataError(f"{pairs_path}: id {pid!r} occurs twice")
            seen.add(pid)
            src, tgt = normalize(src), normalize(tgt)
            ls, lt = len(src.split()), len(tgt.split())
            if not ls or not lt:
                dropped["empty"] += 1
                continue
            if max_len and (ls > max_len or lt > max_len):
                dropped["too_long"] += 1
                continue
            if max_ratio and max(ls, lt) / min(ls, lt) > max_ratio:
                dropped["length_ratio"] += 1
                continue
            split = official_split(pid)
            if split is None:
                r = id_number(pid) % split_mod
                split = (
                    "test"
                    if r == test_residue
                    else "valid"
                    if r == valid_residue
                    else "train"
                )
            files[split].write(f"{pid}\t{src}\t{tgt}\n")
            kept[split] += 1
            lengths[split][0] += ls
            lengths[split][1] += lt
    finally:
        for f in files.values():
            f.close()
    for split in SPLITS:
        if kept[split] == 0:
            raise DataError(
                f"{pairs_path}: empty corpus, the {split} split got no pairs"
            )
    return {
        "splits": {
            s: {
                "pairs": kept[s],
                "mean_source_words": lengths[s][0] / kept[s],
                "mean_target_words": lengths[s][1] / kept[s],
            }
            for s in SPLITS
        },
        "dropped": {k: dropped[k] for k in ("empty", "too_long", "length_ratio")},
        "input_pairs": len(seen),
    }
