"""The ``audit`` params section (registered in firth.config)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from firth.param_section import ParamSection


class AuditParams(ParamSection):
    ngram: int = Field(ge=0)
    percentile: float = Field(ge=0, le=100)
    min_n: int = Field(ge=1)
    max_n: int = Field(ge=1)
    near_threshold: float = Field(gt=0, le=1)
    shingle: int = Field(ge=1)
    num_perm: int = Field(ge=16)

    @model_validator(mode="after")
    def _range(self) -> Self:
        if self.min_n > self.max_n:
            raise ValueError("min_n must not exceed max_n")
        return self
