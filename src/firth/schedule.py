"""The learning-rate schedules of the LM and NMT trainers: a linear warm-up, then
cosine decay to 0 (Loshchilov and Hutter 2017, without restarts) or the inverse
square root of the step (Vaswani et al. 2017, as JoeyNMT and fairseq schedule
transformers)."""

from __future__ import annotations

import math
from typing import Literal

Decay = Literal["cosine", "inverse-sqrt"]


def lr_at(
    step: int, total: int, warmup: int, lr: float, decay: Decay = "cosine"
) -> float:
    """Linear warm-up over ``warmup`` steps (step s takes lr (s + 1) / warmup),
    then cosine decay to 0 at ``total``, or (``inverse-sqrt``) lr sqrt(w / (s + 1))
    with w = max(1, warmup): continuous at the end of the warm-up, lr / sqrt(10)
    at ten times its length, never 0."""
    if warmup and step < warmup:
        return lr * (step + 1) / warmup
    if decay == "inverse-sqrt":
        return lr * math.sqrt(max(1, warmup) / (step + 1))
    progress = (step - warmup) / max(1, total - warmup)
    return lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
