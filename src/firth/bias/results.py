"""The committed results of evaluate-bias@<method> (reports/bias/<method>/):
eval.json (every seed's WEATs before and after hard debiasing, the gender
direction and the recoverability accuracies, and their spread over seeds) and
items.json.gz (what the scorecard's bias finding resamples)."""

from __future__ import annotations

from firth.results import Record, Spread


class WeatScore(Record):
    """One WEAT on one seed's vectors, before and after hard debiasing (None: the
    test did not run, a set kept fewer than min_words words)."""

    test: str
    ran: bool
    coverage: dict[str, int]  # covered words of x, y, a, b
    missing: dict[str, list[str]]
    effect_size: float | None = None
    p_value: float | None = None
    effect_size_debiased: float | None = None
    p_value_debiased: float | None = None
    exact: bool | None = None  # the p-value enumerates every partition


class Recovery(Record):
    """Accuracy (0-1) of the original bias label of the most biased words."""

    kmeans: float
    svm: float


class SeedBias(Record):
    direction_explained: list[float]  # variance ratio of the pair differences' PCs
    definitional_pairs: int
    kept_gender_specific: int
    neutralised: int
    equalised_pairs: int
    gender_weat_abs_d: float | None = None  # mean |d| over the gender WEATs that ran
    gender_weat_abs_d_debiased: float | None = None
    recover_words: int
    original: Recovery
    debiased: Recovery


class Summary(Record):
    gender_weat_abs_d: Spread
    gender_weat_abs_d_debiased: Spread
    kmeans_original: Spread
    kmeans_debiased: Spread
    svm_original: Spread
    svm_debiased: Spread


class BiasEval(Record):
    method: str
    seeds: list[int]
    gender_tests: list[str]
    summary: Summary
    runs: dict[str, SeedBias]
    weat: dict[str, list[WeatScore]]  # by seed

    @classmethod
    def of(cls, method, gender_tests, runs: dict[int, SeedBias], weat) -> BiasEval:
        def spread(f):
            return Spread.of([f(r) for r in runs.values()], digits=6)

        summary = Summary(
            gender_weat_abs_d=spread(lambda r: r.gender_weat_abs_d),
            gender_weat_abs_d_debiased=spread(lambda r: r.gender_weat_abs_d_debiased),
            kmeans_original=spread(lambda r: r.original.kmeans),
            kmeans_debiased=spread(lambda r: r.debiased.kmeans),
            svm_original=spread(lambda r: r.original.svm),
            svm_debiased=spread(lambda r: r.debiased.svm),
        )
        return cls(
            method=method,
            seeds=list(runs),
            gender_tests=gender_tests,
            summary=summary,
            runs={str(k): v for k, v in runs.items()},
            weat={str(k): v for k, v in weat.items()},
        )


class WeatItems(Record):
    """The target words of the gender WEATs that ran (the same for every seed of
    a method: one vocabulary): which test, whether in X (1) or Y (0), and each
    seed's association s(w, A, B) before and after debiasing."""

    test: list[int]  # index into gender_tests
    word: list[str]
    in_x: list[int]
    before: dict[str, list[float]]
    after: dict[str, list[float]]


class RecoverItems(Record):
    """Each seed's most biased words (n male- then n female-aligned, by the
    original projection) and whether each check got each word's label right."""

    words: list[str]
    male: list[int]
    kmeans: list[int]
    svm: list[int]
    kmeans_original: list[int]
    svm_original: list[int]


class BiasItems(Record):
    method: str
    gender_tests: list[str]
    weat: WeatItems
    recover: dict[str, RecoverItems]
