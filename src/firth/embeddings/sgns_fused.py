"""The fused CPU step of SGNS (``kernel="fused"``): one compiled pass per batch that
draws each centre's window and negatives and accumulates the batch's gradients and
row curvatures, without building the (pairs, K+1) score matrix.

The step is the same as ``sgns.Tables.step`` with the ``sparse`` kernel (summed batch
gradients at the batch's starting tables, then the optimiser's row update); what
differs is where the randomness comes from and how the work is split:

- Random draws come from a counter-based generator (splitmix64 over (seed, step,
  centre index, draw index)), so every centre's window and negatives are a pure
  function of those four numbers: the same on any number of threads, and a resumed
  run needs only the step count. The window b ~ U{1..m} and the alias-table draw
  of each negative follow ``sgns.window_pairs`` and ``sgns.alias_sample``.
- Each thread takes the centres whose input row it owns (a hash of the word id), so
  the input rows' gradients need one buffer and only the touched rows are updated;
  context rows (every negative) get one buffer per thread, added in thread order.
  The same seed and thread count give the same vectors; another thread count
  changes only the order of float sums over the context rows.

Why: on two CPU cores the ``sparse`` step spent 42% of its time in the CSR products
and most of the rest in single-threaded scatter, sort and sampling kernels
(benchmarks/results/sgns_threads.json); gensim's compiled per-pair loop was 2x
faster at one thread and 2.5x at two. Conventions as in ``sgns``: W input rows,
C context rows, the per-pair loss -log s(u_o.v_c) - sum_k log s(-u_k.v_c).
"""

from __future__ import annotations

import numpy as np
from numba import config, njit, prange, set_num_threads

# numba's own thread pool, not OpenMP's: torch runs its kernels on libgomp, and a
# shared OpenMP runtime lets either library's thread setting change the other's.
config.THREADING_LAYER = "workqueue"

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S16, _S27, _S30, _S31, _S32 = (np.uint64(s) for s in (16, 27, 30, 31, 32))


@njit(inline="always")
def _mix(x):
    """splitmix64's finaliser (a bijection of uint64 with good avalanche)."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@njit(inline="always")
def _below(r, n):
    """A draw in 0..n-1 from the high 32 bits of r (multiply-shift)."""
    return np.int64(((r >> _S32) * np.uint64(n)) >> _S32)


@njit(inline="always")
def _unit(r):
    """A float in [0, 1) from the low 24 bits of r (float32's mantissa)."""
    return np.float32(r & np.uint64(0xFFFFFF)) * np.float32(1.0 / 16777216.0)


@njit(inline="always")
def _centre_pairs(i, key, pos, first, last, kept, prob, alias, window, dynamic, K, out):
    """Draw the pairs of the batch's centre i into ``out`` (rows of K+1 ids: the
    context, then K negatives); returns how many rows were written."""
    state = _mix(key ^ (np.uint64(i) * _GOLDEN))
    p = pos[i]
    if dynamic:
        state += _GOLDEN
        b = 1 + _below(_mix(state), window)
    else:
        b = window
    lo = max(first[p], p - b)
    hi = min(last[p], p + b)
    V = prob.shape[0]
    n = 0
    for q in range(lo, hi + 1):
        if q == p:
            continue
        out[n, 0] = kept[q]
        for k in range(1, K + 1):
            state += _GOLDEN
            r = _mix(state)
            pick = _below(r, V)
            out[n, k] = pick if _unit(r) < prob[pick] else alias[pick]
        n += 1
    return n


@njit(parallel=True, cache=True)
def draw_pairs(key, pos, first, last, kept, prob, alias, window, dynamic, K):
    """Every pair of the batch, as ``batch_gradients`` draws them: centre ids (P,)
    and targets (P, K+1). For tests and inspection; training never builds them."""
    B = pos.shape[0]
    width = 2 * window
    buf = np.empty((B, width, K + 1), dtype=np.int64)
    count = np.empty(B, dtype=np.int64)
    for i in prange(B):
        count[i] = _centre_pairs(
            i, key, pos, first, last, kept, prob, alias, window, dynamic, K, buf[i]
        )
    P = count.sum()
    centre = np.empty(P, dtype=np.int64)
    targets = np.empty((P, K + 1), dtype=np.int64)
    j = 0
    for i in range(B):
        for n in range(count[i]):
            centre[j] = kept[pos[i]]
            targets[j] = buf[i, n]
            j += 1
    return centre, targets


@njit(inline="always")
def _dot(W, w, C, c, d):
    """W[w] . C[c] in a fixed order: 8 interleaved partial sums (lanes a compiler
    can pack into one vector without reordering), then the lanes in order, then
    the tail. No fastmath anywhere: every build of the kernel gives the same bits
    (with reassociation allowed, a freshly compiled and a cached kernel differed)."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    end = d - d % 8
    for k in range(0, end, 8):
        a0 += W[w, k] * C[c, k]
        a1 += W[w, k + 1] * C[c, k + 1]
        a2 += W[w, k + 2] * C[c, k + 2]
        a3 += W[w, k + 3] * C[c, k + 3]
        a4 += W[w, k + 4] * C[c, k + 4]
        a5 += W[w, k + 5] * C[c, k + 5]
        a6 += W[w, k + 6] * C[c, k + 6]
        a7 += W[w, k + 7] * C[c, k + 7]
    z = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    for k in range(end, d):
        z += W[w, k] * C[c, k]
    return z


@njit(inline="always")
def owner(w, T):
    """The thread that accumulates input row w (a multiplicative hash, so that
    frequent and rare ids spread evenly over the threads)."""
    return ((np.uint64(w) * np.uint64(2654435761)) >> _S16) % np.uint64(T)


@njit(parallel=True, cache=True)
def batch_gradients(
    W, C, c_norm, key, pos, first, last, kept, prob, alias, window, dynamic, K,
    floor, gW, hW, touched, gC, hC, loss, pairs,
):  # fmt: skip
    """Accumulate one batch into the gradient and curvature buffers.

    W (V, d) input vectors of the words (for subword SGNS, S @ Z), C (V, d)
    context vectors, c_norm (V,) = |C[c]|^2. For every pair (w, targets) with
    scores z_j = W[w].C[t_j] and g_j = s(z_j) - [j = 0]:
      gW[w] += sum_j g_j C[t_j]            (d/dW of the summed loss)
      gC[t, t_j] += g_j W[w]               (d/dC; t the thread)
      hW[w] += sum_j h_j |C[t_j]|^2,  hC[t, t_j] += h_j |W[w]|^2
    with h_j = max(s'(z_j), floor) (the Gauss-Newton curvature of
    ``sgns.row_curvature``); touched[w] = 1; loss[t] and pairs[t] get the summed
    pair loss and the number of pairs.

    Thread t takes the centres whose input row it owns (``owner``), so input rows
    need one buffer and are summed in batch order whatever the thread count; the
    context rows get one buffer per thread.
    """
    B = pos.shape[0]
    d = W.shape[1]
    T = gC.shape[0]
    for t in prange(T):
        out = np.empty((2 * window, K + 1), dtype=np.int64)
        gv = np.empty(d, dtype=np.float32)
        total = 0.0
        n_pairs = 0
        for i in range(B):
            w = kept[pos[i]]
            if owner(w, T) != t:
                continue
            n = _centre_pairs(
                i, key, pos, first, last, kept, prob, alias, window, dynamic, K, out
            )
            if n == 0:
                continue
            v_norm = np.float32(0.0)
            for k in range(d):
                gv[k] = 0.0
                v_norm += W[w, k] * W[w, k]
            hw = np.float32(0.0)
            for m in range(n):
                for j in range(K + 1):
                    c = out[m, j]
                    z = _dot(W, w, C, c, d)
                    # s = sigmoid(z) and the loss softplus(-z) (context) or
                    # softplus(z) (negative), from one exp of -|z|
                    e = np.exp(-abs(z))
                    s = np.float32(1.0) / (np.float32(1.0) + e)
                    if z < 0:
                        s = e * s
                    if j == 0:
                        g = s - np.float32(1.0)
                        total += max(-z, np.float32(0.0)) + np.log1p(e)
                    else:
                        g = s
                        total += max(z, np.float32(0.0)) + np.log1p(e)
                    for k in range(d):
                        gv[k] += g * C[c, k]
                        gC[t, c, k] += g * W[w, k]
                    h = max(s * (np.float32(1.0) - s), floor)
                    hC[t, c] += h * v_norm
                    hw += h * c_norm[c]
            for k in range(d):
                gW[w, k] += gv[k]
            hW[w] += hw
            touched[w] = 1
            n_pairs += n
        loss[t] = total
        pairs[t] = n_pairs


@njit(parallel=True, cache=True)
def reduce_threads(g, h):
    """Add the per-thread buffers into thread 0's and zero the others: g (T, V, d),
    h (T, V)."""
    T, V, d = g.shape
    for r in prange(V):
        for t in range(1, T):
            h[0, r] += h[t, r]
            h[t, r] = 0.0
            for k in range(d):
                g[0, r, k] += g[t, r, k]
                g[t, r, k] = 0.0


@njit(parallel=True, cache=True)
def damped_update_rows(X, g, h, touched, lr):
    """The damped SGD update X[r] -= lr / (1 + lr h[r]) g[r] of the touched rows
    (g (V, d), h (V,)); their buffers and flags are zeroed."""
    V, d = g.shape
    for r in prange(V):
        if touched[r] == 0:
            continue
        a = lr / (np.float32(1.0) + lr * h[r])
        for k in range(d):
            X[r, k] -= a * g[r, k]
            g[r, k] = 0.0
        h[r] = 0.0
        touched[r] = 0


@njit(parallel=True, cache=True)
def damped_update_threads(X, g, h, lr, norm):
    """The damped SGD update X[r] -= lr / (1 + lr h[r]) g[r] with g (T, V, d) and
    h (T, V) summed over the threads; the buffers are zeroed and norm[r] set to
    |X[r]|^2 (the next batch's c_norm)."""
    T, V, d = g.shape
    for r in prange(V):
        hr = np.float32(0.0)
        for t in range(T):
            hr += h[t, r]
            h[t, r] = 0.0
        a = lr / (np.float32(1.0) + lr * hr)
        for t in range(T):
            for k in range(d):
                X[r, k] -= a * g[t, r, k]
                g[t, r, k] = 0.0
        norm[r] = _row_norm(X, r)


@njit(inline="always")
def _row_norm(X, r):
    n = np.float32(0.0)
    for k in range(X.shape[1]):
        n += X[r, k] * X[r, k]
    return n


@njit(parallel=True, cache=True)
def row_norms(X, out):
    """out[r] = |X[r]|^2, summed as ``damped_update_threads`` sums it."""
    for r in prange(X.shape[0]):
        out[r] = _row_norm(X, r)


def batch_key(seed: int, step: int) -> np.uint64:
    """The counter key of one step: two rounds of the mix over (seed, step)."""
    with np.errstate(over="ignore"):
        k = _mix_py(np.uint64(seed) * _GOLDEN + np.uint64(0x5851F42D4C957F2D))
        return _mix_py(k ^ (np.uint64(step) * _M1))


def _mix_py(x: np.uint64) -> np.uint64:
    with np.errstate(over="ignore"):
        x = (x ^ (x >> _S30)) * _M1
        x = (x ^ (x >> _S27)) * _M2
        return x ^ (x >> _S31)


class Buffers:
    """The per-thread gradient and curvature buffers of both tables, zeroed."""

    def __init__(self, threads: int, rows_in: int, rows_out: int, dim: int):
        self.threads = threads
        self.gW = np.zeros((rows_in, dim), dtype=np.float32)
        self.hW = np.zeros(rows_in, dtype=np.float32)
        self.touched = np.zeros(rows_in, dtype=np.uint8)
        self.gC = np.zeros((threads, rows_out, dim), dtype=np.float32)
        self.hC = np.zeros((threads, rows_out), dtype=np.float32)
        self.c_norm = np.zeros(rows_out, dtype=np.float32)  # |C[c]|^2
        self.loss = np.zeros(threads, dtype=np.float64)
        self.pairs = np.zeros(threads, dtype=np.int64)


def use_threads(threads: int) -> int:
    """Run the kernels on ``threads`` threads (numba's pool; at most its size).
    The results depend on the buffers' thread count, not on this setting."""
    n = max(1, min(threads, config.NUMBA_NUM_THREADS))
    set_num_threads(n)
    return n


def warm_up(threads: int) -> None:
    """Compile the kernels (or load them from numba's cache) on a tiny batch."""
    V, d, T = 3, 2, threads
    W = np.ones((V, d), dtype=np.float32)
    kept = np.arange(V, dtype=np.int64)
    first, last = np.zeros(V, dtype=np.int64), np.full(V, V - 1, dtype=np.int64)
    prob, alias = np.ones(V, dtype=np.float32), kept.copy()
    b = Buffers(T, V, V, d)
    args = (np.uint64(1), kept, first, last, kept, prob, alias, 1, True, 1)
    draw_pairs(*args)
    batch_gradients(
        W, W.copy(), W.sum(1), *args, np.float32(0.0),
        b.gW, b.hW, b.touched, b.gC, b.hC, b.loss, b.pairs,
    )  # fmt: skip
    damped_update_rows(W, b.gW, b.hW, b.touched, np.float32(0.0))
    damped_update_threads(W, b.gC, b.hC, np.float32(0.0), b.c_norm)
    row_norms(W, b.c_norm)
    reduce_threads(b.gC, b.hC)


# The online loop (kernel "online"): word2vec's and fastText's own update rule.


@njit(parallel=True, cache=True)
def online_batch(
    Z, C, rows_ptr, rows_idx, rows_val, key, pos, first, last, kept, prob, alias,
    window, dynamic, K, lr, touchedZ, touchedC, loss, pairs,
):  # fmt: skip
    """One batch of the online loop: an SGD step per (centre, context) pair, in
    batch order, as word2vec's and fastText's skip-gram train (fastText's
    ``Model::update`` with negative sampling).

    Z (T, R, d) and C (T, V, d) are each thread's tables; thread t takes the t-th
    contiguous share of the batch's centres and changes only its own copy (with
    T = 1, the tables themselves). The centre word w's vector is
    h = sum_r rows_val[r] Z[rows_idx[r]] over r in rows_ptr[w]..rows_ptr[w+1] (one
    row of weight 1 for plain SGNS; the word's and its n-grams' rows, weight 1 or
    1/n, for subword SGNS). For the context and each of its K negatives c, with
    g = lr (label - s(h.C[c])): grad += g C[c], then C[c] += g h; after the K+1
    targets every row of w gets += grad (fastText adds the whole of it to each row,
    also where h is their mean). h is recomputed for each pair. touchedZ and
    touchedC flag the rows a thread changed; loss[t] and pairs[t] get its summed
    pair loss (at the scores before each update) and its number of pairs.
    """
    T = Z.shape[0]
    d = Z.shape[2]
    B = pos.shape[0]
    for t in prange(T):
        out = np.empty((2 * window, K + 1), dtype=np.int64)
        h = np.empty((1, d), dtype=np.float32)  # a table of one row, for _dot
        grad = np.empty(d, dtype=np.float32)
        Zt = Z[t]
        Ct = C[t]
        total = 0.0
        n_pairs = 0
        for i in range(t * B // T, (t + 1) * B // T):
            n = _centre_pairs(
                i, key, pos, first, last, kept, prob, alias, window, dynamic, K, out
            )
            w = kept[pos[i]]
            a, b = rows_ptr[w], rows_ptr[w + 1]
            for m in range(n):
                for k in range(d):
                    h[0, k] = 0.0
                    grad[k] = 0.0
                for r in range(a, b):
                    row, v = rows_idx[r], rows_val[r]
                    for k in range(d):
                        h[0, k] += v * Zt[row, k]
                for j in range(K + 1):
                    c = out[m, j]
                    z = _dot(h, 0, Ct, c, d)
                    e = np.exp(-abs(z))
                    s = np.float32(1.0) / (np.float32(1.0) + e)
                    if z < 0:
                        s = e * s
                    if j == 0:
                        g = lr * (np.float32(1.0) - s)
                        total += max(-z, np.float32(0.0)) + np.log1p(e)
                    else:
                        g = -lr * s
                        total += max(z, np.float32(0.0)) + np.log1p(e)
                    for k in range(d):
                        grad[k] += g * Ct[c, k]
                        Ct[c, k] += g * h[0, k]
                    touchedC[t, c] = 1
                for r in range(a, b):
                    row = rows_idx[r]
                    for k in range(d):
                        Zt[row, k] += grad[k]
                    touchedZ[t, row] = 1
            n_pairs += n
        loss[t] = total
        pairs[t] = n_pairs


@njit(parallel=True, cache=True)
def merge_copies(X, copies, touched):
    """After an online batch on T > 1 copies that each started from X: X[r] += the
    sum over threads (in thread order) of copies[t, r] - X[r], for the rows some
    thread touched; then every copy of those rows is set to X[r] and the flags
    are zeroed. X (R, d), copies (T, R, d), touched (T, R)."""
    T, R, d = copies.shape
    for r in prange(R):
        hit = False
        for t in range(T):
            if touched[t, r]:
                hit = True
        if not hit:
            continue
        for k in range(d):
            x = X[r, k]
            v = x
            for t in range(T):
                if touched[t, r]:
                    v += copies[t, r, k] - x
            X[r, k] = v
            for t in range(T):
                copies[t, r, k] = v
        for t in range(T):
            touched[t, r] = 0


def warm_up_online(threads: int) -> None:
    """Compile the online kernels (or load them from numba's cache) on a tiny batch."""
    V, d, T = 3, 2, threads
    Z = np.ones((T, V, d), dtype=np.float32)
    kept = np.arange(V, dtype=np.int64)
    first, last = np.zeros(V, dtype=np.int64), np.full(V, V - 1, dtype=np.int64)
    prob, alias = np.ones(V, dtype=np.float32), kept.copy()
    ptr = np.arange(V + 1, dtype=np.int64)
    val = np.ones(V, dtype=np.float32)
    tz, tc = np.zeros((T, V), dtype=np.uint8), np.zeros((T, V), dtype=np.uint8)
    online_batch(
        Z, Z.copy(), ptr, kept, val, np.uint64(1), kept, first, last, kept, prob,
        alias, 1, True, 1, np.float32(0.0), tz, tc, np.zeros(T), np.zeros(T, np.int64),
    )  # fmt: skip
    merge_copies(Z[0].copy(), Z, tz)
