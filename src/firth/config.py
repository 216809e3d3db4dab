"""Typed, frozen views of ``params.yaml``.

Each stage reads one section (plus shared ones such as ``seed``). Unknown, missing or
mistyped keys raise :class:`ConfigError` with a one-line message that names the key
and what is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from firth.errors import ConfigError
from firth.param_section import ParamSection


class SourceSpec(ParamSection):
    """A custom data source given inline in ``sources`` (registered: strings)."""

    kind: Literal["url", "hf", "local"]
    format: Literal["text", "parallel", "tagged", "analogy", "similarity", "nli"]
    # url: the address, the expected sha256 ("" = record on first download), and
    # the member of an archive to read ("" = the downloaded file itself).
    url: str = ""
    sha256: str = ""
    member: str = ""
    # hf: dataset id, config name, split renames and field mapping.
    id: str = ""
    config: str = ""
    revision: str = ""
    splits: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)
    # local: a file or directory; text/parallel/TSV/CoNLL/CoNLL-U/JSONL by suffix.
    path: str = ""
    license: str = "unknown: check before redistributing"

    @model_validator(mode="after")
    def _needs(self) -> SourceSpec:
        need = {"url": "url", "hf": "id", "local": "path"}[self.kind]
        if not getattr(self, need):
            raise ValueError(f"kind '{self.kind}' needs key '{need}'")
        return self


def check_fractions(valid_fraction: float, test_fraction: float) -> None:
    """Both held-out fractions in (0, 1), leaving something for training."""
    if not (0 < valid_fraction < 1 and 0 < test_fraction < 1):
        raise ValueError("valid_fraction and test_fraction must lie in (0, 1)")
    if valid_fraction + test_fraction >= 1:
        raise ValueError("valid_fraction + test_fraction must be below 1")


class PrepareText(ParamSection):
    lowercase: bool
    valid_fraction: float
    test_fraction: float
    min_tokens: int

    @model_validator(mode="after")
    def _fractions(self) -> Self:
        check_fractions(self.valid_fraction, self.test_fraction)
        return self


class PrepareParallel(ParamSection):
    source: str
    max_len: int
    max_ratio: float
    split_mod: int
    test_residue: int
    valid_residue: int

    @model_validator(mode="after")
    def _residues(self) -> PrepareParallel:
        if self.split_mod < 3:
            raise ValueError("split_mod must be at least 3")
        for key in ("test_residue", "valid_residue"):
            if not 0 <= getattr(self, key) < self.split_mod:
                raise ValueError(f"{key} must lie in 0..split_mod-1")
        if self.test_residue == self.valid_residue:
            raise ValueError("test_residue and valid_residue must differ")
        return self


class PrepareTagged(ParamSection):
    valid_fraction: float
    test_fraction: float
    repair_bio: bool
    dedup: bool

    @model_validator(mode="after")
    def _fractions(self) -> Self:
        check_fractions(self.valid_fraction, self.test_fraction)
        return self


class SubsampleText(ParamSection):
    max_train_tokens: int = Field(ge=0)
    max_eval_tokens: int = Field(ge=0)


class SubsampleParallel(ParamSection):
    max_train_pairs: int = Field(ge=0)
    max_eval_pairs: int = Field(ge=0)


class SubsampleTagged(ParamSection):
    max_train_sentences: int = Field(ge=0)
    max_eval_sentences: int = Field(ge=0)


class Subsample(ParamSection):
    text: SubsampleText
    parallel: SubsampleParallel
    tagged: SubsampleTagged


class BPEConfig(ParamSection):
    model: Literal["byte-level", "char"]
    vocab_size: int = Field(ge=64)
    min_frequency: int = Field(ge=1)


class Tokenizer(ParamSection):
    text: BPEConfig
    parallel: BPEConfig
    compare_vocab_sizes: list[int]
    max_train_lines: int = Field(ge=0)


class Report(ParamSection):
    title: str


class Verdicts(ParamSection):
    """How every verdict of the report decides (firth.inference)."""

    confidence: float = Field(gt=0.5, lt=1)
    resamples: int = Field(ge=100)
    seed: int
    min_items: int = Field(ge=2)
    equivalence_margin: float = Field(gt=0)
    accuracy_margin: float = Field(gt=0)


class AccelParams(ParamSection):
    """The ``accel`` params section: how the neural trainers compute (resolved into
    a firth.accel.Accel per stage; firth.distributed)."""

    precision: Literal["auto", "fp32", "tf32", "bf16"]
    compile: bool
    processes: int = Field(ge=1)


# Sections whose schema lives with its domain (``firth.<task>.config``), so that a
# change there reruns only the stages of that task: their stages pass the schema to
# load_section(..., schema=...).
DOMAIN_SECTIONS = (
    "audit",
    "embeddings",
    "evaluate_embeddings",
    "evaluate_bias",
    "lm",
    "evaluate_lm",
    "nmt",
    "evaluate_nmt",
    "evaluate_attention",
    "probe",
    "tagger",
    "evaluate_tagger",
    "nli",
    "evaluate_nli",
)

SECTIONS: dict[str, type[BaseModel]] = {
    "prepare_text": PrepareText,
    "prepare_parallel": PrepareParallel,
    "prepare_tagged": PrepareTagged,
    "subsample": Subsample,
    "tokenizer": Tokenizer,
    "report": Report,
    "verdicts": Verdicts,
    "accel": AccelParams,
}

M = TypeVar("M", bound=BaseModel)


def read_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}".replace("\n", " ")) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return data


def _describe(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """Allowed keys at the location of an error, for the message."""
    current: Any = model
    for part in loc[:-1]:
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return ""
        current = fields[part].annotation
    fields = getattr(current, "model_fields", None)
    return ", ".join(sorted(fields)) if fields else ""


def validate_section(
    model: type[M], data: Any, *, name: str, path: str = "params.yaml"
) -> M:
    """Validate ``data`` as ``model``; raise a one-line ConfigError naming the key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        key = ".".join([name, *map(str, loc)]) if loc else name
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = _describe(model, loc)
            msg = f"{path}: unknown key '{key}' (allowed: {allowed})"
        elif kind == "missing":
            msg = f"{path}: missing key '{key}'"
        else:
            msg = f"{path}: key '{key}': {err['msg']} (got {err.get('input')!r})"
        raise ConfigError(msg) from None


def load_section(
    name: str,
    path: str | Path = "params.yaml",
    *,
    schema: type[M] | None = None,
) -> Any:
    """Load and validate one section of params.yaml by name (a domain section with
    its ``schema`` from ``firth.<task>.config``)."""
    if schema is None:
        if name in DOMAIN_SECTIONS:
            raise ConfigError(
                f"section '{name}' is validated by its task's schema: "
                "pass schema= from firth.<task>.config"
            )
        if name not in SECTIONS:
            known = ", ".join(sorted([*SECTIONS, *DOMAIN_SECTIONS]))
            raise ConfigError(f"unknown section '{name}' (known: {known})")
        schema = SECTIONS[name]
    params = read_params(path)
    if name not in params:
        raise ConfigError(f"{path}: missing section '{name}'")
    return validate_section(schema, params[name], name=name, path=str(path))


SOURCE_GROUPS = ("text", "parallel", "tagged", "eval", "nli")
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def load_sources(group: str, path: str | Path = "params.yaml") -> dict[str, Any]:
    """The ``sources.<group>`` mapping: source name -> registered name or spec."""
    params = read_params(path)
    sources = params.get("sources")
    if not isinstance(sources, dict):
        raise ConfigError(
            f"{path}: missing section 'sources' (a mapping of groups: "
            f"{', '.join(SOURCE_GROUPS)})"
        )
    for key in sources:
        if key not in SOURCE_GROUPS:
            raise ConfigError(
                f"{path}: unknown key 'sources.{key}' "
                f"(allowed: {', '.join(SOURCE_GROUPS)})"
            )
    if group not in SOURCE_GROUPS:
        raise ConfigError(
            f"unknown source group '{group}' (allowed: {', '.join(SOURCE_GROUPS)})"
        )
    entries = sources.get(group) or {}
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: key 'sources.{group}' must map names to sources")
    for name in entries:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{path}: key 'sources.{group}.{name}': names use "
                "lowercase letters, digits, '.', '_' and '-'"
            )
    return entries


def load_seed(path: str | Path = "params.yaml") -> int:
    params = read_params(path)
    seed = params.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"{path}: key 'seed' must be an integer (got {seed!r})")
    return seed


def check_top_level(path: str | Path = "params.yaml") -> None:
    """Refuse unknown top-level sections (a misspelt section would be ignored)."""
    params = read_params(path)
    known = {*SECTIONS, *DOMAIN_SECTIONS, "seed", "sources"}
    for key in params:
        if key not in known:
            raise ConfigError(
                f"{path}: unknown section '{key}' (allowed: {', '.join(sorted(known))})"
            )


def load_sections(
    name: str,
    path: str | Path = "params.yaml",
    *,
    schema: type[M] | None = None,
) -> tuple[Any, int]:
    """Check the top level, then return the validated section ``name`` and the seed."""
    check_top_level(path)
    return load_section(name, path, schema=schema), load_seed(path)


def check_seed(where: str | Path, key: str, seed: int, seeds: list[int]) -> None:
    """A seed asked for on the command line must be one the params list."""
    if seed not in seeds:
        raise ConfigError(
            f"{where}: key '{key}' has no seed {seed} "
            f"(it lists: {', '.join(map(str, seeds))})"
        )
