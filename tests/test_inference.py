"""The verdict engine (firth.inference): sacreBLEU's own paired bootstrap as the
oracle on real verses, closed forms for the metrics, and planted per-item scores
for the three outcomes (equal models inconclusive, a clear gap holds, a reversed
gap does not hold, 4 dirty items inconclusive with the items they would need)."""

import os
import random

import numpy as np
import pytest
from planted import psalms
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import _paired_bs_test, estimate_ci
from scipy import stats as sps

from firth.inference import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    Rule,
    _draw,
    bits_per_char_metric,
    combine,
    compare,
    equivalent,
    f1_metric,
    groups,
    majority,
    noninferior,
    ratio,
    rule_text,
    sacrebleu_metric,
    side,
    spearman_metric,
    threshold,
)


def _systems():
    """Real Psalms: KJV sources, ASV references; system A outputs the reference
    for two verses in three and the source otherwise, system B copies the source
    with one word in four dropped."""
    srcs, refs = (list(x) for x in psalms())
    rng = random.Random(0)
    a = [r if i % 3 else s for i, (s, r) in enumerate(zip(srcs, refs, strict=True))]
    b = [" ".join(w for w in s.split() if rng.random() > 0.25) for s in srcs]
    return a, b, refs


@pytest.mark.parametrize("name,cls", [("BLEU", BLEU), ("chrF", CHRF)])
def test_one_seed_replicates_are_sacrebleus_paired_bootstrap(name, cls):
    """For one seed per side, every replicate score equals sacreBLEU's paired
    bootstrap (same RNG, same item draws), and so do its mean, interval and
    p-value computed from them."""
    a, b, refs = _systems()
    metric = cls()
    stats_a = metric._extract_corpus_statistics(a, [refs])
    stats_b = metric._extract_corpus_statistics(b, [refs])
    rule = Rule(resamples=400, seed=7)
    m = sacrebleu_metric(name, metric)
    sa, sb = side("a", [np.array(stats_a)]), side("b", [np.array(stats_b)])
    draws = _draw(len(a), rule)
    mine_a = m.resampled(sa.stats[0], draws.items)
    mine_b = m.resampled(sb.stats[0], draws.items)
    # sacreBLEU's own test, baseline b, system a, the same seed
    bl = metric._aggregate_and_compute(stats_b)
    from sacrebleu.significance import Result

    _, res = _paired_bs_test(
        {name: (stats_b, Result(bl.score))},
        "a",
        a,
        [refs],
        {name: metric},
        n_samples=400,
        seed=7,
    )
    theirs = res[name]
    assert theirs.score == pytest.approx(m.score(sa.stats[0]), abs=1e-9)
    mean, ci = estimate_ci(mine_a)
    # sacreBLEU sums the statistics in float32 (chrF's score moves in the 6th
    # significant digit); the draws are the same
    assert mean == pytest.approx(theirs.mean, abs=1e-4)
    assert ci == pytest.approx(theirs.ci, abs=1e-4)
    # the p-value, as sacreBLEU derives it from the replicate differences
    diffs = np.abs(mine_a - mine_b)
    shifted = diffs - diffs.mean()
    observed = abs(theirs.score - bl.score)
    p = (np.sum(shifted > observed) + 1) / (len(shifted) + 1)
    assert p == pytest.approx(theirs.p_value, abs=1e-12)
    # and the test built on them: a is far better than b on these verses
    t = compare(sa, sb, m, rule)
    assert t.diff == pytest.approx(theirs.score - bl.score, abs=1e-9)
    assert t.verdict == HOLDS and t.low > 0
    assert t.a.seeds == t.b.seeds == 1


def test_default_seed_is_sacrebleus():
    assert Rule().seed == int(os.environ.get("SACREBLEU_SEED", "12345"))


def test_metric_closed_forms():
    items = np.array([[1, 2, 3], [0, 1, 1], [2, 2, 2]], dtype=float)
    f1 = f1_metric(scale=1.0)
    # 2 tp / (pred + gold) = 2 * 3 / (5 + 6)
    assert f1.score(items) == pytest.approx(6 / 11)
    assert f1.score(np.zeros((2, 3))) == 0.0
    bpc = bits_per_char_metric()
    assert bpc.score(np.array([[10.0, 4], [6.0, 4]])) == pytest.approx(2.0)
    acc = ratio("accuracy", "higher", 0, 1)
    assert acc.score(np.array([[3.0, 4], [1.0, 4]])) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    pairs = np.round(rng.normal(size=(40, 2)), 1)  # with ties
    rho = spearman_metric().score(pairs)
    assert rho == pytest.approx(sps.spearmanr(pairs[:, 0], pairs[:, 1]).statistic)


def test_resampled_equals_scoring_each_draw():
    rng = np.random.default_rng(1)
    items = rng.integers(0, 5, size=(30, 3)).astype(float)
    idx = rng.integers(0, 30, size=(50, 30))
    for m in (f1_metric(), ratio("r", "higher", 0, 1)):
        fast = m.resampled(items, idx)
        slow = [m.score(items[row]) for row in idx]
        assert fast == pytest.approx(slow, nan_ok=True)
    sp = spearman_metric()
    pairs = rng.normal(size=(30, 2))
    assert sp.resampled(pairs, idx) == pytest.approx(
        [sps.spearmanr(pairs[r, 0], pairs[r, 1]).statistic for r in idx]
    )


def _correct(p: float, n: int, seed: int) -> np.ndarray:
    """Per-item (correct, 1) statistics of a classifier right with prob. p."""
    rng = np.random.default_rng(seed)
    return np.stack([(rng.random(n) < p).astype(float), np.ones(n)], 1)


ACC = ratio("accuracy", "higher", 0, 1)


def test_three_outcomes_on_planted_items():
    rule = Rule(resamples=500)
    n = 400
    good = side("good", [_correct(0.8, n, s) for s in (1, 2)])
    bad = side("bad", [_correct(0.5, n, s) for s in (3, 4)])
    assert compare(good, bad, ACC, rule).verdict == HOLDS
    # a reversed gap: the claim 'bad beats good' does not hold
    assert compare(bad, good, ACC, rule).verdict == FAILS
    # equal models (same item statistics): zero difference, inconclusive
    same = compare(good, side("copy", list(good.stats)), ACC, rule)
    assert same.verdict == INCONCLUSIVE and same.diff == 0.0 and same.needs is None
    # two draws of the same 0.6 classifier: inconclusive
    t = compare(
        side("x", [_correct(0.6, n, 5)]), side("y", [_correct(0.6, n, 6)]), ACC, rule
    )
    assert t.verdict == INCONCLUSIVE and t.low < 0 < t.high


def test_lower_is_better_metrics_orient_the_claim():
    rule = Rule(resamples=300)
    rng = np.random.default_rng(0)
    chars = rng.integers(20, 80, size=200).astype(float)
    low = side("lstm", [np.stack([1.2 * chars + rng.normal(0, 2, 200), chars], 1)])
    high = side("kn", [np.stack([1.4 * chars + rng.normal(0, 2, 200), chars], 1)])
    t = compare(low, high, bits_per_char_metric(), rule)
    assert t.verdict == HOLDS and t.diff < 0 and t.high < 0
    assert compare(high, low, bits_per_char_metric(), rule).verdict == FAILS


def test_few_items_are_inconclusive_and_say_what_they_need():
    """4 dirty items scoring far higher than the clean ones: the interval may
    exclude zero, but 4 items cannot decide; the test says how many would."""
    rule = Rule(resamples=500)
    stats = np.concatenate([_correct(0.95, 4, 0), _correct(0.35, 226, 1)])
    dirty = [True] * 4 + [False] * 226
    t = groups(side("crf", [stats]), dirty, ACC, rule)
    assert (t.n, t.n_other) == (4, 226)
    assert t.verdict == INCONCLUSIVE
    assert t.needs is not None and t.needs >= rule.min_items
    # with enough dirty items the same gap holds
    stats = np.concatenate([_correct(0.95, 60, 0), _correct(0.35, 226, 1)])
    t = groups(side("crf", [stats]), [True] * 60 + [False] * 226, ACC, rule)
    assert t.verdict == HOLDS and t.needs is None


def test_seeds_widen_the_interval():
    """Two seeds far apart give a wider interval than either seed alone: the seed
    spread is part of the test."""
    rule = Rule(resamples=500)
    n = 300
    base = side("base", [_correct(0.5, n, 9)])
    one = compare(side("a", [_correct(0.6, n, 1)]), base, ACC, rule)
    two = compare(
        side("a", [_correct(0.6, n, 1), _correct(0.7, n, 2)]), base, ACC, rule
    )
    assert two.a.seeds == 2
    assert (two.high - two.low) > (one.high - one.low)


def test_identical_seeds_count_once():
    x = _correct(0.7, 50, 0)
    s = side("ppmi-svd", [x, x.copy(), x])
    assert (s.seeds, s.runs) == (1, 3)


def test_threshold_and_equivalence():
    rule = Rule(resamples=500)
    n = 500
    # 3CosAdd without exclusion keeps 10% of the accuracy with it: ratio < 0.5
    rng = np.random.default_rng(3)
    excl = (rng.random(n) < 0.4).astype(float)
    incl = excl * (rng.random(n) < 0.1)
    stats = np.stack([incl, excl], 1)
    kept = ratio("kept share", "lower", 0, 1)
    t = threshold(side("sgns", [stats]), kept, 0.5, rule)
    assert t.verdict == HOLDS and t.high < 0
    # two noisy measurements of the same similarity: close within 0.1
    gold = rng.normal(size=n)
    a = np.stack([gold, gold + rng.normal(0, 0.8, n)], 1)
    b = np.stack([gold, gold + rng.normal(0, 0.8, n)], 1)
    sp = spearman_metric()
    eq = equivalent(side("sgns", [a]), side("ppmi", [b]), sp, rule, margin=0.1)
    assert eq.verdict == HOLDS and eq.level == pytest.approx(0.9)
    assert -0.1 < eq.low and eq.high < 0.1
    # far apart: not close
    c = np.stack([gold, rng.normal(size=n)], 1)
    assert equivalent(side("a", [a]), side("c", [c]), sp, rule, 0.1).verdict == FAILS
    # too few pairs to tell
    small = equivalent(side("a", [a[:30]]), side("b", [b[:30]]), sp, rule, 0.05)
    assert small.verdict == INCONCLUSIVE and small.needs > 30


def test_combine_and_rule_text():
    assert combine([]) == INCONCLUSIVE
    rule = Rule()
    text = rule_text(rule)
    for part in ("1,000 replicates", "95%", "90%", "20 test items", "inconclusive"):
        assert part in text


def test_mismatched_items_are_refused():
    with pytest.raises(ValueError, match="same items"):
        compare(side("a", [np.ones((5, 2))]), side("b", [np.ones((6, 2))]), ACC, Rule())


def test_a_metric_undefined_in_many_replicates_is_inconclusive():
    """2 hits in 400 questions: about 13% of the draws have none, the kept share
    (a 0/0 there) is undefined, and the test does not decide on the rest."""
    hits = np.zeros(400)
    hits[:2] = 1
    stats = np.stack([hits, hits], 1)  # without exclusion keeps every hit
    kept = ratio("kept", "lower", 1, 0)
    t = threshold(side("sgns", [stats]), kept, 0.5, Rule(resamples=400))
    assert t.verdict == INCONCLUSIVE
    assert t.interval() == "+0.50 [interval undefined]"


def test_noninferiority_and_majority():
    """Non-inferiority holds when the worse side of the paired interval stays
    above -margin, fails below it; a majority needs more than half."""
    rule = Rule(resamples=500)
    rng = np.random.default_rng(4)
    n = 2000
    hit = ratio("accuracy %", "higher", 0, 1, scale=100.0)

    def hits(p):
        return side(f"p{p}", [np.stack([rng.random(n) < p, np.ones(n)], 1)])

    a, same, better = hits(0.40), hits(0.40), hits(0.50)
    t = noninferior(a, same, hit, rule, margin=5.0)
    assert t.verdict == HOLDS and t.low > -5.0 and t.kind == "non-inferiority"
    assert "non-inferiority (margin 5)" in t.design()
    assert noninferior(a, better, hit, rule, margin=1.0).verdict == FAILS
    # lower-is-better metrics orient it: a lower error rate is not inferior
    err = ratio("error %", "lower", 0, 1, scale=100.0)
    assert noninferior(a, better, err, rule, margin=1.0).verdict == HOLDS
    assert noninferior(a, same, hit, rule, margin=0.01).verdict == INCONCLUSIVE
    with pytest.raises(ValueError):
        noninferior(a, same, hit, rule, margin=0.0)
    held = noninferior(a, same, hit, rule, margin=5.0)
    failed = noninferior(a, better, hit, rule, margin=1.0)
    unsure = noninferior(a, same, hit, rule, margin=0.01)
    assert majority([held, held, failed]) == HOLDS
    assert majority([held, failed, failed]) == FAILS
    assert majority([held, unsure, failed]) == INCONCLUSIVE
    assert majority([held, unsure]) == INCONCLUSIVE
    assert majority([]) == INCONCLUSIVE
