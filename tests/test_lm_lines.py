"""Per-line LM scores (firth.lm.lines) add up to the whole-text score, and each
line's score is what scoring that line alone gives (the n-gram model; the neural
models carry state across lines, so for them the oracle is the per-target sum)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_lm_neural import cfg, lee_lines

from firth.lm import kneser_ney
from firth.lm.data import build_vocabulary, encode_stream
from firth.lm.lines import by_line, kn_by_line, score_targets
from firth.lm.models import build_model
from firth.lm.train import score


@pytest.mark.parametrize("family", ["lstm", "transformer", "ffnn"])
def test_neural_lines_sum_to_the_stream_score(family):
    lines = lee_lines(40)
    v = build_vocabulary(lines[:30], unit="word", min_count=2)
    stream = encode_stream(v, lines[30:])
    torch.manual_seed(3)
    m = build_model(family, v.size, cfg(cutoffs=(50, 200)), eos=v.eos).double()
    total, n = score(m, stream, batch=3, bptt=5, device=torch.device("cpu"))
    per = score_targets(m, stream, batch=3, bptt=5, device=torch.device("cpu"))
    assert len(per) == n == len(stream) - 1
    nll, tokens = by_line(per, stream, v.eos)
    assert len(nll) == 10
    assert tokens.tolist() == [len(v.encode_line(x)) + 1 for x in lines[30:]]
    assert nll.sum() == pytest.approx(total, rel=1e-12)
    # a line's share is its own targets: the brute-force walk over the stream
    eos_seen, want = 0, np.zeros(10)
    for j in range(n):
        want[eos_seen] += float(per[j])
        eos_seen += int(stream[j + 1]) == v.eos
    assert np.allclose(nll, want)


def test_kn_lines_equal_scoring_each_line_alone():
    sents = [x.split() for x in lee_lines(80)]
    lm = kneser_ney.build(sents[:70], order=3)
    test = sents[70:]
    nll, tokens = kn_by_line(lm, test)
    for s, a, k in zip(test, nll, tokens, strict=True):
        alone = lm.score([s])
        assert a == pytest.approx(alone["nll_nats"], rel=1e-9)
        assert k == alone["tokens"]
    assert nll.sum() == pytest.approx(lm.score(test)["nll_nats"], rel=1e-9)
