"""The typed, frozen ``probe`` params section (firth.probe)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from firth.param_section import ParamSection


class Probe(ParamSection):
    lm_runs: list[str]
    vectors: list[str]
    probes: list[Literal["linear", "mlp"]] = Field(min_length=1)
    hidden: int = Field(ge=1)
    epochs: int = Field(ge=1)
    batch: int = Field(ge=0)
    lr: float = Field(gt=0)
    l2: float = Field(ge=0)
    seeds: list[int] = Field(min_length=1)
    control_seed: int
