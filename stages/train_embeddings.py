"""DVC stage train-embeddings-<method>@<seed>: word vectors from the subsampled
training text (data/subsampled/text/train.txt), one seed of
``embeddings.seeds.<method>`` -> data/embeddings/<method>/seed-<seed>/vectors.txt
(word2vec text format), with training metrics in
reports/embeddings/<method>/seed-<seed>/. SGNS and PPMI-SVD train every setting of
``embeddings.tune`` and keep the one with the best mean Spearman on the dev halves
of the similarity sets (data/raw/eval; firth.embeddings.tuning): train.json lists
every setting's dev scores.

The iterative trainers checkpoint every epoch to data/checkpoints/embeddings/
(outside DVC's outputs, which DVC deletes before a run): a killed run resumes from
its last epoch and ends with the same vectors."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_sections
from firth.embeddings.config import Embeddings
from firth.embeddings.methods import METHODS
from firth.embeddings.stage import EmbeddingTraining


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg, _ = load_sections("embeddings", path, schema=Embeddings)
    use_threads(cfg.common.threads)
    job = EmbeddingTraining.load(
        cfg,
        args.method,
        args.seed,
        path,
        text=args.text,
        eval_dir=args.eval,
        checkpoints=args.checkpoints,
    )
    trained = job.fit()
    curve = "loss.csv" if trained.curve else None
    trained.save(args.out, args.reports, ["epoch", "loss"], curve=curve)
    job.clear()


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("method", choices=METHODS)
    p.add_argument("seed", type=int, help="a seed in embeddings.seeds.<method>")
    stage_cli.path(p, "text", "the training text (one sentence per line)")
    stage_cli.path(
        p, "eval", "sgns, ppmi-svd: the similarity sets to tune on", required=False
    )
    stage_cli.path(p, "out", "the vectors folder to write")
    stage_cli.path(p, "reports", "the folder of train.json and loss.csv")
    stage_cli.path(p, "checkpoints", "checkpoint folder, outside DVC's outputs")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
