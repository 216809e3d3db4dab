"""BPE tokenizers with HF ``tokenizers``, and the word / character / BPE trade-off.

Byte-level BPE (GPT-2) never meets an unknown symbol; character BPE (Sennrich et al.
2016) starts from the characters of the training text, marks word starts with ``▁``
(Metaspace) and maps unseen characters to ``<unk>``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


def train_bpe(
    lines: Iterable[str], *, model: str, vocab_size: int, min_frequency: int
) -> Tokenizer:
    """Train a BPE tokenizer (``model`` = ``byte-level`` or ``char``)."""
    if model == "byte-level":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    elif model == "char":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        alphabet = []
    else:
        raise ValueError(f"unknown BPE model {model!r} (byte-level or char)")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIALS,
        initial_alphabet=alphabet,
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


@dataclass(frozen=True)
class Row:
    scheme: str
    target_vocab: int
    vocab_size: int
    oov_rate: float
    mean_tokens_per_line: float


def word_level(train: list[str], valid: list[str]) -> Row:
    vocab = Counter(w for line in train for w in line.split())
    toks = [w for line in valid for w in line.split()]
    oov = sum(1 for w in toks if w not in vocab)
    return Row("word", 0, len(vocab), oov / len(toks), len(toks) / len(valid))


def char_level(train: list[str], valid: list[str]) -> Row:
    vocab = set("".join(train))
    chars = [c for line in valid for c in line]
    oov = sum(1 for c in chars if c not in vocab)
    return Row("char", 0, len(vocab), oov / len(chars), len(chars) / len(valid))


def bpe_level(tok: Tokenizer, valid: list[str], *, scheme: str, target: int) -> Row:
    unk = tok.token_to_id("<unk>")
    n = n_unk = 0
    for enc in tok.encode_batch(valid):
        n += len(enc.ids)
        n_unk += sum(1 for i in enc.ids if i == unk)
    return Row(scheme, target, tok.get_vocab_size(), n_unk / n, n / len(valid))


def head(lines: Iterable[str], n: int) -> Iterator[str]:
    for i, line in enumerate(lines):
        if n and i >= n:
            return
        yield line
