"""The learning-rate schedule of the LM and NMT trainers: a linear warm-up, then
cosine decay to 0 (Loshchilov and Hutter 2017, without restarts)."""

from __future__ import annotations

import math


def lr_at(step: int, total: int, warmup: int, lr: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to 0 at ``total``."""
    if warmup and step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
