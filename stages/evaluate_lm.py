"""DVC stage evaluate-lm@<run>: score one trained language model on the test text
(data/subsampled/text/test.txt) -> reports/lm/<run>/eval.json (test and valid
perplexity per token of the run's own tokenization, bits per character, OOV rate,
the uniform and unigram baselines of that tokenization) and eval_detail.json
(sampled continuations; for recurrent runs the gradient-flow measurement
||dL_T/dh_t|| against T - t). The test perplexity is also given on the
contamination audit's clean and dirty test lines (audit-text: data/audit/text/
flags.tsv), from per-line scores (firth.lm.lines).

Bits per character: the total NLL in bits over the characters of the text (every
line plus its line break, firth.lm.metrics), the same denominator for every model."""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import torch

from firth import runner
from firth.accel import resolve_device
from firth.audit.scores import read_flags, split_scores
from firth.config import load_section, load_sections
from firth.errors import DataError
from firth.io import write_json
from firth.lm import kneser_ney
from firth.lm.data import Vocabulary, encode_stream, read_lines
from firth.lm.gradient_flow import model_gradient_norms
from firth.lm.lines import by_line, kn_by_line, score_targets
from firth.lm.metrics import bits_per_char, characters, perplexity
from firth.lm.models import build_model
from firth.lm.results import LmEval
from firth.lm.train import sample
from firth.results import parse, save

log = logging.getLogger("evaluate_lm")


def baselines(vocab: Vocabulary, stream: torch.Tensor, chars: int) -> dict:
    """Uniform over the vocabulary (perplexity exactly V) and the add-one unigram
    model of the training counts, on the targets of ``stream``."""
    targets = stream[1:].numpy()
    n = len(targets)
    counts = np.asarray(vocab.counts, dtype=np.float64) + 1.0
    uni_nll = float(-np.log(counts[targets] / counts.sum()).sum())
    uni_nll_uniform = n * math.log(vocab.size)
    return {
        "uniform": {
            "perplexity": perplexity(uni_nll_uniform, n),
            "bits_per_char": bits_per_char(uni_nll_uniform, chars),
        },
        "unigram": {
            "perplexity": perplexity(uni_nll, n),
            "bits_per_char": bits_per_char(uni_nll, chars),
        },
    }


def body(args) -> None:
    cfg, _ = load_sections("lm", runner.params_path(args))
    ev = load_section("evaluate_lm", runner.params_path(args))
    if args.run not in cfg.runs:
        raise DataError(f"lm.runs has no run '{args.run}'")
    run = cfg.runs[args.run]
    c = cfg.common
    if c.threads:
        torch.set_num_threads(c.threads)
    model_dir = args.root / "data" / "lm" / args.run
    if not (model_dir / "vocab.json").exists():
        raise DataError(f"{model_dir}: no trained model (run train-lm@{args.run})")
    vocab = Vocabulary.load(model_dir / "vocab.json")
    text = args.root / "data" / "subsampled" / "text"
    result: dict = {
        "run": args.run,
        "family": run.family,
        "seed": run.seed,
        "unit": vocab.unit,
        "vocab": vocab.size,
    }
    detail: dict = {"run": args.run, "samples": [], "gradient_flow": []}
    device = resolve_device(c.device, key="lm.common.device")
    model = None
    if run.family == "kn":
        lm = kneser_ney.load(model_dir)
    else:
        model = build_model(run.family, vocab.size, cfg, eos=vocab.eos)
        model.load_state_dict(torch.load(model_dir / "model.pt", weights_only=True))
        model.to(device).eval()
    for split in ("test", "valid"):
        lines = read_lines(text / f"{split}.txt")
        chars = characters(lines)
        stream = encode_stream(vocab, lines)
        t0 = time.perf_counter()
        if model is None:
            line_nll, line_tokens = kn_by_line(
                lm, [[vocab.tokens[i] for i in vocab.encode_line(x)] for x in lines]
            )
        else:
            line_nll, line_tokens = by_line(
                score_targets(
                    model, stream, batch=c.eval_batch, bptt=c.bptt, device=device
                ),
                stream,
                vocab.eos,
            )
        nll, tokens = float(line_nll.sum()), int(line_tokens.sum())
        seconds = time.perf_counter() - t0
        words = sum(len(x.split()) for x in lines)
        result[split] = {
            "tokens": tokens,
            "characters": chars,
            "nll_bits": nll / math.log(2),
            "perplexity": perplexity(nll, tokens),
            "bits_per_char": bits_per_char(nll, chars),
            "oov_rate": vocab.oov(lines) / words,
            "tokens_per_second": round(tokens / seconds),
            "baselines": baselines(vocab, stream, chars),
        }
        if split == "test":
            dirty = read_flags(
                args.root / "data" / "audit" / "text" / "flags.tsv",
                [str(i) for i in range(len(lines))],
            )
            # perplexity on the audit's dirty and clean test lines
            result[split]["contamination"] = split_scores(
                lambda idx, n=line_nll, k=line_tokens: perplexity(
                    float(n[idx].sum()), int(k[idx].sum())
                ),
                dirty,
            )
        log.info(
            "%s %s: perplexity %.2f, %.4f bits/char",
            args.run,
            split,
            result[split]["perplexity"],
            result[split]["bits_per_char"],
        )
    gen = torch.Generator().manual_seed(run.seed)
    if model is not None and ev.samples:
        for prompt in ev.prompts:
            ids = [vocab.eos, *vocab.encode_line(prompt)]
            for _ in range(ev.samples):
                out = sample(
                    model,
                    ids,
                    max_tokens=ev.sample_tokens,
                    temperature=ev.temperature,
                    eos=vocab.eos,
                    generator=gen,
                    device=device,
                    segment=c.bptt,
                )
                detail["samples"].append(
                    {"prompt": prompt, "continuation": vocab.decode(out)}
                )
    elif ev.samples:
        detail["samples"] = kn_samples(lm, ev, gen)
    if run.family in ("elman", "lstm", "gru"):
        stream = encode_stream(vocab, read_lines(text / "test.txt"))
        span = c.bptt + ev.flow_distance + 1
        starts = np.linspace(0, len(stream) - span - 1, ev.flow_sequences).astype(int)
        ids = torch.stack([stream[s : s + span] for s in starts]).to(device)
        norms = model_gradient_norms(model, ids, warm=c.bptt).cpu()
        detail["gradient_flow"] = [
            {
                "distance": ev.flow_distance - 1 - t,
                "grad_norm": float(norms[t]),
                "relative": float(norms[t] / norms[-1]),
            }
            for t in range(ev.flow_distance - 1, -1, -1)
        ]
        far = detail["gradient_flow"][-1]
        result["gradient_flow"] = {
            "distance": far["distance"],
            "relative_norm": far["relative"],
        }
    rep = args.root / "reports" / "lm" / args.run
    save(rep / "eval.json", parse(result, LmEval, f"evaluate-lm@{args.run} scores"))
    write_json(rep / "eval_detail.json", detail)


def kn_samples(lm: kneser_ney.KneserNey, ev, gen: torch.Generator) -> list[dict]:
    """Ancestral samples from the n-gram model after each prompt."""
    out = []
    words = [w for i, w in enumerate(lm.vocab) if i != 1]
    for prompt in ev.prompts:
        for _ in range(ev.samples):
            ctx, cont = prompt.split(), []
            while len(cont) < ev.sample_tokens:
                p = torch.from_numpy(lm.conditional(ctx)) ** (1 / ev.temperature)
                w = words[int(torch.multinomial(p / p.sum(), 1, generator=gen))]
                if w == kneser_ney.EOS:
                    break
                cont.append(w)
                ctx.append(w)
            out.append({"prompt": prompt, "continuation": " ".join(cont)})
    return out


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("run", help="a name under lm.runs in params.yaml")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
