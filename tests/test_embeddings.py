"""Word embeddings against oracles: closed forms, brute force on tiny inputs, and
gensim as the reference implementation."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from conftest import ROOT
from gensim.models import KeyedVectors, Word2Vec
from gensim.models.fasttext_inner import compute_ngrams, ft_hash_bytes
from gensim.test.utils import datapath

from firth.checkpoint import Checkpoint, run_key
from firth.embeddings.analogy import AnalogySection, evaluate_analogies, read_analogies
from firth.embeddings.cooccurrence import cooccurrence
from firth.embeddings.corpus import build_vocab, encode, read_sentences
from firth.embeddings.glove import GloVeConfig, train_glove, weight
from firth.embeddings.ppmi import ppmi, svd_vectors
from firth.embeddings.sgns import (
    SGNSConfig,
    alias_distribution,
    alias_table,
    keep_probabilities,
    noise_distribution,
    pair_loss,
    row_curvature,
    sentence_bounds,
    step_gradients,
    train_sgns,
    window_pairs,
)
from firth.embeddings.similarity import evaluate_pairs, read_pairs
from firth.embeddings.subword import build_space, char_ngrams, compose, fnv1a
from firth.embeddings.vectors import Embedding, load_word2vec, save_word2vec
from firth.errors import DataError

LEE = datapath("lee_background.cor")


@pytest.fixture(scope="module")
def lee_corpus():
    sentences = read_sentences(LEE, max_sentence_len=10000)
    return encode(sentences, build_vocab(sentences, min_count=5)), sentences


# --- SGNS -----------------------------------------------------------------------


def test_first_sgns_loss_is_k_plus_one_ln2(lee_corpus):
    corpus, _ = lee_corpus
    cfg = SGNSConfig(dim=20, epochs=1, negatives=5, batch_centres=512, seed=3)
    _, _, stats = train_sgns(corpus, cfg, progress=False)
    assert stats.first_loss == pytest.approx(6 * math.log(2), abs=1e-6)
    assert 6 * math.log(2) == pytest.approx(4.158883, abs=1e-6)
    assert pair_loss(torch.zeros(7, 6)).tolist() == pytest.approx([4.158883] * 7)


def test_subsampling_keeps_ten_percent_of_a_word_at_frequency_1e_2():
    counts = np.array([1, 99])  # frequencies 0.01 and 0.99
    keep = keep_probabilities(counts, 1e-4, "paper")
    assert keep[0] == pytest.approx(0.1)
    assert keep[1] == pytest.approx(math.sqrt(1e-4 / 0.99))
    rare = keep_probabilities(np.array([1, 10**6]), 1e-4, "paper")
    assert rare[0] == 1.0  # min(1, ...)
    assert keep_probabilities(counts, 0.0, "paper").tolist() == [1.0, 1.0]


def test_word2vec_rule_keeps_eleven_percent_at_frequency_1e_2():
    # word2vec.c: ran = (sqrt(cn / (t * train_words)) + 1) * (t * train_words) / cn
    counts = np.array([1, 99, 300])  # frequencies 0.0025, 0.2475, 0.75
    keep = keep_probabilities(counts, 2.5e-5, "word2vec")
    assert keep[0] == pytest.approx((10 + 1) * 0.01)  # f = 100 t
    t = 2.5e-5
    for k, c in zip(keep[1:], counts[1:], strict=True):
        f = c / 400
        assert k == pytest.approx((math.sqrt(f / t) + 1) * t / f)
    # it keeps more than the paper's rule, and all of a word up to f = 2.618 t
    assert (keep > keep_probabilities(counts, 2.5e-5, "paper")).all()
    golden = (1 + math.sqrt(5)) / 2 + 1  # (sqrt(x) + 1) / x = 1 at x = 2.618...
    edge = keep_probabilities(np.array([golden * 1e-4 * 1e6, 1e6]), 1e-4, "word2vec")
    assert edge[0] == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(ValueError, match="sample rule"):
        keep_probabilities(counts, 1e-4, "gensim")


def test_word2vec_rule_matches_gensims_kept_share():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    p = 1.0 / np.arange(1, 41)
    sentences = [list(rng.choice(words, size=30, p=p / p.sum())) for _ in range(200)]
    model = Word2Vec(sample=1e-3, min_count=1, vector_size=4)
    model.build_vocab(sentences)
    vocab = model.wv.index_to_key
    counts = np.array([model.wv.get_vecattr(w, "count") for w in vocab])
    theirs = np.array([model.wv.get_vecattr(w, "sample_int") for w in vocab]) / 2**32
    ours = keep_probabilities(counts, 1e-3, "word2vec")
    assert ours == pytest.approx(theirs, abs=1e-9)
    assert (ours < 1).sum() >= 5  # the rule bites on this corpus


def test_alias_table_samples_the_noise_distribution():
    counts = np.array([1000, 300, 300, 7, 1, 1, 55])
    q = noise_distribution(counts)
    assert q == pytest.approx(counts**0.75 / (counts**0.75).sum())
    prob, alias = alias_table(q)
    np.testing.assert_allclose(alias_distribution(prob, alias), q, atol=1e-12)
    gen = torch.Generator().manual_seed(0)
    i = torch.randint(0, len(q), (400_000,), generator=gen)
    u = torch.rand(400_000, generator=gen)
    draws = torch.where(
        u < torch.from_numpy(prob)[i].float(), i, torch.from_numpy(alias)[i]
    )
    freq = np.bincount(draws.numpy(), minlength=len(q)) / 400_000
    np.testing.assert_allclose(freq, q, atol=3e-3)


def test_expected_pairs_is_n_times_m_plus_one():
    n, m = 200_000, 5
    sent = torch.zeros(n, dtype=torch.long)
    first, last = sentence_bounds(sent)
    gen = torch.Generator().manual_seed(0)
    c, _ = window_pairs(torch.arange(n), first, last, window=m, generator=gen)
    assert len(c) / (n * (m + 1)) == pytest.approx(1.0, rel=0.005)
    # The reference run's numbers: 8.43M tokens, m = 5 -> 50.6M pairs.
    assert 8.43e6 * (m + 1) == pytest.approx(50.6e6, rel=1e-3)


def test_window_pairs_match_brute_force_and_respect_sentences():
    sent = torch.tensor([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2])
    n, m = len(sent), 3
    first, last = sentence_bounds(sent)
    pos = torch.tensor([0, 3, 5, 9, 11, 6])
    gen = torch.Generator().manual_seed(7)
    state = gen.get_state()
    c, o = window_pairs(pos, first, last, window=m, generator=gen)
    gen.set_state(state)
    b = torch.randint(1, m + 1, (len(pos),), generator=gen)
    expect = set()
    for p, bp in zip(pos.tolist(), b.tolist(), strict=True):
        for q in range(n):
            if q != p and abs(q - p) <= bp and sent[q] == sent[p]:
                expect.add((p, q))
    got = list(zip(c.tolist(), o.tolist(), strict=True))
    assert len(got) == len(set(got)) and set(got) == expect


def _dense_reference(v, C, targets):
    v = v.clone().requires_grad_(True)
    C = C.clone().requires_grad_(True)
    z = (C[targets] * v[:, None, :]).sum(-1)
    pair_loss(z).sum().backward()
    return z.detach(), v.grad, C.grad


@pytest.mark.parametrize("kernel", ["sparse", "gather"])
def test_step_gradients_equal_autograd_with_repeated_targets(kernel):
    gen = torch.Generator().manual_seed(1)
    V, d, P, K = 9, 6, 40, 4
    C = torch.randn(V, d, generator=gen)
    v = torch.randn(P, d, generator=gen)
    targets = torch.randint(0, 4, (P, K + 1), generator=gen)  # many repeats
    z, gv, gC = step_gradients(v, C, targets, kernel=kernel)
    rz, rgv, rgC = _dense_reference(v, C, targets)
    torch.testing.assert_close(z, rz, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(gv, rgv, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(gC, rgC, atol=1e-5, rtol=1e-5)


def test_sgns_is_reproducible_and_learns(lee_corpus):
    corpus, _ = lee_corpus
    cfg = SGNSConfig(dim=16, epochs=2, batch_centres=1024, seed=5)
    W1, _, s1 = train_sgns(corpus, cfg, progress=False)
    W2, _, _ = train_sgns(corpus, cfg, progress=False)
    assert torch.equal(W1, W2)
    assert s1.epoch_loss[-1] < s1.first_loss - 1.0
    assert s1.pairs > 0 and s1.kept_tokens < 2 * corpus.n_tokens


@pytest.mark.parametrize(
    ("optimizer", "lr", "kernel"),
    [
        ("sgd", 0.025, "gather"),
        ("adagrad", 0.2, "sparse"),
        ("damped-sgd", 0.2, "gather"),
    ],
)
def test_every_optimizer_and_kernel_trains(lee_corpus, optimizer, lr, kernel):
    corpus, _ = lee_corpus
    cfg = SGNSConfig(
        dim=16, epochs=1, batch_centres=256, lr=lr, optimizer=optimizer, kernel=kernel
    )
    W, C, stats = train_sgns(corpus, cfg, progress=False)
    assert torch.isfinite(W).all() and torch.isfinite(C).all()
    assert stats.epoch_loss[0] < stats.first_loss


def test_row_curvature_matches_brute_force():
    gen = torch.Generator().manual_seed(2)
    V, d, P, J = 6, 3, 10, 3
    C = torch.randn(V, d, generator=gen)
    v = torch.randn(P, d, generator=gen)
    targets = torch.randint(0, V, (P, J), generator=gen)
    centre = torch.randint(0, V, (P,), generator=gen)
    z = (C[targets] * v[:, None]).sum(-1)
    h_in, h_out = row_curvature(z, v, C, targets, centre, rows_in=V, floor=0.1)
    ref_in, ref_out = torch.zeros(V), torch.zeros(V)
    for p in range(P):
        for j in range(J):
            s = torch.sigmoid(z[p, j])
            h = max(float(s * (1 - s)), 0.1)
            ref_in[centre[p]] += h * float(C[targets[p, j]].square().sum())
            ref_out[targets[p, j]] += h * float(v[p].square().sum())
    torch.testing.assert_close(h_in, ref_in)
    torch.testing.assert_close(h_out, ref_out)


# --- subword --------------------------------------------------------------------


@pytest.mark.parametrize("word", ["where", "naïve", "x", "日本語"])
def test_ngrams_and_hash_match_gensim_fasttext(word):
    assert char_ngrams(word, min_n=3, max_n=6) == compute_ngrams(word, 3, 6)
    for g in compute_ngrams(word, 3, 6):
        assert fnv1a(g) == ft_hash_bytes(g.encode("utf-8"))


def test_subword_draws_negatives_at_its_own_exponent(monkeypatch, tmp_path):
    """Subword SGNS samples negatives from unigram^subword.cds (fastText's 0.5),
    SGNS from its tuned cds: the trainer receives each method's own."""
    from firth.config import load_section
    from firth.embeddings import methods
    from firth.embeddings.config import Embeddings
    from firth.embeddings.corpus import load_corpus

    cfg = load_section("embeddings", ROOT / "profiles" / "tiny.yaml", schema=Embeddings)
    cfg = cfg.model_copy(
        update={"subword": cfg.subword.model_copy(update={"cds": 0.3})}
    )
    text = tmp_path / "train.txt"
    text.write_text(open(datapath("lee_background.cor"), encoding="utf-8").read())
    corpus, sentences = load_corpus(text, min_count=5, max_sentence_len=1000)
    seen = []

    def trainer(corpus, scfg, **kw):
        seen.append(scfg.cds)
        raise StopIteration  # the configuration is all this test needs

    monkeypatch.setattr(methods, "train_sgns", trainer)
    for method in ("subword", "sgns"):
        with pytest.raises(StopIteration):
            methods.train_method(method, corpus, sentences, cfg, seed=1, progress=False)
    assert seen == [0.3, methods.reference_setting(cfg)["cds"]]


def test_unseen_word_vector_is_the_mean_of_its_known_ngram_rows():
    words = ["walking", "talked", "walk"]
    space, S = build_space(words, min_n=3, max_n=4, buckets=1000, combine="mean")
    Z = torch.randn(space.rows, 5, generator=torch.Generator().manual_seed(0))
    # In-vocabulary: row of S times Z.
    torch.testing.assert_close(compose(space, Z, ["walk"])[0][0], (S @ Z)[2])
    # Unseen: mean of the rows of its n-grams that a training word used.
    rows = space.bucket_row
    grams = [fnv1a(g) % 1000 for g in char_ngrams("talking", min_n=3, max_n=4)]
    known = [rows[b] for b in grams if b in rows]
    assert known  # shares "alk", "ing", ...
    vec, ok = compose(space, Z, ["talking", "qqqq"])
    torch.testing.assert_close(vec[0], Z[known].mean(0))
    assert ok.tolist() == [True, False]


# --- PPMI, SVD, GloVe -----------------------------------------------------------


def test_cooccurrence_matches_brute_force(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a b c a b\nc a\nb\n")
    sentences = read_sentences(path, max_sentence_len=100)
    corpus = encode(sentences, build_vocab(sentences, min_count=1))
    idx = corpus.vocab.index()
    for weighting in ("uniform", "harmonic"):
        X = cooccurrence(corpus, window=2, weighting=weighting, progress=False)
        ref = np.zeros((3, 3))
        for s in sentences:
            for i, w in enumerate(s):
                for j, c in enumerate(s):
                    if i != j and abs(i - j) <= 2:
                        wt = 1.0 if weighting == "uniform" else 1.0 / abs(i - j)
                        ref[idx[w], idx[c]] += wt
        np.testing.assert_allclose(X.toarray(), ref)


def test_ppmi_of_an_independent_pair_is_zero():
    row = np.array([3.0, 5.0, 2.0])
    col = np.array([4.0, 4.0, 2.0])
    X = sp.csr_matrix(np.outer(row, col))  # P(w, c) = P(w) P(c) everywhere
    assert ppmi(X, alpha=1.0).nnz == 0


def test_ppmi_matches_the_formula_with_smoothing_and_shift():
    dense = np.array([[4.0, 1.0, 0.0], [1.0, 0.0, 6.0], [2.0, 3.0, 1.0]])
    out = ppmi(sp.csr_matrix(dense), alpha=0.75, shift=2.0).toarray()
    D = dense.sum()
    pw = dense.sum(1) / D
    pc = dense.sum(0) ** 0.75 / (dense.sum(0) ** 0.75).sum()
    with np.errstate(divide="ignore"):
        ref = np.log(dense / D / pw[:, None] / pc[None, :]) - np.log(2.0)
    np.testing.assert_allclose(out, np.maximum(ref, 0), atol=1e-12)


def test_svd_vectors_are_u_times_s_to_the_power():
    rng = np.random.default_rng(0)
    dense = np.abs(rng.normal(size=(12, 12)))
    vecs, S = svd_vectors(sp.csr_matrix(dense), dim=4, power=0.5)
    U_ref, S_ref, _ = np.linalg.svd(dense)
    np.testing.assert_allclose(S, S_ref[:4], rtol=1e-6)
    for k in range(4):  # up to the sign of each singular vector
        ref = U_ref[:, k] * S_ref[k] ** 0.5
        assert (
            min(np.abs(vecs[:, k] - ref).max(), np.abs(vecs[:, k] + ref).max()) < 1e-4
        )


def test_glove_weight():
    x = torch.tensor([100.0, 50.0, 1000.0, 1.0])
    f = weight(x, x_max=100.0, alpha=0.75)
    assert f[0] == 1.0 and f[2] == 1.0
    assert f[1] == pytest.approx(0.5**0.75) and f[3] == pytest.approx(0.01**0.75)


def test_glove_fits_a_log_count_matrix_of_low_rank():
    rng = np.random.default_rng(0)
    V = 8
    a, b = rng.normal(size=(V, 2)), rng.normal(size=(V, 2))
    logx = a @ b.T + 6.0  # rank 2 plus a constant: exactly representable at d = 4
    X = sp.csr_matrix(np.exp(logx))
    cfg = GloVeConfig(dim=4, x_max=1.0, lr=0.1, epochs=3000, batch=V * V, seed=0)
    _, stats = train_glove(X, cfg, progress=False)
    assert stats.epoch_loss[-1] < 1e-3 < stats.epoch_loss[0]


# --- evaluation -----------------------------------------------------------------


def test_3cosadd_without_exclusion_returns_an_input_word():
    words = ["a", "b", "c", "d", "e"]
    m = np.array(
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.1, 0.0], [0.3, 1.0, 0.9], [0, 0, 1]]
    )
    emb = Embedding(words, m.astype(np.float32))
    res = evaluate_analogies(
        emb, [AnalogySection("s", [("a", "b", "c", "d")])], restrict=None
    )
    assert res["3cosadd_incl"] == 0.0  # answers b: b - a + c is nearly b
    assert res["3cosadd"] == 1.0  # with a, b, c excluded, d wins
    assert res["coverage"] == 1.0


@pytest.fixture(scope="module")
def lee_vectors(lee_corpus):
    _, sentences = lee_corpus
    model = Word2Vec(
        sentences, vector_size=40, min_count=2, epochs=20, seed=1, workers=1
    )
    kv = model.wv
    return kv, Embedding(list(kv.index_to_key), kv.vectors.astype(np.float32))


@pytest.mark.parametrize("restrict", [None, 1500])
def test_analogy_accuracy_equals_gensim(lee_vectors, restrict):
    kv, emb = lee_vectors
    path = datapath("questions-words.txt")
    score, sections = kv.evaluate_word_analogies(
        path, restrict_vocab=restrict or len(kv)
    )
    ours = evaluate_analogies(emb, read_analogies(path), restrict=restrict)
    assert ours["3cosadd"] == pytest.approx(score)
    total = sections[-1]
    assert ours["covered"] == len(total["correct"]) + len(total["incorrect"])
    for sec in sections[:-1]:
        n = len(sec["correct"]) + len(sec["incorrect"])
        entry = ours["sections"][sec["section"]]
        assert entry["covered"] == n
        if n:
            assert entry["3cosadd"] * n == pytest.approx(len(sec["correct"]))
    assert ours["covered"] > 0  # the comparison is not vacuous
    assert score > 0 or restrict


def test_similarity_spearman_equals_gensim(lee_vectors):
    kv, emb = lee_vectors
    path = datapath("wordsim353.tsv")
    _, spearman, oov = kv.evaluate_word_pairs(path)
    ours = evaluate_pairs(emb, read_pairs(path))
    assert ours["spearman"] == pytest.approx(spearman.statistic, abs=1e-6)
    assert 100 * (1 - ours["coverage"]) == pytest.approx(oov)


def test_word2vec_text_round_trip_and_gensim_reads_it(tmp_path):
    emb = Embedding(
        ["the", "cat", "naïve"], np.arange(12, dtype=np.float32).reshape(3, 4)
    )
    path = tmp_path / "v.txt"
    save_word2vec(path, emb)
    back = load_word2vec(path)
    assert back.words == emb.words
    np.testing.assert_allclose(back.matrix, emb.matrix)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=False)
    np.testing.assert_allclose(kv["naïve"], emb.matrix[2])


def test_bad_vectors_file_names_the_line(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("2 3\na 1 2 3\nb 1 2\n")
    with pytest.raises(DataError, match=r"v.txt:3: expected a word and 3 numbers"):
        load_word2vec(path)
    path.write_text("3 1\na 1\n")
    with pytest.raises(DataError, match="header says 3 words, file has 1"):
        load_word2vec(path)


def test_similarity_file_errors_name_the_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("cat\tdog\t7.5\ncat\tmouse\n")
    with pytest.raises(DataError, match=r"pairs.tsv:2: expected word1 word2 score"):
        read_pairs(path)
    path.write_text("# only a comment\n")
    with pytest.raises(DataError, match="no pairs"):
        read_pairs(path)


def test_analogy_file_errors_name_the_line(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text(": s\na b c\n")
    with pytest.raises(DataError, match=r"q.txt:2: expected four words"):
        read_analogies(path)


# --- checkpoints ----------------------------------------------------------------


class Killed(Exception):
    pass


def _kill_after_first_epoch(saved: list):
    def on_epoch(state):
        saved.append(state)
        raise Killed

    return on_epoch


def test_resumed_sgns_equals_an_uninterrupted_run(lee_corpus):
    corpus, _ = lee_corpus
    cfg = SGNSConfig(dim=16, epochs=3, batch_centres=1024, seed=4)
    W_full, _, full = train_sgns(corpus, cfg, progress=False)
    saved: list = []
    with pytest.raises(Killed):
        train_sgns(corpus, cfg, progress=False, on_epoch=_kill_after_first_epoch(saved))
    W, _, stats = train_sgns(corpus, cfg, progress=False, resume=saved[0])
    assert torch.equal(W, W_full)
    assert stats.epoch_loss == full.epoch_loss and stats.pairs == full.pairs


def test_resumed_glove_equals_an_uninterrupted_run():
    X = sp.csr_matrix(np.arange(1.0, 37.0).reshape(6, 6))
    cfg = GloVeConfig(dim=3, epochs=3, batch=7, seed=1)
    full, _ = train_glove(X, cfg, progress=False)
    saved: list = []
    with pytest.raises(Killed):
        train_glove(X, cfg, progress=False, on_epoch=_kill_after_first_epoch(saved))
    resumed, _ = train_glove(X, cfg, progress=False, resume=saved[0])
    assert torch.equal(resumed, full)


def test_checkpoint_of_another_configuration_is_ignored(tmp_path):
    a = Checkpoint(tmp_path / "c.pt", run_key(lr=0.1))
    a.save({"x": torch.ones(2)})
    assert torch.equal(a.load()["x"], torch.ones(2))
    assert Checkpoint(tmp_path / "c.pt", run_key(lr=0.2)).load() is None
    a.clear()
    assert a.load() is None
