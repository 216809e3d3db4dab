"""Neural language models with one interface: ``forward(x, state) -> (features,
state)`` over a segment x (B, T) of token ids, features (B, T, emb_dim) fed to the
(adaptive, optionally tied) softmax, and a state carried to the next segment
(truncated backpropagation through time: the trainer detaches it).

- ``ffnn``: Bengio et al. (2003): the embeddings of the previous n-1 tokens,
  concatenated, through a tanh layer; the state is the last n-1 ids.
- ``elman``, ``lstm``, ``gru``: torch's nn.RNN (tanh) / nn.LSTM / nn.GRU (their
  equations are checked against firth.lm.cells); the state is the hidden state.
- ``transformer``: a causal pre-LN transformer with learned positions; the state is
  the last ``memory`` ids, re-read (not back-propagated into) with each segment, so
  every token sees at least ``memory`` tokens of context once the stream is warm.
"""

from __future__ import annotations

import torch
from torch import nn

from firth.lm.softmax import AdaptiveSoftmax


class LanguageModel(nn.Module):
    def __init__(
        self, vocab: int, emb_dim: int, cutoffs: list[int], tie: bool, dropout: float
    ):
        super().__init__()
        self.vocab, self.emb_dim = vocab, emb_dim
        self.embedding = nn.Embedding(vocab, emb_dim)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        self.drop = nn.Dropout(dropout)
        self.softmax = AdaptiveSoftmax(
            emb_dim, vocab, cutoffs, tied=self.embedding.weight if tie else None
        )

    def init_state(self, batch: int, device: torch.device):
        raise NotImplementedError

    @staticmethod
    def detach(state):
        if isinstance(state, tuple):
            return tuple(s.detach() for s in state)
        return state.detach()

    def forward(self, x: torch.Tensor, state):
        raise NotImplementedError

    def log_prob_of(self, x, y, state):
        """log p(y_t | x_<=t) for a segment, (B, T), and the next state; targets
        -100 (padding) give 0."""
        feats, state = self(x, state)
        flat_y = y.reshape(-1)
        keep = flat_y >= 0
        # at least fp32 (autocast may give bf16 features)
        dtype = torch.promote_types(feats.dtype, torch.float32)
        lp = torch.zeros(flat_y.shape, dtype=dtype, device=feats.device)
        if bool(keep.any()):
            rows = keep.nonzero().squeeze(1)
            lp = lp.index_put(
                (rows,),
                self.softmax.log_prob_of(
                    feats.reshape(-1, self.emb_dim)[rows], flat_y[rows]
                ).to(dtype),
            )
        return lp.view(y.shape), state


class FFNN(LanguageModel):
    def __init__(
        self,
        vocab,
        emb_dim,
        cutoffs,
        tie,
        dropout,
        *,
        context: int,
        hidden: int,
        eos: int,
    ):
        super().__init__(vocab, emb_dim, cutoffs, tie, dropout)
        self.context, self.eos = context, eos  # a fresh stream's history is all </s>
        self.hidden = nn.Linear(context * emb_dim, hidden)
        self.out = nn.Linear(hidden, emb_dim)

    def init_state(self, batch, device):
        return torch.full(
            (batch, self.context - 1), self.eos, dtype=torch.long, device=device
        )

    def forward(self, x, state):
        n = self.context
        seq = torch.cat([state, x], dim=1) if n > 1 else x  # (B, n-1+T)
        windows = seq.unfold(1, n, 1)  # (B, T, n): the n tokens ending at each input
        e = self.drop(self.embedding(windows)).flatten(2)  # (B, T, n*d)
        h = self.drop(torch.tanh(self.hidden(e)))
        return self.out(h), seq[:, seq.shape[1] - (n - 1) :] if n > 1 else state


class RNN(LanguageModel):
    def __init__(
        self,
        vocab,
        emb_dim,
        cutoffs,
        tie,
        dropout,
        *,
        cell: str,
        hidden: int,
        layers: int,
        forget_bias: float = 0.0,
    ):
        super().__init__(vocab, emb_dim, cutoffs, tie, dropout)
        cls = {"elman": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[cell]
        kw = {"nonlinearity": "tanh"} if cell == "elman" else {}
        self.cell, self.hidden, self.layers = cell, hidden, layers
        self.rnn = cls(
            emb_dim,
            hidden,
            layers,
            batch_first=True,
            dropout=dropout if layers > 1 else 0.0,
            **kw,
        )
        if cell == "lstm" and forget_bias:
            with torch.no_grad():
                for name, p in self.rnn.named_parameters():
                    if name.startswith("bias_ih"):
                        p[hidden : 2 * hidden].fill_(
                            forget_bias
                        )  # gate order i, f, g, o
                    elif name.startswith("bias_hh"):
                        p[hidden : 2 * hidden].zero_()
        self.out = nn.Linear(hidden, emb_dim) if hidden != emb_dim else nn.Identity()

    def init_state(self, batch, device):
        z = torch.zeros(
            self.layers,
            batch,
            self.hidden,
            device=device,
            dtype=self.embedding.weight.dtype,
        )
        return (z, z.clone()) if self.cell == "lstm" else z

    def forward(self, x, state):
        out, state = self.rnn(self.drop(self.embedding(x)), state)
        return self.out(self.drop(out)), state

    def step(self, e_t: torch.Tensor, state):
        """One time step from embedded input e_t (B, emb_dim): (top h_t, state)."""
        _, state = self.rnn(e_t.unsqueeze(1), state)
        h = state[0] if self.cell == "lstm" else state
        return h[-1], state


class Transformer(LanguageModel):
    def __init__(
        self,
        vocab,
        emb_dim,
        cutoffs,
        tie,
        dropout,
        *,
        layers: int,
        heads: int,
        ff: int,
        memory: int,
        max_segment: int,
    ):
        super().__init__(vocab, emb_dim, cutoffs, tie, dropout)
        self.memory = memory
        self.max_len = memory + max_segment
        self.position = nn.Embedding(self.max_len, emb_dim)
        nn.init.normal_(self.position.weight, std=0.02)
        layer = nn.TransformerEncoderLayer(
            emb_dim,
            heads,
            ff,
            dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(emb_dim)

    def init_state(self, batch, device):
        return torch.zeros((batch, 0), dtype=torch.long, device=device)

    def forward(self, x, state):
        T = x.shape[1]
        seq = torch.cat([state, x], dim=1)
        L = seq.shape[1]
        if L > self.max_len:
            raise ValueError(
                f"segment of {T} tokens is longer than the model's "
                f"{self.max_len - self.memory}"
            )
        pos = torch.arange(L, device=x.device)
        h = self.drop(self.embedding(seq) * self.emb_dim**0.5 + self.position(pos))
        mask = nn.Transformer.generate_square_subsequent_mask(L, device=x.device)
        h = self.norm(self.encoder(h, mask=mask, is_causal=True))
        new_state = seq[:, max(0, L - self.memory) :] if self.memory else state
        return h[:, L - T :], new_state


FAMILIES = ("kn", "ffnn", "elman", "lstm", "gru", "transformer")


def build_model(family: str, vocab: int, cfg, *, eos: int) -> LanguageModel:
    """The model of ``family`` from the ``lm`` params section ``cfg``."""
    c = cfg.common
    args = (vocab, c.emb_dim, list(c.cutoffs), c.tie, c.dropout)
    if family == "ffnn":
        return FFNN(*args, context=cfg.ffnn.context, hidden=cfg.ffnn.hidden, eos=eos)
    if family in ("elman", "lstm", "gru"):
        r = getattr(cfg, family)
        return RNN(
            *args,
            cell=family,
            hidden=r.hidden,
            layers=r.layers,
            forget_bias=r.forget_bias,
        )
    if family == "transformer":
        t = cfg.transformer
        return Transformer(
            *args,
            layers=t.layers,
            heads=t.heads,
            ff=t.ff,
            memory=t.memory,
            max_segment=c.bptt,
        )
    raise ValueError(f"no neural model for family {family!r}")
