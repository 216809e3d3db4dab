"""The contamination audit against brute force and planted examples: a planted test
example is dirty, one sharing only (n-1)-grams (or an n-gram split across two lines)
is clean, the streamed hashed scan equals a plain set of n-gram tuples, and MinHash
LSH finds planted near-duplicates of real verses."""

from __future__ import annotations

import random

import numpy as np
import pytest

from firth.audit.overlap import OverlapAudit, choose_n, words
from firth.sources import bible


def brute(examples, training, n):
    grams = {}
    for line in training:
        ws = words(line)
        for k in {min(n, len(words(e))) for e in examples if words(e)}:
            for j in range(len(ws) - k + 1):
                grams.setdefault(k, set()).add(tuple(ws[j : j + k]))
    out = []
    for e in examples:
        ws = words(e)
        if not ws:
            out.append(False)
            continue
        k = min(n, len(ws))
        out.append(
            any(
                tuple(ws[j : j + k]) in grams.get(k, ()) for j in range(len(ws) - k + 1)
            )
        )
    return np.array(out)


def test_normalisation_and_choice_of_n():
    assert words("And the LORD spake unto Moses, saying,") == [
        "and",
        "the",
        "lord",
        "spake",
        "unto",
        "moses",
        "saying",
    ]
    assert words("it's_a—test!") == ["it", "s", "a", "test"]
    assert choose_n(range(1, 101), 5, 8, 13) == 8  # 5th percentile 5 -> clamped up
    assert choose_n([20] * 50, 5, 8, 13) == 13  # clamped down
    assert choose_n([10] * 19 + [3], 5, 8, 13) == 8
    assert choose_n([11] * 100, 5, 8, 13) == 11


def test_planted_example_is_dirty_and_n_minus_1_grams_are_clean():
    test = [
        "the quick brown fox jumps over the lazy dog by the river bank today",
        "a completely different sentence about the weather in the northern hills now",
    ]
    w = words(test[1])
    training = [
        "some unrelated text " + test[0] + " and more",  # planted inside a line
        " ".join(w[:7]),  # only 7-grams of example 1 (n = 8)
        " ".join(w[5:12]),
        "prefix " + " ".join(w[:4]),  # 8-grams of example 1 split across two lines
        " ".join(w[4:11]) + " suffix",
    ]
    a = OverlapAudit(test, n=8, near_threshold=1.0, shingle=1)
    a.scan(training, chunk=2)
    r = a.result()
    assert r.ngram.tolist() == [True, False]
    assert r.exact.tolist() == [False, False]
    a = OverlapAudit(test, n=8, near_threshold=1.0, shingle=1)
    a.scan([*training, test[1].upper() + "!!"])
    r = a.result()
    assert r.ngram.tolist() == [True, True] and r.exact.tolist() == [False, True]


def test_short_examples_must_occur_whole():
    a = OverlapAudit(
        ["Jesus wept.", "and it was so"], n=8, near_threshold=1.0, shingle=1
    )
    a.scan(["then jesus wept bitterly", "and it was good"])
    assert a.result().ngram.tolist() == [True, False]


@pytest.mark.parametrize("chunk", [1, 7, 100000])
def test_streamed_hashed_scan_equals_brute_force(chunk):
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(12)]
    training = [" ".join(rng.choices(vocab, k=rng.randint(0, 30))) for _ in range(60)]
    examples = [" ".join(rng.choices(vocab, k=rng.randint(1, 14))) for _ in range(80)]
    for n in (3, 4, 8):
        a = OverlapAudit(examples, n=n, near_threshold=1.0, shingle=1)
        a.scan(training, chunk=chunk)
        assert a.result().ngram.tolist() == brute(examples, training, n).tolist()
        assert a.result().words_read == sum(len(words(t)) for t in training)


def test_minhash_finds_planted_near_duplicates_of_real_verses():
    kjv = bible.load_version("KJV").texts
    verses = [v for _, v in sorted(kjv.items()) if len(words(v)) >= 25][:2000]
    rng = random.Random(0)
    planted = rng.sample(range(len(verses)), 200)
    test = [verses[i] for i in planted]
    training = []
    for i in planted:  # one word replaced per verse: Jaccard of word sets ~ 0.9
        ws = words(verses[i])
        j = rng.randrange(len(ws))
        ws[j] = "zzplanted"
        training.append(" ".join(ws))
    a = OverlapAudit(test, n=13, near_threshold=0.7, shingle=1)
    a.scan(training)
    recall = a.result().near.mean()
    assert recall > 0.9
    # and verses never planted are rarely flagged
    others = [verses[i] for i in range(len(verses)) if i not in set(planted)][:200]
    b = OverlapAudit(others, n=13, near_threshold=0.7, shingle=1)
    b.scan(training)
    assert b.result().near.mean() < 0.05


def test_split_scores_and_flags_file(tmp_path):
    from firth.audit.scores import read_flags, split_scores
    from firth.errors import DataError

    values = [1.0, 2.0, 3.0, 6.0]
    s = split_scores(
        lambda idx: sum(values[i] for i in idx), [True, False, False, True]
    )
    assert (s["all"], s["dirty"], s["clean"]) == (12.0, 7.0, 5.0)
    assert (s["n_dirty"], s["n_clean"], s["clean_share"]) == (2, 2, 0.5)
    assert s["clean_vs_all"] == pytest.approx((5 - 12) / 12)
    assert split_scores(lambda idx: 1.0, [False, False])["dirty"] is None
    path = tmp_path / "flags.tsv"
    path.write_text("id\tdirty\na\t1\nb\t0\n")
    assert read_flags(path, ["b", "a"]) == [False, True]
    with pytest.raises(DataError, match="no flags for 1 evaluation ids"):
        read_flags(path, ["a", "c"])
