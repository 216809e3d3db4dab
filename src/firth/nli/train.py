"""Training and scoring of the NLI classifiers: Adam, gradient-norm clipping,
cross-entropy, one pass over the shuffled training examples per epoch, validation
accuracy after every epoch, early stopping after ``patience`` epochs without a new
best (0 = never), the best weights kept. The epoch's order comes from (seed, epoch),
the dropout masks from torch's generator, which each epoch's checkpoint carries: a
killed run resumes to the same weights."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch.nn import functional as F
from tqdm import tqdm

from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.epochs import Progress
from firth.nli.data import Encoded, batch
from firth.sources.nli import LABELS

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    best_state: dict
    history: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


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


def train(
    model,
    train_data: Encoded,
    valid_data: Encoded,
    cfg,
    *,
    seed: int,
    accel: Accel,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    desc: str = "nli",
) -> TrainResult:
    """Train ``model`` (built under ``seed``) with the ``nli`` settings ``cfg``
    on ``accel``'s device and precision (validation in fp32). ``stop_after`` (tests)
    stops after that many epochs, as a kill would."""
    device = accel.device
    torch.manual_seed(seed)
    accel.prepare(model)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    state = Progress.start(model, opt, checkpoint, device, desc)
    n = len(train_data.label)
    model.train()
    while state.epoch < cfg.epochs and not state.done:
        order = random.Random(seed * 1_000_003 + state.epoch).sample(range(n), n)
        total, seen = 0.0, 0
        t0 = time.perf_counter()
        for start in tqdm(
            range(0, n, cfg.batch),
            desc=f"{desc} epoch {state.epoch + 1}",
            disable=None,
            leave=False,
            mininterval=5,
        ):
            idx = order[start : start + cfg.batch]
            b = {k: accel.to(v) for k, v in batch(train_data, idx).items()}
            with accel.autocast():
                loss = F.cross_entropy(model(b), b["label"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            opt.step()
            total += float(loss.detach()) * len(idx)
            seen += len(idx)
        state.seconds += time.perf_counter() - t0
        pred = predict(model, valid_data, batch_size=cfg.batch * 4, device=device)
        score = accuracy(valid_data.label, pred)
        row = {
            "train_loss": total / seen,
            "valid_accuracy": score,
            "train_seconds": round(state.seconds, 2),
        }
        state.end_epoch(model, row, score, cfg.patience)
        log.info(
            "%s: epoch %d, train loss %.4f, valid accuracy %.4f%s",
            desc,
            state.epoch,
            total / seen,
            score,
            " (stop)" if state.done else "",
        )
        state.save(checkpoint, model, opt, device)
        if stop_after is not None and len(state.history) >= stop_after:
            break
    return TrainResult(
        state.best_state, state.history, state.stats("valid_accuracy", n, "examples")
    )
