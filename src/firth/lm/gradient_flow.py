"""How far back a gradient reaches: the norm of dL_T/dh_t against the distance
T - t (Bengio, Simard and Frasconi 1994; Hochreiter and Schmidhuber 1997), measured
by stepping a recurrent cell by hand and keeping every hidden state.

For an LSTM the state is (h, c) but, as in the vanishing-gradient argument, the
quantity reported is the gradient with respect to the hidden output h_t.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# step(x_t, state) -> (h_t, state'); state is a tuple of tensors
Step = Callable[[torch.Tensor, tuple[torch.Tensor, ...]], tuple[torch.Tensor, tuple]]


def gradient_norms(
    step: Step,
    xs: torch.Tensor,
    state: tuple[torch.Tensor, ...],
    loss: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """||dL_T/dh_t|| for t = 0..T-1, averaged over the batch, as (T,).

    xs (B, T, I) are the inputs, ``state`` the initial state, and ``loss`` maps
    the last hidden output h_{T-1} (B, H) to one scalar per example (B,).
    Entry T-1-t is the distance T-1-t from the loss.
    """
    B, T, _ = xs.shape
    # a leaf that requires grad puts every h_t in the graph, even with frozen weights
    state = tuple(s.detach().clone().requires_grad_(True) for s in state)
    hs = []
    for t in range(T):
        h, state = step(xs[:, t], state)
        h.retain_grad()
        hs.append(h)
        state = (h, *state[1:]) if len(state) > 1 else (h,)
    loss(hs[-1]).sum().backward()
    return torch.stack([h.grad.norm(dim=1).mean() for h in hs])


def model_gradient_norms(model, ids: torch.Tensor, *, warm: int) -> torch.Tensor:
    """||dL_T/dh_t|| of a trained recurrent LM (firth.lm.models.RNN) on real text.

    ids (B, warm + T + 1): the first ``warm`` tokens only warm the state up (no
    gradient), the next T are stepped one at a time keeping every state, and L_T is
    the negative log-likelihood of the last token given the top-layer h_T. Returns
    the batch mean of ||dL_T/dh_t|| for the top layer, t = 0..T-1 (entry T-1-t is
    distance T-1-t). Dropout is off (eval mode)."""
    was = model.training
    model.eval()
    B, n = ids.shape
    T = n - warm - 1
    if T < 1:
        raise ValueError("ids must hold warm + at least 2 tokens")
    with torch.no_grad():
        state = model.init_state(B, ids.device)
        if warm:
            _, state = model(ids[:, :warm], state)
        emb = model.embedding(ids[:, warm : warm + T])
    states = []
    for t in range(T):
        _, state = model.step(emb[:, t], state)
        states.append(state[0] if isinstance(state, tuple) else state)  # (layers, B, H)
    feats = model.out(states[-1][-1])
    loss = -model.softmax.log_prob_of(feats, ids[:, -1]).sum()
    grads = torch.autograd.grad(loss, states)
    model.train(was)
    return torch.stack([g[-1].norm(dim=1).mean() for g in grads])
