"""DVC stage train-lm@<run>: one language model of the ``lm.runs`` table, trained on
data/subsampled/text/train.txt (validation: valid.txt) -> data/lm/<run>/ (weights
or n-gram counts, vocabulary, settings), with its training curve and statistics in
reports/lm/<run>/.

Neural runs checkpoint at every validation to data/checkpoints/lm/<run>.pt (outside
DVC's outputs, which DVC deletes before a run): a killed run resumes there and ends
with the same weights.

``accel`` in params.yaml sets the precision, compilation and the number of DDP
processes (torchrun; rank 0 writes every output)."""

from __future__ import annotations

import json
import logging
import resource
import time

import torch

from firth import distributed, runner
from firth.checkpoint import Checkpoint, run_key
from firth.config import load_sections
from firth.errors import ConfigError
from firth.io import atomic_path, sha256_file, write_curve
from firth.lm import kneser_ney
from firth.lm.data import build_vocabulary, encode_stream, read_lines
from firth.lm.models import build_model
from firth.lm.results import LmTrain
from firth.lm.train import score, train
from firth.results import parse, save
from firth.training import curve_columns

log = logging.getLogger("train_lm")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def body(args) -> None:
    cfg, _ = load_sections("lm", runner.params_path(args))
    if args.run not in cfg.runs:
        raise ConfigError(
            f"lm.runs has no run '{args.run}' (runs: {', '.join(cfg.runs)})"
        )
    run = cfg.runs[args.run]
    c = cfg.common
    if c.threads:
        torch.set_num_threads(c.threads)
    text = args.root / "data" / "subsampled" / "text"
    tokenizer = args.root / "data" / "tokenizers" / "text" / "tokenizer.json"
    train_lines = read_lines(text / "train.txt")
    valid_lines = read_lines(text / "valid.txt")
    data_hash = sha256_file(text / "train.txt")
    vocab = build_vocabulary(
        train_lines, unit=c.unit, min_count=c.min_count, tokenizer=tokenizer
    )
    log.info("%s: %s vocabulary of %d tokens", args.run, c.unit, vocab.size)
    family_cfg = getattr(cfg, run.family)
    settings = {
        "run": args.run,
        "family": run.family,
        "seed": run.seed,
        "common": c.model_dump(),
        run.family: family_cfg.model_dump(),
        "corpus_sha256": data_hash,
    }
    stats: dict = {
        "run": args.run,
        "family": run.family,
        "seed": run.seed,
        "unit": c.unit,
        "vocab": vocab.size,
        "corpus_sha256": data_hash,
    }
    curve: list[dict] = []
    out_dir = args.root / "data" / "lm" / args.run
    if run.family == "kn":
        sents = [
            [vocab.tokens[i] for i in vocab.encode_line(line)] for line in train_lines
        ]
        t0 = time.perf_counter()
        lm = kneser_ney.build(sents, order=cfg.kn.order)
        build_s = time.perf_counter() - t0
        valid = lm.score(
            [[vocab.tokens[i] for i in vocab.encode_line(line)] for line in valid_lines]
        )
        stats.update(
            order=cfg.kn.order,
            train_tokens=sum(len(s) for s in sents),
            build_seconds=round(build_s, 2),
            ngrams_per_order=[len(g) for g in lm.grams],
            discounts=[[round(d, 4) for d in ds] for ds in lm.discounts],
            best_valid_perplexity=valid["perplexity"],
        )
        with atomic_path(out_dir) as tmp:
            kneser_ney.save(lm, tmp)
            vocab.save(tmp / "vocab.json")
            (tmp / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
    else:
        started = distributed.start_stage(
            args, device=c.device, key="lm.common.device", script=__file__, ddp=True
        )
        if started is None:  # the torchrun ranks have written everything
            return
        accel, group = started
        device = accel.device
        train_stream = encode_stream(vocab, train_lines)
        valid_stream = encode_stream(vocab, valid_lines)
        torch.manual_seed(run.seed)
        model = build_model(run.family, vocab.size, cfg, eos=vocab.eos)
        ckpt = Checkpoint(
            args.root / "data" / "checkpoints" / "lm" / f"{args.run}.pt",
            run_key(**settings, **accel.describe(), processes=group.world),
        )
        result = train(
            model,
            train_stream,
            valid_stream,
            c,
            seed=run.seed,
            accel=accel,
            group=group,
            checkpoint=ckpt,
        )
        if not group.main:  # rank 0 scores and writes
            distributed.shutdown()
            return
        model.load_state_dict(result.best_state)
        v_nll, v_tok = score(
            model, valid_stream, batch=c.eval_batch, bptt=c.bptt, device=device
        )
        stats.update(result.stats)
        stats.update(
            train_tokens=len(train_stream) - 1,
            parameters=sum(p.numel() for p in model.parameters()),
            **accel.describe(),
            processes=group.world,
            threads=torch.get_num_threads(),
        )
        # the kept weights must give the validation loss they were kept for
        # (exactly on CPU; GPU kernels may differ in the last digits)
        stats["kept_weights_valid_loss"] = v_nll / v_tok
        if abs(v_nll / v_tok - result.stats["best_valid_loss"]) > 1e-6 * (
            v_nll / v_tok
        ):
            log.warning(
                "%s: kept weights score %.6f on valid, recorded best %.6f",
                args.run,
                v_nll / v_tok,
                result.stats["best_valid_loss"],
            )
        curve = result.history
        with atomic_path(out_dir) as tmp:
            tmp.mkdir()
            torch.save(model.state_dict(), tmp / "model.pt")
            vocab.save(tmp / "vocab.json")
            (tmp / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
        ckpt.clear()
        distributed.shutdown()
    stats["peak_rss_mb"] = round(peak_rss_mb(), 1)
    rep = args.root / "reports" / "lm" / args.run
    save(rep / "train.json", parse(stats, LmTrain, f"train-lm@{args.run} stats"))
    write_curve(
        rep / "curve.csv", curve, curve_columns("valid_loss", "valid_perplexity")
    )
    log.info("%s: best valid perplexity %.2f", args.run, stats["best_valid_perplexity"])


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("run", help="a name under lm.runs in params.yaml")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
