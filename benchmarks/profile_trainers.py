"""Where each trainer's time goes: one training stage of the default DAG per
trainer, run through benchmarks/budget_probe.py (a scratch project, the stage's
own code and the default's params with a short budget) under the py-spy sampling
profiler, every sample classified by its Python stack:

- ``startup``: importing modules (before training starts; the first ~50 ms of
  the process may be missed while py-spy attaches);
- ``optimizer``: inside ``torch.optim`` (the step, zeroing gradients);
- ``backward``: inside autograd's backward pass;
- ``validation``: inside ``firth.training._validate`` (the validation loss and
  the curve's metrics, checkpoints);
- ``forward``: the rest of ``firth.training._step`` (the model's loss: forward
  pass and the per-step Python work around it);
- ``other``: batching, data loading, writing results.

Each trainer's share of samples per class and its ten busiest leaf frames (the
Python line that called into a kernel, or the Python code itself) go to
benchmarks/results/profile_trainers.json. py-spy samples Python stacks only:
time inside a torch kernel is charged to the Python line that called it.

    python benchmarks/profile_trainers.py --from /path/to/a/checkout/after/make-run
    python benchmarks/profile_trainers.py --only nmt tagger

Needs py-spy on PATH (``pip install py-spy``; not a Firth dependency). One
stage at a time, with the threads the default params ask for (1).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import head_commit, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "profile_trainers.json"

# name -> (stage, --set overrides that shorten it to about a minute)
TRAINERS = {
    "nmt-bahdanau": ("train-nmt@bahdanau", ["nmt.runs.bahdanau.epochs=0.2"]),
    "nmt-pointer": ("train-nmt@pointer", ["nmt.runs.pointer.epochs=0.15"]),
    "nmt-transformer": ("train-nmt@transformer", ["nmt.runs.transformer.epochs=0.2"]),
    "lm-lstm": ("train-lm@lstm", ["lm.runs.lstm.epochs=0.1"]),
    "tagger-crf": ("train-tagger@wnut16-crf-13", ["tagger.common.epochs=3"]),
    "sgns": ("train-embeddings-sgns@13", ["embeddings.common.epochs=1"]),
}
CLASSES = ["startup", "optimizer", "backward", "validation", "forward", "other"]


def classify(frames: list[str]) -> str:
    """The class of one sample from its frames, outermost first."""
    files = " ".join(frames)
    if "_find_and_load" in files and "firth/training.py" not in files:
        return "startup"
    if "torch/optim/" in files:
        return "optimizer"
    if "torch/autograd/" in files or "backward (torch/_tensor.py" in files:
        return "backward"
    if "_validate (firth/training.py" in files:
        return "validation"
    if "_step (firth/training.py" in files:
        return "forward"
    return "other"


def summarise(raw: Path) -> dict:
    """Shares per class and the busiest leaf frames of a py-spy raw file."""
    classes: Counter = Counter()
    leaves: Counter = Counter()
    total = 0
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if not f.startswith("process ")]
        if not frames:
            continue
        total += n
        classes[classify(frames)] += n
        leaves[frames[-1]] += n
    share = {c: round(classes[c] / total, 3) if total else 0.0 for c in CLASSES}
    top = [
        {"frame": f, "share": round(n / total, 3)} for f, n in leaves.most_common(10)
    ]
    return {"samples": total, "share": share, "top_leaves": top}


def stage_pid(runner: subprocess.Popen, timeout: float = 120.0) -> int:
    """The pid of the stage process budget_probe starts (its child running a
    stages/ script), once it exists."""
    import psutil

    deadline = time.monotonic() + timeout
    parent = psutil.Process(runner.pid)
    while time.monotonic() < deadline:
        for child in parent.children(recursive=True):
            try:
                if any("stages/" in part for part in child.cmdline()):
                    return child.pid
            except psutil.Error:
                continue
        if runner.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"no stage process under budget_probe (pid {runner.pid})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="origin", type=Path, default=ROOT)
    p.add_argument("--only", nargs="*", choices=sorted(TRAINERS))
    p.add_argument("--rate", type=int, default=50, help="py-spy samples per second")
    args = p.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy not found on PATH: pip install py-spy")
    rows = {}
    for name in args.only or TRAINERS:
        stage, sets = TRAINERS[name]
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "raw.txt"
            probe = [
                sys.executable,
                str(ROOT / "benchmarks" / "budget_probe.py"),
                f"profile-{name}",
                stage,
                "--from",
                str(args.origin),
                *[a for s in sets for a in ("--set", s)],
            ]
            runner = subprocess.Popen(probe, cwd=ROOT, stdout=subprocess.DEVNULL)
            pid = stage_pid(runner)
            cmd = [spy, "record", "--pid", str(pid), "--format", "raw"]
            cmd += ["--rate", str(args.rate), "-o", str(raw)]
            spied = subprocess.run(cmd, capture_output=True, text=True)
            if runner.wait() != 0 or not raw.exists():
                raise SystemExit(
                    f"{name}: exit {runner.returncode}; {spied.stderr[-2000:]}"
                )
            rows[name] = {"stage": stage, "set": sets, **summarise(raw)}
        (ROOT / "benchmarks" / "results" / "probes" / f"profile-{name}.json").unlink(
            missing_ok=True
        )
        share = rows[name]["share"]
        print(name, " ".join(f"{c} {share[c]:.0%}" for c in CLASSES), flush=True)
    previous = {}
    if OUT.exists() and args.only:
        previous = json.loads(OUT.read_text()).get("trainers", {})
    write_result(
        OUT,
        {
            "machine": machine(),
            "commit": head_commit(ROOT),
            "command": "python benchmarks/profile_trainers.py "
            + " ".join(sys.argv[1:]),
            "note": "py-spy samples of Python stacks; kernel time is charged to "
            "the Python line that called it",
            "trainers": {**previous, **rows},
        },
    )
    print(OUT)


if __name__ == "__main__":
    main()
