"""Attention over the source annotations (Bahdanau et al. 2015, Luong et al.
2015): additive, general or dot scoring, masked so padding gets weight exactly 0;
the additive scorer can also read the coverage vector (Tu et al. 2016)."""

from __future__ import annotations

import math

import torch
from torch import nn


class Attention(nn.Module):
    """Additive (Bahdanau) or multiplicative (Luong general / dot) attention with a
    source mask: padding gets weight exactly 0."""

    def __init__(self, scoring: str, query_dim: int, key_dim: int, coverage=False):
        super().__init__()
        self.scoring = scoring
        # an intervention on the weights (firth.nmt.faithfulness): (weights (B, S),
        # mask (B, S)) -> weights; None in training and ordinary decoding
        self.edit = None
        if coverage and scoring != "additive":
            raise ValueError("coverage enters the additive (Bahdanau) scorer only")
        if scoring == "additive":
            self.w_query = nn.Linear(query_dim, key_dim, bias=False)
            self.w_key = nn.Linear(key_dim, key_dim)
            self.v = nn.Linear(key_dim, 1, bias=False)
            if coverage:
                self.w_cov = nn.Linear(1, key_dim, bias=False)
        elif scoring == "general":
            self.w_key = nn.Linear(key_dim, query_dim, bias=False)
        elif scoring == "dot":
            if query_dim != key_dim:
                raise ValueError("dot attention needs query and key of one size")
        else:
            raise ValueError(f"unknown attention {scoring!r}")

    def keys(self, values: torch.Tensor) -> torch.Tensor:
        """The part of the score that depends only on the source (computed once)."""
        return values if self.scoring == "dot" else self.w_key(values)

    def forward(self, query, keys, values, mask, coverage=None):
        if self.scoring == "additive":
            pre = self.w_query(query)[:, None] + keys
            if coverage is not None:
                pre = pre + self.w_cov(coverage[..., None])
            scores = self.v(torch.tanh(pre)).squeeze(-1)
        else:
            scores = torch.bmm(keys, query[:, :, None]).squeeze(-1)
        weights = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
        if self.edit is not None:
            weights = self.edit(weights, mask)
        return torch.bmm(weights[:, None], values).squeeze(1), weights
