"""Writers and readers of the canonical raw and prepared formats."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from firth.errors import DataError

Sentence = tuple[list[str], list[str]]  # (tokens, tags)


def _clean_field(text: str) -> str:
    return " ".join(text.split())


def write_docs(path: Path, docs: Iterable[dict]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for doc in docs:
            if not doc["text"].strip():
                continue
            f.write(
                json.dumps(
                    {
                        "id": str(doc["id"]),
                        "group": str(doc["group"]),
                        "text": doc["text"],
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
            n += 1
    return n


def read_docs(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                doc = json.loads(line)
                yield {"id": doc["id"], "group": doc["group"], "text": doc["text"]}
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DataError(
                    f"{path}:{lineno}: expected a JSON object with id, "
                    f"group and text ({exc})"
                ) from None


def write_pairs(path: Path, pairs: Iterable[tuple[str, str, str]]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for pid, src, tgt in pairs:
            src, tgt = _clean_field(src), _clean_field(tgt)
            if src and tgt:
                f.write(f"{pid}\t{src}\t{tgt}\n")
                n += 1
    return n


def read_pairs(path: Path) -> Iterator[tuple[str, str, str]]:
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise DataError(
                    f"{path}:{lineno}: expected 3 tab-separated columns "
                    f"(id, source, target), got {len(parts)}"
                )
            yield parts[0], parts[1], parts[2]


def write_conll(path: Path, sentences: Iterable[Sentence]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for tokens, tags in sentences:
            if not tokens:
                continue
            for tok, tag in zip(tokens, tags, strict=True):
                f.write(f"{tok}\t{tag}\n")
            f.write("\n")
            n += 1
    return n


def read_conll(
    path: Path, *, token_col: int = 0, tag_col: int = -1, expect_cols: int | None = None
) -> Iterator[Sentence]:
    """Read a CoNLL-style file: whitespace-separated columns, blank line between
    sentences, ``-DOCSTART-`` lines skipped. Every non-blank line must have the same
    number of columns as the first (or ``expect_cols``)."""
    tokens: list[str] = []
    tags: list[str] = []
    ncols = expect_cols
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            cols = line.split()
            if not cols:
                if tokens:
                    yield tokens, tags
                    tokens, tags = [], []
                continue
            if cols[0] == "-DOCSTART-":
                continue
            if ncols is None:
                ncols = len(cols)
                if ncols < 2:
                    raise DataError(
                        f"{path}:{lineno}: expected at least 2 columns "
                        f"(token, tag), got {ncols}"
                    )
            if len(cols) != ncols:
                raise DataError(
                    f"{path}:{lineno}: expected {ncols} columns, "
                    f"got {len(cols)}: {line.strip()[:60]!r}"
                )
            tokens.append(cols[token_col])
            tags.append(cols[tag_col])
    if tokens:
        yield tokens, tags


def read_conllu(path: Path) -> Iterator[Sentence]:
    """Read CoNLL-U: 10 tab-separated columns; FORM and UPOS are kept; comments,
    multiword-token ranges (``1-2``) and empty nodes (``1.1``) are skipped."""
    tokens: list[str] = []
    tags: list[str] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if tokens:
                    yield tokens, tags
                    tokens, tags = [], []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise DataError(
                    f"{path}:{lineno}: expected 10 tab-separated CoNLL-U "
                    f"columns, got {len(cols)}"
                )
            if "-" in cols[0] or "." in cols[0]:
                continue
            tokens.append(cols[1])
            tags.append(cols[3])
    if tokens:
        yield tokens, tags


def read_slash_tagged(path: Path) -> Iterator[Sentence]:
    """Read `word/TAG word/TAG` lines: a sentence per line, split on the last `/`."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            items = line.split()
            if not items:
                continue
            tokens, tags = [], []
            for item in items:
                word, sep, tag = item.rpartition("/")
                if not sep or not word or not tag:
                    raise DataError(f"{path}:{lineno}: expected word/TAG, got {item!r}")
                tokens.append(word)
                tags.append(tag)
            yield tokens, tags


def read_similarity(path: Path) -> Iterator[tuple[str, str, float]]:
    """``word1 word2 score`` lines, whitespace-separated (the canonical pairs.tsv
    uses tabs); blank and '#' lines are skipped."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split()
            try:
                yield parts[0], parts[1], float(parts[2])
            except (IndexError, ValueError):
                raise DataError(
                    f"{path}:{i}: expected word1 word2 score, got {line.strip()[:60]!r}"
                ) from None


def write_similarity(path: Path, rows: Iterable[tuple[str, str, float]]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for w1, w2, score in rows:
            f.write(f"{w1}\t{w2}\t{score}\n")
            n += 1
    return n
