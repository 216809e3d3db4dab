"""Verdicts with inference: the paired bootstrap over test items, with the
training seeds resampled too, and three outcomes: holds, does not hold,
inconclusive.

Every verdict of the report (the scorecard, the partial-input table, the
contamination rows) is one of the tests below, computed from the per-item
statistics the evaluation stages commit (``items.json.gz`` next to each
``eval.json``). ``rule_text`` states the rule once; the report page and
docs/evaluation.md quote it.

- ``compare``: is side A better than side B on a metric? Paired: every
  replicate draws the test items with replacement, the same draw for both sides
  (Koehn 2004; sacreBLEU's ``paired-bs``, whose item draws this reproduces
  exactly for one seed: tests/test_inference.py). A side trained with several
  seeds also draws its seeds with replacement, and its replicate score is the mean
  over the drawn seeds of the metric on the drawn items (a two-level bootstrap:
  seeds, then items), so the interval holds both sources of variance.
- ``threshold``: is a side's metric beyond a fixed value (3CosAdd keeping less than
  half its accuracy without the exclusion)?
- ``groups``: is a side better on one group of items than on the rest (dirty
  against clean test items)? Each group is resampled on its own.
- ``equivalent``: are two sides within a margin of each other (TOST: the
  1 - 2a interval inside the margin)?

A side's replicates whose item statistics are identical (a deterministic method
run with several seeds) count as one seed. With fewer than ``min_items`` items
(in the smaller group) a test is inconclusive whatever its interval, and says how
many items its effect would need.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as sps

from firth.results import Record

Better = Literal["higher", "lower"]
Kind = Literal["difference", "threshold", "groups", "equivalence", "non-inferiority"]
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
Verdict = Literal["holds", "does not hold", "inconclusive"]


@dataclass(frozen=True)
class Rule:
    """How every test decides (the ``verdicts`` params section)."""

    confidence: float = 0.95  # two-sided level of the intervals
    resamples: int = 1000  # bootstrap replicates
    seed: int = 12345  # the replicates' RNG seed (sacreBLEU's default)
    min_items: int = 20  # fewer items: inconclusive whatever the interval

    @property
    def equivalence_level(self) -> float:
        """TOST at level a uses the 1 - 2a interval (0.90 for a 95% rule)."""
        return 1 - 2 * (1 - self.confidence)


def rule_text(rule: Rule) -> str:
    """The rule every verdict follows, in one paragraph (report page, docs)."""
    pct = f"{100 * rule.confidence:g}%"
    eq = f"{100 * rule.equivalence_level:g}%"
    return (
        f"Every verdict is a test with three outcomes. A paired bootstrap "
        f"({rule.resamples:,} replicates, seed {rule.seed}) draws the test items "
        "with replacement, the same draw for both compared systems, and, for a "
        "system trained with several seeds, draws its seeds with replacement too: "
        "its replicate score is the mean over the drawn seeds of the corpus-level "
        "metric (BLEU and chrF from summed sacreBLEU statistics, bits per character "
        "from summed log-loss and characters, entity F1 from summed entity counts, "
        f"Spearman over the drawn pairs) on the drawn items. A claim holds when "
        f"the {pct} percentile interval of the difference lies entirely on its side "
        "of zero (of a stated threshold, for a claim about one system; dirty "
        "against clean items are drawn within each group), does not hold when "
        "it lies entirely on the other side, and is "
        f"inconclusive otherwise, or whenever fewer than {rule.min_items} test "
        "items decide it (the row then says how many items its effect would need). "
        "A claim that two systems are close is an equivalence test (two one-sided "
        f"tests): it holds when the {eq} interval lies inside the stated margin and "
        "does not hold when it lies entirely outside. A claim that a system is at "
        f"least as good as another is a non-inferiority test: it holds when the {pct} "
        "interval of the difference lies above minus the stated margin and does not "
        "hold when it lies entirely below it. Runs of a deterministic "
        "method with identical outputs count as one seed. Settings and 'best' runs "
        "are chosen on validation data or as seed means, never on test scores."
    )


# -- metrics ------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A corpus-level score computed from per-item statistics (N, K): either from
    their sums (``from_sums``: (R, K) -> (R,), for BLEU, chrF, ratios of counts)
    or from the items themselves (``from_items``: (R, n, K) -> (R,), Spearman)."""

    name: str
    better: Better
    from_sums: Callable[[np.ndarray], np.ndarray] | None = None
    from_items: Callable[[np.ndarray], np.ndarray] | None = None

    def score(self, stats: np.ndarray) -> float:
        """The metric on all items of ``stats`` (N, K)."""
        if self.from_sums is not None:
            return float(self.from_sums(stats.sum(0, keepdims=True))[0])
        return float(self.from_items(stats[None])[0])

    def resampled(self, stats: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """The metric on every replicate: ``idx`` (R, n) indexes the items of
        ``stats`` (N, K)."""
        if self.from_sums is not None:
            return self.from_sums(_counts(idx, len(stats)) @ stats)
        return self.from_items(stats[idx])


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """(R, n) item draws as (R, N) counts of each item."""
    r = idx.shape[0]
    flat = (idx + n * np.arange(r)[:, None]).ravel()
    return np.bincount(flat, minlength=r * n).reshape(r, n).astype(np.float64)


def ratio(name: str, better: Better, num: int, den: int, scale: float = 1.0) -> Metric:
    """scale * sum(stats[:, num]) / sum(stats[:, den]) (accuracy, a share)."""

    def f(sums: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return scale * sums[:, num] / sums[:, den]

    return Metric(name, better, from_sums=f)


def f1_metric(name: str = "entity F1", scale: float = 100.0) -> Metric:
    """Micro F1 from summed (true positives, predicted, gold) counts: 2 tp /
    (pred + gold), what seqeval's micro average computes (0 with no entity)."""

    def f(sums: np.ndarray) -> np.ndarray:
        den = sums[:, 1] + sums[:, 2]
        return scale * np.where(den > 0, 2 * sums[:, 0] / np.maximum(den, 1), 0.0)

    return Metric(name, "higher", from_sums=f)


def bits_per_char_metric() -> Metric:
    """Summed log-loss in bits over summed characters (stats: bits, chars)."""
    return ratio("bits per character", "lower", 0, 1)


def spearman_metric() -> Metric:
    """Spearman's rho between the two statistics (gold, model) of the drawn items
    (ties averaged, as scipy's ``spearmanr``)."""

    def f(items: np.ndarray) -> np.ndarray:
        ranks = sps.rankdata(items, axis=1)  # (R, n, 2)
        x = ranks[..., 0] - ranks[..., 0].mean(1, keepdims=True)
        y = ranks[..., 1] - ranks[..., 1].mean(1, keepdims=True)
        den = np.sqrt((x * x).sum(1) * (y * y).sum(1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, (x * y).sum(1) / den, 0.0)

    return Metric("Spearman", "higher", from_items=f)


def sacrebleu_metric(name: str, metric) -> Metric:
    """A sacreBLEU metric (BLEU, CHRF) from its summed sentence statistics, through
    sacreBLEU's own ``_compute_score_from_stats`` (how its bootstrap rescores)."""

    def f(sums: np.ndarray) -> np.ndarray:
        return np.array(
            [metric._compute_score_from_stats(list(row)).score for row in sums]
        )

    return Metric(name, "higher", from_sums=f)


# -- sides --------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One system's per-item statistics, (S seeds, N items, K statistics); seeds
    with identical statistics are kept once (``side``)."""

    name: str
    stats: np.ndarray
    runs: int  # seeds given, before identical ones were merged

    @property
    def seeds(self) -> int:
        return self.stats.shape[0]

    @property
    def items(self) -> int:
        return self.stats.shape[1]

    def score(self, metric: Metric, idx: np.ndarray | None = None) -> float:
        """The seed mean of ``metric`` on the items ``idx`` (default all)."""
        part = self.stats if idx is None else self.stats[:, idx]
        return float(np.mean([metric.score(s) for s in part]))

    def subset(self, idx: np.ndarray) -> Side:
        return Side(self.name, self.stats[:, idx], self.runs)


def side(name: str, per_seed: Sequence[np.ndarray]) -> Side:
    """A side from each seed's (N, K) statistics; identical seeds merge."""
    if not per_seed:
        raise ValueError(f"{name}: no seeds")
    arrays = [np.asarray(a, dtype=np.float64) for a in per_seed]
    if arrays[0].ndim == 1:
        arrays = [a[:, None] for a in arrays]
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError(f"{name}: seeds have different item statistics shapes")
    distinct: list[np.ndarray] = []
    for a in arrays:
        if not any(np.array_equal(a, d, equal_nan=True) for d in distinct):
            distinct.append(a)
    return Side(name, np.stack(distinct), len(arrays))


# -- results ------------------------------------------------------------------


class Estimate(Record):
    """One compared score: the seed mean on all test items, its interval, and the
    seeds it averages (``runs``: as trained; ``seeds``: distinct)."""

    name: str
    score: float
    low: float
    high: float
    seeds: int
    runs: int


class Test(Record):
    """A test and its outcome. ``diff`` is a - b in the metric's units (for
    ``threshold``, a - the value; for ``groups``, the first group minus the
    rest); ``low``/``high`` its interval at ``level``; ``n`` the items (of the
    first group), ``n_other`` those of the second group; ``needs`` the items an
    inconclusive effect of this size would need (None when it cannot be said)."""

    kind: Kind
    metric: str
    better: Better
    a: Estimate
    b: Estimate
    diff: float
    low: float
    high: float
    level: float
    n: int
    n_other: int | None = None
    margin: float = 0.0
    resamples: int
    verdict: Verdict
    needs: int | None = None

    def interval(self, digits: int = 2, scale: float = 1.0) -> str:
        """'+1.23 [0.45, 2.01]' in the metric's units times ``scale`` ('[interval
        undefined]' where too many replicates were)."""
        d, lo, hi = (scale * x for x in (self.diff, self.low, self.high))
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return f"{d:+.{digits}f} [interval undefined]"
        return f"{d:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"

    def sentence(self, digits: int = 2, scale: float = 1.0) -> str:
        """'0.82 vs 0.75: +0.07 [0.03, 0.11] (holds; paired bootstrap over 300
        items, seeds 2 against 2)'."""
        a, b = scale * self.a.score, scale * self.b.score
        need = f", needs about {self.needs:,} items" if self.needs else ""
        return (
            f"{a:.{digits}f} vs {b:.{digits}f}: {self.interval(digits, scale)} "
            f"({self.verdict}{need}; {self.design()})"
        )

    def design(self) -> str:
        """How the test was made, e.g. 'paired bootstrap over 300 items, seeds 2
        against 1'."""
        seeds = f"seeds {self.a.seeds} against {self.b.seeds}"
        if self.kind == "groups":
            return (
                f"bootstrap within each group ({self.n} against {self.n_other} "
                f"items), {self.a.seeds} seed(s)"
            )
        if self.kind == "threshold":
            return f"bootstrap over {self.n} items, {self.a.seeds} seed(s)"
        what = {
            "equivalence": "equivalence (TOST)",
            "non-inferiority": f"non-inferiority (margin {self.margin:g}), paired",
        }.get(self.kind, "paired")
        return f"{what} bootstrap over {self.n} items, {seeds}"


@dataclass
class _Draws:
    items: np.ndarray  # (R, n)
    rng: np.random.Generator


def _draw(n: int, rule: Rule, rng: np.random.Generator | None = None) -> _Draws:
    """Item draws as sacreBLEU's paired bootstrap makes them (``rng.choice``)."""
    rng = rng or np.random.default_rng(rule.seed)
    return _Draws(rng.choice(n, size=(rule.resamples, n), replace=True), rng)


def _replicates(
    s: Side, metric: Metric, idx: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A side's replicate scores (R,): per seed on the drawn items, then the mean
    over seeds drawn with replacement."""
    per_seed = np.stack([metric.resampled(x, idx) for x in s.stats])  # (S, R)
    if s.seeds == 1:
        return per_seed[0]
    r = idx.shape[0]
    drawn = rng.integers(s.seeds, size=(r, s.seeds))  # (R, S)
    return per_seed[drawn, np.arange(r)[:, None]].mean(1)


UNDEFINED_SHARE = 0.05  # replicates whose metric is undefined (0/0) allowed


def _interval(x: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of the replicates; undefined (NaN) when more than
    UNDEFINED_SHARE of them are (a ratio whose denominator some draws leave at 0,
    e.g. an accuracy of 2 hits in 795 questions), so that the test is
    inconclusive rather than decided on the draws that happen to be defined."""
    a = (1 - level) / 2
    finite = x[np.isfinite(x)]
    if not len(finite) or len(finite) < (1 - UNDEFINED_SHARE) * len(x):
        return math.nan, math.nan
    lo, hi = np.quantile(finite, [a, 1 - a])
    return float(lo), float(hi)


def _estimate(s: Side, metric: Metric, reps: np.ndarray, level: float) -> Estimate:
    lo, hi = _interval(reps, level)
    return Estimate(
        name=s.name,
        score=s.score(metric),
        low=lo,
        high=hi,
        seeds=s.seeds,
        runs=s.runs,
    )


def _needs(n: int, half: float, effect: float, rule: Rule) -> int | None:
    """Items at which an interval of half-width ``half`` (now, over ``n`` items)
    would shrink to ``effect`` (half-widths scale as 1/sqrt(n))."""
    if not (effect > 0 and math.isfinite(half) and half > 0):
        return None
    return max(rule.min_items, math.ceil(n * (half / effect) ** 2))


def _decide(
    oriented: tuple[float, float, float], n: int, rule: Rule, margin: float = 0.0
) -> tuple[str, int | None]:
    """The verdict of a one-directional claim from the oriented difference (its
    point estimate and interval; positive = the claim's direction)."""
    d, lo, hi = oriented
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return INCONCLUSIVE, None
    half = (hi - lo) / 2
    if n >= rule.min_items:
        if lo > margin:
            return HOLDS, None
        if hi < margin:
            return FAILS, None
    return INCONCLUSIVE, _needs(n, half, abs(d - margin), rule)


def _oriented(better: Better, d: float, lo: float, hi: float):
    return (d, lo, hi) if better == "higher" else (-d, -hi, -lo)


def _result(kind: Kind, metric: Metric, a, b, d, interval, n, rule, decided, **kw):
    """A Test from its parts (``decided``: verdict and needs; ``interval``: low,
    high; ``kw``: level, n_other, margin where they differ from the default)."""
    return Test(
        kind=kind,
        metric=metric.name,
        better=metric.better,
        a=a,
        b=b,
        diff=d,
        low=interval[0],
        high=interval[1],
        level=kw.pop("level", rule.confidence),
        n=n,
        resamples=rule.resamples,
        verdict=decided[0],
        needs=decided[1],
        **kw,
    )


def compare(a: Side, b: Side, metric: Metric, rule: Rule) -> Test:
    """Is ``a`` better than ``b`` on ``metric`` (paired over the same items)?"""
    if a.items != b.items:
        raise ValueError(
            f"{a.name} has {a.items} test items and {b.name} {b.items}: a paired "
            "test needs the same items"
        )
    draws = _draw(a.items, rule)
    ra = _replicates(a, metric, draws.items, draws.rng)
    rb = _replicates(b, metric, draws.items, draws.rng)
    lo, hi = _interval(ra - rb, rule.confidence)
    d = a.score(metric) - b.score(metric)
    decided = _decide(_oriented(metric.better, d, lo, hi), a.items, rule)
    ea = _estimate(a, metric, ra, rule.confidence)
    eb = _estimate(b, metric, rb, rule.confidence)
    return _result("difference", metric, ea, eb, d, (lo, hi), a.items, rule, decided)


def threshold(a: Side, metric: Metric, value: float, rule: Rule) -> Test:
    """Is ``a``'s metric beyond ``value`` in the metric's better direction (below
    it for a 'lower' metric)?"""
    draws = _draw(a.items, rule)
    ra = _replicates(a, metric, draws.items, draws.rng)
    lo, hi = _interval(ra - value, rule.confidence)
    d = a.score(metric) - value
    decided = _decide(_oriented(metric.better, d, lo, hi), a.items, rule)
    ea = _estimate(a, metric, ra, rule.confidence)
    fixed = Estimate(
        name="threshold", score=value, low=value, high=value, seeds=0, runs=0
    )
    return _result("threshold", metric, ea, fixed, d, (lo, hi), a.items, rule, decided)


def groups(a: Side, first: Sequence[bool], metric: Metric, rule: Rule) -> Test:
    """Does ``a`` score better on the items flagged in ``first`` than on the
    others? Each group is resampled on its own; seeds are drawn once per
    replicate for both groups (the same models)."""
    mask = np.asarray(first, dtype=bool)
    if mask.shape != (a.items,):
        raise ValueError(f"{a.name}: {len(mask)} flags for {a.items} items")
    g1, g2 = np.flatnonzero(mask), np.flatnonzero(~mask)
    s1, s2 = a.subset(g1), a.subset(g2)
    rng = np.random.default_rng(rule.seed)
    shape = (rule.resamples,)
    i1 = rng.choice(len(g1), size=(*shape, len(g1))) if len(g1) else None
    i2 = rng.choice(len(g2), size=(*shape, len(g2))) if len(g2) else None
    if i1 is None or i2 is None:
        nan = np.full(rule.resamples, np.nan)
        r1 = r2 = nan
    else:
        seeds = (
            rng.integers(a.seeds, size=(rule.resamples, a.seeds))
            if a.seeds > 1
            else np.zeros((rule.resamples, 1), dtype=int)
        )
        cols = np.arange(rule.resamples)[:, None]
        p1 = np.stack([metric.resampled(x, i1) for x in s1.stats])
        p2 = np.stack([metric.resampled(x, i2) for x in s2.stats])
        r1, r2 = p1[seeds, cols].mean(1), p2[seeds, cols].mean(1)
    lo, hi = _interval(r1 - r2, rule.confidence)
    d = (s1.score(metric) if len(g1) else math.nan) - (
        s2.score(metric) if len(g2) else math.nan
    )
    small = min(len(g1), len(g2))
    decided = _decide(_oriented(metric.better, d, lo, hi), small, rule)
    e1 = _estimate(s1, metric, r1, rule.confidence)
    e2 = _estimate(s2, metric, r2, rule.confidence)
    return _result(
        "groups", metric, e1, e2, d, (lo, hi), len(g1), rule, decided, n_other=len(g2)
    )


def equivalent(a: Side, b: Side, metric: Metric, rule: Rule, margin: float) -> Test:
    """Are ``a`` and ``b`` within ``margin`` of each other (two one-sided tests:
    the 1 - 2a interval of the paired difference inside (-margin, margin))?"""
    if margin <= 0:
        raise ValueError("an equivalence test needs a positive margin")
    if a.items != b.items:
        raise ValueError(f"{a.name} and {b.name} are not scored on the same items")
    level = rule.equivalence_level
    draws = _draw(a.items, rule)
    ra = _replicates(a, metric, draws.items, draws.rng)
    rb = _replicates(b, metric, draws.items, draws.rng)
    lo, hi = _interval(ra - rb, level)
    d = a.score(metric) - b.score(metric)
    needs = None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        verdict = INCONCLUSIVE
    elif a.items >= rule.min_items and -margin < lo and hi < margin:
        verdict = HOLDS
    elif a.items >= rule.min_items and (lo > margin or hi < -margin):
        verdict = FAILS
    else:
        verdict = INCONCLUSIVE
        needs = _needs(a.items, (hi - lo) / 2, abs(margin - abs(d)), rule)
    ea, eb = _estimate(a, metric, ra, level), _estimate(b, metric, rb, level)
    decided = (verdict, needs)
    return _result(
        "equivalence",
        metric,
        ea,
        eb,
        d,
        (lo, hi),
        a.items,
        rule,
        decided,
        level=level,
        margin=margin,
    )


def noninferior(a: Side, b: Side, metric: Metric, rule: Rule, margin: float) -> Test:
    """Is ``a`` at least as good as ``b``, within ``margin`` (paired over the same
    items)? Holds when the interval of the difference, oriented to the metric's
    better direction, lies above -margin; does not hold when it lies below."""
    if margin <= 0:
        raise ValueError("a non-inferiority test needs a positive margin")
    if a.items != b.items:
        raise ValueError(f"{a.name} and {b.name} are not scored on the same items")
    draws = _draw(a.items, rule)
    ra = _replicates(a, metric, draws.items, draws.rng)
    rb = _replicates(b, metric, draws.items, draws.rng)
    lo, hi = _interval(ra - rb, rule.confidence)
    d = a.score(metric) - b.score(metric)
    oriented = _oriented(metric.better, d, lo, hi)
    decided = _decide(oriented, a.items, rule, margin=-margin)
    ea = _estimate(a, metric, ra, rule.confidence)
    eb = _estimate(b, metric, rb, rule.confidence)
    return _result(
        "non-inferiority", metric, ea, eb, d, (lo, hi), a.items, rule, decided,
        margin=margin,
    )  # fmt: skip


def majority(tests: Sequence[Test]) -> str:
    """The verdict of a claim about most of several tests: holds when more than
    half hold, does not hold when so many do not hold that no majority can,
    inconclusive otherwise."""
    n = len(tests)
    need = n // 2 + 1
    held = sum(t.verdict == HOLDS for t in tests)
    failed = sum(t.verdict == FAILS for t in tests)
    if not n:
        return INCONCLUSIVE
    if held >= need:
        return HOLDS
    if failed > n - need:
        return FAILS
    return INCONCLUSIVE


def combine(tests: Sequence[Test]) -> str:
    """The verdict of a claim made of several tests that must all hold: holds if
    every one holds, does not hold if any does not, inconclusive otherwise."""
    return combine_verdicts([t.verdict for t in tests])


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """:func:`combine` over verdicts already drawn (a test's, a majority's)."""
    if not verdicts:
        return INCONCLUSIVE
    if FAILS in verdicts:
        return FAILS
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    return INCONCLUSIVE
