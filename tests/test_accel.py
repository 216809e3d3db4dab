"""firth.accel: the precision table, the device errors, the bf16 autocast path and
torch.compile on the CPU (the CUDA half runs in benchmarks/gpu.sh)."""

from __future__ import annotations

import pytest
import torch
from conftest import run_stage
from test_lm_neural import _fit

from firth.accel import Accel, cpu_has_bf16, resolve_device, resolve_precision
from firth.config import AccelParams, validate_section
from firth.errors import ConfigError

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


@pytest.mark.parametrize(
    ("asked", "cpu", "cuda"),
    [
        ("auto", "fp32", "bf16"),
        ("fp32", "fp32", "fp32"),
        ("tf32", "fp32", "tf32"),  # the CPU has no TF32
        ("bf16", "bf16", "bf16"),
    ],
)
def test_precision_table(asked, cpu, cuda):
    assert resolve_precision(asked, CPU) == cpu
    assert resolve_precision(asked, CUDA) == cuda


@pytest.mark.parametrize("units", [True, False])
def test_a_trainers_cpu_bf16_switch_needs_bf16_units(monkeypatch, units):
    """``cpu_bf16`` (lm.common.cpu_bf16) turns ``auto`` into bf16 on a CPU with bf16
    units and leaves fp32 on one without (no error); it never overrides an explicit
    precision, and CUDA's ``auto`` is bf16 either way."""
    monkeypatch.setattr("firth.accel.cpu_has_bf16", lambda: units)
    assert resolve_precision("auto", CPU, cpu_bf16=True) == (
        "bf16" if units else "fp32"
    )
    assert resolve_precision("auto", CPU, cpu_bf16=False) == "fp32"
    assert resolve_precision("fp32", CPU, cpu_bf16=True) == "fp32"
    assert resolve_precision("auto", CUDA, cpu_bf16=True) == "bf16"
    assert Accel.build(
        device="cpu", precision="auto", compile=False, key="k", cpu_bf16=True
    ).precision == ("bf16" if units else "fp32")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_a_gpu_names_the_key():
    assert resolve_device("auto") == CPU
    with pytest.raises(ConfigError, match="lm.common.device is 'cuda' but torch"):
        resolve_device("cuda", key="lm.common.device")


def test_accel_section_refuses_bad_values():
    ok = {"precision": "auto", "compile": False, "processes": 1}
    assert validate_section(AccelParams, ok, name="accel").processes == 1
    with pytest.raises(ConfigError, match="accel.precision"):
        validate_section(AccelParams, {**ok, "precision": "fp16"}, name="accel")
    with pytest.raises(ConfigError, match="accel.processes"):
        validate_section(AccelParams, {**ok, "processes": 0}, name="accel")


def test_the_cpu_default_is_the_plain_path():
    """fp32 on the CPU: no autocast, and ``to`` hands back the same tensor."""
    a = Accel.cpu()
    x = torch.ones(3)
    assert a.to(x) is x
    with a.autocast():
        assert not torch.is_autocast_enabled("cpu")
        assert torch.nn.Linear(3, 2)(x).dtype == torch.float32


@pytest.mark.parametrize(
    "family",
    [
        "gru",
        "transformer",
        pytest.param(
            "lstm",
            marks=pytest.mark.skipif(
                not cpu_has_bf16(), reason="oneDNN's bf16 LSTM needs bf16 units"
            ),
        ),
    ],
)
def test_bf16_autocast_trains_close_to_fp32(family):
    """Under bf16 the matrix products run in bfloat16 while the weights, the log
    probabilities and the loss stay fp32; the valid losses land within 1% of the
    fp32 run's, and differ from them (so autocast really was on)."""
    bf16 = Accel(CPU, "bf16")
    with bf16.autocast():
        assert torch.nn.Linear(3, 2)(torch.ones(3)).dtype == torch.bfloat16
    m32, r32 = _fit(family)
    m16, r16 = _fit(family, accel=bf16)
    assert all(p.dtype == torch.float32 for p in m16.parameters())
    a = [r["valid_loss"] for r in r32.history]
    b = [r["valid_loss"] for r in r16.history]
    assert b == pytest.approx(a, rel=1e-2)
    assert a != b


def test_compiled_forward_trains_like_eager():
    """torch.compile of the forward (in place): the same curve within float
    noise, and the same state_dict keys, so checkpoints load either way."""
    m_eager, eager = _fit("gru")
    m_comp, comp = _fit("gru", accel=Accel(CPU, "fp32", compile=True))
    assert [r["valid_loss"] for r in comp.history] == pytest.approx(
        [r["valid_loss"] for r in eager.history], rel=1e-5
    )
    assert list(m_comp.state_dict()) == list(m_eager.state_dict())


def test_nmt_stage_under_bf16_records_it_and_stays_close(tmp_path):
    """The translation stage with ``accel.precision: bf16`` (on the CPU here): the
    loss curve within 2% of fp32's, the precision recorded in train.json."""
    import csv
    import json

    from test_distributed import nmt_project

    curves = {}
    for precision in ("fp32", "bf16"):
        root = tmp_path / precision
        nmt_project(root, 1, precision)
        run_stage(root, "train-nmt@bahdanau")
        stats = json.loads((root / "reports/nmt/bahdanau/train.json").read_text())
        assert stats["precision"] == precision
        with open(root / "reports/nmt/bahdanau/curve.csv", encoding="utf-8") as f:
            curves[precision] = [float(r["valid_loss"]) for r in csv.DictReader(f)]
    assert curves["bf16"] == pytest.approx(curves["fp32"], rel=2e-2)
    assert curves["bf16"] != curves["fp32"]
