"""The recurrent encoder-decoders: a bidirectional GRU or LSTM encoder, a
one-cell decoder, and one class per decoder (the family's step): the
bottleneck and the target-side LM (``Plain``), Cho's context vector
(``Context``), Bahdanau's additive attention (``Bahdanau``, with the coverage
switch) and Luong's multiplicative attention with input feeding (``Luong``); the
attention models can be pointer-generators (firth.nmt.models.pointer). See
firth.nmt.models for the equations."""

from __future__ import annotations

import torch
from torch import nn

from firth.layers import BiRNN
from firth.nmt.data import UNK
from firth.nmt.models.attention import Attention
from firth.nmt.models.base import Seq2Seq
from firth.nmt.models.pointer import PointerGenerator


class Encoder(nn.Module):
    def __init__(self, cell: str, emb_dim: int, hidden: int, layers: int, dropout):
        super().__init__()
        self.rnn = BiRNN(
            cell, emb_dim, hidden // 2, layers, dropout if layers > 1 else 0.0
        )

    def forward(self, emb: torch.Tensor, mask: torch.Tensor):
        """Annotations (B, S, hidden), zero on padding, and the summary
        [h_fwd at the last real token; h_bwd at the first] (B, hidden)."""
        return self.rnn(emb, mask.sum(1))


class Cell(nn.Module):
    """A GRU or LSTM cell over a state dict {'h'} or {'h', 'c'}."""

    def __init__(self, rnn: str, inp: int, hidden: int):
        super().__init__()
        self.rnn = rnn
        self.cell = (nn.GRUCell if rnn == "gru" else nn.LSTMCell)(inp, hidden)

    def init(self, h: torch.Tensor) -> dict:
        return {"h": h} if self.rnn == "gru" else {"h": h, "c": torch.zeros_like(h)}

    def forward(self, x, state: dict) -> dict:
        if self.rnn == "gru":
            return {"h": self.cell(x, state["h"])}
        h, c = self.cell(x, (state["h"], state["c"]))
        return {"h": h, "c": c}


class Recurrent(PointerGenerator, Seq2Seq):
    """What every recurrent family shares: the encoder (none for the target-side
    LM), the bridge to the decoder's first state, the decoder cell, the pointer
    switch; a subclass adds its attention and readout (``layers``), its
    recurrence (``recur``) and its readout's inputs (``features``).

    Teacher forcing runs the recurrence step by step and the readout (and a
    pointer's mixture) once over all steps after the loop: one product over the
    batch's B x T positions instead of T small ones, forward and backward (the NMT
    row of benchmarks/results/throughput.json measures the stage). A family whose
    readout feeds the next step (Luong's input feeding) sets ``feeds_back`` and
    runs ``advance`` step by step."""

    attends = False  # the family has attention (pointer and coverage need it)
    feeds_back = False  # the readout is the next step's input

    def __init__(
        self, model: str, vocab: int, c, *, pointer: bool = False, coverage=False
    ):
        super().__init__(vocab, c.emb_dim, c.dropout)
        E, H = c.emb_dim, c.hidden
        self.model = model
        self.has_attention = self.attends
        if (pointer or coverage) and not self.has_attention:
            raise ValueError(f"{model}: pointer and coverage need an attention model")
        if coverage and model != "bahdanau":
            raise ValueError(f"{model}: the coverage vector enters Bahdanau's scorer")
        self.pointer, self.coverage = pointer, coverage
        self.recorded: list | None = None  # pointer parts per step, when recording
        self.encoder = (
            None if model == "target-lm" else Encoder(c.cell, E, H, c.layers, c.dropout)
        )
        if self.encoder is not None:
            self.bridge = nn.Linear(H, H)
        else:
            self.h0 = nn.Parameter(torch.zeros(H))
        self.cell = Cell(c.cell, E + self.cell_input(E, H), H)
        self.layers(E, H)
        if pointer:
            self.switch = nn.Linear(H + H + E, 1)  # p_gen from [c_i; s_i; E y_{i-1}]

    def cell_input(self, E: int, H: int) -> int:
        """Units fed to the cell beside the embedding of the previous token."""
        return 0

    def layers(self, E: int, H: int) -> None:
        """The family's attention and readout."""
        raise NotImplementedError

    def recur(self, e, state, memory):
        """One step of the recurrence from the previous token's embedding ``e``:
        the new state, the context vector and the attention (or None). A family
        that ``feeds_back`` overrides ``advance`` instead."""
        raise NotImplementedError

    def features(self, h, ctx, e):
        """The readout from the new state, the context and the previous token's
        embedding: one step (B, .) or every step at once (B, T, .)."""
        raise NotImplementedError

    def advance(self, e, state, memory):
        """One decoder step: the features, the new state, the context vector and
        the attention (or None)."""
        state, ctx, attn = self.recur(e, state, memory)
        return self.features(state["h"], ctx, e), state, ctx, attn

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
        return self.cell.init(h)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Next-token scores; a pointer model's features are already its
        log-probabilities over the extended vocabulary."""
        return features if self.pointer else super().logits(features)

    def step(self, y_prev, state, memory):
        e = self.drop(self.embedding(self._ids(y_prev)))
        feat, state, ctx, attn = self.advance(e, state, memory)
        if self.pointer:
            feat = self._mix(feat, ctx, state["h"], e, attn, memory["src"])
        return feat, state, attn

    def forward(self, src, mask, tgt_in):
        """Teacher forcing: logits (B, T, V) and the attention (B, T, S) or None;
        ``step`` by ``step`` gives the same (tests/test_nmt_decode.py)."""
        if self.feeds_back:
            return super().forward(src, mask, tgt_in)
        memory = self.encode(src, mask)
        state = self.start(memory)
        e = self.drop(self.embedding(self._ids(tgt_in)))
        hs, ctxs, attns = [], [], []
        for t in range(tgt_in.shape[1]):
            state, ctx, attn = self.recur(e[:, t], state, memory)
            hs.append(state["h"])
            ctxs.append(ctx)
            attns.append(attn)
        h = torch.stack(hs, 1)
        ctx = None if ctxs[0] is None else torch.stack(ctxs, 1)
        attn = None if attns[0] is None else torch.stack(attns, 1)
        feat = self.features(h, ctx, e)
        if self.pointer:
            feat = self._mix(feat, ctx, h, e, attn, memory["src"])
        return self.logits(feat), attn


class Plain(Recurrent):
    """``none`` (the fixed-vector bottleneck: s_0 is the only link to the source)
    and ``target-lm`` (no encoder): s_i = f(s_{i-1}, E y_{i-1})."""

    def layers(self, E: int, H: int) -> None:
        self.readout = nn.Linear(H + E, E)

    def recur(self, e, state, memory):
        return self.cell(e, state), None, None

    def features(self, h, ctx, e):
        return torch.tanh(self.readout(torch.cat([h, e], -1)))


class Context(Recurrent):
    """Cho et al. (2014): the summary c feeds every state update and the readout."""

    def cell_input(self, E: int, H: int) -> int:
        return H

    def layers(self, E: int, H: int) -> None:
        self.readout = nn.Linear(H + H + E, E)

    def recur(self, e, state, memory):
        c = memory["summary"]
        return self.cell(torch.cat([e, c], -1), state), c, None

    def features(self, h, ctx, e):
        return torch.tanh(self.readout(torch.cat([h, ctx, e], -1)))


class Bahdanau(Recurrent):
    """Additive attention scored from the previous state (with the coverage
    vector when asked); the context feeds the cell and the readout."""

    attends = True

    def cell_input(self, E: int, H: int) -> int:
        return H

    def layers(self, E: int, H: int) -> None:
        self.attention = Attention("additive", H, H, self.coverage)
        self.readout = nn.Linear(H + H + E, E)

    def start(self, memory):
        state = super().start(memory)
        if self.coverage:
            state["cov"] = memory["values"].new_zeros(memory["mask"].shape)
        return state

    def recur(self, e, state, memory):
        ctx, attn = self.attention(
            state["h"],
            memory["keys"],
            memory["values"],
            memory["mask"],
            state["cov"] if self.coverage else None,
        )
        new = self.cell(torch.cat([e, ctx], -1), state)
        if self.coverage:
            new["cov"] = state["cov"] + attn
        return new, ctx, attn

    def features(self, h, ctx, e):
        return torch.tanh(self.readout(torch.cat([h, ctx, e], -1)))


class Luong(Recurrent):
    """Multiplicative attention (general or dot) scored from the current state;
    the attentional vector is the readout and is fed to the next step."""

    attends = True
    feeds_back = True

    def cell_input(self, E: int, H: int) -> int:
        return E  # input feeding of the attentional vector

    def layers(self, E: int, H: int) -> None:
        self.attention = Attention(self.model.split("-")[1], H, H)
        self.readout = nn.Linear(H + H, E)

    def start(self, memory):
        state = super().start(memory)
        state["feed"] = state["h"].new_zeros(state["h"].shape[0], self.emb_dim)
        return state

    def advance(self, e, state, memory):
        new = self.cell(torch.cat([e, state["feed"]], -1), state)
        ctx, attn = self.attention(
            new["h"], memory["keys"], memory["values"], memory["mask"]
        )
        feat = torch.tanh(self.readout(torch.cat([ctx, new["h"]], -1)))
        return feat, {**new, "feed": feat}, ctx, attn


DECODERS: dict[str, type[Recurrent]] = {
    "none": Plain,
    "target-lm": Plain,
    "context": Context,
    "bahdanau": Bahdanau,
    "luong-general": Luong,
    "luong-dot": Luong,
}
