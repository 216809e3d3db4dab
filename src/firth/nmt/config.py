"""The ``nmt`` and ``evaluate_nmt`` params sections (registered in firth.config).

Kept apart from firth.config so that a change to the translation settings' schema
reruns only the translation stages."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from firth.limits import Beam
from firth.param_section import ParamSection
from firth.schedule import Decay


class NmtCommon(ParamSection):
    cell: Literal["gru", "lstm"]
    emb_dim: int = Field(ge=1)
    hidden: int = Field(ge=2)
    layers: int = Field(ge=1)
    dropout: float = Field(ge=0, lt=1)
    label_smoothing: float = Field(ge=0, lt=1)
    batch_tokens: int = Field(ge=1)
    lr: float = Field(gt=0)
    warmup: float = Field(ge=0, lt=1)
    decay: Decay = "cosine"  # the rate after the warm-up (firth.schedule)
    weight_decay: float = Field(ge=0)
    clip: float = Field(ge=0)
    evals_per_epoch: int = Field(ge=1)
    patience: int = Field(ge=0)
    valid_bleu_sentences: int = Field(ge=0)
    max_len_a: float = Field(ge=0)
    max_len_b: int = Field(ge=1)
    eval_batch: int = Field(ge=1)
    threads: int = Field(ge=0)
    device: Literal["auto", "cpu", "cuda"]

    @model_validator(mode="after")
    def _even(self) -> Self:
        if self.hidden % 2:
            raise ValueError("hidden must be even (two encoder directions of hidden/2)")
        return self


class NmtTransformer(ParamSection):
    layers: int = Field(ge=1)
    heads: int = Field(ge=1)
    ff: int = Field(ge=1)
    # its own schedule and batches, chosen on validation (None: nmt.common's)
    lr: float | None = Field(default=None, gt=0)
    warmup: float | None = Field(default=None, ge=0, lt=1)
    batch_tokens: int | None = Field(default=None, ge=1)
    decay: Decay | None = None  # after the warm-up (firth.schedule; None: nmt.common's)


class NmtRun(ParamSection):
    model: Literal[
        "none",
        "context",
        "bahdanau",
        "luong-general",
        "luong-dot",
        "transformer",
        "target-lm",
    ]
    seed: int
    epochs: float = Field(gt=0)
    # See et al. (2017) and Tu et al. (2016); recurrent attention models only
    pointer: bool = False  # pointer-generator: copy source tokens through a soft switch
    coverage: bool = False  # the coverage vector enters the scorer (bahdanau only)
    coverage_loss: float = Field(default=0.0, ge=0)  # lambda of sum_i min(a_ti, cov_ti)

    @model_validator(mode="after")
    def _copying(self) -> Self:
        attention = ("bahdanau", "luong-general", "luong-dot")
        if (self.pointer or self.coverage_loss) and self.model not in attention:
            raise ValueError(
                f"pointer and coverage_loss need an attention model "
                f"({', '.join(attention)}), not {self.model}"
            )
        if self.coverage and self.model != "bahdanau":
            raise ValueError("coverage (the vector in the scorer) needs bahdanau")
        return self


class Nmt(ParamSection):
    common: NmtCommon
    transformer: NmtTransformer
    runs: dict[str, NmtRun]

    @model_validator(mode="after")
    def _heads(self) -> Self:
        if self.common.emb_dim % self.transformer.heads:
            raise ValueError("common.emb_dim must be divisible by transformer.heads")
        return self


class EvaluateNmt(ParamSection):
    beam: Beam  # the range `firth translate --beam` and `firth serve` accept
    alpha: float = Field(ge=0)
    penalty: Literal["length", "gnmt"]
    beta: float = Field(ge=0)
    min_len: int = Field(ge=0)  # beam search: fewest output tokens before </s>
    buckets: list[int]
    heatmaps: list[str]
    examples: int = Field(ge=0)

    @model_validator(mode="after")
    def _buckets(self) -> Self:
        b = self.buckets
        if not b or any(y <= x for x, y in zip(b, b[1:], strict=False)) or b[0] < 1:
            raise ValueError("buckets must be positive, strictly increasing edges")
        return self


class EvaluateAttention(ParamSection):
    """The faithfulness test of attention (firth.nmt.faithfulness)."""

    runs: list[str] = Field(min_length=1)
    interventions: list[Literal["permute", "uniform", "drop-max"]] = Field(min_length=1)
    tau_sentences: int = Field(ge=0)
    seed: int


def schedule(cfg: Nmt, model: str) -> NmtCommon:
    """The ``common`` settings a run of ``model`` trains with: for the
    transformer, its own ``lr``, ``warmup``, ``batch_tokens`` and ``decay`` where
    the transformer section sets them."""
    if model != "transformer":
        return cfg.common
    t = cfg.transformer
    own = {
        "lr": t.lr,
        "warmup": t.warmup,
        "batch_tokens": t.batch_tokens,
        "decay": t.decay,
    }
    return cfg.common.model_copy(update={k: v for k, v in own.items() if v is not None})
