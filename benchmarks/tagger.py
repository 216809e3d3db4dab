"""Benchmark the taggers on the default data: training sentences per second (the
train-tagger stage's own job, CellTraining through firth.training.fit, its
randomly initialised model for a budget of ``--steps`` optimiser steps with the
settings of params.yaml's tagger section: its figure is the stage's speed), and
decoding:
batched Viterbi over the CRF's emissions against the same Viterbi called one
sentence at a time (the emissions are computed once, so only the decoder is timed;
the paths must agree), and the whole tagger's batched decoding (emissions and
decoder) in sentences per second.

    python benchmarks/tagger.py                      # every <data>-<head> of tagger
    python benchmarks/tagger.py --runs wnut16-crf --device cuda

Decoding uses the trained weights in data/taggers/<run>/seed-<first seed>/random.pt
when they exist, else fresh weights, as the "weights" field says; Viterbi is timed
on every sentence of the training split (the larger set) with the training split's
vocabulary. Each run is timed in a fresh process; every timing is the fastest of
``--repeat`` passes. Writes benchmarks/results/tagger.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

from common import in_fresh_process, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
# the data and params a benchmark reads: a profile project (FIRTH_PROJECT, e.g.
# profiles/full, as the make targets set it) or the root's default
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))


def _sync(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _best(fn, repeat: int, device) -> float:
    times = []
    for _ in range(repeat):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return min(times)


def _bench(run: str, spec: dict, queue) -> None:
    import tempfile

    import torch

    from firth.accel import Accel
    from firth.config import load_sections
    from firth.query import stage_paths
    from firth.tagging.config import Tagger
    from firth.tagging.data import Vocab, encode, length_batches, make_batch, read_split
    from firth.tagging.models import build_tagger
    from firth.tagging.stage import CellTraining, setup

    cfg, _ = load_sections("tagger", spec["params"], schema=Tagger)
    c = cfg.common
    data_name, head = _split_run(cfg, run)
    if c.threads:
        torch.set_num_threads(c.threads)
    accel = Accel.build(
        device=spec["device"], precision="fp32", compile=False, key="--device"
    )
    device = accel.device
    seed = cfg.seeds[0]
    paths = stage_paths(PROJECT, f"train-tagger@{run}-{seed}")
    # training: the train-tagger stage's own job (its randomly initialised model,
    # firth.training.fit) for a budget of ``steps`` optimiser steps, so the figure
    # is the stage's speed
    with tempfile.TemporaryDirectory() as scratch:
        job = CellTraining.load(
            setup(Path(spec["params"]), data_name, head),
            seed,
            train=paths["train"],
            valid=paths["valid"],
            vectors=paths["vectors"],
            checkpoints=Path(scratch),
        )
        _, stats, _ = job.fit_one("random", accel, max_steps=spec["steps"])
    train = read_split(paths["train"])
    folder = paths["out"]
    weights = folder / "random.pt"
    vocab = Vocab.build(train)
    if (folder / "vocab-random.json").exists():
        vocab = Vocab.from_json(json.loads((folder / "vocab-random.json").read_text()))
    enc = encode(vocab, train)
    torch.manual_seed(seed)
    model = build_tagger(vocab, head, c).to(device)
    used = "fresh"
    if weights.exists():
        model.load_state_dict(torch.load(weights, weights_only=True))
        used = str(weights.relative_to(PROJECT))
    model.eval()
    eval_batches = [
        make_batch(enc, idx).to(device)
        for idx in length_batches([len(w) for w in enc.words], spec["batch"])
    ]

    def decode_all():
        with torch.no_grad():
            for b in eval_batches:
                model.decode(b)

    decode_all()
    decode_s = _best(decode_all, spec["repeat"], device)
    row = {
        "run": run,
        "data": data_name,
        "head": head,
        "chars": c.chars,
        "threads": torch.get_num_threads(),
        "weights": used,
        "train_steps": stats["steps"],
        "train_seconds": stats["train_seconds"],
        "train_sentences_per_second": stats["sentences_per_second"],
        "decode_sentences": len(train),
        "decode_batch": spec["batch"],
        "decode_sentences_per_second": round(len(train) / decode_s, 1),
    }
    if model.crf is not None:
        with torch.no_grad():
            ems = [(model.emissions(b), b.mask) for b in eval_batches]
            singles = [
                (em[i : i + 1, : int(m[i].sum())], m[i : i + 1, : int(m[i].sum())])
                for em, m in ems
                for i in range(em.shape[0])
            ]
        batched_paths = [p for em, m in ems for p in model.crf.viterbi(em, m)[0]]
        loop_paths = [model.crf.viterbi(em, m)[0][0] for em, m in singles]
        if batched_paths != loop_paths:
            raise SystemExit(f"{run}: batched and per-sentence Viterbi disagree")

        def batched():
            for em, m in ems:
                model.crf.viterbi(em, m)

        def loop():
            for em, m in singles:
                model.crf.viterbi(em, m)

        b_s = _best(batched, spec["repeat"], device)
        l_s = _best(loop, spec["repeat"], device)
        row.update(
            viterbi_batched_sentences_per_second=round(len(singles) / b_s, 1),
            viterbi_loop_sentences_per_second=round(len(singles) / l_s, 1),
            viterbi_speedup=round(l_s / b_s, 2),
            viterbi_paths_identical=True,
        )
    row["peak_rss_mb"] = round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
    )
    queue.put(row)


def _runs(cfg) -> list[str]:
    return [f"{d}-{h}" for d in cfg.data for h in cfg.heads]


def _split_run(cfg, run: str) -> tuple[str, str]:
    """(data, head) of a ``<data>-<head>`` run of the tagger section."""
    for d in cfg.data:
        for h in cfg.heads:
            if run == f"{d}-{h}":
                return d, h
    raise SystemExit(f"no tagger run {run!r} (runs: {', '.join(_runs(cfg))})")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", default=str(PROJECT / "params.yaml"))
    p.add_argument("--runs", nargs="*", default=None, help="default: every run")
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    p.add_argument("--steps", type=int, default=40, help="timed training batches")
    p.add_argument("--batch", type=int, default=64, help="decoding batch (sentences)")
    p.add_argument("--repeat", type=int, default=3, help="timed passes (the fastest)")
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/tagger.json"))
    args = p.parse_args(argv)
    import torch

    from firth.config import load_sections
    from firth.tagging.config import Tagger

    runs = args.runs or _runs(load_sections("tagger", args.params, schema=Tagger)[0])
    keys = ("params", "device", "steps", "batch", "repeat")
    spec = {k: getattr(args, k) for k in keys}
    rows = []
    for run in runs:
        rows.append(in_fresh_process(_bench, run, spec, label=run))
        print(json.dumps(rows[-1]), flush=True)
    write_result(
        args.out,
        {
            "command": " ".join(
                ["python benchmarks/tagger.py", *(argv or sys.argv[1:])]
            ),
            "machine": machine(),
            "device": args.device,
            "threads": rows[0]["threads"] if rows else None,
            "torch": torch.__version__,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
