"""The committed results of the NLI stages: train.json per run and seed
(reports/nli/<run>/seed-<seed>/) and eval.json per run (every seed's test scores,
their spread, the majority baseline, the contamination split and misclassified
examples)."""

from __future__ import annotations

from typing import Literal

from firth.results import (
    Contamination,
    Hardware,
    LoopStats,
    Record,
    Spread,
    tracked,
    tracking,
)

Model = Literal["pair", "hypothesis"]


class NliTrain(LoopStats, Hardware):
    run: str
    data: str
    model: Model
    seed: int
    epochs: int
    best_epoch: int
    best_valid_accuracy: float
    examples_per_second: float | None
    train_examples: int
    valid_examples: int
    valid_from_train: bool
    vocab: int
    parameters: int
    examples_sha256: str
    peak_rss_mb: float


class LabelScores(Record):
    precision: float
    recall: float
    f1: float
    gold: int


class NliScores(Record):
    """Accuracy, per-label precision / recall / F1, the confusion matrix (rows
    gold, columns predicted) and the predicted label shares, with accuracy on
    all / dirty / clean test examples."""

    accuracy: float
    examples: int
    per_label: dict[str, LabelScores]
    confusion: list[list[int]]
    predicted_share: dict[str, float]
    contamination: Contamination


class SeedScores(NliScores):
    seed: int


class MajorityScores(NliScores):
    label: str


class Example(Record):
    split: str
    premise: str
    hypothesis: str
    label: str
    predicted: str


class Summary(Record):
    accuracy: Spread


class NliEval(Record):
    run: str
    data: str
    model: Model
    metric: Literal["accuracy"]
    test_examples: int
    test_label_share: dict[str, float]
    seeds: list[int]
    summary: Summary
    accuracy: float = tracked("higher", abs_tol=0.01)
    baselines: dict[Literal["majority"], MajorityScores]
    contamination: Contamination
    models: list[SeedScores]
    examples: list[Example]
    examples_sha256: str


class NliItems(Record):
    """items.json.gz: per test example in order, the audit's dirty flag, each
    seed's answer (1 right) and the majority baseline's: what the verdicts
    resample (firth.inference)."""

    run: str
    examples_sha256: str
    dirty: list[int]
    correct: dict[str, list[int]]
    majority: list[int]


def compare_rules() -> list[tuple[str, dict]]:
    """(pattern, tracking) for firth compare: the seed-mean test accuracy."""
    return [
        (f"reports/nli/*/eval.json:{key}", how)
        for key, how in tracking(NliEval).items()
    ]
