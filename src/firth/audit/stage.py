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
from firth.errors import ConfigError, DataError
from firth.io import sha256_file, shown
from firth.nmt.data import read_pairs
from firth.sources.formats import read_conll
from firth.sources.nli import read_examples
from firth.sources.provenance import checked_raw

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
    result per corpus checked (``checks``) with a description of that corpus, and
    the files hashed (the evaluation set first)."""

    ids: list[str]
    shown: list[str]
    checks: dict
    against: dict[str, str]
    hashed: list[Path]

    @property
    def dirty(self) -> np.ndarray:
        dirty = np.zeros(len(self.ids), dtype=bool)
        for r in self.checks.values():
            dirty |= r.dirty
        return dirty


def _numbered(test: list[str]) -> list[str]:
    return [str(i) for i in range(len(test))]


def _need(kind: str, **paths: Path | None) -> None:
    missing = [k for k, v in paths.items() if v is None]
    if missing:
        flags = ", ".join(f"--{k}" for k in missing)
        raise ConfigError(f"audit.py {kind}: needs {flags}")


def audit_text(cfg: AuditParams, *, test: Path, train: Path, **_):
    """The LM test lines against the LM training text."""
    _need("text", test=test, train=train)
    # the non-empty lines, as the language models read them (firth.lm.data)
    lines = [x for x in read_lines([test]) if x.strip()]
    return Audited(
        ids=_numbered(lines),
        shown=lines,
        checks={"train": audit_texts(lines, read_lines([train]), cfg)},
        against={"train": f"{shown(train)} (the LM training text)"},
        hashed=[test, train],
    )


def audit_nli(cfg: AuditParams, *, test: Path, **_):
    """The test pairs of one fetched NLI source (``test``: its folder) against
    its other splits."""
    _need("nli", test=test)
    checked_raw(test)  # as its fetch recorded it
    examples = test / "examples.jsonl"
    splits = read_examples(examples)
    if not splits.get("test"):
        raise DataError(f"{examples}: no test examples to audit")
    texts = [f"{r['premise']} {r['hypothesis']}" for r in splits["test"]]
    train = [
        f"{r['premise']} {r['hypothesis']}"
        for s, rows in sorted(splits.items())
        if s != "test"
        for r in rows
    ]
    return Audited(
        ids=_numbered(texts),
        shown=texts,
        checks={"train": audit_texts(texts, train, cfg)},
        against={"train": f"{shown(examples)} (every pair outside the test split)"},
        hashed=[examples],
    )


def audit_parallel(cfg: AuditParams, *, test: Path, train: Path, **_):
    """The test pairs' sources and targets against the training pairs'."""
    _need("parallel", test=test, train=train)
    pairs = read_pairs(test)
    return Audited(
        ids=pairs.ids,
        shown=pairs.target,
        checks={
            "source": audit_texts(pairs.source, read_lines([train], column=1), cfg),
            "target": audit_texts(pairs.target, read_lines([train], column=2), cfg),
        },
        against={
            "source": f"{shown(train)} (training sources)",
            "target": f"{shown(train)} (training targets)",
        },
        hashed=[test, train],
    )


def audit_tagged(cfg: AuditParams, *, test: Path, train: Path, text: Path, **_):
    """The tagged test sentences against the tagged training sentences and the
    word vectors' corpus."""
    _need("tagged", test=test, train=train, text=text)
    sents = [" ".join(t) for t, _ in read_conll(test)]
    train_sents = (" ".join(t) for t, _ in read_conll(train))
    return Audited(
        ids=_numbered(sents),
        shown=sents,
        checks={
            "train": audit_texts(sents, train_sents, cfg),
            "vectors-corpus": audit_texts(sents, read_lines([text]), cfg, near=False),
        },
        against={
            "train": shown(train),
            "vectors-corpus": f"{shown(text)} (the corpus of the "
            "pretrained word vectors; n-gram overlap and exact duplicates only)",
        },
        hashed=[test, train, text],
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


def summary(audited: Audited, cfg: AuditParams, kind: str) -> dict:
    """The audit's summary: counts per check and the most repeated dirty
    examples."""
    dirty, ids, checks = audited.dirty, audited.ids, audited.checks
    repeated = Counter(
        " ".join(words(t)) for t, d in zip(audited.shown, dirty, strict=True) if d
    )
    report = {
        "evaluation": shown(audited.hashed[0]),
        "against": audited.against,
        "sha256": {shown(p): sha256_file(p) for p in audited.hashed},
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
