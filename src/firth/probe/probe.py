"""Probes with control tasks (Hewitt and Liang 2019, "Designing and Interpreting
Probes with Control Tasks").

A probe predicts each token's part of speech from a frozen representation: a
linear map (multinomial logistic regression) or an MLP with one hidden layer of
``hidden`` ReLU units. The control task gives every word type one label drawn
from the empirical distribution of the training tags, fixed per type (a type
unseen in training gets its own draw too, keyed by the type and the seed), so a
probe can only score on it by memorising word identity. Selectivity is task
accuracy minus control accuracy on the test tokens: how much of the accuracy the
representation, not the probe, explains.

Training: Adam with weight decay ``l2`` on shuffled mini-batches of ``batch``
training tokens (0: the full batch, one step per epoch), the epoch kept by the
validation tokens' accuracy (never the test's), each probe seeded. Features
are standardised with the training tokens' mean and deviation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


def control_labels(
    train_words: list[str], train_tags: list[str], words: list[str], *, seed: int
) -> list[str]:
    """The control task's label of each of ``words``: its type's draw from the
    empirical tag distribution of ``train_tags`` (types as written)."""
    tags, counts = np.unique(np.asarray(train_tags), return_counts=True)
    cdf = np.cumsum(counts) / counts.sum()

    def draw(word: str) -> str:
        h = hashlib.blake2b(f"{seed}\x00{word}".encode(), digest_size=8).digest()
        u = int.from_bytes(h, "little") / 2**64
        return str(tags[int(np.searchsorted(cdf, u, side="right"))])

    cache: dict[str, str] = {}
    out = []
    for w in words:
        if w not in cache:
            cache[w] = draw(w)
        out.append(cache[w])
    return out


def make_probe(kind: str, dim: int, classes: int, hidden: int) -> nn.Module:
    if kind == "linear":
        return nn.Linear(dim, classes)
    if kind == "mlp":
        return nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, classes)
        )
    raise ValueError(f"unknown probe {kind!r} (linear | mlp)")


@dataclass(frozen=True)
class ProbeResult:
    valid_accuracy: float
    epochs: int  # the kept epoch
    correct: np.ndarray  # (N_test,) bool


def train_probe(
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_valid: torch.Tensor,
    y_valid: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    kind: str,
    classes: int,
    hidden: int,
    epochs: int,
    lr: float,
    l2: float,
    seed: int,
    batch: int = 0,
) -> ProbeResult:
    """Fit one probe; its test correctness at the epoch of best valid accuracy."""
    mean, std = x_train.mean(0), x_train.std(0).clamp_min(1e-6)
    xs = [(x - mean) / std for x in (x_train, x_valid, x_test)]
    torch.manual_seed(seed)
    probe = make_probe(kind, x_train.shape[1], classes, hidden)
    opt = torch.optim.Adam(probe.parameters(), lr=lr, weight_decay=l2)
    order = torch.Generator().manual_seed(seed)
    n = len(y_train)
    size = batch if 0 < batch < n else n
    best, best_state, best_epoch = -1.0, None, 0
    for epoch in range(1, epochs + 1):
        probe.train()
        perm = torch.randperm(n, generator=order) if size < n else None
        for start in range(0, n, size):
            idx = perm[start : start + size] if perm is not None else slice(None)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(probe(xs[0][idx]), y_train[idx])
            loss.backward()
            opt.step()
        probe.eval()
        with torch.no_grad():
            acc = float((probe(xs[1]).argmax(1) == y_valid).float().mean())
        if acc > best:
            best, best_epoch = acc, epoch
            best_state = {k: v.clone() for k, v in probe.state_dict().items()}
    probe.load_state_dict(best_state)
    probe.eval()
    with torch.no_grad():
        correct = (probe(xs[2]).argmax(1) == y_test).numpy()
    return ProbeResult(best, best_epoch, correct)
