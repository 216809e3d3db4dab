"""The committed results of the embedding stages: train.json of each method and
seed (reports/embeddings/<method>/seed-<seed>/) and eval.json of each method
(reports/embeddings/<method>/): every seed's scores under ``runs`` and their
Spread over the seeds under ``summary``, in one shape (``Scores``)."""

from __future__ import annotations

from typing import Annotated, Generic, Literal, TypeVar

from pydantic import Field

from firth.embeddings.config import WORD2VEC_METHODS
from firth.results import Record, Spread, spread_tree, tracked, tracking

N = TypeVar("N")  # float | None for one seed, Spread for the summary
ANALOGY = "analogy-google"  # the analogy set the report, findings and baselines read


class Analogy(Record, Generic[N]):
    """Analogy accuracy over the covered questions of one set and candidate
    vocabulary: 3CosAdd excluding the question words and including them, 3CosMul,
    the only-b baseline, and the share of questions covered."""

    coverage: N
    cos_add: N = tracked("higher", abs_tol=0.005, alias="3cosadd")
    cos_add_incl: N = Field(alias="3cosadd_incl")
    cos_mul: N = tracked("higher", abs_tol=0.005, alias="3cosmul")
    only_b: N


class Similarity(Record, Generic[N]):
    """Spearman correlation with human similarity judgements over the pairs whose
    words have vectors, and the share of pairs covered (of one half of the set:
    firth.embeddings.tuning)."""

    spearman: N = tracked("higher", abs_tol=0.02)
    coverage: N


VocabSlice = Literal["top", "full"]


class Scores(Record, Generic[N]):
    """One seed's scores (or their spread): analogies by set and candidate
    vocabulary ('top': the most frequent words, 'full': all), similarity by set,
    and for the subword model similarity with composed vectors for unseen words."""

    vocab: N
    analogy: dict[str, dict[VocabSlice, Analogy[N]]] = {}
    similarity: dict[str, Similarity[N]] = {}  # the test half of each set
    similarity_dev: dict[str, Similarity[N]] = {}  # the dev half (tuning)
    similarity_with_oov: dict[str, Similarity[N]] = {}

    def analogy_at(self, vocab: VocabSlice, name: str = ANALOGY) -> Analogy[N] | None:
        """The analogy scores of set ``name`` over the ``vocab`` candidates."""
        return self.analogy.get(name, {}).get(vocab)


class EmbeddingEval(Record):
    method: str
    seeds: list[int]
    summary: Scores[Spread]
    runs: dict[str, Scores[float | None]]
    # seeds whose vectors differ (a deterministic method: 1, whatever its seeds)
    distinct: int | None = None

    @classmethod
    def of(
        cls, method: str, runs: dict[int, Scores], distinct: int | None = None
    ) -> EmbeddingEval:
        """Every seed's scores and their spread."""
        dumped = [s.model_dump(by_alias=True) for s in runs.values()]
        return cls(
            method=method,
            seeds=list(runs),
            summary=Scores[Spread].model_validate(spread_tree(dumped)),
            runs={str(k): v for k, v in runs.items()},
            distinct=distinct,
        )


def compare_rules() -> list[tuple[str, dict]]:
    """(pattern, tracking) for firth compare: the seed means of eval.json's
    tracked scores (the only-b baseline and coverages are shown, not judged)."""
    path = "reports/embeddings/*/eval.json"
    out = [
        (f"{path}:summary.analogy.*.*.{key}.mean", how)
        for key, how in tracking(Analogy).items()
    ]
    out += [
        (f"{path}:summary.{part}.*.{key}.mean", how)
        for part in ("similarity", "similarity_with_oov")
        for key, how in tracking(Similarity).items()
    ]
    return out


class SimilarityItems(Record):
    """One similarity set, every pair in file order: the human score, whether the
    pair is in the test half (1) or the dev half (0), and each seed's cosine
    (None: a word without a vector)."""

    gold: list[float]
    test: list[int]
    cosine: dict[str, list[float | None]]


class AnalogyItems(Record):
    """One analogy set over the ``candidates`` most frequent words: the covered
    questions' indices in file order, and each seed's 0/1 answers on them per
    method (3cosadd, 3cosadd_incl, 3cosmul, only_b)."""

    candidates: int
    covered: list[int]
    hits: dict[str, dict[str, list[int]]]


class EmbeddingItems(Record):
    """items.json.gz of a method: what the verdicts resample (firth.inference)."""

    method: str
    similarity: dict[str, SimilarityItems]
    analogy: dict[str, AnalogyItems]


class _Train(Record):
    """What every embedding trainer records."""

    seed: int
    corpus_sha256: str
    corpus_tokens: int
    vocab: int
    seconds: float
    words_per_second: float
    peak_rss_mb: float
    threads: int


class _Iterative(_Train):
    device: str
    final_loss: float


class TuningRow(Record):
    """One setting of a tuned method's grid with its Spearman on the dev half of
    each similarity set, their mean (the criterion), and whether it was chosen."""

    setting: str
    negatives: int
    cds: float
    context_vectors: bool
    eig: float | None = None
    dev_spearman: dict[str, float | None]
    dev_mean: float | None
    chosen: bool


class _Tuned(Record):
    """A tuned method's grid (firth.embeddings.tuning): the chosen setting, every
    setting's dev scores, and the trainings (SGNS runs, PPMI SVDs) it took;
    seconds and words per second cover them all."""

    setting: str | None = None
    tuning: list[TuningRow] = []
    trainings: int = 1


class SgnsTrain(_Iterative, _Tuned):
    method: Literal["sgns"]
    first_loss: float
    kept_tokens_per_epoch: float
    pairs: int
    pairs_per_epoch: float


class SubwordTrain(_Iterative):
    method: Literal["subword"]
    first_loss: float
    kept_tokens_per_epoch: float
    pairs: int
    pairs_per_epoch: float
    input_rows: int
    used_buckets: int


class GloveTrain(_Iterative):
    method: Literal["glove"]
    nonzeros: int


class PpmiSvdTrain(_Train, _Tuned):
    method: Literal["ppmi-svd"]
    cooccurrence_nonzeros: int
    ppmi_nonzeros: int
    kept_tokens: int | None = None  # after subsampling, before counting
    top_singular_values: list[float]


class GensimTrain(_Train):
    method: Literal["gensim"]
    gensim_vocab: int
    workers: int


class Block(Record):
    """One timed run of sentences of an epoch of word2vec's loop."""

    kept_tokens: int
    seconds: float


class Word2VecTrain(_Iterative):
    """word2vec's own loop (w2v-<arch>-<loss>); ``blocks``: each epoch's runs of
    sentences, timed (firth.embeddings.word2vec), what the speed test of
    firth.findings resamples; seconds count training only."""

    method: Literal["w2v-sg-ns", "w2v-sg-hs", "w2v-cbow-ns", "w2v-cbow-hs"]
    first_loss: float
    kept_tokens_per_epoch: float
    blocks: list[Block]


EmbeddingTrain = Annotated[
    SgnsTrain | SubwordTrain | GloveTrain | PpmiSvdTrain | GensimTrain | Word2VecTrain,
    Field(discriminator="method"),
]
# each method's own record (the union's members by their ``method``)
TRAIN_OF = {
    "sgns": SgnsTrain,
    "subword": SubwordTrain,
    "glove": GloveTrain,
    "ppmi-svd": PpmiSvdTrain,
    "gensim": GensimTrain,
    **{m: Word2VecTrain for m in WORD2VEC_METHODS},
}


class SectionAccuracy(Record):
    """Analogy accuracies over one section of the set (capital-world, ...)."""

    questions: int
    covered: int
    cos_add: float = Field(alias="3cosadd")
    cos_add_incl: float = Field(alias="3cosadd_incl")
    cos_mul: float = Field(alias="3cosmul")
    only_b: float


class AnalogyDetail(Record):
    """One analogy set over one candidate vocabulary (``restrict`` most frequent
    words; None = all), overall and by section."""

    questions: int
    covered: int
    candidates: int
    restrict: int | None
    coverage: float
    cos_add: float = Field(alias="3cosadd")
    cos_add_incl: float = Field(alias="3cosadd_incl")
    cos_mul: float = Field(alias="3cosmul")
    only_b: float
    sections: dict[str, SectionAccuracy]


class SimilarityDetail(Record):
    pairs: int
    covered: int
    covered_in_vocab: int
    coverage: float
    spearman: float | None
    pearson: float | None


class Neighbours(Record):
    """A probe word's nearest neighbours (word, cosine), empty for no vector."""

    word: str
    in_vocab: bool
    neighbours: list[tuple[str, float]]


class EmbeddingDetail(Record):
    """eval_detail.json of the first seed: analogies by '<set>/<top|full>',
    similarity by set (and '<set>/with_oov' for the subword model), and the
    nearest neighbours of the probe words (of unseen words too, subword)."""

    method: str
    seed: int
    analogy: dict[str, AnalogyDetail]
    similarity: dict[str, SimilarityDetail]
    neighbours: list[Neighbours]
    oov_neighbours: list[Neighbours] = []

    def top(self) -> AnalogyDetail | None:
        """The analogy detail over the most frequent candidates."""
        return next((r for k, r in self.analogy.items() if k.endswith("/top")), None)
