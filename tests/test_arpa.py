"""The ARPA file of a Kneser-Ney model, read back by two independent readers: a
back-off scorer written here from the format's definition, and KenLM's Python
module (the reader the field uses). Both must give Firth's own probabilities,
sentence by sentence, and every context's distribution in the file sums to one."""

import math
import re

import numpy as np
import pytest
from gensim.test.utils import datapath
from test_kneser_ney import TOY

from firth.lm.arpa import write_arpa
from firth.lm.kneser_ney import BOS, EOS, UNK, build

FIXED = [(0.5, 1.0, 1.4), (0.6, 1.1, 1.3), (0.7, 0.9, 1.5), (0.8, 1.2, 1.6)]


class Arpa:
    """A reader from the format alone: longest listed n-gram, back-off weights of
    the longer contexts skipped, sentences from one <s> to </s>."""

    def __init__(self, path):
        self.table: dict[tuple[str, ...], tuple[float, float]] = {}
        counts, order = {}, 0
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if m := re.fullmatch(r"ngram (\d+)=(\d+)", line):
                    counts[int(m[1])] = int(m[2])
                elif m := re.fullmatch(r"\\(\d+)-grams:", line):
                    order = int(m[1])
                elif line and not line.startswith("\\") and order:
                    parts = line.split("\t")
                    words = tuple(parts[1].split(" "))
                    assert len(words) == order, line
                    b = float(parts[2]) if len(parts) > 2 else 0.0
                    self.table[words] = (float(parts[0]), b)
        self.order = max(counts)
        for k, c in counts.items():
            assert sum(1 for g in self.table if len(g) == k) == c, f"order {k}"
        self.vocab = [g[0] for g in self.table if len(g) == 1]

    def log10(self, h: tuple[str, ...], w: str) -> float:
        w = w if (w,) in self.table else UNK
        h = tuple(t if (t,) in self.table else UNK for t in h)
        h = h[max(0, len(h) - (self.order - 1)) :] if self.order > 1 else ()
        backoff = 0.0
        for start in range(len(h) + 1):  # longest context first
            ctx = h[start:]
            if ctx + (w,) in self.table:
                return backoff + self.table[ctx + (w,)][0]
            backoff += self.table.get(ctx, (0.0, 0.0))[1]
        raise AssertionError(f"{w!r} has no unigram")

    def sentence(self, words: list[str]) -> float:
        h, total = (BOS,), 0.0
        for w in [*words, EOS]:
            total += self.log10(h, w)
            h = (*h, w)
        return total


def firth_log10(lm, sentence: list[str]) -> float:
    windows, _ = lm.windows([sentence])
    return float(lm.log_probs(windows).sum()) / math.log(10)


TESTS = [
    "the cat sat on the log".split(),
    "a dog and a cat".split(),
    "the zebra sat on a mat".split(),  # an unknown word mid-sentence
    "zebra".split(),  # an unknown word alone
    "mat the on sat".split(),
    [],
]


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_backoff_reader_gives_firths_probabilities(tmp_path, order):
    lm = build(TOY, order=order, discounts=FIXED[:order])
    counts = write_arpa(lm, tmp_path / "lm.arpa")
    arpa = Arpa(tmp_path / "lm.arpa")
    assert counts == [
        sum(1 for g in arpa.table if len(g) == k) for k in range(1, order + 1)
    ]
    for s in TESTS:
        assert arpa.sentence(s) == pytest.approx(firth_log10(lm, s), abs=1e-5), s


@pytest.mark.parametrize("order", [2, 3, 5])
def test_every_listed_context_sums_to_one(tmp_path, order):
    """Normalisation read from the file alone: after every context it lists (and
    after the empty one), the probabilities of the predictable words sum to 1."""
    with open(datapath("lee_background.cor"), encoding="utf-8") as f:
        lee = [line.lower().split() for line in f][:120]
    lm = build(lee, order=order)  # discounts estimated from the counts
    write_arpa(lm, tmp_path / "lm.arpa")
    arpa = Arpa(tmp_path / "lm.arpa")
    predictable = [w for w in arpa.vocab if w != BOS]
    contexts = [g for g in arpa.table if len(g) < order]
    rng = np.random.default_rng(order)
    picked = [contexts[i] for i in rng.choice(len(contexts), 40, replace=False)]
    for h in [(), (BOS,), *picked]:
        total = sum(10 ** arpa.log10(h, w) for w in predictable)
        assert total == pytest.approx(1.0, abs=1e-5), h


def test_kenlm_reads_the_file_and_agrees_per_sentence(tmp_path):
    kenlm = pytest.importorskip(
        "kenlm",
        reason="kenlm is not installed (make setup builds it; needs a C++ compiler)",
    )
    with open(datapath("lee_background.cor"), encoding="utf-8") as f:
        lee = [line.lower().split() for line in f]
    train, test = lee[:250], lee[250:270]
    lm = build(train, order=5)
    write_arpa(lm, tmp_path / "lm.arpa")
    model = kenlm.Model(str(tmp_path / "lm.arpa"))
    assert model.order == 5
    for s in test + [["never-seen", "words"]]:
        ours = firth_log10(lm, s)
        theirs = model.score(" ".join(s), bos=True, eos=True)
        assert theirs == pytest.approx(ours, abs=1e-4 * max(1.0, abs(ours))), s
    # and the whole split's perplexity to 4 significant digits
    tokens = sum(len(s) + 1 for s in test)
    ours = lm.score(test)["perplexity"]
    theirs = 10 ** (-sum(model.score(" ".join(s)) for s in test) / tokens)
    assert f"{theirs:.4g}" == f"{ours:.4g}"
