"""DVC stage train-nmt@<run>: one translation model of the ``nmt.runs`` table,
trained on data/subsampled/parallel/train.tsv with the joint BPE of
data/tokenizers/parallel (validation: valid.tsv) -> data/nmt/<run>/ (weights and
settings), with its training curve (valid loss and greedy BLEU against training
minutes) and statistics in reports/nmt/<run>/.

Training checkpoints at every validation to data/checkpoints/nmt/<run>.pt (outside
DVC's outputs, which DVC deletes before a run): a killed run resumes there and ends
with the same weights.

``accel`` in params.yaml sets the precision, compilation and the number of DDP
processes (torchrun; rank 0 writes every output)."""

from __future__ import annotations

import json
import logging
import resource

import torch

from firth import distributed, runner
from firth.checkpoint import Checkpoint, run_key
from firth.config import load_sections
from firth.errors import ConfigError
from firth.io import atomic_path, sha256_file, write_curve
from firth.nmt.config import Nmt
from firth.nmt.data import encode, encode_extended, load_tokenizer, read_pairs
from firth.nmt.models import build_model
from firth.nmt.results import NmtTrain
from firth.nmt.train import nll, train
from firth.results import parse, save
from firth.training import curve_columns

log = logging.getLogger("train_nmt")

CURVE = curve_columns("valid_loss", "valid_perplexity", "valid_bleu")


def body(args) -> None:
    cfg, _ = load_sections("nmt", runner.params_path(args), schema=Nmt)
    if args.run not in cfg.runs:
        raise ConfigError(
            f"nmt.runs has no run '{args.run}' (runs: {', '.join(cfg.runs)})"
        )
    run, c = cfg.runs[args.run], cfg.common
    if c.threads:
        torch.set_num_threads(c.threads)
    data = args.root / "data" / "subsampled" / "parallel"
    tok_path = args.root / "data" / "tokenizers" / "parallel" / "tokenizer.json"
    tok = load_tokenizer(tok_path)
    tr, va = read_pairs(data / "train.tsv"), read_pairs(data / "valid.tsv")
    valid_oov = None
    if run.pointer:  # unknown source spans get copyable ids
        ext, ext_valid = (
            encode_extended(tok, tr.source, tr.target),
            encode_extended(tok, va.source, va.target),
        )
        train_src, train_tgt, valid_src, valid_tgt = (
            ext.src,
            ext.tgt,
            ext_valid.src,
            ext_valid.tgt,
        )
        valid_oov = ext_valid.oov
    else:
        train_src, train_tgt = encode(tok, tr.source), encode(tok, tr.target)
        valid_src, valid_tgt = encode(tok, va.source), encode(tok, va.target)
    started = distributed.start_stage(
        args, device=c.device, key="nmt.common.device", script=__file__, ddp=True
    )
    if started is None:  # the torchrun ranks have written everything
        return
    accel, group = started
    device = accel.device
    settings = {
        "run": args.run,
        "model": run.model,
        "seed": run.seed,
        "epochs": run.epochs,
        "common": c.model_dump(),
        "transformer": cfg.transformer.model_dump(),
        "train_sha256": sha256_file(data / "train.tsv"),
        "tokenizer_sha256": sha256_file(tok_path),
        # the copying switches, where a run sets them
        **run.model_dump(
            include={"pointer", "coverage", "coverage_loss"}, exclude_defaults=True
        ),
    }
    torch.manual_seed(run.seed)
    model = build_model(
        run.model,
        tok.get_vocab_size(),
        cfg,
        pointer=run.pointer,
        coverage=run.coverage,
    )
    ckpt = Checkpoint(
        args.root / "data" / "checkpoints" / "nmt" / f"{args.run}.pt",
        run_key(**settings, **accel.describe(), processes=group.world),
    )
    result = train(
        model,
        tok,
        train_src,
        train_tgt,
        valid_src,
        valid_tgt,
        va.target,
        c,
        seed=run.seed,
        epochs=run.epochs,
        coverage_loss=run.coverage_loss,
        valid_oov=valid_oov,
        accel=accel,
        group=group,
        checkpoint=ckpt,
    )
    if not group.main:  # rank 0 scores and writes
        distributed.shutdown()
        return
    model.load_state_dict(result.best_state)
    v_nll, v_tok = nll(
        model, valid_src, valid_tgt, batch_tokens=c.batch_tokens, device=device
    )
    stats = {
        "run": args.run,
        "model": run.model,
        "seed": run.seed,
        **run.model_dump(
            include={"pointer", "coverage", "coverage_loss"}, exclude_defaults=True
        ),
        **result.stats,
        "kept_weights_valid_loss": v_nll / v_tok,
        "train_pairs": len(tr),
        "vocab": tok.get_vocab_size(),
        "parameters": sum(p.numel() for p in model.parameters()),
        **accel.describe(),
        "processes": group.world,
        "threads": torch.get_num_threads(),
        "train_sha256": settings["train_sha256"],
        "peak_rss_mb": round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
        ),
    }
    if abs(v_nll / v_tok - result.stats["best_valid_loss"]) > 1e-6 * (v_nll / v_tok):
        log.warning(
            "%s: kept weights score %.6f on valid, recorded best %.6f",
            args.run,
            v_nll / v_tok,
            result.stats["best_valid_loss"],
        )
    out_dir = args.root / "data" / "nmt" / args.run
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        torch.save(model.state_dict(), tmp / "model.pt")
        (tmp / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
    ckpt.clear()
    distributed.shutdown()
    rep = args.root / "reports" / "nmt" / args.run
    save(rep / "train.json", parse(stats, NmtTrain, f"train-nmt@{args.run} stats"))
    write_curve(rep / "curve.csv", result.history, CURVE)
    log.info(
        "%s: best valid perplexity %.2f after %.1f training minutes",
        args.run,
        stats["best_valid_perplexity"],
        stats["train_seconds"] / 60,
    )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("run", help="a name under nmt.runs in params.yaml")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
