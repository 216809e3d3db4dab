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

from firth import distributed, stage_cli
from firth.accel import use_threads
from firth.tagging.stage import CellTraining, setup
from firth.training import curve_columns

CURVE = ["init", "seed", *curve_columns("valid_score")]


def body(args) -> None:
    run = setup(stage_cli.params_path(args), args.data, args.head)
    use_threads(run.common.threads)
    job = CellTraining.load(
        run,
        args.seed,
        train=args.train,
        valid=args.valid,
        vectors=args.vectors,
        checkpoints=args.checkpoints,
    )
    distributed.train_stage(
        args,
        job,
        device=run.common.device,
        key="tagger.common.device",
        script=__file__,
        ddp=False,
        curve=CURVE,
    )


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("data", help="a name in tagger.data (a source under sources.tagged)")
    p.add_argument("head", help="a head in tagger.heads: softmax | crf")
    p.add_argument("seed", type=int, help="a seed in tagger.seeds")
    stage_cli.path(p, "train", "the training sentences (CoNLL)")
    stage_cli.path(p, "valid", "the validation sentences (CoNLL)")
    stage_cli.path(p, "vectors", "the tagger.vectors method's folder of seeds")
    stage_cli.path(p, "out", "the cell's model folder to write")
    stage_cli.path(p, "reports", "the folder of train.json and curve.csv")
    stage_cli.path(
        p, "checkpoints", "the run's checkpoint folder, outside DVC's outputs"
    )
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
