"""DVC stage train-nli@<data>-<model>-<seed>: one cell of the ``nli.data`` x
``nli.models`` x ``nli.seeds`` matrix. ``pair`` reads premise and hypothesis,
``hypothesis`` the hypothesis only (the partial-input baseline); both are the same
BiLSTM max-pool family (firth.nli.models), trained on the source's train split with
early stopping on its valid split (or on ``nli.valid_fraction`` of the training
premises where it has none) -> data/nli/<data>-<model>/seed-<seed>/ (weights,
vocabulary, settings), with statistics and the per-epoch curve in
reports/nli/<data>-<model>/seed-<seed>/.

The model checkpoints after every epoch to data/checkpoints/nli/ (outside DVC's
outputs): a killed stage resumes and ends with the same weights."""

from __future__ import annotations

import json
import logging
import resource

import torch

from firth import distributed, runner
from firth.checkpoint import Checkpoint, run_key
from firth.errors import ConfigError
from firth.io import atomic_path, sha256_file, write_curve
from firth.nli.data import Vocab, encode, load_splits, tokenize
from firth.nli.models import build
from firth.nli.results import NliTrain
from firth.nli.stage import setup
from firth.nli.train import train
from firth.results import parse, save
from firth.training import curve_columns

log = logging.getLogger("train_nli")
CURVE = curve_columns("valid_accuracy")


def body(args) -> None:
    run = setup(args.root, runner.params_path(args), args.data, args.model)
    cfg, seed = run.cfg, args.seed
    if seed not in cfg.seeds:
        raise ConfigError(
            f"{run.params}: key 'nli.seeds' has no seed {seed} "
            f"(it lists: {', '.join(map(str, cfg.seeds))})"
        )
    splits, carved = load_splits(run.raw, cfg, run.seed0)
    sentences = (
        tokenize(r[side], lowercase=cfg.lowercase)[: cfg.max_len]
        for r in splits["train"]
        for side in ("premise", "hypothesis")
    )
    vocab = Vocab.build(sentences, cfg.min_count)
    enc = {
        s: encode(rs, vocab, lowercase=cfg.lowercase, max_len=cfg.max_len)
        for s, rs in splits.items()
    }
    data_sha = sha256_file(run.raw / "examples.jsonl")
    settings = {
        "run": run.name,
        "data": run.data,
        "model": run.model,
        "seed": seed,
        "nli": cfg.model_dump(exclude={"data", "models", "seeds"}),
        "split_seed": run.seed0,
        "valid_from_train": carved,
        "examples_sha256": data_sha,
    }
    accel, _ = distributed.start_stage(
        args, device=cfg.device, key="nli.device", script=__file__, ddp=False
    )
    torch.manual_seed(seed)
    model = build(run.model, len(vocab.words), cfg)
    ckpt = Checkpoint(
        args.root / "data" / "checkpoints" / "nli" / f"{run.name}-seed{seed}.pt",
        run_key(**settings, **accel.describe()),
    )
    result = train(
        model,
        enc["train"],
        enc["valid"],
        cfg,
        seed=seed,
        accel=accel,
        checkpoint=ckpt,
        desc=f"{run.name} seed {seed}",
    )
    out = args.root / "data" / "nli" / run.name / f"seed-{seed}"
    with atomic_path(out) as tmp:
        tmp.mkdir()
        torch.save({k: v.cpu() for k, v in result.best_state.items()}, tmp / "model.pt")
        (tmp / "vocab.json").write_text(json.dumps(vocab.words) + "\n")
        (tmp / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
    ckpt.clear()
    rep = args.root / "reports" / "nli" / run.name / f"seed-{seed}"
    stats = parse(
        {
            **{k: settings[k] for k in ("run", "data", "model", "seed")},
            **result.stats,
            "train_examples": len(splits["train"]),
            "valid_examples": len(splits["valid"]),
            "valid_from_train": carved,
            "vocab": len(vocab.words),
            "parameters": sum(p.numel() for p in model.parameters()),
            **accel.describe(),
            "threads": torch.get_num_threads(),
            "examples_sha256": data_sha,
            "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
            ),
        },
        NliTrain,
        f"train-nli@{run.name}-{seed} stats",
    )
    save(rep / "train.json", stats)
    write_curve(rep / "curve.csv", result.history, CURVE)


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("data", help="a name in nli.data (a source under sources.nli)")
    p.add_argument("model", help="a model in nli.models: pair | hypothesis")
    p.add_argument("seed", type=int, help="a seed in nli.seeds")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
