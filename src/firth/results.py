"""Typed result files: the base of every committed train/eval JSON schema (each
task's own ``results`` module), one shape for a statistic over seeds (``Spread``),
and how a schema says which of its numbers are tracked (``tracked``: better
higher or lower, and the tolerance), which ``firth compare`` reads.

A result file is written through its schema (``save``: validated, then key-sorted
JSON, atomically) and read through it (``load``: a file that does not match is a
one-line error naming the file and the first wrong key)."""

from __future__ import annotations

import gzip
import json
import math
import resource
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from firth.errors import DataError
from firth.io import atomic_path, read_json, write_json

Better = Literal["higher", "lower"]
R = TypeVar("R")


class Record(BaseModel):
    """Base of every result schema: frozen, no unknown keys; fields may carry a
    JSON alias (``3cosadd``) and are filled by name or alias."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def tracked(
    better: Better, *, abs_tol: float = 0.0, rel_tol: float = 0.0, **kw: Any
) -> Any:
    """A field whose change between two versions ``firth compare`` judges: a move
    in the bad direction beyond max(abs_tol, rel_tol * |old|) is a regression."""
    extra = {"better": better, "abs_tol": abs_tol, "rel_tol": rel_tol}
    return Field(json_schema_extra={"tracked": extra}, **kw)


def tracking(schema: type[BaseModel]) -> dict[str, dict]:
    """The tracked fields of ``schema`` by JSON name (alias where there is one)."""
    out = {}
    for name, info in schema.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and "tracked" in extra:
            out[info.alias or name] = extra["tracked"]
    return out


class Spread(Record):
    """A statistic over seeds: the mean, the sample standard deviation (0 for one
    seed), the range and the number of seeds; all None but n when any seed has no
    value."""

    mean: float | None
    sd: float | None
    min: float | None
    max: float | None
    n: int

    @classmethod
    def of(cls, values: Sequence[float | None], *, digits: int | None = None) -> Spread:
        """The spread of ``values`` (rounded to ``digits`` decimals if given)."""
        if not values or any(v is None or math.isnan(v) for v in values):
            return cls(mean=None, sd=None, min=None, max=None, n=len(values))
        stats = (
            statistics.fmean(values),
            statistics.stdev(values) if len(values) > 1 else 0.0,
            min(values),
            max(values),
        )
        if digits is not None:
            stats = tuple(round(float(x), digits) for x in stats)
        mean, sd, lo, hi = stats
        return cls(mean=mean, sd=sd, min=lo, max=hi, n=len(values))


class Contamination(Record):
    """A score on all / dirty / clean evaluation examples (the audit's flags), the
    counts, the clean share and (clean - all) / all, as the GPT-3 paper's appendix
    C reports it (firth.audit.scores.split_scores)."""

    all: float | None
    dirty: float | None
    clean: float | None
    n_all: int
    n_dirty: int
    n_clean: int
    clean_share: float | None
    clean_vs_all: float | None


class Hardware(Record):
    """Where a neural model trained (firth.accel, firth.distributed)."""

    device: str
    precision: str
    compile: bool
    processes: int = 1
    threads: int


class LoopStats(Record):
    """What firth.training.fit reports of a run."""

    steps: int
    planned_steps: int
    steps_per_epoch: int
    epochs_run: float
    early_stopped: bool
    train_seconds: float


def spread_tree(trees: Sequence[Any]) -> Any:
    """Walk same-shaped JSON trees (one per seed) in parallel: each number (or
    None) becomes the Spread of its values (6 decimals); dicts keep their keys
    (a key some trees lack is dropped); anything else must be equal in every
    tree and is kept."""
    first = trees[0]
    if isinstance(first, dict):
        keys = [k for k in first if all(isinstance(t, dict) and k in t for t in trees)]
        return {k: spread_tree([t[k] for t in trees]) for k in keys}
    if first is None or _number(first):
        return Spread.of(trees, digits=6).model_dump()
    if any(t != first for t in trees):
        raise ValueError(f"values differ across seeds: {trees!r}")
    return first


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def save(path: str | Path, record: Record) -> None:
    """``record`` as key-sorted JSON (aliases as keys), written atomically."""
    write_json(path, record.model_dump(mode="json", by_alias=True))


def parse(obj: Any, schema: type[R] | Any, where: str | Path) -> R:
    """``obj`` validated as ``schema`` (a Record class or a union of them); a
    mismatch is a DataError naming ``where`` and the first wrong key."""
    try:
        return TypeAdapter(schema).validate_python(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        name = getattr(schema, "__name__", "result")
        raise DataError(
            f"{where}: not a {name} result: key '{key}': {err['msg']} "
            f"({exc.error_count()} problem(s) in all)"
        ) from None


class Draft:
    """A result of the Record class ``schema`` filled in as its values become known
    (a trainer sets its settings before training, its scores after): each value is
    checked against its field when it is set, so an unknown key or a wrong type
    fails at once, not after the training; ``build`` checks the whole record
    (nothing missing) and returns it."""

    def __init__(self, schema: type[Record], where: str, **values: Any):
        self.schema, self.where = schema, where
        self.values: dict[str, Any] = {}
        self.set(**values)

    def set(self, **values: Any) -> Draft:
        fields = self.schema.model_fields
        for key, value in values.items():
            if key not in fields:
                raise DataError(
                    f"{self.where}: a {self.schema.__name__} has no field '{key}'"
                )
            try:
                TypeAdapter(fields[key].annotation).validate_python(value)
            except ValidationError as exc:
                raise DataError(
                    f"{self.where}: {self.schema.__name__}.{key}: "
                    f"{exc.errors()[0]['msg']}"
                ) from None
            self.values[key] = value
        return self

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def build(self) -> Any:
        return parse(self.values, self.schema, self.where)


def load(path: str | Path, schema: type[R] | Any) -> R:
    """The result file at ``path`` read through ``schema``."""
    return parse(read_json(path), schema, path)


def save_items(path: str | Path, record: Record) -> None:
    """Per-item statistics (``items.json.gz``): ``record`` as compact JSON,
    gzipped without a timestamp (the same record gives the same bytes), written
    atomically."""
    text = json.dumps(
        record.model_dump(mode="json", by_alias=True),
        sort_keys=True,
        separators=(",", ":"),
    )
    with atomic_path(path) as tmp:
        with (
            open(tmp, "wb") as raw,
            gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9
            ) as f,
        ):
            f.write(text.encode("utf-8"))


def load_items(path: str | Path, schema: type[R]) -> R:
    """An ``items.json.gz`` file read through ``schema`` (a clear error for a file
    that is not gzipped JSON of that shape)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, EOFError, ValueError) as exc:
        raise DataError(f"{path}: not a gzipped JSON items file ({exc})") from None
    return parse(obj, schema, path)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (1 decimal)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


@dataclass
class StageOutput:
    """What a training stage writes: its model folder (``write`` fills a new, empty
    folder), its statistics record (train.json) and its curve rows (curve.csv)."""

    write: Callable[[Path], None]
    stats: Record
    curve: list[dict] = field(default_factory=list)

    def save(
        self,
        out: Path,
        reports: Path,
        columns: list[str],
        *,
        curve: str | None = "curve.csv",
    ) -> None:
        """Write the model folder ``out`` and, under ``reports``, train.json and
        the curve file ``curve`` (its ``columns``; none where None): what every
        training stage writes, each file atomically."""
        from firth.io import write_curve, write_folder

        write_folder(out, self.write)
        save(reports / "train.json", self.stats)
        if curve is not None:
            write_curve(reports / curve, self.curve, columns)
