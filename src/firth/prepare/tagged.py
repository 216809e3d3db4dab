"""Prepare a tagged corpus: validate BIO, split 80/10/10 where only one split exists.

BIO repair: an ``I-X`` that follows ``O``, the sentence start, or a chunk of another
type (``B-Y``/``I-Y``) starts no chunk it can continue; it is counted and rewritten to
``B-X`` (the IOB1 -> IOB2 reading, as seqeval and conlleval treat it).

Dedup (single-split sources only): a corpus shipped as one file may repeat a sentence
(WNUT-16 repeats posts), and a random split then puts copies in training and test. With
``dedup`` the first occurrence of each token sequence (lowercased) is kept before the
split. Sources with their own splits are kept as published, so scores stay comparable
with the literature; the contamination audit reports their overlap instead.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from pathlib import Path

from firth.errors import DataError
from firth.sources.formats import Sentence, read_conll, write_conll

log = logging.getLogger(__name__)
SPLITS = ("train", "valid", "test")


def is_bio(tags: Counter) -> bool:
    return all(t == "O" or t[:2] in ("B-", "I-") for t in tags)


def repair_bio(tags: list[str]) -> tuple[list[str], int]:
    """Return the repaired tags and the number of ``I-X`` rewritten to ``B-X``."""
    out: list[str] = []
    fixed = 0
    prev = "O"
    for tag in tags:
        if tag.startswith("I-") and (prev == "O" or prev[2:] != tag[2:]):
            tag = "B-" + tag[2:]
            fixed += 1
        out.append(tag)
        prev = tag
    return out, fixed


def dedup_sentences(sents: list[Sentence]) -> tuple[list[Sentence], int]:
    """Keep the first sentence of each lowercased token sequence; also return how
    many dropped copies carried tags different from the kept one."""
    first: dict[tuple[str, ...], list[str]] = {}
    kept: list[Sentence] = []
    conflicts = 0
    for tokens, tags in sents:
        key = tuple(t.lower() for t in tokens)
        if key in first:
            conflicts += first[key] != list(tags)
            continue
        first[key] = list(tags)
        kept.append((tokens, tags))
    return kept, conflicts


def prepare_tagged(
    raw_dir: Path,
    out_dir: Path,
    *,
    seed: int,
    valid_fraction: float,
    test_fraction: float,
    repair: bool,
    dedup: bool = False,
) -> dict:
    splits, dropped = read_splits(raw_dir, seed, valid_fraction, test_fraction, dedup)
    resplit = dropped is not None
    dropped = dropped or {}
    tag_counts = Counter(
        t for sents in splits.values() for _, tags in sents for t in tags
    )
    scheme = "BIO" if is_bio(tag_counts) else "tags"
    repaired = Counter()
    if scheme == "BIO":
        repaired = repair_splits(splits, repair, where=raw_dir)
    stats: dict = {
        "scheme": scheme,
        "resplit_80_10_10": resplit,
        **dropped,
        "splits": {},
    }
    for split in SPLITS:
        sents = splits[split]
        if not sents:
            raise DataError(
                f"{raw_dir}: empty corpus, the {split} split has no sentences"
            )
        write_conll(out_dir / f"{split}.conll", sents)
        stats["splits"][split] = {
            "sentences": len(sents),
            "tokens": sum(len(t) for t, _ in sents),
            "bio_repairs": repaired[split],
        }
    stats["tags"] = dict(sorted(tag_counts.items()))
    return stats


def read_splits(raw_dir: Path, seed, valid_fraction, test_fraction, dedup):
    """The splits and what resplitting dropped: the fetched train/valid/test.conll
    as they are (dropped None: not resplit), or all.conll, deduplicated where
    ``dedup`` (dropped: the count of repeats), split by the fractions under
    ``seed``."""
    files = {s: raw_dir / f"{s}.conll" for s in SPLITS}
    if all(f.exists() for f in files.values()):
        return {s: list(read_conll(files[s])) for s in SPLITS}, None
    path = raw_dir / "all.conll"
    if not path.exists():
        raise DataError(f"{raw_dir}: neither all.conll nor train/valid/test.conll")
    sents = list(read_conll(path))
    if not sents:
        raise DataError(f"{path}: empty corpus, no sentences")
    read = len(sents)
    if dedup:
        sents, conflicts = dedup_sentences(sents)
        log.info(
            "%s: %d repeated sentences dropped before the split "
            "(%d of them tagged differently from their first copy)",
            path,
            read - len(sents),
            conflicts,
        )
    order = list(range(len(sents)))
    random.Random(seed).shuffle(order)
    n_test = max(1, round(test_fraction * len(sents)))
    n_valid = max(1, round(valid_fraction * len(sents)))
    pick = {
        "test": order[:n_test],
        "valid": order[n_test : n_test + n_valid],
        "train": order[n_test + n_valid :],
    }
    splits = {s: [sents[i] for i in sorted(idx)] for s, idx in pick.items()}
    return splits, ({"duplicates_dropped": read - len(sents)} if dedup else {})


def repair_splits(splits: dict, repair: bool, *, where: Path) -> Counter:
    """Count (and, with ``repair``, fix in place) the I-X tags after O or another
    type in every split of a BIO corpus; the counts per split."""
    repaired: Counter = Counter()
    for split, sents in splits.items():
        fixed_sents: list[Sentence] = []
        for tokens, tags in sents:
            new, n = repair_bio(tags)
            repaired[split] += n
            fixed_sents.append((tokens, new if repair else tags))
        splits[split] = fixed_sents
    if sum(repaired.values()):
        log.warning(
            "%s: %d I-X tags after O or another type %s",
            where,
            sum(repaired.values()),
            "repaired to B-X" if repair else "found (repair off)",
        )
    return repaired
