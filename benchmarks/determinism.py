"""Are repeated trainings bit-identical? One language-model run of a profile trained
``--repeats`` times with its seed and params, each in a fresh process (the stage's
own command, `stages/train_lm.py RUN`, in a scratch root that links the profile's
subsampled text), for each thread count and each environment variant; the trained
weights are compared byte for byte with the first repeat's, and the largest absolute
difference of any parameter and of the best validation perplexity is kept.

Environment variants (``--variants``):
- ``plain``: the environment as it is;
- ``cbwr``: ``MKL_CBWR=AUTO,STRICT``, Intel MKL's conditional numerical
  reproducibility (the same results for the same thread count, whatever the memory
  alignment of the operands).

    python benchmarks/determinism.py         # lstm, 5 repeats, 1 and 2 threads
    FIRTH_PROJECT=path/to/clone python benchmarks/determinism.py --runs lstm ffnn

Writes benchmarks/results/determinism.json (or --out). Needs the profile's
data/subsampled/text (after `dvc repro subsample-text`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml
from common import head_commit, machine, write_result

from firth.query import stage_command

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
VARIANTS = {"plain": {}, "cbwr": {"MKL_CBWR": "AUTO,STRICT"}}


def _scratch(where: Path, threads: int) -> Path:
    """A project root with the profile's params (threads set) and its text."""
    root = where / f"threads-{threads}"
    text = root / "data" / "subsampled"
    text.mkdir(parents=True)
    (text / "text").symlink_to(PROJECT / "data" / "subsampled" / "text")
    params = yaml.safe_load((PROJECT / "params.yaml").read_text())
    params["lm"]["common"]["threads"] = threads
    params["lm"]["common"]["device"] = "cpu"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


def _train(root: Path, run: str, env: dict) -> tuple[dict, float, float]:
    """Train ``run`` once; its state dict, best valid perplexity and seconds."""
    shutil.rmtree(root / "data" / "lm" / run, ignore_errors=True)
    shutil.rmtree(root / "data" / "checkpoints", ignore_errors=True)
    t0 = time.perf_counter()
    _python, script, *args = stage_command(PROJECT, f"train-lm@{run}")
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"train_lm.py {run} failed:\n{proc.stderr[-2000:]}")
    state = torch.load(root / "data" / "lm" / run / "model.pt", map_location="cpu")
    stats = json.loads((root / "reports" / "lm" / run / "train.json").read_text())
    return state, stats["best_valid_perplexity"], seconds


def _digest(state: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def compare(run: str, threads: int, variant: str, repeats: int, where: Path) -> dict:
    root = _scratch(where / variant / run, threads)
    env = os.environ | VARIANTS[variant]
    first = None
    digests, ppls, seconds, max_diff = [], [], [], 0.0
    for _ in range(repeats):
        state, ppl, secs = _train(root, run, env)
        digests.append(_digest(state)[:16])
        ppls.append(ppl)
        seconds.append(round(secs, 1))
        if first is None:
            first = state
        else:
            for name, tensor in state.items():
                diff = (tensor.double() - first[name].double()).abs().max().item()
                max_diff = max(max_diff, diff)
    row = {
        "run": run,
        "threads": threads,
        "variant": variant,
        "env": VARIANTS[variant],
        "repeats": repeats,
        "distinct_weights": len(set(digests)),
        "bit_identical": len(set(digests)) == 1,
        "weights_sha256_prefixes": digests,
        "max_abs_param_diff": max_diff,
        "best_valid_perplexities": ppls,
        "max_abs_perplexity_diff": max(ppls) - min(ppls),
        "seconds": seconds,
    }
    print(json.dumps({k: row[k] for k in list(row)[:8]}), flush=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", nargs="+", default=["lstm"], help="names under lm.runs")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--repeats", type=int, default=5)
    out = ROOT / "benchmarks/results/determinism.json"
    p.add_argument("--out", type=Path, default=out)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="firth-determinism-") as tmp:
        for variant in args.variants:
            for run in args.runs:
                for threads in args.threads:
                    rows.append(compare(run, threads, variant, args.repeats, Path(tmp)))
    head = head_commit(ROOT)
    write_result(
        args.out,
        {
            "machine": machine(),
            "torch": torch.__version__,
            "commit": head,
            "command": "python benchmarks/determinism.py " + " ".join(sys.argv[1:]),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
