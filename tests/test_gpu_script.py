"""benchmarks/gpu.sh: a machine without CUDA is told so, and nothing is written."""

import subprocess

import pytest
import torch
from conftest import ROOT


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs it for real")
def test_gpu_script_stops_cleanly_without_cuda():
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu.sh")], capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no CUDA device visible to torch" in proc.stderr
    assert not (ROOT / "benchmarks" / "results" / "gpu" / "device.json").exists()
