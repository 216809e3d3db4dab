"""SGNS and PPMI-SVD compared as Levy, Goldberg and Dagan (2015, "Improving
Distributional Similarity with Lessons Learned from Word Embeddings") compare
them: the same window (size and weighting) and the same subsampling
(``embeddings.common``), and each method's own setting chosen from one grid of the
hyperparameters they share (``embeddings.tune``) on development data, never on
the reported benchmark.

- negatives k: SGNS draws k negatives; PPMI is shifted by log k (section 3.2);
- cds: context-distribution smoothing, SGNS's noise distribution unigram^cds and
  PPMI's P_cds(c) (section 3.1);
- context_vectors: word vectors w, or w + c (section 3.3);
- eig (PPMI-SVD only): eigenvalue weighting, U S^eig (section 3.3).

Development data: every similarity set is split once into two halves by a hash of
each pair (``half``), the same in every run and profile. A method's setting is the
one with the highest mean Spearman over the dev halves of the sets (ties: the first
in grid order); the report scores the test halves, and analogies in full (no
analogy question chooses anything).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from firth.embeddings.config import EmbeddingsTune
from firth.embeddings.similarity import Pair, evaluate_pairs
from firth.embeddings.vectors import Embedding

DEV, TEST = "dev", "test"
TUNED = ("sgns", "ppmi-svd")
# the grid keys each tuned method reads (SGNS has no eigenvalue weighting)
KEYS = {
    "sgns": ("negatives", "cds", "context_vectors"),
    "ppmi-svd": ("negatives", "cds", "eig", "context_vectors"),
}


def half(a: str, b: str) -> str:
    """DEV or TEST for the pair (a, b): the parity of the first byte of the
    sha256 of the lower-cased pair."""
    digest = hashlib.sha256(f"{a.lower()}\t{b.lower()}".encode()).digest()
    return DEV if digest[0] % 2 == 0 else TEST


def halves(pairs: Sequence[Pair]) -> dict[str, list[Pair]]:
    """The dev and test halves of a similarity set, in file order."""
    out: dict[str, list[Pair]] = {DEV: [], TEST: []}
    for p in pairs:
        out[half(p[0], p[1])].append(p)
    return out


def grid(tune: EmbeddingsTune, method: str) -> list[dict]:
    """Every setting of ``method``'s grid, in grid order (the keys' order in
    ``KEYS``, the values' order in params)."""
    keys = KEYS[method]
    values = [getattr(tune, k) for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def label(setting: Mapping) -> str:
    """'k=5 cds=0.75 eig=0.5 w+c' for a setting."""
    parts = [f"k={setting['negatives']}", f"cds={setting['cds']:g}"]
    if "eig" in setting:
        parts.append(f"eig={setting['eig']:g}")
    parts.append("w+c" if setting["context_vectors"] else "w")
    return " ".join(parts)


def dev_scores(
    words: list[str], vectors: np.ndarray, dev: Mapping[str, Sequence[Pair]]
) -> dict[str, float | None]:
    """Spearman on the dev half of every similarity set (None: under 3 pairs
    covered)."""
    emb = Embedding(words, vectors)
    out = {}
    for name, pairs in dev.items():
        rho = evaluate_pairs(emb, list(pairs))["spearman"]
        out[name] = None if math.isnan(rho) else round(float(rho), 6)
    return out


def criterion(scores: Mapping[str, float | None]) -> float:
    """The mean dev Spearman over the sets that could be scored (-inf: none)."""
    got = [v for v in scores.values() if v is not None]
    return float(np.mean(got)) if got else -math.inf


def choose(
    words: list[str],
    candidates: Sequence[tuple[dict, np.ndarray]],
    dev: Mapping[str, Sequence[Pair]],
) -> tuple[int, list[dict]]:
    """The index of the candidate (setting, vectors) with the best dev criterion,
    and the table of every candidate's dev scores."""
    table, best, best_score = [], 0, -math.inf
    for i, (setting, vectors) in enumerate(candidates):
        scores = dev_scores(words, vectors, dev)
        c = criterion(scores)
        table.append(
            {
                "setting": label(setting),
                **setting,
                "dev_spearman": scores,
                "dev_mean": None if math.isinf(c) else round(c, 6),
            }
        )
        if c > best_score:
            best, best_score = i, c
    for i, row in enumerate(table):
        row["chosen"] = i == best
    return best, table
