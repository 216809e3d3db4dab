"""Trainer throughput, the previous code against this one, side by side in one run.

Each trainer is a training stage of the default DAG, run through
benchmarks/budget_probe.py in two checkouts: this one (this code, its params.yaml)
and a git worktree of ``--base`` (the previous code, its own params.yaml), on the
same inputs (``--from``'s data/, e.g. this checkout after `make run`, with
``--data`` overrides as budget_probe takes them) and with the same ``--set`` caps
(keys both params files have). The runs alternate (old, new, new, old, ...) so
that a change of the machine's speed over the run falls on both sides. From each
run's reports: the examples (target tokens, sentences, tokens, words) per second
of training, and the validation curve, so that the two are compared at equal
examples seen: both train on the same data, so an epoch is the same examples, and
each curve is interpolated at the other's epochs.

    python benchmarks/throughput.py --base b81355c            # every trainer
    python benchmarks/throughput.py --base b81355c --only nmt tagger

Writes benchmarks/results/throughput.json (each trainer's row kept across runs
that measure only some, with the commit it measured and the command that ran it).
Takes the machine for about 25 minutes on 2 cores; run it on a quiet machine. The
stages run with the threads their params ask for.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from common import head_commit, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "throughput.json"
PROBES = ROOT / "benchmarks" / "results" / "probes"


@dataclass(frozen=True)
class Trainer:
    name: str
    stage: str
    speed: str  # the train.json key of examples per second (dotted for a nested row)
    unit: str
    train_json: str  # the reports/ path of the run's train.json
    curve: str  # the reports/ path of the validation curve
    y: str  # the curve's validation column
    lower_is_better: bool
    sets: tuple[str, ...] = ()
    data: tuple[str, ...] = field(default_factory=tuple)


TRAINERS = {
    t.name: t
    for t in (
        Trainer(
            "nmt",
            "train-nmt@bahdanau",
            "train_target_tokens_per_second",
            "target tokens",
            "nmt/bahdanau/train.json",
            "nmt/bahdanau/curve.csv",
            "valid_loss",
            True,
        ),
        Trainer(
            "tagger",
            "train-tagger@wnut16-crf-13",
            "models.0.sentences_per_second",
            "sentences",
            "tagging/wnut16-crf/seed-13/train.json",
            "tagging/wnut16-crf/seed-13/curve.csv",
            "valid_score",
            False,
        ),
        Trainer(
            "lm",
            "train-lm@lstm",
            "train_tokens_per_second",
            "tokens",
            "lm/lstm/train.json",
            "lm/lstm/curve.csv",
            "valid_loss",
            True,
        ),
        Trainer(
            "sgns",
            "train-embeddings-sgns@13",
            "words_per_second",
            "words",
            "embeddings/sgns/seed-13/train.json",
            "embeddings/sgns/seed-13/loss.csv",
            "loss",
            True,
        ),
    )
}


def worktree(base: str) -> Path:
    """A git worktree of ``base`` (made once, reused while at that commit)."""
    sha = subprocess.run(
        ["git", "rev-parse", base], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    path = Path("/tmp") / f"firth-throughput-{sha[:12]}"
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True
        )
    return path


def probe(
    checkout: Path, name: str, t: Trainer, origin: Path, extra: list[str]
) -> dict:
    """One budget_probe run of ``t`` in ``checkout``; its result JSON."""
    argv = [
        sys.executable,
        str(checkout / "benchmarks" / "budget_probe.py"),
        name,
        t.stage,
        "--from",
        str(origin),
    ]
    for s in (*t.sets, *extra):
        argv += ["--set", s]
    for d in t.data:
        argv += ["--data", d]
    subprocess.run(argv, cwd=checkout, check=True)
    return json.loads(
        (checkout / "benchmarks/results/probes" / f"{name}.json").read_text()
    )


def dig(d, dotted: str):
    for part in dotted.split("."):
        d = d[int(part)] if isinstance(d, list) else d[part]
    return d


def curve(result: dict, t: Trainer) -> list[tuple[float, float]]:
    """(epoch, validation value) of one run (the first model's rows for a tagger
    stage, which trains its random initialisation first)."""
    rows = result["reports"][t.curve]
    if rows and "init" in rows[0]:
        first = rows[0]["init"]
        rows = [r for r in rows if r["init"] == first]
    return [
        (float(r["epoch"]), float(r[t.y])) for r in rows if r.get(t.y) not in ("", None)
    ]


TOLERANCE = 0.005  # epochs


def at(points: list[tuple[float, float]], x: float) -> float | None:
    """``points`` linearly interpolated at ``x`` (None outside their range)."""
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    # a run validates at its last step too, so two runs of one planned length
    # may end 0.001 epoch apart: points that close are the same point
    near = [y for x0, y in points if abs(x0 - x) < TOLERANCE]
    return near[0] if near else None


def compare(t: Trainer, old: list[dict], new: list[dict]) -> dict:
    speed_old = [float(dig(r["reports"][t.train_json], t.speed)) for r in old]
    speed_new = [float(dig(r["reports"][t.train_json], t.speed)) for r in new]
    c_old, c_new = curve(old[0], t), curve(new[0], t)
    xs = []
    for x in sorted({x for x, _ in c_old} | {x for x, _ in c_new}):
        if not xs or x - xs[-1] >= TOLERANCE:
            xs.append(x)
    points = [
        {"epoch": x, "old": at(c_old, x), "new": at(c_new, x)}
        for x in xs
        if at(c_old, x) is not None and at(c_new, x) is not None
    ]
    better = [
        (p["new"] <= p["old"]) if t.lower_is_better else (p["new"] >= p["old"])
        for p in points
    ]
    return {
        "stage": t.stage,
        "unit": t.unit,
        "commit": new[0]["commit"],  # the code measured as "new"
        "per_second": {"old": speed_old, "new": speed_new},
        "speedup": round(max(speed_new) / max(speed_old), 2),
        "validation": {
            "column": t.y,
            "lower_is_better": t.lower_is_better,
            "at_equal_epochs": points,
            "new_same_or_better_at_every_point": all(better) if better else None,
        },
        "probes": {
            "old": [r["command"] for r in old],
            "new": [r["command"] for r in new],
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the previous code's commit")
    p.add_argument("--only", nargs="*", choices=sorted(TRAINERS), default=None)
    p.add_argument("--from", dest="origin", type=Path, default=ROOT)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument(
        "--from-probes",
        action="store_true",
        help="recompute the rows from the probe files of an earlier run",
    )
    args = p.parse_args()
    old_root = worktree(args.base)
    command = "python benchmarks/throughput.py " + " ".join(sys.argv[1:])
    rows = json.loads(OUT.read_text())["trainers"] if OUT.exists() else {}
    for name in args.only or sorted(TRAINERS):
        t = TRAINERS[name]
        old, new = [], []
        for i in range(args.repeats):
            sides = [("old", old_root, old), ("new", ROOT, new)]
            for side, checkout, sink in sides if i % 2 == 0 else sides[::-1]:
                tag = f"throughput-{name}-{side}-{i}"
                if args.from_probes:
                    path = checkout / "benchmarks/results/probes" / f"{tag}.json"
                    sink.append(json.loads(path.read_text()))
                    continue
                sink.append(probe(checkout, tag, t, args.origin.resolve(), args.set))
                print(f"{name} {side} {i}: {sink[-1]['seconds']} s", flush=True)
        rows[name] = compare(t, old, new)
        if not args.from_probes:  # a recomputed row keeps the run that measured it
            rows[name]["command"] = command
        print(json.dumps({name: {k: rows[name][k] for k in ("speedup", "per_second")}}))
    write_result(
        OUT,
        {
            "machine": machine(),
            "commit": head_commit(ROOT),
            "base": args.base,
            "command": command,
            "trainers": rows,
        },
    )


if __name__ == "__main__":
    main()
