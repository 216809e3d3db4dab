"""Typed, frozen views of the ``lm`` and ``evaluate_lm`` params sections (the
language-model runs and their evaluation).
Their stages pass these schemas to firth.config.load_section(..., schema=...), so a
change here reruns only the language-model stages."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from firth.limits import MAX_SAMPLES, Temperature, Tokens
from firth.param_section import ParamSection


class LmCommon(ParamSection):
    unit: Literal["word", "bpe"]
    min_count: int = Field(ge=1)
    emb_dim: int = Field(ge=1)
    cutoffs: list[int]
    tie: bool
    batch: int = Field(ge=1)
    bptt: int = Field(ge=1)
    epochs: float = Field(gt=0)
    lr: float = Field(gt=0)
    warmup: float = Field(ge=0, lt=1)
    weight_decay: float = Field(ge=0)
    clip: float = Field(ge=0)
    dropout: float = Field(ge=0, lt=1)
    evals_per_epoch: int = Field(ge=1)
    patience: int = Field(ge=0)
    eval_batch: int = Field(ge=1)
    threads: int = Field(ge=0)
    device: Literal["auto", "cpu", "cuda"]
    cpu_bf16: bool  # bf16 autocast on a CPU with bf16 units (firth.accel)

    @model_validator(mode="after")
    def _cutoffs(self) -> Self:
        if any(
            b <= a for a, b in zip(self.cutoffs, self.cutoffs[1:], strict=False)
        ) or any(c < 1 for c in self.cutoffs):
            raise ValueError("cutoffs must be positive and strictly increasing")
        return self


class LmKN(ParamSection):
    order: int = Field(ge=1)


class LmFFNN(ParamSection):
    context: int = Field(ge=1)
    hidden: int = Field(ge=1)


class LmRNN(ParamSection):
    hidden: int = Field(ge=1)
    layers: int = Field(ge=1)
    forget_bias: float = 0.0


class LmTransformer(ParamSection):
    layers: int = Field(ge=1)
    heads: int = Field(ge=1)
    ff: int = Field(ge=1)
    memory: int = Field(ge=0)


class LmRun(ParamSection):
    family: Literal["kn", "ffnn", "elman", "lstm", "gru", "transformer"]
    seed: int
    # planned passes over the training text for this run (None: lm.common.epochs)
    epochs: float | None = Field(default=None, gt=0)


class Lm(ParamSection):
    common: LmCommon
    kn: LmKN
    ffnn: LmFFNN
    elman: LmRNN
    lstm: LmRNN
    gru: LmRNN
    transformer: LmTransformer
    runs: dict[str, LmRun]

    @model_validator(mode="after")
    def _heads(self) -> Self:
        if self.common.emb_dim % self.transformer.heads:
            raise ValueError("common.emb_dim must be divisible by transformer.heads")
        return self


class EvaluateLm(ParamSection):
    samples: int = Field(ge=0, le=MAX_SAMPLES)  # 0: none in the report
    # the ranges `firth generate --tokens/--temperature` accept
    sample_tokens: Tokens
    temperature: Temperature
    prompts: list[str]
    flow_distance: int = Field(ge=2)
    flow_sequences: int = Field(ge=1)
