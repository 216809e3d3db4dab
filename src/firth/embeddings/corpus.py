"""A tokenised corpus as integer ids: the vocabulary (counts, min_count) and the
token stream with its sentence boundaries.

Sentences are the corpus lines, cut into pieces of at most ``max_sentence_len``
tokens (gensim cuts at 10,000, so the reference sees the same sentences). Words
below ``min_count`` are removed before windows are taken, as in word2vec.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from firth.errors import DataError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Vocab:
    """Words sorted by descending count (ties: alphabetical), with their counts."""

    words: list[str]
    counts: np.ndarray  # (V,) int64
    total_tokens: int  # every token of the corpus, rare words included

    def __len__(self) -> int:
        return len(self.words)

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}


@dataclass(frozen=True)
class Corpus:
    """Token ids of the in-vocabulary tokens and the sentence of each."""

    vocab: Vocab
    ids: np.ndarray  # (N,) int64, in corpus order
    sentence: np.ndarray  # (N,) int64, non-decreasing sentence number

    @property
    def n_tokens(self) -> int:
        return len(self.ids)


def read_sentences(path: str | Path, *, max_sentence_len: int) -> list[list[str]]:
    """Whitespace-tokenised lines of ``path``, cut to ``max_sentence_len`` tokens."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found")
    if max_sentence_len < 1:
        raise ValueError("max_sentence_len must be positive")
    out: list[list[str]] = []
    with open(path, encoding="utf-8") as f:
        for line in tqdm(f, desc=f"read {path.name}", unit=" lines", leave=False):
            toks = line.split()
            for i in range(0, len(toks), max_sentence_len):
                out.append(toks[i : i + max_sentence_len])
    if not any(out):
        raise DataError(f"{path}: empty corpus, no tokens")
    return out


def build_vocab(sentences: list[list[str]], *, min_count: int) -> Vocab:
    counts = Counter(w for s in sentences for w in s)
    total = sum(counts.values())
    kept = sorted(
        ((w, c) for w, c in counts.items() if c >= min_count),
        key=lambda wc: (-wc[1], wc[0]),
    )
    if not kept:
        raise DataError(
            f"no word occurs at least min_count={min_count} times "
            f"({len(counts)} distinct words, {total} tokens)"
        )
    return Vocab(
        words=[w for w, _ in kept],
        counts=np.array([c for _, c in kept], dtype=np.int64),
        total_tokens=total,
    )


def encode(sentences: list[list[str]], vocab: Vocab) -> Corpus:
    index = vocab.index()
    ids: list[int] = []
    sent: list[int] = []
    for s_no, s in enumerate(sentences):
        for w in s:
            i = index.get(w)
            if i is not None:
                ids.append(i)
                sent.append(s_no)
    return Corpus(
        vocab=vocab,
        ids=np.asarray(ids, dtype=np.int64),
        sentence=np.asarray(sent, dtype=np.int64),
    )


def load_corpus(
    path: str | Path, *, min_count: int, max_sentence_len: int
) -> tuple[Corpus, list[list[str]]]:
    """Read, count and encode ``path``; also return the sentences (for gensim)."""
    sentences = read_sentences(path, max_sentence_len=max_sentence_len)
    vocab = build_vocab(sentences, min_count=min_count)
    corpus = encode(sentences, vocab)
    log.info(
        "%s: %d tokens, %d sentences, %d words with count >= %d (%d tokens kept)",
        path,
        vocab.total_tokens,
        len(sentences),
        len(vocab),
        min_count,
        corpus.n_tokens,
    )
    return corpus, sentences
