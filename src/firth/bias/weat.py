"""The Word Embedding Association Test (Caliskan, Bryson and Narayanan 2017).

For target sets X, Y and attribute sets A, B of unit word vectors,

    s(w, A, B)  = mean_{a in A} cos(w, a) - mean_{b in B} cos(w, b)
    S(X, Y)     = sum_{x in X} s(x, A, B) - sum_{y in Y} s(y, A, B)
    d           = (mean_{x in X} s(x) - mean_{y in Y} s(y)) / sd_{w in X u Y} s(w)

with the sample standard deviation (ddof 1). The one-sided p-value is the share of
the equal-size re-partitions (X_i, Y_i) of X u Y with S(X_i, Y_i) > S(X, Y):
every partition where there are at most ``permutations`` of them, otherwise
``permutations`` random ones (then p = (count + 1) / (permutations + 1), so a
sampled p is never 0). A set is looked up word by word as written, then
lowercased; a test runs only where each of its four sets keeps ``min_words``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from firth.bias.wordlists import WeatTest, WordSet


@dataclass(frozen=True)
class Covered:
    """The rows of a word set's words in the vocabulary, and the words missing."""

    words: list[str]
    rows: list[int]
    missing: list[str]


def cover(words: WordSet | tuple[str, ...], index: dict[str, int]) -> Covered:
    """``words`` looked up as written, then lowercased (the first found wins;
    a word found twice, e.g. 'Art' and 'art', counts once)."""
    seq = words.words if isinstance(words, WordSet) else words
    found, rows, missing = [], [], []
    for w in seq:
        key = w if w in index else w.lower() if w.lower() in index else None
        if key is None:
            missing.append(w)
        elif index[key] not in rows:
            found.append(key)
            rows.append(index[key])
    return Covered(found, rows, missing)


def associations(unit: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """s(w, A, B) of every row of ``unit`` (N, d) given unit attribute vectors
    ``a`` (|A|, d) and ``b`` (|B|, d): (N,)."""
    return (unit @ a.T).mean(1) - (unit @ b.T).mean(1)


def effect_size(s_x: np.ndarray, s_y: np.ndarray) -> float:
    """Caliskan's d from the associations of X and Y (nan if undefined)."""
    both = np.concatenate([s_x, s_y])
    sd = both.std(ddof=1) if len(both) > 1 else 0.0
    if not len(s_x) or not len(s_y) or sd == 0:
        return math.nan
    return float((s_x.mean() - s_y.mean()) / sd)


def p_value(
    s_x: np.ndarray, s_y: np.ndarray, *, permutations: int, seed: int
) -> tuple[float, bool]:
    """One-sided permutation p-value of S(X, Y) and whether it is exact."""
    s = np.concatenate([s_x, s_y])
    n, k = len(s), len(s_x)
    total = s.sum()
    observed = 2 * s_x.sum() - total  # sum_X - sum_Y
    if math.comb(n, k) <= permutations:
        sums = np.fromiter(
            (s[list(c)].sum() for c in combinations(range(n), k)),
            dtype=np.float64,
            count=math.comb(n, k),
        )
        stats = 2 * sums - total
        return float((stats > observed + 1e-12).mean()), True
    rng = np.random.default_rng(seed)
    idx = np.argsort(rng.random((permutations, n)), axis=1)[:, :k]  # random X_i
    stats = 2 * s[idx].sum(1) - total
    return float(((stats > observed + 1e-12).sum() + 1) / (permutations + 1)), False


@dataclass(frozen=True)
class WeatResult:
    """One WEAT on one set of vectors."""

    key: str
    coverage: dict[str, int]  # covered words per set (x, y, a, b)
    missing: dict[str, list[str]]
    ran: bool  # every set kept min_words
    effect_size: float | None = None
    p_value: float | None = None
    exact: bool | None = None
    x_words: tuple[str, ...] = ()
    y_words: tuple[str, ...] = ()
    s_x: tuple[float, ...] = ()  # the association of each covered target word
    s_y: tuple[float, ...] = ()


def weat(
    test: WeatTest,
    unit: np.ndarray,
    index: dict[str, int],
    *,
    min_words: int,
    permutations: int,
    seed: int,
) -> WeatResult:
    """``test`` on unit vectors ``unit`` (V, d) whose rows ``index`` names."""
    sets = {k: cover(getattr(test, k), index) for k in "xyab"}
    coverage = {k: len(c.rows) for k, c in sets.items()}
    missing = {k: c.missing for k, c in sets.items()}
    if min(coverage.values()) < min_words:
        return WeatResult(test.key, coverage, missing, ran=False)
    a, b = unit[sets["a"].rows], unit[sets["b"].rows]
    s_x = associations(unit[sets["x"].rows], a, b)
    s_y = associations(unit[sets["y"].rows], a, b)
    p, exact = p_value(s_x, s_y, permutations=permutations, seed=seed)
    return WeatResult(
        test.key,
        coverage,
        missing,
        ran=True,
        effect_size=effect_size(s_x, s_y),
        p_value=p,
        exact=exact,
        x_words=tuple(sets["x"].words),
        y_words=tuple(sets["y"].words),
        s_x=tuple(float(v) for v in s_x),
        s_y=tuple(float(v) for v in s_y),
    )
