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

from firth.nmt.models.base import TINY, Seq2Seq, repeat, select
from firth.nmt.models.pointer import mixture
from firth.nmt.models.recurrent import DECODERS, Recurrent
from firth.nmt.models.transformer import Transformer

__all__ = [
    "TINY",
    "Recurrent",
    "Seq2Seq",
    "Transformer",
    "build_model",
    "mixture",
    "repeat",
    "select",
]


def build_model(
    model: str, vocab: int, cfg, *, pointer: bool = False, coverage: bool = False
) -> Seq2Seq:
    """The model named ``model`` (an ``nmt.runs`` model) from the ``nmt`` section,
    with the pointer-generator and the coverage vector when asked."""
    if model == "transformer":
        if pointer or coverage:
            raise ValueError("transformer: pointer and coverage are recurrent only")
        return Transformer(vocab, cfg.common, cfg.transformer)
    if model not in DECODERS:
        raise ValueError(f"unknown translation model {model!r}")
    cls = DECODERS[model]
    return cls(model, vocab, cfg.common, pointer=pointer, coverage=coverage)
