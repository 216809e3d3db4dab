"""The attention interventions of firth.nmt.faithfulness against their
definitions on random weights: a permutation keeps the multiset of weights and
the zeros on padding, uniform is uniform over the real positions, drop-max removes
the largest and renormalises, identity changes nothing; and the gradient x input
importance of a batch equals that of each verse alone (padding changes nothing)."""

import numpy as np
import pytest
import torch

from firth.nmt.faithfulness import Edit


def _weights(shape_extra=()):
    torch.manual_seed(0)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]).bool()
    scores = torch.randn(3, *shape_extra, 5)
    m = mask.view(3, *([1] * len(shape_extra)), 5)
    w = torch.softmax(scores.masked_fill(~m, -float("inf")), -1)
    return w, mask


@pytest.mark.parametrize("extra", [(), (4, 1)])  # recurrent (B, S); transformer heads
def test_interventions_match_their_definitions(extra):
    w, mask = _weights(extra)
    m = mask.view(3, *([1] * len(extra)), 5).expand(w.shape)
    assert torch.equal(Edit("identity")(w, mask), w)
    p = Edit("permute", seed=1)(w, mask)
    assert torch.all(p[~m] == 0)
    for a, b, mm in zip(
        w.reshape(-1, 5), p.reshape(-1, 5), m.reshape(-1, 5), strict=True
    ):
        assert sorted(a[mm].tolist()) == pytest.approx(sorted(b[mm].tolist()))
    assert not torch.equal(p, w)  # five positions: some row moved
    u = Edit("uniform")(w, mask)
    n = mask.sum(1).float().view(3, *([1] * len(extra)), 1)
    assert torch.allclose(u, m.float() / n)
    d = Edit("drop-max")(w, mask)
    flat_w, flat_d = w.reshape(-1, 5), d.reshape(-1, 5)
    for a, b, mm in zip(flat_w, flat_d, m.reshape(-1, 5), strict=True):
        if mm.sum() == 1:  # a one-token source keeps its weight
            assert torch.equal(a, b)
            continue
        top = int(a.argmax())
        expect = a.clone()
        expect[top] = 0
        assert torch.allclose(b, expect / expect.sum())
    assert torch.allclose(flat_d.sum(-1), torch.ones(flat_d.shape[0]))


def test_permutations_follow_the_seed():
    w, mask = _weights()
    assert torch.equal(Edit("permute", 3)(w, mask), Edit("permute", 3)(w, mask))
    with pytest.raises(ValueError, match="unknown intervention"):
        Edit("shuffle")


def test_importance_of_a_batch_equals_each_verse_alone():
    from types import SimpleNamespace

    from firth.nmt.faithfulness import importance_tau
    from firth.nmt.models.recurrent import Bahdanau

    torch.manual_seed(0)
    c = SimpleNamespace(emb_dim=16, hidden=16, cell="gru", layers=1, dropout=0.0)
    model = Bahdanau("bahdanau", 30, c).eval()
    rng = np.random.default_rng(0)
    src = [rng.integers(4, 30, n).tolist() for n in (3, 7, 5)]
    tgt = [rng.integers(4, 30, n).tolist() for n in (4, 6, 2)]
    together = importance_tau(model, src, tgt, batch_tokens=1000, device="cpu")
    alone = [
        importance_tau(model, [s], [t], batch_tokens=1000, device="cpu")[0]
        for s, t in zip(src, tgt, strict=True)
    ]
    assert np.allclose(together, alone, atol=1e-6)
    assert np.all(np.abs(together) <= 1)
