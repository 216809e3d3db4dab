"""Perplexity and bits per character from their closed forms."""

import math

import numpy as np
import pytest

from firth.lm.kneser_ney import build
from firth.lm.metrics import bits_per_char, characters, perplexity

TEXT = ["the cat sat", "on the mat", "a dog"]


def test_uniform_model_has_perplexity_v_and_the_bits_per_char_of_the_formula():
    V = 37
    tokens = sum(len(line.split()) + 1 for line in TEXT)  # words + </s>
    nll = tokens * math.log(V)  # every token has probability 1/V
    assert perplexity(nll, tokens) == pytest.approx(V, rel=1e-12)
    chars = characters(TEXT)
    assert chars == 11 + 1 + 10 + 1 + 5 + 1
    assert bits_per_char(nll, chars) == pytest.approx(tokens * math.log2(V) / 29)
    assert bits_per_char(nll, chars) == pytest.approx(11 * math.log2(37) / 29)


def test_zero_order_kneser_ney_is_uniform():
    # With zero discounts and order 1 the unigram MLE is used; with unit
    # discounts on a text where every word occurs once, all unigram mass is freed
    # and the model is uniform over the predictable vocabulary: perplexity V.
    sents = [["a", "b", "c"], ["d", "e"]]  # every word once, </s> twice
    lm = build(sents, order=1, discounts=[(1.0, 2.0, 3.0)])
    p = lm.conditional([])
    V = lm.predictable
    np.testing.assert_allclose(p, 1.0 / V)
    res = lm.score(sents)
    assert res["perplexity"] == pytest.approx(V, rel=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError):
        perplexity(1.0, 0)
    with pytest.raises(ValueError):
        bits_per_char(1.0, 0)
