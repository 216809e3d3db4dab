"""Same seed, another machine: how far the default's trained models move when
their stages run on another CPU's kernels, against how far they move with the
seed. A copy of a trained project (``FIRTH_PROJECT``) reruns chosen training
stages and their evaluations with ATen's kernels for another instruction set
(``ATEN_CPU_CAPABILITY``, e.g. avx2 on an AVX-512 machine, as an AVX2-only CPU
runs them) and MKL's code path for it (``MKL_CBWR``); everything else (seed,
params, data, torch build, threads) is the same. Each tracked metric of the
rerun evaluations is compared with the original by firth.compare: its delta, the
seed band compare holds it against, and whether the move stays inside. Writes
benchmarks/results/cross_machine.json (the report's "Same seed, another machine"
section reads it).

    FIRTH_PROJECT=/path/to/trained/clone python benchmarks/cross_machine.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import head_commit, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))

# (training stages, evaluation stages) per model: the tagger and the
# translation model with two seeds in the default
GROUPS = {
    "tagger wnut16-crf": (
        ["train-tagger@wnut16-crf-13", "train-tagger@wnut16-crf-14"],
        ["evaluate-tagger@wnut16-crf"],
    ),
    "nmt bahdanau": (
        ["train-nmt@bahdanau", "train-nmt@bahdanau-seed14"],
        ["evaluate-nmt@bahdanau", "evaluate-nmt@bahdanau-seed14"],
    ),
    "lm lstm": (
        ["train-lm@lstm", "train-lm@lstm-seed14"],
        ["evaluate-lm@lstm", "evaluate-lm@lstm-seed14"],
    ),
}
OTHER = {"AVX512": "avx2", "AVX2": "default", "DEFAULT": None}


def _capability(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _copy(src: Path, dst: Path) -> None:
    """The project without its virtual environment (the original's runs it)."""
    dst.mkdir(parents=True)
    pack = subprocess.Popen(
        ["tar", "-C", str(src), "--exclude=./.venv", "-cf", "-", "."],
        stdout=subprocess.PIPE,
    )
    subprocess.run(["tar", "-C", str(dst), "-xf", "-"], stdin=pack.stdout, check=True)
    if pack.wait():
        raise SystemExit(f"tar of {src} failed")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--groups",
        nargs="+",
        default=sorted(GROUPS),
        choices=sorted(GROUPS),
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/cross_machine.json"))
    p.add_argument("--keep", action="store_true", help="keep the copy")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from firth import compare as cmp

    venv = PROJECT / ".venv" / "bin"
    native = _capability(str(venv / "python"))
    other = OTHER.get(native)
    if other is None:
        raise SystemExit(f"no other kernel set below {native} to emulate")
    env = {
        **os.environ,
        "PATH": f"{venv}:{os.environ['PATH']}",
        "ATEN_CPU_CAPABILITY": other,
        "MKL_CBWR": other.upper() if other != "default" else "COMPATIBLE",
    }
    work = Path(tempfile.mkdtemp(prefix="firth-cross-machine-"))
    copy = work / "project"
    _copy(PROJECT, copy)
    env["PYTHONPATH"] = str(copy / "src")  # the copy's own code, not the original's
    stages, evaluations = [], []
    for g in args.groups:
        stages += GROUPS[g][0]
        evaluations += GROUPS[g][1]
    seconds = {}
    for stage in [*stages, *evaluations]:
        force = ["--force"] if stage in stages else []
        t0 = time.perf_counter()
        subprocess.run(
            ["dvc", "repro", "--single-item", *force, stage],
            cwd=copy,
            env=env,
            check=True,
        )
        seconds[stage] = round(time.perf_counter() - t0, 1)
    declared = cmp.declared_metrics(PROJECT)
    before = cmp.load_folder(PROJECT, declared)
    after = cmp.load_folder(copy, declared)
    evaluated = {f"/{e.split('@')[1]}/" for e in evaluations}
    rows = [
        r
        for r in cmp.compare(before, after)
        if r.tracked and r.delta is not None and any(run in r.path for run in evaluated)
    ]
    metrics = [
        {
            "path": r.path,
            "key": r.key,
            "native": r.old,
            "other": r.new,
            "delta": r.delta,
            "tolerance": r.rule.tolerance(r.old),
            "seed_band": r.noise,
            "inside_band": None if r.noise is None else abs(r.delta) <= r.noise,
            "status": r.status,
        }
        for r in rows
    ]
    result = {
        "command": "python benchmarks/cross_machine.py "
        + " ".join(argv or sys.argv[1:]),
        "machine": machine(),
        "commit": head_commit(ROOT),
        "models_from": head_commit(PROJECT),
        "native": native,
        "emulated": {k: env[k] for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")},
        "stages": seconds,
        "metrics": metrics,
        "summary": {
            "tracked": len(metrics),
            "moved": sum(1 for m in metrics if m["delta"] != 0),
            "inside_seed_band": sum(1 for m in metrics if m["inside_band"]),
            "flagged": sum(1 for m in metrics if m["status"] in cmp.FLAGS),
        },
    }
    write_result(args.out, result)
    print(
        "\n".join(
            f"{m['path']}:{m['key']} {m['native']:.4g} -> {m['other']:.4g} "
            f"(band {m['seed_band']}, {m['status'] or 'within tolerance'})"
            for m in metrics
        )
    )
    if not args.keep:
        subprocess.run(["rm", "-rf", str(work)], check=True)


if __name__ == "__main__":
    main()
