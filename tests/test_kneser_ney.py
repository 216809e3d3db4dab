"""Interpolated modified Kneser-Ney against a brute-force implementation written
from the formulas with plain dicts, and the sum-to-one property."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from gensim.test.utils import datapath

from firth.lm.kneser_ney import BOS, EOS, UNK, build, estimate_discounts

TOY = [
    "the cat sat on the mat".split(),
    "the dog sat on the log".split(),
    "a cat and a dog sat".split(),
    "the cat saw the dog".split(),
    "a dog saw a cat on the mat".split(),
    "the mat".split(),
]


def brute_force(sentences, order, discounts):
    """p(w | h) straight from the definitions, by enumeration."""
    vocab = sorted({w for s in sentences for w in s}) + [UNK, EOS]
    raw = {k: Counter() for k in range(1, order + 1)}
    for s in sentences:
        seq = [BOS] * (order - 1) + s + [EOS]
        for j in range(order - 1, len(seq)):
            for k in range(1, order + 1):
                g = tuple(seq[j - k + 1 : j + 1])
                if k == 1 or g[:2] != (BOS, BOS):  # repeated padding is no n-gram
                    raw[k][g] += 1
    adj = {order: dict(raw[order])}
    for k in range(order - 1, 0, -1):
        adj[k] = {}
        for g, c in raw[k].items():
            if g[0] == BOS:
                adj[k][g] = c
            else:
                left = {x[0] for x in raw[k + 1] if x[1:] == g}
                if left:
                    adj[k][g] = len(left)

    def p(k, h, w):
        if k == 0:
            return 1.0 / len(vocab)
        h = h[len(h) - (k - 1) :] if k > 1 else ()
        counts = {v: adj[k].get(h + (v,), 0) for v in vocab}
        A = sum(counts.values())
        lower = p(k - 1, h[1:] if h else (), w)
        if A == 0:
            return lower
        d1, d2, d3 = discounts[k - 1]

        def D(c):
            return 0.0 if c == 0 else d1 if c == 1 else d2 if c == 2 else d3

        n = [sum(1 for c in counts.values() if c == i) for i in (1, 2)]
        n3 = sum(1 for c in counts.values() if c >= 3)
        gamma = (d1 * n[0] + d2 * n[1] + d3 * n3) / A
        return max(counts[w] - D(counts[w]), 0) / A + gamma * lower

    return vocab, p


@pytest.mark.parametrize("order", [1, 2, 3])
def test_matches_brute_force(order):
    discounts = [(0.5, 1.0, 1.4), (0.6, 1.1, 1.3), (0.7, 0.9, 1.5)][:order]
    lm = build(TOY, order=order, discounts=discounts)
    vocab, p = brute_force(TOY, order, discounts)
    idx = lm.index()
    contexts = [
        ("the", "cat"),
        ("on", "the"),
        ("sat", "on"),
        (BOS, BOS),
        (BOS, "a"),
        ("dog", "zebra"),
        ("mat", "a"),
    ]
    for ctx in contexts:
        h = tuple(ctx[len(ctx) - (order - 1) :]) if order > 1 else ()
        for w in vocab:
            window = np.array([[idx.get(t, 0) for t in h] + [idx[w]]])
            ours = math.exp(lm.log_probs(window)[0])
            hh = tuple(t if t in idx else UNK for t in h)
            assert ours == pytest.approx(p(order, hh, w), rel=1e-12), (ctx, w)


@pytest.fixture(scope="module")
def lee():
    with open(datapath("lee_background.cor"), encoding="utf-8") as f:
        return [line.lower().split() for line in f]


@pytest.mark.parametrize("order", [2, 3, 5])
def test_every_conditional_sums_to_one(lee, order):
    lm = build(lee, order=order)  # discounts estimated from real counts
    rng = np.random.default_rng(order)
    words = lm.vocab
    for _ in range(25):
        ctx = [words[i] for i in rng.integers(0, len(words), size=order - 1)]
        ctx[0] = "never-seen-word" if rng.random() < 0.3 else ctx[0]
        assert lm.conditional(ctx).sum() == pytest.approx(1.0, abs=1e-12)
    assert lm.conditional([BOS] * (order - 1)).sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("order", [2, 3, 5])
def test_conditional_is_log_probs_of_every_window(lee, order):
    """The one-context path (binary search in sorted tables) gives exactly what
    scoring every (context, word) window through log_probs gives."""
    lm = build(lee, order=order)
    rng = np.random.default_rng(7 + order)
    words = np.array([i for i in range(len(lm.vocab)) if i != 1])
    sents = [s for s in lee if len(s) >= order]
    for t in range(20):
        if t % 2:  # a context seen in training, so every order contributes
            s = sents[int(rng.integers(len(sents)))]
            j = int(rng.integers(0, len(s) - order + 2))
            ctx = s[j : j + order - 1]
        else:
            ctx = [lm.vocab[i] for i in rng.integers(0, len(lm.vocab), size=order - 1)]
        idx = lm.index()
        ids = [idx.get(w, 0) for w in ctx][-(order - 1) :] if order > 1 else []
        windows = np.column_stack(
            [np.repeat(np.array([ids], dtype=np.int64), len(words), 0), words]
        )
        np.testing.assert_allclose(
            lm.conditional(ctx), np.exp(lm.log_probs(windows)), rtol=1e-12
        )


def test_discounts_follow_chen_goodman():
    counts = np.array([1] * 10 + [2] * 5 + [3] * 3 + [4] * 2 + [9])
    d1, d2, d3 = estimate_discounts(counts)
    y = 10 / (10 + 2 * 5)
    assert d1 == pytest.approx(1 - 2 * y * 5 / 10)
    assert d2 == pytest.approx(2 - 3 * y * 3 / 5)
    assert d3 == pytest.approx(3 - 4 * y * 2 / 3)
    with pytest.raises(ValueError, match="counts-of-counts"):
        estimate_discounts(np.array([1, 1, 2]))


def test_unknown_words_score_as_unk_and_are_counted():
    lm = build(TOY, order=2, discounts=[(0.5, 1.0, 1.5)] * 2)
    res = lm.score([["the", "zebra", "sat"]])
    assert res["oov"] == 1 and res["tokens"] == 4  # 3 words + </s>
    w, _ = lm.windows([["the", "zebra"]])
    assert w[1, 1] == lm.index()[UNK]
    assert math.isfinite(res["perplexity"])


def test_unigram_model_without_discounting_is_the_mle_mixture():
    # order 1 with zero discounts: p(w) = count(w) / total (no mass freed)
    lm = build(TOY, order=1, discounts=[(0.0, 0.0, 0.0)])
    counts = Counter(itertools.chain.from_iterable(s + [EOS] for s in TOY))
    total = sum(counts.values())
    p = lm.conditional([])
    idx = [i for i in range(len(lm.vocab)) if i != 1]
    for j, i in enumerate(idx):
        assert p[j] == pytest.approx(counts.get(lm.vocab[i], 0) / total)


def test_matches_nltk_where_the_definitions_coincide():
    """nltk's KneserNeyInterpolated uses one discount d at every order above the
    unigrams and leaves the unigram continuation distribution undiscounted (no
    uniform floor). At order 2 with nltk's padding (one <s>, one </s>) that is our
    model with discounts (0, 0, 0) for unigrams and (d, d, d) for bigrams. At higher
    orders the two differ by design: nltk pads order-1 </s> on the right, and it
    uses continuation counts for lower-order n-grams that start with <s>, where we
    (like KenLM) keep raw counts, since nothing can precede <s>."""
    from nltk.lm import KneserNeyInterpolated
    from nltk.lm.preprocessing import padded_everygram_pipeline

    d = 0.75
    train, vocab = padded_everygram_pipeline(2, TOY)
    ref = KneserNeyInterpolated(2, discount=d)
    ref.fit(train, vocab)
    lm = build(TOY, order=2, discounts=[(0.0, 0.0, 0.0), (d, d, d)])
    idx = lm.index()
    words = sorted({w for s in TOY for w in s}) + [EOS]
    for ctx in [BOS, "the", "cat", "sat", "on", "a", "dog", "mat"]:
        for w in words:
            ours = math.exp(lm.log_probs(np.array([[idx[ctx], idx[w]]]))[0])
            assert ours == pytest.approx(ref.score(w, [ctx]), rel=1e-12), (ctx, w)
