"""Gradient norms against the closed form of a linear recurrence, and the
classic contrast between an Elman RNN and an LSTM."""

import torch

from firth.lm.cells import elman_cell, lstm_cell
from firth.lm.gradient_flow import gradient_norms


def test_linear_recurrence_matches_powers_of_the_transpose():
    gen = torch.Generator().manual_seed(0)
    B, T, H = 2, 6, 4
    W = torch.randn(H, H, generator=gen, dtype=torch.float64) * 0.5
    U = torch.randn(H, H, generator=gen, dtype=torch.float64)
    xs = torch.randn(B, T, H, generator=gen, dtype=torch.float64)
    h0 = torch.zeros(B, H, dtype=torch.float64)
    v = torch.randn(H, generator=gen, dtype=torch.float64)

    def step(x, state):
        h = state[0] @ W.T + x @ U.T  # h_t = W h_{t-1} + U x_t
        return h, (h,)

    norms = gradient_norms(step, xs, (h0,), lambda h: h @ v)  # L = v . h_T
    for t in range(T):
        # dL/dh_t = (W^T)^(T-1-t) v, the same for every example
        g = torch.linalg.matrix_power(W.T, T - 1 - t) @ v
        assert abs(norms[t].item() - g.norm().item()) < 1e-12


def test_elman_gradient_vanishes_faster_than_the_lstm_with_a_forget_bias():
    torch.manual_seed(0)
    B, T, IN, H = 8, 40, 6, 16
    xs = torch.randn(B, T, IN, dtype=torch.float64)
    rnn = torch.nn.RNN(IN, H, batch_first=True).double()
    lstm = torch.nn.LSTM(IN, H, batch_first=True).double()
    with torch.no_grad():
        lstm.bias_ih_l0[H : 2 * H] = 2.0  # forget gate open (Jozefowicz et al. 2015)
    v = torch.randn(H, dtype=torch.float64)
    zeros = torch.zeros(B, H, dtype=torch.float64)

    def elman(x, state):
        h = elman_cell(x, state[0], *_w(rnn))
        return h, (h,)

    def lstm_step(x, state):
        h, c = lstm_cell(x, state[0], state[1], *_w(lstm))
        return h, (h, c)

    e = gradient_norms(elman, xs, (zeros,), lambda h: h @ v)
    m = gradient_norms(lstm_step, xs, (zeros, zeros), lambda h: h @ v)
    # relative to the gradient at the last step, 30 steps back
    assert (e[T - 31] / e[T - 1]) < (m[T - 31] / m[T - 1])


def _w(m):
    return m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0
