"""NLI data for the classifiers: tokens, a training vocabulary, padded batches.

Tokens are words and punctuation marks (``\\w+`` runs and single other
characters), lowercased when ``nli.lowercase``; a sentence keeps its first
``max_len`` tokens. Word ids: 0 = padding, 1 = ``<unk>`` (a training token seen
fewer than ``min_count`` times, or never).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

import torch

from firth.sources.nli import LABELS

PAD, UNK = "<pad>", "<unk>"
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str, *, lowercase: bool) -> list[str]:
    return _TOKEN.findall(text.lower() if lowercase else text)


def split_valid(
    train: list[dict], fraction: float, seed: int
) -> tuple[list[dict], list[dict]]:
    """Hold out about ``fraction`` of the premises (all their hypotheses go together,
    so no premise is in both parts) for early stopping."""

    def held(premise: str) -> bool:
        h = zlib.crc32(f"{seed}\t{premise}".encode()) / 2**32
        return h < fraction

    keep = [r for r in train if not held(r["premise"])]
    valid = [r for r in train if held(r["premise"])]
    return keep, valid


@dataclass
class Vocab:
    words: list[str]

    def __post_init__(self):
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(cls, sentences, min_count: int) -> Vocab:
        counts = Counter(t for s in sentences for t in s)
        kept = sorted(
            (w for w, n in counts.items() if n >= min_count),
            key=lambda w: (-counts[w], w),
        )
        return cls([PAD, UNK, *kept])

    def ids(self, tokens: list[str]) -> list[int]:
        return [self.index.get(t, 1) for t in tokens]


@dataclass
class Encoded:
    premise: list[list[int]]
    hypothesis: list[list[int]]
    label: list[int]


def encode(
    records: list[dict], vocab: Vocab, *, lowercase: bool, max_len: int
) -> Encoded:
    def ids(text: str) -> list[int]:
        return vocab.ids(tokenize(text, lowercase=lowercase)[:max_len]) or [1]

    return Encoded(
        [ids(r["premise"]) for r in records],
        [ids(r["hypothesis"]) for r in records],
        [LABELS.index(r["label"]) for r in records],
    )


def pad(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids and lengths."""
    lengths = torch.tensor([len(s) for s in seqs])
    out = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out, lengths


def batch(data: Encoded, idx: list[int]) -> dict[str, torch.Tensor]:
    p, pl = pad([data.premise[i] for i in idx])
    h, hl = pad([data.hypothesis[i] for i in idx])
    return {
        "premise": p,
        "premise_len": pl,
        "hypothesis": h,
        "hypothesis_len": hl,
        "label": torch.tensor([data.label[i] for i in idx]),
    }


def load_splits(folder, cfg, seed: int) -> tuple[dict[str, list[dict]], bool]:
    """train / valid / test examples of a fetched NLI source (the ``folder`` of its
    examples.jsonl, checked against its fetch's sha256 first), and whether valid
    was carved out of train (``nli.valid_fraction``)."""
    from firth.errors import DataError
    from firth.sources.nli import read_examples
    from firth.sources.provenance import checked_raw

    path = folder / "examples.jsonl"
    if not path.exists():
        raise DataError(f"{path}: not found (run the fetch-nli stage first)")
    checked_raw(folder)  # as its fetch recorded it
    splits = read_examples(path)
    for need in ("train", "test"):
        if not splits.get(need):
            raise DataError(
                f"{path}: no {need} examples (splits: {', '.join(sorted(splits))}); "
                "map one with the source's 'splits' (e.g. MultiNLI: "
                "{validation_matched: test})"
            )
    carved = not splits.get("valid")
    if carved:
        splits["train"], splits["valid"] = split_valid(
            splits["train"], cfg.valid_fraction, seed
        )
        if not splits["valid"]:
            raise DataError(f"{path}: no valid examples and too few to hold out")
    return {s: splits[s] for s in ("train", "valid", "test")}, carved
