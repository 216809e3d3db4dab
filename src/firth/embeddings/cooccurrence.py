"""Windowed co-occurrence counts of a corpus, as a sparse (V, V) matrix.

Pairs never cross a sentence boundary. Every context within ``window`` positions on
either side counts, with weight 1 (``weighting="uniform"``), (m - d + 1) / m at
distance d (``weighting="dynamic"``: the expected weight of word2vec's dynamic
window, which draws each window size uniformly from 1..m; Levy, Goldberg and Dagan
2015 give PPMI the same weighting to match SGNS) or 1/d (``weighting="harmonic"``,
GloVe's counting). The matrix is symmetric.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from firth.embeddings.corpus import Corpus

Weighting = Literal["uniform", "dynamic", "harmonic"]


def distance_weight(weighting: Weighting, d: int, window: int) -> float:
    """The weight of a context at distance ``d`` (1..window)."""
    if weighting == "uniform":
        return 1.0
    if weighting == "dynamic":
        return (window - d + 1) / window
    return 1.0 / d


def cooccurrence(
    corpus: Corpus,
    *,
    window: int,
    weighting: Weighting = "uniform",
    chunk: int = 4_000_000,
    progress: bool = True,
) -> sp.csr_matrix:
    """Symmetric co-occurrence counts X[w, c] (float64), V x V, CSR."""
    if window < 1:
        raise ValueError("window must be at least 1")
    V = len(corpus.vocab)
    ids, sent = corpus.ids, corpus.sentence
    N = len(ids)
    total = sp.csr_matrix((V, V), dtype=np.float64)
    steps = [
        (o, s) for o in range(1, window + 1) for s in range(0, max(N - o, 0), chunk)
    ]
    for o, s in tqdm(steps, desc="co-occurrences", disable=not progress, leave=False):
        e = min(N - o, s + chunk)
        a, b = ids[s:e], ids[s + o : e + o]
        same = sent[s:e] == sent[s + o : e + o]
        a, b = a[same], b[same]
        w = distance_weight(weighting, o, window)
        data = np.full(len(a), w, dtype=np.float64)
        block = sp.coo_matrix((data, (a, b)), shape=(V, V)).tocsr()  # sums repeats
        total = total + block + block.T
    total.sum_duplicates()
    return total.tocsr()
