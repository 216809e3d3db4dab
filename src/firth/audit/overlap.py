"""Contamination audit: which evaluation examples a model could have seen in training.

Three tests per example, all on normalised text (lowercased, punctuation removed,
whitespace words), in the manner of the GPT-3 paper's appendix C:

- **n-gram overlap**: dirty if any of the example's word n-grams occurs in a training
  line (n-grams never cross a line). An example shorter than n is dirty if all of it
  occurs in one training line. n defaults to the 5th percentile of the evaluation
  examples' lengths, clamped to 8..13.
- **exact duplicate**: the whole normalised example equals a whole training line.
- **near duplicate**: MinHash LSH (datasketch) over word shingles finds a training
  line whose Jaccard similarity with the example is at least the threshold.

Scale: only the evaluation side is held in memory. Each distinct word gets a stable
64-bit hash, each n-gram a polynomial hash of its words' hashes (computed with
numpy over a chunk of training lines at a time), and a chunk's hashes are looked up
in the sorted array of the evaluation n-grams' hashes; the training corpus is
streamed once and never stored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

_PUNCT = re.compile(r"[^\w\s]|_")
_MULT = np.uint64(0x100000001B3)  # the FNV-64 prime, as the polynomial base


def words(text: str) -> list[str]:
    """Lowercased whitespace words with punctuation removed."""
    return _PUNCT.sub(" ", text.lower()).split()


def choose_n(lengths: Iterable[int], percentile: float, lo: int, hi: int) -> int:
    """The ``percentile``-th percentile of the example lengths, clamped to lo..hi."""
    lengths = [n for n in lengths if n > 0]
    if not lengths:
        return lo
    p = int(np.percentile(np.asarray(lengths), percentile, method="lower"))
    return max(lo, min(hi, p))


class _Words:
    """Stable 64-bit word hashes (blake2b), cached per distinct word."""

    def __init__(self):
        self.cache: dict[str, int] = {}

    def __call__(self, ws: list[str]) -> np.ndarray:
        out = np.empty(len(ws), dtype=np.uint64)
        cache = self.cache
        for i, w in enumerate(ws):
            h = cache.get(w)
            if h is None:
                h = int.from_bytes(
                    hashlib.blake2b(w.encode(), digest_size=8).digest(), "little"
                )
                cache[w] = h
            out[i] = h
        return out


def _gram_hashes(x: np.ndarray, n: int) -> np.ndarray:
    """Polynomial hashes of every window of n consecutive entries of x (uint64,
    wrapping arithmetic)."""
    m = len(x) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h = h * _MULT + x[k : k + m]
    return h


@dataclass
class AuditResult:
    n: int
    ngram: np.ndarray  # bool per example
    exact: np.ndarray
    near: np.ndarray
    lines_read: int = 0
    words_read: int = 0

    @property
    def dirty(self) -> np.ndarray:
        return self.ngram | self.exact | self.near


class OverlapAudit:
    """Audit ``examples`` (raw texts) against training lines streamed to ``scan``."""

    def __init__(
        self,
        examples: list[str],
        *,
        n: int,
        near_threshold: float,
        shingle: int,
        num_perm: int = 128,
        seed: int = 1,
    ):
        self.n, self.shingle = n, shingle
        self.hash = _Words()
        self.norm = [words(e) for e in examples]
        # every needed window length -> sorted unique hashes, and hash -> examples
        self.owners: dict[int, dict[int, list[int]]] = {}
        for i, ws in enumerate(self.norm):
            if not ws:
                continue
            length = min(n, len(ws))
            hs = _gram_hashes(self.hash(ws), length)
            table = self.owners.setdefault(length, {})
            for h in np.unique(hs).tolist():
                table.setdefault(h, []).append(i)
        self.sorted = {
            k: np.array(sorted(v), dtype=np.uint64) for k, v in self.owners.items()
        }
        self.whole: dict[tuple, list[int]] = {}
        for i, ws in enumerate(self.norm):
            if ws:
                self.whole.setdefault(tuple(ws), []).append(i)
        self.ngram = np.zeros(len(examples), dtype=bool)
        self.exact = np.zeros(len(examples), dtype=bool)
        self.near = np.zeros(len(examples), dtype=bool)
        self.lines = self.words_read = 0
        self.lsh = None
        if near_threshold < 1.0:
            from datasketch import MinHashLSH

            self.num_perm, self.seed = num_perm, seed
            self.lsh = MinHashLSH(threshold=near_threshold, num_perm=num_perm)
            mh = self._minhashes(self.norm)
            for i, m in enumerate(mh):
                if m is not None:
                    self.lsh.insert(i, m)

    @classmethod
    def from_settings(
        cls, examples: list[str], cfg, *, near: bool = True
    ) -> OverlapAudit:
        """An audit of ``examples`` with the ``audit`` params section ``cfg``: n fixed
        there or by its percentile rule; ``near=False`` skips MinHash."""
        n = cfg.ngram or choose_n(
            (len(words(e)) for e in examples), cfg.percentile, cfg.min_n, cfg.max_n
        )
        return cls(
            examples,
            n=n,
            near_threshold=cfg.near_threshold if near else 1.0,
            shingle=cfg.shingle,
            num_perm=cfg.num_perm,
        )

    def _shingles(self, ws: list[str]) -> list[bytes]:
        k = min(self.shingle, len(ws))
        return [" ".join(ws[j : j + k]).encode() for j in range(len(ws) - k + 1)]

    def _minhashes(self, norm: list[list[str]]) -> list:
        from datasketch import MinHash

        out = []
        for ws in norm:
            if not ws:
                out.append(None)
                continue
            m = MinHash(num_perm=self.num_perm, seed=self.seed)
            m.update_batch(self._shingles(ws))
            out.append(m)
        return out

    def scan(self, lines: Iterable[str], *, chunk: int = 20000) -> None:
        """Stream training lines (each its own unit: n-grams never cross lines)."""
        buf: list[list[str]] = []
        for line in lines:
            ws = words(line)
            if ws:
                buf.append(ws)
            if len(buf) >= chunk:
                self._chunk(buf)
                buf = []
        if buf:
            self._chunk(buf)

    def _chunk(self, lines: list[list[str]]) -> None:
        self.lines += len(lines)
        flat = [w for ws in lines for w in ws]
        self.words_read += len(flat)
        x = self.hash(flat)
        line_of = np.repeat(np.arange(len(lines)), [len(ws) for ws in lines])
        for length, targets in self.sorted.items():
            h = _gram_hashes(x, length)
            if not len(h):
                continue
            inside = line_of[: len(h)] == line_of[length - 1 :]
            hit = inside & np.isin(h, targets)
            table = self.owners[length]
            for v in np.unique(h[hit]).tolist():
                self.ngram[table[v]] = True
        for ws in lines:
            for i in self.whole.get(tuple(ws), ()):
                self.exact[i] = True
        if self.lsh is not None:
            for m in self._minhashes(lines):
                for i in self.lsh.query(m):
                    self.near[i] = True

    def result(self) -> AuditResult:
        return AuditResult(
            self.n,
            self.ngram.copy(),
            self.exact.copy(),
            self.near.copy(),
            self.lines,
            self.words_read,
        )


def read_lines(paths: Iterable, column: int | None = None) -> Iterator[str]:
    """Lines of text files (``column``: that tab-separated field of each line)."""
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if column is not None:
                    parts = line.split("\t")
                    line = parts[column] if column < len(parts) else ""
                yield line
