"""Checks a fetched or local file must pass before anything reads it: UTF-8 text,
and tags that are BIO throughout when they are BIO at all. Each failure is one
line naming the file and line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from firth.errors import DataError

BINARY_SUFFIXES = (".gz", ".bz2", ".zip", ".parquet", ".arrow", ".xz")


def check_utf8(path: Path) -> None:
    """A DataError ``path:line: not UTF-8`` at the first line that is not (instead
    of a UnicodeDecodeError traceback from whichever reader meets it first)."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{path}:{lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at "
                    f"column {exc.start + 1}); convert the file, e.g. "
                    "iconv -f latin1 -t utf-8"
                ) from None


def bio_tag(tag: str) -> bool:
    return tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2)


def _tags(path: Path):
    """(line number, tag) of each token line of a CoNLL file (tag: last column)."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            cols = line.split()
            if len(cols) >= 2 and cols[0] != "-DOCSTART-":
                yield lineno, cols[-1]


def check_mostly_bio(files: list[Path]) -> None:
    """Tags that are BIO but for a few (``0``, ``PER``, ``B_PER``) are an error
    naming the first such tag's file and line: read as plain tags the corpus would
    lose its BIO repair and entity scoring silently. Mostly BIO: some ``B-`` or
    ``I-`` tag, and BIO tags on at least half of the tokens."""
    tags = Counter(t for f in files for _, t in _tags(f))
    bad = {t: n for t, n in tags.items() if not bio_tag(t)}
    chunked = any(t[:2] in ("B-", "I-") for t in tags)
    total = sum(tags.values())
    if not bad or not chunked or 2 * sum(bad.values()) > total:
        return
    summary = ", ".join(f"{t!r} x{n}" for t, n in sorted(bad.items())[:5])
    path, lineno, tag = next((f, n, t) for f in files for n, t in _tags(f) if t in bad)
    raise DataError(
        f"{path}:{lineno}: tag {tag!r} is not BIO (O, B-X or I-X), but "
        f"{total - sum(bad.values())} of {total} tags are; not BIO: {summary}"
    )
