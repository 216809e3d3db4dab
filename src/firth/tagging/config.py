"""The ``tagger`` and ``evaluate_tagger`` params sections (registered in firth.config).

Kept apart from firth.config so that a change to the taggers' schema reruns only the
tagging stages."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from firth.param_section import ParamSection, check_distinct


class TaggerCommon(ParamSection):
    word_dim: int = Field(ge=1)
    chars: Literal["cnn", "lstm", "none"]
    char_dim: int = Field(ge=1)
    char_hidden: int = Field(ge=1)
    char_width: int = Field(ge=1)
    hidden: int = Field(ge=1)
    dropout: float = Field(ge=0, lt=1)
    word_dropout: float = Field(ge=0, le=1)
    batch: int = Field(ge=1)
    bucket: int = Field(ge=0)
    lr: float = Field(gt=0)
    clip: float = Field(ge=0)
    epochs: int = Field(ge=1)
    patience: int = Field(ge=0)
    threads: int = Field(ge=0)
    device: Literal["auto", "cpu", "cuda"]


class Tagger(ParamSection):
    common: TaggerCommon
    vectors: str = Field(min_length=1)
    data: list[str] = Field(min_length=1)
    heads: list[Literal["softmax", "crf", "crf-constrained"]] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        check_distinct(self, ("data", "heads", "seeds"))
        return self


class EvaluateTagger(ParamSection):
    batch: int = Field(ge=1)
    examples: int = Field(ge=0)
