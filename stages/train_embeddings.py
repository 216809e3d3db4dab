"""DVC stage train-embeddings-<method>@<seed>: word vectors from the subsampled
training text (data/subsampled/text/train.txt), one seed of
``embeddings.seeds.<method>`` -> data/embeddings/<method>/seed-<seed>/vectors.txt
(word2vec text format), with training metrics in
reports/embeddings/<method>/seed-<seed>/.

The iterative trainers checkpoint every epoch to data/checkpoints/embeddings/
(outside DVC's outputs, which DVC deletes before a run): a killed run resumes from
its last epoch and ends with the same vectors."""

from __future__ import annotations

import csv
import json
import logging
import resource

import torch

from firth import runner
from firth.checkpoint import Checkpoint, run_key
from firth.config import load_sections
from firth.embeddings.corpus import load_corpus
from firth.embeddings.methods import METHODS, train_method
from firth.embeddings.results import EmbeddingTrain
from firth.embeddings.vectors import save_word2vec
from firth.errors import ConfigError
from firth.io import atomic_path, sha256_file
from firth.results import parse, save

log = logging.getLogger("train_embeddings")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def body(args) -> None:
    path = runner.params_path(args)
    cfg, _ = load_sections("embeddings", path)
    seed = args.seed
    if seed not in cfg.seeds[args.method]:
        raise ConfigError(
            f"{path}: key 'embeddings.seeds.{args.method}' has no seed {seed} "
            f"(it lists: {', '.join(map(str, cfg.seeds[args.method]))})"
        )
    if cfg.common.threads:
        torch.set_num_threads(cfg.common.threads)
    src = args.root / "data" / "subsampled" / "text" / "train.txt"
    corpus, sentences = load_corpus(
        src,
        min_count=cfg.common.min_count,
        max_sentence_len=cfg.common.max_sentence_len,
    )
    data_hash = sha256_file(src)
    ckpt = Checkpoint(
        args.root
        / "data"
        / "checkpoints"
        / "embeddings"
        / f"{args.method}-seed{seed}.pt",
        run_key(
            method=args.method,
            params=cfg.model_dump(exclude={"seeds"}),
            seed=seed,
            corpus=data_hash,
            device=cfg.common.device,
        ),
    )
    log.info("training %s on %s", args.method, src)
    out = train_method(args.method, corpus, sentences, cfg, seed=seed, checkpoint=ckpt)
    run = f"{args.method}/seed-{seed}"
    with atomic_path(args.root / "data" / "embeddings" / run) as tmp:
        tmp.mkdir()
        save_word2vec(tmp / "vectors.txt", out.embedding)
        if out.space is not None:
            torch.save(
                {
                    "table": out.table,
                    "words": out.space.words,
                    "used_buckets": torch.from_numpy(out.space.used_buckets),
                    "min_n": out.space.min_n,
                    "max_n": out.space.max_n,
                    "buckets": out.space.buckets,
                    "combine": out.space.combine,
                },
                tmp / "subword.pt",
            )
        (tmp / "config.json").write_text(
            json.dumps(
                {
                    "method": args.method,
                    "seed": seed,
                    "embeddings": cfg.model_dump(exclude={"seeds"}),
                    "corpus": str(src.relative_to(args.root)),
                    "corpus_sha256": data_hash,
                },
                indent=2,
            )
            + "\n"
        )
    rep = args.root / "reports" / "embeddings" / run
    stats = {k: v for k, v in out.stats.items() if k != "config"}
    stats.update(
        method=args.method,
        seed=seed,
        vocab=len(corpus.vocab),
        corpus_tokens=corpus.vocab.total_tokens,
        corpus_sha256=data_hash,
        peak_rss_mb=round(peak_rss_mb(), 1),
        threads=torch.get_num_threads(),
    )
    save(rep / "train.json", parse(stats, EmbeddingTrain, "train-embeddings stats"))
    if out.loss_curve:
        with atomic_path(rep / "loss.csv") as tmp:
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["epoch", "loss"])
                for i, loss in enumerate(out.loss_curve, start=1):
                    w.writerow([i, round(loss, 6)])
    ckpt.clear()
    log.info(
        "%s: %.1f s, %.0f words/s, peak RSS %.0f MB",
        run,
        stats["seconds"],
        stats["words_per_second"],
        stats["peak_rss_mb"],
    )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("method", choices=METHODS)
    p.add_argument("seed", type=int, help="a seed in embeddings.seeds.<method>")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
