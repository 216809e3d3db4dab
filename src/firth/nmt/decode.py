"""Greedy decoding and beam search, batched over sentences (and beams).

Beam search keeps ``beam`` live hypotheses per sentence in one (B*beam) batch. At
every step each live hypothesis is extended by every token: its ``</s>`` extension
is a completed hypothesis and leaves the beam (its score is recorded), and the
``beam`` best extensions by other tokens stay live. A sentence stops when no live
hypothesis can still beat its best completed one after length normalisation (an
exact bound: log-probabilities only fall and the penalty only grows, so a live
score s can at best reach s / penalty(max_len)), or at its maximum length, floor(a
|x|) + b tokens with ``</s>``, where only ``</s>`` is allowed. A stopped sentence
leaves the batch (its rows are dropped from the decoder state and the encoder
memory), so the remaining steps cost only what the unfinished sentences need. The
winner is the completed hypothesis with the best normalised score,
log p(y|x) / penalty(|y|) + coverage(x, y), with |y| counting ``</s>`` but not
``<s>``:

- ``length``: |y|^alpha (alpha = 0: raw log-probability);
- ``gnmt``: ((5 + |y|) / 6)^alpha (Wu et al. 2016);
- coverage (``beta`` > 0, attention models only): beta * sum_j log min(sum_i
  a_ij, 1) over the real source positions j, where a_ij is the attention of target
  step i (the ``</s>`` step included) on source position j (Wu et al. 2016). It is
  at most 0, so the stopping bound above still holds. Coverage below 1e-6 counts
  as 1e-6 (a source position attention never reached costs beta * log 1e-6, not
  minus infinity).

Every step is tensor operations over all sentences and beams; the only Python loops
are over time steps. Only the ``beam`` best tokens of each hypothesis can enter
the next beam, so each row is cut to its top ``beam`` before the candidates of a
sentence are ranked (``beam`` x ``beam`` candidates instead of ``beam`` x vocabulary).
``<pad>``, ``<unk>`` and ``<s>`` are never produced.

``min_len`` forbids completions with fewer output tokens before ``</s>``: with 1,
the empty translation, which a weak model's beam often prefers (its ``</s>`` at the
first step costs less than any sentence's log-probability divided by its length
penalty; Stahlberg and Byrne 2019), is never returned, as in fairseq's and
JoeyNMT's beam search. At a sentence's maximum length ``</s>`` is allowed whatever
``min_len`` says.

With beam 1 the search follows the greedy path; it returns greedy's output unless an
earlier ``</s>`` completion on that path has a better normalised score than greedy's
own ending (then that shorter output is, by the search's own objective, better).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from firth.nmt.data import BOS, EOS, PAD, UNK, make_batch, max_lengths, sentence_batches
from firth.nmt.models import repeat, select

BANNED = (PAD, UNK, BOS)
MIN_COVERAGE = 1e-6


def penalty(length: torch.Tensor, alpha: float, form: str = "length") -> torch.Tensor:
    length = length.double()
    if form == "length":
        return length**alpha
    if form == "gnmt":
        return ((5 + length) / 6) ** alpha
    raise ValueError(f"unknown length penalty {form!r} (length or gnmt)")


def coverage_penalty(coverage: torch.Tensor, mask: torch.Tensor, beta: float):
    """beta * sum_j log min(coverage_j, 1) over the real positions (mask True)."""
    c = coverage.double().clamp(MIN_COVERAGE, 1.0).log()
    return beta * (c * mask).sum(-1)


def _scores(model, features: torch.Tensor):
    """Next-token logits with the banned tokens at -inf, and the log normaliser
    (logsumexp over the whole vocabulary): log p = logits - lognorm."""
    logits = model.logits(features)
    lognorm = torch.logsumexp(logits, dim=-1)
    logits = logits.clone()
    logits[:, list(BANNED)] = -torch.inf
    return logits, lognorm


def _log_probs(model, features: torch.Tensor) -> torch.Tensor:
    logits, lognorm = _scores(model, features)
    return (logits - lognorm[:, None]).double()


@dataclass
class Output:
    tokens: list[list[int]]  # per sentence, without </s>
    scores: list[float]  # log p(y </s> | x)
    attention: list[torch.Tensor] | None = None  # (|y|+1, S) per sentence (greedy)


@torch.no_grad()
def greedy(model, src, mask, max_len: torch.Tensor, *, attention: bool = False):
    """The most probable token at every step until ``</s>`` or the maximum length.
    Finished sentences leave the batch."""
    B, dev = src.shape[0], src.device
    memory = model.encode(src, mask)
    state = model.start(memory)
    y = torch.full((B,), BOS, dtype=torch.long, device=dev)
    act = torch.arange(B, device=dev)  # the sentences still decoding
    score = torch.zeros(B, dtype=torch.float64, device=dev)
    max_len = max_len.to(dev)
    T = int(max_len.max())
    out = torch.full((B, T), PAD, dtype=torch.long, device=dev)
    attns = torch.zeros(B, T, src.shape[1], device=dev) if attention else None
    for t in range(T):
        feat, state, attn = model.step(y, state, memory)
        logits, lognorm = _scores(model, feat)
        y = logits.argmax(-1)
        y = torch.where(t + 1 >= max_len[act], torch.full_like(y, EOS), y)
        score[act] += (logits.gather(1, y[:, None]).squeeze(1) - lognorm).double()
        out[act, t] = y
        if attns is not None and attn is not None:
            attns[act, t] = attn.to(attns.dtype)
        going = y != EOS
        if not bool(going.any()):
            break
        if not bool(going.all()):
            rows = going.nonzero()[:, 0]
            act, y = act[going], y[going]
            state, memory = select(state, rows), select(memory, rows)
    out = out.cpu()
    tokens, maps = [], []
    for b in range(B):
        row = out[b].tolist()
        n = row.index(EOS)
        tokens.append(row[:n])
        if attention and model.has_attention:
            maps.append(attns[b, : n + 1].float().cpu())
    return Output(tokens, score.tolist(), maps or None)


@dataclass
class Completed:
    tokens: list[int]
    score: float
    normalised: float


@dataclass
class Lattice:
    """What a beam search recorded per step t, sentence b and beam slot j: the
    score of ending there (``ends``, and ``norm`` after the length and coverage
    penalties; -inf where nothing ended), the token chosen and its parent slot."""

    ends: torch.Tensor
    norm: torch.Tensor
    tokens: torch.Tensor
    parents: torch.Tensor

    def backtrack(self, b: int, t: int, j: int) -> list[int]:
        """The tokens of the hypothesis that ends at step t in slot j."""
        out = []
        for s in range(t - 1, -1, -1):
            out.append(int(self.tokens[s, b, j]))
            j = int(self.parents[s, b, j])
        return out[::-1]

    def winners(self) -> Output:
        """Per sentence, the completed hypothesis with the best normalised score."""
        T, B, k = self.norm.shape
        flat = self.norm.permute(1, 0, 2).reshape(B, -1)
        out = Output([], [])
        for b, w in enumerate(flat.argmax(1).tolist()):
            t, j = divmod(w, k)
            out.tokens.append(self.backtrack(b, t, j))
            out.scores.append(float(self.ends[t, b, j]))
        return out

    def completed(self, b: int) -> list[Completed]:
        """Every completed hypothesis of sentence b, best first."""
        T, _, k = self.norm.shape
        hyps = [
            Completed(
                self.backtrack(b, t, j),
                float(self.ends[t, b, j]),
                float(self.norm[t, b, j]),
            )
            for t in range(T)
            for j in range(k)
            if self.ends[t, b, j] > -torch.inf
        ]
        return sorted(hyps, key=lambda h: -h.normalised)


@torch.no_grad()
def beam_search(
    model,
    src,
    mask,
    max_len: torch.Tensor,
    *,
    beam: int,
    alpha: float = 1.0,
    penalty_form: str = "length",
    beta: float = 0.0,
    min_len: int = 0,
    return_all: bool = False,
):
    """Batched beam search (see the module docstring). Returns an Output with the
    winner per sentence; with ``return_all`` also every completed hypothesis per
    sentence, best first (for tests and inspection)."""
    if beta and not model.has_attention:
        raise ValueError("the coverage penalty (beta > 0) needs an attention model")
    B, k, dev = src.shape[0], beam, src.device
    memory = repeat(model.encode(src, mask), k)
    state = model.start(memory)
    y = torch.full((B * k,), BOS, dtype=torch.long, device=dev)
    live = torch.full((B, k), -torch.inf, dtype=torch.float64, device=dev)
    live[:, 0] = 0.0
    max_len = max_len.to(dev)
    top_pen = penalty(max_len, alpha, penalty_form)
    best = torch.full((B,), -torch.inf, dtype=torch.float64, device=dev)
    act = torch.arange(B, device=dev)  # the sentences still searching
    src_mask = mask.repeat_interleave(k, dim=0)
    coverage = torch.zeros(B * k, mask.shape[1], device=dev) if beta else None
    T = int(max_len.max())
    # per step, for every sentence (rows of stopped sentences stay -inf / 0):
    ends = torch.full((T, B, k), -torch.inf, dtype=torch.float64, device=dev)
    norm = torch.full((T, B, k), -torch.inf, dtype=torch.float64, device=dev)
    tokens = torch.zeros((T, B, k), dtype=torch.long, device=dev)
    parents = torch.zeros((T, B, k), dtype=torch.long, device=dev)
    for t in range(T):
        A = act.shape[0]
        feat, state, attn = model.step(y, state, memory)
        logits, lognorm = _scores(model, feat)
        eos = (logits[:, EOS] - lognorm).double().view(A, k)
        if t < min_len:  # t tokens so far: too short to end, unless at the limit
            eos = torch.where(
                (t + 1 >= max_len[act])[:, None], eos, torch.full_like(eos, -torch.inf)
            )
        logits[:, EOS] = -torch.inf
        top_v, top_i = logits.topk(min(k, logits.shape[1]), dim=1)  # (A*k, k')
        w = top_v.shape[1]
        # every live hypothesis's </s> extension is completed, with length t + 1
        done_here = live + eos
        ends[t, act] = done_here
        normed = done_here / penalty(torch.tensor(t + 1.0), alpha, penalty_form)
        if coverage is not None:
            coverage = coverage + attn.to(coverage.dtype)
            normed = normed + coverage_penalty(coverage, src_mask, beta).view(A, k)
        norm[t, act] = normed
        best[act] = torch.maximum(best[act], normed.max(1).values)
        cand = live[:, :, None] + (top_v - lognorm[:, None]).double().view(A, k, w)
        top, idx = cand.view(A, -1).topk(k, dim=1)
        parent = idx // w
        tok = top_i.view(A, -1).gather(1, idx)
        tokens[t, act], parents[t, act] = tok, parent
        stop = (t + 1 >= max_len[act]) | (best[act] >= top[:, 0] / top_pen[act])
        if bool(stop.all()):
            break
        go = ~stop
        keep = go.nonzero()[:, 0]  # compact indices of the sentences going on
        flat = (keep[:, None] * k + parent[keep]).view(-1)
        state = select(state, flat)
        if coverage is not None:
            coverage = coverage.index_select(0, flat)
        if not bool(go.all()):  # drop the stopped sentences from the memory
            rows = (keep[:, None] * k + torch.arange(k, device=dev)).view(-1)
            memory = select(memory, rows)
            src_mask = src_mask.index_select(0, rows)
        act, live, y = act[keep], top[keep], tok[keep].view(-1)
    T = t + 1
    history = Lattice(
        ends[:T].cpu(), norm[:T].cpu(), tokens[:T].cpu(), parents[:T].cpu()
    )
    out = history.winners()
    if not return_all:
        return out
    return out, [history.completed(b) for b in range(B)]


@torch.no_grad()
def decode_corpus(
    model,
    src: list[list[int]],
    *,
    batch: int,
    a: float,
    b: int,
    device,
    beam: int = 1,
    alpha: float = 1.0,
    penalty_form: str = "length",
    beta: float = 0.0,
    min_len: int = 0,
) -> list[list[int]]:
    """Output token ids (without </s>) of every encoded source, in input order:
    greedy for ``beam`` 1, else beam search; batches of ``batch`` sentences of
    similar length, each with maximum output length floor(a |x|) + b."""
    was = model.training
    model.eval()
    out: list = [None] * len(src)
    for idx in sentence_batches(src, batch):
        bt = make_batch(idx, src, None).to(device)
        max_len = max_lengths(bt.src_mask.sum(1), a, b)
        if beam == 1:
            res = greedy(model, bt.src, bt.src_mask, max_len)
        else:
            res = beam_search(
                model,
                bt.src,
                bt.src_mask,
                max_len,
                beam=beam,
                alpha=alpha,
                penalty_form=penalty_form,
                beta=beta,
                min_len=min_len,
            )
        for i, ids in zip(idx, res.tokens, strict=True):
            out[i] = ids
    model.train(was)
    return out
