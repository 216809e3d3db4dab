"""DVC stage train-tagger@<data>-<head>-<seed>: one cell of the ``tagger.data`` x
``tagger.heads`` x ``tagger.seeds`` matrix, trained on
data/subsampled/tagged/<data>/train.conll (validation: valid.conll) twice: with
randomly initialised word embeddings, and initialised from the ``tagger.vectors`` word
vectors of the same seed (data/embeddings/<vectors>/seed-<seed>/) ->
data/taggers/<data>-<head>/seed-<seed>/ (weights, vocabularies, settings), with the
per-epoch curves and statistics in reports/tagging/<data>-<head>/seed-<seed>/.

Each model checkpoints after every epoch to data/checkpoints/tagger/ (outside DVC's
outputs): a killed stage resumes the unfinished model and skips a finished one,
ending with the same weights."""

from __future__ import annotations

import json
import logging
import resource
from collections import Counter

import torch

from firth import distributed, runner
from firth.checkpoint import Checkpoint, run_key
from firth.embeddings.vectors import load_word2vec
from firth.errors import ConfigError
from firth.io import atomic_path, sha256_file, write_curve
from firth.results import parse, save
from firth.tagging.data import Vocab, encode, norm, read_split
from firth.tagging.evaluate import scheme_of
from firth.tagging.models import build_tagger
from firth.tagging.results import TaggerTrain
from firth.tagging.stage import setup, vectors_dir
from firth.tagging.train import train
from firth.training import curve_columns

log = logging.getLogger("train_tagger")
CURVE = ["init", "seed", *curve_columns("valid_score")]


def body(args) -> None:
    run = setup(args.root, runner.params_path(args), args.data, args.head)
    c, seed, vec_name = run.common, args.seed, run.cfg.vectors
    if seed not in run.cfg.seeds:
        raise ConfigError(
            f"{run.params}: key 'tagger.seeds' has no seed {seed} "
            f"(it lists: {', '.join(map(str, run.cfg.seeds))})"
        )
    tr = read_split(run.data_dir / "train.conll")
    va = read_split(run.data_dir / "valid.conll")
    bio = scheme_of(t for _, tags in tr for t in tags) == "BIO"
    vec_path = vectors_dir(args.root, run.params, vec_name, seed) / "vectors.txt"
    vectors = load_word2vec(vec_path)
    if vectors.dim != c.word_dim:
        raise ConfigError(
            f"{run.params}: key 'tagger.common.word_dim' is {c.word_dim} but "
            f"{vec_path} has {vectors.dim}-dimensional vectors"
        )
    vec_index = vectors.index()
    counts = Counter(norm(w) for tokens, _ in tr for w in tokens)
    settings = {
        "run": run.name,
        "data": run.data,
        "head": run.head,
        "seed": seed,
        "common": c.model_dump(),
        "vectors": vec_name,
        "vectors_path": str(vec_path.relative_to(args.root)),
        "train_sha256": sha256_file(run.data_dir / "train.conll"),
        "valid_sha256": sha256_file(run.data_dir / "valid.conll"),
        "vectors_sha256": sha256_file(vec_path),
    }
    accel, _ = distributed.start_stage(
        args, device=c.device, key="tagger.common.device", script=__file__, ddp=False
    )
    inits = ["random", vec_name]
    out = args.root / "data" / "taggers" / run.name / f"seed-{seed}"
    ckpt_dir = args.root / "data" / "checkpoints" / "tagger" / run.name
    models, curve, vocabs = [], [], {}
    for init in inits:
        vocab = Vocab.build(tr, vectors.words if init != "random" else ())
        vocabs[init] = vocab
        tr_enc, va_enc = encode(vocab, tr), encode(vocab, va)
        singletons = {vocab.word_ix[w] for w, n in counts.items() if n == 1}
        name = f"{init}-seed{seed}"
        torch.manual_seed(seed)
        model = build_tagger(vocab, run.head, c)
        found = 0
        if init != "random":
            found = model.load_vectors(vocab.words, vec_index, vectors.matrix)
        ckpt = Checkpoint(
            ckpt_dir / f"{name}.pt",
            run_key(**settings, init=init, **accel.describe()),
        )
        result = train(
            model,
            tr_enc,
            va_enc,
            va,
            vocab,
            c,
            seed=seed,
            accel=accel,
            singletons=singletons,
            bio=bio,
            checkpoint=ckpt,
            desc=f"{run.name} {name}",
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
            torch.save(m["state"], tmp / f"{m['init']}.pt")
        (tmp / "config.json").write_text(
            json.dumps({**settings, "inits": inits}, indent=2) + "\n"
        )
    for init in inits:
        (ckpt_dir / f"{init}-seed{seed}.pt").unlink(missing_ok=True)
    rep = args.root / "reports" / "tagging" / run.name / f"seed-{seed}"
    stats = parse(
        {
            "run": run.name,
            "data": run.data,
            "head": run.head,
            "seed": seed,
            "scheme": "BIO" if bio else "tags",
            "valid_metric": "entity F1" if bio else "token accuracy",
            "train_sentences": len(tr),
            "tags": len(vocabs["random"].tags),
            "vectors": vec_name,
            "vectors_path": settings["vectors_path"],
            "vectors_words": len(vectors.words),
            **accel.describe(),
            "threads": torch.get_num_threads(),
            "train_sha256": settings["train_sha256"],
            "models": [
                {"init": m["init"], "seed": m["seed"], **m["stats"]} for m in models
            ],
            "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
            ),
        },
        TaggerTrain,
        f"train-tagger@{run.name}-{seed} stats",
    )
    save(rep / "train.json", stats)
    write_curve(rep / "curve.csv", curve, CURVE)


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("data", help="a name in tagger.data (a source under sources.tagged)")
    p.add_argument("head", help="a head in tagger.heads: softmax | crf")
    p.add_argument("seed", type=int, help="a seed in tagger.seeds")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
