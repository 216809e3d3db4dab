"""How far each trainer's step is from this CPU's arithmetic ceiling.

For the NMT (Bahdanau, GRU), LSTM LM and CRF tagger trainers at the default
params, on real batches of the default's training data (``--from``: a checkout
after `make run`): the matrix-product FLOPs of one training step (forward and
backward, counted by torch.utils.flop_counter on the batches the stage would
draw first, and from its shapes for an LSTM the counter cannot see) per example,
and the examples per second of the bare step (forward, backward, the fused AdamW
update; no batching, validation or start-up), so its
achieved GFLOP/s. Beside them the machine's rate on one large square matrix
product (fp32 and bfloat16, one thread: the most its cores do on dense
arithmetic), hence each trainer's ceiling: the examples per second it would
reach if every FLOP of its step ran at that rate and nothing else took time.
The ceiling only counts matrix products, so the real bound is lower still.

Against benchmarks/results/throughput.json's previous-code rows: a trainer whose
ceiling is under 3x the previous code's examples per second cannot be made 3x
faster at the same model sizes and arithmetic, whatever the implementation; the
step's measured bf16 autocast speed says what the CPU's bfloat16 units buy.

    python benchmarks/roofline.py --from /path/to/checkout/after/make-run

Writes benchmarks/results/roofline.json. One thread; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch
from common import head_commit, machine, write_result
from torch.utils.flop_counter import FlopCounterMode

from firth.accel import Accel
from firth.config import load_section
from firth.distributed import SINGLE

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "benchmarks" / "results" / "roofline.json"
THROUGHPUT = ROOT / "benchmarks" / "results" / "throughput.json"


def gemm_rate(dtype: torch.dtype, n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of the best of ``repeats`` n x n products in ``dtype``."""
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def nmt_case(origin: Path, n: int):
    from firth.nmt.config import Nmt
    from firth.nmt.data import make_batch
    from firth.nmt.models import build_model
    from firth.nmt.stage import NmtTraining
    from firth.nmt.train import NmtTask, loss_sum

    cfg = load_section("nmt", origin / "params.yaml", schema=Nmt)
    run = NmtTraining.load(
        cfg,
        "bahdanau",
        train=origin / "data/subsampled/parallel/train.tsv",
        valid=origin / "data/subsampled/parallel/valid.tsv",
        tokenizer=origin / "data/tokenizers/parallel",
        checkpoint=Path("/nonexistent"),
    )
    torch.manual_seed(run.run.seed)
    model = build_model("bahdanau", run.tok.get_vocab_size(), cfg)
    src, tgt = run.train_set.src, run.train_set.tgt
    task = NmtTask(
        model, {"train_src": src, "train_tgt": tgt}, cfg.common, seed=run.run.seed,
        accel=Accel.cpu(), group=SINGLE, coverage_loss=0.0,
    )  # fmt: skip
    batches = [make_batch(i, src, tgt) for i in task.epoch_batches(0)[:n]]
    smoothing = cfg.common.label_smoothing

    def loss(b):
        return loss_sum(model, b, smoothing) / b.tokens

    examples = [b.tokens for b in batches]
    return model, batches, loss, examples, "target tokens"


def lm_case(origin: Path, n: int):
    from firth.lm.config import Lm
    from firth.lm.data import encode_stream
    from firth.lm.models import build_model
    from firth.lm.stage import LmTraining
    from firth.lm.train import LmTask

    cfg = load_section("lm", origin / "params.yaml", schema=Lm)
    run = LmTraining.load(
        cfg,
        "lstm",
        train=origin / "data/subsampled/text/train.txt",
        valid=origin / "data/subsampled/text/valid.txt",
        tokenizer=origin / "data/tokenizers/text",
        checkpoint=Path("/nonexistent"),
    )
    c = run.common
    torch.manual_seed(run.run.seed)
    model = build_model("lstm", run.vocab.size, cfg, eos=run.vocab.eos)
    stream = encode_stream(run.vocab, run.train_lines)
    task = LmTask(model, stream, None, c, accel=Accel.cpu(), group=SINGLE)
    task.start_epoch()
    batches = list(task.epoch_batches(0))[:n]  # positions; the state carries

    def loss(pos):
        return task.loss(pos)[0]

    examples = [task.y[:, p : p + c.bptt].numel() for p in batches]
    return model, batches, loss, examples, "tokens"


def tagger_case(origin: Path, n: int):
    from firth.tagging.config import Tagger
    from firth.tagging.data import Vocab, encode, make_batch, read_split
    from firth.tagging.models import build_tagger
    from firth.tagging.train import TaggerTask

    cfg = load_section("tagger", origin / "params.yaml", schema=Tagger)
    c = cfg.common
    train = read_split(origin / "data/subsampled/tagged/wnut16/train.conll")
    vocab = Vocab.build(train)
    data = encode(vocab, train)
    torch.manual_seed(13)
    model = build_tagger(vocab, "crf", c)
    # the stage's first epoch of batches, without word dropout (no singletons)
    task = TaggerTask(
        model, data, None, [], vocab, c, seed=13, accel=Accel.cpu(),
        singletons=set(), bio=False,
    )  # fmt: skip
    batches = [make_batch(data, i, w) for i, w in task.epoch_batches(0)[:n]]

    def loss(b):
        return model.loss(b) / b.words.shape[0]

    return model, batches, loss, [b.words.shape[0] for b in batches], "sentences"


CASES = {"nmt": nmt_case, "lm": lm_case, "tagger": tagger_case}


def counter_sees_lstm() -> bool:
    """Whether FlopCounterMode counts nn.LSTM's products here: on CPU torch runs
    a padded batch through oneDNN's fused LSTM kernel, which has no FLOP formula
    (it counts 0), while the per-step fallback's products are counted."""
    lstm = torch.nn.LSTM(4, 4, batch_first=True)
    with FlopCounterMode(display=False) as counter:
        lstm(torch.randn(1, 2, 4, requires_grad=True))[0].sum().backward()
    return counter.get_total_flops() > 0


class LstmFlops:
    """The products of every nn.LSTM call in ``model``, counted from its shapes:
    per layer and direction 2 x tokens x 4H x (input + H) forward, twice that
    backward (the input and the weight gradients); padded positions count, since
    the kernel runs them."""

    def __init__(self, model: torch.nn.Module):
        self.flops = 0
        self.handles = [
            m.register_forward_hook(self.count)
            for m in model.modules()
            if isinstance(m, torch.nn.LSTM)
        ]

    def count(self, m: torch.nn.LSTM, args, _out) -> None:
        x = args[0]
        data = x.data if isinstance(x, torch.nn.utils.rnn.PackedSequence) else x
        tokens = data.shape[:-1].numel()
        dirs = 2 if m.bidirectional else 1
        for layer in range(m.num_layers):
            inp = m.input_size if layer == 0 else m.hidden_size * dirs
            h = m.hidden_size
            self.flops += 3 * 2 * tokens * 4 * h * (inp + h) * dirs

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def measure(case, origin: Path, n: int, repeats: int) -> dict:
    model, batches, loss, examples, unit = case(origin, n)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step(b, bf16=False):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            objective = loss(b)
        opt.zero_grad()
        objective.float().backward()
        opt.step()

    lstm = None if counter_sees_lstm() else LstmFlops(model)
    with FlopCounterMode(display=False) as counter:
        for b in batches:
            step(b)
    if lstm is not None:
        lstm.close()
    flops = (counter.get_total_flops() + (lstm.flops if lstm else 0)) / sum(examples)
    rates = {}
    for bf16 in (False, True):
        times = []
        for _ in range(repeats):
            for b in batches[:3]:
                step(b, bf16)
            t = time.perf_counter()
            for b in batches:
                step(b, bf16)
            times.append(time.perf_counter() - t)
        rates["bf16" if bf16 else "fp32"] = sum(examples) / statistics.median(times)
    return {
        "unit": unit,
        "batches": len(batches),
        "examples": sum(examples),
        "matmul_flops_per_example": round(flops),
        "step_examples_per_second": {k: round(v, 1) for k, v in rates.items()},
        "step_gflops_fp32": round(flops * rates["fp32"] / 1e9, 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="origin", type=Path, default=ROOT)
    p.add_argument("--only", nargs="*", choices=sorted(CASES), default=None)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    peak = {"fp32": gemm_rate(torch.float32), "bf16": gemm_rate(torch.bfloat16)}
    print(f"one-thread 2048^3 product: {peak['fp32']:.1f} GFLOP/s fp32, "
          f"{peak['bf16']:.1f} bf16")  # fmt: skip
    previous = json.loads(THROUGHPUT.read_text())["trainers"]
    rows = {}
    for name in args.only or CASES:
        row = measure(CASES[name], args.origin, args.batches, args.repeats)
        row["ceiling_examples_per_second"] = {
            k: round(v * 1e9 / row["matmul_flops_per_example"], 1)
            for k, v in peak.items()
        }
        if name in previous:
            old = statistics.mean(previous[name]["per_second"]["old"])
            new = statistics.mean(previous[name]["per_second"]["new"])
            row["throughput_json"] = {"old": round(old, 1), "new": round(new, 1)}
            row["target_3x_over_fp32_ceiling"] = round(
                3 * old / row["ceiling_examples_per_second"]["fp32"], 2
            )
        row["bf16_autocast_speedup"] = round(
            row["step_examples_per_second"]["bf16"]
            / row["step_examples_per_second"]["fp32"],
            2,
        )
        rows[name] = row
        print(name, json.dumps(row))
    write_result(
        OUT,
        {
            "machine": machine(),
            "commit": head_commit(ROOT),
            "command": "python " + " ".join(sys.argv),
            "threads": 1,
            "gemm_gflops_one_thread": {k: round(v, 1) for k, v in peak.items()},
            "trainers": rows,
        },
    )
    print(OUT)


if __name__ == "__main__":
    main()
