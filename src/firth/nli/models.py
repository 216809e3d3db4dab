"""Sentence-encoder NLI classifiers (Conneau et al. 2017, InferSent's family).

A sentence is embedded, read by a BiLSTM, and max-pooled over its real time steps
into ``u`` (premise) and ``v`` (hypothesis), each ``2 * hidden`` wide. The pair model
classifies ``[u; v; |u - v|; u * v]``; the hypothesis-only model, the same family
with the premise taken away (Gururangan et al. 2018; Poliak et al. 2018), classifies
``v`` alone. Both end in the same MLP (one tanh hidden layer) over the three labels.
"""

from __future__ import annotations

import torch
from torch import nn

from firth.layers import BiRNN
from firth.sources.nli import LABELS


class Encoder(nn.Module):
    def __init__(self, vocab: int, emb_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb_dim, padding_idx=0)
        self.drop = nn.Dropout(dropout)
        self.lstm = BiRNN("lstm", emb_dim, hidden)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T) ids, (B,) lengths -> (B, 2 * hidden) max over real positions."""
        out, _ = self.lstm(self.drop(self.emb(ids)), lengths)
        mask = (
            torch.arange(ids.shape[1], device=ids.device)[None, :]
            < lengths.to(ids.device)[:, None]
        )
        return out.masked_fill(~mask[:, :, None], float("-inf")).max(dim=1).values


class NliClassifier(nn.Module):
    def __init__(
        self,
        mode: str,
        vocab: int,
        *,
        emb_dim: int,
        hidden: int,
        mlp: int,
        dropout: float,
    ):
        super().__init__()
        if mode not in ("pair", "hypothesis"):
            raise ValueError(f"mode must be pair or hypothesis, not {mode!r}")
        self.mode = mode
        self.encoder = Encoder(vocab, emb_dim, hidden, dropout)
        features = 2 * hidden * (4 if mode == "pair" else 1)
        self.mlp = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(features, mlp),
            nn.Tanh(),
            nn.Linear(mlp, len(LABELS)),
        )

    def features(self, b: dict[str, torch.Tensor]) -> torch.Tensor:
        v = self.encoder(b["hypothesis"], b["hypothesis_len"])
        if self.mode == "hypothesis":
            return v
        u = self.encoder(b["premise"], b["premise_len"])
        return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)

    def forward(self, b: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, 3) label logits."""
        return self.mlp(self.features(b))


def build(mode: str, vocab_size: int, cfg) -> NliClassifier:
    return NliClassifier(
        mode,
        vocab_size,
        emb_dim=cfg.emb_dim,
        hidden=cfg.hidden,
        mlp=cfg.mlp,
        dropout=cfg.dropout,
    )
