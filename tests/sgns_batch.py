"""A random batch for the SGNS kernel tests (tests/test_sgns_fused.py,
tests/test_sgns_online.py): the arrays firth.embeddings.sgns_fused's kernels read."""

from __future__ import annotations

import numpy as np
import torch

from firth.embeddings.sgns import alias_table, sentence_bounds


def random_batch(seed=0, V=7, n=60, sentences=5, window=3, K=4):
    """A random kept sequence of n tokens in ``sentences`` sentences over V words,
    a noise table, and a batch of centre positions (every one, shuffled)."""
    rng = np.random.default_rng(seed)
    kept = rng.integers(0, V, n).astype(np.int64)
    sent = np.sort(rng.integers(0, sentences, n))
    first, last = (x.numpy() for x in sentence_bounds(torch.from_numpy(sent)))
    q = rng.random(V) + 0.05
    prob, alias = alias_table(q / q.sum())
    return {
        "pos": rng.permutation(n).astype(np.int64),
        "first": first,
        "last": last,
        "kept": kept,
        "prob": prob.astype(np.float32),
        "alias": alias,
        "window": window,
        "K": K,
        "sent": sent,
    }
