"""The base of every params section (``firth.config`` and each task's own
``config`` module): strict, frozen, no unknown keys."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ParamSection(BaseModel):
    """Base for every params section: strict, frozen, no unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
