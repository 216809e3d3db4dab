"""Distributed data-parallel training (torch DDP) under torchrun.

A training stage with ``accel.processes: N > 1`` starts itself again under
``torch.distributed.run`` (torchrun) with N processes on this node; for several
nodes, run the stage under torchrun yourself (its ``--nnodes``/``--rdzv-*``
options) and each process joins the group from the environment torchrun sets
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``...). The backend is NCCL
on CUDA and gloo on the CPU.

Every rank builds the same model from the same seed (DDP also broadcasts rank 0's
weights), trains on its share of each *global* batch, and DDP averages the
gradients, so a step equals one step of a single process on the whole global
batch up to the order of floating-point sums. Rank 0 alone writes checkpoints,
metrics and outputs.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist

from firth import stage_cli
from firth.accel import Accel
from firth.config import load_section
from firth.errors import FirthError
from firth.results import StageOutput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Group:
    """This process's place in the data-parallel group (one process: rank 0 of 1)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world > 1


SINGLE = Group()


def under_torchrun() -> bool:
    return "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ


def should_launch(processes: int) -> bool:
    """Start torchrun ourselves: more than one process asked for and not already
    inside torchrun."""
    return processes > 1 and not under_torchrun()


def launch(script: str | Path, argv: Sequence[str], processes: int) -> None:
    """Run ``script argv`` as ``processes`` DDP processes on this node through
    torchrun (``python -m torch.distributed.run --standalone``) and wait; a failed
    rank fails the stage."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={processes}",
        str(script),
        *argv,
    ]
    log.info("starting %d DDP processes: %s", processes, " ".join(cmd))
    rc = subprocess.run(cmd, check=False).returncode
    if rc:
        raise FirthError(f"distributed training failed (torchrun exit status {rc})")


def init(device_type: str) -> Group:
    """Join the process group torchrun describes (NCCL on CUDA, gloo on the CPU);
    a single process outside torchrun gets :data:`SINGLE` and no group."""
    if not under_torchrun() or int(os.environ["WORLD_SIZE"]) == 1:
        return SINGLE
    group = Group(
        rank=int(os.environ["RANK"]),
        world=int(os.environ["WORLD_SIZE"]),
        local_rank=int(os.environ["LOCAL_RANK"]),
    )
    if not dist.is_initialized():
        backend = "nccl" if device_type == "cuda" else "gloo"
        if device_type == "cuda":
            torch.cuda.set_device(group.local_rank)
        dist.init_process_group(backend=backend, timeout=timedelta(minutes=30))
    if not group.main:  # one voice in the log: rank 0's
        logging.getLogger().setLevel(logging.WARNING)
    local, threads = int(os.environ.get("LOCAL_WORLD_SIZE", 1)), torch.get_num_threads()
    if group.main and device_type == "cpu" and local * threads > (os.cpu_count() or 1):
        log.warning(
            "%d processes x %d torch threads on %d cores: oversubscribed CPU "
            "training runs many times slower; lower the section's threads "
            "(they are per process)",
            local,
            threads,
            os.cpu_count(),
        )
    log.info(
        "DDP: rank %d of %d (%s backend)", group.rank, group.world, dist.get_backend()
    )
    return group


def shutdown() -> None:
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def shard(total: int, group: Group, *, what: str) -> slice:
    """This rank's contiguous share of ``total`` items that split evenly."""
    if total % group.world:
        raise FirthError(
            f"{what} ({total}) must be divisible by the number of DDP processes "
            f"({group.world})"
        )
    per = total // group.world
    return slice(group.rank * per, (group.rank + 1) * per)


def sum_floats(values: Sequence[float], group: Group) -> list[float]:
    """Element-wise sum over the ranks (float64 on the CPU-side wire)."""
    if not group.active:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t)
    return t.cpu().tolist()


def broadcast(obj: Any, group: Group) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if not group.active:
        return obj
    box = [obj if group.main else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(obj: Any, group: Group) -> list[Any]:
    """Every rank's ``obj``, in rank order, on every rank."""
    if not group.active:
        return [obj]
    out: list[Any] = [None] * group.world
    dist.all_gather_object(out, obj)
    return out


def wrap(
    model: torch.nn.Module, group: Group, device: torch.device, *, find_unused: bool
):
    """``model`` in DDP when the group is active, else as is. ``find_unused``: some
    parameters may get no gradient in a step (an adaptive-softmax tail without
    targets in the batch); DDP then walks the graph each step to find them."""
    if not group.active:
        return model
    from torch.nn.parallel import DistributedDataParallel

    ids = (
        [device.index if device.index is not None else 0]
        if device.type == "cuda"
        else None
    )
    return DistributedDataParallel(
        model, device_ids=ids, find_unused_parameters=find_unused
    )


def start_stage(
    args,
    *,
    device: str,
    key: str,
    script: str | Path,
    ddp: bool,
    cpu_bf16: bool = False,
) -> tuple[Accel, Group] | None:
    """The ``accel`` settings of a training stage (``args``: its parsed command
    line, firth.stage_cli): its Accel and its place in the DDP group. With
    ``accel.processes > 1`` outside torchrun (and a trainer that supports DDP,
    ``ddp``), start ``script`` with the same arguments under torchrun instead and
    return None once every rank has finished. ``cpu_bf16``: the trainer's own
    switch for bf16 on a CPU with bf16 units (firth.accel.resolve_precision)."""
    cfg = load_section("accel", stage_cli.params_path(args))
    if ddp and should_launch(cfg.processes):
        launch(script, args.argv, cfg.processes)
        return None
    if not ddp and cfg.processes > 1:
        log.warning(
            "accel.processes is %d but this trainer runs on one process "
            "(DDP is for the lm and nmt trainers)",
            cfg.processes,
        )
    acc = Accel.build(
        device=device,
        precision=cfg.precision,
        compile=cfg.compile,
        key=key,
        local_rank=int(os.environ.get("LOCAL_RANK", 0)),
        cpu_bf16=cpu_bf16,
    )
    group = init(acc.device.type) if ddp else SINGLE
    log.info(
        "%s, %s precision%s%s",
        acc.device,
        acc.precision,
        ", compiled" if acc.compile else "",
        f", DDP over {group.world} processes" if group.active else "",
    )
    return acc, group


class Trainer(Protocol):
    """One training stage's job, built from already-loaded data (firth.<task>.stage:
    LmTraining, NmtTraining, CellTraining, NliTraining)."""

    def fit(
        self, accel: Accel, group: Group, *, max_steps: int | None = None
    ) -> StageOutput | None:
        """The trained model's outputs (None on DDP ranks other than 0);
        ``max_steps``: a step budget (benchmarks)."""
        ...

    def clear(self) -> None:
        """Drop the checkpoints once the outputs are written."""
        ...


def train_stage(
    args,
    job: Trainer,
    *,
    device: str,
    key: str,
    script: str | Path,
    ddp: bool,
    curve: list[str],
    cpu_bf16: bool = False,
) -> None:
    """What every neural training stage does with its parsed command line
    ``args`` (firth.stage_cli): resolve ``accel`` (or relaunch ``script`` under
    torchrun, ``ddp``), fit ``job``, write the model folder ``args.out`` and
    ``args.reports``' train.json and curve.csv (rank 0), then clear the
    checkpoints. ``cpu_bf16``: as start_stage."""
    started = start_stage(
        args, device=device, key=key, script=script, ddp=ddp, cpu_bf16=cpu_bf16
    )
    if started is None:  # the torchrun ranks have written everything
        return
    trained = job.fit(*started)
    if trained is not None:  # rank 0 writes
        trained.save(args.out, args.reports, curve)
        job.clear()
    if ddp:
        shutdown()
