"""Recurrent cells from their equations against nn.LSTM, nn.GRU and nn.RNN driven
by the same weights, in float64."""

import pytest
import torch
from torch import nn

from firth.lm.cells import elman_cell, gru_cell, lstm_cell

B, T, IN, H = 3, 7, 5, 4


def _inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, IN, generator=gen, dtype=torch.float64)
    h0 = torch.randn(B, H, generator=gen, dtype=torch.float64)
    c0 = torch.randn(B, H, generator=gen, dtype=torch.float64)
    return x, h0, c0


def _weights(m):
    return m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0


def test_lstm_cell_matches_nn_lstm():
    torch.manual_seed(0)
    ref = nn.LSTM(IN, H, batch_first=True).double()
    x, h, c = _inputs(1)
    out, (hT, cT) = ref(x, (h[None], c[None]))
    steps = []
    for t in range(T):
        h, c = lstm_cell(x[:, t], h, c, *_weights(ref))
        steps.append(h)
    ours = torch.stack(steps, 1)
    assert (ours - out).abs().max().item() < 1e-12
    assert (h - hT[0]).abs().max().item() < 1e-12
    assert (c - cT[0]).abs().max().item() < 1e-12


@pytest.mark.parametrize(("cls", "cell"), [(nn.GRU, gru_cell), (nn.RNN, elman_cell)])
def test_gru_and_elman_cells_match_torch(cls, cell):
    torch.manual_seed(0)
    ref = cls(IN, H, batch_first=True).double()
    x, h, _ = _inputs(2)
    out, _ = ref(x, h[None])
    steps = []
    for t in range(T):
        h = cell(x[:, t], h, *_weights(ref))
        steps.append(h)
    assert (torch.stack(steps, 1) - out).abs().max().item() < 1e-12
