"""Word similarity: Spearman correlation between human ratings (WordSim-353,
SimLex-999) and cosine similarity, over the pairs whose words have vectors.

Words are matched case-insensitively (upper-cased, most frequent variant wins), as
gensim's ``evaluate_word_pairs`` does. Coverage is the share of pairs scored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

from firth.embeddings.vectors import Embedding
from firth.errors import DataError
from firth.sources.formats import read_similarity

Pair = tuple[str, str, float]


def read_pairs(path: str | Path) -> list[Pair]:
    """The canonical ``word1<TAB>word2<TAB>score`` file of a similarity set."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found")
    out = list(read_similarity(path))
    if not out:
        raise DataError(f"{path}: no pairs")
    return out


def _lookup(emb: Embedding) -> dict[str, int]:
    lookup: dict[str, int] = {}
    for i, w in enumerate(emb.words):
        lookup.setdefault(w.upper(), i)
    return lookup


def cosines(
    emb: Embedding,
    pairs: list[Pair],
    *,
    fallback: Callable[[str], np.ndarray | None] | None = None,
) -> list[float | None]:
    """The cosine of every pair, None where a word has no vector."""
    lookup = _lookup(emb)
    unit = emb.unit

    def vec(w: str) -> np.ndarray | None:
        i = lookup.get(w.upper())
        if i is not None:
            return unit[i]
        if fallback is not None:
            v = fallback(w)
            if v is not None and np.linalg.norm(v) > 0:
                return v / np.linalg.norm(v)
        return None

    out: list[float | None] = []
    for a, b, _ in pairs:
        va, vb = vec(a), vec(b)
        out.append(None if va is None or vb is None else float(va @ vb))
    return out


def evaluate_pairs(
    emb: Embedding,
    pairs: list[Pair],
    *,
    fallback: Callable[[str], np.ndarray | None] | None = None,
) -> dict:
    """Spearman and Pearson over covered pairs, and coverage.

    ``fallback`` gives a vector for a word outside the vocabulary (subword models);
    pairs scored through it are counted in ``covered_with_fallback``.
    """
    lookup = _lookup(emb)
    cos = cosines(emb, pairs, fallback=fallback)
    gold, model, in_vocab = [], [], 0
    for (a, b, score), c in zip(pairs, cos, strict=True):
        if c is None:
            continue
        in_vocab += a.upper() in lookup and b.upper() in lookup
        gold.append(score)
        model.append(c)
    result = {
        "pairs": len(pairs),
        "covered": len(gold),
        "coverage": len(gold) / len(pairs),
        "covered_in_vocab": in_vocab,
    }
    if len(gold) >= 3:
        result["spearman"] = float(stats.spearmanr(gold, model).statistic)
        result["pearson"] = float(stats.pearsonr(gold, model).statistic)
    else:
        result["spearman"] = result["pearson"] = float("nan")
    return result
