"""Typed, frozen views of the ``embeddings`` and ``evaluate_embeddings`` params
sections (the word-vector methods, their seeds and their evaluation).
Their stages pass these schemas to firth.config.load_section(..., schema=...), so a
change here reruns only the word-vector stages."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from firth.param_section import ParamSection


class EmbeddingsCommon(ParamSection):
    dim: int = Field(ge=1)
    min_count: int = Field(ge=1)
    max_sentence_len: int = Field(ge=1)
    window: int = Field(ge=1)
    window_weighting: Literal["dynamic", "uniform"]
    negatives: int = Field(ge=1)
    sample: float = Field(ge=0)
    sample_rule: Literal["word2vec", "paper"]
    epochs: int = Field(ge=1)
    threads: int = Field(ge=0)
    device: Literal["auto", "cpu", "cuda"]


class EmbeddingsSGNS(ParamSection):
    lr: float = Field(gt=0)
    optimizer: Literal["adagrad", "sgd", "damped-sgd"]
    curvature_floor: float = Field(ge=0)
    batch_centres: int = Field(ge=1)
    kernel: Literal["auto", "fused", "online", "sparse", "gather"]


class EmbeddingsSubword(ParamSection):
    min_n: int = Field(ge=1)
    max_n: int = Field(ge=1)
    buckets: int = Field(ge=1)
    combine: Literal["sum", "mean"]
    kernel: Literal["auto", "fused", "online", "sparse", "gather"]
    lr: float = Field(gt=0)
    cds: float = Field(gt=0)  # negatives drawn from unigram^cds

    @model_validator(mode="after")
    def _order(self) -> Self:
        if self.min_n > self.max_n:
            raise ValueError("min_n must not exceed max_n")
        return self


class EmbeddingsTune(ParamSection):
    """The grid SGNS and PPMI-SVD each choose their setting from, on the dev
    halves of the similarity sets (firth.embeddings.tuning)."""

    negatives: list[int] = Field(min_length=1)
    cds: list[float] = Field(min_length=1)
    context_vectors: list[bool] = Field(min_length=1)
    eig: list[float] = Field(min_length=1)

    @model_validator(mode="after")
    def _values(self) -> Self:
        for key in ("negatives", "cds", "context_vectors", "eig"):
            values = getattr(self, key)
            if len(set(values)) != len(values):
                raise ValueError(f"{key} lists a value twice")
        if min(self.negatives) < 1:
            raise ValueError("negatives must be >= 1 (PPMI's shift is log k)")
        if min(self.cds) <= 0 or min(self.eig) < 0:
            raise ValueError("cds must be > 0 and eig >= 0")
        return self


class EmbeddingsGloVe(ParamSection):
    window: int = Field(ge=1)
    x_max: float = Field(gt=0)
    alpha: float = Field(gt=0)
    lr: float = Field(gt=0)
    epochs: int = Field(ge=1)
    batch: int = Field(ge=1)


class EmbeddingsGensim(ParamSection):
    alpha: float = Field(gt=0)
    min_alpha: float = Field(ge=0)


class EmbeddingsWord2Vec(ParamSection):
    """word2vec.c's own loop (firth.embeddings.word2vec), the w2v-* methods."""

    alpha_sg: float = Field(gt=0)
    alpha_cbow: float = Field(gt=0)
    min_alpha_ratio: float = Field(gt=0, le=1)
    blocks: int = Field(ge=1)


# w2v-<arch>-<loss>: word2vec's loop, skip-gram or CBOW, negative sampling or
# the hierarchical softmax
WORD2VEC_METHODS = ("w2v-sg-ns", "w2v-sg-hs", "w2v-cbow-ns", "w2v-cbow-hs")
EMBEDDING_METHODS = (
    "sgns",
    "subword",
    "ppmi-svd",
    "glove",
    "gensim",
    *WORD2VEC_METHODS,
)


class Embeddings(ParamSection):
    common: EmbeddingsCommon
    seeds: dict[str, list[int]]
    sgns: EmbeddingsSGNS
    subword: EmbeddingsSubword
    tune: EmbeddingsTune
    glove: EmbeddingsGloVe
    gensim: EmbeddingsGensim
    word2vec: EmbeddingsWord2Vec

    @model_validator(mode="after")
    def _seeds(self) -> Self:
        if set(self.seeds) != set(EMBEDDING_METHODS):
            raise ValueError(
                "seeds needs exactly one list per method "
                f"({', '.join(EMBEDDING_METHODS)})"
            )
        for method, seeds in self.seeds.items():
            if not seeds or len(set(seeds)) != len(seeds):
                raise ValueError(
                    f"seeds.{method} must be a non-empty list of distinct seeds"
                )
        return self


class EvaluateEmbeddings(ParamSection):
    restrict: int = Field(ge=0)
    neighbours: int = Field(ge=1)
    probes: list[str]
    oov_probes: list[str]
