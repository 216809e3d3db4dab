"""Prepare the text corpus: normalise, tokenise, split by document group, describe.

Documents are split by their ``group`` (a Wikipedia article, a Bible chapter), hashed
with the seed: a chapter lands in the same split in every Bible version, so the
parallel versions cannot leak a test chapter into training.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from firth.errors import DataError
from firth.prepare.normalize import assign_split, normalize, tokenize, unit_hash
from firth.sources.formats import read_docs

log = logging.getLogger(__name__)
SPLITS = ("train", "valid", "test")


def prepare_text(
    sources: dict[str, Path],
    out_dir: Path,
    *,
    seed: int,
    lowercase: bool,
    valid_fraction: float,
    test_fraction: float,
    min_tokens: int,
) -> dict:
    """Write ``{train,valid,test}.txt`` (one document per line, tokens separated by
    spaces) into ``out_dir`` and return statistics."""
    counts = {s: Counter() for s in SPLITS}
    docs_per_split = Counter()
    tokens_per_source: dict[str, Counter] = {}
    short = 0
    files = {s: open(out_dir / f"{s}.txt", "w", encoding="utf-8") for s in SPLITS}
    try:
        for name, src_dir in sources.items():
            path = src_dir / "docs.jsonl"
            if not path.exists():
                raise DataError(f"{path}: not found; is '{name}' a text source?")
            per = tokens_per_source.setdefault(name, Counter())
            for doc in tqdm(
                read_docs(path),
                desc=f"prepare {name}",
                unit="doc",
                disable=None,
                mininterval=2,
            ):
                toks = tokenize(normalize(doc["text"]), lowercase=lowercase)
                if len(toks) < min_tokens:
                    short += 1
                    continue
                split = assign_split(
                    unit_hash(seed, doc["group"]),
                    valid_fraction=valid_fraction,
                    test_fraction=test_fraction,
                )
                files[split].write(" ".join(toks) + "\n")
                counts[split].update(toks)
                docs_per_split[split] += 1
                per[split] += len(toks)
    finally:
        for f in files.values():
            f.close()
    for split in SPLITS:
        if docs_per_split[split] == 0:
            raise DataError(
                f"{out_dir}: empty corpus, the {split} split got no "
                "documents (too few documents or groups for the fractions)"
            )
    train_vocab = counts["train"]
    stats: dict = {
        "splits": {},
        "sources": {k: dict(v) for k, v in tokens_per_source.items()},
        "documents_below_min_tokens": short,
    }
    for split in SPLITS:
        c = counts[split]
        n = sum(c.values())
        entry = {"documents": docs_per_split[split], "tokens": n, "types": len(c)}
        if split != "train":
            oov = sum(v for w, v in c.items() if w not in train_vocab)
            entry["oov_rate"] = oov / n
            entry["oov_types"] = sum(1 for w in c if w not in train_vocab)
        stats["splits"][split] = entry
    log.info("text corpus: %s", {s: stats["splits"][s]["tokens"] for s in SPLITS})
    return stats
