"""Encoder-decoder models over one joint subword vocabulary (the source, target and
output embeddings are one tied matrix).

Every model offers the same decoding interface, used by teacher forcing, greedy and
beam search alike:

- ``encode(src, mask) -> memory``: a dict of tensors with the batch in dim 0;
- ``start(memory) -> state``: the decoder state before ``<s>`` (a dict, batch in dim 0);
- ``step(y_prev, state, memory) -> (features, state, attention)``: one target
  position; ``logits(features)`` gives the next-token scores, ``attention`` (B, S)
  the weights over source positions (rows sum to 1, exactly 0 on padding) or None.

Recurrent models (``cell`` gru or lstm): a bidirectional encoder of ``layers`` layers
with hidden/2 units per direction, so annotations h_j have ``hidden`` units; the
decoder is one cell of ``hidden`` units started from s_0 = tanh(W [h_fwd_S; h_bwd_1]).

- ``none``: the fixed-vector bottleneck (Sutskever et al. 2014): s_0 is the only link
  between source and target; s_i = f(s_{i-1}, E y_{i-1}).
- ``context``: Cho et al. (2014): the summary c = [h_fwd_S; h_bwd_1] is also fed to
  every state update and to the output layer.
- ``bahdanau``: additive attention scored from the previous state,
  e_ij = v^T tanh(W s_{i-1} + U h_j); s_i = f(s_{i-1}, [E y_{i-1}; c_i]); output
  layer on [s_i; c_i; E y_{i-1}] (Bahdanau et al. 2015).
- ``luong-general`` / ``luong-dot``: multiplicative attention scored from the
  current state, s_i^T W h_j or s_i^T h_j; attentional layer
  h~_i = tanh(W_c [c_i; s_i]) fed to the output and to the next step's input
  (input feeding) (Luong et al. 2015).
- ``target-lm``: the decoder alone, no source (the target-side language model
  baseline).
- ``transformer``: a pre-LN encoder-decoder transformer with sinusoidal positions
  (Vaswani et al. 2017), for reference.

Two switches extend the recurrent attention models (See et al. 2017, Tu et al.
2016):

- ``pointer``: a pointer-generator. A soft switch p_gen = sigmoid(w_c . c_i + w_s .
  s_i + w_y . E y_{i-1} + b) mixes generation and copying,
  P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{j: x_j = w} a_ij. Source ids at or
  above the vocabulary size are the sentence's own out-of-vocabulary tokens
  (firth.nmt.data.encode_extended): they are read as ``<unk>`` and can only be
  copied, so the output distribution spans the vocabulary plus the batch's extra
  ids. ``logits`` of a pointer model are these log-probabilities.
- ``coverage``: the coverage vector cov_i = sum_{i' < i} a_i' (attention so far)
  enters the additive scorer, e_ij = v^T tanh(W s_{i-1} + U h_j + w_cov cov_ij)
  (``bahdanau`` only). The coverage loss (firth.nmt.train.coverage_loss_sum) works
  for every attention model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from firth.nmt.data import PAD, UNK

TINY = 1e-30  # log-probabilities of impossible tokens are log(TINY), not -inf


def select(tree: dict, index: torch.Tensor) -> dict:
    """Rows ``index`` of every tensor in a memory or state dict (beam reordering)."""
    return {k: v.index_select(0, index) for k, v in tree.items()}


def repeat(tree: dict, k: int) -> dict:
    """Each row repeated ``k`` times in place (B -> B*k, sentence-major)."""
    return {k_: v.repeat_interleave(k, dim=0) for k_, v in tree.items()}


class Attention(nn.Module):
    """Additive (Bahdanau) or multiplicative (Luong general / dot) attention with a
    source mask: padding gets weight exactly 0."""

    def __init__(self, kind: str, query_dim: int, key_dim: int, coverage=False):
        super().__init__()
        self.kind = kind
        if coverage and kind != "additive":
            raise ValueError("coverage enters the additive (Bahdanau) scorer only")
        if kind == "additive":
            self.w_query = nn.Linear(query_dim, key_dim, bias=False)
            self.w_key = nn.Linear(key_dim, key_dim)
            self.v = nn.Linear(key_dim, 1, bias=False)
            if coverage:
                self.w_cov = nn.Linear(1, key_dim, bias=False)
        elif kind == "general":
            self.w_key = nn.Linear(key_dim, query_dim, bias=False)
        elif kind == "dot":
            if query_dim != key_dim:
                raise ValueError("dot attention needs query and key of one size")
        else:
            raise ValueError(f"unknown attention {kind!r}")

    def keys(self, values: torch.Tensor) -> torch.Tensor:
        """The part of the score that depends only on the source (computed once)."""
        return values if self.kind == "dot" else self.w_key(values)

    def forward(self, query, keys, values, mask, coverage=None):
        if self.kind == "additive":
            pre = self.w_query(query)[:, None] + keys
            if coverage is not None:
                pre = pre + self.w_cov(coverage[..., None])
            scores = self.v(torch.tanh(pre)).squeeze(-1)
        else:
            scores = torch.bmm(keys, query[:, :, None]).squeeze(-1)
        weights = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
        return torch.bmm(weights[:, None], values).squeeze(1), weights


class Encoder(nn.Module):
    def __init__(self, cell: str, emb_dim: int, hidden: int, layers: int, dropout):
        super().__init__()
        cls = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = cls(
            emb_dim,
            hidden // 2,
            layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if layers > 1 else 0.0,
        )

    def forward(self, emb: torch.Tensor, mask: torch.Tensor):
        """Annotations (B, S, hidden), zero on padding, and the summary
        [h_fwd at the last real token; h_bwd at the first] (B, hidden)."""
        lengths = mask.sum(1).cpu()
        packed = pack_padded_sequence(
            emb, lengths, batch_first=True, enforce_sorted=False
        )
        out, h = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=emb.shape[1])
        if isinstance(h, tuple):
            h = h[0]
        return out, torch.cat([h[-2], h[-1]], dim=-1)


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


class Cell(nn.Module):
    """A GRU or LSTM cell over a state dict {'h'} or {'h', 'c'}."""

    def __init__(self, kind: str, inp: int, hidden: int):
        super().__init__()
        self.kind = kind
        self.cell = (nn.GRUCell if kind == "gru" else nn.LSTMCell)(inp, hidden)

    def init(self, h: torch.Tensor) -> dict:
        return {"h": h} if self.kind == "gru" else {"h": h, "c": torch.zeros_like(h)}

    def forward(self, x, state: dict) -> dict:
        if self.kind == "gru":
            return {"h": self.cell(x, state["h"])}
        h, c = self.cell(x, (state["h"], state["c"]))
        return {"h": h, "c": c}


def mixture(p_vocab, p_gen, attention, src_ids, width: int) -> torch.Tensor:
    """The pointer-generator distribution over ``width`` >= V ids:
    p_gen * P_vocab (on the first V ids) + (1 - p_gen) * the attention mass of each
    source position added onto that position's id. p_vocab (B, V), p_gen (B, 1),
    attention and src_ids (B, S)."""
    out = p_vocab.new_zeros(p_vocab.shape[0], width)
    out[:, : p_vocab.shape[1]] = p_gen * p_vocab
    return out.scatter_add(1, src_ids, (1 - p_gen) * attention)


class Recurrent(Seq2Seq):
    def __init__(
        self, kind: str, vocab: int, c, *, pointer: bool = False, coverage=False
    ):
        super().__init__(vocab, c.emb_dim, c.dropout)
        E, H = c.emb_dim, c.hidden
        self.kind = kind
        self.has_attention = kind in ("bahdanau", "luong-general", "luong-dot")
        if (pointer or coverage) and not self.has_attention:
            raise ValueError(f"{kind}: pointer and coverage need an attention model")
        if coverage and kind != "bahdanau":
            raise ValueError(f"{kind}: the coverage vector enters Bahdanau's scorer")
        self.pointer, self.coverage = pointer, coverage
        self.recorded: list | None = None  # pointer parts per step, when recording
        self.encoder = (
            None if kind == "target-lm" else Encoder(c.cell, E, H, c.layers, c.dropout)
        )
        if self.encoder is not None:
            self.bridge = nn.Linear(H, H)
        else:
            self.h0 = nn.Parameter(torch.zeros(H))
        extra_in = {"context": H, "bahdanau": H}.get(kind, 0)
        if kind.startswith("luong"):
            extra_in = E  # input feeding of the attentional vector
        self.cell = Cell(c.cell, E + extra_in, H)
        if kind == "bahdanau":
            self.attention = Attention("additive", H, H, coverage)
            self.readout = nn.Linear(H + H + E, E)
        elif kind.startswith("luong"):
            self.attention = Attention(kind.split("-")[1], H, H)
            self.readout = nn.Linear(H + H, E)
        elif kind == "context":
            self.readout = nn.Linear(H + H + E, E)
        else:
            self.readout = nn.Linear(H + E, E)
        if pointer:
            self.switch = nn.Linear(H + H + E, 1)  # p_gen from [c_i; s_i; E y_{i-1}]

    def _ids(self, ids):
        """Extended (copy-only) ids are read as <unk>."""
        return ids.masked_fill(ids >= self.vocab, UNK) if self.pointer else ids

    def encode(self, src, mask):
        if self.encoder is None:
            return {"mask": mask}
        values, summary = self.encoder(self.drop(self.embedding(self._ids(src))), mask)
        memory = {"mask": mask, "summary": summary, "values": values}
        if self.has_attention:
            memory["keys"] = self.attention.keys(values)
        if self.pointer:
            memory["src"] = src
        return memory

    def start(self, memory):
        B = memory["mask"].shape[0]
        if self.encoder is None:
            h = self.h0.expand(B, -1).contiguous()
        else:
            h = torch.tanh(self.bridge(memory["summary"]))
        state = self.cell.init(h)
        if self.kind.startswith("luong"):
            state["feed"] = h.new_zeros(B, self.emb_dim)
        if self.coverage:
            state["cov"] = memory["values"].new_zeros(memory["mask"].shape)
        return state

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Next-token scores; a pointer model's features are already its
        log-probabilities over the extended vocabulary."""
        return features if self.pointer else super().logits(features)

    def step(self, y_prev, state, memory):
        e = self.drop(self.embedding(self._ids(y_prev)))
        kind, attn = self.kind, None
        if kind == "bahdanau":
            ctx, attn = self.attention(
                state["h"],
                memory["keys"],
                memory["values"],
                memory["mask"],
                state["cov"] if self.coverage else None,
            )
            new = self.cell(torch.cat([e, ctx], -1), state)
            feat = torch.tanh(self.readout(torch.cat([new["h"], ctx, e], -1)))
            if self.coverage:
                new["cov"] = state["cov"] + attn
            state = new
        elif kind.startswith("luong"):
            new = self.cell(torch.cat([e, state["feed"]], -1), state)
            ctx, attn = self.attention(
                new["h"], memory["keys"], memory["values"], memory["mask"]
            )
            feat = torch.tanh(self.readout(torch.cat([ctx, new["h"]], -1)))
            state = {**new, "feed": feat}
        elif kind == "context":
            c = memory["summary"]
            state = self.cell(torch.cat([e, c], -1), state)
            feat = torch.tanh(self.readout(torch.cat([state["h"], c, e], -1)))
        else:  # none, target-lm
            state = self.cell(e, state)
            feat = torch.tanh(self.readout(torch.cat([state["h"], e], -1)))
        if self.pointer:
            feat = self._mix(feat, ctx, state["h"], e, attn, memory["src"])
        return feat, state, attn

    def _mix(self, feat, ctx, s, e, attn, src):
        """log P of the pointer-generator over V + the batch's extended ids."""
        p_vocab = torch.softmax(super().logits(feat), dim=-1)
        p_gen = torch.sigmoid(self.switch(torch.cat([ctx, s, e], -1)))
        width = max(self.vocab, int(src.max()) + 1)
        p = mixture(p_vocab, p_gen, attn, src, width)
        if self.recorded is not None:
            self.recorded.append((p_gen[:, 0], p_gen * p_vocab, p))
        return p.clamp_min(TINY).log()

    @torch.no_grad()
    def copy_parts(self, src, mask, tgt_in, tgt_out):
        """Teacher-forced over given outputs: p_gen (B, T) and the share of each
        output token's probability that came from copying, (B, T)."""
        self.recorded = []
        try:
            self(src, mask, tgt_in)
            p_gen = torch.stack([r[0] for r in self.recorded], 1)
            share = []
            for t, (_, gen, p) in enumerate(self.recorded):
                y = tgt_out[:, t : t + 1]
                total = p.gather(1, y)[:, 0]
                generated = gen.gather(1, y.clamp_max(gen.shape[1] - 1))[:, 0]
                generated = torch.where(y[:, 0] < gen.shape[1], generated, 0.0)
                share.append(1 - generated / total.clamp_min(TINY))
            return p_gen, torch.stack(share, 1)
        finally:
            self.recorded = None


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
    def _attend(q, k, v, mask=None):
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None, :], -math.inf)
        weights = torch.softmax(scores, dim=-1)
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
                q, memory[f"k{i}"], memory[f"v{i}"], memory["mask"]
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


def build_model(
    model: str, vocab: int, cfg, *, pointer: bool = False, coverage: bool = False
) -> Seq2Seq:
    """The model named ``model`` (an ``nmt.runs`` model) from the ``nmt`` section,
    with the pointer-generator and the coverage vector when asked."""
    if model == "transformer":
        if pointer or coverage:
            raise ValueError("transformer: pointer and coverage are recurrent only")
        return Transformer(vocab, cfg.common, cfg.transformer)
    return Recurrent(model, vocab, cfg.common, pointer=pointer, coverage=coverage)
