"""The fused CPU step of SGNS (firth.embeddings.sgns_fused) against oracles: its
gradients and curvatures against autograd and the brute-force curvature on the
pairs it drew, its draws against the window rule and the noise distribution, and
its training against the tensor kernels'."""

import math

import numpy as np
import pytest
import torch
from gensim.test.utils import datapath
from scipy import stats as sps
from sgns_batch import random_batch

from firth.embeddings import sgns_fused as fz
from firth.embeddings.corpus import build_vocab, encode, read_sentences
from firth.embeddings.sgns import (
    SGNSConfig,
    alias_distribution,
    alias_table,
    pair_loss,
    row_curvature,
    train_sgns,
)
from firth.embeddings.subword import build_space


@pytest.fixture(scope="module")
def lee_corpus():
    sentences = read_sentences(datapath("lee_background.cor"), max_sentence_len=10000)
    return encode(sentences, build_vocab(sentences, min_count=5)), sentences


def _draw(b, key, dynamic=True):
    return fz.draw_pairs(
        np.uint64(key), b["pos"], b["first"], b["last"], b["kept"], b["prob"],
        b["alias"], b["window"], dynamic, b["K"],
    )  # fmt: skip


def _accumulate(b, W, C, key, threads, floor):
    V, d = C.shape
    fz.use_threads(threads)
    buf = fz.Buffers(threads, W.shape[0], V, d)
    fz.batch_gradients(
        W, C, np.square(C).sum(1), np.uint64(key), b["pos"], b["first"], b["last"],
        b["kept"], b["prob"], b["alias"], b["window"], True, b["K"],
        np.float32(floor), buf.gW, buf.hW, buf.touched, buf.gC, buf.hC, buf.loss,
        buf.pairs,
    )  # fmt: skip
    return buf


@pytest.mark.parametrize("threads", [1, 2])
def test_fused_gradients_equal_autograd_on_the_pairs_it_drew(threads):
    b = random_batch()
    V, d = 7, 5
    gen = torch.Generator().manual_seed(3)
    W = torch.randn(V, d, generator=gen)
    C = torch.randn(V, d, generator=gen)
    buf = _accumulate(b, W.numpy(), C.numpy(), key=11, threads=threads, floor=0.05)
    centre, targets = (torch.from_numpy(x) for x in _draw(b, 11))
    assert int(buf.pairs.sum()) == len(centre) > 0
    # oracle: autograd of the summed pair loss at the batch's starting tables
    Wg, Cg = W.clone().requires_grad_(True), C.clone().requires_grad_(True)
    z = (Cg[targets] * Wg[centre][:, None, :]).sum(-1)  # (P, K+1)
    loss = pair_loss(z).sum()
    loss.backward()
    gC = buf.gC.sum(0)
    torch.testing.assert_close(torch.from_numpy(buf.gW), Wg.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(torch.from_numpy(gC), Cg.grad, atol=1e-4, rtol=1e-4)
    assert float(buf.loss.sum()) == pytest.approx(loss.item(), rel=1e-5)
    h_in, h_out = row_curvature(
        z.detach(), W[centre], C, targets, centre, rows_in=V, floor=0.05
    )
    torch.testing.assert_close(torch.from_numpy(buf.hW), h_in, atol=1e-4, rtol=1e-4)
    hC = torch.from_numpy(buf.hC.sum(0))
    torch.testing.assert_close(hC, h_out, atol=1e-4, rtol=1e-4)
    assert set(np.flatnonzero(buf.touched)) == set(centre.tolist())


def test_input_row_gradients_do_not_depend_on_the_thread_count():
    b = random_batch(seed=4, V=30, n=400, sentences=20)
    gen = torch.Generator().manual_seed(5)
    W, C = torch.randn(30, 8, generator=gen), torch.randn(30, 8, generator=gen)
    one = _accumulate(b, W.numpy(), C.numpy(), key=2, threads=1, floor=0.0)
    two = _accumulate(b, W.numpy(), C.numpy(), key=2, threads=2, floor=0.0)
    assert np.array_equal(one.gW, two.gW) and np.array_equal(one.hW, two.hW)
    np.testing.assert_allclose(one.gC.sum(0), two.gC.sum(0), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dynamic", [True, False])
def test_draws_follow_the_window_rule(dynamic):
    """Every position its own word, so a pair names its positions: each centre's
    contexts are exactly the positions within some b (b = m when not dynamic) on
    either side inside its sentence, listed in order, the centre's rows contiguous."""
    b = random_batch(seed=1, n=300, sentences=12, window=4)
    n, m = len(b["kept"]), b["window"]
    b["kept"] = np.arange(n, dtype=np.int64)
    b["prob"], b["alias"] = (x for x in alias_table(np.full(n, 1.0 / n)))
    b["prob"] = b["prob"].astype(np.float32)
    centre, targets = _draw(b, 9, dynamic=dynamic)
    again = _draw(b, 9, dynamic=dynamic)
    assert np.array_equal(centre, again[0]) and np.array_equal(targets, again[1])
    j = 0
    for p in b["pos"]:
        k = j
        while k < len(centre) and centre[k] == p:
            k += 1
        got = targets[j:k, 0].tolist()
        inside = range(b["first"][p], b["last"][p] + 1)
        options = [
            [q for q in inside if q != p and abs(q - p) <= w]
            for w in (range(1, m + 1) if dynamic else [m])
        ]
        assert got in options, (p, got)
        j = k
    assert j == len(centre)


def test_window_sizes_and_negatives_follow_their_distributions():
    """Far from the sentence's ends a centre gets 2b contexts with b ~ U{1..m};
    the negatives follow the alias table's distribution (chi-square tests)."""
    n, m, K, V = 30000, 5, 10, 13
    q = np.arange(1, V + 1, dtype=np.float64) ** 0.75
    q /= q.sum()
    prob, alias = alias_table(q)
    pos = np.arange(m, n - m, dtype=np.int64)
    kept = np.arange(n, dtype=np.int64)  # a pair's context names its position
    first, last = np.zeros(n, dtype=np.int64), np.full(n, n - 1, dtype=np.int64)
    args = (pos, first, last, kept, prob.astype(np.float32), alias, m, True, K)
    centre, targets = fz.draw_pairs(np.uint64(5), *args)
    rows = np.bincount(centre, minlength=n)[pos]  # 2b per centre
    assert (rows % 2 == 0).all()
    b_seen = np.bincount(rows // 2, minlength=m + 1)
    assert b_seen[0] == 0 and len(b_seen) == m + 1
    assert sps.chisquare(b_seen[1:]).pvalue > 1e-3
    neg = targets[:, 1:].ravel()
    observed = np.bincount(neg, minlength=V)
    expected = alias_distribution(prob, alias) * len(neg)
    assert sps.chisquare(observed, expected).pvalue > 1e-3
    assert len(neg) > 500_000


def test_fused_training_matches_the_sparse_kernel_in_loss(lee_corpus):
    """Same objective, other random draws: the epoch losses agree closely, and the
    fused run is reproducible."""
    corpus, _ = lee_corpus
    losses = {}
    for kernel in ("fused", "sparse"):
        cfg = SGNSConfig(dim=20, epochs=2, batch_centres=1024, seed=4, kernel=kernel)
        W, C, st = train_sgns(corpus, cfg, progress=False)
        assert torch.isfinite(W).all() and torch.isfinite(C).all()
        assert st.first_loss == pytest.approx(6 * math.log(2), abs=1e-5)
        losses[kernel] = st.epoch_loss
    assert losses["fused"][-1] == pytest.approx(losses["sparse"][-1], rel=0.02)
    cfg = SGNSConfig(dim=20, epochs=2, batch_centres=1024, seed=4, kernel="fused")
    W1, _, _ = train_sgns(corpus, cfg, progress=False)
    W2, _, _ = train_sgns(corpus, cfg, progress=False)
    assert torch.equal(W1, W2)


@pytest.mark.parametrize(("optimizer", "lr"), [("sgd", 0.025), ("adagrad", 0.2)])
def test_fused_kernel_trains_with_every_optimizer(lee_corpus, optimizer, lr):
    corpus, _ = lee_corpus
    cfg = SGNSConfig(
        dim=16, epochs=1, batch_centres=256, lr=lr, optimizer=optimizer, kernel="fused"
    )
    W, C, stats = train_sgns(corpus, cfg, progress=False)
    assert torch.isfinite(W).all() and torch.isfinite(C).all()
    assert stats.epoch_loss[0] < stats.first_loss


def test_fused_subword_step_equals_the_sparse_step_on_the_same_pairs(lee_corpus):
    """Subword SGNS through the fused kernel: the gradient it hands to the n-gram
    table is S^T of the word gradient (checked on one batch against autograd)."""
    corpus, _ = lee_corpus
    words = list(corpus.vocab.words)[:40]
    space, S = build_space(words, min_n=3, max_n=4, buckets=5000, combine="sum")
    gen = torch.Generator().manual_seed(0)
    Z = torch.randn(space.rows, 6, generator=gen) * 0.1
    C = torch.randn(len(words), 6, generator=gen) * 0.1
    b = random_batch(seed=7, V=len(words), n=200, sentences=8)
    Wc = (S @ Z).contiguous()
    buf = _accumulate(b, Wc.numpy(), C.numpy(), key=3, threads=2, floor=0.0)
    centre, targets = (torch.from_numpy(x) for x in _draw(b, 3))
    Zg = Z.clone().requires_grad_(True)
    z = (C[targets] * (S @ Zg)[centre][:, None, :]).sum(-1)
    pair_loss(z).sum().backward()
    grad_Z = S.t() @ torch.from_numpy(buf.gW)
    torch.testing.assert_close(grad_Z, Zg.grad, atol=1e-4, rtol=1e-4)


def test_fused_kernel_refuses_a_gpu():
    from firth.embeddings.sgns import resolve_kernel

    with pytest.raises(ValueError, match="fused SGNS kernel runs on the CPU"):
        resolve_kernel("fused", torch.device("cuda"))
    assert resolve_kernel("auto", torch.device("cpu")) == "fused"
