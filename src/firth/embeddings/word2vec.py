"""word2vec's own training loop (Mikolov et al. 2013a, "Efficient Estimation of
Word Representations in Vector Space"; 2013b, section 2.1): skip-gram or CBOW,
with negative sampling or the hierarchical softmax, plain SGD pair by pair with a
rate decaying linearly to ``alpha * min_alpha_ratio``, as word2vec.c trains.

Conventions (word2vec.c's)
- ``W`` (V, d): input vectors, uniform in [-0.5/d, 0.5/d]; ``C`` (V, d): output
  vectors, zero: for negative sampling one per word, for the hierarchical softmax
  one per inner node of the Huffman tree (V - 1 rows are used).
- Skip-gram: for each (centre w, context c) in a window b ~ U{1..m}, the input is
  W[c] and the output is w's (word2vec.c predicts the centre from each context
  word; the pairs are the same as predicting each context from the centre).
  CBOW: the input h is the mean of W over the window's context words, the output
  the centre's; the input gradient is added to every context row (not divided).
- Negative sampling: K noise words from unigram^0.75 per output word; the loss
  -log s(u_w . h) - sum_k log s(-u_k . h).
- Hierarchical softmax: the Huffman tree of the training counts (firth:
  ``huffman``); a word is its path of inner nodes n_1..n_L with code bits b_j, and
  p(w | h) = prod_j s((1 - 2 b_j) u_{n_j} . h), normalised over the vocabulary by
  construction (tests/test_word2vec.py sums it by brute force).
- Subsampling keeps an occurrence as firth.embeddings.sgns does (its
  ``sample_rule``; drawn once per epoch, from the seed).
- Random numbers: word2vec.c's linear congruential generator, seeded per epoch,
  so a seed gives the same vectors on any machine (one thread). A negative's
  candidate is its state shifted right 16 bits, modulo V, as word2vec.c indexes
  its table: the low bits of such a generator have short periods.
"""

from __future__ import annotations

import heapq
import logging
import time
from dataclasses import dataclass

import numba
import numpy as np
import torch
from tqdm import tqdm

from firth.embeddings.corpus import Corpus
from firth.embeddings.sgns import alias_table, keep_probabilities, noise_distribution

log = logging.getLogger(__name__)

MAX_CODE = 64  # longest Huffman path (word2vec.c's MAX_CODE_LENGTH is 40)


@dataclass(frozen=True)
class Word2VecConfig:
    arch: str = "sg"  # sg | cbow
    loss: str = "ns"  # ns (negative sampling) | hs (hierarchical softmax)
    dim: int = 100
    window: int = 5
    dynamic_window: bool = True  # b ~ U{1..window} per centre; False: b = window
    negatives: int = 5
    cds: float = 0.75
    sample: float = 1e-4
    sample_rule: str = "word2vec"  # word2vec | paper (sgns.keep_probabilities)
    epochs: int = 5
    alpha: float = 0.025  # word2vec.c: 0.025 for skip-gram, 0.05 for CBOW
    min_alpha_ratio: float = 1e-4
    seed: int = 13


@dataclass(frozen=True)
class Tree:
    """The Huffman tree: per word its code bits and inner-node ids (root first),
    and its path length."""

    codes: np.ndarray  # (V, MAX_CODE) int8
    points: np.ndarray  # (V, MAX_CODE) int32, inner node ids 0..V-2
    lengths: np.ndarray  # (V,) int32


def huffman(counts: np.ndarray) -> Tree:
    """Huffman coding of ``counts`` (V >= 2): the two least frequent nodes merge
    into an inner node (ties: the earlier-made node first); the second merged
    gets bit 1, as word2vec.c's binary[min2] = 1."""
    V = len(counts)
    if V < 2:
        raise ValueError("the hierarchical softmax needs at least 2 words")
    heap = [(int(c), i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    parent = np.zeros(2 * V - 1, dtype=np.int64)
    bit = np.zeros(2 * V - 1, dtype=np.int8)
    for a in range(V - 1):
        c1, n1 = heapq.heappop(heap)
        c2, n2 = heapq.heappop(heap)
        node = V + a
        parent[n1], parent[n2] = node, node
        bit[n2] = 1
        heapq.heappush(heap, (c1 + c2, node))
    root = 2 * V - 2
    codes = np.zeros((V, MAX_CODE), dtype=np.int8)
    points = np.zeros((V, MAX_CODE), dtype=np.int32)
    lengths = np.zeros(V, dtype=np.int32)
    for w in range(V):
        path_bits, path_nodes = [], []
        node = w
        while node != root:
            path_bits.append(bit[node])
            node = parent[node]
            path_nodes.append(node - V)
        L = len(path_bits)
        if L > MAX_CODE:
            raise ValueError(f"Huffman path of {L} > {MAX_CODE} (counts too skewed)")
        codes[w, :L] = path_bits[::-1]
        points[w, :L] = path_nodes[::-1]
        lengths[w] = L
    return Tree(codes, points, lengths)


def hs_log_prob(h: np.ndarray, C: np.ndarray, tree: Tree, w: int) -> float:
    """log p(w | h) under the hierarchical softmax (for tests and inspection)."""
    L = tree.lengths[w]
    z = C[tree.points[w, :L]] @ h
    sign = 1.0 - 2.0 * tree.codes[w, :L]
    return float(-np.logaddexp(0.0, -sign * z).sum())


@numba.njit(cache=True, fastmath=True)
def _rand(state):
    """word2vec.c's generator: next = next * 25214903917 + 11 (mod 2^64)."""
    state[0] = state[0] * np.uint64(25214903917) + np.uint64(11)
    return state[0]


@numba.njit(cache=True, fastmath=True)
def _unit(state):
    return ((_rand(state) >> np.uint64(16)) & np.uint64(0xFFFF)) / 65536.0


@numba.njit(cache=True, fastmath=True)
def _output(h, grad, C, target, label, alpha, d):
    """One logistic output unit: f = s(u . h); g = (label - f) alpha; accumulate
    the input gradient and update u; returns -log p(label)."""
    z = 0.0
    for k in range(d):
        z += C[target, k] * h[k]
    if z > 30.0:
        f = 1.0
    elif z < -30.0:
        f = 0.0
    else:
        f = 1.0 / (1.0 + np.exp(-z))
    g = (label - f) * alpha
    for k in range(d):
        grad[k] += g * C[target, k]
        C[target, k] += g * h[k]
    p = f if label == 1.0 else 1.0 - f
    return -np.log(max(p, 1e-12))


@numba.njit(cache=True, fastmath=True)
def _outputs(
    h, grad, C, Cn, word, hs, codes, points, lengths, K, prob, alias, state, alpha, d
):
    loss = 0.0
    if hs:
        for j in range(lengths[word]):
            loss += _output(h, grad, C, points[word, j], 1.0 - codes[word, j], alpha, d)
    else:
        loss += _output(h, grad, Cn, word, 1.0, alpha, d)
        V = prob.shape[0]
        for _ in range(K):
            i = np.int64((_rand(state) >> np.uint64(16)) % np.uint64(V))
            noise = i if _unit(state) < prob[i] else alias[i]
            if noise == word:
                continue
            loss += _output(h, grad, Cn, noise, 0.0, alpha, d)
    return loss


@numba.njit(cache=True, fastmath=True)
def train_epoch(
    ids, bounds, W, C, Cn, codes, points, lengths, prob, alias,
    sg, hs, window, K, alpha0, alpha_min, done0, total, state, dynamic=True,
):  # fmt: skip
    """One pass over the kept tokens ``ids`` with sentence ``bounds`` (start
    offsets, last = len(ids)): an epoch, or a block of one (the generator
    ``state``, a (1,) uint64 array, carries on from block to block); the rate
    falls linearly from alpha0 over ``total`` planned tokens, ``done0`` already
    trained. Returns (summed loss, outputs)."""
    d = W.shape[1]
    h = np.zeros(d)
    grad = np.zeros(d)
    loss, outputs = 0.0, 0
    done = done0
    for s in range(bounds.shape[0] - 1):
        lo, hi = bounds[s], bounds[s + 1]
        for pos in range(lo, hi):
            alpha = max(alpha_min, alpha0 * (1.0 - done / (total + 1.0)))
            done += 1
            w = ids[pos]
            b = np.int64(_rand(state) % np.uint64(window)) + 1  # drawn either way
            if not dynamic:
                b = window
            a0, a1 = max(lo, pos - b), min(hi, pos + b + 1)
            if sg:
                for c in range(a0, a1):
                    if c == pos:
                        continue
                    src = ids[c]
                    for k in range(d):
                        h[k] = W[src, k]
                        grad[k] = 0.0
                    loss += _outputs(
                        h, grad, C, Cn, w, hs, codes, points, lengths, K,
                        prob, alias, state, alpha, d,
                    )  # fmt: skip
                    outputs += 1
                    for k in range(d):
                        W[src, k] += grad[k]
            else:
                n = a1 - a0 - 1
                if n <= 0:
                    continue
                for k in range(d):
                    h[k] = 0.0
                    grad[k] = 0.0
                for c in range(a0, a1):
                    if c != pos:
                        for k in range(d):
                            h[k] += W[ids[c], k]
                for k in range(d):
                    h[k] /= n
                loss += _outputs(
                    h, grad, C, Cn, w, hs, codes, points, lengths, K,
                    prob, alias, state, alpha, d,
                )  # fmt: skip
                outputs += 1
                for c in range(a0, a1):
                    if c != pos:
                        for k in range(d):
                            W[ids[c], k] += grad[k]
    return loss, outputs


@dataclass(frozen=True)
class Word2VecStats:
    seconds: float
    words_per_second: float  # corpus tokens (before subsampling) per second
    loss_per_epoch: list[float]  # mean -log p per output (pair or window)
    # per block of ``blocks`` consecutive sentences of an epoch: (kept tokens,
    # seconds); the same kept tokens for every arch and loss at one seed, so two
    # models' blocks pair up (the speed test of firth.findings)
    blocks: list[tuple[int, float]]
    kept_tokens_per_epoch: float


def _blocks(bounds: np.ndarray, n: int) -> list[tuple[int, int]]:
    """At most ``n`` runs of whole sentences (index pairs into ``bounds``), each
    cut at the sentence boundary nearest an equal share of the tokens."""
    s = len(bounds) - 1
    if s <= 0:
        return []
    targets = bounds[0] + (bounds[-1] - bounds[0]) * np.arange(1, n) / n
    inner = np.searchsorted(bounds, targets)
    cuts = np.unique(np.r_[0, np.clip(inner, 0, s), s]).astype(np.int64)
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def train_word2vec(
    corpus: Corpus,
    cfg: Word2VecConfig,
    *,
    blocks: int = 20,
    progress: bool = False,
    resume: dict | None = None,
    on_epoch=None,
) -> tuple[np.ndarray, Word2VecStats]:
    """The input vectors W (V, d) after ``cfg.epochs`` epochs, and statistics.
    Each epoch is trained (and timed) in ``blocks`` runs of sentences; with
    ``resume`` (a state ``on_epoch`` was given after an epoch) training goes on
    from that epoch, to the same vectors as an unbroken run."""
    if cfg.arch not in ("sg", "cbow") or cfg.loss not in ("ns", "hs"):
        raise ValueError(f"arch {cfg.arch!r} (sg | cbow), loss {cfg.loss!r} (ns | hs)")
    counts = corpus.vocab.counts
    V, d = len(counts), cfg.dim
    rng = np.random.default_rng(cfg.seed)
    W = ((rng.random((V, d)) - 0.5) / d).astype(np.float64)
    tree = huffman(counts) if cfg.loss == "hs" else huffman(np.array([1, 1]))
    C = np.zeros((max(V - 1, 1), d))  # inner nodes (hierarchical softmax)
    Cn = np.zeros((V, d))  # output vectors (negative sampling)
    prob, alias = alias_table(noise_distribution(counts, cfg.cds))
    keep = keep_probabilities(counts, cfg.sample, cfg.sample_rule)
    total = float(keep[corpus.ids].sum()) * cfg.epochs  # expected kept tokens
    done, losses, timed, kept, first = 0, [], [], [], 0
    if resume is not None:
        W, C, Cn = (np.asarray(resume[k], dtype=np.float64) for k in ("W", "C", "Cn"))
        rng.bit_generator.state = resume["rng"]
        done, losses = int(resume["done"]), list(resume["losses"])
        timed, kept = [tuple(b) for b in resume["blocks"]], list(resume["kept"])
        first = len(losses)
        log.info("word2vec: resuming after epoch %d", first)
    # train_epoch's arguments after the tokens: the model, then its settings
    model = (
        W, C, Cn, tree.codes, tree.points, tree.lengths, prob, alias.astype(np.int64),
        cfg.arch == "sg", cfg.loss == "hs", cfg.window, cfg.negatives,
    )  # fmt: skip
    # compile (or load numba's cache) before anything is timed: an empty pass
    train_epoch(
        corpus.ids[:0], np.zeros(2, dtype=np.int64), *model, cfg.alpha, cfg.alpha,
        0, 1.0, np.zeros(1, dtype=np.uint64), cfg.dynamic_window,
    )  # fmt: skip
    bar = tqdm(
        total=cfg.epochs * blocks,
        initial=first * blocks,
        desc=f"word2vec {cfg.arch}-{cfg.loss}",
        disable=not progress,
        leave=False,
    )
    for epoch in range(first, cfg.epochs):
        drawn = rng.random(corpus.n_tokens) < keep[corpus.ids]
        ids = corpus.ids[drawn]
        sent = corpus.sentence[drawn]
        starts = np.flatnonzero(np.r_[True, sent[1:] != sent[:-1]]) if len(ids) else []
        bounds = np.r_[starts, len(ids)].astype(np.int64)
        state = np.array([cfg.seed * 1_000_003 + epoch], dtype=np.uint64)
        loss, n = 0.0, 0
        for lo, hi in _blocks(bounds, blocks):
            t0 = time.perf_counter()
            part_loss, part_n = train_epoch(
                ids, bounds[lo : hi + 1], *model, cfg.alpha,
                cfg.alpha * cfg.min_alpha_ratio, done, total, state,
                cfg.dynamic_window,
            )  # fmt: skip
            tokens = int(bounds[hi] - bounds[lo])
            timed.append((tokens, time.perf_counter() - t0))
            done += tokens
            loss, n = loss + part_loss, n + part_n
            bar.update()
        kept.append(len(ids))
        losses.append(loss / max(n, 1))
        log.info(
            "word2vec %s-%s epoch %d: loss %.4f",
            cfg.arch,
            cfg.loss,
            epoch + 1,
            losses[-1],
        )
        if on_epoch is not None:
            on_epoch(
                {
                    "W": torch.from_numpy(W),
                    "C": torch.from_numpy(C),
                    "Cn": torch.from_numpy(Cn),
                    "rng": rng.bit_generator.state,
                    "done": done,
                    "losses": losses,
                    "blocks": [list(b) for b in timed],
                    "kept": kept,
                }
            )
    bar.close()
    seconds = sum(t for _, t in timed)
    stats = Word2VecStats(
        seconds,
        corpus.vocab.total_tokens * cfg.epochs / max(seconds, 1e-9),
        losses,
        timed,
        float(np.mean(kept)) if kept else 0.0,
    )
    return W.astype(np.float32), stats
