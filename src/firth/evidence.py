"""The committed evidence behind the report's verdicts: each task's evaluations
(eval.json) and per-item statistics (items.json.gz), grouped into systems (one
model trained with several seeds) and turned into firth.inference sides.

Nothing here chooses by a test score: a system is every seed of a model; where a
task has a choice to make (the tagger's word-embedding initialisation), it is
made on the validation scores its training recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from firth.bias.results import BiasEval, BiasItems
from firth.embeddings.results import EmbeddingEval, EmbeddingItems, Word2VecTrain
from firth.inference import (
    Metric,
    Rule,
    Side,
    bits_per_char_metric,
    f1_metric,
    ratio,
    sacrebleu_metric,
    side,
)
from firth.lm.results import LmEval, LmItems
from firth.nli.results import NliEval, NliItems
from firth.nmt.results import AttentionEval, AttentionItems, NmtEval, NmtItems
from firth.probe.results import ProbeEval, ProbeItems
from firth.tagging.results import TaggerEval, TaggerItems, TaggerTrain


class NoEvidence(Exception):
    """What a verdict needs was not produced (a run, or its items.json.gz)."""


BLEU_METRIC = sacrebleu_metric("BLEU", BLEU())
CHRF_METRIC = sacrebleu_metric("chrF", CHRF())
BPC = bits_per_char_metric()
# tagging statistics columns: tp, pred, gold, invalid, sentence, correct, tokens
F1 = f1_metric()
INVALID = ratio("invalid-BIO sentences %", "lower", 3, 4, scale=100.0)
ACCURACY = ratio("token accuracy %", "higher", 5, 6, scale=100.0)
HIT = ratio("accuracy %", "higher", 0, 1, scale=100.0)  # (right, 1) per item


@dataclass
class Evidence:
    """Every task's evaluations and item statistics (by run name), the tagger
    runs' training records (their validation scores) and the rule."""

    rule: Rule = field(default_factory=Rule)
    margin: float = 0.05  # the equivalence margin (Spearman)
    accuracy_margin: float = 1.0  # the non-inferiority margin of accuracies (points)
    emb: dict[str, EmbeddingEval] = field(default_factory=dict)
    emb_items: dict[str, EmbeddingItems] = field(default_factory=dict)
    emb_train: dict[str, list[Word2VecTrain]] = field(default_factory=dict)
    bias: dict[str, BiasEval] = field(default_factory=dict)
    bias_items: dict[str, BiasItems] = field(default_factory=dict)
    lm: dict[str, LmEval] = field(default_factory=dict)
    lm_items: dict[str, LmItems] = field(default_factory=dict)
    nmt: dict[str, NmtEval] = field(default_factory=dict)
    nmt_items: dict[str, NmtItems] = field(default_factory=dict)
    attention: dict[str, AttentionEval] = field(default_factory=dict)
    attention_items: dict[str, AttentionItems] = field(default_factory=dict)
    probe: dict[str, ProbeEval] = field(default_factory=dict)
    probe_items: dict[str, ProbeItems] = field(default_factory=dict)
    tagging: dict[str, TaggerEval] = field(default_factory=dict)
    tag_items: dict[str, TaggerItems] = field(default_factory=dict)
    tag_train: dict[str, list[TaggerTrain]] = field(default_factory=dict)
    nli: dict[str, NliEval] = field(default_factory=dict)
    nli_items: dict[str, NliItems] = field(default_factory=dict)


def _items(store: dict, run: str, stage: str):
    if run not in store:
        raise NoEvidence(f"no per-item statistics of {run} (rerun {stage}@{run})")
    return store[run]


def _same_test(named: Iterable[tuple[str, str | None]]) -> None:
    """Every run must have been scored on the same test split."""
    seen = {}
    for run, sha in named:
        seen.setdefault(sha, run)
    if len(seen) > 1:
        runs = " and ".join(seen.values())
        raise NoEvidence(f"{runs} were scored on different test splits")


# -- systems: a model and its seeds -------------------------------------------

SEED_SUFFIX = re.compile(r"-seed\d+$")


def base_name(run: str) -> str:
    """A run's name without its '-seed<N>' suffix."""
    return SEED_SUFFIX.sub("", run)


def systems(runs: dict[str, tuple]) -> dict[str, list[str]]:
    """System name -> its runs, for runs keyed by everything but their seed: the
    system is named after its first run (the one without a seed suffix if any)."""
    groups: dict[tuple, list[str]] = {}
    for run, key in runs.items():
        groups.setdefault(key, []).append(run)
    out = {}
    for members in groups.values():
        members.sort(key=lambda r: (r != base_name(r), r))
        out[base_name(members[0])] = members
    return out


def label(name: str, s: Side) -> str:
    """'lstm (2 seeds)', 'kn5 (deterministic, 1 of 2 runs)' or 'copy-source'."""
    if s.runs > s.seeds:
        return f"{name} ({s.seeds} distinct of {s.runs} runs)"
    return f"{name} ({s.seeds} seeds)" if s.seeds > 1 else name


# -- bias in word vectors -------------------------------------------------------


def weat_abs_d_metric(tests: int) -> Metric:
    """The mean over ``tests`` WEATs of |d| (Caliskan's effect size, sample sd)
    from item statistics (test index, in X, association s(w, A, B)): each test's d
    on the drawn target words; a test whose draw lacks X or Y words is left out of
    that replicate's mean."""

    def f(items: np.ndarray) -> np.ndarray:
        t, in_x, s = items[..., 0], items[..., 1] > 0.5, items[..., 2]  # (R, n)
        ds = []
        with np.errstate(invalid="ignore", divide="ignore"):
            for k in range(tests):
                m = t == k
                mx, my = m & in_x, m & ~in_x
                n, nx, ny = m.sum(1), mx.sum(1), my.sum(1)
                mean = (s * m).sum(1) / n
                var = (((s - mean[:, None]) ** 2) * m).sum(1) / (n - 1)
                d = ((s * mx).sum(1) / nx - (s * my).sum(1) / ny) / np.sqrt(var)
                ds.append(np.where((nx > 0) & (ny > 0) & (var > 0), np.abs(d), np.nan))
            return np.nanmean(np.stack(ds), axis=0)

    return Metric("mean |WEAT d|", "lower", from_items=f)


def weat_sides(ev: Evidence, method: str) -> tuple[Side, Side, int]:
    """A method's gender-WEAT target words after and before hard debiasing (item
    statistics: test, in X, association), and how many tests they span."""
    items = _items(ev.bias_items, method, "evaluate-bias")
    w = items.weat
    if not w.word:
        raise NoEvidence(f"{method}: no gender WEAT ran on its vocabulary")
    base = np.stack([np.asarray(w.test, float), np.asarray(w.in_x, float)], 1)

    def per_seed(values: dict[str, list[float]]) -> list[np.ndarray]:
        return [np.column_stack([base, np.asarray(v)]) for v in values.values()]

    after = side(f"{method} debiased", per_seed(w.after))
    before = side(f"{method} original", per_seed(w.before))
    return after, before, len(items.gender_tests)


def recover_side(ev: Evidence, method: str, check: str) -> Side:
    """Each seed's 0/1 recovery of the most biased words' original label from the
    debiased vectors by ``check`` (kmeans or svm); seeds pick their own words, so
    items are paired by position only (the threshold test needs no pairing)."""
    items = _items(ev.bias_items, method, "evaluate-bias")
    per_seed = [
        np.column_stack([np.asarray(getattr(r, check), float), np.ones(len(r.words))])
        for r in items.recover.values()
    ]
    return side(f"{method} debiased, {check}", per_seed)


# -- probes ------------------------------------------------------------------

# probe statistics columns: task correct, control correct, 1
SELECTIVITY = Metric(
    "selectivity (points)",
    "higher",
    from_sums=lambda s: 100.0 * (s[:, 0] - s[:, 1]) / s[:, 2],
)
PROBE_ACCURACY = ratio("POS accuracy %", "higher", 0, 2, scale=100.0)


def probe_runs(ev: Evidence, family: str) -> list[str]:
    """The probed LM runs of ``family``."""
    return [n for n, e in ev.probe.items() if e.kind == "lm" and e.family == family]


def probe_side(
    ev: Evidence, runs: list[str], *, model: str, probe: str, layer: int | None = None
) -> Side:
    """Per test token (task correct, control correct, 1) of ``probe`` on ``layer``
    (None: each run's top layer) of the ``model`` (trained | untrained)
    representations of ``runs``; their seeds and the probe seeds are the side's
    seeds."""
    per_seed = []
    for run in runs:
        items = _items(ev.probe_items, run, "probe-lm")
        top = ev.probe[run].layers - 1 if layer is None else layer
        for key, task in items.task.items():
            m, _seed, lay, kind, _ps = key.split("|")
            if m == model and int(lay) == top and kind == probe:
                t, c = np.asarray(task), np.asarray(items.control[key])
                per_seed.append(np.stack([t, c, np.ones_like(t)], 1))
    if not per_seed:
        raise NoEvidence(f"no {probe} probe of the {model} {', '.join(runs)}")
    _same_test((i.name, i.test_sha256) for i in (ev.probe_items[r] for r in runs))
    return side(f"{'+'.join(runs)} {model}, {probe}", per_seed)


# -- translation ---------------------------------------------------------------


def nmt_systems(nmt: dict[str, NmtEval]) -> dict[str, list[str]]:
    """Runs of the same model and switches (seeds apart) as one system."""
    return systems(
        {r: (e.model, e.pointer, e.coverage, e.coverage_loss) for r, e in nmt.items()}
    )


def nmt_side(ev: Evidence, name: str, runs: list[str], metric: str) -> Side:
    """A translation system's per-verse BLEU or chrF statistics over its seeds."""
    items = [_items(ev.nmt_items, r, "evaluate-nmt") for r in runs]
    _same_test((i.run, i.test_sha256) for i in items)
    return side(name, [np.asarray(getattr(i, metric)) for i in items])


def nmt_sides(ev: Evidence, a: list[str], b: list[str], metric: str, names):
    """Two translation systems' sides, checked to share their test verses."""
    items = [_items(ev.nmt_items, r, "evaluate-nmt") for r in (*a, *b)]
    _same_test((i.run, i.test_sha256) for i in items)
    return nmt_side(ev, names[0], a, metric), nmt_side(ev, names[1], b, metric)


def attention_sides(
    ev: Evidence, name: str, runs: list[str], kind: str, metric: str
) -> tuple[Side, Side]:
    """A system's greedy BLEU or chrF statistics per verse over its seeds, without
    and with the attention intervention ``kind``."""
    items = [_items(ev.attention_items, r, "evaluate-attention") for r in runs]
    _same_test((i.run, i.test_sha256) for i in items)
    for i in items:
        if kind not in getattr(i, metric):
            raise NoEvidence(f"{i.run}: no {kind} intervention in its items")
    orig = side(name, [np.asarray(getattr(i, metric)["original"]) for i in items])
    edit = side(
        f"{name}, {kind}", [np.asarray(getattr(i, metric)[kind]) for i in items]
    )
    return orig, edit


def nmt_dirty(ev: Evidence, run: str) -> list[bool]:
    return [bool(d) for d in _items(ev.nmt_items, run, "evaluate-nmt").dirty]


# -- language models -----------------------------------------------------------


def lm_systems(lm: dict[str, LmEval]) -> dict[str, list[str]]:
    """Runs of the same family as one system (its seeds)."""
    return systems({r: (e.family,) for r, e in lm.items()})


def lm_side(ev: Evidence, name: str, runs: list[str], *, unigram=False) -> Side:
    """Per test line (bits, characters) of a family's seeds (or of the add-one
    unigram baseline of their vocabulary)."""
    items = [_items(ev.lm_items, r, "evaluate-lm") for r in runs]
    _same_test((i.run, i.test_sha256) for i in items)
    key = "unigram_bits" if unigram else "bits"
    return side(name, [np.stack([getattr(i, key), i.chars], 1) for i in items])


def lm_dirty(ev: Evidence, run: str) -> list[bool]:
    return [bool(d) for d in _items(ev.lm_items, run, "evaluate-lm").dirty]


# -- tagging -------------------------------------------------------------------


def chosen_init(ev: Evidence, run: str) -> str:
    """The run's word-embedding initialisation with the best mean validation score
    over its seeds (train.json), never its test score."""
    e = ev.tagging[run]
    trains = ev.tag_train.get(run) or []
    valid: dict[str, list[float]] = {}
    for t in trains:
        for m in t.models:
            valid.setdefault(m.init, []).append(m.best_valid_score)
    if not all(i in valid for i in e.inits):
        raise NoEvidence(f"{run}: no validation scores to choose an initialisation")
    return max(e.inits, key=lambda i: (float(np.mean(valid[i])), -e.inits.index(i)))


def tag_columns(
    *, tokens, correct, gold=None, tp=None, pred=None, invalid=None
) -> np.ndarray:
    """The per-sentence columns the tagging metrics read (n, 7): tp, pred, gold,
    invalid, sentence, correct, tokens. The entity counts (tp, pred, gold,
    invalid) are zero where the data have no entities (accuracy only)."""
    n = len(tokens)
    zero = [0] * n
    return np.stack(
        [tp or zero, pred or zero, gold or zero, invalid or zero, [1] * n, correct,
         tokens],
        1,
    ).astype(np.float64)  # fmt: skip


def _tag_stats(items: TaggerItems, stats) -> np.ndarray:
    return tag_columns(
        tokens=items.tokens,
        correct=stats.correct,
        gold=items.gold,
        tp=stats.tp,
        pred=stats.pred,
        invalid=stats.invalid,
    )


def tag_side(ev: Evidence, run: str, init: str, *, constrained=False) -> Side:
    """A tagger run's per-sentence statistics over its seeds, one initialisation
    (``constrained``: the same models decoded under the BIO constraints)."""
    items = _items(ev.tag_items, run, "evaluate-tagger")
    models = items.constrained if constrained else items.models
    per_seed = [_tag_stats(items, m) for m in models if m.init == init]
    if not per_seed:
        raise NoEvidence(f"{run}: no {init} models in its items")
    return side(run, per_seed)


def tag_baseline(ev: Evidence, run: str, name: str) -> Side:
    items = _items(ev.tag_items, run, "evaluate-tagger")
    return side(name, [_tag_stats(items, items.baselines[name])])


def tag_metric(e: TaggerEval) -> Metric:
    return F1 if e.bio else ACCURACY


def tag_dirty(ev: Evidence, run: str) -> list[bool]:
    return [bool(d) for d in _items(ev.tag_items, run, "evaluate-tagger").dirty]


# -- word vectors --------------------------------------------------------------


def similarity_sides(
    ev: Evidence, methods: list[str], dataset: str
) -> tuple[list[Side], int]:
    """Each method's (human score, cosine) per test-half pair of ``dataset`` that
    every seed of every method covers, and how many pairs the half has."""
    sims = []
    for m in methods:
        items = _items(ev.emb_items, m, "evaluate-embeddings")
        if dataset not in items.similarity:
            raise NoEvidence(f"{m}: no {dataset} pairs in its items")
        sims.append(items.similarity[dataset])
    test = np.asarray(sims[0].test, dtype=bool)
    keep = test.copy()
    for s in sims:
        for cos in s.cosine.values():
            keep &= np.array([c is not None for c in cos])
    gold = np.asarray(sims[0].gold, dtype=np.float64)[keep]
    sides = []
    for m, s in zip(methods, sims, strict=True):
        per_seed = [
            np.stack([gold, np.asarray(cos, dtype=object)[keep].astype(float)], 1)
            for cos in s.cosine.values()
        ]
        sides.append(side(m, per_seed))
    return sides, int(test.sum())


def analogy_side(ev: Evidence, method: str, dataset: str, *keys: str) -> Side:
    """A method's 0/1 answers per covered question, one column per ``keys``
    (3cosadd, 3cosadd_incl, 3cosmul, only_b), over its seeds."""
    items = _items(ev.emb_items, method, "evaluate-embeddings")
    if dataset not in items.analogy:
        raise NoEvidence(f"{method}: no {dataset} questions in its items")
    a = items.analogy[dataset]
    per_seed = [np.stack([h[k] for k in keys], 1) for h in a.hits.values()]
    if not per_seed or not len(per_seed[0]):
        raise NoEvidence(f"{method}: no {dataset} question is covered")
    return side(method, per_seed)


# word2vec's loop: (kept tokens, seconds) per block of an epoch, in thousands of
# kept tokens per second (firth.embeddings.word2vec)
KILO_WORDS = ratio("thousand kept words/s", "higher", 0, 1, scale=1e-3)


def speed_sides(ev: Evidence, a: str, b: str) -> tuple[Side, Side]:
    """Two w2v methods' timed blocks, paired: the same seeds cut each epoch into
    the same blocks of kept tokens (firth.embeddings.word2vec)."""
    runs = []
    for m in (a, b):
        trains = ev.emb_train.get(m, [])
        if not trains:
            raise NoEvidence(f"no train.json of {m} (rerun train-embeddings-{m})")
        runs.append({t.seed: t for t in trains})
    seeds = sorted(set(runs[0]) & set(runs[1]))
    if not seeds:
        raise NoEvidence(f"{a} and {b} share no seed")
    sides = []
    for m, by_seed in zip((a, b), runs, strict=True):
        per_seed = [
            np.array([[b.kept_tokens, b.seconds] for b in by_seed[s].blocks])
            for s in seeds
        ]
        sides.append(side(m, per_seed))
    for s in seeds:
        kept = [[b.kept_tokens for b in r[s].blocks] for r in runs]
        if kept[0] != kept[1]:
            raise NoEvidence(f"{a} and {b} (seed {s}) trained on different blocks")
    return sides[0], sides[1]


def hit_side(ev: Evidence, method: str, dataset: str, key: str, name: str) -> Side:
    """(right, 1) per covered question: accuracy for ``HIT``."""
    s = analogy_side(ev, method, dataset, key)
    ones = np.ones_like(s.stats[..., :1])
    return Side(name, np.concatenate([s.stats, ones], -1), s.runs)


# -- natural language inference ------------------------------------------------


def nli_side(ev: Evidence, run: str, *, majority: bool = False) -> Side:
    items = _items(ev.nli_items, run, "evaluate-nli")
    rows = [items.majority] if majority else list(items.correct.values())
    return side(run, [np.stack([r, [1] * len(r)], 1) for r in rows])
