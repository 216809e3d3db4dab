"""GloVe (Pennington, Socher and Manning 2014, "GloVe: Global Vectors for Word
Representation", sections 3 and 4.2).

J = sum over nonzero X_ij of f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2 with
f(x) = min(1, (x / x_max)^alpha), x_max = 100, alpha = 0.75. Counts use 1/distance
weighting (see ``cooccurrence``). Optimised with AdaGrad as in glove.c: every
parameter starts with an accumulated squared gradient of 1, the step is
lr * g / sqrt(G), then G += (lr * g)^2 (glove.c folds the rate into the gradient).
Nonzeros are shuffled each epoch and taken ``batch`` at a time; the gradients of a
batch are summed per row. The output vectors are w + w~.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from tqdm import tqdm

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GloVeConfig:
    dim: int = 100
    x_max: float = 100.0
    alpha: float = 0.75
    lr: float = 0.05
    epochs: int = 50
    batch: int = 65536  # nonzeros per step
    seed: int = 0


@dataclass
class GloVeStats:
    nonzeros: int = 0
    seconds: float = 0.0
    epoch_loss: list[float] = field(default_factory=list)  # mean weighted sq. error


def weight(x: torch.Tensor, *, x_max: float, alpha: float) -> torch.Tensor:
    """f(x) = (x / x_max)^alpha, capped at 1."""
    return torch.clamp(x / x_max, max=1.0).pow(alpha)


class _AdaGrad:
    def __init__(self, param: torch.Tensor, lr: float):
        self.param, self.lr = param, lr
        self.acc = torch.ones_like(param)

    def step(self, grad: torch.Tensor) -> None:
        g = grad * self.lr
        self.param.addcdiv_(g, self.acc.sqrt(), value=-1.0)
        self.acc.addcmul_(g, g)


def train_glove(
    counts: sp.csr_matrix,
    cfg: GloVeConfig,
    *,
    device: str | torch.device = "cpu",
    progress: bool = True,
    resume: dict | None = None,
    on_epoch: Callable[[dict], None] | None = None,
) -> tuple[torch.Tensor, GloVeStats]:
    """Train on the nonzero counts; return w + w~ (V, dim) and stats.

    ``on_epoch`` receives the full state after every epoch; passing it back as
    ``resume`` continues exactly where it left off."""
    device = torch.device(device)
    X = counts.tocoo()
    if X.nnz == 0:
        raise ValueError("empty co-occurrence matrix")
    V, d = counts.shape[0], cfg.dim
    gen = torch.Generator(device=device)
    gen.manual_seed(cfg.seed)
    rows = torch.from_numpy(X.row.astype(np.int64)).to(device)
    cols = torch.from_numpy(X.col.astype(np.int64)).to(device)
    x = torch.from_numpy(X.data.astype(np.float32)).to(device)
    logx, fx = torch.log(x), weight(x, x_max=cfg.x_max, alpha=cfg.alpha)

    def init(*shape):
        return (torch.rand(*shape, generator=gen, device=device) - 0.5) / d

    W, Wt = init(V, d), init(V, d)
    b, bt = init(V), init(V)
    opts = [_AdaGrad(p, cfg.lr) for p in (W, Wt, b, bt)]
    stats = GloVeStats(nonzeros=X.nnz)
    start_epoch, seconds_before = 0, 0.0
    if resume is not None:
        for p, saved in zip((W, Wt, b, bt), resume["params"], strict=True):
            p.copy_(saved.to(device))
        for opt, saved in zip(opts, resume["acc"], strict=True):
            opt.acc.copy_(saved.to(device))
        gen.set_state(resume["generator"])
        stats = GloVeStats(**resume["stats"])
        start_epoch, seconds_before = len(stats.epoch_loss), stats.seconds
        log.info("glove: resuming after epoch %d/%d", start_epoch, cfg.epochs)
    t0 = time.perf_counter()
    for epoch in range(start_epoch, cfg.epochs):
        order = torch.randperm(X.nnz, generator=gen, device=device)
        total = torch.zeros((), device=device, dtype=torch.float64)
        bar = tqdm(
            range(0, X.nnz, cfg.batch),
            desc=f"glove epoch {epoch + 1}/{cfg.epochs}",
            disable=not progress,
            leave=False,
        )
        for start in bar:
            idx = order[start : start + cfg.batch]
            i, j = rows[idx], cols[idx]
            wi, wj = W[i], Wt[j]  # (n, d)
            diff = (wi * wj).sum(1) + b[i] + bt[j] - logx[idx]  # (n,)
            fdiff = fx[idx] * diff
            total += (fdiff * diff).sum()
            gW = torch.zeros_like(W).index_add_(0, i, fdiff[:, None] * wj)
            gWt = torch.zeros_like(Wt).index_add_(0, j, fdiff[:, None] * wi)
            gb = torch.zeros_like(b).index_add_(0, i, fdiff)
            gbt = torch.zeros_like(bt).index_add_(0, j, fdiff)
            for opt, g in zip(opts, (gW, gWt, gb, gbt), strict=True):
                opt.step(g)
        mean = float(total.item()) / X.nnz
        stats.epoch_loss.append(mean)
        log.info("glove epoch %d/%d: loss %.5f", epoch + 1, cfg.epochs, mean)
        if on_epoch is not None:
            stats.seconds = seconds_before + time.perf_counter() - t0
            on_epoch(
                {
                    "params": [p.detach().cpu() for p in (W, Wt, b, bt)],
                    "acc": [opt.acc.cpu() for opt in opts],
                    "generator": gen.get_state(),
                    "stats": asdict(stats),
                }
            )
    stats.seconds = seconds_before + time.perf_counter() - t0
    return W + Wt, stats
