"""What the NLI stages share: the ``<data>-<model>`` run checked against
``params.yaml``, torch threads and device."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from firth.accel import resolve_device
from firth.config import load_sections, load_sources
from firth.errors import ConfigError
from firth.nli.config import Nli


@dataclass(frozen=True)
class Run:
    params: Path
    cfg: Nli
    data: str
    model: str
    name: str  # "<data>-<model>": folder under data/nli and reports/nli
    seed0: int  # the split seed (the top-level ``seed``)
    device: torch.device
    raw: Path


def setup(root: Path, params: Path, data: str, model: str) -> Run:
    cfg, seed = load_sections("nli", params, schema=Nli)
    for key, value, allowed in (
        ("data", data, cfg.data),
        ("models", model, cfg.models),
    ):
        if value not in allowed:
            raise ConfigError(
                f"{params}: key 'nli.{key}' has no '{value}' "
                f"(it lists: {', '.join(allowed) or 'nothing'})"
            )
    if data not in load_sources("nli", params):
        raise ConfigError(
            f"{params}: key 'nli.data' names '{data}', but there is no source "
            f"'sources.nli.{data}'"
        )
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    return Run(
        params=params,
        cfg=cfg,
        data=data,
        model=model,
        name=f"{data}-{model}",
        seed0=seed,
        device=resolve_device(cfg.device, key="nli.device"),
        raw=root / "data" / "raw" / "nli" / data,
    )
