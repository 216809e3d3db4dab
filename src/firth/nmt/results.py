"""The committed results of the translation stages, per run: train.json
(reports/nmt/<run>/), eval.json (test scores of greedy and beam decoding with
copying and repetition statistics, the contamination split, the test loss and,
for a pointer-generator, how much it copied) and eval_detail.json (signatures,
scores by source length, best and worst verses, attention maps). The copy-source
baseline has an eval.json with the scores only and a detail without decoding
times or attention."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from firth.results import (
    Contamination,
    Hardware,
    LoopStats,
    Record,
    tracked,
    tracking,
)

Decoder = Literal["greedy", "beam"]


class NmtTrain(LoopStats, Hardware):
    run: str
    model: str
    seed: int
    pointer: bool = False
    coverage: bool = False
    coverage_loss: float = 0.0
    vocab: int
    parameters: int
    train_pairs: int
    train_sha256: str
    train_target_tokens: int
    train_target_tokens_per_second: int
    best_valid_loss: float
    best_valid_perplexity: float
    kept_weights_valid_loss: float
    valid_bleu_sentences: int
    valid_bleu_copy_source: float | None
    peak_rss_mb: float


class Translation(Record):
    """One decoder's test outputs against the reference: sacreBLEU corpus BLEU,
    chrF and chrF++ (0-100), the mean output length in words, the share of
    repeated word 3-grams within an output, and the share of output words found
    in the source."""

    bleu: float = tracked("higher", abs_tol=0.5)
    chrf: float = tracked("higher", abs_tol=0.5)
    chrf_pp: float = Field(alias="chrf++")
    mean_words: float
    repeated_trigrams: float
    source_word_share: float


class Copying(Record):
    """A pointer-generator's mean switch p_gen over output tokens and the share of
    output tokens whose probability came mostly from copying."""

    mean_p_gen: float
    copied_token_share: float


class NmtEval(Record):
    run: str
    model: str
    test_pairs: int
    test_sha256: str | None = None  # of the test split scored
    seed: int | None = None  # trained runs
    greedy: Translation
    beam: Translation
    contamination: dict[Decoder, dict[Literal["bleu", "chrf"], Contamination]]
    reference_repeated_trigrams: float
    reference_source_word_share: float
    # trained models (not the copy-source baseline)
    pointer: bool = False
    coverage: bool = False
    coverage_loss: float = 0.0
    test_loss: float | None = None
    test_perplexity: float | None = None
    beam_width: int | None = None
    alpha: float | None = None
    penalty: str | None = None
    beta: float | None = None
    greedy_pointer: Copying | None = None
    beam_pointer: Copying | None = None

    @property
    def uses_coverage(self) -> bool:
        return bool(self.coverage or self.coverage_loss)


def compare_rules() -> list[tuple[str, dict]]:
    """(pattern, tracking) for firth compare: both decoders' tracked scores (the
    baselines' rules come first in firth.compare and win)."""
    return [
        (f"reports/nmt/*/eval.json:{decoder}.{key}", how)
        for decoder in ("greedy", "beam")
        for key, how in tracking(Translation).items()
    ]


class NmtItems(Record):
    """items.json.gz: what the verdicts resample (firth.inference), per test
    verse in test order: sacreBLEU's sentence statistics of the beam output for
    BLEU (output and reference lengths, then the matches and totals of 1- to
    4-grams) and for chrF (output, reference and matching counts of each
    character n-gram order), the source's length in words, and the
    contamination audit's dirty flag (1)."""

    run: str
    test_sha256: str
    dirty: list[int]
    src_words: list[int]  # whitespace words of the source verse (length buckets)
    bleu: list[list[int]]
    chrf: list[list[int]]


class Bucket(Record):
    """Scores of the test verses whose source length falls in one bucket."""

    bucket: str
    n: int
    bleu: float | None
    chrf: float | None


class VerseExample(Record):
    id: str
    source: str
    output: str
    reference: str
    chrf: float


class BestWorst(Record):
    best: list[VerseExample]
    worst: list[VerseExample]


class Heatmap(Record):
    """One test verse's greedy output with its attention weights (rows output
    subwords, columns source subwords)."""

    id: str
    source: list[str]
    output: list[str]
    weights: list[list[float]]


class NmtDetail(Record):
    run: str
    signatures: dict[str, str]
    buckets: dict[Decoder, list[Bucket]]
    examples: dict[Decoder, BestWorst]
    decode_seconds: dict[Decoder, float] = {}
    heatmaps: list[Heatmap] = []


class Intervention(Record):
    """One intervention on the attention: under teacher forcing, the share of
    target tokens whose most probable token changed and the mean total variation
    distance of the output distribution; the greedy translations' scores."""

    changed_share: float
    mean_tv: float
    bleu: float
    chrf: float


class AttentionEval(Record):
    """reports/attention/<run>/eval.json: the faithfulness test of one attention
    run's attention (firth.nmt.faithfulness)."""

    run: str
    model: str
    seed: int
    pointer: bool = False
    test_pairs: int
    test_sha256: str
    original: dict[str, float]  # greedy bleu and chrf without intervention
    interventions: dict[str, Intervention]
    tau_sentences: int
    mean_tau: float | None  # Kendall tau of attention against gradient x input


class AttentionItems(Record):
    """items.json.gz: per test verse, sacreBLEU's statistics of the greedy output
    without and with each intervention (``bleu``/``chrf`` by name: 'original' and
    each intervention), the teacher-forced changed tokens, tokens and summed total
    variation per intervention, and the verse's mean Kendall tau (None beyond
    tau_sentences or for a one-token source)."""

    run: str
    test_sha256: str
    bleu: dict[str, list[list[int]]]
    chrf: dict[str, list[list[int]]]
    change: dict[str, list[list[float]]]
    tau: list[float | None]
