"""Hard debiasing (Bolukbasi et al. 2016) and its recoverability checks (Gonen
and Goldberg 2019, "Lipstick on a Pig").

Vectors are unit rows (V, d) throughout, as in Bolukbasi et al.

- The gender direction g: each definitional pair (f, m) is centred on its mean,
  both centred vectors are stacked, and g is their first principal component
  (no further centring: the stacked vectors already have mean 0), oriented so that
  m - f projects positively on average. Its explained-variance ratio says how
  one-dimensional the pairs' differences are (0.6 in Bolukbasi's w2vNEWS).
- Neutralise: every word outside the gender-specific set loses its component on
  g and is renormalised to unit length.
- Equalise: each equalise pair (a, b) (also in title and upper case) becomes
  (nu + z g, nu - z g) with nu their mean without its g component and
  z = sqrt(1 - |nu|^2), signed as (a - b) . g was; both stay unit vectors, equally
  far from every neutralised word.
- Recoverability: the ``n`` words most aligned with g and the ``n`` most aligned
  with -g in the original vectors (among the ``restrict`` most frequent, gender-
  specific and pair words excluded) are labelled male / female by that original
  projection. Then, in the debiased vectors: k-means with two clusters, scored by
  the accuracy of the better cluster-to-label assignment; and an RBF-kernel SVM's
  cross-validated accuracy (``folds`` stratified folds) at predicting the label.
  Both are 0.5 by chance (the classes are balanced); Gonen and Goldberg found
  92.5% and 88.9% on debiased GloVe and word2vec vectors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from firth.bias.weat import cover
from firth.errors import DataError

log = logging.getLogger(__name__)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float64."""
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class Direction:
    vector: np.ndarray  # (d,) unit
    explained: list[float]  # variance ratio of the first components (up to 10)
    pairs: list[tuple[str, str]]  # the definitional pairs covered


def gender_direction(
    unit: np.ndarray, index: dict[str, int], pairs: tuple[tuple[str, str], ...]
) -> Direction:
    """g from the covered definitional ``pairs`` (female, male) of ``unit``."""
    used, centred, diffs = [], [], []
    for f, m in pairs:
        cf, cm = cover((f,), index), cover((m,), index)
        if not cf.rows or not cm.rows:
            continue
        vf, vm = unit[cf.rows[0]], unit[cm.rows[0]]
        mid = (vf + vm) / 2
        centred += [vf - mid, vm - mid]
        diffs.append(vm - vf)
        used.append((cf.words[0], cm.words[0]))
    if len(used) < 2:
        raise DataError(
            f"{len(used)} of the {len(pairs)} definitional pairs are in the "
            "vocabulary; the gender direction needs at least 2"
        )
    x = np.stack(centred)  # (2P, d)
    _, sv, vt = np.linalg.svd(x, full_matrices=False)
    g = vt[0]
    if float(np.mean(np.stack(diffs) @ g)) < 0:
        g = -g
    var = sv**2
    return Direction(g / np.linalg.norm(g), list(var[:10] / var.sum()), used)


def neutralise(unit: np.ndarray, g: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Every row not flagged in ``keep`` (V,) without its g component, unit again;
    flagged rows unchanged."""
    out = unit.copy()
    drop = ~keep
    out[drop] -= np.outer(out[drop] @ g, g)
    return unit_rows(out)


def equalise(
    unit: np.ndarray,
    g: np.ndarray,
    index: dict[str, int],
    pairs: tuple[tuple[str, str], ...],
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Each pair present (as written, in lower, title and upper case) made
    symmetric about the space orthogonal to g; returns the vectors and the pairs
    equalised."""
    out = unit.copy()
    done = []
    variants = []
    for a, b in pairs:
        for case in (str.lower, str.title, str.upper):
            variants.append((case(a), case(b)))
    for a, b in dict.fromkeys(variants):  # each distinct pair once, in order
        if a not in index or b not in index:
            continue
        ia, ib = index[a], index[b]
        mu = (out[ia] + out[ib]) / 2
        nu = mu - (mu @ g) * g
        z = np.sqrt(max(1.0 - float(nu @ nu), 0.0))
        if (out[ia] - out[ib]) @ g < 0:
            z = -z
        out[ia], out[ib] = nu + z * g, nu - z * g
        done.append((a, b))
    return out, done


def hard_debias(
    unit: np.ndarray,
    words: list[str],
    g: np.ndarray,
    *,
    specific: frozenset[str],
    equalise_pairs: tuple[tuple[str, str], ...],
) -> tuple[np.ndarray, dict]:
    """Bolukbasi's neutralise-and-equalise on unit rows ``unit`` (rows in
    ``words`` order); returns the debiased unit rows and what was done."""
    index = {w: i for i, w in enumerate(words)}
    lowered = {w.lower() for w in specific}
    keep = np.array([w.lower() in lowered for w in words])
    out = neutralise(unit, g, keep)
    out, done = equalise(out, g, index, equalise_pairs)
    return unit_rows(out), {
        "kept_gender_specific": int(keep.sum()),
        "neutralised": int((~keep).sum()),
        "equalised_pairs": len(done),
    }


@dataclass(frozen=True)
class Space:
    """Vectors ready for the bias measurements: unit rows, the gender direction
    of Bolukbasi's definitional pairs, and the hard-debiased unit rows."""

    words: list[str]
    index: dict[str, int]
    unit: np.ndarray
    direction: Direction
    debiased: np.ndarray
    done: dict  # what hard debiasing did (hard_debias)


def debiased_space(words: list[str], matrix: np.ndarray) -> Space:
    """``matrix``'s rows (in ``words`` order) as unit rows, their gender
    direction (firth.bias.wordlists' definitional pairs) and hard-debiased
    (its gender-specific words and equalise pairs): what the evaluate-bias stage
    and ``firth bias`` both measure."""
    from firth.bias.wordlists import DEFINITIONAL_PAIRS, EQUALIZE_PAIRS, GENDER_SPECIFIC

    index = {w: i for i, w in enumerate(words)}
    unit = unit_rows(matrix)
    direction = gender_direction(unit, index, DEFINITIONAL_PAIRS)
    debiased, done = hard_debias(
        unit,
        words,
        direction.vector,
        specific=GENDER_SPECIFIC,
        equalise_pairs=EQUALIZE_PAIRS,
    )
    return Space(words, index, unit, direction, debiased, done)


@dataclass(frozen=True)
class Biased:
    """The most gender-aligned words of the original vectors and their labels."""

    words: list[str]
    rows: np.ndarray  # (2n,)
    male: np.ndarray  # (2n,) bool: projection on g > 0 in the original vectors
    projection: np.ndarray  # (2n,) the original projection


def most_biased(
    unit: np.ndarray,
    words: list[str],
    g: np.ndarray,
    *,
    n: int,
    restrict: int,
    exclude: set[str],
) -> Biased:
    """The ``n`` most male- and ``n`` most female-aligned of the first
    ``restrict`` words (0 = all), ``exclude`` (lowercased) left out."""
    limit = len(words) if restrict <= 0 else min(restrict, len(words))
    cand = np.array(
        [
            i
            for i in range(limit)
            if words[i].lower() not in exclude and any(c.isalpha() for c in words[i])
        ]
    )
    proj = unit[cand] @ g
    order = np.argsort(proj, kind="stable")
    if len(order) < 2 * n:
        log.warning(
            "%d candidate words, fewer than 2 x %d: using %d a side",
            len(order),
            n,
            len(order) // 2,
        )
        n = len(order) // 2
    if n < 2:
        raise DataError(
            f"{len(order)} candidate words for the recoverability checks; they "
            "need at least 4 (a smaller vocabulary cannot be tested)"
        )
    female, male = order[:n], order[::-1][:n]
    pick = np.concatenate([male, female])
    rows = cand[pick]
    return Biased(
        [words[i] for i in rows], rows, np.arange(2 * n) < n, proj[pick].copy()
    )


def kmeans_correct(x: np.ndarray, male: np.ndarray, *, seed: int) -> np.ndarray:
    """Per word, whether 2-means clustering of ``x`` put it with its label, under
    the better of the two cluster-to-label assignments."""
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=2, n_init=10, random_state=seed).fit(x)
    hit = (km.labels_ == 1) == male
    return hit if hit.mean() >= 0.5 else ~hit


def svm_correct(
    x: np.ndarray, male: np.ndarray, *, folds: int, seed: int
) -> np.ndarray:
    """Per word, whether an RBF SVM trained on the other folds predicts its label
    (stratified, shuffled folds)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.svm import SVC

    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    pred = cross_val_predict(SVC(kernel="rbf"), x, male, cv=cv)
    return pred == male
