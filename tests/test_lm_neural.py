"""Neural language models: the adaptive softmax against closed forms, streaming
(truncated BPTT) scoring against one-pass and brute-force scoring, the trainer's
schedule, resume and early stopping, and the gradient-flow measurement against the
hand-stepped cell."""

from types import SimpleNamespace as NS

import pytest
import torch
import torch.nn.functional as F
from gensim.test.utils import datapath

from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.lm.cells import elman_cell, lstm_cell
from firth.lm.data import batchify, build_vocabulary, encode_stream, eval_layout
from firth.lm.gradient_flow import gradient_norms, model_gradient_norms
from firth.lm.models import build_model
from firth.lm.softmax import AdaptiveSoftmax
from firth.lm.train import score, train
from firth.schedule import lr_at


def lee_lines(n=None):
    lines = (
        open(datapath("lee_background.cor"), encoding="utf-8")
        .read()
        .lower()
        .splitlines()
    )
    lines = [x.strip() for x in lines if x.strip()]
    return lines[:n] if n else lines


def cfg(emb=16, cutoffs=(20, 60), tie=True, dropout=0.0, memory=6, bptt=5, **common):
    c = dict(
        emb_dim=emb,
        cutoffs=list(cutoffs),
        tie=tie,
        dropout=dropout,
        batch=4,
        bptt=bptt,
        epochs=1.0,
        lr=0.01,
        warmup=0.1,
        weight_decay=0.0,
        clip=0.5,
        evals_per_epoch=2,
        patience=0,
        eval_batch=3,
    )
    c.update(common)
    return NS(
        common=NS(**c),
        ffnn=NS(context=3, hidden=24),
        elman=NS(hidden=12, layers=1, forget_bias=0.0),
        lstm=NS(hidden=12, layers=2, forget_bias=1.0),
        gru=NS(hidden=16, layers=1, forget_bias=0.0),
        transformer=NS(layers=2, heads=2, ff=32, memory=memory),
    )


# -- adaptive softmax ------------------------------------------------------------


@pytest.mark.parametrize("cutoffs", [[], [5], [5, 17], [3, 8, 20]])
@pytest.mark.parametrize("tie", [True, False])
def test_adaptive_softmax_is_a_distribution(cutoffs, tie):
    torch.manual_seed(0)
    V, d = 31, 6
    emb = torch.nn.Parameter(torch.randn(V, d, dtype=torch.float64))
    sm = AdaptiveSoftmax(d, V, cutoffs, tied=emb if tie else None).double()
    with torch.no_grad():  # non-trivial cluster rows and projections
        sm.cluster_weight.normal_()
        for p in sm.proj:
            p.add_(0.3 * torch.randn_like(p))
    h = torch.randn(9, d, dtype=torch.float64)
    full = sm.log_prob(h)
    assert full.shape == (9, V)
    torch.testing.assert_close(
        full.exp().sum(1), torch.ones(9, dtype=torch.float64), rtol=0, atol=1e-12
    )
    y = torch.randint(0, V, (9,))
    torch.testing.assert_close(
        sm.log_prob_of(h, y), full.gather(1, y[:, None]).squeeze(1), rtol=0, atol=1e-12
    )
    if tie:
        assert sm.weight is emb


def test_no_cutoffs_is_the_plain_tied_softmax():
    torch.manual_seed(1)
    V, d = 13, 4
    emb = torch.nn.Parameter(torch.randn(V, d, dtype=torch.float64))
    sm = AdaptiveSoftmax(d, V, [], tied=emb).double()
    with torch.no_grad():
        sm.bias.normal_()
    h = torch.randn(5, d, dtype=torch.float64)
    torch.testing.assert_close(
        sm.log_prob(h), F.log_softmax(h @ emb.T + sm.bias, -1), rtol=0, atol=1e-12
    )


def test_adaptive_softmax_gradients_match_the_per_cluster_formula():
    """The clusters' rows come from one split of the tied matrix (one gradient
    buffer): the gradients of every parameter, through the output rows and the
    input lookup of the same matrix, equal those of p(w) written out per cluster
    with a slice each."""
    torch.manual_seed(3)
    V, d, cuts = 23, 5, [6, 14]
    emb = torch.nn.Parameter(torch.randn(V, d, dtype=torch.float64))
    sm = AdaptiveSoftmax(d, V, cuts, tied=emb).double()
    with torch.no_grad():
        sm.cluster_weight.normal_()
        sm.bias.normal_()
        for p in sm.proj:
            p.add_(0.3 * torch.randn_like(p))
    x = torch.randint(0, V, (40,))
    y = torch.cat([torch.arange(V), torch.randint(0, V, (17,))])  # every cluster

    def by_hand():
        h = torch.tanh(emb[x])
        head = F.log_softmax(
            torch.cat([h @ emb[:6].T + sm.bias[:6], h @ sm.cluster_weight.T], 1)
            + torch.cat([torch.zeros(6, dtype=h.dtype), sm.cluster_bias]),
            -1,
        )
        out = []
        for n, w in enumerate(y.tolist()):
            if w < 6:
                out.append(head[n, w])
                continue
            i, lo, hi = (0, 6, 14) if w < 14 else (1, 14, V)
            tail = F.log_softmax(h[n] @ sm.proj[i] @ emb[lo:hi].T + sm.bias[lo:hi], -1)
            out.append(head[n, 6 + i] + tail[w - lo])
        return torch.stack(out).sum()

    params = [emb, sm.bias, sm.cluster_weight, sm.cluster_bias, *sm.proj]
    mine = torch.autograd.grad(sm.log_prob_of(torch.tanh(emb[x]), y).sum(), params)
    ref = torch.autograd.grad(by_hand(), params)
    for a, b in zip(mine, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_tail_probability_is_cluster_times_within_cluster():
    torch.manual_seed(2)
    V, d = 10, 3
    sm = AdaptiveSoftmax(d, V, [4]).double()
    h = torch.randn(1, d, dtype=torch.float64)
    head = F.log_softmax(
        torch.cat(
            [
                h @ sm.weight[:4].T + sm.bias[:4],
                h @ sm.cluster_weight.T + sm.cluster_bias,
            ],
            1,
        ),
        -1,
    )
    tail = F.log_softmax(h @ sm.proj[0] @ sm.weight[4:].T + sm.bias[4:], -1)
    torch.testing.assert_close(sm.log_prob(h)[0, 7], head[0, 4] + tail[0, 3])


# -- data ------------------------------------------------------------------------


def test_word_vocabulary_and_stream_layout():
    lines = ["a b a c", "b a", "d a"]
    v = build_vocabulary(lines, unit="word", min_count=2)
    assert v.tokens[:2] == ["a", "</s>"]  # a: 4, </s>: 3 lines, b: 2, <unk>: c + d
    assert set(v.tokens) == {"a", "b", "</s>", "<unk>"}
    s = encode_stream(v, ["a c e", "b"])
    assert s.tolist() == [
        v.eos,
        0,
        v.tokens.index("<unk>"),
        v.tokens.index("<unk>"),
        v.eos,
        v.tokens.index("b"),
        v.eos,
    ]
    assert (
        len(s) - 1 == 3 + 1 + 2
    )  # words plus one </s> per line: the targets KN scores
    assert v.oov(["a c e", "b"]) == 2
    assert v.decode(s.tolist()[1:]) == "a <unk> <unk>\nb"


def test_layouts_cover_every_target_once():
    s = torch.arange(23)
    x, y = eval_layout(s, 4)
    kept = y[y >= 0]
    assert sorted(kept.tolist()) == list(range(1, 23))
    assert torch.equal(x[y >= 0] + 1, kept)  # each input is its target's predecessor
    xb, yb = batchify(s, 4)
    assert xb.shape == (4, 5) and torch.equal(xb + 1, yb)


def test_bpe_vocabulary_round_trip(tmp_path):
    from firth.bpe import train_bpe

    lines = lee_lines(200)
    tok = train_bpe(lines, model="byte-level", vocab_size=400, min_frequency=2)
    tok.save(str(tmp_path / "tokenizer.json"))
    v = build_vocabulary(lines, unit="bpe", tokenizer=tmp_path / "tokenizer.json")
    assert v.counts == sorted(v.counts, reverse=True)
    s = encode_stream(v, lines[:3])
    assert v.decode(s.tolist()) == "\n".join(lines[:3])
    v.save(tmp_path / "v.json")
    w = type(v).load(tmp_path / "v.json")
    assert torch.equal(encode_stream(w, lines[:3]), s)


# -- streaming scores ----------------------------------------------------------------


def _model(family, **kw):
    torch.manual_seed(3)
    m = build_model(family, 90, cfg(**kw), eos=1).double().eval()
    return m


@pytest.mark.parametrize("family", ["elman", "lstm", "gru"])
def test_recurrent_streaming_equals_one_pass(family):
    m = _model(family)
    s = torch.randint(0, 90, (41,))
    a, n = score(m, s, batch=1, bptt=4, device=torch.device("cpu"))
    b, _ = score(m, s, batch=1, bptt=1000, device=torch.device("cpu"))
    assert n == 40 and a == pytest.approx(b, rel=1e-12)


def test_ffnn_streaming_equals_brute_force_windows():
    m = _model("ffnn")
    s = torch.randint(0, 90, (30,))
    got, _ = score(m, s, batch=1, bptt=4, device=torch.device("cpu"))
    padded = torch.cat([torch.full((2,), 1), s])  # a fresh stream's history is </s>
    want = 0.0
    with torch.no_grad():
        for t in range(1, len(s)):
            window = padded[t - 1 : t + 2]  # the 3 tokens ending at input t-1
            e = m.embedding(window).reshape(1, -1)
            feats = m.out(torch.tanh(m.hidden(e)))
            want -= float(m.softmax.log_prob_of(feats, s[t : t + 1]))
    assert got == pytest.approx(want, rel=1e-12)


def test_transformer_streaming_equals_brute_force_contexts():
    T, M = 5, 6
    m = _model("transformer", memory=M, bptt=T)
    s = torch.randint(0, 90, (24,))
    got, _ = score(m, s, batch=1, bptt=T, device=torch.device("cpu"))
    x = s[:-1]
    want = 0.0
    with torch.no_grad():
        for p in range(len(x)):
            seg_start = (p // T) * T
            ctx = x[
                max(0, seg_start - M) : p + 1
            ]  # the memory re-read, then the segment so far
            feats, _ = m(ctx[None], m.init_state(1, torch.device("cpu")))
            want -= float(m.softmax.log_prob_of(feats[0, -1:], s[p + 1 : p + 2]))
    assert got == pytest.approx(want, rel=1e-10)


def test_transformer_is_causal():
    m = _model("transformer")
    x = torch.randint(0, 90, (1, 5))
    y = x.clone()
    y[0, 4] = (y[0, 4] + 1) % 90
    a, _ = m(x, m.init_state(1, torch.device("cpu")))
    b, _ = m(y, m.init_state(1, torch.device("cpu")))
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4], b[:, 4])


def test_lstm_forget_bias_sits_in_the_forget_gate():
    m = build_model("lstm", 90, cfg(), eos=1)
    H = 12
    b = m.rnn.bias_ih_l0 + m.rnn.bias_hh_l0
    assert torch.all(b[H : 2 * H] == 1.0)


# -- trainer ---------------------------------------------------------------------


def test_lr_schedule_closed_form():
    assert lr_at(0, 100, 10, 1.0) == pytest.approx(0.1)
    assert lr_at(9, 100, 10, 1.0) == pytest.approx(1.0)
    assert lr_at(10, 100, 10, 1.0) == pytest.approx(1.0)
    assert lr_at(55, 100, 10, 1.0) == pytest.approx(0.5)
    assert lr_at(100, 100, 10, 1.0) == pytest.approx(0.0)


def test_inverse_sqrt_schedule_closed_form():
    """Vaswani et al.'s rate, peak-normalised: d^-0.5 min(s^-0.5, s w^-1.5)
    scaled so its peak (s = w) is lr, with s = step + 1."""
    w, lr = 10, 2.0
    for step in range(200):
        s = step + 1
        want = lr * w**0.5 * min(s**-0.5, s * w**-1.5)
        assert lr_at(step, 100, w, lr, "inverse-sqrt") == pytest.approx(want)
    assert lr_at(999, 100, w, lr, "inverse-sqrt") == pytest.approx(lr / 10)
    assert lr_at(0, 100, 0, lr, "inverse-sqrt") == pytest.approx(lr)  # no warm-up


def _streams():
    lines = lee_lines(70)
    v = build_vocabulary(lines[:60], unit="word", min_count=2)
    return v, encode_stream(v, lines[:60]), encode_stream(v, lines[60:])


def _fit(family, checkpoint=None, stop_after=None, accel=None, **kw):
    v, tr, va = _streams()
    kw = {"batch": 16, "bptt": 8, **kw}
    c = cfg(cutoffs=(50, 200), **kw)
    torch.manual_seed(5)
    m = build_model(family, v.size, c, eos=v.eos)
    return m, train(
        m,
        tr,
        va,
        c.common,
        seed=5,
        accel=accel or Accel.cpu(),
        checkpoint=checkpoint,
        stop_after=stop_after,
    )


def test_training_lowers_valid_loss_below_unigram():
    v, tr, va = _streams()
    torch.manual_seed(5)
    fresh = build_model("lstm", v.size, cfg(cutoffs=(50, 200)), eos=v.eos)
    nll, n = score(fresh, va, batch=3, bptt=8, device=torch.device("cpu"))
    _, res = _fit("lstm", dropout=0.1, epochs=2.0)
    counts = torch.tensor(v.counts, dtype=torch.float64) + 1
    unigram = float(-(counts / counts.sum()).log()[va[1:]].mean())
    assert res.stats["best_valid_loss"] < unigram < nll / n


@pytest.mark.parametrize("family", ["lstm", "transformer"])
def test_killed_run_resumes_to_the_same_weights(tmp_path, family):
    _, whole = _fit(family, dropout=0.2)
    ckpt = Checkpoint(tmp_path / "c.pt", "key")
    with pytest.raises(KeyboardInterrupt):
        _fit(family, checkpoint=ckpt, stop_after=1, dropout=0.2)
    _, resumed = _fit(family, checkpoint=ckpt, dropout=0.2)
    assert [r["valid_loss"] for r in resumed.history] == [
        r["valid_loss"] for r in whole.history
    ]
    for k, w in whole.best_state.items():
        assert torch.equal(resumed.best_state[k], w), k


def test_early_stopping_without_progress():
    # lr 0: the second validation is no better than the first -> stop (patience 1)
    _, res = _fit("elman", lr=0.0, patience=1, evals_per_epoch=4, epochs=3.0)
    assert len(res.history) == 2 and res.stats["early_stopped"]
    assert res.stats["steps"] < res.stats["planned_steps"]


# -- gradient flow -----------------------------------------------------------------


@pytest.mark.parametrize("family", ["elman", "lstm"])
def test_model_gradient_flow_equals_hand_stepped_cell(family):
    torch.manual_seed(7)
    c = cfg()
    c.lstm.layers = 1
    m = build_model(family, 90, c, eos=1).double()
    ids = torch.randint(0, 90, (3, 4 + 9 + 1))
    got = model_gradient_norms(m, ids, warm=4)
    r = m.rnn
    W = (r.weight_ih_l0, r.weight_hh_l0, r.bias_ih_l0, r.bias_hh_l0)
    with torch.no_grad():
        state = m.init_state(3, torch.device("cpu"))
        _, state = m(ids[:, :4], state)
    xs = m.embedding(ids[:, 4:13]).detach()
    if family == "lstm":

        def step(x, st):
            h, cc = lstm_cell(x, st[0], st[1], *W)
            return h, (h, cc)

        init = (state[0][0], state[1][0])
    else:

        def step(x, st):
            h = elman_cell(x, st[0], *W)
            return h, (h,)

        init = (state[0],)
    want = gradient_norms(
        step, xs, init, lambda h: -m.softmax.log_prob_of(m.out(h), ids[:, -1])
    )
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-14)
