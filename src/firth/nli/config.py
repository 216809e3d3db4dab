"""The ``nli`` and ``evaluate_nli`` params sections (registered in firth.config).

Kept apart from firth.config so that a change to the NLI schema reruns only the NLI
stages."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from firth.param_section import ParamSection, check_distinct


class Nli(ParamSection):
    data: list[str]  # names under sources.nli; [] = no NLI stages
    models: list[Literal["pair", "hypothesis"]] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)
    lowercase: bool
    min_count: int = Field(ge=1)
    max_len: int = Field(ge=1)
    valid_fraction: float = Field(gt=0, lt=1)
    emb_dim: int = Field(ge=1)
    hidden: int = Field(ge=1)
    mlp: int = Field(ge=1)
    dropout: float = Field(ge=0, lt=1)
    batch: int = Field(ge=1)
    lr: float = Field(gt=0)
    clip: float = Field(ge=0)
    epochs: int = Field(ge=1)
    patience: int = Field(ge=0)
    threads: int = Field(ge=0)
    device: Literal["auto", "cpu", "cuda"]

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        check_distinct(self, ("data", "models", "seeds"))
        return self


class EvaluateNli(ParamSection):
    batch: int = Field(ge=1)
    examples: int = Field(ge=0)
