"""The work of the audit stages (stages/audit.py): one evaluation set audited
against the corpora its models could have seen, one function per kind of set, and
the flags and summary its stage writes."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from firth.audit.config import AuditParams
from firth.audit.overlap import OverlapAudit, read_lines, words
from firth.config import load_sources
from firth.errors import ConfigError, DataError
from firth.io import sha256_file
from firth.nmt.data import read_pairs
from firth.sources.formats import read_conll
from firth.sources.nli import read_examples

log = logging.getLogger(__name__)
TESTS = ("ngram", "exact", "near")


def audit_texts(texts, lines, cfg: AuditParams, *, near: bool = True):
    """The audit of ``texts`` against the training ``lines`` (an iterable)."""
    a = OverlapAudit.from_settings(texts, cfg, near=near)
    a.scan(lines)
    return a.result()


@dataclass
class Audited:
    """One evaluation set's audit: its example ids and the texts to show, the
    result per corpus checked (``checks``) with a description of that corpus, the
    files hashed (the evaluation set first), and where the flags and summary go
    (under data/audit/ and reports/audit/)."""

    ids: list[str]
    shown: list[str]
    checks: dict
    against: dict[str, str]
    hashed: list[Path]
    flags_dir: str
    summary: str

    @property
    def dirty(self) -> np.ndarray:
        dirty = np.zeros(len(self.ids), dtype=bool)
        for r in self.checks.values():
            dirty |= r.dirty
        return dirty


def _numbered(test: list[str]) -> list[str]:
    return [str(i) for i in range(len(test))]


def audit_text(root: Path, cfg: AuditParams, params: Path, name: str | None):
    data = root / "data" / "subsampled" / "text"
    # the non-empty lines, as the language models read them (firth.lm.data)
    test = [x for x in read_lines([data / "test.txt"]) if x.strip()]
    return Audited(
        ids=_numbered(test),
        shown=test,
        checks={"train": audit_texts(test, read_lines([data / "train.txt"]), cfg)},
        against={"train": "data/subsampled/text/train.txt (the LM training text)"},
        hashed=[data / "test.txt", data / "train.txt"],
        flags_dir="text",
        summary="text.json",
    )


def _named(kind: str, params: Path, name: str | None) -> str:
    if not name:
        raise ConfigError(f"audit.py {kind}: name a source under sources.{kind}")
    if name not in load_sources(kind, params):
        raise ConfigError(f"{params}: no source 'sources.{kind}.{name}'")
    return name


def audit_nli(root: Path, cfg: AuditParams, params: Path, name: str | None):
    name = _named("nli", params, name)
    src = root / "data" / "raw" / "nli" / name / "examples.jsonl"
    splits = read_examples(src)
    if not splits.get("test"):
        raise DataError(f"{src}: no test examples to audit")
    test = [f"{r['premise']} {r['hypothesis']}" for r in splits["test"]]
    train = [
        f"{r['premise']} {r['hypothesis']}"
        for s, rows in sorted(splits.items())
        if s != "test"
        for r in rows
    ]
    return Audited(
        ids=_numbered(test),
        shown=test,
        checks={"train": audit_texts(test, train, cfg)},
        against={
            "train": f"data/raw/nli/{name}/examples.jsonl (every pair outside "
            "the test split)"
        },
        hashed=[src],
        flags_dir=f"nli/{name}",
        summary=f"nli_{name}.json",
    )


def audit_parallel(root: Path, cfg: AuditParams, params: Path, name: str | None):
    data = root / "data" / "subsampled" / "parallel"
    test = read_pairs(data / "test.tsv")
    train = data / "train.tsv"
    return Audited(
        ids=test.ids,
        shown=test.target,
        checks={
            "source": audit_texts(test.source, read_lines([train], column=1), cfg),
            "target": audit_texts(test.target, read_lines([train], column=2), cfg),
        },
        against={
            "source": "data/subsampled/parallel/train.tsv (training sources)",
            "target": "data/subsampled/parallel/train.tsv (training targets)",
        },
        hashed=[data / "test.tsv", train],
        flags_dir="parallel",
        summary="parallel.json",
    )


def audit_tagged(root: Path, cfg: AuditParams, params: Path, name: str | None):
    name = _named("tagged", params, name)
    data = root / "data" / "subsampled" / "tagged" / name
    test = [" ".join(t) for t, _ in read_conll(data / "test.conll")]
    train = (" ".join(t) for t, _ in read_conll(data / "train.conll"))
    text = root / "data" / "subsampled" / "text" / "train.txt"
    return Audited(
        ids=_numbered(test),
        shown=test,
        checks={
            "train": audit_texts(test, train, cfg),
            "vectors-corpus": audit_texts(test, read_lines([text]), cfg, near=False),
        },
        against={
            "train": f"data/subsampled/tagged/{name}/train.conll",
            "vectors-corpus": "data/subsampled/text/train.txt (the corpus of the "
            "pretrained word vectors; n-gram overlap and exact duplicates only)",
        },
        hashed=[data / "test.conll", data / "train.conll", text],
        flags_dir=f"tagged/{name}",
        summary=f"tagged_{name}.json",
    )


KINDS = {
    "text": audit_text,
    "parallel": audit_parallel,
    "tagged": audit_tagged,
    "nli": audit_nli,
}


def flag_rows(audited: Audited) -> tuple[list[str], list[list]]:
    """flags.tsv's header and rows: each test of each check, and dirty."""
    checks, dirty = audited.checks, audited.dirty
    header = ["id", *(f"{c}_{k}" for c in checks for k in TESTS), "dirty"]
    rows = []
    for i, vid in enumerate(audited.ids):
        flags = [getattr(r, k)[i] for r in checks.values() for k in TESTS]
        rows.append([vid, *(int(x) for x in flags), int(dirty[i])])
    return header, rows


def summary(root: Path, audited: Audited, cfg: AuditParams, kind: str) -> dict:
    """reports/audit/<summary>: counts per check and the most repeated dirty
    examples."""
    dirty, ids, checks = audited.dirty, audited.ids, audited.checks
    repeated = Counter(
        " ".join(words(t)) for t, d in zip(audited.shown, dirty, strict=True) if d
    )
    report = {
        "evaluation": str(audited.hashed[0].relative_to(root)),
        "against": audited.against,
        "sha256": {str(p.relative_to(root)): sha256_file(p) for p in audited.hashed},
        "examples": len(ids),
        "dirty": int(dirty.sum()),
        "dirty_share": float(dirty.mean()) if len(ids) else 0.0,
        "clean": int((~dirty).sum()),
        "settings": cfg.model_dump(),
        "sides": {
            c: {
                "n": r.n,
                "ngram_dirty": int(r.ngram.sum()),
                "exact_duplicates": int(r.exact.sum()),
                "near_duplicates": int(r.near.sum()),
                "dirty": int(r.dirty.sum()),
                "training_lines_read": r.lines_read,
                "training_words_read": r.words_read,
            }
            for c, r in checks.items()
        },
        "most_repeated_dirty": [
            {"text": t, "examples": c} for t, c in repeated.most_common(10)
        ],
    }
    log.info(
        "%s: %d of %d test examples dirty (%s)",
        kind,
        report["dirty"],
        report["examples"],
        ", ".join(f"{c} n={r.n}: {int(r.dirty.sum())}" for c, r in checks.items()),
    )
    return report
