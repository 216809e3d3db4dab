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
from firth.nmt.config import Nmt
from firth.nmt.stage import NmtTraining
from firth.training import curve_columns

CURVE = curve_columns("valid_loss", "valid_perplexity", "valid_bleu")


def body(args) -> None:
    cfg, _ = load_sections("nmt", stage_cli.params_path(args), schema=Nmt)
    use_threads(cfg.common.threads)
    job = NmtTraining.load(
        cfg,
        args.run,
        train=args.train,
        valid=args.valid,
        tokenizer=args.tokenizer,
        checkpoint=args.checkpoint,
    )
    distributed.train_stage(
        args,
        job,
        device=cfg.common.device,
        key="nmt.common.device",
        script=__file__,
        ddp=True,
        curve=CURVE,
    )


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="a name under nmt.runs in params.yaml")
    stage_cli.path(p, "train", "the training pairs (TSV)")
    stage_cli.path(p, "valid", "the validation pairs (TSV)")
    stage_cli.path(p, "tokenizer", "the joint BPE's folder")
    stage_cli.path(p, "out", "the model folder to write")
    stage_cli.path(p, "reports", "the folder of train.json and curve.csv")
    stage_cli.path(p, "checkpoint", "checkpoint file, outside DVC's outputs")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
