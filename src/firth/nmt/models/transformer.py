"""The pre-LN transformer encoder-decoder (Vaswani et al. 2017), for reference,
with incremental decoding through the shared step interface."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from firth.nmt.models.base import Seq2Seq


class SinusoidalPositions(nn.Module):
    def __init__(self, dim: int, max_len: int = 2048):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        div = torch.exp(
            torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(1e4) / dim)
        )
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)[:, : dim // 2]
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, length: int, offset: int = 0) -> torch.Tensor:
        return self.pe[offset : offset + length]


class Transformer(Seq2Seq):
    """Pre-LN transformer encoder-decoder. Decoding is incremental: the state holds
    every decoder layer's self-attention keys and values of the prefix, and the
    memory every layer's cross-attention keys and values of the source, so a step
    computes one position. ``attention`` is the last layer's cross-attention,
    averaged over heads."""

    has_attention = True

    def __init__(self, vocab: int, c, t):
        super().__init__(vocab, c.emb_dim, c.dropout)
        E = c.emb_dim
        self.heads = t.heads
        enc = nn.TransformerEncoderLayer(
            E, t.heads, t.ff, c.dropout, batch_first=True, norm_first=True
        )
        dec = nn.TransformerDecoderLayer(
            E, t.heads, t.ff, c.dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(
            enc, t.layers, norm=nn.LayerNorm(E), enable_nested_tensor=False
        )
        self.decoder = nn.TransformerDecoder(dec, t.layers, norm=nn.LayerNorm(E))
        self.positions = SinusoidalPositions(E)
        # an intervention on the cross-attention weights of the step path
        # (firth.nmt.faithfulness): (weights (B, heads, 1, S), mask (B, S)) ->
        # weights; None in training and ordinary decoding
        self.edit = None

    def _embed(self, ids, offset: int = 0):
        return self.drop(
            self.embedding(ids) * self.emb_dim**0.5
            + self.positions(ids.shape[1], offset).to(self.embedding.weight.dtype)
        )

    def _split(self, x):  # (B, T, E) -> (B, heads, T, E / heads)
        B, T, E = x.shape
        return x.view(B, T, self.heads, E // self.heads).transpose(1, 2)

    def _merge(self, x):  # (B, heads, T, d) -> (B, T, heads * d)
        B, h, T, d = x.shape
        return x.transpose(1, 2).reshape(B, T, h * d)

    def _encode(self, src, mask):
        return self.encoder(self._embed(src), src_key_padding_mask=~mask)

    def encode(self, src, mask):
        values = self._encode(src, mask)
        memory = {"mask": mask, "values": values}
        for i, layer in enumerate(self.decoder.layers):
            mha = layer.multihead_attn
            _, w_k, w_v = mha.in_proj_weight.chunk(3)
            _, b_k, b_v = mha.in_proj_bias.chunk(3)
            memory[f"k{i}"] = self._split(F.linear(values, w_k, b_k))
            memory[f"v{i}"] = self._split(F.linear(values, w_v, b_v))
        return memory

    def start(self, memory):
        B, E = memory["mask"].shape[0], self.emb_dim
        d = E // self.heads
        empty = memory["values"].new_zeros((B, self.heads, 0, d))
        n = len(self.decoder.layers)
        return {f"{kv}{i}": empty for i in range(n) for kv in ("k", "v")}

    @staticmethod
    def _attend(q, k, v, mask=None, edit=None):
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None, :], -math.inf)
        weights = torch.softmax(scores, dim=-1)
        if edit is not None:
            weights = edit(weights, mask)
        return weights @ v, weights

    def step(self, y_prev, state, memory):
        x = self._embed(y_prev[:, None], offset=state["k0"].shape[2])  # (B, 1, E)
        new = {}
        for i, layer in enumerate(self.decoder.layers):
            sa = layer.self_attn
            q, k, v = F.linear(
                layer.norm1(x), sa.in_proj_weight, sa.in_proj_bias
            ).chunk(3, dim=-1)
            new[f"k{i}"] = torch.cat([state[f"k{i}"], self._split(k)], 2)
            new[f"v{i}"] = torch.cat([state[f"v{i}"], self._split(v)], 2)
            a, _ = self._attend(self._split(q), new[f"k{i}"], new[f"v{i}"])
            x = x + layer.dropout1(sa.out_proj(self._merge(a)))
            mha = layer.multihead_attn
            w_q, _, _ = mha.in_proj_weight.chunk(3)
            b_q, _, _ = mha.in_proj_bias.chunk(3)
            q = self._split(F.linear(layer.norm2(x), w_q, b_q))
            a, weights = self._attend(
                q, memory[f"k{i}"], memory[f"v{i}"], memory["mask"], self.edit
            )
            x = x + layer.dropout2(mha.out_proj(self._merge(a)))
            h = layer.linear2(
                layer.dropout(layer.activation(layer.linear1(layer.norm3(x))))
            )
            x = x + layer.dropout3(h)
        return self.decoder.norm(x)[:, 0], new, weights.mean(1)[:, 0]

    def _decode(self, tgt_in, values, mask):
        T = tgt_in.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(
            T, device=tgt_in.device, dtype=self.embedding.weight.dtype
        )
        return self.decoder(
            self._embed(tgt_in),
            values,
            tgt_mask=causal,
            tgt_is_causal=True,
            memory_key_padding_mask=~mask,
        )

    def forward(self, src, mask, tgt_in):
        """Teacher forcing in one pass over all positions (no attention returned)."""
        values = self._encode(src, mask)
        return self.logits(self._decode(tgt_in, values, mask)), None
