"""PPMI-SVD (Levy, Goldberg and Dagan 2015, "Improving Distributional Similarity
with Lessons Learned from Word Embeddings", sections 3.1-3.3).

PMI_a(w, c) = log P(w, c) / (P(w) P_a(c)) with the smoothed context distribution
P_a(c) = #(c)^a / sum_c' #(c')^a (context-distribution smoothing, a = 0.75),
shifted by log k (k: SGNS's number of negatives) and clipped at 0:
SPPMI = max(PMI_a - log k, 0). Vectors are U_d S_d^p from a truncated SVD
(scipy ``svds``; eigenvalue weighting p = 1 is the classic SVD, 0 uses U only), and
with context vectors (w+c) U_d S_d^p + V_d S_d^p (section 3.3).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

log = logging.getLogger(__name__)


def ppmi(
    counts: sp.csr_matrix, *, alpha: float = 0.75, shift: float = 1.0
) -> sp.csr_matrix:
    """Shifted positive PMI of a co-occurrence matrix (rows: words, cols: contexts).

    ``shift`` is k in log k (1 = no shift). Only nonzero counts are stored: a zero
    count has PMI -inf, clipped to 0.
    """
    if shift < 1:
        raise ValueError("shift k must be >= 1 (log k >= 0)")
    X = counts.tocoo()
    total = X.sum()
    if total <= 0:
        raise ValueError("empty co-occurrence matrix")
    row = np.asarray(counts.sum(axis=1)).ravel()
    col = np.asarray(counts.sum(axis=0)).ravel()
    col_a = col**alpha
    p_c = col_a / col_a.sum()
    p_w = row / total
    pmi = np.log(X.data / total) - np.log(p_w[X.row]) - np.log(p_c[X.col])
    pmi -= np.log(shift)
    keep = pmi > 1e-10  # rounding noise around 0 (independent pairs) is 0
    out = sp.coo_matrix(
        (pmi[keep], (X.row[keep], X.col[keep])), shape=counts.shape
    ).tocsr()
    log.info("PPMI: %d of %d nonzero counts are positive", keep.sum(), X.nnz)
    return out


def svd_factors(
    matrix: sp.csr_matrix, *, dim: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truncated SVD: U (V, dim), S (dim,) largest first, and V (C, dim), each
    singular vector's sign fixed (its largest entry in U positive)."""
    if not 0 < dim < min(matrix.shape):
        raise ValueError(f"dim must lie in 1..{min(matrix.shape) - 1}")
    rng = np.random.default_rng(seed)
    v0 = rng.uniform(-1, 1, size=min(matrix.shape))
    U, S, Vt = svds(matrix.astype(np.float64), k=dim, v0=v0)
    order = np.argsort(-S)
    U, S, V = U[:, order], S[order], Vt[order].T
    # Fix the sign of each singular vector (svds leaves it arbitrary).
    signs = np.sign(U[np.abs(U).argmax(axis=0), np.arange(dim)])
    return U * signs, S, V * signs


def svd_vectors(
    matrix: sp.csr_matrix, *, dim: int, power: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """U_d S_d^power (V, dim) and the singular values (dim,), largest first."""
    U, S, _ = svd_factors(matrix, dim=dim, seed=seed)
    return (U * S**power).astype(np.float32), S


def weighted(
    U: np.ndarray, S: np.ndarray, V: np.ndarray, *, eig: float, context: bool
) -> np.ndarray:
    """Word vectors U S^eig, plus the context vectors V S^eig for w+c."""
    out = U * S**eig
    if context:
        out = out + V * S**eig
    return out.astype(np.float32)
