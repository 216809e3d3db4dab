"""DVC stage train-nmt@<run>: one translation model of the ``nmt.runs`` table,
trained on data/subsampled/parallel/train.tsv with the joint BPE of
data/tokenizers/parallel (validation: valid.tsv) -> data/nmt/<run>/ (weights and
settings), with its training curve (valid loss and greedy BLEU against training
minutes) and statistics in reports/nmt/<run>/.

NmtTraining checkpoints at every validation to data/checkpoints/nmt/<run>.pt (outside
DVC's outputs, which DVC deletes before a run): a killed run resumes there and ends
with the same weights.

``accel`` in params.yaml sets the precision, compilation and the number of DDP
processes (torchrun; rank 0 writes every output)."""

from __future__ import annotations

from firth import distributed, stage_cli
from firth.accel import use_threads
from firth.config import load_sections
from firth.io import write_curve, write_folder
from firth.nmt.config import Nmt
from firth.nmt.stage import NmtTraining
from firth.results import save
from firth.training import curve_columns

CURVE = curve_columns("valid_loss", "valid_perplexity", "valid_bleu")


def body(args) -> None:
    cfg, _ = load_sections("nmt", stage_cli.params_path(args), schema=Nmt)
    use_threads(cfg.common.threads)
    job = NmtTraining(args.root, cfg, args.run)
    started = distributed.start_stage(
        args,
        device=cfg.common.device,
        key="nmt.common.device",
        script=__file__,
        ddp=True,
    )
    if started is None:  # the torchrun ranks have written everything
        return
    trained = job.fit(*started)
    if trained is not None:  # rank 0 writes
        write_folder(args.root / "data" / "nmt" / args.run, trained.write)
        job.checkpoint.clear()
    distributed.shutdown()
    if trained is not None:
        rep = args.root / "reports" / "nmt" / args.run
        save(rep / "train.json", trained.stats)
        write_curve(rep / "curve.csv", trained.curve, CURVE)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="a name under nmt.runs in params.yaml")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
