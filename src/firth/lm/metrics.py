"""Comparable language-model scores.

Perplexity is per token of a model's own tokenization, so it only compares models
that share one. Bits per character divides the total negative log-likelihood of
the test text, in bits, by the number of characters of that text, which every
tokenization shares: word, BPE and n-gram models compare fairly on it.

Character convention: the test text as the models see it, one line per sentence;
its characters are those of each line plus one for the line break (the models'
end-of-sentence token predicts it). Whitespace between words counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def perplexity(nll_nats: float, tokens: int) -> float:
    """exp(total NLL / tokens)."""
    if tokens <= 0:
        raise ValueError("perplexity needs at least one token")
    return math.exp(nll_nats / tokens)


def characters(lines: Iterable[str]) -> int:
    """Characters of the text: every line plus its line break."""
    return sum(len(line) + 1 for line in lines)


def bits_per_char(nll_nats: float, chars: int) -> float:
    """Total NLL in bits over the number of characters."""
    if chars <= 0:
        raise ValueError("bits per character needs at least one character")
    return nll_nats / math.log(2) / chars
