"""Copying and coverage (See et al. 2017, Tu et al. 2016): the pointer-generator's
mixture at its two extremes and with an extended vocabulary, the coverage loss,
the extended encoding of unknown source spans, and a copy task learned through
the pointer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from firth.bpe import SPECIALS
from firth.nmt.config import NmtRun
from firth.nmt.data import BOS, EOS, PAD, UNK, decode, encode_extended, make_batch
from firth.nmt.decode import beam_search, greedy
from firth.nmt.models import Seq2Seq, build_model, mixture
from firth.nmt.train import coverage_loss_sum, loss_sum
from firth.param_section import ParamSection

V = 30


def _cfg(emb=16, hidden=12):
    return SimpleNamespace(
        common=SimpleNamespace(
            cell="gru", emb_dim=emb, hidden=hidden, layers=1, dropout=0.0
        ),
        transformer=None,
    )


def _pointer(kind="bahdanau", coverage=False, seed=0):
    torch.manual_seed(seed)
    return build_model(kind, V, _cfg(), pointer=True, coverage=coverage).double()


def _batch():
    """Sources with repeated tokens, padding, and extended ids V, V+1 (unknown
    spans, copyable only)."""
    src = torch.tensor(
        [[5, 9, 5, V, EOS, PAD], [7, V + 1, 8, V, 7, EOS], [6, EOS, PAD, PAD, PAD, PAD]]
    )
    return src, src != PAD


def _with_switch(m, value: float):
    """p_gen forced to exactly 0 or 1: zero weights, a saturating bias."""
    with torch.no_grad():
        m.switch.weight.zero_()
        m.switch.bias.fill_(1e4 if value else -1e4)
    return m


@pytest.mark.parametrize("kind", ["bahdanau", "luong-general", "luong-dot"])
@torch.no_grad()
def test_switch_extremes_give_copy_and_vocabulary_distributions(kind):
    src, mask = _batch()
    for p_gen in (0.0, 1.0):
        m = _with_switch(_pointer(kind).eval(), p_gen)
        memory = m.encode(src, mask)
        state = m.start(memory)
        y = torch.full((3,), BOS)
        for _ in range(3):
            logp, new, attn = m.step(y, state, memory)
            p = logp.exp()
            assert p.shape == (3, V + 2)  # the batch's two extended ids
            if p_gen == 0:  # attention mass scattered onto the source tokens
                want = torch.zeros(3, V + 2, dtype=torch.float64)
                for b in range(3):
                    for j in range(src.shape[1]):
                        want[b, src[b, j]] += attn[b, j]
                want[:, PAD] = 0.0  # padding has attention exactly 0
                assert torch.allclose(p, want, atol=1e-12, rtol=0)
            else:  # exactly the vocabulary softmax, nothing on extended ids
                # the features before mixing: recompute the plain readout
                feat_logits = _plain_logits(m, y, state, memory)
                want = torch.softmax(feat_logits, -1)
                assert torch.allclose(p[:, :V], want, atol=1e-12, rtol=0)
                assert bool((p[:, V:] < 1e-29).all())
            state, y = new, logp.argmax(-1).clamp_max(V - 1).clamp_min(4)


def _plain_logits(m, y, state, memory):
    """The vocabulary logits of the same step with the pointer switched off."""
    m.pointer = False
    try:
        memory = {**memory, "keys": memory["keys"]}
        feat, _, _ = m.step(y.masked_fill(y >= V, UNK), state, memory)
        return Seq2Seq.logits(m, feat)
    finally:
        m.pointer = True


@torch.no_grad()
def test_mixture_sums_to_one_with_an_extended_vocabulary():
    gen = torch.Generator().manual_seed(0)
    p_vocab = torch.softmax(torch.randn(4, V, generator=gen, dtype=torch.float64), -1)
    p_gen = torch.rand(4, 1, generator=gen, dtype=torch.float64)
    attn = torch.softmax(torch.randn(4, 6, generator=gen, dtype=torch.float64), -1)
    ids = torch.randint(4, V + 5, (4, 6), generator=gen)
    p = mixture(p_vocab, p_gen, attn, ids, V + 5)
    assert torch.allclose(p.sum(-1), torch.ones(4, dtype=torch.float64), atol=1e-12)
    # an extended id gets exactly its copy mass
    for b in range(4):
        for w in range(V, V + 5):
            want = (1 - p_gen[b, 0]) * attn[b][ids[b] == w].sum()
            assert float(p[b, w]) == pytest.approx(float(want), abs=1e-15)
    # and through the model, over a whole teacher-forced batch
    src, mask = _batch()
    m = _pointer(coverage=True).eval()
    tgt = torch.tensor([[BOS, 5, V, 9], [BOS, V + 1, 7, 8], [BOS, 6, 6, 6]])
    logp, _ = m(src, mask, tgt)
    assert logp.shape == (3, 4, V + 2)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(3, 4).double(), atol=1e-12)


def test_coverage_loss_zero_without_revisits_positive_with():
    mask = torch.ones(1, 3)
    once = torch.eye(3, 4)[None]  # step t attends source position t only
    assert float(coverage_loss_sum(once, mask)) == 0.0
    spread = torch.tensor([[[0.5, 0.5, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]])
    assert float(coverage_loss_sum(spread, mask)) == 0.0
    again = torch.tensor([[[1.0, 0, 0, 0], [0.3, 0.7, 0, 0], [0.6, 0.2, 0.2, 0]]])
    # brute force: sum_t sum_i min(a_ti, sum_{t'<t} a_t'i)
    want = sum(
        min(float(again[0, t, i]), float(again[0, :t, i].sum()))
        for t in range(3)
        for i in range(4)
    )
    assert want == pytest.approx(0.3 + 0.6 + 0.2)
    assert float(coverage_loss_sum(again, mask)) == pytest.approx(want)
    # padded target steps do not count
    assert float(coverage_loss_sum(again, torch.tensor([[1.0, 1.0, 0.0]]))) == (
        pytest.approx(0.3)
    )


@torch.no_grad()
def test_coverage_vector_is_the_attention_so_far():
    src, mask = _batch()
    m = _pointer(coverage=True).eval()
    memory = m.encode(src, mask)
    state = m.start(memory)
    total = torch.zeros(src.shape, dtype=torch.float64)
    for y in (BOS, 5, 9, 7):
        assert torch.allclose(state["cov"], total)
        _, state, attn = m.step(torch.full((3,), y), state, memory)
        total += attn
    # the coverage changes the scores: a model without the w_cov term differs
    with torch.no_grad():
        m.attention.w_cov.weight.fill_(3.0)
    _, _, a1 = m.step(torch.full((3,), 5), state, memory)
    m.attention.w_cov.weight.zero_()
    _, _, a0 = m.step(torch.full((3,), 5), state, memory)
    assert not torch.allclose(a0, a1)


@pytest.mark.parametrize("coverage", [False, True])
@torch.no_grad()
def test_pointer_batches_decode_like_single_sentences(coverage):
    src, mask = _batch()
    m = _pointer(coverage=coverage, seed=3).eval()
    max_len = mask.sum(1) + 3
    for run in (
        lambda s, k, L: greedy(m, s, k, L),
        lambda s, k, L: beam_search(m, s, k, L, beam=3, alpha=1.0, beta=0.3),
    ):
        batched = run(src, mask, max_len)
        for i in range(3):
            n = int(mask[i].sum())
            one = run(src[i : i + 1, :n], mask[i : i + 1, :n], max_len[i : i + 1])
            assert one.tokens[0] == batched.tokens[i]
            assert one.scores[0] == pytest.approx(batched.scores[i], abs=1e-9)


def test_config_checks_the_model():
    assert issubclass(NmtRun, ParamSection)
    with pytest.raises(ValueError, match="attention model"):
        NmtRun(model="none", seed=1, epochs=1.0, pointer=True)
    with pytest.raises(ValueError, match="bahdanau"):
        NmtRun(model="luong-dot", seed=1, epochs=1.0, coverage=True)
    NmtRun(model="luong-dot", seed=1, epochs=1.0, pointer=True, coverage_loss=1.0)
    with pytest.raises(ValueError, match="recurrent"):
        build_model("transformer", V, _cfg(), pointer=True)


def test_unknown_spans_are_copyable_and_decode_back():
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=60, special_tokens=SPECIALS)
    tok.train_from_iterator(["the cat sat on the mat", "a dog ran"] * 20, trainer)
    n = tok.get_vocab_size()
    src = ["the çat sat on the mat ñ", "a dog"]
    tgt = ["the çat on ñ the mat ÿ", "a dog"]
    ext = encode_extended(tok, src, tgt)
    assert ext.oov == [["ç", "ñ"], []]
    assert n in ext.src[0] and n + 1 in ext.src[0] and UNK not in ext.src[0]
    assert ext.tgt[0].count(n) == 1 and ext.tgt[0].count(n + 1) == 1
    assert ext.tgt[0].count(UNK) == 1  # "ÿ" is not in its source: stays <unk>
    assert decode(tok, ext.src[0], ext.oov[0]) == src[0]  # copying gives it back
    # an uncopyable <unk> is dropped, as the tokenizer's own decode drops it
    assert decode(tok, ext.tgt[0], ext.oov[0]) == "the çat on ñ the mat "
    assert tok.decode(tok.encode("the mat ÿ").ids) == "the mat "
    assert decode(tok, ext.src[1], ext.oov[1]) == src[1]


def test_pointer_learns_a_copy_task():
    """Random sequences over 20 tokens plus unknown ones (extended ids, readable
    only as <unk>): a small pointer-generator trained 300 steps reproduces held-out
    inputs exactly, unknown tokens included."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    vocab = 24  # 4 specials + 20 tokens

    def sample(n):
        seqs = []
        for _ in range(n):
            L = int(torch.randint(3, 9, (1,), generator=gen))
            s = torch.randint(4, vocab, (L,), generator=gen)
            unk = torch.rand(L, generator=gen) < 0.15  # unknown spans V, V+1, ...
            s[unk] = vocab + torch.arange(int(unk.sum()))
            seqs.append(s.tolist())
        return seqs

    c = SimpleNamespace(cell="gru", emb_dim=32, hidden=64, layers=1, dropout=0.0)
    m = build_model("bahdanau", vocab, SimpleNamespace(common=c), pointer=True)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    for _ in range(300):
        seqs = sample(32)
        b = make_batch(list(range(32)), seqs, seqs)
        loss = loss_sum(m, b, coverage_loss=0.5) / b.tokens
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    test = sample(100)
    b = make_batch(list(range(100)), test, None)
    out = greedy(m, b.src, b.src_mask, b.src_mask.sum(1) + 2)
    exact = sum(o == s for o, s in zip(out.tokens, test, strict=True)) / 100
    with_unknown = [i for i, s in enumerate(test) if max(s) >= vocab]
    assert len(with_unknown) > 20
    assert exact >= 0.9
    assert (
        sum(out.tokens[i] == test[i] for i in with_unknown) / len(with_unknown) >= 0.9
    )


@pytest.mark.parametrize(
    "kind,coverage", [("bahdanau", False), ("bahdanau", True), ("luong-dot", False)]
)
@torch.no_grad()
def test_step_by_step_equals_teacher_forcing(kind, coverage):
    src, mask = _batch()
    m = _pointer(kind, coverage=coverage).eval()
    tgt = torch.tensor([[BOS, 5, V, 9, 5], [BOS, V + 1, 7, 8, V], [BOS, 6, 6, 6, 6]])
    full, attn_full = m(src, mask, tgt)
    memory = m.encode(src, mask)
    state = m.start(memory)
    for t in range(tgt.shape[1]):
        logp, state, attn = m.step(tgt[:, t], state, memory)
        assert torch.allclose(m.logits(logp), full[:, t], atol=1e-12)
        assert torch.allclose(attn, attn_full[:, t], atol=1e-12)


@pytest.mark.parametrize("coverage", [False, True])
@torch.no_grad()
def test_copy_parts_of_the_one_pass_readout_equal_step_by_step(coverage):
    """Bahdanau's teacher forcing mixes every step at once; run step by step (the
    path of a family whose readout feeds back) it must give the same p_gen and
    copied shares, and the same log-probabilities."""
    src, mask = _batch()
    m = _pointer("bahdanau", coverage=coverage).eval()
    tgt_in = torch.tensor([[BOS, 5, V, 9], [BOS, V + 1, 7, 8], [BOS, 6, 6, 6]])
    tgt_out = torch.tensor([[5, V, 9, EOS], [V + 1, 7, 8, V], [6, 6, EOS, PAD]])
    p_gen, share = m.copy_parts(src, mask, tgt_in, tgt_out)
    full, attn = m(src, mask, tgt_in)
    m.feeds_back = True  # Seq2Seq's loop: ``step`` at every position
    p_gen_steps, share_steps = m.copy_parts(src, mask, tgt_in, tgt_out)
    full_steps, attn_steps = m(src, mask, tgt_in)
    assert p_gen.shape == share.shape == tgt_out.shape
    assert torch.allclose(p_gen, p_gen_steps, atol=1e-12)
    assert torch.allclose(share, share_steps, atol=1e-12)
    assert torch.allclose(full, full_steps, atol=1e-12)
    assert torch.allclose(attn, attn_steps, atol=1e-12)
    copied = tgt_out >= V  # extended ids come from copying alone
    assert torch.allclose(share[copied], torch.ones(int(copied.sum())).double())
