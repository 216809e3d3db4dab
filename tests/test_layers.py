import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from firth.layers import BiRNN, Dropout, flip


def test_flip_reverses_each_row_within_its_length():
    x = torch.arange(12).view(3, 4)
    lengths = torch.tensor([4, 2, 1])
    want = [[3, 2, 1, 0], [5, 4, 6, 7], [8, 9, 10, 11]]
    assert flip(x, lengths).tolist() == want
    y = torch.randn(3, 4, 5)
    assert torch.equal(flip(flip(y, lengths), lengths), y)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
def test_birnn_is_the_packed_bidirectional_module(cell, layers):
    """Oracle: torch's bidirectional GRU/LSTM over a PackedSequence, same seed."""
    torch.manual_seed(3)
    ref = (nn.GRU if cell == "gru" else nn.LSTM)(
        6, 5, layers, batch_first=True, bidirectional=True
    )
    torch.manual_seed(3)
    mine = BiRNN(cell, 6, 5, layers)
    theirs = [p for name, p in ref.named_parameters()]
    assert all(
        torch.equal(a, b) for a, b in zip(theirs, mine.parameters(), strict=True)
    )
    lengths = torch.tensor([4, 7, 1, 5])
    x = torch.randn(4, 7, 6, dtype=torch.float64)
    mask = (torch.arange(7) < lengths[:, None]).unsqueeze(2)
    x = x.masked_fill(~mask, 3.0)  # padding that would show if it leaked
    ref.double()
    mine.double()
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    packed = pack_padded_sequence(xa, lengths, batch_first=True, enforce_sorted=False)
    out, h = ref(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=7)
    h = h[0] if cell == "lstm" else h
    final = torch.cat([h[-2], h[-1]], 1)
    got, got_final = mine(xb, lengths)
    assert torch.allclose(got, out, atol=1e-12)
    assert torch.allclose(got_final, final, atol=1e-12)
    w = torch.randn_like(out)
    ((out * w).sum() + final.square().sum()).backward()
    ((got * w).sum() + got_final.square().sum()).backward()
    assert torch.allclose(xb.grad, xa.grad, atol=1e-12)
    for a, b in zip(theirs, mine.parameters(), strict=True):
        assert torch.allclose(b.grad, a.grad, atol=1e-12)


def test_birnn_rejects_an_unknown_cell():
    with pytest.raises(ValueError, match="rnn"):
        BiRNN("rnn", 3, 2)


def test_dropout_zeroes_p_of_the_elements_and_rescales_the_rest():
    torch.manual_seed(0)
    drop = Dropout(0.3)
    x = torch.full((200, 500), 2.0, requires_grad=True)
    y = drop(x)
    kept = y != 0
    assert abs(1 - kept.float().mean().item() - 0.3) < 0.01  # 100,000 draws
    assert torch.allclose(y[kept], torch.tensor(2.0 / 0.7))
    y.sum().backward()  # the gradient is the same mask and scale
    assert torch.allclose(x.grad, kept.float() / 0.7)
    assert not torch.equal(drop(x), y)  # a new mask each call


def test_dropout_is_the_identity_in_evaluation_and_at_zero():
    x = torch.randn(4, 5)
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0)(x) is x
    with pytest.raises(ValueError, match="dropout"):
        Dropout(1.0)
