"""Subword SGNS (Bojanowski et al. 2017, "Enriching Word Vectors with Subword
Information", section 3.2): a word is represented by the sum of the vectors of its
character n-grams (n = min_n..max_n, of the word wrapped in '<' and '>') and of the
word itself, or by their mean, as fastText's code computes it (``combine``).
N-grams are hashed into ``buckets`` with fastText's FNV-1a hash (bytes read as
signed chars, as fastText and gensim do), so a word never seen in training still
gets a vector from the n-grams it shares with training words.

Only buckets that some vocabulary word uses are trained; they are stored compactly
(rows V.. of the input table). An n-gram of an unseen word that hashes to an unused
bucket carries no information and is skipped (fastText would add an untrained
random vector); a word with no known n-gram has no vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
import torch

FNV_OFFSET = 2166136261
FNV_PRIME = 16777619


def fnv1a(text: str) -> int:
    """fastText's 32-bit FNV-1a over UTF-8 bytes, each sign-extended as int8."""
    h = FNV_OFFSET
    for byte in text.encode("utf-8"):
        signed = byte - 256 if byte >= 128 else byte
        h = ((h ^ (signed & 0xFFFFFFFF)) * FNV_PRIME) & 0xFFFFFFFF
    return h


def char_ngrams(word: str, *, min_n: int, max_n: int) -> list[str]:
    """All character n-grams of '<word>' with min_n <= n <= max_n."""
    w = f"<{word}>"
    return [
        w[i : i + n] for n in range(min_n, max_n + 1) for i in range(len(w) - n + 1)
    ]


def ngram_buckets(word: str, *, min_n: int, max_n: int, buckets: int) -> list[int]:
    return [fnv1a(g) % buckets for g in char_ngrams(word, min_n=min_n, max_n=max_n)]


@dataclass(frozen=True)
class SubwordSpace:
    """Maps words to rows of the input table: the word's own row (in-vocabulary
    words) plus one row per used n-gram bucket."""

    words: list[str]
    used_buckets: np.ndarray  # (U,) bucket id of input rows V..V+U-1
    min_n: int
    max_n: int
    buckets: int
    combine: Literal["sum", "mean"] = "sum"

    @property
    def rows(self) -> int:
        return len(self.words) + len(self.used_buckets)

    @cached_property
    def word_index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    @cached_property
    def bucket_row(self) -> dict[int, int]:
        """Bucket id -> input row, for the used buckets."""
        V = len(self.words)
        return {int(b): V + i for i, b in enumerate(self.used_buckets)}

    def word_rows(self, word: str) -> list[int]:
        """Input rows whose sum is the vector of ``word`` (may be empty)."""
        own = self.word_index.get(word)
        out = [] if own is None else [own]
        for b in ngram_buckets(
            word, min_n=self.min_n, max_n=self.max_n, buckets=self.buckets
        ):
            r = self.bucket_row.get(b)
            if r is not None:
                out.append(r)
        return out


def build_space(
    words: list[str],
    *,
    min_n: int,
    max_n: int,
    buckets: int,
    combine: Literal["sum", "mean"] = "sum",
) -> tuple[SubwordSpace, torch.Tensor]:
    """The space and the composition matrix S (V, V+U), CSR: 1 (``sum``, the
    paper) or 1/rows (``mean``, what fastText's code does) where a row belongs to a
    word; a repeated n-gram counts as often as it occurs."""
    if not 1 <= min_n <= max_n:
        raise ValueError("need 1 <= min_n <= max_n")
    if buckets < 1:
        raise ValueError("buckets must be positive")
    per_word = [
        ngram_buckets(w, min_n=min_n, max_n=max_n, buckets=buckets) for w in words
    ]
    used = np.unique(np.fromiter((b for bs in per_word for b in bs), dtype=np.int64))
    space = SubwordSpace(
        words=list(words),
        used_buckets=used,
        min_n=min_n,
        max_n=max_n,
        buckets=buckets,
        combine=combine,
    )
    V = len(words)
    crow, cols, vals = [0], [], []
    for i, bs in enumerate(per_word):
        cols.append(i)
        cols.extend(space.bucket_row[b] for b in bs)
        share = 1.0 if combine == "sum" else 1.0 / (len(bs) + 1)
        vals.extend([share] * (len(bs) + 1))
        crow.append(len(cols))
    S = torch.sparse_csr_tensor(
        torch.tensor(crow, dtype=torch.long),
        torch.tensor(cols, dtype=torch.long),
        torch.tensor(vals, dtype=torch.float32),
        size=(V, space.rows),
    )
    return space, S


def compose(
    space: SubwordSpace, Z: torch.Tensor, words: list[str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Vectors (n, d) of ``words`` from the input table Z; and a bool mask (n,),
    False where a word has no known row (its vector is zero)."""
    out = torch.zeros(len(words), Z.shape[1], dtype=Z.dtype)
    known = torch.zeros(len(words), dtype=torch.bool)
    for i, w in enumerate(words):
        r = space.word_rows(w)
        if r:
            rows_sum = Z[torch.tensor(r)].sum(0)
            out[i] = rows_sum if space.combine == "sum" else rows_sum / len(r)
            known[i] = True
    return out, known
