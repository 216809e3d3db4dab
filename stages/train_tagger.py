"""DVC stage train-tagger@<run>: one (dataset, head) row of the ``tagger.runs`` table,
trained on data/subsampled/tagged/<data>/train.conll (validation: valid.conll) for
every seed of ``tagger.seeds``, twice: with randomly initialised word embeddings, and
initialised from the ``tagger.vectors`` word vectors (data/embeddings/<vectors>/) ->
data/taggers/<run>/ (weights, vocabularies, settings), with the per-epoch curves and
statistics in reports/tagging/<run>/.

Each model checkpoints after every epoch to data/checkpoints/tagger/<run>/ (outside
DVC's outputs): a killed stage resumes the unfinished model and skips finished ones,
ending with the same weights."""

from __future__ import annotations

import csv
import json
import logging
import resource
from collections import Counter

import torch

from firth import runner
from firth.checkpoint import Checkpoint, run_key
from firth.config import load_sections, load_sources
from firth.embeddings.vectors import load_word2vec
from firth.errors import ConfigError
from firth.io import atomic_path, sha256_file, write_json
from firth.lm.train import resolve_device
from firth.tagging.data import Vocab, encode, norm, read_split
from firth.tagging.evaluate import scheme_of
from firth.tagging.models import build_tagger
from firth.tagging.train import train

log = logging.getLogger("train_tagger")
CURVE = ["init", "seed", "epoch", "train_loss", "valid_score", "train_seconds"]


def body(args) -> None:
    path = runner.params_path(args)
    cfg, _ = load_sections("tagger", path)
    if args.run not in cfg.runs:
        raise ConfigError(
            f"tagger.runs has no run '{args.run}' (runs: {', '.join(cfg.runs)})"
        )
    run, c = cfg.runs[args.run], cfg.common
    if run.data not in load_sources("tagged", path):
        raise ConfigError(
            f"{path}: key 'tagger.runs.{args.run}.data': no source "
            f"'sources.tagged.{run.data}'"
        )
    if c.threads:
        torch.set_num_threads(c.threads)
    device = resolve_device(c.device)
    data = args.root / "data" / "subsampled" / "tagged" / run.data
    tr, va = read_split(data / "train.conll"), read_split(data / "valid.conll")
    bio = scheme_of(t for _, tags in tr for t in tags) == "BIO"
    vec_path = args.root / "data" / "embeddings" / cfg.vectors / "vectors.txt"
    vectors = load_word2vec(vec_path)
    if vectors.dim != c.word_dim:
        raise ConfigError(
            f"{path}: key 'tagger.common.word_dim' is {c.word_dim} but "
            f"{vec_path} has {vectors.dim}-dimensional vectors"
        )
    vec_index = vectors.index()
    counts = Counter(norm(w) for tokens, _ in tr for w in tokens)
    settings = {
        "run": args.run,
        "data": run.data,
        "head": run.head,
        "common": c.model_dump(),
        "vectors": cfg.vectors,
        "train_sha256": sha256_file(data / "train.conll"),
        "valid_sha256": sha256_file(data / "valid.conll"),
        "vectors_sha256": sha256_file(vec_path),
    }
    inits = ["random", cfg.vectors]
    out = args.root / "data" / "taggers" / args.run
    ckpt_dir = args.root / "data" / "checkpoints" / "tagger" / args.run
    models, curve, vocabs = [], [], {}
    for init in inits:
        vocab = Vocab.build(tr, vectors.words if init != "random" else ())
        vocabs[init] = vocab
        tr_enc, va_enc = encode(vocab, tr), encode(vocab, va)
        singletons = {vocab.word_ix[w] for w, n in counts.items() if n == 1}
        for seed in cfg.seeds:
            name = f"{init}-seed{seed}"
            torch.manual_seed(seed)
            model = build_tagger(vocab, run.head, c)
            found = 0
            if init != "random":
                found = model.load_vectors(vocab.words, vec_index, vectors.matrix)
            ckpt = Checkpoint(
                ckpt_dir / f"{name}.pt",
                run_key(**settings, init=init, seed=seed, device=str(device)),
            )
            result = train(
                model,
                tr_enc,
                va_enc,
                va,
                vocab,
                c,
                seed=seed,
                device=device,
                singletons=singletons,
                bio=bio,
                checkpoint=ckpt,
                desc=f"{args.run} {name}",
            )
            model.load_state_dict(result.best_state)
            models.append(
                {
                    "init": init,
                    "seed": seed,
                    "state": {k: v.cpu() for k, v in model.state_dict().items()},
                    "stats": {
                        **result.stats,
                        "pretrained_rows": found,
                        "vocab": len(vocab.words),
                        "parameters": sum(p.numel() for p in model.parameters()),
                    },
                }
            )
            curve += [{"init": init, "seed": seed, **row} for row in result.history]
    with atomic_path(out) as tmp:
        tmp.mkdir()
        for init, vocab in vocabs.items():
            (tmp / f"vocab-{init}.json").write_text(json.dumps(vocab.to_json()) + "\n")
        for m in models:
            torch.save(m["state"], tmp / f"{m['init']}-seed{m['seed']}.pt")
        (tmp / "config.json").write_text(
            json.dumps({**settings, "inits": inits, "seeds": cfg.seeds}, indent=2)
            + "\n"
        )
    for init in inits:
        for seed in cfg.seeds:
            (ckpt_dir / f"{init}-seed{seed}.pt").unlink(missing_ok=True)
    rep = args.root / "reports" / "tagging" / args.run
    write_json(
        rep / "train.json",
        {
            "run": args.run,
            "data": run.data,
            "head": run.head,
            "scheme": "BIO" if bio else "tags",
            "valid_metric": "entity F1" if bio else "token accuracy",
            "train_sentences": len(tr),
            "tags": len(vocabs["random"].tags),
            "vectors": cfg.vectors,
            "vectors_words": len(vectors.words),
            "device": str(device),
            "threads": torch.get_num_threads(),
            "train_sha256": settings["train_sha256"],
            "models": [
                {"init": m["init"], "seed": m["seed"], **m["stats"]} for m in models
            ],
            "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
            ),
        },
    )
    with atomic_path(rep / "curve.csv") as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=CURVE)
            w.writeheader()
            for row in curve:
                w.writerow(
                    {
                        k: (round(v, 6) if isinstance(v, float) else v)
                        for k, v in row.items()
                    }
                )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("run", help="a name under tagger.runs in params.yaml")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
