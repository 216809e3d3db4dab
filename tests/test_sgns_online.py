"""The online loop of SGNS and subword SGNS (``kernel="online"``,
firth.embeddings.sgns_fused.online_batch) against a plain Python transcription of
word2vec's and fastText's per-pair update on the pairs the kernel draws, on one
thread and on two (each thread a copy, the copies' changes summed)."""

import numpy as np
import pytest
import torch
from gensim.test.utils import datapath
from sgns_batch import random_batch

from firth.embeddings import sgns_fused as fz
from firth.embeddings.corpus import build_vocab, encode, read_sentences
from firth.embeddings.sgns import SGNSConfig, train_sgns
from firth.embeddings.subword import build_space


@pytest.fixture(scope="module")
def lee_corpus():
    sentences = read_sentences(datapath("lee_background.cor"), max_sentence_len=10000)
    return encode(sentences, build_vocab(sentences, min_count=5))


def _pairs_of(b, key, i):
    """The (context, negatives) rows the kernel draws for the batch's centre i."""
    out = np.empty((2 * b["window"], b["K"] + 1), dtype=np.int64)
    n = fz._centre_pairs(
        i, np.uint64(key), b["pos"], b["first"], b["last"], b["kept"], b["prob"],
        b["alias"], b["window"], True, b["K"], out,
    )  # fmt: skip
    return out[:n]


def _reference(b, key, Z, C, rows, lr, centres):
    """word2vec's / fastText's skip-gram update, one pair at a time, in float64:
    h = sum_r val_r Z[r]; per target c, g = lr (label - sigmoid(h.C[c])),
    grad += g C[c], C[c] += g h; then every row of the word += grad."""
    ptr, idx, val = rows
    Z, C = Z.astype(np.float64), C.astype(np.float64)
    for i in centres:
        w = b["kept"][b["pos"][i]]
        span = range(ptr[w], ptr[w + 1])
        for targets in _pairs_of(b, key, i):
            h = sum(val[r] * Z[idx[r]] for r in span)
            grad = np.zeros_like(h)
            for j, c in enumerate(targets):
                g = lr * ((j == 0) - 1.0 / (1.0 + np.exp(-h @ C[c])))
                grad += g * C[c]
                C[c] += g * h
            for r in span:
                Z[idx[r]] += grad
    return Z, C


def _online(b, key, Z, C, rows, lr, threads):
    fz.use_threads(threads)
    Zs = np.repeat(Z[None], threads, axis=0)
    Cs = np.repeat(C[None], threads, axis=0)
    tz = np.zeros((threads, Z.shape[0]), dtype=np.uint8)
    tc = np.zeros((threads, C.shape[0]), dtype=np.uint8)
    loss, pairs = np.zeros(threads), np.zeros(threads, dtype=np.int64)
    fz.online_batch(
        Zs, Cs, *rows, np.uint64(key), b["pos"], b["first"], b["last"], b["kept"],
        b["prob"], b["alias"], b["window"], True, b["K"], np.float32(lr), tz, tc,
        loss, pairs,
    )  # fmt: skip
    Z, C = Z.copy(), C.copy()
    fz.merge_copies(Z, Zs, tz)
    fz.merge_copies(C, Cs, tc)
    assert not tz.any() and not tc.any()  # the merge clears the flags
    return Z, C, loss, pairs


def _tables(V, R, d, seed):
    rng = np.random.default_rng(seed)
    return (
        (rng.standard_normal((R, d)) * 0.3).astype(np.float32),
        (rng.standard_normal((V, d)) * 0.3).astype(np.float32),
    )


def _word_rows(V):
    return (
        np.arange(V + 1, dtype=np.int64),
        np.arange(V, dtype=np.int64),
        np.ones(V, dtype=np.float32),
    )


def test_one_thread_is_the_per_pair_update_in_batch_order():
    b = random_batch()
    V, d = 7, 11  # d not a multiple of 8: the dot's tail runs too
    Z, C = _tables(V, V, d, seed=1)
    rows = _word_rows(V)
    Z1, C1, loss, pairs = _online(b, 5, Z, C, rows, lr=0.3, threads=1)
    Zr, Cr = _reference(b, 5, Z, C, rows, 0.3, range(len(b["pos"])))
    np.testing.assert_allclose(Z1, Zr, atol=2e-5)
    np.testing.assert_allclose(C1, Cr, atol=2e-5)
    n = sum(len(_pairs_of(b, 5, i)) for i in range(len(b["pos"])))
    assert pairs.sum() == n > 0
    assert loss[0] > 0


def test_two_threads_sum_the_changes_of_their_shares():
    b = random_batch(seed=2, n=80)
    V, d = 7, 8
    Z, C = _tables(V, V, d, seed=3)
    rows = _word_rows(V)
    Z2, C2, _, pairs = _online(b, 9, Z, C, rows, lr=0.2, threads=2)
    B = len(b["pos"])
    parts = [
        _reference(b, 9, Z, C, rows, 0.2, range(0, B // 2)),
        _reference(b, 9, Z, C, rows, 0.2, range(B // 2, B)),
    ]
    Zr = Z + sum(p[0] - Z for p in parts)
    Cr = C + sum(p[1] - C for p in parts)
    np.testing.assert_allclose(Z2, Zr, atol=2e-5)
    np.testing.assert_allclose(C2, Cr, atol=2e-5)
    assert pairs.sum() == sum(len(_pairs_of(b, 9, i)) for i in range(B))


@pytest.mark.parametrize("combine", ["sum", "mean"])
def test_subword_rows_get_fasttexts_update(lee_corpus, combine):
    """The word's vector is the sum (or mean) of its rows; each row, a repeated
    n-gram once per occurrence, gets the whole gradient, as in fastText."""
    words = list(lee_corpus.vocab.words)[:30]
    space, S = build_space(words, min_n=3, max_n=4, buckets=5000, combine=combine)
    rows = (
        S.crow_indices().numpy().astype(np.int64),
        S.col_indices().numpy().astype(np.int64),
        S.values().numpy().astype(np.float32),
    )
    b = random_batch(seed=4, V=len(words), n=120, sentences=6)
    Z, C = _tables(len(words), space.rows, 6, seed=5)
    Z1, C1, _, _ = _online(b, 2, Z, C, rows, lr=0.1, threads=1)
    Zr, Cr = _reference(b, 2, Z, C, rows, 0.1, range(len(b["pos"])))
    np.testing.assert_allclose(Z1, Zr, atol=2e-5)
    np.testing.assert_allclose(C1, Cr, atol=2e-5)
    assert not np.allclose(Z1[len(words) :], Z[len(words) :])  # n-gram rows learn


def test_lr_zero_changes_nothing():
    b = random_batch(seed=6)
    Z, C = _tables(7, 7, 5, seed=7)
    Z1, C1, _, _ = _online(b, 1, Z, C, _word_rows(7), lr=0.0, threads=2)
    assert np.array_equal(Z1, Z) and np.array_equal(C1, C)


@pytest.mark.parametrize("threads", [1, 2])
def test_online_training_learns_reproducibly_and_resumes(lee_corpus, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)  # the kernel takes torch's thread count
    try:
        cfg = SGNSConfig(
            dim=20, epochs=2, batch_centres=1024, seed=4, kernel="online", lr=0.025
        )
        saved = []
        W1, C1, st = train_sgns(lee_corpus, cfg, progress=False, on_epoch=saved.append)
        W2, _, _ = train_sgns(lee_corpus, cfg, progress=False)
        W3, _, _ = train_sgns(lee_corpus, cfg, progress=False, resume=saved[0])
    finally:
        torch.set_num_threads(before)
    assert torch.isfinite(W1).all() and torch.isfinite(C1).all()
    assert st.epoch_loss[1] < st.epoch_loss[0] < st.first_loss
    assert torch.equal(W1, W2)
    assert torch.equal(W1, W3)


def test_online_kernel_refuses_a_gpu():
    from firth.embeddings.sgns import resolve_kernel

    with pytest.raises(ValueError, match="online SGNS kernel runs on the CPU"):
        resolve_kernel("online", torch.device("cuda"))
