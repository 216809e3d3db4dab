"""What the tagger stages share: the settings of one ``<data>-<head>`` run checked
against ``params.yaml``, torch threads and device, and the vectors a seed reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from firth.accel import resolve_device
from firth.config import load_sections, load_sources
from firth.errors import ConfigError
from firth.tagging.config import Tagger, TaggerCommon


@dataclass(frozen=True)
class Run:
    params: Path
    cfg: Tagger
    common: TaggerCommon
    data: str
    head: str
    name: str  # "<data>-<head>": folder under data/taggers and reports/tagging
    device: torch.device
    data_dir: Path


def setup(root: Path, params: Path, data: str, head: str) -> Run:
    """Check that ``data`` and ``head`` are in the ``tagger`` section and that the
    data is a tagged source; set the threads; pick the device."""
    cfg, _ = load_sections("tagger", params, schema=Tagger)
    for key, value, allowed in (
        ("data", data, cfg.data),
        ("heads", head, cfg.heads),
    ):
        if value not in allowed:
            raise ConfigError(
                f"{params}: key 'tagger.{key}' has no '{value}' "
                f"(it lists: {', '.join(allowed)})"
            )
    if data not in load_sources("tagged", params):
        raise ConfigError(
            f"{params}: key 'tagger.data' names '{data}', but there is no source "
            f"'sources.tagged.{data}'"
        )
    if cfg.common.threads:
        torch.set_num_threads(cfg.common.threads)
    return Run(
        params=params,
        cfg=cfg,
        common=cfg.common,
        data=data,
        head=head,
        name=f"{data}-{head}",
        device=resolve_device(cfg.common.device, key="tagger.common.device"),
        data_dir=root / "data" / "subsampled" / "tagged" / data,
    )


def vectors_dir(root: Path, params: Path, method: str, seed: int) -> Path:
    """data/embeddings/<method>/seed-<seed>/, or the method's first seed where
    ``seed`` is not one of ``embeddings.seeds.<method>``."""
    emb, _ = load_sections("embeddings", params)
    seeds = emb.seeds.get(method)
    if seeds is None:
        raise ConfigError(
            f"{params}: key 'tagger.vectors' is '{method}', not a method of "
            f"embeddings.seeds ({', '.join(emb.seeds)})"
        )
    chosen = seed if seed in seeds else seeds[0]
    return root / "data" / "embeddings" / method / f"seed-{chosen}"
