"""Recurrent cells written from their equations, in PyTorch's weight layout, so a
trained ``nn.LSTM``/``nn.GRU``/``nn.RNN`` can be stepped by hand (the gradient-flow
measurement needs every hidden state) and checked against the reference.

Shapes: x (B, I), h and c (B, H); W_ih (G*H, I), W_hh (G*H, H), biases (G*H,) with
G = 4 (LSTM), 3 (GRU), 1 (Elman). Gate order as in PyTorch: LSTM i, f, g, o; GRU
r, z, n.

LSTM (Hochreiter and Schmidhuber 1997; forget gate: Gers et al. 2000):
    i = s(W_ii x + b_ii + W_hi h + b_hi)      f = s(W_if x + b_if + W_hf h + b_hf)
    g = tanh(W_ig x + b_ig + W_hg h + b_hg)   o = s(W_io x + b_io + W_ho h + b_ho)
    c' = f * c + i * g                         h' = o * tanh(c')
GRU (Cho et al. 2014, PyTorch's variant: r gates the projected state):
    r = s(W_ir x + b_ir + W_hr h + b_hr)      z = s(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))      h' = (1 - z) * n + z * h
Elman (1990): h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
"""

from __future__ import annotations

import torch


def lstm_cell(
    x: torch.Tensor,
    h: torch.Tensor,
    c: torch.Tensor,
    W_ih: torch.Tensor,
    W_hh: torch.Tensor,
    b_ih: torch.Tensor,
    b_hh: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step: (h', c')."""
    H = h.shape[1]
    gx = x @ W_ih.T + b_ih  # (B, 4H)
    gh = h @ W_hh.T + b_hh  # (B, 4H)
    i = torch.sigmoid(gx[:, 0:H] + gh[:, 0:H])
    f = torch.sigmoid(gx[:, H : 2 * H] + gh[:, H : 2 * H])
    g = torch.tanh(gx[:, 2 * H : 3 * H] + gh[:, 2 * H : 3 * H])
    o = torch.sigmoid(gx[:, 3 * H : 4 * H] + gh[:, 3 * H : 4 * H])
    c_new = f * c + i * g
    return o * torch.tanh(c_new), c_new


def gru_cell(
    x: torch.Tensor,
    h: torch.Tensor,
    W_ih: torch.Tensor,
    W_hh: torch.Tensor,
    b_ih: torch.Tensor,
    b_hh: torch.Tensor,
) -> torch.Tensor:
    """One GRU step: h'."""
    H = h.shape[1]
    gx = x @ W_ih.T + b_ih  # (B, 3H)
    gh = h @ W_hh.T + b_hh  # (B, 3H)
    r = torch.sigmoid(gx[:, 0:H] + gh[:, 0:H])
    z = torch.sigmoid(gx[:, H : 2 * H] + gh[:, H : 2 * H])
    n = torch.tanh(gx[:, 2 * H : 3 * H] + r * gh[:, 2 * H : 3 * H])
    return (1 - z) * n + z * h


def elman_cell(
    x: torch.Tensor,
    h: torch.Tensor,
    W_ih: torch.Tensor,
    W_hh: torch.Tensor,
    b_ih: torch.Tensor,
    b_hh: torch.Tensor,
) -> torch.Tensor:
    """One Elman (tanh RNN) step: h'."""
    return torch.tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)
