"""Epoch-based training state shared by the taggers and the NLI classifiers: the
epoch count, the validation history, the best score and weights, the epochs since
the best (early stopping after ``patience``; 0 = never), the training seconds, and
the checkpoint that carries all of it with the optimiser and torch's random state,
so that a killed run resumes to the same weights."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

import torch

from firth.checkpoint import Checkpoint, rng_state, set_rng_state

log = logging.getLogger(__name__)


@dataclass
class Progress:
    best_state: dict
    epoch: int = 0
    bad: int = 0
    history: list[dict] = field(default_factory=list)
    best: float = -1.0
    seconds: float = 0.0
    done: bool = False

    @classmethod
    def start(
        cls,
        model: torch.nn.Module,
        opt: torch.optim.Optimizer,
        checkpoint: Checkpoint | None,
        device: torch.device,
        desc: str,
    ) -> Progress:
        """A fresh state, or the checkpoint's (model, optimiser and RNG restored)."""
        saved = checkpoint.load() if checkpoint else None
        if not saved:
            return cls(best_state=copy.deepcopy(model.state_dict()))
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        set_rng_state(saved["rng"], device)
        log.info("%s: resumed after epoch %d", desc, saved["epoch"])
        return cls(
            best_state=saved["best_state"],
            epoch=saved["epoch"],
            bad=saved["bad"],
            history=saved["history"],
            best=saved["best"],
            seconds=saved["seconds"],
            done=bool(saved.get("stopped")),
        )

    def end_epoch(
        self, model: torch.nn.Module, row: dict, score: float, patience: int
    ) -> None:
        """Count the epoch, log its row, keep the weights if ``score`` is a new best,
        and decide on early stopping."""
        self.epoch += 1
        self.history.append({"epoch": self.epoch, **row})
        if score > self.best:
            self.best, self.bad = score, 0
            self.best_state = copy.deepcopy(model.state_dict())
        else:
            self.bad += 1
        self.done = bool(patience and self.bad >= patience)

    def save(
        self,
        checkpoint: Checkpoint | None,
        model: torch.nn.Module,
        opt: torch.optim.Optimizer,
        device: torch.device,
    ) -> None:
        if checkpoint:
            checkpoint.save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "epoch": self.epoch,
                    "bad": self.bad,
                    "history": self.history,
                    "best": self.best,
                    "best_state": self.best_state,
                    "seconds": self.seconds,
                    "stopped": self.done,
                    "rng": rng_state(device),
                }
            )

    def stats(self, key: str, examples: int, unit: str) -> dict:
        """Epochs, best epoch and score (``key`` of the history), seconds and
        ``<unit>_per_second`` over ``examples`` per epoch, early stop."""
        best_epoch = (
            max(self.history, key=lambda r: r[key])["epoch"] if self.history else 0
        )
        return {
            "epochs": self.epoch,
            "best_epoch": best_epoch,
            f"best_{key}": self.best,
            "train_seconds": round(self.seconds, 2),
            f"{unit}_per_second": round(examples * self.epoch / self.seconds, 1)
            if self.seconds
            else None,
            "early_stopped": self.done,
        }
