"""Word vectors in word2vec text format, and cosine nearest neighbours.

The format (what ``gensim.models.KeyedVectors.load_word2vec_format`` reads): a
header line "<count> <dim>", then one line per word: the word and its components,
space-separated. Words are written in the order given (vocabulary order: most
frequent first), which the analogy evaluation's frequency cut-off relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from firth.errors import DataError
from firth.io import atomic_path


@dataclass(frozen=True)
class Embedding:
    words: list[str]
    matrix: np.ndarray  # (V, d) float32, rows in ``words`` order

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.words):
            raise ValueError("matrix must be (len(words), dim)")

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    @cached_property
    def unit(self) -> np.ndarray:
        """Rows scaled to unit length (zero rows stay zero); computed once."""
        norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
        return (self.matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def nearest(
        self, vector: np.ndarray, *, k: int, exclude=()
    ) -> list[tuple[str, float]]:
        """The k words with the highest cosine to ``vector``."""
        unit = self.unit
        n = np.linalg.norm(vector)
        if n == 0:
            return []
        sims = unit @ (vector / n).astype(np.float32)
        for i in exclude:
            sims[i] = -np.inf
        top = np.argsort(-sims, kind="stable")[:k]
        return [(self.words[i], float(sims[i])) for i in top]


def save_word2vec(path: str | Path, emb: Embedding, *, precision: int = 6) -> None:
    """Write ``emb`` atomically in word2vec text format."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{len(emb.words)} {emb.dim}\n")
            fmt = f"%.{precision}g"
            for w, row in zip(emb.words, emb.matrix, strict=True):
                if not w or any(ch.isspace() for ch in w):
                    raise ValueError(f"word {w!r} is empty or holds whitespace")
                f.write(w + " " + " ".join(fmt % x for x in row) + "\n")


def load_word2vec(path: str | Path) -> Embedding:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found")
    with open(path, encoding="utf-8") as f:
        header = f.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise DataError(f"{path}:1: expected a header '<count> <dim>'")
        n, d = int(header[0]), int(header[1])
        words, rows = [], np.empty((n, d), dtype=np.float32)
        for line_no, line in enumerate(f, start=2):
            parts = line.rstrip("\n").split(" ")
            if len(parts) != d + 1:
                raise DataError(
                    f"{path}:{line_no}: expected a word and {d} numbers, "
                    f"got {len(parts) - 1} numbers"
                )
            if len(words) == n:
                raise DataError(f"{path}:{line_no}: more rows than the header's {n}")
            rows[len(words)] = np.asarray(parts[1:], dtype=np.float32)
            words.append(parts[0])
    if len(words) != n:
        raise DataError(f"{path}: header says {n} words, file has {len(words)}")
    return Embedding(words, rows)
