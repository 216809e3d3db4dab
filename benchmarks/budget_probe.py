"""Budget probes: one training stage of the default DAG run outside DVC, in a
scratch project, with some params changed and some of its inputs taken from
another profile, to see how far a budget takes a model on the validation split
(never the test split: the probe runs the training stage only).

The stage's inputs are its dvc.yaml deps under data/, linked from this project's
data/ (after `make run`) or, with ``--data PATH=PROFILE``, from that profile's
(e.g. the full profile's whole training corpus; ``--from`` another checkout's,
such as the main worktree's); params.yaml is this project's
with every ``--set key=value`` applied (YAML values, as `dvc exp run -S`). The
stage takes the threads its params ask for (``--set nmt.common.threads=1``). Writes
benchmarks/results/probes/<name>.json: the command, the overrides, every input's
source and sha256, the commit, the machine's speed probe before and after, the
wall seconds, and every JSON and CSV file the stage wrote under reports/ (its
train.json statistics and its validation curve).

    python benchmarks/budget_probe.py pointer-all-pairs train-nmt@pointer \\
        --set nmt.runs.pointer.epochs=2 \\
        --data data/subsampled/parallel/train.tsv=profiles/full
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from common import head_commit, machine, speed_probe, write_result

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "probes"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    files = (
        sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    )
    for f in files:
        with f.open("rb") as fh:
            for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def apply(params: dict, assignment: str) -> None:
    """``key.path=value`` (the value parsed as YAML) set in ``params``; the key
    must exist, as DVC's strict params would have it."""
    key, sep, raw = assignment.partition("=")
    if not sep:
        raise SystemExit(f"--set {assignment!r}: expected key=value")
    *parents, last = key.split(".")
    node = params
    for part in parents:
        if not isinstance(node, dict) or part not in node:
            raise SystemExit(f"--set {key}: no {part!r} in params.yaml")
        node = node[part]
    if last not in node:
        raise SystemExit(f"--set {key}: no {last!r} in params.yaml")
    node[last] = yaml.safe_load(raw)


def stage(name: str) -> tuple[str, list[str]]:
    """The resolved command and data/ deps of the dvc.yaml stage ``name``."""
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        (found,) = repo.stage.collect(name)
        deps = [
            os.path.relpath(d.fs_path, ROOT)
            for d in found.deps
            if os.path.relpath(d.fs_path, ROOT).startswith("data" + os.sep)
        ]
        return found.cmd, deps


def read_reports(folder: Path) -> dict:
    out = {}
    for f in sorted(folder.rglob("*")):
        rel = str(f.relative_to(folder))
        if f.suffix == ".json":
            out[rel] = json.loads(f.read_text())
        elif f.suffix == ".csv":
            with f.open() as fh:
                out[rel] = list(csv.DictReader(fh))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "name", help="the probe's name: benchmarks/results/probes/<name>.json"
    )
    p.add_argument("stage", help="a dvc.yaml training stage, e.g. train-nmt@pointer")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--data", action="append", default=[], metavar="PATH=PROFILE")
    p.add_argument(
        "--from",
        dest="origin",
        type=Path,
        default=ROOT,
        help="the checkout whose data/ (and profiles/*/data/) to read",
    )
    p.add_argument("--keep", action="store_true", help="keep the scratch project")
    args = p.parse_args()
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for assignment in args.set:
        apply(params, assignment)
    sources = dict(a.split("=", 1) for a in args.data)
    cmd, deps = stage(args.stage)
    unknown = set(sources) - set(deps)
    if unknown:
        raise SystemExit(f"--data {sorted(unknown)}: not inputs of {args.stage}")
    scratch = Path(tempfile.mkdtemp(prefix="firth-probe-"))
    inputs = {}
    for dep in deps:
        origin = args.origin / sources.get(dep, ".") / dep
        if not origin.exists():
            raise SystemExit(f"{origin}: missing (run that profile's DAG first)")
        (scratch / dep).parent.mkdir(parents=True, exist_ok=True)
        (scratch / dep).symlink_to(origin.resolve())
        inputs[dep] = {"from": sources.get(dep, "."), "sha256": sha256(origin)}
    (scratch / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    # the stage's own command (its paths relative to the project) run in scratch
    argv = shlex.split(cmd)
    argv[0] = sys.executable if argv[0] == "python" else argv[0]
    argv[1] = str(ROOT / argv[1])
    before = speed_probe()
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=scratch, env=env)
    seconds = time.monotonic() - t0
    result = {
        "machine": machine(),
        "commit": head_commit(ROOT),
        "stage": args.stage,
        "command": "python benchmarks/budget_probe.py " + shlex.join(sys.argv[1:]),
        "set": args.set,
        "inputs": inputs,
        "exit_code": proc.returncode,
        "seconds": round(seconds, 1),
        "speed_probe": {"before": before, "after": speed_probe()},
        "reports": read_reports(scratch / "reports"),
    }
    write_result(RESULTS / f"{args.name}.json", result)
    print(f"{RESULTS / args.name}.json ({seconds:.0f} s, exit {proc.returncode})")
    if args.keep:
        print(f"scratch project: {scratch}")
    else:
        subprocess.run(["rm", "-rf", str(scratch)], check=False)
    raise SystemExit(proc.returncode)


if __name__ == "__main__":
    main()
