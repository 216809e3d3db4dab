"""The committed results of the language-model stages, per run: train.json
(reports/lm/<run>/, a Kneser-Ney build or a neural training) and eval.json (the
valid and test scores, with baselines, the test contamination split and, for the
recurrent models, the far end of the gradient-flow curve)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from firth.results import (
    Contamination,
    Hardware,
    LoopStats,
    Record,
    tracked,
    tracking,
)

NeuralFamily = Literal["ffnn", "elman", "lstm", "gru", "transformer"]


class _Train(Record):
    run: str
    seed: int
    unit: str
    vocab: int
    corpus_sha256: str
    train_tokens: int
    best_valid_perplexity: float
    peak_rss_mb: float


class KnTrain(_Train):
    family: Literal["kn"]
    order: int
    build_seconds: float
    ngrams_per_order: list[int]
    discounts: list[list[float]]


class NeuralTrain(_Train, Hardware, LoopStats):
    family: NeuralFamily
    parameters: int
    best_valid_loss: float
    kept_weights_valid_loss: float  # must equal best_valid_loss (checked on write)
    train_tokens_per_second: int


LmTrain = Annotated[KnTrain | NeuralTrain, Field(discriminator="family")]


class Baseline(Record):
    perplexity: float
    bits_per_char: float


class SplitScores(Record):
    """One split's scores: perplexity per own token (one </s> per line included),
    bits per character over the text's characters (line breaks included), the
    total NLL in bits, the OOV rate of its words, the scoring speed, the uniform
    and unigram baselines of the same vocabulary, and (test) the contamination
    split of the perplexity."""

    perplexity: float = tracked("lower", rel_tol=0.02)
    bits_per_char: float
    nll_bits: float
    tokens: int
    characters: int
    oov_rate: float
    tokens_per_second: int
    baselines: dict[Literal["uniform", "unigram"], Baseline]
    contamination: Contamination | None = None


class GradientFlow(Record):
    """||dL_T/dh_t|| relative to distance 0, at the largest distance measured."""

    distance: int
    relative_norm: float


class LmEval(Record):
    run: str
    family: Literal["kn"] | NeuralFamily
    seed: int
    unit: str
    vocab: int
    test_sha256: str | None = None  # of the test text scored
    valid: SplitScores
    test: SplitScores
    gradient_flow: GradientFlow | None = None


def compare_rules() -> list[tuple[str, dict]]:
    """(pattern, tracking) for firth compare: the tracked test scores."""
    return [
        (f"reports/lm/*/eval.json:test.{key}", how)
        for key, how in tracking(SplitScores).items()
    ]


class LmItems(Record):
    """items.json.gz: what the verdicts resample (firth.inference), per test line
    (a document) in order: the model's NLL in bits (4 decimals), its tokens, the
    line's characters (line break included: firth.lm.metrics), the add-one
    unigram baseline's NLL in bits, and the contamination audit's dirty flag."""

    run: str
    test_sha256: str
    bits: list[float]
    tokens: list[int]
    chars: list[int]
    unigram_bits: list[float]
    dirty: list[int]


class Sample(Record):
    prompt: str
    continuation: str


class FlowPoint(Record):
    """||dL_T/dh_t|| at distance T - t, and relative to distance 0."""

    distance: int
    grad_norm: float
    relative: float


class LmDetail(Record):
    """eval_detail.json: sampled continuations and (recurrent runs) the gradient
    flow against distance."""

    run: str
    samples: list[Sample]
    gradient_flow: list[FlowPoint]
