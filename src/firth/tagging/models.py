"""The BiLSTM tagger (Huang et al. 2015; Lample et al. 2016; Ma and Hovy 2016).

Each token is its word embedding concatenated with character features: a char-CNN
(Ma and Hovy: convolution of width w over the character embeddings, max-pooled over
the word) or a char-BiLSTM (Lample et al.: the final forward and backward states).
Dropout, a BiLSTM over the sentence, dropout, and a linear layer give emission scores
(B, T, K). The head (``HEADS``) is a softmax per token (cross-entropy; argmax
decoding) or the linear-chain CRF of firth.tagging.crf (sentence NLL; Viterbi
decoding): ``crf`` learns every transition score (Lample et al. 2016), so nothing
but training keeps it from an invalid BIO sequence; ``crf-constrained`` forbids the
invalid BIO moves in training and decoding (a design constraint: it cannot break
BIO). Either CRF can also be decoded under the BIO constraints alone
(``decode(constrained=True)``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from firth.layers import BiRNN, Dropout
from firth.tagging.crf import CRF, bio_constraints
from firth.tagging.data import PAD, Batch

HEADS = ("softmax", "crf", "crf-constrained")
GROUP_EDGES = (8, 16, 32)  # the char-CNN's word-length groups (characters)


class CharCNN(nn.Module):
    def __init__(self, n_chars: int, dim: int, filters: int, width: int):
        super().__init__()
        self.emb = nn.Embedding(n_chars, dim, padding_idx=PAD)
        self.conv = nn.Conv1d(dim, filters, width, padding=width // 2)
        self.out_dim = filters

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """chars (N, L) -> (N, filters); padding positions never win the max.

        Words are convolved in groups of similar length (up to 8, 16, 32 characters
        and the rest), each group cut to its longest word. The padding is zeros
        either way (the padding row of the embedding and the convolution's own), so
        the features are the same; the work is not, where one long token (a URL in
        a tweet) would pad every word of the batch to its length."""
        lengths = (chars != PAD).sum(1).clamp(min=1)
        out = None
        lo = 0
        for hi in (*GROUP_EDGES, chars.shape[1]):
            if hi <= lo:
                continue
            rows = ((lengths > lo) & (lengths <= hi)).nonzero().squeeze(1)
            lo = hi
            if rows.numel():
                width = int(lengths[rows].max())
                part = self._features(chars[rows, :width])
                if out is None:
                    out = part.new_zeros(len(chars), part.shape[1])
                out = out.index_copy(0, rows, part)
        return out

    def _features(self, chars: torch.Tensor) -> torch.Tensor:
        """The convolution as one product: each position's window of ``width``
        character ids (padded as the convolution pads: the padding row embeds to
        zeros) embedded and multiplied by the filters. As fast as Conv1d's kernel
        on the group of short words, 1.4x on the small groups of long ones
        (``benchmarks/layer_speed.py``); windows sliced from the embedded
        characters would pay a zero-filled copy per slice in the backward pass."""
        w = self.conv.weight  # (F, dim, width)
        width = w.shape[2]
        ids = F.pad(chars, (width // 2, width - 1 - width // 2), value=PAD)
        x = self.emb(ids.unfold(1, width, 1))  # (N, L, width, dim)
        x = F.linear(x.flatten(2), w.permute(0, 2, 1).flatten(1), self.conv.bias)
        x = x.masked_fill((chars == PAD).unsqueeze(2), float("-inf"))
        return x.max(1).values


class CharLSTM(nn.Module):
    def __init__(self, n_chars: int, dim: int, hidden: int):
        super().__init__()
        self.emb = nn.Embedding(n_chars, dim, padding_idx=PAD)
        self.lstm = BiRNN("lstm", dim, hidden)
        self.out_dim = 2 * hidden

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """chars (N, L) -> (N, 2 * hidden): last forward and first backward states."""
        return self.lstm(self.emb(chars), (chars != PAD).sum(1))[1]


class Tagger(nn.Module):
    def __init__(
        self,
        n_words: int,
        n_chars: int,
        tags: list[str],
        *,
        head: str,
        word_dim: int,
        chars: str,
        char_dim: int,
        char_hidden: int,
        char_width: int,
        hidden: int,
        dropout: float,
    ):
        super().__init__()
        self.head = head
        self.word_emb = nn.Embedding(n_words, word_dim, padding_idx=PAD)
        bound = (3.0 / word_dim) ** 0.5  # rows of variance 1/d
        nn.init.uniform_(self.word_emb.weight, -bound, bound)
        with torch.no_grad():
            self.word_emb.weight[PAD].zero_()
        if chars == "cnn":
            self.chars = CharCNN(n_chars, char_dim, char_hidden, char_width)
        elif chars == "lstm":
            self.chars = CharLSTM(n_chars, char_dim, char_hidden)
        elif chars == "none":
            self.chars = None
        else:
            raise ValueError(f"unknown character features {chars!r}")
        feat = word_dim + (self.chars.out_dim if self.chars is not None else 0)
        self.drop = Dropout(dropout)
        self.lstm = BiRNN("lstm", feat, hidden)
        self.out = nn.Linear(2 * hidden, len(tags))
        self.bio = bio_constraints(tags)  # (allowed, first): all True unless BIO
        if head == "crf":
            self.crf = CRF(len(tags))
        elif head == "crf-constrained":
            allowed, first = self.bio
            self.crf = CRF(len(tags), allowed=allowed, allowed_first=first)
        elif head == "softmax":
            self.crf = None
        else:
            raise ValueError(f"unknown head {head!r} (heads: {', '.join(HEADS)})")

    def load_vectors(self, words: list[str], index: dict[str, int], matrix: np.ndarray):
        """Copy pretrained rows into the word embedding; returns how many rows."""
        if matrix.shape[1] != self.word_emb.embedding_dim:
            raise ValueError(
                f"pretrained vectors have {matrix.shape[1]} dimensions, "
                f"the word embedding {self.word_emb.embedding_dim}"
            )
        rows = [(i, index[w]) for i, w in enumerate(words) if i > 1 and w in index]
        if rows:
            mine, theirs = zip(*rows, strict=True)
            with torch.no_grad():
                self.word_emb.weight[list(mine)] = torch.from_numpy(
                    matrix[list(theirs)]
                ).float()
        return len(rows)

    def emissions(self, b: Batch) -> torch.Tensor:
        x = self.word_emb(b.words)
        if self.chars is not None:
            real = b.mask.flatten().nonzero().squeeze(1)  # real tokens in row order
            feats = self.chars(b.chars.flatten(0, 1)[real])
            feats = x.new_zeros(b.mask.numel(), feats.shape[1]).index_copy(
                0,
                real,
                feats.to(x.dtype),  # bf16 under autocast
            )
            x = torch.cat([x, feats.view(*b.mask.shape, -1)], -1)
        out, _ = self.lstm(self.drop(x), b.mask.sum(1))
        return self.out(self.drop(out))

    def loss(self, b: Batch) -> torch.Tensor:
        """Summed over sentences: the CRF's sentence NLL, or the token cross-entropy."""
        em = self.emissions(b).float()  # the CRF's sums in fp32 under autocast
        if self.crf is not None:
            return self.crf.nll(em, b.tags.clamp(min=0), b.mask).sum()
        return F.cross_entropy(
            em.reshape(-1, em.shape[-1]),
            b.tags.reshape(-1),
            ignore_index=-1,
            reduction="sum",
        )

    @torch.no_grad()
    def decode(self, b: Batch, *, constrained: bool = False) -> list[list[int]]:
        """Tag ids of every sentence: Viterbi (CRF heads) or the argmax per token;
        ``constrained`` (CRF heads only): Viterbi under the BIO constraints."""
        em = self.emissions(b)
        if self.crf is not None:
            extra = self.bio if constrained else None
            return self.crf.viterbi(em, b.mask, constraints=extra)[0]
        if constrained:
            raise ValueError("constrained decoding needs a CRF head")
        best = em.argmax(-1).tolist()
        return [row[:n] for row, n in zip(best, b.mask.sum(1).tolist(), strict=True)]


def build_tagger(vocab, head: str, c) -> Tagger:
    """A tagger for ``vocab`` with the ``tagger.common`` settings ``c``."""
    return Tagger(
        len(vocab.words),
        len(vocab.chars),
        vocab.tags,
        head=head,
        word_dim=c.word_dim,
        chars=c.chars,
        char_dim=c.char_dim,
        char_hidden=c.char_hidden,
        char_width=c.char_width,
        hidden=c.hidden,
        dropout=c.dropout,
    )
