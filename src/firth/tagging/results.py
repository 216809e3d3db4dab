"""The committed results of the tagger stages: train.json per run and seed
(reports/tagging/<run>/seed-<seed>/, one entry per initialisation) and eval.json
per run (every model's test scores, their spread over seeds per initialisation,
the majority and word-only baselines, the contamination split and the sentences
with the most errors)."""

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

Head = Literal["softmax", "crf", "crf-constrained"]


class ModelTrain(LoopStats):
    """One initialisation's training in a seed's stage."""

    init: str
    seed: int
    epochs: int
    best_epoch: int
    best_valid_score: float
    sentences_per_second: float | None
    pretrained_rows: int
    vocab: int
    parameters: int


class TaggerTrain(Hardware):
    run: str
    data: str
    head: Head
    seed: int
    scheme: Literal["BIO", "tags"]
    valid_metric: str
    train_sentences: int
    train_sha256: str
    tags: int
    vectors: str
    vectors_path: str
    vectors_words: int
    peak_rss_mb: float
    models: list[ModelTrain]


class TypeScores(Record):
    precision: float
    recall: float
    f1: float
    support: int


class TagScores(Record):
    """Scores of one set of predictions on the test sentences: token accuracy, on
    tokens unseen in training too, and for BIO tags seqeval's entity-level micro
    precision / recall / F1, per type, and the share of sentences breaking BIO;
    with the headline score on all / dirty / clean sentences."""

    sentences: int
    tokens: int
    accuracy: float
    oov_tokens: int
    oov_accuracy: float | None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    entities: int | None = None
    per_type: dict[str, TypeScores] = {}
    invalid_bio_share: float | None = None
    contamination: Contamination


class ModelScores(TagScores):
    init: str
    seed: int


class InitSummary(Record):
    """Each score's spread over the seeds of one initialisation."""

    accuracy: Spread = tracked("higher", abs_tol=0.005)
    f1: Spread | None = tracked("higher", abs_tol=0.01, default=None)
    precision: Spread | None = None
    recall: Spread | None = None
    oov_accuracy: Spread | None = None
    invalid_bio_share: Spread | None = None


class Example(Record):
    tokens: list[str]
    gold: list[str]
    predicted: list[str]


class TaggerEval(Record):
    run: str
    data: str
    head: Head
    scheme: Literal["BIO", "tags"]
    metric: Literal["f1", "accuracy"]
    test_sentences: int
    test_tokens: int
    test_oov_share: float
    test_tokens_in_vocab: dict[str, float]
    inits: list[str]
    seeds: list[int]
    vectors_paths: dict[str, str]
    summary: dict[str, InitSummary]
    contamination: dict[str, Contamination]
    baselines: dict[Literal["majority", "word-only"], TagScores]
    models: list[ModelScores]
    examples: dict[str, list[Example]]
    test_sha256: str | None = None  # of the test split scored
    # a CRF head on BIO tags: the same models decoded under the BIO constraints
    # (a constraint imposed at decoding, not something the model learned)
    constrained: dict[str, InitSummary] = {}
    constrained_models: list[ModelScores] = []

    def headline(self, init: str) -> Spread:
        """The spread of the run's headline score (entity F1 or accuracy)."""
        return getattr(self.summary[init], self.metric)

    @property
    def bio(self) -> bool:
        return self.scheme == "BIO"


class SentenceStats(Record):
    """Per test sentence, in order, one set of predictions: tokens tagged right,
    and (BIO tags) predicted entities, those matching a gold entity exactly
    (seqeval's entities: firth.tagging.evaluate.sentence_stats) and whether the
    sentence breaks BIO (1)."""

    correct: list[int]
    pred: list[int] = []
    tp: list[int] = []
    invalid: list[int] = []


class ModelItems(SentenceStats):
    init: str
    seed: int


class TaggerItems(Record):
    """items.json.gz: what the verdicts resample (firth.inference), per test
    sentence in order: its tokens, its gold entities (BIO) and the audit's dirty
    flag; then each model's statistics (``models``; ``constrained``: the same CRF
    models decoded under the BIO constraints) and the baselines'."""

    run: str
    test_sha256: str
    tokens: list[int]
    gold: list[int] = []
    dirty: list[int]
    models: list[ModelItems]
    constrained: list[ModelItems] = []
    baselines: dict[str, SentenceStats]


def compare_rules() -> list[tuple[str, dict]]:
    """(pattern, tracking) for firth compare: the seed means per initialisation."""
    return [
        (f"reports/tagging/*/eval.json:summary.*.{key}.mean", how)
        for key, how in tracking(InitSummary).items()
    ]
