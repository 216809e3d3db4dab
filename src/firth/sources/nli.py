"""NLI examples: label normalisation and the local JSONL readers.

Labels become ``entailment`` | ``neutral`` | ``contradiction``. Accepted: those
names in any case, SNLI's abbreviations, and the integer ids 0 / 1 / 2 of the SNLI,
MultiNLI and GLUE releases (in that order). Examples without a gold label (SNLI's
``-`` or -1, an empty label) are dropped and counted; anything else is an error that
names the file and line.

Local files are JSON lines in the SNLI/MultiNLI release layout (``sentence1``,
``sentence2``, ``gold_label``) or with Firth's names (``premise``, ``hypothesis``,
``label``), optionally with a ``split`` field; a folder holds one file per split whose
name says which (``snli_1.0_train.jsonl``, ``dev.jsonl``, ``test.jsonl``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from firth.errors import DataError

LABELS = ("entailment", "neutral", "contradiction")
_ALIASES = {"entail": "entailment", "contra": "contradiction", "neutr": "neutral"}
NO_GOLD = ("", "-", None, -1)
FIELDS = {
    "premise": ("premise", "sentence1"),
    "hypothesis": ("hypothesis", "sentence2"),
    "label": ("label", "gold_label"),
}
SPLIT_WORDS = {"train": "train", "dev": "valid", "valid": "valid", "test": "test"}


def normalize_label(value, *, where: str) -> str | None:
    """The canonical label, or None for an example without a gold label."""
    if isinstance(value, bool):
        raise DataError(f"{where}: label {value!r} is not an NLI label")
    if value in NO_GOLD:
        return None
    if isinstance(value, int):
        if 0 <= value < len(LABELS):
            return LABELS[value]
        raise DataError(f"{where}: label id {value} outside 0..2")
    if isinstance(value, str):
        low = value.strip().lower()
        if low in LABELS:
            return low
        if low in _ALIASES:
            return _ALIASES[low]
        if low.isdigit():
            return normalize_label(int(low), where=where)
    raise DataError(
        f"{where}: label {value!r} is not one of {', '.join(LABELS)} (or 0/1/2, '-')"
    )


def _field(obj: dict, name: str, where: str):
    for key in FIELDS[name]:
        if key in obj:
            return obj[key]
    raise DataError(
        f"{where}: no field {' or '.join(repr(k) for k in FIELDS[name])} "
        f"(fields: {', '.join(sorted(obj))})"
    )


def split_of_name(path: Path) -> str | None:
    """train / valid / test from a file name such as ``snli_1.0_dev.jsonl``."""
    parts = path.stem.lower().replace("-", "_").replace(".", "_").split("_")
    found = {SPLIT_WORDS[p] for p in parts if p in SPLIT_WORDS}
    return found.pop() if len(found) == 1 else None


def read_jsonl(path: Path, split: str | None = None) -> Iterator[dict]:
    """Records ``{split, premise, hypothesis, label}`` (label None = no gold)."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{where}: expected a JSON object")
            rec_split = obj.get("split", split)
            if rec_split is None:
                raise DataError(
                    f"{where}: no 'split' field, and the file name does not say "
                    "train, dev/valid or test"
                )
            yield {
                "split": SPLIT_WORDS.get(str(rec_split), str(rec_split)),
                "premise": str(_field(obj, "premise", where)),
                "hypothesis": str(_field(obj, "hypothesis", where)),
                "label": normalize_label(_field(obj, "label", where), where=where),
            }


def read_local(path: Path) -> Iterator[dict]:
    """A JSONL file, or a folder of per-split JSONL files."""
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise DataError(f"{path}: no .jsonl files")
        for f in files:
            split = split_of_name(f)
            if split is None:
                raise DataError(
                    f"{f}: the file name does not say train, dev/valid or test"
                )
            yield from read_jsonl(f, split)
    else:
        yield from read_jsonl(path, split_of_name(path))


def write_examples(path: Path, records) -> dict[str, int]:
    """Write the examples with a gold label as JSON lines; count them by split and
    count the dropped ones."""
    counts: dict[str, int] = {}
    dropped = 0
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            if r["label"] is None:
                dropped += 1
                continue
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            key = f"{r['split']}_examples"
            counts[key] = counts.get(key, 0) + 1
    counts["dropped_without_gold_label"] = dropped
    return counts


def read_examples(path: Path) -> dict[str, list[dict]]:
    """examples.jsonl (as fetched) by split."""
    out: dict[str, list[dict]] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            r = json.loads(line)
            if r.get("label") not in LABELS:
                raise DataError(f"{path}:{n}: label {r.get('label')!r} not canonical")
            out.setdefault(r["split"], []).append(r)
    return out
