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

from firth import distributed, stage_cli
from firth.accel import use_threads
from firth.config import load_sections
from firth.io import write_curve, write_folder
from firth.lm.stage import LmTraining
from firth.results import save
from firth.training import curve_columns


def body(args) -> None:
    cfg, _ = load_sections("lm", stage_cli.params_path(args))
    use_threads(cfg.common.threads)
    job = LmTraining(args.root, cfg, args.run)
    if job.family == "kn":
        trained = job.kneser_ney()
    else:
        started = distributed.start_stage(
            args,
            device=cfg.common.device,
            key="lm.common.device",
            script=__file__,
            ddp=True,
        )
        if started is None:  # the torchrun ranks have written everything
            return
        trained = job.neural(*started)
        if trained is None:  # not rank 0: rank 0 writes
            distributed.shutdown()
            return
    write_folder(args.root / "data" / "lm" / args.run, trained.write)
    job.checkpoint.clear()
    if job.family != "kn":
        distributed.shutdown()
    rep = args.root / "reports" / "lm" / args.run
    save(rep / "train.json", trained.stats)
    columns = curve_columns("valid_loss", "valid_perplexity")
    write_curve(rep / "curve.csv", trained.curve, columns)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="a name under lm.runs in params.yaml")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
