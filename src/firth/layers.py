"""Layers the models share, written for the CPU's speed with the same results.

``BiRNN``: a bidirectional GRU or LSTM over left-aligned padded batches, without
packing.

``nn.LSTM(bidirectional=True)`` over a ``PackedSequence`` is what the taggers, the
translation encoder and the NLI encoder need: the forward direction stops at each
sentence's last token and the backward direction starts there. On CPU torch runs a
packed sequence through its generic per-time-step kernel (a zero-filled gradient
buffer per step), while a padded batch goes to the fused oneDNN kernel: 2.4x faster
for the tagger's BiLSTM and 1.4x for the translation encoder's BiGRU, forward and
backward (``benchmarks/layer_speed.py``).

``BiRNN`` gets the packed result from padded batches: the forward direction reads
the batch as it is (left-aligned, so the padding comes after every real token and
cannot reach it), the backward direction reads each sentence reversed within its
own length (``flip``: padding stays at the end) and its output is reversed back.
Each layer and direction is its own one-directional ``nn.GRU``/``nn.LSTM``, built in
the order ``nn.LSTM(bidirectional=True)`` draws its initial weights (layer 0 forward,
layer 0 backward, layer 1 forward, ...), so the same seed starts from the same
weights; a layer above the first reads both directions of the one below, with
dropout between layers as torch applies it.

``Dropout``: inverted dropout whose mask is ``rand >= p`` rather than torch's
``bernoulli_``, which on CPU takes 2.3x as long at the tagger's sizes (forward and
backward, ``benchmarks/layer_speed.py``). The same distribution, not the same
draws.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def flip_index(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(B, T) positions that reverse each row within its first ``lengths[b]``
    and keep the positions after them (``lengths`` on the rows' device)."""
    t = torch.arange(steps, device=lengths.device)
    n = lengths[:, None]
    return torch.where(t < n, n - 1 - t, t)


def reorder(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``x`` (B, T, ...) with each row's positions taken in ``idx`` (B, T) order."""
    return x.gather(1, idx.view(*idx.shape, *([1] * (x.dim() - 2))).expand_as(x))


def flip(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row of ``x`` (B, T, ...) reversed within its first ``lengths[b]``
    positions; the positions after them stay where they are. Its own inverse."""
    return reorder(x, flip_index(lengths.to(x.device), x.shape[1]))


class BiRNN(nn.Module):
    def __init__(
        self, cell: str, input_size: int, hidden: int, layers: int = 1, dropout=0.0
    ):
        super().__init__()
        if cell not in ("gru", "lstm"):
            raise ValueError(f"unknown recurrent cell {cell!r} (gru | lstm)")
        cls = nn.GRU if cell == "gru" else nn.LSTM
        self.hidden = hidden
        self.dropout = dropout
        self.dirs = nn.ModuleList(
            cls(input_size if layer == 0 else 2 * hidden, hidden, batch_first=True)
            for layer in range(layers)
            for _ in ("forward", "backward")
        )

    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, input), left-aligned, every length >= 1 -> (outputs (B, T,
        2 * hidden), zero past each sentence's end; final states (B, 2 * hidden):
        the top layer's forward state at the last token and backward state at the
        first), as the packed bidirectional module gives them."""
        lengths = lengths.to(x.device)
        t = torch.arange(x.shape[1], device=x.device)
        mask = (t < lengths[:, None]).unsqueeze(2)
        rev = flip_index(lengths, x.shape[1])  # one index for every reversal
        for i in range(0, len(self.dirs), 2):
            if i:
                x = F.dropout(x, self.dropout, self.training)
            fwd, _ = self.dirs[i](x)
            bwd, _ = self.dirs[i + 1](reorder(x, rev))
            x = torch.cat([fwd, reorder(bwd, rev)], 2) * mask
        last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, self.hidden)
        final = torch.cat(
            [x[:, :, : self.hidden].gather(1, last)[:, 0], x[:, 0, self.hidden :]], 1
        )
        return x, final


class Dropout(nn.Module):
    """Zero each element with probability ``p`` in training and scale the rest by
    1 / (1 - p); the identity in evaluation (as ``nn.Dropout``)."""

    def __init__(self, p: float):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = torch.rand(x.shape, device=x.device) >= self.p
        return x * keep.to(x.dtype).mul_(1.0 / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"
