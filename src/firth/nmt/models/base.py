"""What every encoder-decoder shares: the tied embedding and output layer,
teacher forcing over the step interface, and beam reordering of memory and state
dicts."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from firth.nmt.data import PAD

TINY = 1e-30  # log-probabilities of impossible tokens are log(TINY), not -inf


def select(tree: dict, index: torch.Tensor) -> dict:
    """Rows ``index`` of every tensor in a memory or state dict (beam reordering)."""
    return {k: v.index_select(0, index) for k, v in tree.items()}


def repeat(tree: dict, k: int) -> dict:
    """Each row repeated ``k`` times in place (B -> B*k, sentence-major)."""
    return {k_: v.repeat_interleave(k, dim=0) for k_, v in tree.items()}


class Seq2Seq(nn.Module):
    """Shared parts: the tied embedding / output layer and teacher forcing."""

    has_attention = False

    def __init__(self, vocab: int, emb_dim: int, dropout: float):
        super().__init__()
        self.vocab, self.emb_dim = vocab, emb_dim
        self.embedding = nn.Embedding(vocab, emb_dim, padding_idx=PAD)
        nn.init.normal_(self.embedding.weight, std=emb_dim**-0.5)
        with torch.no_grad():
            self.embedding.weight[PAD].zero_()
        self.out_bias = nn.Parameter(torch.zeros(vocab))
        self.drop = nn.Dropout(dropout)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        return F.linear(self.drop(features), self.embedding.weight, self.out_bias)

    def forward(self, src, mask, tgt_in):
        """Teacher forcing: logits (B, T, V) for every target position, and the
        attention (B, T, S) or None."""
        memory = self.encode(src, mask)
        state = self.start(memory)
        feats, attns = [], []
        for t in range(tgt_in.shape[1]):
            f, state, a = self.step(tgt_in[:, t], state, memory)
            feats.append(f)
            attns.append(a)
        attn = torch.stack(attns, 1) if attns and attns[0] is not None else None
        return self.logits(torch.stack(feats, 1)), attn
