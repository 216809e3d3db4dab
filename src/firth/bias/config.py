"""The typed, frozen ``evaluate_bias`` params section (firth.bias)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from firth.bias.wordlists import WEAT
from firth.param_section import ParamSection


class EvaluateBias(ParamSection):
    tests: list[str] = Field(min_length=1)
    min_words: int = Field(ge=2)
    permutations: int = Field(ge=1)
    recover_words: int = Field(ge=2)
    recover_restrict: int = Field(ge=0)
    folds: int = Field(ge=2)
    seed: int

    @model_validator(mode="after")
    def _known(self) -> Self:
        unknown = [t for t in self.tests if t not in WEAT]
        if unknown:
            raise ValueError(
                f"unknown WEAT tests {unknown}; choose from {', '.join(WEAT)}"
            )
        return self
