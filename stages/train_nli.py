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

from firth import distributed, stage_cli
from firth.accel import use_threads
from firth.nli.stage import NliTraining, setup
from firth.training import curve_columns

CURVE = curve_columns("valid_accuracy")


def body(args) -> None:
    run = setup(stage_cli.params_path(args), args.data, args.model)
    use_threads(run.cfg.threads)
    job = NliTraining.load(
        run, args.seed, source=args.source, checkpoint=args.checkpoint
    )
    distributed.train_stage(
        args,
        job,
        device=run.cfg.device,
        key="nli.device",
        script=__file__,
        ddp=False,
        curve=CURVE,
    )


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("data", help="a name in nli.data (a source under sources.nli)")
    p.add_argument("model", help="a model in nli.models: pair | hypothesis")
    p.add_argument("seed", type=int, help="a seed in nli.seeds")
    stage_cli.path(p, "source", "the fetched NLI source's folder (examples.jsonl)")
    stage_cli.path(p, "out", "the seed's model folder to write")
    stage_cli.path(p, "reports", "the folder of train.json and curve.csv")
    stage_cli.path(p, "checkpoint", "checkpoint file, outside DVC's outputs")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
