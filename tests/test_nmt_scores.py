"""The translation scores from sentence statistics extracted once (firth.nmt.evaluate
.Scores) against sacreBLEU scoring each subset afresh: the oracle."""

import random

import pytest
import sacrebleu
from pythonbible import Book, Version, get_verse_id, get_verse_text

from firth.nmt.evaluate import Scores, best_and_worst, bucket_scores, corpus_scores


def _verses():
    """Real KJV -> ASV verse pairs (Psalms), with outputs of every quality: the
    reference, the source, a shuffle, a prefix, and nothing."""
    srcs, refs = [], []
    for chapter in (18, 19, 119):
        for verse in range(1, 12):
            vid = get_verse_id(Book.PSALMS, chapter, verse)
            srcs.append(get_verse_text(vid, version=Version.KING_JAMES))
            refs.append(get_verse_text(vid, version=Version.AMERICAN_STANDARD))
    rng = random.Random(0)
    hyps = []
    for i, (s, r) in enumerate(zip(srcs, refs, strict=True)):
        words = s.split()
        kind = i % 5
        if kind == 1:
            rng.shuffle(words)
        elif kind == 2:
            words = words[: len(words) // 2]
        elif kind == 3:
            words = []
        hyps.append(r if kind == 4 else " ".join(words))
    return srcs, hyps, refs


def test_every_subset_score_is_sacrebleus_on_that_subset():
    srcs, hyps, refs = _verses()
    stats = Scores(hyps, refs)
    scores, sigs = corpus_scores(stats)
    assert scores["bleu"] == round(sacrebleu.corpus_bleu(hyps, [refs]).score, 4)
    assert scores["chrf"] == round(sacrebleu.corpus_chrf(hyps, [refs]).score, 4)
    assert scores["chrf++"] == round(
        sacrebleu.corpus_chrf(hyps, [refs], word_order=2).score, 4
    )
    assert sigs["bleu"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    rng = random.Random(1)
    for _ in range(20):
        idx = sorted(rng.sample(range(len(hyps)), rng.randint(1, len(hyps))))
        h, r = [hyps[i] for i in idx], [refs[i] for i in idx]
        assert stats.score("bleu", idx) == pytest.approx(
            sacrebleu.corpus_bleu(h, [r]).score, abs=1e-9
        )
        assert stats.score("chrf++", idx) == pytest.approx(
            sacrebleu.corpus_chrf(h, [r], word_order=2).score, abs=1e-9
        )
    edges = [10, 20, 30]
    rows = bucket_scores(stats, srcs, edges)
    assert sum(row["n"] for row in rows) == len(hyps)
    for row in rows:
        lo, _, hi = row["bucket"].partition("-")
        hi = int(hi) if hi else 10**9
        idx = [
            i for i, s in enumerate(srcs) if int(lo.rstrip("+")) <= len(s.split()) <= hi
        ]
        assert row["n"] == len(idx)
        if idx:
            h, r = [hyps[i] for i in idx], [refs[i] for i in idx]
            assert row["bleu"] == round(sacrebleu.corpus_bleu(h, [r]).score, 4)
            assert row["chrf"] == round(sacrebleu.corpus_chrf(h, [r]).score, 4)


def test_best_and_worst_rank_by_sacrebleus_sentence_chrf():
    srcs, hyps, refs = _verses()
    ids = [f"{i:03d}" for i in range(len(hyps))]
    got = best_and_worst(Scores(hyps, refs), ids, srcs, hyps, refs, 3)
    chrf = sacrebleu.CHRF()
    want = sorted(
        (
            (chrf.sentence_score(h, [r]).score, i)
            for i, (h, r) in enumerate(zip(hyps, refs, strict=True))
        ),
        key=lambda x: (-x[0], ids[x[1]]),
    )
    assert [r["id"] for r in got["best"]] == [ids[i] for _, i in want[:3]]
    assert [r["id"] for r in got["worst"]] == [ids[i] for _, i in want[::-1][:3]]
    assert [r["chrf"] for r in got["best"]] == [round(s, 2) for s, _ in want[:3]]
