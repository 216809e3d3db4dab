"""Writers by format: a file already on disk (a package member, a download, a
local file) parsed into a fetched source's canonical files (docs.jsonl,
pairs.tsv, all.conll, questions-words.txt, pairs.tsv of similarities,
examples.jsonl), with the counts its SOURCE.json records."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from firth.errors import DataError
from firth.sources import formats, nli, wikipedia

TEXT8_CHUNK_WORDS = 10_000


def write_file(fmt: str, parser: str, path: Path, out: Path, *, source: str) -> dict:
    """Parse a file already on disk into the canonical format; return counts."""
    if fmt == "text":
        if parser == "wikipedia":
            docs = (
                {"id": pid, "group": f"wiki:{pid}", "text": text}
                for pid, _title, text in wikipedia.iter_articles(path.read_bytes())
            )
        elif parser == "chunks":
            docs = _chunks(path)
        elif path.suffix == ".jsonl":
            docs = _jsonl_docs(path)
        else:
            docs = _line_docs(path)
        n = formats.write_docs(out / "docs.jsonl", docs)
        _require(n, path, "documents")
        return {"documents": n}
    if fmt == "tagged":
        if parser == "slash":
            sents = formats.read_slash_tagged(path)
        elif path.suffix == ".conllu":
            sents = formats.read_conllu(path)
        else:
            sents = formats.read_conll(path)
        n = formats.write_conll(out / "all.conll", sents)
        _require(n, path, "sentences")
        return {"sentences": n}
    if fmt == "parallel":
        n = formats.write_pairs(out / "pairs.tsv", _tsv_pairs(path))
        _require(n, path, "sentence pairs")
        return {"pairs": n}
    if fmt == "analogy":
        text = path.read_text(encoding="utf-8")
        n = sum(1 for line in text.splitlines() if line and not line.startswith(":"))
        _require(n, path, "analogy questions")
        (out / "questions-words.txt").write_text(text, encoding="utf-8")
        return {"questions": n}
    if fmt == "similarity":
        n = formats.write_similarity(out / "pairs.tsv", formats.read_similarity(path))
        _require(n, path, "word pairs")
        return {"pairs": n}
    if fmt == "nli":
        counts = nli.write_examples(out / "examples.jsonl", nli.read_local(path))
        _require(
            sum(v for k, v in counts.items() if k.endswith("_examples")),
            path,
            "labelled NLI examples",
        )
        return counts
    raise DataError(f"{source}: format {fmt!r} cannot be read from a file")


def _require(n: int, path: Path, what: str) -> None:
    if n == 0:
        raise DataError(f"{path}: empty corpus, no {what} found")


def _line_docs(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            yield {"id": i, "group": i, "text": line.strip()}


def _jsonl_docs(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                text = obj["text"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    f"{path}:{i}: expected a JSON object with a 'text' field"
                ) from None
            yield {
                "id": obj.get("id", i),
                "group": obj.get("group", obj.get("id", i)),
                "text": text,
            }


def _chunks(path: Path) -> Iterator[dict]:
    words = path.read_text(encoding="utf-8").split()
    for i in range(0, len(words), TEXT8_CHUNK_WORDS):
        yield {
            "id": i // TEXT8_CHUNK_WORDS,
            "group": i // TEXT8_CHUNK_WORDS,
            "text": " ".join(words[i : i + TEXT8_CHUNK_WORDS]),
        }


def _tsv_pairs(path: Path) -> Iterator[tuple[str, str, str]]:
    """(id, source, target) from 2 (source, target) or 3 (id, source, target)
    tab-separated columns, the same on every line as on the first."""
    width = None
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) not in (2, 3):
                raise DataError(
                    f"{path}:{i}: expected 2 (source, target) or 3 (id, "
                    f"source, target) tab-separated columns, got {len(parts)}"
                )
            width = width or len(parts)
            if len(parts) != width:
                raise DataError(
                    f"{path}:{i}: {len(parts)} tab-separated columns, but line 1 "
                    f"has {width}; a pairs file is all (source, target) or all "
                    "(id, source, target)"
                )
            yield (str(i), *parts) if width == 2 else tuple(parts)  # type: ignore[misc]


def wikitext_docs(records: Iterator[tuple[str, int, dict]]) -> Iterator[dict]:
    """Rows of a text dataset; WikiText's `` = Title = `` lines start a new group."""
    group = 0
    heading = re.compile(r"^ = [^=].* = $")
    for split, i, r in records:
        text = r["text"]
        if heading.match(text.rstrip("\n")):
            group += 1
        yield {"id": f"{split}-{i}", "group": f"{split}-{group}", "text": text.strip()}
