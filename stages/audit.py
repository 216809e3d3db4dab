"""DVC stages audit-text, audit-parallel, audit-tagged@<name> and audit-nli@<name>:
contamination audits of an
evaluation set against every corpus its models could have seen, by n-gram overlap,
exact duplicates and MinHash near duplicates (firth.audit.overlap).

- ``parallel``: each translation test verse (data/subsampled/parallel/test.tsv),
  its source side against the training sources and its target side against the
  training targets.
- ``text``: each line of the language models' test text
  (data/subsampled/text/test.txt) against the training lines (train.txt).
- ``nli <name>``: each test pair of data/raw/nli/<name>/examples.jsonl (premise and
  hypothesis joined by a space) against every pair of the other splits (training,
  and validation, which picks the epoch).
- ``tagged <name>``: each test sentence of data/subsampled/tagged/<name>/ against
  the training sentences, and (n-gram overlap only: its lines are whole documents)
  against the text corpus the pretrained word vectors were trained on
  (data/subsampled/text/train.txt).

Writes data/audit/<kind>[/<name>]/flags.tsv (one row per test example, in test
order; dirty = any test against any corpus) and reports/audit/<kind>[_<name>].json
(counts, n, the most repeated dirty examples). The evaluation stages read the flags
and score the clean and dirty subsets."""

from __future__ import annotations

import csv
import logging
from collections import Counter

import numpy as np

from firth import runner
from firth.audit.config import Audit as AuditParams
from firth.audit.overlap import Audit, read_lines, words
from firth.config import load_sections, load_sources
from firth.errors import ConfigError, DataError
from firth.io import atomic_path, sha256_file, write_json
from firth.nmt.data import read_pairs
from firth.sources.formats import read_conll
from firth.sources.nli import read_examples

log = logging.getLogger("audit")
TESTS = ("ngram", "exact", "near")


def audit_texts(texts, lines, cfg, *, near=True):
    """The audit of ``texts`` against the training ``lines`` (an iterable)."""
    a = Audit.from_settings(texts, cfg, near=near)
    a.scan(lines)
    return a.result()


def body(args) -> None:
    path = runner.params_path(args)
    cfg, _ = load_sections("audit", path, schema=AuditParams)
    root = args.root
    if args.kind == "text":
        data = root / "data" / "subsampled" / "text"
        # the non-empty lines, as the language models read them (firth.lm.data)
        test = [x for x in read_lines([data / "test.txt"]) if x.strip()]
        ids, shown = [str(i) for i in range(len(test))], test
        checks = {"train": audit_texts(test, read_lines([data / "train.txt"]), cfg)}
        against = {"train": "data/subsampled/text/train.txt (the LM training text)"}
        hashed = [data / "test.txt", data / "train.txt"]
        out = root / "data" / "audit" / "text"
        rep = root / "reports" / "audit" / "text.json"
    elif args.kind == "nli":
        if not args.name:
            raise ConfigError("audit.py nli: name a source under sources.nli")
        if args.name not in load_sources("nli", path):
            raise ConfigError(f"{path}: no source 'sources.nli.{args.name}'")
        src = root / "data" / "raw" / "nli" / args.name / "examples.jsonl"
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
        ids, shown = [str(i) for i in range(len(test))], test
        checks = {"train": audit_texts(test, train, cfg)}
        against = {
            "train": f"data/raw/nli/{args.name}/examples.jsonl (every pair outside "
            "the test split)"
        }
        hashed = [src]
        out = root / "data" / "audit" / "nli" / args.name
        rep = root / "reports" / "audit" / f"nli_{args.name}.json"
    elif args.kind == "parallel":
        data = root / "data" / "subsampled" / "parallel"
        test = read_pairs(data / "test.tsv")
        ids, shown = test.ids, test.target
        checks = {
            "source": audit_texts(
                test.source, read_lines([data / "train.tsv"], column=1), cfg
            ),
            "target": audit_texts(
                test.target, read_lines([data / "train.tsv"], column=2), cfg
            ),
        }
        against = {
            "source": "data/subsampled/parallel/train.tsv (training sources)",
            "target": "data/subsampled/parallel/train.tsv (training targets)",
        }
        hashed = [data / "test.tsv", data / "train.tsv"]
        out = root / "data" / "audit" / "parallel"
        rep = root / "reports" / "audit" / "parallel.json"
    else:
        if not args.name:
            raise ConfigError("audit.py tagged: name a source under sources.tagged")
        if args.name not in load_sources("tagged", path):
            raise ConfigError(f"{path}: no source 'sources.tagged.{args.name}'")
        data = root / "data" / "subsampled" / "tagged" / args.name
        test = [" ".join(t) for t, _ in read_conll(data / "test.conll")]
        train = (" ".join(t) for t, _ in read_conll(data / "train.conll"))
        text = root / "data" / "subsampled" / "text" / "train.txt"
        ids, shown = [str(i) for i in range(len(test))], test
        checks = {
            "train": audit_texts(test, train, cfg),
            "vectors-corpus": audit_texts(test, read_lines([text]), cfg, near=False),
        }
        against = {
            "train": f"data/subsampled/tagged/{args.name}/train.conll",
            "vectors-corpus": "data/subsampled/text/train.txt (the corpus of the "
            "pretrained word vectors; n-gram overlap and exact duplicates only)",
        }
        hashed = [data / "test.conll", data / "train.conll", text]
        out = root / "data" / "audit" / "tagged" / args.name
        rep = root / "reports" / "audit" / f"tagged_{args.name}.json"
    dirty = np.zeros(len(ids), dtype=bool)
    for r in checks.values():
        dirty |= r.dirty
    with atomic_path(out) as tmp:
        tmp.mkdir()
        with open(tmp / "flags.tsv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter="\t", lineterminator="\n")
            w.writerow(["id", *(f"{c}_{k}" for c in checks for k in TESTS), "dirty"])
            for i, vid in enumerate(ids):
                flags = [getattr(r, k)[i] for r in checks.values() for k in TESTS]
                w.writerow([vid, *(int(x) for x in flags), int(dirty[i])])
    repeated = Counter(
        " ".join(words(t)) for t, d in zip(shown, dirty, strict=True) if d
    )
    report = {
        "evaluation": str(hashed[0].relative_to(root)),
        "against": against,
        "sha256": {str(p.relative_to(root)): sha256_file(p) for p in hashed},
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
    write_json(rep, report)
    log.info(
        "%s: %d of %d test examples dirty (%s)",
        args.kind,
        report["dirty"],
        report["examples"],
        ", ".join(f"{c} n={r.n}: {int(r.dirty.sum())}" for c, r in checks.items()),
    )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("kind", choices=["text", "parallel", "tagged", "nli"])
    p.add_argument(
        "name", nargs="?", help="tagged, nli: a name under sources.tagged / .nli"
    )
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
