"""Epoch checkpoints for training stages: a killed stage resumes from the last
completed epoch.

A checkpoint stores the full training state (as the trainer hands it over) with a
key that names the exact run (method, parameters, seed, data hash); a checkpoint
with another key is ignored, so a changed parameter never resumes a stale run.
Writes are atomic; the stage deletes the checkpoint once its outputs are written.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import torch

from firth.io import atomic_path

log = logging.getLogger(__name__)


def run_key(**parts: Any) -> str:
    """A stable hash of the JSON-serialisable description of a run."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


class Checkpoint:
    def __init__(self, path: str | Path, key: str):
        self.path, self.key = Path(path), key

    def load(self) -> dict | None:
        if not self.path.exists():
            return None
        try:
            blob = torch.load(self.path, weights_only=True)
        except Exception as exc:  # unreadable: start afresh, say so
            log.warning(
                "%s: unreadable checkpoint (%s), starting afresh", self.path, exc
            )
            return None
        if blob.get("key") != self.key:
            log.info("%s: checkpoint of another configuration, ignored", self.path)
            return None
        log.info("%s: resuming from the checkpoint", self.path)
        return blob["state"]

    def save(self, state: dict) -> None:
        with atomic_path(self.path) as tmp:
            torch.save({"key": self.key, "state": state}, tmp)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def rng_state(device: torch.device) -> dict:
    s = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        s["cuda"] = torch.cuda.get_rng_state(device)
    return s


def set_rng_state(s: dict, device: torch.device) -> None:
    torch.set_rng_state(s["cpu"])
    if device.type == "cuda" and "cuda" in s:
        torch.cuda.set_rng_state(s["cuda"], device)
