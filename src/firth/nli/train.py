"""Training (firth.training.fit) and scoring of the NLI classifiers: Adam, gradient-norm
clipping, cross-entropy, one pass over the shuffled training examples per epoch,
validation accuracy after every epoch, early stopping after ``patience`` epochs
without a new best (0 = never), the best weights kept. The epoch's order comes from
(seed, epoch), the dropout masks from torch's generator, which each epoch's
checkpoint carries: a killed run resumes to the same weights."""

from __future__ import annotations

import logging
import random
from collections import Counter

import torch
from torch.nn import functional as F

from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.nli.config import Nli
from firth.nli.data import Encoded, batch
from firth.sources.nli import LABELS
from firth.training import Result, Task, fit_per_epoch

log = logging.getLogger(__name__)


def _order_by_length(data: Encoded, size: int) -> list[list[int]]:
    """Index batches of similar hypothesis (then premise) length, for scoring."""
    idx = sorted(
        range(len(data.label)),
        key=lambda i: (len(data.hypothesis[i]), len(data.premise[i])),
    )
    return [idx[i : i + size] for i in range(0, len(idx), size)]


@torch.no_grad()
def predict(model, data: Encoded, *, batch_size: int, device) -> list[int]:
    """The predicted label id of every example."""
    was = model.training
    model.eval()
    out = [0] * len(data.label)
    for idx in _order_by_length(data, batch_size):
        b = {k: v.to(device) for k, v in batch(data, idx).items()}
        for i, k in zip(idx, model(b).argmax(-1).tolist(), strict=True):
            out[i] = k
    model.train(was)
    return out


def accuracy(gold: list[int], pred: list[int]) -> float:
    return sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold)


def scores(gold: list[int], pred: list[int]) -> dict:
    """Accuracy, per-label precision / recall / F1, the confusion matrix
    (rows gold, columns predicted) and the predicted label shares."""
    out: dict = {"accuracy": accuracy(gold, pred), "examples": len(gold)}
    per = {}
    for k, name in enumerate(LABELS):
        tp = sum(g == k and p == k for g, p in zip(gold, pred, strict=True))
        n_pred, n_gold = pred.count(k), gold.count(k)
        prec = tp / n_pred if n_pred else 0.0
        rec = tp / n_gold if n_gold else 0.0
        per[name] = {
            "precision": prec,
            "recall": rec,
            "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
            "gold": n_gold,
        }
    out["per_label"] = per
    out["confusion"] = [
        [
            sum(g == a and p == b for g, p in zip(gold, pred, strict=True))
            for b in range(3)
        ]
        for a in range(3)
    ]
    out["predicted_share"] = {
        name: pred.count(k) / len(pred) for k, name in enumerate(LABELS)
    }
    return out


def majority(train_labels: list[int]) -> int:
    """The most frequent training label (ties: the first in LABELS order)."""
    counts = Counter(train_labels)
    return max(range(len(LABELS)), key=lambda k: (counts[k], -k))


class NliTask(Task):
    """Shuffled example batches for firth.training.fit, cross-entropy, one
    validation (accuracy) per epoch."""

    def __init__(self, model, train_data: Encoded, valid_data: Encoded, cfg: Nli, *,
                 seed, accel):  # fmt: skip
        self.model, self.train_data, self.valid_data = model, train_data, valid_data
        self.cfg, self.seed, self.accel = cfg, seed, accel

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        n, size = len(self.train_data.label), self.cfg.batch
        order = random.Random(self.seed * 1_000_003 + epoch).sample(range(n), n)
        return [order[start : start + size] for start in range(0, n, size)]

    def loss(self, idx: list[int]):
        b = {k: self.accel.to(v) for k, v in batch(self.train_data, idx).items()}
        loss = F.cross_entropy(self.model(b), b["label"])
        return loss, float(loss.detach()) * len(idx), len(idx)

    def validate(self) -> tuple[float, dict]:
        pred = predict(
            self.model,
            self.valid_data,
            batch_size=self.cfg.batch * 4,
            device=self.accel.device,
        )
        score = accuracy(self.valid_data.label, pred)
        return score, {"valid_accuracy": score}


def train(
    model,
    train_data: Encoded,
    valid_data: Encoded,
    cfg: Nli,
    *,
    seed: int,
    accel: Accel,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    max_steps: int | None = None,
    desc: str = "nli",
) -> Result:
    """Train ``model`` (built under ``seed``) with the ``nli`` settings ``cfg``
    on ``accel``'s device and precision (validation in fp32). ``stop_after`` (tests)
    stops after that many epochs, as a kill would. ``max_steps``: a step
    budget (benchmarks; firth.training.fit)."""
    task = NliTask(model, train_data, valid_data, cfg, seed=seed, accel=accel)
    return fit_per_epoch(
        model,
        task,
        cfg,
        examples=len(train_data.label),
        score="accuracy",
        unit="examples",
        seed=seed,
        accel=accel,
        checkpoint=checkpoint,
        stop_after=stop_after,
        max_steps=max_steps,
        desc=desc,
    )
