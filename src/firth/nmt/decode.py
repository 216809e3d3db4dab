"""Greedy decoding and beam search, batched over sentences (and beams).

Beam search keeps ``beam`` live hypotheses per sentence in one (B*beam) batch. At
every step each live hypothesis is extended by every token: its ``</s>`` extension
is a completed hypothesis and leaves the beam (its score is recorded), and the
``beam`` best extensions by other tokens stay live. A sentence stops when no live
hypothesis can still beat its best completed one after length normalisation (an
exact bound: log-probabilities only fall and the penalty only grows, so a live
score s can at best reach s / penalty(max_len)), or at its maximum length, floor(a
|x|) + b tokens with ``</s>``, where only ``</s>`` is allowed. The winner is the
completed hypothesis with the best normalised score, log p(y|x) / penalty(|y|),
with |y| counting ``</s>`` but not ``<s>``:

- ``length``: |y|^alpha (alpha = 0: raw log-probability);
- ``gnmt``: ((5 + |y|) / 6)^alpha (Wu et al. 2016).

Every step is tensor operations over all sentences and beams; the only Python loops
are over time steps. ``<pad>``, ``<unk>`` and ``<s>`` are never produced.

With beam 1 the search follows the greedy path; it returns greedy's output unless an
earlier ``</s>`` completion on that path has a better normalised score than greedy's
own ending (then that shorter output is, by the search's own objective, better).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from firth.nmt.data import BOS, EOS, PAD, UNK
from firth.nmt.models import repeat, select

BANNED = (PAD, UNK, BOS)


def penalty(length: torch.Tensor, alpha: float, kind: str = "length") -> torch.Tensor:
    length = length.double()
    if kind == "length":
        return length**alpha
    if kind == "gnmt":
        return ((5 + length) / 6) ** alpha
    raise ValueError(f"unknown length penalty {kind!r} (length or gnmt)")


def _log_probs(model, features: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(model.logits(features).double(), dim=-1)
    logp[:, list(BANNED)] = -torch.inf
    return logp


@dataclass
class Output:
    tokens: list[list[int]]  # per sentence, without </s>
    scores: list[float]  # log p(y </s> | x)
    attention: list[torch.Tensor] | None = None  # (|y|+1, S) per sentence (greedy)


@torch.no_grad()
def greedy(model, src, mask, max_len: torch.Tensor, *, attention: bool = False):
    """The most probable token at every step until ``</s>`` or the maximum length."""
    B = src.shape[0]
    memory = model.encode(src, mask)
    state = model.start(memory)
    y = torch.full((B,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    score = torch.zeros(B, dtype=torch.float64, device=src.device)
    steps, attns = [], []
    max_len = max_len.to(src.device)
    for t in range(int(max_len.max())):
        feat, state, attn = model.step(y, state, memory)
        logp = _log_probs(model, feat)
        y = logp.argmax(-1)
        y = torch.where(t + 1 >= max_len, torch.full_like(y, EOS), y)
        score += torch.where(done, 0.0, logp.gather(1, y[:, None]).squeeze(1))
        steps.append(torch.where(done, PAD, y))
        if attention and attn is not None:
            attns.append(attn)
        done |= y == EOS
        if bool(done.all()):
            break
    out = torch.stack(steps, 1).cpu()
    tokens, maps = [], []
    for b in range(B):
        row = out[b].tolist()
        n = row.index(EOS)
        tokens.append(row[:n])
        if attns:
            maps.append(torch.stack([a[b] for a in attns[: n + 1]]).float().cpu())
    return Output(tokens, score.tolist(), maps or None)


@dataclass
class Completed:
    tokens: list[int]
    score: float
    normalised: float


@torch.no_grad()
def beam_search(
    model,
    src,
    mask,
    max_len: torch.Tensor,
    *,
    beam: int,
    alpha: float = 1.0,
    kind: str = "length",
    return_all: bool = False,
):
    """Batched beam search (see the module docstring). Returns an Output with the
    winner per sentence; with ``return_all`` also every completed hypothesis per
    sentence, best first (for tests and inspection)."""
    B, k, dev = src.shape[0], beam, src.device
    memory = repeat(model.encode(src, mask), k)
    state = model.start(memory)
    y = torch.full((B * k,), BOS, dtype=torch.long, device=dev)
    live = torch.full((B, k), -torch.inf, dtype=torch.float64, device=dev)
    live[:, 0] = 0.0
    max_len = max_len.to(dev)
    top_pen = penalty(max_len, alpha, kind)
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    best = torch.full((B,), -torch.inf, dtype=torch.float64, device=dev)
    finished, tokens, parents = [], [], []
    rows = torch.arange(B, device=dev)[:, None] * k
    for t in range(int(max_len.max())):
        feat, state, _ = model.step(y, state, memory)
        cand = live[:, :, None] + _log_probs(model, feat).view(B, k, -1)
        # every live hypothesis's </s> extension is completed, with length t + 1
        ends = cand[:, :, EOS].masked_fill(done[:, None], -torch.inf)
        finished.append(ends)
        pen = penalty(torch.tensor(t + 1.0), alpha, kind)
        best = torch.maximum(best, (ends / pen).max(1).values)
        cand[:, :, EOS] = -torch.inf
        top, idx = cand.view(B, -1).topk(k, dim=1)
        parent, tok = idx // cand.shape[2], idx % cand.shape[2]
        done |= (t + 1 >= max_len) | (best >= top[:, 0] / top_pen)
        live = top.masked_fill(done[:, None], -torch.inf)
        tokens.append(tok)
        parents.append(parent)
        if bool(done.all()):
            break
        flat = (rows + parent).view(-1)
        state = select(state, flat)
        y = tok.view(-1)
    ends = torch.stack(finished)  # (T, B, k): completion of beam j before step t
    T = ends.shape[0]
    lengths = torch.arange(1, T + 1, device=dev, dtype=torch.float64)
    norm = ends / penalty(lengths, alpha, kind)[:, None, None]
    tokens_t, parents_t = torch.stack(tokens), torch.stack(parents)  # (T, B, k)

    def backtrack(b: int, t: int, j: int) -> list[int]:
        out = []
        for s in range(t - 1, -1, -1):
            out.append(int(tokens_t[s, b, j]))
            j = int(parents_t[s, b, j])
        return out[::-1]

    flat = norm.permute(1, 0, 2).reshape(B, -1)
    win = flat.argmax(1).tolist()
    out = Output([], [])
    for b, w in enumerate(win):
        t, j = divmod(w, k)
        out.tokens.append(backtrack(b, t, j))
        out.scores.append(float(ends[t, b, j]))
    if not return_all:
        return out
    every = []
    for b in range(B):
        hyps = [
            Completed(backtrack(b, t, j), float(ends[t, b, j]), float(norm[t, b, j]))
            for t in range(T)
            for j in range(k)
            if ends[t, b, j] > -torch.inf
        ]
        every.append(sorted(hyps, key=lambda h: -h.normalised))
    return out, every
