"""Benchmark the language models on the default text split: Kneser-Ney build
time and peak memory, neural training tokens per second (the train-lm stage's own
job, LmTraining through firth.training.fit, for a budget of ``--steps`` optimiser
steps with the settings of params.yaml's lm section: its figure is the stage's
speed), and evaluation speed (scoring the whole test text).

    python benchmarks/lm.py            # KN orders 3 and 5, every neural family
    python benchmarks/lm.py --orders 5 --families lstm --device cuda

Each model runs in a fresh process, so its peak RSS is its own. Writes
benchmarks/results/lm.json.
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


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = [line.rstrip("\n") for line in open(path, encoding="utf-8")]
    lines = [line for line in lines if line.strip()]
    return lines, [line.split() for line in lines]


def _kn(order: int, train: str, test: str, queue) -> None:
    from firth.lm.kneser_ney import build
    from firth.lm.metrics import bits_per_char, characters

    _, sents = _read(Path(train))
    test_lines, test_sents = _read(Path(test))
    tokens = sum(len(s) for s in sents)
    t0 = time.perf_counter()
    lm = build(sents, order=order)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = lm.score(test_sents)
    score_s = time.perf_counter() - t0
    queue.put(
        {
            "model": f"kn{order}",
            "train_tokens": tokens,
            "build_seconds": round(build_s, 2),
            "build_tokens_per_second": round(tokens / build_s),
            "ngrams_per_order": [len(g) for g in lm.grams],
            "discounts": [[round(d, 4) for d in ds] for ds in lm.discounts],
            "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            ),
            "eval_seconds": round(score_s, 2),
            "eval_tokens_per_second": round(res["tokens"] / score_s),
            "test_tokens": res["tokens"],
            "test_oov": res["oov"],
            "test_perplexity": round(res["perplexity"], 3),
            "test_bits_per_char": round(
                bits_per_char(res["nll_nats"], characters(test_lines)), 5
            ),
        }
    )


def _neural(family: str, args: dict, queue) -> None:
    import tempfile

    import torch

    from firth.accel import Accel
    from firth.checkpoint import Checkpoint
    from firth.config import load_section
    from firth.distributed import SINGLE
    from firth.lm.config import Lm, LmRun
    from firth.lm.data import build_vocabulary, encode_stream, read_lines
    from firth.lm.models import build_model
    from firth.lm.stage import LmTraining
    from firth.lm.train import score

    cfg = load_section("lm", args["params"], schema=Lm)
    # one run of ``family`` with the section's settings, trained by the stage's
    # own job (firth.training.fit) for a budget of ``steps`` optimiser steps
    cfg = cfg.model_copy(update={"runs": {family: LmRun(family=family, seed=0)}})
    c = cfg.common
    torch.set_num_threads(c.threads or torch.get_num_threads())
    accel = Accel.build(
        device=args["device"],
        precision=args["precision"],
        compile=args["compile"],
        key="--device",
    )
    device = accel.device
    train_lines = read_lines(Path(args["train"]))
    test_lines = read_lines(Path(args["test"]))
    vocab = build_vocabulary(
        train_lines,
        unit=c.unit,
        min_count=c.min_count,
        tokenizer=Path(args["tokenizer"]) / "tokenizer.json",
    )
    with tempfile.TemporaryDirectory() as scratch:
        job = LmTraining(
            cfg,
            family,
            train_lines=train_lines,
            valid_lines=read_lines(Path(args["valid"])),
            vocab=vocab,
            corpus_sha256="",
            checkpoint=Checkpoint(Path(scratch) / "ckpt.pt", key=""),
        )
        stats = job.fit(accel, SINGLE, max_steps=args["steps"]).stats
    test = encode_stream(vocab, test_lines)
    torch.manual_seed(0)
    model = build_model(family, vocab.size, cfg, eos=vocab.eos).to(device).eval()
    t0 = time.perf_counter()
    _, tokens = score(model, test, batch=c.eval_batch, bptt=c.bptt, device=device)
    eval_s = time.perf_counter() - t0
    rate = stats.train_tokens_per_second
    queue.put(
        {
            "model": family,
            "unit": c.unit,
            "vocab": vocab.size,
            "parameters": stats.parameters,
            "device": str(device),
            "train_precision": accel.precision,  # scoring: fp32 (TF32 if set)
            "train_compiled": accel.compile,
            "threads": torch.get_num_threads(),
            "train_steps": stats.steps,
            "train_tokens": stats.steps * c.batch * c.bptt,
            "train_seconds": stats.train_seconds,
            "train_tokens_per_second": rate,
            "epoch_seconds_estimate": round(
                len(encode_stream(vocab, train_lines)) / rate
            ),
            "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            ),
            "eval_seconds": round(eval_s, 2),
            "eval_tokens_per_second": round(tokens / eval_s),
            "test_tokens": tokens,
        }
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", default=str(PROJECT / "data/subsampled/text/train.txt"))
    p.add_argument("--valid", default=str(PROJECT / "data/subsampled/text/valid.txt"))
    p.add_argument("--test", default=str(PROJECT / "data/subsampled/text/test.txt"))
    p.add_argument("--tokenizer", default=str(PROJECT / "data/tokenizers/text"))
    p.add_argument("--orders", nargs="*", type=int, default=[3, 5])
    p.add_argument(
        "--families", nargs="*", default=["ffnn", "elman", "lstm", "gru", "transformer"]
    )
    p.add_argument("--params", default=str(PROJECT / "params.yaml"))
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    p.add_argument(
        "--precision", default="fp32", help="training: fp32 | tf32 | bf16 | auto"
    )
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument(
        "--steps", type=int, default=60, help="timed training steps per model"
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/lm.json"))
    args = p.parse_args(argv)
    rows = []
    for order in args.orders:
        rows.append(
            in_fresh_process(
                _kn, order, args.train, args.test, label=f"kn order {order}"
            )
        )
        print(json.dumps(rows[-1]), flush=True)
    keys = ("params", "device", "precision", "compile", "steps", "train", "test")
    keys += ("valid", "tokenizer")
    spec = {k: getattr(args, k) for k in keys}
    for family in args.families:
        rows.append(in_fresh_process(_neural, family, spec, label=family))
        print(json.dumps(rows[-1]), flush=True)
    write_result(
        args.out,
        {
            "command": " ".join(["python benchmarks/lm.py", *(argv or sys.argv[1:])]),
            "machine": machine(),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
