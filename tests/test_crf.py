"""The linear-chain CRF against brute-force enumeration of every tag sequence, the
issue's worked example, and forward-backward marginals against autograd."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from firth.tagging.crf import CRF, FORBIDDEN, alphas, bio_constraints


def brute_force(crf: CRF, em: torch.Tensor, n: int):
    """Every sequence of length n: (log Z, best path, best score) over allowed ones,
    by explicit enumeration with plain Python sums."""
    k = crf.num_tags
    trans = crf.transitions.detach().double()
    start = crf.start.detach().double() if crf.start is not None else torch.zeros(k)
    end = crf.end.detach().double() if crf.end is not None else torch.zeros(k)
    scores = {}
    for ys in itertools.product(range(k), repeat=n):
        if not crf.allowed_first[ys[0]]:
            continue
        if any(not crf.allowed[a, b] for a, b in itertools.pairwise(ys)):
            continue
        s = float(start[ys[0]]) + sum(float(em[t, y]) for t, y in enumerate(ys))
        s += sum(float(trans[a, b]) for a, b in itertools.pairwise(ys))
        scores[ys] = s + float(end[ys[-1]])
    log_z = math.log(sum(math.exp(v) for v in scores.values()))
    best = max(scores, key=scores.get)
    return log_z, list(best), scores[best], scores


def random_case(seed: int, k: int, start_end: bool, constrained: bool):
    g = torch.Generator().manual_seed(seed)
    allowed = first = None
    if constrained:
        allowed = torch.rand(k, k, generator=g) > 0.3
        allowed[:, 0] = True  # tag 0 is always reachable (like O)
        first = torch.rand(k, generator=g) > 0.3
        first[0] = True
    crf = CRF(k, start_end=start_end, allowed=allowed, allowed_first=first)
    with torch.no_grad():
        crf.transitions.copy_(torch.randn(k, k, generator=g))
        if start_end:
            crf.start.copy_(torch.randn(k, generator=g))
            crf.end.copy_(torch.randn(k, generator=g))
    return crf, g


@pytest.mark.parametrize("start_end", [False, True])
@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_z_and_viterbi_match_brute_force_with_padding(seed, start_end, constrained):
    k = 3
    crf, g = random_case(seed, k, start_end, constrained)
    lengths = [4, 1, 3, 2]
    em = torch.randn(len(lengths), max(lengths), k, generator=g).double()
    crf.double()
    mask = torch.tensor([[t < n for t in range(max(lengths))] for n in lengths])
    with torch.no_grad():
        log_z = crf.log_partition(em, mask)
        paths, best = crf.viterbi(em, mask)
    for i, n in enumerate(lengths):
        ref_z, ref_path, ref_best, scores = brute_force(crf, em[i], n)
        assert float(log_z[i]) == pytest.approx(ref_z, abs=1e-9)
        assert paths[i] == ref_path
        assert float(best[i]) == pytest.approx(ref_best, abs=1e-9)
        # the gold-path score of a padded batch equals the enumerated one
        tags = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
        tags[i, :n] = torch.tensor(ref_path)
        gold = crf.score(em, tags, mask)[i].detach()
        assert float(gold) == pytest.approx(ref_best, abs=1e-9)
        # probabilities of all allowed sequences sum to one
        total = sum(math.exp(s - float(log_z[i])) for s in scores.values())
        assert total == pytest.approx(1.0, abs=1e-9)


def test_padding_does_not_change_a_sentence():
    crf, g = random_case(5, 4, True, True)
    em = torch.randn(1, 3, 4, generator=g)
    padded = torch.cat([em, torch.randn(1, 4, 4, generator=g) * 100], 1)
    mask = torch.tensor([[True] * 3 + [False] * 4])
    tags = torch.tensor([[0, 0, 0, 3, 3, 3, 3]])
    assert torch.allclose(
        crf.log_partition(em, mask[:, :3]), crf.log_partition(padded, mask)
    )
    assert crf.viterbi(em, mask[:, :3])[0] == crf.viterbi(padded, mask)[0]
    assert torch.allclose(
        crf.nll(em, tags[:, :3], mask[:, :3]), crf.nll(padded, tags, mask)
    )


def test_worked_example_from_the_issue():
    crf = CRF(2, start_end=False)
    with torch.no_grad():
        crf.transitions.copy_(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
    em = torch.tensor([[[3.0, 1.0], [1.0, 2.0], [2.0, 0.0]]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    log_z = crf.log_partition(em, mask).detach()
    assert float(log_z) == pytest.approx(11.1783, abs=1e-4)
    paths, best = crf.viterbi(em, mask)
    assert paths == [[0, 1, 0]]
    assert float(best) == pytest.approx(11.0)
    nll = crf.nll(em, torch.tensor([[0, 1, 0]]), mask).detach()
    assert nll.shape == (1,)
    assert float(nll) == pytest.approx(0.1783, abs=1e-4)


def enumerated_log_z(crf: CRF, em: torch.Tensor, n: int) -> torch.Tensor:
    """log Z of one sentence as autograd sees it: logsumexp over every allowed
    sequence's score, each built from the parameters by indexing."""
    k = crf.num_tags
    scores = []
    for ys in itertools.product(range(k), repeat=n):
        if not crf.allowed_first[ys[0]]:
            continue
        if any(not crf.allowed[a, b] for a, b in itertools.pairwise(ys)):
            continue
        s = crf.start[ys[0]] + crf.end[ys[-1]]
        s = s + sum(em[t, y] for t, y in enumerate(ys))
        s = s + sum(crf.transitions[a, b] for a, b in itertools.pairwise(ys))
        scores.append(s)
    return torch.logsumexp(torch.stack(scores), 0)


@pytest.mark.parametrize("constrained", [False, True])
def test_gradient_of_log_z_matches_autograd_through_enumeration(constrained):
    """The gradient of every parameter through the batched forward algorithm
    against autograd through brute-force enumeration, with padding and a one-token
    sentence."""
    crf, g = random_case(7, 3, True, constrained)
    crf.double()
    lengths = [5, 2, 4, 1]
    em = torch.randn(4, 5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    mask = torch.tensor([[t < n for t in range(5)] for n in lengths])
    (crf.log_partition(em, mask) * w).sum().backward()
    params = [crf.transitions, crf.start, crf.end]
    got = [em.grad] + [p.grad for p in params]
    for p in params:
        p.grad = None
    em2 = em.detach().clone().requires_grad_()
    sum(
        w[i] * enumerated_log_z(crf, em2[i], n) for i, n in enumerate(lengths)
    ).backward()
    want = [em2.grad] + [p.grad for p in params]
    for a, b in zip(got, want, strict=True):
        assert torch.allclose(a, b, atol=1e-10)


def test_log_z_passes_gradcheck():
    """The forward algorithm's gradient against finite differences."""
    crf, g = random_case(3, 4, True, False)
    em = torch.randn(3, 4, 4, generator=g, dtype=torch.float64, requires_grad=True)
    trans = torch.randn(4, 4, generator=g, dtype=torch.float64, requires_grad=True)
    first = torch.randn(4, generator=g, dtype=torch.float64, requires_grad=True)
    last = torch.randn(4, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True] * 4, [True, True, False, False], [True] + [False] * 3])
    assert torch.autograd.gradcheck(
        lambda e, tr, fi, la: torch.logsumexp(alphas(e, tr, fi, mask)[-1] + la, 1),
        (em, trans, first, last),
    )


def test_marginals_are_the_enumerated_posteriors():
    crf, g = random_case(7, 3, True, True)
    crf.double()
    lengths = [4, 2, 1]
    em = torch.randn(3, 4, 3, generator=g, dtype=torch.float64)
    mask = torch.tensor([[t < n for t in range(4)] for n in lengths])
    marg = crf.marginals(em, mask)
    for i, n in enumerate(lengths):
        log_z, _, _, scores = brute_force(crf, em[i], n)
        want = torch.zeros(4, 3, dtype=torch.float64)
        for ys, s in scores.items():
            for t, y in enumerate(ys):
                want[t, y] += math.exp(s - log_z)
        assert torch.allclose(marg[i], want, atol=1e-10)
    # marginals of real tokens sum to one; padding gets none
    assert torch.allclose(marg.sum(-1), mask.double())


def test_nll_is_per_sentence_and_nonnegative():
    crf, g = random_case(3, 3, True, False)
    em = torch.randn(5, 6, 3, generator=g)
    mask = torch.tensor([[t < n for t in range(6)] for n in (6, 1, 3, 5, 2)])
    tags = torch.randint(0, 3, (5, 6), generator=g)
    nll = crf.nll(em, tags, mask)
    assert nll.shape == (5,)
    assert bool((nll >= -1e-5).all())


def test_bio_constraints_forbid_i_after_o_or_another_type():
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    allowed, first = bio_constraints(tags)
    ix = {t: i for i, t in enumerate(tags)}
    assert allowed[ix["B-PER"], ix["I-PER"]] and allowed[ix["I-PER"], ix["I-PER"]]
    assert not allowed[ix["O"], ix["I-PER"]]
    assert not allowed[ix["B-LOC"], ix["I-PER"]]
    assert not allowed[ix["I-LOC"], ix["I-PER"]]
    assert allowed[ix["I-LOC"], ix["B-PER"]] and allowed[ix["O"], ix["O"]]
    assert first.tolist() == [True, True, False, True, False]
    # a POS tag set has no constraints
    allowed, first = bio_constraints(["NN", "VB", "IN"])
    assert bool(allowed.all()) and bool(first.all())


def test_constrained_viterbi_never_breaks_bio_even_when_emissions_push_it():
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    allowed, first = bio_constraints(tags)
    crf = CRF(len(tags), allowed=allowed, allowed_first=first)
    g = torch.Generator().manual_seed(0)
    em = torch.randn(64, 9, len(tags), generator=g) * 5
    em[:, :, 2] += 8  # I-PER everywhere is what the emissions want
    mask = torch.ones(64, 9, dtype=torch.bool)
    paths, best = crf.viterbi(em, mask)
    for path in paths:
        names = [tags[i] for i in path]
        assert not names[0].startswith("I-")
        for a, b in itertools.pairwise(names):
            if b.startswith("I-"):
                assert a[2:] == b[2:]
    # a forbidden transition costs FORBIDDEN in the score of that sequence
    bad = torch.tensor([[0, 2] + [0] * 7])
    assert float(crf.score(em[:1], bad, mask[:1]).detach()) < FORBIDDEN / 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_decode_time_constraints_match_brute_force_over_the_allowed_sequences(seed):
    """A free CRF decoded with ``constraints`` finds the best sequence among those
    the constraints allow, scored by the free CRF (enumerated)."""
    k = 3
    free, g = random_case(seed, k, True, False)
    allowed = torch.rand(k, k, generator=g) > 0.4
    allowed[:, 0] = True
    first = torch.rand(k, generator=g) > 0.4
    first[0] = True
    masked = CRF(k, allowed=allowed, allowed_first=first)
    masked.load_state_dict(
        {**free.state_dict(), "allowed": allowed, "allowed_first": first}
    )
    lengths = [4, 2, 3]
    em = torch.randn(len(lengths), max(lengths), k, generator=g).double()
    free.double()
    masked.double()
    mask = torch.tensor([[t < n for t in range(max(lengths))] for n in lengths])
    paths, best = free.viterbi(em, mask, constraints=(allowed, first))
    for i, n in enumerate(lengths):
        _, ref_path, ref_best, _ = brute_force(masked, em[i], n)
        assert paths[i] == ref_path
        assert float(best[i]) == pytest.approx(ref_best, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_pytorch_crf_on_random_scores(seed):
    """A reference implementation (pytorch-crf, Kemal Kurniawan's torchcrf): the same
    convention (transitions[i, j] scores i -> j, start and end scores), so the
    parameters copy straight across; log-likelihoods and Viterbi paths must agree
    on a padded batch of random emissions at a realistic size (9 tags)."""
    torchcrf = pytest.importorskip(
        "torchcrf", reason="pytorch-crf is not installed (pip install pytorch-crf)"
    )
    k = 9
    crf, g = random_case(seed, k, start_end=True, constrained=False)
    ref = torchcrf.CRF(k, batch_first=True).double()
    with torch.no_grad():
        ref.transitions.copy_(crf.transitions)
        ref.start_transitions.copy_(crf.start)
        ref.end_transitions.copy_(crf.end)
    lengths = [12, 1, 7, 3, 12, 5]
    em = 3 * torch.randn(len(lengths), max(lengths), k, generator=g).double()
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    tags = torch.randint(0, k, em.shape[:2], generator=g)
    crf = crf.double()
    theirs = ref(em, tags, mask=mask, reduction="none")
    torch.testing.assert_close(-crf.nll(em, tags, mask), theirs, rtol=1e-10, atol=1e-9)
    paths, _ = crf.viterbi(em, mask)
    assert paths == ref.decode(em, mask=mask)
