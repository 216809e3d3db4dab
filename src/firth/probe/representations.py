"""Frozen token representations for probing (firth.probe): every layer of a
language model run over each sentence on its own, or a word-vector table.

- A word-level LM (firth.lm.models) reads ``</s>`` and then the sentence's words,
  lowercased as its training text is and mapped to ``<unk>`` where it has no id
  (as the model itself would); the representation of word t is the state after
  reading it. Layer 0 is the input embedding (the transformer's: scaled, plus its
  position), layer k the output of recurrent layer k or of transformer block k
  (the transformer's last layer after its final LayerNorm, what its softmax reads).
- Word vectors: one layer; a word is looked up as written, then lowercased, and a
  word without a vector gets the zero vector (nothing to read).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from firth.embeddings.vectors import Embedding
from firth.lm.data import Vocabulary
from firth.lm.models import RNN, LanguageModel, Transformer


def lm_ids(vocab: Vocabulary, words: list[str]) -> list[int]:
    """``</s>`` then each word's id (lowercased; <unk> where unknown)."""
    return [vocab.eos, *vocab.encode_line(" ".join(w.lower() for w in words))]


def _single_layers(rnn: nn.RNNBase) -> list[nn.RNNBase]:
    """One-layer copies of each layer of a multi-layer nn.RNN/LSTM/GRU (the same
    weights), so every layer's outputs can be read."""
    out = []
    for k in range(rnn.num_layers):
        kw = {"nonlinearity": rnn.nonlinearity} if isinstance(rnn, nn.RNN) else {}
        one = type(rnn)(
            rnn.input_size if k == 0 else rnn.hidden_size,
            rnn.hidden_size,
            1,
            batch_first=True,
            **kw,
        )
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(one, f"{name}_l0").copy_(getattr(rnn, f"{name}_l{k}"))
        out.append(one.eval())
    return out


def _transformer_layers(model: Transformer, x: torch.Tensor) -> list[torch.Tensor]:
    """Every layer over x (1, L), L at most the model's window; the top one
    normalised as the model's output is."""
    L = x.shape[1]
    h = model.embedding(x) * model.emb_dim**0.5 + model.position(torch.arange(L))
    layers = [h]
    mask = nn.Transformer.generate_square_subsequent_mask(L)
    blocks = list(model.encoder.layers)
    for k, block in enumerate(blocks):
        h = block(h, src_mask=mask, is_causal=True)
        layers.append(model.norm(h) if k == len(blocks) - 1 else h)
    return layers


@torch.no_grad()
def lm_layers(model: LanguageModel, ids: list[int]) -> list[torch.Tensor]:
    """Every layer's representation of the words of one sentence ``ids`` (</s>
    first): a list of (T, d) tensors, layer 0 the embedding."""
    model.eval()
    x = torch.tensor([ids])  # (1, T + 1)
    if isinstance(model, RNN):
        h = model.embedding(x)
        layers = [h]
        for one in _single_layers(model.rnn):
            h, _ = one(h)
            layers.append(h)
    elif isinstance(model, Transformer):
        # a sentence longer than the model's window is read as it reads a
        # stream: the rest in segments, each after the previous `memory` tokens
        layers = _transformer_layers(model, x[:, : model.max_len])
        step = model.max_len - model.memory
        for lo in range(model.max_len, x.shape[1], step):
            more = _transformer_layers(model, x[:, lo - model.memory : lo + step])
            keep = more[0].shape[1] - model.memory
            pairs = zip(layers, more, strict=True)
            layers = [torch.cat([a, b[:, -keep:]], 1) for a, b in pairs]
    else:
        raise ValueError(f"{type(model).__name__}: no layers to probe")
    return [t[0, 1:].float() for t in layers]  # drop the </s> position


def vector_layer(
    emb: Embedding, words: list[str], index: dict[str, int] | None = None
) -> torch.Tensor:
    """(T, d): each word's vector (as written, else lowercased, else zeros);
    ``index``: ``emb.index()``, built once by a caller with many sentences."""
    index = emb.index() if index is None else index
    rows = np.zeros((len(words), emb.dim), dtype=np.float32)
    for t, w in enumerate(words):
        i = index.get(w, index.get(w.lower()))
        if i is not None:
            rows[t] = emb.matrix[i]
    return torch.from_numpy(rows)


def coverage(vocab_has, words: list[list[str]]) -> float:
    """The share of tokens ``vocab_has`` knows."""
    flat = [w for s in words for w in s]
    return sum(bool(vocab_has(w)) for w in flat) / max(1, len(flat))
