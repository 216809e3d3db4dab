"""Where and how the neural trainers compute: the device, the float precision, and
optional compilation (the ``accel`` section of params.yaml; the device stays in
each model family's section).

Precision (``accel.precision``):

- ``auto``: bf16 autocast and TF32 matrix products on CUDA; plain fp32 on the CPU,
  unless the trainer asks for bf16 on a CPU with bf16 units (``lm.common.cpu_bf16``:
  the LSTM LM trains 1.4x faster there at the same validation loss,
  benchmarks/results/roofline.json; the NMT and tagger steps are slower under bf16,
  so theirs stay fp32).
- ``fp32``: fp32 everywhere, TF32 off (the strict reference).
- ``tf32``: fp32 tensors, TF32 matrix products and convolutions on CUDA (fp32 on
  the CPU, which has no TF32).
- ``bf16``: autocast to bfloat16 plus TF32 on CUDA. Also allowed on the CPU: fast
  for the LM on a CPU with bf16 units (AVX512-BF16 or AMX), slow elsewhere, where
  oneDNN's bf16 LSTM is missing and an LSTM under CPU autocast fails.

Weights, optimiser state and losses stay fp32 under autocast (the loss functions
run in fp32 by autocast's own rules), so no gradient scaler is needed for bf16.
With ``precision: fp32`` (or ``auto`` without ``cpu_bf16``), ``compile: false`` and
one process, the CPU path is the plain one: the same operations in the same order
as without this module, so CPU results are unchanged bit for bit.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch

from firth.errors import ConfigError

log = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "tf32", "bf16"]


def use_threads(threads: int) -> None:
    """torch's intra-op threads for this process: ``threads`` (a section's
    ``threads`` key), or torch's default, every core, for 0. Each stage sets it
    once, explicitly, after reading its params."""
    if threads:
        torch.set_num_threads(threads)


def resolve_device(name: str, *, key: str = "device") -> torch.device:
    """``auto`` -> CUDA when torch sees a GPU, else the CPU; ``cuda`` without a GPU
    is an error naming ``key``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"{key} is '{name}' but torch sees no GPU")
    return torch.device(name)


def cpu_has_bf16() -> bool:
    """Whether this CPU has bfloat16 units oneDNN uses (AVX512-BF16 or AMX)."""
    return torch.backends.mkldnn.is_available() and bool(
        torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )


def resolve_precision(
    precision: Precision, device: torch.device, *, cpu_bf16: bool = False
) -> str:
    """The precision actually used: ``fp32``, ``tf32`` or ``bf16``. ``cpu_bf16``
    (a trainer's own switch, e.g. ``lm.common.cpu_bf16``): under ``auto``, bf16 on a
    CPU that has bf16 units too (fp32 on one without: no error)."""
    if precision == "auto":
        if device.type == "cuda" or (cpu_bf16 and cpu_has_bf16()):
            return "bf16"
        return "fp32"
    if precision == "tf32" and device.type != "cuda":
        return "fp32"
    return precision


@dataclass(frozen=True)
class Accel:
    """A resolved device and precision, and whether to compile the models."""

    device: torch.device
    precision: str  # fp32 | tf32 | bf16 (resolved)
    compile: bool = False

    @classmethod
    def build(
        cls,
        *,
        device: str,
        precision: Precision,
        compile: bool,
        key: str,
        local_rank: int = 0,
        cpu_bf16: bool = False,
    ) -> Accel:
        """``local_rank``: the GPU of this DDP process when ``device`` names none;
        ``cpu_bf16``: as resolve_precision."""
        dev = resolve_device(device, key=key)
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", local_rank)
        acc = cls(dev, resolve_precision(precision, dev, cpu_bf16=cpu_bf16), compile)
        acc.apply_matmul_precision()
        return acc

    @classmethod
    def cpu(cls) -> Accel:
        return cls(torch.device("cpu"), "fp32", False)

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def apply_matmul_precision(self) -> None:
        """TF32 for fp32 matrix products and cuDNN convolutions/RNNs on CUDA unless
        the precision is strict fp32 (a process-wide torch setting)."""
        if not self.cuda:
            return
        mode = "tf32" if self.precision in ("tf32", "bf16") else "ieee"
        # torch >= 2.9's per-backend API (mixing it with allow_tf32 is an error)
        torch.backends.cuda.matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
        torch.backends.cudnn.rnn.fp32_precision = mode

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast around forward passes and losses, or nothing."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def to(self, x: torch.Tensor) -> torch.Tensor:
        """A host tensor on the device: through pinned memory with a non-blocking
        copy on CUDA (the copy overlaps the kernels still queued), a plain ``to``
        (a no-op) on the CPU."""
        if self.cuda and x.device.type == "cpu":
            return x.pin_memory().to(self.device, non_blocking=True)
        return x.to(self.device)

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        """Move ``model`` to the device and, with ``compile``, compile its forward
        in place (``nn.Module.compile``: parameter names and ``state_dict`` keys
        stay as they are, so checkpoints load either way)."""
        model.to(self.device)
        if self.compile:
            log.info("compiling the model's forward with torch.compile")
            model.compile()
        return model

    def synchronize(self) -> None:
        """Wait for queued CUDA kernels (before reading a timer)."""
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def describe(self) -> dict:
        return {
            "device": str(self.device),
            "precision": self.precision,
            "compile": self.compile,
        }


def mover(target: torch.device | str | Accel) -> Callable[[torch.Tensor], torch.Tensor]:
    """How a batch's tensors go to ``target``: an Accel's ``to`` (pinned memory,
    non-blocking on CUDA), or a plain ``x.to(target)`` for a device."""
    if isinstance(target, Accel):
        return target.to
    return lambda x: x.to(target)
