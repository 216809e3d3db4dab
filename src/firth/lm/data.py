"""Token streams for the language models.

Two tokenizations, both with ids sorted by training frequency (the adaptive softmax
relies on it):

- ``word``: whitespace words of the prepared text. The vocabulary is every training
  word seen at least ``min_count`` times; rarer training words and unseen test words
  become ``<unk>``, which the models learn from the training text (the Kneser-Ney
  model is built on the same mapped text, so all word-level models share one
  vocabulary and one <unk> mass). The OOV rate is reported beside every score.
- ``bpe``: the byte-level BPE of the tokenizer stage (never an unknown symbol).

A text becomes one stream: ``</s>`` first, then every line's tokens followed by
``</s>``. Models read stream[:-1] and predict stream[1:], so the predicted tokens
are each line's tokens plus one ``</s>`` per line, the count the Kneser-Ney model
scores, and the characters are those of metrics.characters.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from firth.errors import DataError

EOS, UNK = "</s>", "<unk>"


@dataclass
class Vocabulary:
    unit: str  # "word" | "bpe"
    tokens: list[str]  # id -> token (words, or BPE pieces in the tokenizer's alphabet)
    counts: list[int]  # training count of each id
    bpe: object | None = None  # tokenizers.Tokenizer for unit "bpe"
    bpe_ids: np.ndarray | None = None  # tokenizer id -> our id (-1: never seen)

    @property
    def size(self) -> int:
        return len(self.tokens)

    @property
    def eos(self) -> int:
        return self.tokens.index(EOS)

    def __post_init__(self) -> None:
        self._index = {t: i for i, t in enumerate(self.tokens)}

    def encode_line(self, line: str) -> list[int]:
        if self.unit == "word":
            unk = self._index[UNK]
            return [self._index.get(w, unk) for w in line.split()]
        ids = self.bpe_ids[self.bpe.encode(line).ids]  # type: ignore[union-attr,index]
        if (ids < 0).any():
            ids = np.where(ids < 0, self._index[UNK], ids)
        return ids.tolist()

    def decode(self, ids: Iterable[int]) -> str:
        """Readable text: lines end at </s>."""
        out, piece = [], []
        if self.unit == "bpe":
            bpe_rev = {int(o): t for t, o in enumerate(self.bpe_ids) if o >= 0}  # type: ignore[union-attr]

        def flush():
            if not piece:
                return
            if self.unit == "word":
                out.append(" ".join(self.tokens[i] for i in piece))
            else:
                out.append(self.bpe.decode([bpe_rev[i] for i in piece]).strip())  # type: ignore[union-attr]
            piece.clear()

        for i in ids:
            if i == self.eos:
                flush()
                out.append("\n")
            else:
                piece.append(int(i))
        flush()
        return " ".join(out).replace(" \n ", "\n").replace(" \n", "\n").strip()

    def oov(self, lines: Iterable[str]) -> int:
        """Word-level: words of ``lines`` outside the vocabulary (0 for BPE)."""
        if self.unit != "word":
            return 0
        return sum(1 for line in lines for w in line.split() if w not in self._index)

    def save(self, path: Path) -> None:
        blob = {"unit": self.unit, "tokens": self.tokens, "counts": self.counts}
        if self.bpe is not None:
            blob["bpe_ids"] = self.bpe_ids.tolist()  # type: ignore[union-attr]
            blob["tokenizer"] = json.loads(self.bpe.to_str())  # type: ignore[union-attr]
        path.write_text(json.dumps(blob) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        blob = json.loads(path.read_text(encoding="utf-8"))
        bpe = bpe_ids = None
        if blob["unit"] == "bpe":
            from tokenizers import Tokenizer

            bpe = Tokenizer.from_str(json.dumps(blob["tokenizer"]))
            bpe_ids = np.asarray(blob["bpe_ids"], dtype=np.int64)
        return cls(blob["unit"], blob["tokens"], blob["counts"], bpe, bpe_ids)


def _sorted(counts: Counter) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def build_vocabulary(
    lines: list[str], *, unit: str, min_count: int = 1, tokenizer: Path | None = None
) -> Vocabulary:
    """The vocabulary of the training ``lines``, ids by descending frequency."""
    if not lines:
        raise DataError("no training lines to build a vocabulary from")
    if unit == "word":
        counts = Counter(w for line in lines for w in line.split())
        counts.pop(UNK, None)
        counts.pop(EOS, None)
        kept = [(w, n) for w, n in _sorted(counts) if n >= min_count]
        rare = sum(n for n in counts.values() if n < min_count)
        items = _sorted(Counter({EOS: len(lines), UNK: rare, **dict(kept)}))
        return Vocabulary("word", [w for w, _ in items], [n for _, n in items])
    if unit == "bpe":
        from tokenizers import Tokenizer

        if tokenizer is None or not tokenizer.exists():
            raise DataError(
                f"{tokenizer}: BPE tokenizer not found (run the tokenizer stage)"
            )
        tok = Tokenizer.from_file(str(tokenizer))
        n = tok.get_vocab_size()
        counts_arr = np.zeros(n, dtype=np.int64)
        for enc in tok.encode_batch(lines):
            np.add.at(counts_arr, enc.ids, 1)
        eos_tok = tok.token_to_id(EOS)
        unk_tok = tok.token_to_id(UNK)
        if eos_tok is None or unk_tok is None:
            raise DataError(f"{tokenizer}: tokenizer lacks the {EOS} or {UNK} token")
        counts_arr[eos_tok] = len(lines)
        keep = [int(i) for i in np.nonzero(counts_arr)[0]]
        if unk_tok not in keep:
            keep.append(unk_tok)
        keep.sort(key=lambda i: (-int(counts_arr[i]), i))
        bpe_ids = np.full(n, -1, dtype=np.int64)
        bpe_ids[keep] = np.arange(len(keep))
        rev = {v: k for k, v in tok.get_vocab().items()}
        return Vocabulary(
            "bpe",
            [EOS if i == eos_tok else UNK if i == unk_tok else rev[i] for i in keep],
            [int(counts_arr[i]) for i in keep],
            tok,
            bpe_ids,
        )
    raise ValueError(f"unknown unit {unit!r} (word or bpe)")


def read_lines(path: Path) -> list[str]:
    """The non-empty lines of a prepared text split."""
    if not path.exists():
        raise DataError(f"{path}: not found (run the prepare/subsample stages)")
    lines = [line.rstrip("\n") for line in open(path, encoding="utf-8")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise DataError(f"{path}: no text")
    return lines


def encode_stream(vocab: Vocabulary, lines: list[str]) -> torch.Tensor:
    """</s> line_1 </s> line_2 </s> ... as one int64 tensor."""
    if vocab.unit == "bpe":
        encs = vocab.bpe.encode_batch(lines)  # type: ignore[union-attr]
        parts = [vocab.bpe_ids[e.ids] for e in encs]  # type: ignore[index]
        unk = vocab.tokens.index(UNK)
        parts = [np.where(p < 0, unk, p) for p in parts]
    else:
        parts = [np.asarray(vocab.encode_line(line), dtype=np.int64) for line in lines]
    eos = np.array([vocab.eos], dtype=np.int64)
    pieces = [eos]
    for p in parts:
        pieces.extend((p, eos))
    return torch.from_numpy(np.concatenate(pieces))


def batchify(stream: torch.Tensor, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Training layout: ``batch`` contiguous streams (B, L) of inputs and targets;
    the tail that does not fill a row is dropped."""
    n = (len(stream) - 1) // batch
    if n < 1:
        raise DataError(
            f"stream of {len(stream)} tokens is too short for batch {batch}"
        )
    x = stream[: n * batch].view(batch, n)
    y = stream[1 : n * batch + 1].view(batch, n)
    return x, y


def eval_layout(stream: torch.Tensor, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Scoring layout: every target scored exactly once. The n = len - 1 targets are
    cut into ``batch`` contiguous chunks (each starts from a fresh state); padding
    targets are -100."""
    n = len(stream) - 1
    batch = max(1, min(batch, n))
    L = -(-n // batch)
    x = torch.full((batch * L,), int(stream[0]), dtype=torch.long)
    y = torch.full((batch * L,), -100, dtype=torch.long)
    x[:n] = stream[:-1]
    y[:n] = stream[1:]
    return x.view(batch, L), y.view(batch, L)
