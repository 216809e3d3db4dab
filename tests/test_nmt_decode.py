"""Decoding oracles: the issue's worked beam-search example, beam 1 against greedy,
padded batches against one sentence at a time, and attention masks."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from firth.nmt.data import BOS, EOS, PAD
from firth.nmt.decode import beam_search, greedy, penalty
from firth.nmt.models import build_model

A, B_ = 4, 5  # the toy's tokens a and b after the four specials
V = 6


class Toy(torch.nn.Module):
    """Next-token probabilities by previous token only (the issue's toy model)."""

    def __init__(self):
        super().__init__()
        table = torch.zeros(V, V, dtype=torch.float64)
        table[BOS, [A, B_, EOS]] = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
        table[A, [A, B_, EOS]] = torch.tensor([0.1, 0.65, 0.25], dtype=torch.float64)
        table[B_, [A, B_, EOS]] = torch.tensor([0.4, 0.3, 0.3], dtype=torch.float64)
        self.table = table.log()

    def encode(self, src, mask):
        return {"mask": mask}

    def start(self, memory):
        return {"dummy": memory["mask"][:, 0]}

    def step(self, y_prev, state, memory):
        return self.table[y_prev], state, None

    def logits(self, features):
        return features


def test_toy_beam_matches_the_worked_example():
    src = torch.tensor([[A, EOS]])
    out, every = beam_search(
        Toy(), src, src != PAD, torch.tensor([3]), beam=2, alpha=1.0, return_all=True
    )
    names = {A: "a", B_: "b"}
    got = [
        (" ".join([names[t] for t in h.tokens] + ["EOS"]), h.score, h.normalised)
        for h in every[0]
    ]
    want = [
        ("a b EOS", -2.1456, -0.7152),
        ("a EOS", -1.8971, -0.9486),
        ("b a EOS", -3.5066, -1.1689),
        ("b EOS", -2.4079, -1.2040),
        ("EOS", -2.3026, -2.3026),
    ]
    assert [g[0] for g in got] == [w[0] for w in want]
    for (_, s, n), (_, ws, wn) in zip(got, want, strict=True):
        assert s == pytest.approx(ws, abs=5e-5)
        assert n == pytest.approx(wn, abs=5e-5)
    assert out.tokens == [[A, B_]]
    assert out.scores[0] == pytest.approx(math.log(0.6 * 0.65 * 0.3))


def test_penalties_closed_form():
    L = torch.tensor([1.0, 3.0, 10.0])
    assert penalty(L, 0.0).tolist() == [1.0, 1.0, 1.0]
    assert penalty(L, 0.6, "gnmt").tolist() == pytest.approx(
        [((5 + n) / 6) ** 0.6 for n in (1, 3, 10)]
    )


def _cfg(model: str, cell: str = "gru", vocab_dim: int = 16):
    common = SimpleNamespace(
        cell=cell, emb_dim=vocab_dim, hidden=12, layers=1, dropout=0.0
    )
    return SimpleNamespace(
        common=common, transformer=SimpleNamespace(layers=1, heads=2, ff=24)
    )


MODELS = ["none", "context", "bahdanau", "luong-general", "luong-dot", "target-lm"]


def _random_batch(gen, n=5, vocab=30):
    lens = [3, 7, 1, 5, 9][:n]
    src = torch.full((n, max(lens)), PAD, dtype=torch.long)
    for i, L in enumerate(lens):
        src[i, :L] = torch.randint(4, vocab, (L,), generator=gen)
    return src


def _model(name, seed=0, cell="gru", vocab=30, eos_bias=0.0):
    torch.manual_seed(seed)
    m = build_model(name, vocab, _cfg(name, cell)).double().eval()
    with torch.no_grad():
        m.out_bias.normal_(0, 1)
        m.out_bias[EOS] += eos_bias
    return m


@pytest.mark.parametrize("name", [*MODELS, "transformer"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_padded_batch_decodes_like_single_sentences(name, cell):
    if name == "transformer" and cell == "lstm":
        pytest.skip("no cell in the transformer")
    gen = torch.Generator().manual_seed(1)
    m = _model(name, cell=cell)
    src = _random_batch(gen)
    mask = src != PAD
    max_len = mask.sum(1) * 2 + 3
    for decode in (
        lambda s, k, L: greedy(m, s, k, L),
        lambda s, k, L: beam_search(m, s, k, L, beam=3, alpha=0.6),
        lambda s, k, L: beam_search(m, s, k, L, beam=4, alpha=1.0, penalty_form="gnmt"),
    ):
        batched = decode(src, mask, max_len)
        for i in range(src.shape[0]):
            n = int(mask[i].sum())
            one = decode(src[i : i + 1, :n], mask[i : i + 1, :n], max_len[i : i + 1])
            assert one.tokens[0] == batched.tokens[i]
            assert one.scores[0] == pytest.approx(batched.scores[i], abs=1e-9)


@torch.no_grad()
def _completions_on_path(m, src, mask, max_len, alpha):
    """Oracle for beam 1, one sentence: follow the best non-</s> token at every
    step and score each prefix + </s>, normalised; returns (path, scores)."""
    from firth.nmt.decode import _log_probs

    memory = m.encode(src, mask)
    state = m.start(memory)
    y, path, total, scores = torch.tensor([BOS]), [], 0.0, []
    for t in range(max_len):
        feat, state, _ = m.step(y, state, memory)
        lp = _log_probs(m, feat)[0]
        scores.append((total + float(lp[EOS])) / (t + 1) ** alpha)
        lp[EOS] = -math.inf
        tok = int(lp.argmax())
        total += float(lp[tok])
        path.append(tok)
        y = torch.tensor([tok])
    return path, scores


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_one_against_greedy(name, alpha):
    """Beam 1 walks the best non-</s> path and returns its best </s> completion
    (oracle above); greedy's output is one of those completions, so beam 1 equals
    greedy exactly when greedy's ending scores best, and never scores worse."""
    gen = torch.Generator().manual_seed(2)
    same = 0
    for seed in range(4):
        m = _model(name, seed=seed, eos_bias=(-1.0, 0.0, 2.0, 4.0)[seed])
        src = _random_batch(gen)
        mask = src != PAD
        max_len = mask.sum(1) * 2 + 3
        g = greedy(m, src, mask, max_len)
        b = beam_search(m, src, mask, max_len, beam=1, alpha=alpha)
        for i, (gt, bt) in enumerate(zip(g.tokens, b.tokens, strict=True)):
            n = int(mask[i].sum())
            path, scores = _completions_on_path(
                m, src[i : i + 1, :n], mask[i : i + 1, :n], int(max_len[i]), alpha
            )
            best = max(range(len(scores)), key=lambda L: (scores[L], -L))
            assert bt == path[:best]
            assert gt == path[: len(gt)]  # greedy's output lies on that path
            assert scores[best] >= scores[len(gt)]
            same += bt == gt
    assert same > 0  # the cases include agreement, not only differences


@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
def test_beam_search_finds_the_best_on_small_cases(name):
    """Brute force: with a beam as wide as the vocabulary and max length 3 the
    search is exhaustive, so it must return the best normalised sequence (the
    transformer's cached keys and values reordered with the beams)."""
    for seed in range(3):
        m = _model(name, seed=seed, vocab=7, eos_bias=-1.5)
        src = torch.tensor([[4, 5, 6]])
        mask = src != PAD
        out = beam_search(m, src, mask, torch.tensor([3]), beam=7, alpha=0.7)
        best, best_seq = -math.inf, None
        tokens = [3, 4, 5, 6]  # </s> and the real tokens (specials are banned)
        import itertools

        for L in (1, 2, 3):
            for body in itertools.product(tokens[1:], repeat=L - 1):
                seq = [*body, EOS]
                lp = _sequence_logp(m, src, mask, seq)
                if lp / L**0.7 > best:
                    best, best_seq = lp / L**0.7, seq
        assert out.tokens[0] + [EOS] == best_seq


@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
@pytest.mark.parametrize("min_len", [0, 1, 2])
def test_min_len_is_the_best_of_the_long_enough(name, min_len):
    """Brute force with a strong </s> bias (the empty translation wins unless it
    is forbidden): an exhaustive beam with ``min_len`` returns the best normalised
    sequence among those with at least ``min_len`` tokens before </s>."""
    import itertools

    empty = 0
    for seed in range(3):
        m = _model(name, seed=seed, vocab=7, eos_bias=4.0)
        src = torch.tensor([[4, 5, 6]])
        mask = src != PAD
        out = beam_search(
            m, src, mask, torch.tensor([3]), beam=7, alpha=1.0, min_len=min_len
        )
        best, best_seq = -math.inf, None
        for L in range(min_len + 1, 4):
            for body in itertools.product([4, 5, 6], repeat=L - 1):
                seq = [*body, EOS]
                lp = _sequence_logp(m, src, mask, seq)
                if lp / L > best:
                    best, best_seq = lp / L, seq
        assert out.tokens[0] + [EOS] == best_seq
        empty += out.tokens[0] == []
    # the bias makes the empty output the best in some cases, which min_len forbids
    assert empty > 0 if min_len == 0 else empty == 0


def test_min_len_gives_way_at_the_maximum_length():
    m = _model("bahdanau", seed=0, vocab=7, eos_bias=4.0)
    src = torch.tensor([[4, 5, 6]])
    out = beam_search(m, src, src != PAD, torch.tensor([2]), beam=3, min_len=5)
    assert len(out.tokens[0]) == 1  # ended by the limit, not by min_len


@torch.no_grad()
def _sequence_logp(m, src, mask, seq):
    from firth.nmt.decode import _log_probs

    memory = m.encode(src, mask)
    state = m.start(memory)
    y, total = torch.tensor([BOS]), 0.0
    for tok in seq:
        feat, state, _ = m.step(y, state, memory)
        total += float(_log_probs(m, feat)[0, tok].detach())
        y = torch.tensor([tok])
    return total


@pytest.mark.parametrize("name", ["bahdanau", "luong-general", "luong-dot"])
def test_attention_rows_sum_to_one_and_skip_padding(name):
    gen = torch.Generator().manual_seed(3)
    m = _model(name)
    src = _random_batch(gen)
    mask = src != PAD
    tgt = torch.randint(4, 30, (src.shape[0], 6), generator=gen)
    _, attn = m(src, mask, tgt)
    assert attn.shape == (src.shape[0], 6, src.shape[1])
    assert torch.allclose(attn.sum(-1), torch.ones_like(attn[..., 0]), atol=1e-12)
    assert bool((attn.masked_select(~mask[:, None, :].expand_as(attn)) == 0).all())


@pytest.mark.parametrize("name", [*MODELS, "transformer"])
def test_step_by_step_equals_teacher_forcing(name):
    """The decoding interface (one step at a time; the transformer from its cached
    keys and values) gives the logits of the one-pass teacher-forced forward."""
    gen = torch.Generator().manual_seed(4)
    m = _model(name)
    src = _random_batch(gen)
    mask = src != PAD
    tgt = torch.randint(4, 30, (src.shape[0], 7), generator=gen)
    tgt[:, 0] = BOS
    full, _ = m(src, mask, tgt)
    memory = m.encode(src, mask)
    state = m.start(memory)
    for t in range(tgt.shape[1]):
        feat, state, attn = m.step(tgt[:, t], state, memory)
        assert torch.allclose(m.logits(feat), full[:, t], atol=1e-10)
        if attn is not None:
            assert torch.allclose(attn.sum(-1), torch.ones(src.shape[0]).double())
            assert bool((attn[~mask] == 0).all())


@pytest.mark.parametrize("name", ["luong-general", "luong-dot"])
def test_input_feeding_has_no_separate_recurrence(name):
    """Luong's readout feeds the next step, so its step is ``advance`` whole: the
    split ``recur``/``features`` of the other families is not Luong's and must not
    be callable on it."""
    m = _model(name)
    assert m.feeds_back
    src = _random_batch(torch.Generator().manual_seed(4))
    memory = m.encode(src, src != PAD)
    state = m.start(memory)
    e = m.embedding(torch.full((src.shape[0],), BOS))
    with pytest.raises(NotImplementedError):
        m.recur(e, state, memory)
    with pytest.raises(NotImplementedError):
        m.features(state["h"], None, e)


def test_coverage_penalty_closed_form():
    from firth.nmt.decode import coverage_penalty

    cov = torch.tensor([[0.5, 1.7, 0.0, 0.3]])
    mask = torch.tensor([[True, True, True, False]])
    want = 0.2 * (math.log(0.5) + math.log(1.0) + math.log(1e-6))
    assert float(coverage_penalty(cov, mask, 0.2)) == pytest.approx(want)


@pytest.mark.parametrize("name", ["bahdanau", "luong-dot", "transformer"])
@torch.no_grad()
def test_coverage_penalty_rescoring(name):
    """With beta > 0 every completed hypothesis's normalised score is its length-
    normalised log-probability plus beta * sum_j log min(coverage_j, 1), recomputed
    here from the attention of a teacher-forced pass; batched equals single."""
    from firth.nmt.decode import coverage_penalty

    gen = torch.Generator().manual_seed(5)
    m = _model(name, eos_bias=2.0)
    src = _random_batch(gen)[[1, 3, 4]]  # 7, 5 and 9 tokens: outputs shorter than
    mask = src != PAD  # their sources leave some coverage below 1
    max_len = torch.tensor([4, 3, 5])
    penalised = 0
    out, every = beam_search(
        m, src, mask, max_len, beam=3, alpha=1.0, beta=0.4, return_all=True
    )
    for i in range(src.shape[0]):
        n = int(mask[i].sum())
        s, k = src[i : i + 1, :n], mask[i : i + 1, :n]
        for h in every[i][:4]:
            seq = [*h.tokens, EOS]
            memory, y, cov = m.encode(s, k), torch.tensor([BOS]), torch.zeros(1, n)
            state = m.start(memory)
            for tok in seq:
                _, state, a = m.step(y, state, memory)
                cov = cov + a.float()
                y = torch.tensor([tok])
            lp = _sequence_logp(m, s, k, seq)
            cp = float(coverage_penalty(cov, k, 0.4))
            assert h.normalised == pytest.approx(lp / len(seq) + cp, abs=1e-6)
            penalised += cp < -1e-3
        one = beam_search(m, s, k, max_len[i : i + 1], beam=3, alpha=1.0, beta=0.4)
        assert one.tokens[0] == out.tokens[i] == every[i][0].tokens
    assert penalised >= 3
    with pytest.raises(ValueError, match="attention"):
        beam_search(_model("none"), src, mask, max_len, beam=2, beta=0.4)
