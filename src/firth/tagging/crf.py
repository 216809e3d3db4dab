"""A batched, masked linear-chain CRF.

Convention: ``transitions[i, j]`` is the score of moving FROM tag ``i`` TO tag ``j``
(rows are the previous tag, columns the next). ``start[j]`` scores a sentence that
begins with tag ``j`` and ``end[i]`` one that ends with tag ``i`` (both optional).

A tag sequence y of a sentence of length n scores

    s(x, y) = start[y_1] + sum_t emissions[t, y_t] + sum_{t>1} transitions[y_{t-1}, y_t]
              + end[y_n]

and p(y | x) = exp s(x, y) / Z(x), Z summing over every sequence the allowed-transition
mask permits. Emissions are (B, T, K); the mask (B, T) marks real tokens and must be
left-aligned (a prefix of True per sentence, every sentence non-empty). The forward
algorithm and Viterbi run batched over sentences and loop only over time; positions
past a sentence's end leave its state unchanged.

Hard constraints (BIO: ``I-X`` may follow only ``B-X`` or ``I-X``, and may not start a
sentence) are a boolean mask over transitions (and starts/ends): a forbidden move
adds ``FORBIDDEN`` (-10^4) to the score, so its probability is exp(-10^4) = 0 in
floating point and Viterbi never takes it. Given at construction (``allowed``), the
mask holds in training and decoding alike (the constrained CRF, which cannot break
BIO by design); given to ``viterbi`` alone (``constraints``), it only constrains the
decoding of a CRF whose transitions were learned freely (Lample et al. 2016 learn
them all; a free CRF can still predict an invalid sequence).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

FORBIDDEN = -1e4


def bio_constraints(tags: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Allowed (K, K) transitions and allowed (K,) first tags for a BIO tag set:
    ``I-X`` only after ``B-X`` or ``I-X``, never first. Any other tag set (e.g. POS)
    allows everything."""
    k = len(tags)
    allowed = torch.ones(k, k, dtype=torch.bool)
    first = torch.ones(k, dtype=torch.bool)
    if not all(t == "O" or t[:2] in ("B-", "I-") for t in tags):
        return allowed, first
    for j, to in enumerate(tags):
        if not to.startswith("I-"):
            continue
        first[j] = False
        for i, frm in enumerate(tags):
            allowed[i, j] = frm in ("B-" + to[2:], "I-" + to[2:])
    return allowed, first


def alphas(emissions, trans, first, mask=None) -> list:
    """Forward variables alpha_t (B, K) for every t: alpha_t(j) = log sum over
    y_1..y_t with y_t = j of the score so far. With ``mask``, frozen past each
    sentence's end; without it the recursion runs on over the padding (its values
    there are for nobody to read)."""
    trans = trans.unsqueeze(0)  # (1, K_from, K_to)
    alpha = first + emissions[:, 0]
    out = [alpha]
    for t in range(1, emissions.shape[1]):
        nxt = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
        alpha = nxt if mask is None else torch.where(mask[:, t, None], nxt, alpha)
        out.append(alpha)
    return out


def betas(emissions, trans, last, mask) -> list:
    """Backward variables beta_t (B, K): beta_t(i) = log sum over the continuations
    y_{t+1}..y_n of their score (the end score included), given y_t = i; ``last``
    at the last real token and after it."""
    beta = last.expand_as(emissions[:, 0])
    out = [beta] * emissions.shape[1]
    for t in range(emissions.shape[1] - 2, -1, -1):
        nxt = torch.logsumexp(trans + (emissions[:, t + 1] + beta).unsqueeze(1), dim=2)
        # while t+1 is padding, t is the last real token (or padding): keep end
        beta = torch.where(mask[:, t + 1, None], nxt, beta)
        out[t] = beta
    return out


class CRF(nn.Module):
    def __init__(
        self,
        num_tags: int,
        *,
        start_end: bool = True,
        allowed: torch.Tensor | None = None,
        allowed_first: torch.Tensor | None = None,
    ):
        super().__init__()
        self.num_tags = num_tags
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        nn.init.uniform_(self.transitions, -0.1, 0.1)
        if start_end:
            self.start = nn.Parameter(torch.zeros(num_tags))
            self.end = nn.Parameter(torch.zeros(num_tags))
        else:
            self.register_parameter("start", None)
            self.register_parameter("end", None)
        if allowed is None:
            allowed = torch.ones(num_tags, num_tags, dtype=torch.bool)
        if allowed_first is None:
            allowed_first = torch.ones(num_tags, dtype=torch.bool)
        if allowed.shape != (num_tags, num_tags) or allowed_first.shape != (num_tags,):
            raise ValueError("allowed must be (K, K) and allowed_first (K,)")
        self.register_buffer("allowed", allowed.bool())
        self.register_buffer("allowed_first", allowed_first.bool())

    # -- scores -----------------------------------------------------------------
    def trans(self) -> torch.Tensor:
        """Transition scores with the forbidden moves pushed to FORBIDDEN."""
        return self.transitions.masked_fill(~self.allowed, FORBIDDEN)

    def first(self) -> torch.Tensor:
        s = (
            self.start
            if self.start is not None
            else self.transitions.new_zeros(self.num_tags)
        )
        return s.masked_fill(~self.allowed_first, FORBIDDEN)

    def last(self) -> torch.Tensor:
        if self.end is None:
            return self.transitions.new_zeros(self.num_tags)
        return self.end

    @staticmethod
    def _check(emissions: torch.Tensor, mask: torch.Tensor) -> None:
        if emissions.dim() != 3 or mask.shape != emissions.shape[:2]:
            raise ValueError("emissions must be (B, T, K) and mask (B, T)")
        if mask.shape[1] and not bool(mask[:, 0].all()):
            raise ValueError("every sentence needs at least one token (mask[:, 0])")

    def log_partition(
        self, emissions: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """log Z per sentence, (B,). The recursion runs on over the padding too
        (finite emissions there: nothing reads them) and each sentence's alpha is
        read at its last token: one gather in place of a ``where`` per step (1.08x
        the forward and backward at the tagger's sizes, benchmarks/layer_speed.py)."""
        self._check(emissions, mask)
        out = alphas(emissions, self.trans(), self.first())
        end = (mask.sum(1) - 1).view(-1, 1, 1).expand(-1, 1, self.num_tags)
        alpha = torch.stack(out, 1).gather(1, end).squeeze(1)
        return torch.logsumexp(alpha + self.last(), dim=1)

    def score(
        self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """s(x, y) of the given tag sequences, (B,) (tags past the end are ignored)."""
        self._check(emissions, mask)
        mask = mask.bool()
        m = mask.to(emissions.dtype)
        tags = tags.masked_fill(~mask, 0)
        emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)
        total = (emit * m).sum(1) + self.first()[tags[:, 0]]
        if tags.shape[1] > 1:
            step = self.trans()[tags[:, :-1], tags[:, 1:]]
            total = total + (step * m[:, 1:]).sum(1)
        last = mask.sum(1) - 1
        return total + self.last()[tags.gather(1, last.unsqueeze(1)).squeeze(1)]

    def nll(
        self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Per-sentence negative log-likelihood -log p(y | x), (B,)."""
        return self.log_partition(emissions, mask) - self.score(emissions, tags, mask)

    def marginals(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """p(y_t = k | x) by forward-backward, (B, T, K) (zero past the end)."""
        self._check(emissions, mask)
        mask = mask.bool()
        trans, last = self.trans(), self.last()
        a = torch.stack(alphas(emissions, trans, self.first(), mask), 1)
        b = torch.stack(betas(emissions, trans, last, mask), 1)
        log_z = torch.logsumexp(a[:, -1] + last, dim=1)
        return (a + b - log_z[:, None, None]).exp() * mask.unsqueeze(2)

    # -- decoding ---------------------------------------------------------------
    @torch.no_grad()
    def viterbi(
        self,
        emissions: torch.Tensor,
        mask: torch.Tensor,
        *,
        constraints: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[list[list[int]], torch.Tensor]:
        """The best tag sequence of every sentence (lists cut to its length) and its
        score, (B,), batched, with back-pointers. ``constraints`` (allowed (K, K)
        transitions, allowed (K,) first tags) forbid more moves at decoding only."""
        self._check(emissions, mask)
        mask = mask.bool()
        b, n, k = emissions.shape
        trans, first = self.trans(), self.first()
        if constraints is not None:
            allowed, allowed_first = (c.to(trans.device) for c in constraints)
            trans = trans.masked_fill(~allowed, FORBIDDEN)
            first = first.masked_fill(~allowed_first, FORBIDDEN)
        trans = trans.unsqueeze(0)  # (1, K_from, K_to)
        score = first + emissions[:, 0]
        keep = torch.arange(k, device=emissions.device).expand(b, k)
        pointers = []
        for t in range(1, n):
            best, arg = (score.unsqueeze(2) + trans).max(dim=1)  # over previous tags
            on = mask[:, t, None]
            score = torch.where(on, best + emissions[:, t], score)
            # past the end the pointer is the identity, so backtracking passes through
            pointers.append(torch.where(on, arg, keep))
        score = score + self.last()
        final, tag = score.max(dim=1)
        path = [tag]
        for arg in reversed(pointers):
            tag = arg.gather(1, tag.unsqueeze(1)).squeeze(1)
            path.append(tag)
        path.reverse()
        full = torch.stack(path, 1).tolist()
        lengths = mask.sum(1).tolist()
        return [row[:m] for row, m in zip(full, lengths, strict=True)], final
