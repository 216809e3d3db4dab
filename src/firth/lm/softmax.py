"""Adaptive softmax (Grave et al. 2017) whose output rows can be the input embedding
(tied input/output embeddings, Press and Wolf 2017; Inan et al. 2017).

Token ids are sorted by training frequency. ``cutoffs`` c_1 < c_2 < ... split the
vocabulary into a head [0, c_1) and tail clusters [c_i, c_{i+1}). The head softmax
ranges over the head words and one entry per tail cluster; a tail word's probability
is p(cluster | h) * p(word | cluster, h). Every distribution is a proper softmax, so
the full distribution over the vocabulary sums to 1 (tested). Training and scoring
compute a tail only for the positions whose target lies in it: at the default
cutoffs that is several times cheaper than the full softmax over a word vocabulary.

Output rows: the embedding matrix E (tied) or a separate matrix of the same shape.
Each tail has its own d x d projection of h (initialised to the identity), so the
tails may use a different part of the feature space than the head; with no cutoffs
this is a plain (tied) softmax.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn


class AdaptiveSoftmax(nn.Module):
    def __init__(
        self,
        dim: int,
        vocab: int,
        cutoffs: list[int],
        *,
        tied: nn.Parameter | None = None,
    ):
        super().__init__()
        cuts = [c for c in cutoffs if 0 < c < vocab]
        self.bounds = [0, *cuts, vocab]
        self.vocab, self.dim = vocab, dim
        if tied is not None:
            if tuple(tied.shape) != (vocab, dim):
                raise ValueError(
                    f"tied weight has shape {tuple(tied.shape)}, "
                    f"expected {(vocab, dim)}"
                )
            self.weight = tied
        else:
            self.weight = nn.Parameter(torch.empty(vocab, dim).uniform_(-0.1, 0.1))
        self.bias = nn.Parameter(torch.zeros(vocab))
        n_tails = len(self.bounds) - 2
        self.cluster_weight = nn.Parameter(torch.zeros(n_tails, dim))
        self.cluster_bias = nn.Parameter(torch.zeros(n_tails))
        self.proj = nn.ParameterList(
            [nn.Parameter(torch.eye(dim)) for _ in range(n_tails)]
        )

    @property
    def head_size(self) -> int:
        return self.bounds[1]

    def _clusters(self) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
        """The output rows and biases of the head and of each tail, split in one
        step: the backward of a split writes one gradient of the whole (tied)
        matrix, where a slice per cluster writes one each, zeros but for its rows
        (the same sums, so the same gradient bit for bit; 10 MB each for a word
        vocabulary, filled and added every step)."""
        sizes = [hi - lo for lo, hi in itertools.pairwise(self.bounds)]
        return self.weight.split(sizes), self.bias.split(sizes)

    def _head_logits(self, h: torch.Tensor, clusters) -> torch.Tensor:
        (w, *_), (b, *_) = clusters
        w = torch.cat([w, self.cluster_weight])
        b = torch.cat([b, self.cluster_bias])
        return F.linear(h, w, b)

    def _tail_logits(self, h: torch.Tensor, i: int, clusters) -> torch.Tensor:
        w, b = clusters
        return F.linear(h @ self.proj[i], w[i + 1], b[i + 1])

    def log_prob_of(self, h: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """log p(target | h) for h (N, dim) and target (N,): only the tails that
        some target falls in are computed."""
        clusters = self._clusters()
        head_lp = F.log_softmax(self._head_logits(h, clusters), dim=-1)
        c = self.head_size
        out = head_lp.gather(1, target.clamp(max=c - 1).unsqueeze(1)).squeeze(1)
        for i in range(len(self.bounds) - 2):
            lo, hi = self.bounds[i + 1], self.bounds[i + 2]
            mask = (target >= lo) & (target < hi)
            if not bool(mask.any()):
                continue
            rows = mask.nonzero().squeeze(1)
            tail_lp = F.log_softmax(self._tail_logits(h[rows], i, clusters), dim=-1)
            lp = head_lp[rows, c + i] + tail_lp.gather(
                1, (target[rows] - lo).unsqueeze(1)
            ).squeeze(1)
            out = out.index_put((rows,), lp)
        return out

    def log_prob(self, h: torch.Tensor) -> torch.Tensor:
        """The full distribution: log p(w | h) for every w, as (N, vocab)."""
        clusters = self._clusters()
        head_lp = F.log_softmax(self._head_logits(h, clusters), dim=-1)
        c = self.head_size
        parts = [head_lp[:, :c]]
        for i in range(len(self.bounds) - 2):
            tail_lp = F.log_softmax(self._tail_logits(h, i, clusters), dim=-1)
            parts.append(head_lp[:, c + i : c + i + 1] + tail_lp)
        return torch.cat(parts, dim=1)
