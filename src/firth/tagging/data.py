"""Vocabularies, encoding and batches for the taggers.

Words are looked up in a normalised form (lowercased, every digit -> 0, as Lample et
al. 2016 do); the character features see the raw form, so case and digits still
reach the model. Word id 0 is padding and 1 the unknown word; character ids likewise.
With pretrained vectors the word vocabulary is the training words plus every word the
vectors know, so a test word never seen in training still gets its pretrained row.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import torch

from firth.accel import mover
from firth.errors import DataError
from firth.sources.formats import Sentence, read_conll

PAD, UNK = 0, 1
_DIGIT = re.compile(r"\d")


def norm(word: str) -> str:
    return _DIGIT.sub("0", word.lower())


def read_split(path: Path) -> list[Sentence]:
    if not path.exists():
        raise DataError(f"{path}: not found (run the subsample-tagged stage first)")
    sents = list(read_conll(path))
    if not sents:
        raise DataError(f"{path}: no sentences")
    return sents


@dataclass
class Vocab:
    words: list[str]  # normalised forms; 0 <pad>, 1 <unk>
    chars: list[str]
    tags: list[str]

    def __post_init__(self) -> None:
        self.word_ix = {w: i for i, w in enumerate(self.words)}
        self.char_ix = {c: i for i, c in enumerate(self.chars)}
        self.tag_ix = {t: i for i, t in enumerate(self.tags)}

    @classmethod
    def build(cls, train: list[Sentence], extra_words=()) -> Vocab:
        counts = Counter(norm(w) for tokens, _ in train for w in tokens)
        words = ["<pad>", "<unk>", *sorted(counts, key=lambda w: (-counts[w], w))]
        seen = set(words)
        words += [w for w in extra_words if w not in seen and not seen.add(w)]
        chars = Counter(c for tokens, _ in train for w in tokens for c in w)
        tags = Counter(t for _, tags in train for t in tags)
        # O first when present, then by frequency: stable across runs of one split
        order = sorted(tags, key=lambda t: (t != "O", -tags[t], t))
        return cls(
            words,
            ["<pad>", "<unk>", *sorted(chars, key=lambda c: (-chars[c], c))],
            order,
        )

    def to_json(self) -> dict:
        return {"words": self.words, "chars": self.chars, "tags": self.tags}

    @classmethod
    def from_json(cls, d: dict) -> Vocab:
        return cls(d["words"], d["chars"], d["tags"])


@dataclass
class Encoded:
    words: list[list[int]]
    chars: list[list[list[int]]]
    tags: list[list[int]]  # -1 where the tag is unknown to the vocabulary
    # each sentence's (tokens, longest word) character ids as a tensor, made once
    _char_rows: dict[int, torch.Tensor] = field(
        default_factory=dict, repr=False, compare=False
    )

    def char_rows(self, i: int) -> torch.Tensor:
        if i not in self._char_rows:
            cs = self.chars[i]
            m = max(len(c) for c in cs)
            self._char_rows[i] = torch.tensor(
                [c + [PAD] * (m - len(c)) for c in cs], dtype=torch.long
            )
        return self._char_rows[i]


def encode(vocab: Vocab, sents: list[Sentence]) -> Encoded:
    words, chars, tags = [], [], []
    for tokens, tt in sents:
        words.append([vocab.word_ix.get(norm(w), UNK) for w in tokens])
        chars.append([[vocab.char_ix.get(c, UNK) for c in w] for w in tokens])
        tags.append([vocab.tag_ix.get(t, -1) for t in tt])
    return Encoded(words, chars, tags)


@dataclass
class Batch:
    words: torch.Tensor  # (B, T)
    chars: torch.Tensor  # (B, T, L)
    tags: torch.Tensor  # (B, T), -1 on padding and unknown tags
    mask: torch.Tensor  # (B, T) bool

    def to(self, device) -> Batch:
        """On ``device``: a torch.device, or a firth.accel.Accel (pinned memory and
        non-blocking copies on CUDA)."""
        move = mover(device)
        return Batch(*(move(x) for x in (self.words, self.chars, self.tags, self.mask)))


def make_batch(data: Encoded, idx: list[int], words: list[list[int]] | None = None):
    """Pad the sentences ``idx`` of ``data`` (``words`` overrides their word ids, for
    word dropout)."""
    words = words if words is not None else [data.words[i] for i in idx]
    rows = [data.char_rows(i) for i in idx]
    lengths = [len(w) for w in words]
    n = max(lengths)
    m = max(r.shape[1] for r in rows)
    mask = torch.arange(n) < torch.tensor(lengths)[:, None]
    # the real positions in row order are the sentences' tokens in order
    w = torch.full((len(idx), n), PAD, dtype=torch.long)
    w[mask] = torch.tensor(list(chain.from_iterable(words)), dtype=torch.long)
    t = torch.full((len(idx), n), -1, dtype=torch.long)
    t[mask] = torch.tensor(
        list(chain.from_iterable(data.tags[i] for i in idx)), dtype=torch.long
    )
    c = torch.zeros(len(idx), n, m, dtype=torch.long)
    for r, row in enumerate(rows):
        c[r, : row.shape[0], : row.shape[1]] = row
    return Batch(w, c, t, mask)


def length_batches(lengths: list[int], size: int) -> list[list[int]]:
    """Sentences sorted by length, cut into batches of ``size`` (for evaluation)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return [order[i : i + size] for i in range(0, len(order), size)]
