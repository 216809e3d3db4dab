"""The base of every params section (``firth.config`` and each task's own
``config`` module): strict, frozen, no unknown keys."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict


class ParamSection(BaseModel):
    """Base for every params section: strict, frozen, no unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def check_distinct(section: BaseModel, keys: Sequence[str]) -> None:
    """Refuse a list key of ``section`` that names a value twice (a matrix of DVC
    stages would get two stages of one name)."""
    for key in keys:
        values = getattr(section, key)
        if len(set(values)) != len(values):
            raise ValueError(f"{key} lists a value twice")
