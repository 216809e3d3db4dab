"""Windowed co-occurrence counts of a corpus, as a sparse (V, V) matrix.

Pairs never cross a sentence boundary. Every context within ``window`` positions on
either side counts, with weight 1 (``weighting="uniform"``, for PPMI) or 1/distance
(``weighting="harmonic"``, GloVe's counting). The matrix is symmetric.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from firth.embeddings.corpus import Corpus

Weighting = Literal["uniform", "harmonic"]


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
        w = 1.0 if weighting == "uniform" else 1.0 / o
        data = np.full(len(a), w, dtype=np.float64)
        block = sp.coo_matrix((data, (a, b)), shape=(V, V)).tocsr()  # sums repeats
        total = total + block + block.T
    total.sum_duplicates()
    return total.tocsr()
