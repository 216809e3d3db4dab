"""DVC stage audit-parallel: the contamination audit of the translation test set
(data/subsampled/parallel/test.tsv) against the training pairs the models saw:
each test verse's source side against the training sources and its target side
against the training targets, by n-gram overlap, exact duplicates and MinHash
near duplicates (firth.audit.overlap) -> data/audit/parallel/flags.tsv (one row
per test id; dirty = any test on either side) and reports/audit/parallel.json
(counts, n, the most repeated dirty verses). evaluate-nmt reads the flags and
scores the clean and dirty subsets."""

from __future__ import annotations

import csv
import logging
from collections import Counter

from firth import runner
from firth.audit.overlap import Audit, choose_n, read_lines, words
from firth.config import load_sections
from firth.io import atomic_path, sha256_file, write_json
from firth.nmt.data import read_pairs

log = logging.getLogger("audit")


def audit_side(texts, corpus, column, cfg):
    n = cfg.ngram or choose_n(
        (len(words(t)) for t in texts), cfg.percentile, cfg.min_n, cfg.max_n
    )
    a = Audit(
        texts,
        n=n,
        near_threshold=cfg.near_threshold,
        shingle=cfg.shingle,
        num_perm=cfg.num_perm,
    )
    a.scan(read_lines([corpus], column=column))
    return a.result()


def body(args) -> None:
    cfg, _ = load_sections("audit", runner.params_path(args))
    data = args.root / "data" / "subsampled" / "parallel"
    test = read_pairs(data / "test.tsv")
    sides = {
        "source": audit_side(test.source, data / "train.tsv", 1, cfg),
        "target": audit_side(test.target, data / "train.tsv", 2, cfg),
    }
    dirty = sides["source"].dirty | sides["target"].dirty
    out = args.root / "data" / "audit" / "parallel"
    with atomic_path(out) as tmp:
        tmp.mkdir()
        with open(tmp / "flags.tsv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter="\t", lineterminator="\n")
            cols = [f"{s}_{k}" for s in sides for k in ("ngram", "exact", "near")]
            w.writerow(["id", *cols, "dirty"])
            for i, vid in enumerate(test.ids):
                flags = [
                    getattr(r, k)[i]
                    for r in sides.values()
                    for k in ("ngram", "exact", "near")
                ]
                w.writerow([vid, *(int(x) for x in flags), int(dirty[i])])
    repeated = Counter(
        " ".join(words(t)) for t, d in zip(test.target, dirty, strict=True) if d
    )
    report = {
        "evaluation": "data/subsampled/parallel/test.tsv",
        "against": "data/subsampled/parallel/train.tsv (source vs training sources, "
        "target vs training targets)",
        "test_sha256": sha256_file(data / "test.tsv"),
        "train_sha256": sha256_file(data / "train.tsv"),
        "examples": len(test.ids),
        "dirty": int(dirty.sum()),
        "dirty_share": float(dirty.mean()),
        "clean": int((~dirty).sum()),
        "settings": cfg.model_dump(),
        "sides": {
            s: {
                "n": r.n,
                "ngram_dirty": int(r.ngram.sum()),
                "exact_duplicates": int(r.exact.sum()),
                "near_duplicates": int(r.near.sum()),
                "dirty": int(r.dirty.sum()),
                "training_lines_read": r.lines_read,
                "training_words_read": r.words_read,
            }
            for s, r in sides.items()
        },
        "most_repeated_dirty_targets": [
            {"text": t, "test_verses": c} for t, c in repeated.most_common(10)
        ],
    }
    write_json(args.root / "reports" / "audit" / "parallel.json", report)
    log.info(
        "%d of %d test pairs dirty (source n=%d: %d, target n=%d: %d)",
        report["dirty"],
        report["examples"],
        sides["source"].n,
        report["sides"]["source"]["dirty"],
        sides["target"].n,
        report["sides"]["target"]["dirty"],
    )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
