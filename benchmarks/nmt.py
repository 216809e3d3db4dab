"""Benchmark the translation models on the default KJV -> WEB split: training
target tokens per second (the train-nmt stage's own job, NmtTraining through
firth.training.fit, for a budget of ``--steps`` optimiser steps with the settings
of params.yaml's nmt section: its figure is the stage's speed), and decoding
sentences per second with beam search batched over sentences and beams against
the same search run one sentence at a time (and batched greedy), on test verses.
It also times one decoder step with its next-token scores per row, at ``beam``
rows (one sentence) and at ``beam`` x ``eval_batch`` rows (a full batch): their
ratio is the most that batching can gain when the step is compute-bound.

    python benchmarks/nmt.py                       # every run in nmt.runs
    python benchmarks/nmt.py --runs bahdanau --device cuda

Decoding uses the trained weights in data/nmt/<run>/ when they exist (an untrained
model never emits </s> and decodes to the maximum length), else fresh weights, as
the "weights" field says. Each model runs in a fresh process, so its peak memory
is its own. Writes benchmarks/results/nmt.json.
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


def _bench(run: str, spec: dict, queue) -> None:
    import tempfile

    import torch

    from firth.accel import Accel
    from firth.config import load_section, load_sections
    from firth.distributed import SINGLE
    from firth.nmt.config import EvaluateNmt, Nmt
    from firth.nmt.data import BOS, encode, encode_extended, read_pairs
    from firth.nmt.decode import decode_corpus
    from firth.nmt.models import build_model
    from firth.nmt.stage import NmtTraining
    from firth.query import stage_paths

    cfg, _ = load_sections("nmt", spec["params"], schema=Nmt)
    ev = load_section("evaluate_nmt", spec["params"], schema=EvaluateNmt)
    c = cfg.common
    torch.set_num_threads(c.threads or torch.get_num_threads())
    accel = Accel.build(
        device=spec["device"],
        precision=spec["precision"],
        compile=spec["compile"],
        key="--device",
    )
    device = accel.device
    paths = stage_paths(PROJECT, f"train-nmt@{run}")
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    # training: the train-nmt stage's own job (firth.training.fit) for a budget of
    # ``steps`` optimiser steps, so the figure is the stage's speed
    with tempfile.TemporaryDirectory() as scratch:
        job = NmtTraining.load(
            cfg,
            run,
            train=paths["train"],
            valid=paths["valid"],
            tokenizer=paths["tokenizer"],
            checkpoint=Path(scratch) / "ckpt.pt",
        )
        stats = job.fit(accel, SINGLE, max_steps=spec["steps"]).stats
    tok, r = job.tok, job.run
    te = read_pairs(stage_paths(PROJECT, f"evaluate-nmt@{run}")["test"])
    torch.manual_seed(0)
    model = build_model(
        r.model, tok.get_vocab_size(), cfg, pointer=r.pointer, coverage=r.coverage
    ).to(device)
    weights = paths["out"] / "model.pt"
    trained = weights.exists()
    if trained:
        model.load_state_dict(torch.load(weights, weights_only=True))
    model.eval()
    test_src = (
        encode_extended(tok, te.source).src if r.pointer else encode(tok, te.source)
    )
    pick = sorted(range(len(test_src)), key=lambda i: te.ids[i])[:: spec["every"]]
    sub = [test_src[i] for i in pick]

    def decode_all(size: int, beam: int) -> tuple[list, float]:
        """Outputs, and the fastest of ``repeat`` timed passes."""
        best = float("inf")
        for _ in range(spec["repeat"]):
            _sync(device)
            t0 = time.perf_counter()
            out = decode_corpus(
                model,
                sub,
                batch=size,
                a=c.max_len_a,
                b=c.max_len_b,
                device=device,
                beam=beam,
                alpha=ev.alpha,
                penalty_form=ev.penalty,
                beta=ev.beta,
            )
            _sync(device)
            best = min(best, time.perf_counter() - t0)
        return out, best

    @torch.no_grad()
    def step_seconds(rows: int, length: int = 30, n: int = 20) -> float:
        """Seconds per row of one decoder step and its next-token scores (the
        work every hypothesis costs) at ``rows`` rows: the ratio between ``beam``
        rows and a full batch's rows bounds what batching can gain."""
        gen = torch.Generator().manual_seed(0)
        x = torch.randint(4, tok.get_vocab_size(), (rows, length), generator=gen)
        mask = torch.ones_like(x, dtype=torch.bool)
        memory = model.encode(x.to(device), mask.to(device))
        state = model.start(memory)
        y = torch.full((rows,), BOS, device=device)
        for i in range(n + 3):
            if i == 3:
                _sync(device)
                t0 = time.perf_counter()
            feat, _, _ = model.step(y, state, memory)
            logits = model.logits(feat)  # the scores and their normaliser
            torch.logsumexp(logits, dim=-1)
            logits.topk(spec["beam"], dim=1)
        _sync(device)
        return (time.perf_counter() - t0) / n / rows

    batched, t_batched = decode_all(c.eval_batch, spec["beam"])
    single, t_single = decode_all(1, spec["beam"])
    _, t_greedy = decode_all(c.eval_batch, 1)
    per_row_single = step_seconds(spec["beam"])
    per_row_batched = step_seconds(spec["beam"] * c.eval_batch)
    row = {
        "run": run,
        "model": r.model,
        **r.model_dump(
            include={"pointer", "coverage", "coverage_loss"}, exclude_defaults=True
        ),
        "weights": "trained" if trained else "untrained",
        "train_precision": accel.precision,  # decoding: fp32 (TF32 if set)
        "train_compiled": accel.compile,
        "train_steps": stats.steps,
        "train_seconds": stats.train_seconds,
        "train_target_tokens_per_second": stats.train_target_tokens_per_second,
        "decode_sentences": len(sub),
        "beam_batched_sentences_per_second": round(len(sub) / t_batched, 2),
        "beam_single_sentences_per_second": round(len(sub) / t_single, 2),
        "beam_speedup": round(t_single / t_batched, 2),
        "beam_batched_equals_single": sum(
            a == b for a, b in zip(batched, single, strict=True)
        )
        / len(sub),
        "greedy_batched_sentences_per_second": round(len(sub) / t_greedy, 2),
        "step_microseconds_per_row_single": round(per_row_single * 1e6, 1),
        "step_microseconds_per_row_batched": round(per_row_batched * 1e6, 1),
        "step_row_cost_ratio": round(per_row_single / per_row_batched, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    if device.type == "cuda":
        row["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20)
    queue.put(row)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", default=str(PROJECT / "params.yaml"))
    p.add_argument("--runs", nargs="*", default=None, help="default: every nmt run")
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    p.add_argument("--steps", type=int, default=20, help="timed training steps")
    p.add_argument(
        "--precision", default="fp32", help="training: fp32 | tf32 | bf16 | auto"
    )
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--every", type=int, default=20, help="decode every n-th test verse")
    p.add_argument("--repeat", type=int, default=2, help="timed decoding passes (min)")
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/nmt.json"))
    args = p.parse_args(argv)
    import torch
    import yaml

    runs = args.runs or list(
        yaml.safe_load(open(args.params, encoding="utf-8"))["nmt"]["runs"]
    )
    rows = []
    keys = ("params", "device", "precision", "compile", "steps", "beam", "every")
    keys += ("repeat",)
    spec = {k: getattr(args, k) for k in keys}
    for run in runs:
        rows.append(in_fresh_process(_bench, run, spec, label=run))
        print(json.dumps(rows[-1]), flush=True)
    write_result(
        args.out,
        {
            "command": " ".join(["python benchmarks/nmt.py", *(argv or sys.argv[1:])]),
            "machine": machine(),
            "device": args.device,
            "threads": torch.get_num_threads(),
            "beam": args.beam,
            "models": rows,
        },
    )


if __name__ == "__main__":
    main()
