"""Per-line scores of a language model on a test text, so that the contamination
audit's clean and dirty lines (data/audit/text/flags.tsv) get perplexities of their
own.

The neural models score the ``</s> line_1 </s> line_2 </s> ...`` stream in the
evaluation layout (firth.lm.data.eval_layout); the target at stream position p >= 1
belongs to the line that position p ends or lies in, so each line owns its tokens
and its closing ``</s>``, exactly as the n-gram model's windows count them."""

from __future__ import annotations

import numpy as np
import torch

from firth.lm.data import eval_layout


@torch.no_grad()
def score_targets(model, stream: torch.Tensor, *, batch: int, bptt: int, device):
    """The NLL in nats of every target of ``stream`` in stream order, (n,) float64
    (target j is stream[j + 1])."""
    was = model.training
    model.eval()
    x, y = eval_layout(stream, batch)
    x, y = x.to(device), y.to(device)
    state = model.init_state(x.shape[0], device)
    parts = []
    for t in range(0, x.shape[1], bptt):
        lp, state = model.log_prob_of(x[:, t : t + bptt], y[:, t : t + bptt], state)
        parts.append(-lp.double())
    model.train(was)
    return torch.cat(parts, dim=1).reshape(-1)[: len(stream) - 1].cpu()


def by_line(
    target_nll: torch.Tensor, stream: torch.Tensor, eos: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sum the per-target NLL into lines: (NLL per line, tokens per line)."""
    is_eos = (stream[1:] == eos).long()
    # targets before and at the k-th closing </s> belong to line k
    line = torch.cumsum(is_eos, 0) - is_eos
    lines = int(is_eos.sum())
    nll = np.bincount(line.numpy(), weights=target_nll.numpy(), minlength=lines)
    tokens = np.bincount(line.numpy(), minlength=lines)
    return nll[:lines], tokens[:lines]


def kn_by_line(lm, sentences: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """The Kneser-Ney model's NLL and token count (words + ``</s>``) per line."""
    w, _ = lm.windows(sentences)
    lp = -lm.log_probs(w).astype(np.float64)
    counts = np.array([len(s) + 1 for s in sentences])
    bounds = np.concatenate([[0], np.cumsum(counts)])
    return np.add.reduceat(lp, bounds[:-1]) if len(lp) else lp, counts
