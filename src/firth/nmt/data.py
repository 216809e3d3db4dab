"""Parallel data for translation: TSV pairs (id, source, target) encoded with the
joint BPE tokenizer, and token-budget batches of similar lengths.

Ids follow firth.bpe.SPECIALS: ``<pad>`` 0, ``<unk>`` 1, ``<s>`` 2, ``</s>`` 3. A
source is its subwords then ``</s>``; the decoder reads ``<s> y`` and predicts
``y </s>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer

from firth.accel import mover
from firth.bpe import SPECIALS
from firth.errors import DataError

PAD, UNK, BOS, EOS = range(4)


@dataclass(frozen=True)
class Pairs:
    ids: list[str]
    source: list[str]
    target: list[str]

    def __len__(self) -> int:
        return len(self.ids)


def read_pairs(path: str | Path) -> Pairs:
    """Read ``id<TAB>source<TAB>target`` lines; a malformed line is an error that
    names the file and line."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found (run the parallel stages first)")
    ids, src, tgt = [], [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or not parts[1].strip() or not parts[2].strip():
                raise DataError(
                    f"{path}:{n}: expected 'id<TAB>source<TAB>target' with both "
                    f"sides non-empty, got {len(parts)} field(s)"
                )
            ids.append(parts[0])
            src.append(parts[1])
            tgt.append(parts[2])
    if not ids:
        raise DataError(f"{path}: no sentence pairs")
    return Pairs(ids, src, tgt)


def load_tokenizer(path: str | Path) -> Tokenizer:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: tokenizer not found (run tokenizer-parallel first)")
    tok = Tokenizer.from_file(str(path))
    for i, s in enumerate(SPECIALS):
        if tok.token_to_id(s) != i:
            raise DataError(f"{path}: special token {s!r} must have id {i}")
    return tok


def encode(tok: Tokenizer, lines: list[str]) -> list[list[int]]:
    return [e.ids for e in tok.encode_batch(lines)]


@dataclass(frozen=True)
class Extended:
    """Sentences encoded for a pointer-generator (See et al. 2017): each source
    span the tokenizer reads as ``<unk>`` gets a temporary id V + j (j: its rank
    among the sentence's distinct unknown spans), so it can be copied; a target
    ``<unk>`` span that also occurs in its source gets the same id, others stay
    ``<unk>``. ``oov[i][j]`` is the text of id V + j in sentence i."""

    src: list[list[int]]
    tgt: list[list[int]] | None
    oov: list[list[str]]


def _unknown_spans(text: str, enc) -> list[tuple[int, str]]:
    return [
        (k, text[a:b])
        for k, (i, (a, b)) in enumerate(zip(enc.ids, enc.offsets, strict=True))
        if i == UNK
    ]


def encode_extended(
    tok: Tokenizer, sources: list[str], targets: list[str] | None = None
) -> Extended:
    V = tok.get_vocab_size()
    src_enc = tok.encode_batch(sources)
    tgt_enc = tok.encode_batch(targets) if targets is not None else None
    src_out, tgt_out, oovs = [], [] if targets is not None else None, []
    for n, (text, enc) in enumerate(zip(sources, src_enc, strict=True)):
        ids, oov = list(enc.ids), []
        for k, span in _unknown_spans(text, enc):
            if span not in oov:
                oov.append(span)
            ids[k] = V + oov.index(span)
        src_out.append(ids)
        oovs.append(oov)
        if tgt_enc is not None:
            t = list(tgt_enc[n].ids)
            for k, span in _unknown_spans(targets[n], tgt_enc[n]):
                if span in oov:
                    t[k] = V + oov.index(span)
            tgt_out.append(t)
    return Extended(src_out, tgt_out, oovs)


def decode(tok: Tokenizer, ids: list[int], oov: list[str] = ()) -> str:
    """Text of output ids; ids at or above the vocabulary size are the sentence's
    copied unknown spans ``oov`` (see Extended)."""
    V = tok.get_vocab_size()
    if not any(i >= V for i in ids):
        return tok.decode([i for i in ids if i > EOS])
    parts = pieces(tok, [i for i in ids if i > EOS], oov)
    return tok.decoder.decode(parts) if tok.decoder else "".join(parts)


def pieces(tok: Tokenizer, ids: list[int], oov: list[str] = ()) -> list[str]:
    """The subword strings of ``ids`` (extended ids: their unknown spans)."""
    V = tok.get_vocab_size()
    return [oov[i - V] if i >= V else tok.id_to_token(i) for i in ids]


@dataclass(frozen=True)
class Batch:
    index: torch.Tensor  # (B,) positions in the data set
    src: torch.Tensor  # (B, S) ids, padded with PAD
    src_mask: torch.Tensor  # (B, S) True on real tokens
    tgt_in: torch.Tensor  # (B, T) <s> y
    tgt_out: torch.Tensor  # (B, T) y </s>, padded with PAD

    def to(self, device) -> Batch:
        """On ``device``: a torch.device, or a firth.accel.Accel (pinned memory and
        non-blocking copies on CUDA)."""
        move = mover(device)
        return Batch(*(move(t) for t in vars(self).values()))

    @property
    def tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())


def pad(seqs: list[list[int]]) -> torch.Tensor:
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def make_batch(
    index: list[int], src: list[list[int]], tgt: list[list[int]] | None
) -> Batch:
    s = pad([src[i] + [EOS] for i in index])
    if tgt is None:
        t_in = t_out = torch.zeros((len(index), 1), dtype=torch.long)
    else:
        t_in = pad([[BOS] + tgt[i] for i in index])
        t_out = pad([tgt[i] + [EOS] for i in index])
    return Batch(torch.tensor(index), s, s != PAD, t_in, t_out)


def token_batches(
    src: list[list[int]],
    tgt: list[list[int]],
    batch_tokens: int,
    *,
    generator: torch.Generator | None = None,
) -> list[list[int]]:
    """Group pair indices into batches of similar length whose padded target (and
    source) size stays within ``batch_tokens``. With a generator, lengths are
    jittered before sorting and the batch order is shuffled (one epoch's order)."""
    n = len(src)
    lengths = torch.tensor(
        [max(len(s), len(t)) + 1 for s, t in zip(src, tgt, strict=True)],
        dtype=torch.float64,
    )
    key = lengths
    if generator is not None:
        key = lengths + torch.rand(n, generator=generator, dtype=torch.float64)
    order = torch.argsort(key, stable=True).tolist()
    batches, cur, longest = [], [], 0
    for i in order:
        L = int(lengths[i])
        if cur and max(longest, L) * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, L)
    if cur:
        batches.append(cur)
    if generator is not None:
        perm = torch.randperm(len(batches), generator=generator).tolist()
        batches = [batches[i] for i in perm]
    return batches


def sentence_batches(src: list[list[int]], size: int) -> list[list[int]]:
    """Indices sorted by source length in batches of ``size`` (for decoding)."""
    order = sorted(range(len(src)), key=lambda i: (len(src[i]), i))
    return [order[i : i + size] for i in range(0, len(order), size)]


def max_lengths(src_lens: torch.Tensor, a: float, b: int) -> torch.Tensor:
    """Longest output per sentence, ``</s>`` included: floor(a * |x|) + b."""
    return (src_lens.double() * a).floor().long() + b


def bucket_of(n_words: int, edges: list[int]) -> str:
    """The length bucket label of a sentence of ``n_words``: '1-10', ..., '61+'."""
    lo = 1
    for e in edges:
        if n_words <= e:
            return f"{lo}-{e}"
        lo = e + 1
    return f"{lo}+"


def bucket_labels(edges: list[int]) -> list[str]:
    labels, lo = [], 1
    for e in edges:
        labels.append(f"{lo}-{e}")
        lo = e + 1
    return [*labels, f"{lo}+"]


def steps_for(epochs: float, per_epoch: int) -> int:
    return max(1, math.ceil(epochs * per_epoch))
