"""The tagger's parts against independent answers: character features and emissions
equal the unbatched computation, the heads' losses equal the CRF and cross-entropy
written out, entity F1 equals a brute-force chunk count, the baselines a hand
count, and a killed training run resumes to the same weights."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.tagging.data import PAD, UNK, Vocab, encode, make_batch, norm
from firth.tagging.evaluate import (
    baselines,
    breaks_bio,
    majority_tag,
    scores,
    spread,
    word_only,
)
from firth.tagging.models import CharCNN, CharLSTM, Tagger
from firth.tagging.train import predict, train

SENTS = [
    (
        ["John", "lives", "in", "New", "York", "."],
        ["B-PER", "O", "O", "B-LOC", "I-LOC", "O"],
    ),
    (["Mary", "saw", "Paris", "in", "2019"], ["B-PER", "O", "B-LOC", "O", "O"]),
    (["Hello"], ["O"]),
    (
        ["New", "York", "Times", "is", "read", "by", "John", "Smith"],
        ["B-ORG", "I-ORG", "I-ORG", "O", "O", "O", "B-PER", "I-PER"],
    ),
]


def cfg(**kw):
    base = dict(
        word_dim=8,
        chars="cnn",
        char_dim=5,
        char_hidden=6,
        char_width=3,
        hidden=7,
        dropout=0.0,
        word_dropout=0.5,
        batch=2,
        bucket=2,
        lr=0.01,
        clip=5.0,
        epochs=4,
        patience=0,
        threads=1,
        device="cpu",
    )
    base.update(kw)
    return SimpleNamespace(**base)


def tagger(vocab, head="crf", chars="cnn", dropout=0.0):
    torch.manual_seed(0)
    return Tagger(
        len(vocab.words),
        len(vocab.chars),
        vocab.tags,
        head=head,
        word_dim=8,
        chars=chars,
        char_dim=5,
        char_hidden=6,
        char_width=3,
        hidden=7,
        dropout=dropout,
    )


def test_vocab_normalises_words_and_keeps_raw_characters():
    v = Vocab.build(SENTS, extra_words=["london", "paris", "john"])
    assert norm("2019") == "0000" and norm("NeW") == "new"
    assert v.words[:2] == ["<pad>", "<unk>"]
    assert "london" in v.word_ix and v.words.count("paris") == 1
    assert v.tags[0] == "O"
    enc = encode(v, [(["JOHN", "Zork"], ["B-PER", "B-MISC"])])
    assert enc.words[0] == [v.word_ix["john"], UNK]
    assert enc.tags[0] == [v.tag_ix["B-PER"], -1]
    assert enc.chars[0][0][0] == v.char_ix.get("J", UNK)


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_character_features_do_not_depend_on_padding(kind):
    torch.manual_seed(0)
    mod = CharCNN(20, 5, 6, 3) if kind == "cnn" else CharLSTM(20, 5, 4)
    words = [[3, 4, 5], [6], [7, 8, 9, 10, 11]]
    batch = torch.zeros(3, 5, dtype=torch.long)
    for i, w in enumerate(words):
        batch[i, : len(w)] = torch.tensor(w)
    together = mod(batch)
    for i, w in enumerate(words):
        alone = mod(torch.tensor([w]))
        assert torch.allclose(together[i], alone[0], atol=1e-6)


@pytest.mark.parametrize("width", [3, 4])
def test_char_cnn_groups_words_by_length_to_the_same_features(width):
    """Words of 1 to 70 characters (a URL pads a whole tweet's words) convolved in
    length groups give the features of one convolution over the padded batch,
    written out (embedding, torch's convolution, masked max), gradients included."""
    torch.manual_seed(0)
    mod = CharCNN(30, 5, 6, width)
    gen = torch.Generator().manual_seed(1)
    lengths = [1, 3, 8, 9, 16, 17, 33, 70, 4, 2]
    chars = torch.zeros(len(lengths), 70, dtype=torch.long)
    for i, n in enumerate(lengths):
        chars[i, :n] = torch.randint(1, 30, (n,), generator=gen)
    grouped = mod(chars)
    x = mod.conv(mod.emb(chars).transpose(1, 2))[:, :, :70]
    whole = x.masked_fill((chars == 0).unsqueeze(1), float("-inf")).max(2).values
    assert torch.allclose(grouped, whole, atol=1e-6)
    params = [mod.conv.weight, mod.conv.bias, mod.emb.weight]
    for g1, g2 in zip(
        torch.autograd.grad(grouped.sum(), params),
        torch.autograd.grad(whole.sum(), params),
        strict=True,
    ):
        assert torch.allclose(g1, g2, atol=1e-5)


def test_make_batch_pads_words_tags_and_characters():
    v = Vocab.build(SENTS)
    enc = encode(v, SENTS)
    idx = [2, 0, 3]
    dropped = [[UNK] * len(enc.words[i]) for i in idx]
    for words in (None, dropped):
        b = make_batch(enc, idx, words)
        n = max(len(enc.words[i]) for i in idx)
        m = max(len(c) for i in idx for c in enc.chars[i])
        assert b.words.shape == b.tags.shape == b.mask.shape == (3, n)
        assert b.chars.shape == (3, n, m)
        for r, i in enumerate(idx):
            k = len(enc.words[i])
            want = enc.words[i] if words is None else words[r]
            assert b.words[r].tolist() == want + [0] * (n - k)
            assert b.tags[r].tolist() == enc.tags[i] + [-1] * (n - k)
            assert b.mask[r].tolist() == [True] * k + [False] * (n - k)
            for j in range(n):
                cs = enc.chars[i][j] if j < k else []
                assert b.chars[r, j].tolist() == cs + [0] * (m - len(cs))


@pytest.mark.parametrize("bucket", [0, 2])
def test_epoch_batches_cover_every_sentence_once_bucketed_by_length(bucket):
    from firth.tagging.train import TaggerTask

    rng = random.Random(5)
    lengths = [rng.randint(1, 30) for _ in range(37)]
    sents = [(["w"] * n, ["O"] * n) for n in lengths]
    v = Vocab.build(sents)
    enc = encode(v, sents)
    c = cfg(batch=3, bucket=bucket, word_dropout=0.0)
    task = TaggerTask(None, enc, enc, sents, v, c, seed=13, accel=None,
                      singletons=set(), bio=False)  # fmt: skip
    for epoch in (0, 1):
        batches = [idx for idx, _ in task.epoch_batches(epoch)]
        assert sorted(i for b in batches for i in b) == list(range(37))
        assert [i for b in task.epoch_batches(epoch) for i in b[0]] == [
            i for b in batches for i in b
        ]  # the same (seed, epoch), the same batches
        order = random.Random(13 * 1_000_003 + epoch).sample(range(37), 37)
        if bucket == 0:  # plain shuffled slices, as before bucketing
            assert batches == [order[j : j + 3] for j in range(0, 37, 3)]
        else:  # each pool of 6 sentences sorted by length, then batches shuffled
            pools = [
                sorted(order[j : j + 6], key=lambda i: len(sents[i][0]))
                for j in range(0, 37, 6)
            ]
            want = [p[j : j + 3] for p in pools for j in range(0, len(p), 3)]
            assert sorted(map(tuple, batches)) == sorted(map(tuple, want))
    assert [b for b, _ in task.epoch_batches(0)] != [
        b for b, _ in task.epoch_batches(1)
    ]


def test_char_lstm_is_the_final_states_of_a_plain_bilstm():
    torch.manual_seed(0)
    mod = CharLSTM(20, 5, 4)
    w = torch.tensor([[3, 4, 5, 6]])
    x = mod.emb(w)
    out, _ = mod.lstm(x, torch.tensor([4]))  # forward state at the end, backward first
    want = torch.cat([out[0, -1, :4], out[0, 0, 4:]])
    assert torch.allclose(mod(w)[0], want, atol=1e-6)
    padded = torch.tensor([[3, 4, 5, 6, PAD, PAD], [7, PAD, PAD, PAD, PAD, PAD]])
    assert torch.allclose(mod(padded)[0], want, atol=1e-6)


@pytest.mark.parametrize("head", ["crf", "softmax"])
@pytest.mark.parametrize("chars", ["cnn", "lstm", "none"])
def test_emissions_and_decoding_do_not_depend_on_the_batch(head, chars):
    v = Vocab.build(SENTS)
    m = tagger(v, head, chars).eval()
    enc = encode(v, SENTS)
    b = make_batch(enc, [0, 1, 2, 3])
    together = m.emissions(b)
    paths = m.decode(b)
    for i in range(4):
        alone = make_batch(enc, [i])
        n = len(SENTS[i][0])
        assert torch.allclose(together[i, :n], m.emissions(alone)[0], atol=1e-5)
        assert paths[i] == m.decode(alone)[0]
        assert len(paths[i]) == n


def test_heads_losses_are_the_crf_nll_and_the_cross_entropy():
    v = Vocab.build(SENTS)
    enc = encode(v, SENTS)
    b = make_batch(enc, [0, 1, 2, 3])
    crf = tagger(v, "crf").eval()
    em = crf.emissions(b)
    ref = sum(
        float(
            crf.crf.nll(
                em[i : i + 1, : len(SENTS[i][0])],
                torch.tensor([enc.tags[i]]),
                torch.ones(1, len(SENTS[i][0]), dtype=torch.bool),
            ).detach()
        )
        for i in range(4)
    )
    assert float(crf.loss(b).detach()) == pytest.approx(ref, rel=1e-5)
    soft = tagger(v, "softmax").eval()
    em = soft.emissions(b)
    ref = sum(
        float(
            F.cross_entropy(
                em[i, : len(SENTS[i][0])], torch.tensor(enc.tags[i]), reduction="sum"
            ).detach()
        )
        for i in range(4)
    )
    assert float(soft.loss(b).detach()) == pytest.approx(ref, rel=1e-5)


def _i_heavy(v, head):
    """A tagger whose emissions want an I- tag everywhere."""
    m = tagger(v, head).eval()
    with torch.no_grad():
        m.out.bias[[v.tag_ix[t] for t in v.tags if t.startswith("I-")]] += 20
    return m


def test_only_constraints_keep_bio_a_free_crf_can_break_it():
    v = Vocab.build(SENTS)
    enc = encode(v, SENTS)

    def pred(m, constrained=False):
        return predict(m, enc, v, batch=3, device="cpu", constrained=constrained)

    # the constrained CRF cannot break BIO: its forbidden moves score -10^4
    assert not any(breaks_bio(p) for p in pred(_i_heavy(v, "crf-constrained")))
    # a CRF with free transitions follows the emissions (its transitions start
    # near 0), as the softmax head does
    free = _i_heavy(v, "crf")
    assert all(breaks_bio(p) for p in pred(free))
    assert all(breaks_bio(p) for p in pred(_i_heavy(v, "softmax")))
    # decoding the free CRF under the BIO constraints keeps BIO
    assert not any(breaks_bio(p) for p in pred(free, constrained=True))
    with pytest.raises(ValueError, match="needs a CRF head"):
        pred(_i_heavy(v, "softmax"), constrained=True)


def test_free_and_constrained_crf_share_their_scores_off_the_forbidden_moves():
    """Same weights: the free CRF scores a valid BIO sequence exactly as the
    constrained one; only the partition functions differ (the constrained sums
    over valid sequences only, so its log Z is lower)."""
    v = Vocab.build(SENTS)
    free, con = tagger(v, "crf").eval(), tagger(v, "crf-constrained").eval()
    weights = {k: w for k, w in free.state_dict().items() if "allowed" not in k}
    con.load_state_dict(weights, strict=False)  # the masks stay the constrained ones
    b = make_batch(encode(v, SENTS), [0, 1, 2, 3])
    em = free.emissions(b)
    tags = b.tags.clamp(min=0)
    assert torch.allclose(
        free.crf.score(em, tags, b.mask), con.crf.score(em, tags, b.mask)
    )
    assert (
        con.crf.log_partition(em, b.mask) < free.crf.log_partition(em, b.mask)
    ).all()


def test_load_vectors_copies_the_known_rows():
    v = Vocab.build(SENTS, extra_words=["london"])
    m = tagger(v)
    words = ["john", "london", "zzz"]
    matrix = np.arange(24, dtype=np.float32).reshape(3, 8)
    found = m.load_vectors(v.words, {w: i for i, w in enumerate(words)}, matrix)
    assert found == 2
    assert torch.equal(m.word_emb.weight[v.word_ix["london"]], torch.arange(8.0, 16.0))
    assert torch.equal(m.word_emb.weight[v.word_ix["john"]], torch.arange(8.0))
    with pytest.raises(ValueError, match="dimensions"):
        m.load_vectors(v.words, {}, np.zeros((1, 3), dtype=np.float32))


def _chunks(tags):
    """Entities as (type, start, end), conlleval's reading, written independently:
    a chunk starts at B-X, or at I-X whose previous tag is not of type X."""
    out, cur = set(), None
    for i, t in enumerate([*tags, "O"]):
        typ = t[2:] if t != "O" else None
        starts = t.startswith("B-") or (
            t.startswith("I-") and (cur is None or cur[0] != typ)
        )
        if cur and (t == "O" or starts):
            out.add((cur[0], cur[1], i))
            cur = None
        if starts:
            cur = (typ, i)
    return out


def test_entity_f1_equals_a_brute_force_chunk_count():
    rng = random.Random(0)
    tags = ["O", "B-A", "I-A", "B-B", "I-B"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 9))] for _ in range(300)]
    pred = [[rng.choice(tags) if rng.random() < 0.4 else t for t in g] for g in gold]
    tokens = [["w"] * len(g) for g in gold]
    s = scores(gold, pred, tokens=tokens, train_forms={"w"}, bio=True)
    tp = n_gold = n_pred = 0
    per = {}
    for g, p in zip(gold, pred, strict=True):
        cg, cp = _chunks(g), _chunks(p)
        tp += len(cg & cp)
        n_gold += len(cg)
        n_pred += len(cp)
        for typ in ("A", "B"):
            a = per.setdefault(typ, [0, 0, 0])
            a[0] += len({c for c in cg & cp if c[0] == typ})
            a[1] += len({c for c in cg if c[0] == typ})
            a[2] += len({c for c in cp if c[0] == typ})
    p_, r_ = tp / n_pred, tp / n_gold
    assert s["f1"] == pytest.approx(2 * p_ * r_ / (p_ + r_))
    assert s["entities"] == n_gold
    for typ, (t, g, p) in per.items():
        assert s["per_type"][typ]["f1"] == pytest.approx(2 * t / (g + p))
    assert s["invalid_bio_share"] == pytest.approx(
        sum(
            any(
                b.startswith("I-") and (a == "O" or a[2:] != b[2:])
                for a, b in zip(["O", *q], q, strict=False)
            )
            for q in pred
        )
        / len(pred)
    )


def test_accuracy_oov_and_baselines_by_hand():
    train = [
        (["the", "dog", "runs"], ["DT", "NN", "VBZ"]),
        (["the", "runs"], ["DT", "NNS"]),
        (["dog", "runs"], ["NN", "NNS"]),
    ]
    test = [(["the", "cat", "runs"], ["DT", "NN", "VBZ"])]
    assert majority_tag(train) == "DT"  # DT 2, NN 2, NNS 2 -> alphabetical
    assert word_only(train) == {"the": "DT", "dog": "NN", "runs": "NNS"}
    b = baselines(train, test)
    assert b["majority"] == [["DT", "DT", "DT"]]
    assert b["word-only"] == [["DT", "DT", "NNS"]]
    s = scores(
        [test[0][1]],
        b["word-only"],
        tokens=[test[0][0]],
        train_forms={"the", "dog", "runs"},
        bio=False,
    )
    assert s["accuracy"] == pytest.approx(1 / 3)
    assert s["oov_tokens"] == 1 and s["oov_accuracy"] == 0.0
    assert "f1" not in s
    sp = spread([0.5, 0.7, 0.6])
    assert sp["mean"] == pytest.approx(0.6) and sp["sd"] == pytest.approx(0.1)


def test_killed_training_resumes_to_the_same_weights(tmp_path):
    v = Vocab.build(SENTS)
    enc = encode(v, SENTS)
    singletons = {v.word_ix[w] for w in ("lives", "mary", "saw", "paris", "hello")}
    c = cfg(dropout=0.3)

    def run(stop_after=None, ckpt=None):
        m = tagger(v, "crf", dropout=0.3)
        r = train(
            m,
            enc,
            enc,
            SENTS,
            v,
            c,
            seed=3,
            accel=Accel.cpu(),
            singletons=singletons,
            bio=True,
            checkpoint=ckpt,
            stop_after=stop_after,
        )
        return m, r

    ref, ref_result = run()
    ckpt = Checkpoint(tmp_path / "c.pt", "key")
    with pytest.raises(KeyboardInterrupt):
        run(stop_after=2, ckpt=ckpt)
    resumed, result = run(ckpt=Checkpoint(tmp_path / "c.pt", "key"))
    for k, t in ref.state_dict().items():
        assert torch.equal(t, resumed.state_dict()[k]), k
    assert [h["valid_score"] for h in result.history] == [
        h["valid_score"] for h in ref_result.history
    ]
    assert len(result.history) == c.epochs
    # the training loss falls on the training sentences
    assert ref_result.history[-1]["train_loss"] < ref_result.history[0]["train_loss"]
