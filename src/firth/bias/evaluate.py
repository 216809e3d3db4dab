"""Bias in one method's word vectors (firth.bias): every configured WEAT, the
gender direction, hard debiasing, the WEATs again on the debiased vectors, and
Gonen and Goldberg's two recoverability checks, on every seed's vectors."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from firth.bias.config import EvaluateBias
from firth.bias.debias import (
    debiased_space,
    kmeans_correct,
    most_biased,
    svm_correct,
)
from firth.bias.results import (
    BiasEval,
    BiasItems,
    RecoverItems,
    Recovery,
    SeedBias,
    WeatItems,
    WeatScore,
)
from firth.bias.weat import WeatResult, weat
from firth.bias.wordlists import (
    DEFINITIONAL_PAIRS,
    EQUALIZE_PAIRS,
    GENDER_SPECIFIC,
    WEAT,
)
from firth.embeddings.vectors import load_word2vec

log = logging.getLogger(__name__)

WEAT_COLUMNS = ["seed", "test", "ran", "effect_size", "effect_size_debiased", "p"]


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), digits)


def _weats(unit, index, cfg: EvaluateBias) -> dict[str, WeatResult]:
    return {
        key: weat(
            WEAT[key],
            unit,
            index,
            min_words=cfg.min_words,
            permutations=cfg.permutations,
            seed=cfg.seed,
        )
        for key in cfg.tests
    }


def _mean_abs(results: list[WeatResult]) -> float | None:
    ds = [abs(r.effect_size) for r in results if r.ran and r.effect_size is not None]
    ds = [d for d in ds if not math.isnan(d)]
    return float(np.mean(ds)) if ds else None


def evaluate_seed(path: Path, cfg: EvaluateBias):
    """One seed's vectors (word2vec text): its SeedBias, WEAT scores, the gender
    WEATs' per-word associations and the recoverability items."""
    emb = load_word2vec(path)
    space = debiased_space(emb.words, emb.matrix)
    words, index, unit = space.words, space.index, space.unit
    direction, debiased, done = space.direction, space.debiased, space.done
    g = direction.vector
    before, after = _weats(unit, index, cfg), _weats(debiased, index, cfg)
    scores = [
        WeatScore(
            test=k,
            ran=b.ran,
            coverage=b.coverage,
            missing=b.missing,
            effect_size=_r(b.effect_size) if b.ran else None,
            p_value=_r(b.p_value) if b.ran else None,
            effect_size_debiased=_r(after[k].effect_size) if b.ran else None,
            p_value_debiased=_r(after[k].p_value) if b.ran else None,
            exact=b.exact,
        )
        for k, b in before.items()
    ]
    gender = [k for k in cfg.tests if WEAT[k].gender and before[k].ran]
    pair_words = {w.lower() for p in (*DEFINITIONAL_PAIRS, *EQUALIZE_PAIRS) for w in p}
    exclude = {w.lower() for w in GENDER_SPECIFIC} | pair_words
    biased = most_biased(
        unit,
        words,
        g,
        n=cfg.recover_words,
        restrict=cfg.recover_restrict,
        exclude=exclude,
    )
    checks = {}
    for name, x in (("original", unit), ("debiased", debiased)):
        rows = x[biased.rows]
        checks[name] = (
            kmeans_correct(rows, biased.male, seed=cfg.seed),
            svm_correct(rows, biased.male, folds=cfg.folds, seed=cfg.seed),
        )
    record = SeedBias(
        direction_explained=[round(float(v), 6) for v in direction.explained],
        definitional_pairs=len(direction.pairs),
        **done,
        gender_weat_abs_d=_r(_mean_abs([before[k] for k in gender])),
        gender_weat_abs_d_debiased=_r(_mean_abs([after[k] for k in gender])),
        recover_words=len(biased.words) // 2,
        original=Recovery(
            kmeans=_r(checks["original"][0].mean()),
            svm=_r(checks["original"][1].mean()),
        ),
        debiased=Recovery(
            kmeans=_r(checks["debiased"][0].mean()),
            svm=_r(checks["debiased"][1].mean()),
        ),
    )
    recover = RecoverItems(
        words=biased.words,
        male=[int(m) for m in biased.male],
        kmeans=[int(v) for v in checks["debiased"][0]],
        svm=[int(v) for v in checks["debiased"][1]],
        kmeans_original=[int(v) for v in checks["original"][0]],
        svm_original=[int(v) for v in checks["original"][1]],
    )
    return record, scores, gender, (before, after), recover


def evaluate_method(
    folder: Path, method: str, seeds: list[int], cfg: EvaluateBias
) -> tuple[BiasEval, BiasItems, list[dict]]:
    """Every seed of ``method`` under ``folder``/seed-<seed>/vectors.txt: the
    eval record, the items and the rows of weat.csv."""
    runs, weats, recover, rows = {}, {}, {}, []
    word_items = None
    gender_tests: list[str] | None = None
    for seed in seeds:
        path = folder / f"seed-{seed}" / "vectors.txt"
        log.info("%s seed %d: WEAT, hard debiasing, recoverability", method, seed)
        record, scores, gender, (before, after), rec = evaluate_seed(path, cfg)
        if gender_tests is None:
            gender_tests = gender
            word_items = {"test": [], "word": [], "in_x": [], "before": {}, "after": {}}
            for t, key in enumerate(gender):
                b = before[key]
                word_items["test"] += [t] * (len(b.x_words) + len(b.y_words))
                word_items["word"] += [*b.x_words, *b.y_words]
                word_items["in_x"] += [1] * len(b.x_words) + [0] * len(b.y_words)
        elif gender != gender_tests:
            raise ValueError(
                f"{method}: seed {seed} covers gender tests {gender}, the first seed "
                f"{gender_tests} (one vocabulary per method was expected)"
            )
        word_items["before"][str(seed)] = [
            round(v, 6) for k in gender for v in (*before[k].s_x, *before[k].s_y)
        ]
        word_items["after"][str(seed)] = [
            round(v, 6) for k in gender for v in (*after[k].s_x, *after[k].s_y)
        ]
        runs[seed], weats[seed], recover[str(seed)] = record, scores, rec
        for s in scores:  # in WEAT_COLUMNS' order
            rows.append(
                [
                    seed,
                    s.test,
                    int(s.ran),
                    s.effect_size,
                    s.effect_size_debiased,
                    s.p_value,
                ]
            )
    result = BiasEval.of(method, gender_tests or [], runs, weats)
    items = BiasItems(
        method=method,
        gender_tests=gender_tests or [],
        weat=WeatItems(**word_items),
        recover=recover,
    )
    return result, items, rows
