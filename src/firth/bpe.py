"""BPE tokenizers with HF ``tokenizers``, and the word / character / BPE trade-off.

Byte-level BPE (GPT-2) never meets an unknown symbol; character BPE (Sennrich et al.
2016) starts from the characters of the training text, marks word starts with ``▁``
(Metaspace) and maps unseen characters to ``<unk>``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from firth.errors import DataError

log = logging.getLogger(__name__)

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


def read_split(path: Path, *, columns: tuple[int, ...] | None) -> list[str]:
    """The non-empty lines of a text split, or the given TSV columns of each line
    of a parallel one."""
    if not path.exists():
        raise DataError(f"{path}: not found; run the subsample stage first")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if columns is None:
                out.append(line)
            else:
                parts = line.split("\t")
                out.extend(parts[c] for c in columns)
    if not out:
        raise DataError(f"{path}: empty corpus, no lines")
    return out


@dataclass
class TrainedTokenizer:
    """The tokenizer of one corpus, its settings, and the segmentation table of
    the valid split (word, character, BPE at each size; the trained one last)."""

    tokenizer: Tokenizer
    settings: dict
    rows: list[Row]
    summary: dict

    def table(self) -> tuple[list[str], list[list]]:
        """The comparison as CSV header and rows (rates to 6 decimals, tokens per
        line to 3)."""
        header = [f.name for f in dataclasses.fields(Row)]
        out = []
        for row in self.rows:
            d = dataclasses.asdict(row)
            d["oov_rate"] = round(d["oov_rate"], 6)
            d["mean_tokens_per_line"] = round(d["mean_tokens_per_line"], 3)
            out.append([d[k] for k in header])
        return header, out


def train_corpus(folder: Path, kind: str, cfg) -> TrainedTokenizer:
    """The ``tokenizer.<kind>`` BPE of ``cfg`` trained on folder's train split
    (joint source and target for a parallel corpus), compared on its valid
    split with words, characters and ``compare_vocab_sizes``."""
    bpe_cfg = getattr(cfg, kind)
    ext, columns = (".txt", None) if kind == "text" else (".tsv", (1, 2))
    train = read_split(folder / f"train{ext}", columns=columns)
    valid = read_split(folder / f"valid{ext}", columns=columns)
    train = list(head(train, cfg.max_train_lines))
    log.info(
        "%s: training %s BPE (vocab %d) on %d lines",
        kind,
        bpe_cfg.model,
        bpe_cfg.vocab_size,
        len(train),
    )

    def bpe(size: int) -> Tokenizer:
        return train_bpe(
            train,
            model=bpe_cfg.model,
            vocab_size=size,
            min_frequency=bpe_cfg.min_frequency,
        )

    tok = bpe(bpe_cfg.vocab_size)
    scheme = f"bpe-{bpe_cfg.model}"
    rows = [word_level(train, valid), char_level(train, valid)]
    for size in sorted(set(cfg.compare_vocab_sizes)):
        log.info("%s: comparison BPE at vocab %d", kind, size)
        rows.append(bpe_level(bpe(size), valid, scheme=scheme, target=size))
    main = bpe_level(tok, valid, scheme=scheme, target=bpe_cfg.vocab_size)
    settings = {**bpe_cfg.model_dump(), "train_lines": len(train), "corpus": kind}
    summary = {
        "model": bpe_cfg.model,
        "vocab_size": main.vocab_size,
        "valid_mean_tokens_per_line": round(main.mean_tokens_per_line, 3),
        "valid_unk_rate": round(main.oov_rate, 6),
        "word_valid_oov_rate": round(rows[0].oov_rate, 6),
        "word_vocab_size": rows[0].vocab_size,
        "train_lines": len(train),
        "valid_lines": len(valid),
    }
    return TrainedTokenizer(tok, settings, rows, summary)
