"""The one training loop of every neural task (language models, translation,
taggers, NLI classifiers).

A task supplies only what is its own (a ``Task``): one epoch's batches in order,
the loss of a batch, and a validation; the loop owns the rest. It counts
optimiser steps over epochs, sets the learning rate (a linear warm-up then cosine
decay, firth.schedule.lr_at, or a constant), clips the gradient norm, validates
every ``eval_every`` steps and at the end (unless the last validation was under a
quarter interval ago: then its weights stand), keeps the weights of the best
validation, stops after ``patience`` validations without a new best (0 = never),
and at each validation saves a checkpoint of the whole training state (weights,
optimiser, position in the epoch, history, the task's carried state, torch's
random generators), so a killed run resumes where it stopped and ends with the
same weights.

On several processes (torch DDP under torchrun, firth.distributed) every rank
runs the loop; the task wraps its forward in DDP and trains its share of each
batch; rank 0 validates and the verdict is broadcast; the training-loss sums are
added over the ranks; the checkpoint holds every rank's carried state and random
generators.

Why by hand and not Lightning Fabric or HF Accelerate: device, precision and
compilation are firth.accel's, the torchrun launch and the collectives are
firth.distributed's (kept small and tested against single-process gradients);
what is left is this loop, whose exact resume needs the task's carried state (an
LM's hidden state across segments) and every rank's generators in the checkpoint,
which neither library's loop saves for us.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import torch
from tqdm import tqdm

from firth import distributed
from firth.accel import Accel
from firth.checkpoint import Checkpoint, rng_state, set_rng_state
from firth.distributed import SINGLE, Group
from firth.schedule import Decay, lr_at

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """How long and how to optimise: ``steps`` optimiser steps in all,
    ``steps_per_epoch`` (nominal, for the epoch column), validation every
    ``eval_every`` steps; ``optimizer`` adam or adamw (with ``weight_decay``);
    ``warmup`` steps of linear warm-up then ``decay`` (cosine or inverse-sqrt,
    firth.schedule), or with ``decay`` None a constant ``lr``; ``clip`` the
    gradient norm (0 = never); ``patience``
    validations without a new best stop the run (0 = never); ``higher_is_better``
    for the validation score (accuracy, F1) against a loss."""

    steps: int
    steps_per_epoch: int
    eval_every: int
    lr: float
    optimizer: Literal["adam", "adamw"] = "adamw"
    weight_decay: float = 0.0
    warmup: int = 0
    decay: Decay | None = "cosine"
    clip: float = 0.0
    patience: int = 0
    higher_is_better: bool = False

    def lr_at(self, step: int) -> float:
        if self.decay is None:
            return self.lr
        return lr_at(step, self.steps, self.warmup, self.lr, self.decay)

    def validates_after(self, step: int, last: int) -> bool:
        """Whether ``step`` (just taken; ``last``: the step of the last validation,
        0 before the first) ends with a validation. The last step validates unless
        one came less than a quarter interval before it; a run shorter than one
        interval validates once, at its end (it must keep some weights)."""
        if step % self.eval_every == 0:
            return True
        if step != self.steps:
            return False
        return last == 0 or step - last > self.eval_every // 4


class ScheduledSettings(Protocol):
    """What a scheduled plan reads (``lm.common``, ``nmt.common``)."""

    evals_per_epoch: int
    lr: float
    weight_decay: float
    warmup: float
    clip: float
    patience: int


class EpochSettings(Protocol):
    """What a per-epoch plan reads (``tagger.common``, ``nli``)."""

    epochs: int
    lr: float
    clip: float
    patience: int


def scheduled_plan(
    cfg: ScheduledSettings,
    *,
    steps_per_epoch: int,
    epochs: float,
    decay: Decay = "cosine",
) -> Plan:
    """The LM and NMT trainers' plan from their ``common`` settings: AdamW,
    ``cfg.warmup`` of the steps warming up then ``decay``, ``evals_per_epoch``
    validations per epoch, the lowest validation loss kept."""
    total = max(1, math.ceil(epochs * steps_per_epoch))
    return Plan(
        steps=total,
        steps_per_epoch=steps_per_epoch,
        eval_every=max(1, steps_per_epoch // cfg.evals_per_epoch),
        lr=cfg.lr,
        optimizer="adamw",
        weight_decay=cfg.weight_decay,
        warmup=int(cfg.warmup * total),
        decay=decay,
        clip=cfg.clip,
        patience=cfg.patience,
    )


def per_epoch_plan(cfg: EpochSettings, *, steps_per_epoch: int) -> Plan:
    """The tagger and NLI trainers' plan: Adam at a constant rate, a validation
    after each of ``cfg.epochs`` epochs, the highest score kept."""
    return Plan(
        steps=cfg.epochs * steps_per_epoch,
        steps_per_epoch=steps_per_epoch,
        eval_every=steps_per_epoch,
        lr=cfg.lr,
        optimizer="adam",
        decay=None,
        clip=cfg.clip,
        patience=cfg.patience,
        higher_is_better=True,
    )


def epoch_stats(result: Result, *, examples: int, score: str, unit: str) -> dict:
    """Whole epochs run, the best validation's epoch and ``best_valid_<score>``,
    and ``<unit>_per_second`` over ``examples`` per epoch (per-epoch plans)."""
    per_epoch = result.plan.steps_per_epoch
    return {
        "epochs": result.steps // per_epoch,
        "best_epoch": result.best_step // per_epoch,
        f"best_valid_{score}": result.best_score,
        # (the steps as a share of epochs: a budget may stop inside one)
        f"{unit}_per_second": round(
            examples * result.steps / per_epoch / result.seconds, 1
        )
        if result.seconds
        else None,
    }


def fit_per_epoch(
    model: torch.nn.Module,
    task: Task,
    cfg: EpochSettings,
    *,
    examples: int,
    score: str,
    unit: str,
    **fit_args: Any,
) -> Result:
    """``fit`` on a per-epoch plan (the tagger and NLI trainers), with
    ``epoch_stats`` over ``examples`` training examples per epoch as the extra
    statistics; ``fit_args`` go to ``fit``."""
    plan = per_epoch_plan(cfg, steps_per_epoch=len(task.epoch_batches(0)))
    result = fit(model, task, plan, **fit_args)
    result.extra = epoch_stats(result, examples=examples, score=score, unit=unit)
    return result


def loss_stats(result: Result) -> dict:
    """The best validation loss (nats per target) and its perplexity."""
    return {
        "best_valid_loss": result.best_score,
        "best_valid_perplexity": math.exp(result.best_score),
    }


def curve_columns(*fields: str) -> list[str]:
    """The columns of a history row whose task adds ``fields`` (curve.csv)."""
    return ["step", "epoch", "lr", "train_loss", *fields, "train_seconds"]


class Task:
    """What a task supplies to the loop (subclass it): its batches, their loss and
    a validation; a task that carries state from batch to batch (an LM's hidden
    state) also overrides start_epoch, carried and restore."""

    def epoch_batches(self, epoch: int) -> Sequence[Any]:
        """Epoch ``epoch``'s batches in order (cheap descriptions, made from the
        seed and the epoch alone, so a resumed run can skip to its position)."""
        raise NotImplementedError

    def loss(self, batch: Any) -> tuple[torch.Tensor, float, float]:
        """The objective to minimise on ``batch`` (this rank's share), the summed
        training loss to report and the count it is summed over (targets,
        sentences): the curve's train loss is the ratio of their sums."""
        raise NotImplementedError

    def validate(self) -> tuple[float, dict]:
        """The validation score (rank 0 only, in eval mode) and the curve fields
        to log beside it."""
        raise NotImplementedError

    def start_epoch(self) -> None:
        """Called before an epoch's first batch (an LM resets its carried state)."""

    def carried(self) -> Any:
        """State carried from batch to batch that the checkpoint must hold."""
        return None

    def restore(self, carried: Any) -> None:
        """Set the carried state saved by ``carried``."""


@dataclass
class Result:
    """The best weights (on the CPU), the validation history (one row per
    validation: step, epoch, lr, train_loss, the task's fields, train_seconds),
    the optimiser steps taken, the summed training count (every rank's), the
    seconds spent in training steps, whether the run stopped early, and the
    task's own statistics (``extra``, added to ``stats``)."""

    best_state: dict
    best_score: float
    best_step: int
    plan: Plan
    history: list[dict] = field(default_factory=list)
    steps: int = 0
    trained: float = 0.0
    seconds: float = 0.0
    early_stopped: bool = False
    extra: dict = field(default_factory=dict)  # the task's own statistics

    @property
    def epochs_run(self) -> float:
        return round(self.steps / self.plan.steps_per_epoch, 4)

    @property
    def best_row(self) -> dict:
        """The history row of the kept weights' validation."""
        return next(r for r in self.history if r["step"] == self.best_step)

    @property
    def stats(self) -> dict:
        return {
            "steps": self.steps,
            "planned_steps": self.plan.steps,
            "steps_per_epoch": self.plan.steps_per_epoch,
            "epochs_run": self.epochs_run,
            "early_stopped": self.early_stopped,
            **self.extra,
            "train_seconds": round(self.seconds, 2),
        }


def check_kept(name: str, kept: float, best: float) -> None:
    """Warn when the kept weights do not score the validation loss they were kept
    for (exactly equal on CPU; GPU kernels may differ in the last digits)."""
    if abs(kept - best) > 1e-6 * kept:
        log.warning(
            "%s: kept weights score %.6f on valid, recorded best %.6f", name, kept, best
        )


def optimizer(model: torch.nn.Module, plan: Plan) -> torch.optim.Optimizer:
    """``plan``'s Adam or AdamW over ``model``'s parameters, as one fused kernel
    where the parameters' device has it (CPU and CUDA): the same update as the
    per-tensor loop up to rounding (tests/test_training_plan.py), and on CPU the
    per-tensor loop was 28% of the tagger's time
    (benchmarks/results/profile_trainers.json)."""
    params = list(model.parameters())
    fused = all(
        p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params
    )
    kind = torch.optim.Adam if plan.optimizer == "adam" else torch.optim.AdamW
    extra = {} if plan.optimizer == "adam" else {"weight_decay": plan.weight_decay}
    return kind(params, lr=plan.lr, fused=fused or None, **extra)


def fit(
    model: torch.nn.Module,
    task: Task,
    plan: Plan,
    *,
    seed: int,
    accel: Accel,
    group: Group = SINGLE,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    max_steps: int | None = None,
    desc: str = "train",
) -> Result:
    """Train ``model`` on ``task`` following ``plan`` on ``accel``'s device and
    precision, as one rank of ``group``. The caller builds the model under ``seed``
    and the task around it (its forward may be wrapped in DDP after this call's
    ``accel.prepare``: build it lazily). ``stop_after`` (tests) raises
    KeyboardInterrupt after that many validations, as a kill would; ``max_steps``
    (a benchmark's step budget) cuts the plan to that many steps, which still end
    with a validation."""
    if max_steps is not None and max_steps < plan.steps:
        plan = replace(plan, steps=max(1, max_steps))
    device = accel.device
    torch.manual_seed(seed + group.rank)  # dropout differs across ranks
    accel.prepare(model)
    opt = optimizer(model, plan)
    s = LoopState.start(plan)
    if checkpoint and (saved := checkpoint.load()):
        s = _resume(saved, model, opt, task, group, device)
        log.info("%s: resumed at step %d of %d", desc, s.step, plan.steps)
    log.info(
        "%s: %d parameters; %d steps (%d per epoch), validation every %d%s",
        desc,
        sum(p.numel() for p in model.parameters()),
        plan.steps,
        plan.steps_per_epoch,
        plan.eval_every,
        f"; {group.world} processes" if group.active else "",
    )
    batches = task.epoch_batches(s.epoch)
    if s.step == 0:
        task.start_epoch()
    loss_sum, count = 0.0, 0.0
    bar = tqdm(
        total=plan.steps, initial=s.step, desc=desc, unit="step",
        disable=None if group.main else True, mininterval=5,
    )  # fmt: skip
    model.train()
    evals = 0
    while s.step < plan.steps and not s.stopped:
        if s.pos >= len(batches):
            s.epoch, s.pos = s.epoch + 1, 0
            batches = task.epoch_batches(s.epoch)
            task.start_epoch()
        batch = batches[s.pos]
        s.pos += 1
        t0 = time.perf_counter()
        batch_loss, batch_count = _step(model, opt, task, batch, plan, s, accel)
        s.seconds += time.perf_counter() - t0
        loss_sum += batch_loss
        count += batch_count
        s.step += 1
        bar.update(1)
        last = s.history[-1]["step"] if s.history else 0
        if not plan.validates_after(s.step, last):
            continue
        loss_sum, count = distributed.sum_floats([loss_sum, count], group)
        s.trained += count
        _validate(model, task, plan, s, group, train_loss=loss_sum / max(1, count))
        _log_validation(desc, plan, s)
        loss_sum, count = 0.0, 0.0
        if checkpoint:
            _save(checkpoint, model, opt, task, s, group, device)
        evals += 1
        if s.stopped:
            log.info("%s: early stop, %d validations without a new best", desc, s.bad)
        elif stop_after is not None and evals >= stop_after:
            bar.close()
            raise KeyboardInterrupt("stop_after reached (test)")
    bar.close()
    loss_sum, count = distributed.sum_floats([loss_sum, count], group)
    return Result(
        best_state=s.best_state, best_score=s.best, plan=plan,
        best_step=s.best_step, history=s.history, steps=s.step,
        trained=s.trained + count, seconds=s.seconds, early_stopped=s.stopped,
    )  # fmt: skip


@dataclass
class LoopState:
    """The loop's position and bookkeeping: what a checkpoint saves beside the
    weights, optimiser, generators and carried state."""

    step: int = 0
    epoch: int = 0
    pos: int = 0  # the next batch of the epoch
    bad: int = 0  # validations since the last new best
    history: list[dict] = field(default_factory=list)
    best: float = math.inf
    best_step: int = 0
    best_state: dict | None = None
    seconds: float = 0.0  # in training steps
    trained: float = 0.0  # summed training count, every rank's
    stopped: bool = False  # early-stopped

    @classmethod
    def start(cls, plan: Plan) -> LoopState:
        """The state before the first step."""
        return cls(best=-math.inf if plan.higher_is_better else math.inf)

    def saved(self) -> dict:
        return dict(vars(self))


def _resume(saved: dict, model, opt, task: Task, group: Group, device) -> LoopState:
    """Restore the weights, optimiser, this rank's generators and carried state,
    and the loop's state from a checkpoint."""
    model.load_state_dict(saved.pop("model"))
    opt.load_state_dict(saved.pop("optimizer"))
    rng, carried = saved.pop("rng"), saved.pop("carried")
    if group.active:  # one carried state and generator per rank
        rng, carried = rng[group.rank], carried[group.rank]
    set_rng_state(rng, device)
    task.restore(carried)
    return LoopState(**saved)


def clip_gradients(parameters, max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_ to the bit, without its multiply by 1.0 when
    the norm is within ``max_norm``: on CPU that multiply rewrites every gradient
    every step (the tagger's dense 22k x 100 word-embedding gradient among them).
    On an accelerator torch's own call, which never waits for the norm."""
    params = [p for p in parameters if p.grad is not None]
    if not params or params[0].grad.device.type != "cpu":
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        return
    norm = torch.nn.utils.get_total_norm([p.grad for p in params])
    if not bool(max_norm / (norm + 1e-6) >= 1.0):  # torch's coefficient (and NaN)
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)


def _step(model, opt, task: Task, batch, plan: Plan, s: LoopState, accel: Accel):
    """One optimiser step on ``batch`` at the planned learning rate: the batch's
    summed loss and count."""
    for g in opt.param_groups:
        g["lr"] = plan.lr_at(s.step)
    with accel.autocast():
        objective, batch_loss, batch_count = task.loss(batch)
    opt.zero_grad(set_to_none=True)
    objective.backward()
    if plan.clip:
        clip_gradients(model.parameters(), plan.clip)
    opt.step()
    accel.synchronize()
    return batch_loss, batch_count


def _log_validation(desc: str, plan: Plan, s: LoopState) -> None:
    row = s.history[-1]
    log.info(
        "%s: step %d/%d (epoch %.2f, %.0f per second): train loss %.4f, %s%s",
        desc,
        s.step,
        plan.steps,
        row["epoch"],
        s.trained / max(s.seconds, 1e-9),
        row["train_loss"],
        ", ".join(
            f"{k} {v:.4f}"
            for k, v in row.items()
            if k.startswith("valid_") and isinstance(v, float)
        ),
        "" if s.bad else " (best)",
    )


def _validate(model, task: Task, plan: Plan, s: LoopState, group: Group, *, train_loss):
    """Validate (rank 0, in eval mode), append the history row, keep the best
    weights and decide on early stopping."""
    verdict = None
    if group.main:  # in fp32; the other ranks wait for the verdict
        was = model.training
        model.eval()
        with torch.no_grad():
            verdict = task.validate()
        model.train(was)
    score, fields = distributed.broadcast(verdict, group)
    step = s.step
    s.history.append(
        {
            "step": step,
            "epoch": round(step / plan.steps_per_epoch, 4),
            "lr": plan.lr_at(step - 1),
            "train_loss": train_loss,
            **fields,
            "train_seconds": round(s.seconds, 2),
        }
    )
    better = score > s.best if plan.higher_is_better else score < s.best
    if better:
        s.best, s.best_step, s.bad = score, step, 0
        s.best_state = {
            k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()
        }
    else:
        s.bad += 1
    s.stopped = bool(plan.patience and s.bad >= plan.patience)


def _save(checkpoint: Checkpoint, model, opt, task: Task, s: LoopState, group, device):
    carried, rng = task.carried(), rng_state(device)
    if group.active:
        carried, rng = (
            distributed.gather(carried, group),
            distributed.gather(rng, group),
        )
    if group.main:
        checkpoint.save(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "rng": rng,
                "carried": carried,
                **s.saved(),
            }
        )
