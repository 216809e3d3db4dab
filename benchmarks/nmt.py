"""Benchmark the translation models on the default KJV -> WEB split: training
target tokens per second (teacher forcing, backward, clipping and the AdamW step
over real batches, the settings of params.yaml's nmt section), and decoding
sentences per second with beam search batched over sentences and beams against
the same search run one sentence at a time (and batched greedy), on test verses.

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
import multiprocessing as mp
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _sync(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _bench(run: str, spec: dict, queue) -> None:
    import torch

    from firth.config import load_section, load_sections
    from firth.lm.train import resolve_device
    from firth.nmt.data import (
        encode,
        load_tokenizer,
        make_batch,
        max_lengths,
        read_pairs,
        sentence_batches,
        token_batches,
    )
    from firth.nmt.decode import beam_search, greedy
    from firth.nmt.models import build_model
    from firth.nmt.train import loss_sum

    cfg, _ = load_sections("nmt", spec["params"])
    ev = load_section("evaluate_nmt", spec["params"])
    c = cfg.common
    torch.set_num_threads(c.threads or torch.get_num_threads())
    device = resolve_device(spec["device"])
    tok = load_tokenizer(ROOT / "data/tokenizers/parallel/tokenizer.json")
    tr = read_pairs(ROOT / "data/subsampled/parallel/train.tsv")
    te = read_pairs(ROOT / "data/subsampled/parallel/test.tsv")
    src, tgt = encode(tok, tr.source), encode(tok, tr.target)
    torch.manual_seed(0)
    model = build_model(cfg.runs[run].model, tok.get_vocab_size(), cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=c.lr)
    batches = token_batches(
        src, tgt, c.batch_tokens, generator=torch.Generator().manual_seed(0)
    )
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model.train()
    tokens, seconds = 0, 0.0
    for i, idx in enumerate(batches[: spec["steps"] + 2]):
        b = make_batch(idx, src, tgt).to(device)
        _sync(device)
        t0 = time.perf_counter()
        loss = loss_sum(model, b, c.label_smoothing)
        opt.zero_grad(set_to_none=True)
        (loss / b.tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip or 1e9)
        opt.step()
        _sync(device)
        if i >= 2:  # the first steps warm up allocators and kernels
            seconds += time.perf_counter() - t0
            tokens += b.tokens
    weights = ROOT / "data" / "nmt" / run / "model.pt"
    trained = weights.exists()
    if trained:
        model.load_state_dict(torch.load(weights, weights_only=True))
    model.eval()
    test_src = encode(tok, te.source)
    pick = sorted(range(len(test_src)), key=lambda i: te.ids[i])[:: spec["every"]]
    sub = [test_src[i] for i in pick]

    def decode_all(size: int, beam: int) -> tuple[list, float]:
        out = [None] * len(sub)
        _sync(device)
        t0 = time.perf_counter()
        for idx in sentence_batches(sub, size):
            b = make_batch(idx, sub, None).to(device)
            L = max_lengths(b.src_mask.sum(1), c.max_len_a, c.max_len_b)
            if beam == 1:
                res = greedy(model, b.src, b.src_mask, L)
            else:
                res = beam_search(
                    model,
                    b.src,
                    b.src_mask,
                    L,
                    beam=beam,
                    alpha=ev.alpha,
                    kind=ev.penalty,
                )
            for i, t in zip(idx, res.tokens, strict=True):
                out[i] = t
        _sync(device)
        return out, time.perf_counter() - t0

    batched, t_batched = decode_all(c.eval_batch, spec["beam"])
    single, t_single = decode_all(1, spec["beam"])
    _, t_greedy = decode_all(c.eval_batch, 1)
    row = {
        "run": run,
        "model": cfg.runs[run].model,
        "weights": "trained" if trained else "untrained",
        "train_steps": spec["steps"],
        "train_target_tokens_per_second": round(tokens / seconds),
        "decode_sentences": len(sub),
        "beam_batched_sentences_per_second": round(len(sub) / t_batched, 2),
        "beam_single_sentences_per_second": round(len(sub) / t_single, 2),
        "beam_speedup": round(t_single / t_batched, 2),
        "beam_batched_equals_single": sum(
            a == b for a, b in zip(batched, single, strict=True)
        )
        / len(sub),
        "greedy_batched_sentences_per_second": round(len(sub) / t_greedy, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    if device.type == "cuda":
        row["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20)
    queue.put(row)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", default=str(ROOT / "params.yaml"))
    p.add_argument("--runs", nargs="*", default=None, help="default: every nmt run")
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    p.add_argument("--steps", type=int, default=20, help="timed training steps")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--every", type=int, default=20, help="decode every n-th test verse")
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/nmt.json"))
    args = p.parse_args(argv)
    import torch
    import yaml

    runs = args.runs or list(
        yaml.safe_load(open(args.params, encoding="utf-8"))["nmt"]["runs"]
    )
    ctx = mp.get_context("spawn")
    rows = []
    spec = {k: getattr(args, k) for k in ("params", "device", "steps", "beam", "every")}
    for run in runs:
        queue = ctx.Queue()
        proc = ctx.Process(target=_bench, args=(run, spec, queue))
        proc.start()
        rows.append(queue.get())
        proc.join()
        print(json.dumps(rows[-1]), flush=True)
    result = {
        "command": " ".join(["python benchmarks/nmt.py", *(argv or sys.argv[1:])]),
        "machine": {"platform": platform.platform(), "cpus": mp.cpu_count()},
        "device": args.device,
        "threads": torch.get_num_threads(),
        "beam": args.beam,
        "models": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
