"""word2vec's own loop (firth.embeddings.word2vec) against independent answers:
the hierarchical softmax's probabilities over the vocabulary sum to 1 (brute
force), the Huffman tree's expected code length is Huffman's (the sum of the
merged weights), and training learns planted co-occurrence for every arch and
loss, the same seed giving the same vectors."""

import heapq
from dataclasses import replace

import numpy as np
import pytest

from firth.embeddings.corpus import Corpus, Vocab
from firth.embeddings.word2vec import (
    Word2VecConfig,
    hs_log_prob,
    huffman,
    train_word2vec,
)


def test_hierarchical_softmax_normalises_over_the_vocabulary():
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 1000, 37)
    tree = huffman(counts)
    C = rng.normal(0, 1, (36, 8))
    for _ in range(3):
        h = rng.normal(0, 1, 8)
        total = sum(np.exp(hs_log_prob(h, C, tree, w)) for w in range(37))
        assert total == pytest.approx(1.0, abs=1e-9)


def test_the_tree_is_a_huffman_code():
    rng = np.random.default_rng(1)
    counts = rng.integers(1, 500, 50)
    tree = huffman(counts)
    # Huffman's expected length: the sum of every merge's weight (independent)
    heap = [int(c) for c in counts]
    heapq.heapify(heap)
    cost = 0
    while len(heap) > 1:
        a, b = heapq.heappop(heap), heapq.heappop(heap)
        cost += a + b
        heapq.heappush(heap, a + b)
    assert int((counts * tree.lengths).sum()) == cost
    # prefix-free: no word's code is a prefix of another's
    codes = {tuple(tree.codes[w, : tree.lengths[w]]) for w in range(50)}
    assert len(codes) == 50
    for c in codes:
        assert not any(o != c and o[: len(c)] == c for o in codes)
    # every path starts at the root (the last inner node made)
    assert set(tree.points[:, 0]) == {48}


def _planted_corpus(rng, n_sent=3000):
    """Two topics of 10 words; each sentence draws from one topic."""
    words = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]
    ids, sent = [], []
    for s in range(n_sent):
        topic = s % 2
        for w in rng.integers(0, 10, 8):
            ids.append(topic * 10 + int(w))
            sent.append(s)
    counts = np.bincount(ids, minlength=20)
    order = np.argsort(-counts, kind="stable")
    remap = np.empty(20, dtype=np.int64)
    remap[order] = np.arange(20)
    vocab = Vocab([words[i] for i in order], counts[order], len(ids))
    corpus = Corpus(vocab, remap[np.asarray(ids)], np.asarray(sent, dtype=np.int64))
    return corpus


@pytest.mark.parametrize("arch", ["sg", "cbow"])
@pytest.mark.parametrize("loss", ["ns", "hs"])
def test_training_learns_planted_topics(arch, loss):
    corpus = _planted_corpus(np.random.default_rng(2))
    cfg = Word2VecConfig(arch=arch, loss=loss, dim=16, window=3, sample=0.0, epochs=3,
                         alpha=0.05 if arch == "cbow" else 0.025, seed=5)  # fmt: skip
    W, stats = train_word2vec(corpus, cfg)
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    topic = np.array([w[0] == "a" for w in corpus.vocab.words])
    sims = unit @ unit.T
    same = sims[np.ix_(topic, topic)].mean() + sims[np.ix_(~topic, ~topic)].mean()
    other = 2 * sims[np.ix_(topic, ~topic)].mean()
    assert same - other > 0.5, (same, other)
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]
    W2, _ = train_word2vec(corpus, cfg)
    assert np.array_equal(W, W2)  # one seed, one result


def test_blocks_and_resume_change_nothing(tmp_path):
    """Training in blocks of sentences, or killed after an epoch and resumed from
    its checkpoint, gives the vectors of one unbroken run; the blocks' kept
    tokens add up to the epochs' and are the same for both losses (paired)."""
    from firth.checkpoint import Checkpoint

    corpus = _planted_corpus(np.random.default_rng(3))
    cfg = Word2VecConfig(arch="sg", loss="hs", dim=8, window=3, sample=0.001, epochs=3)
    W1, s1 = train_word2vec(corpus, cfg, blocks=1)
    W7, s7 = train_word2vec(corpus, cfg, blocks=7)
    assert np.array_equal(W1, W7)
    assert len(s7.blocks) == 3 * 7
    assert sum(k for k, _ in s7.blocks) == sum(k for k, _ in s1.blocks)
    _, ns = train_word2vec(corpus, replace(cfg, loss="ns"), blocks=7)
    assert [k for k, _ in ns.blocks] == [k for k, _ in s7.blocks]

    ck = Checkpoint(tmp_path / "w2v.pt", "key")

    class Killed(Exception):
        pass

    def kill_after_first(state):
        ck.save(state)
        raise Killed

    with pytest.raises(Killed):
        train_word2vec(corpus, cfg, blocks=7, on_epoch=kill_after_first)
    W_resumed, sr = train_word2vec(corpus, cfg, blocks=7, resume=ck.load())
    assert np.array_equal(W_resumed, W7)
    assert sr.loss_per_epoch == s7.loss_per_epoch
    assert len(sr.blocks) == len(s7.blocks)
