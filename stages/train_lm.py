"""DVC stage train-lm@<run>: one language model of the ``lm.runs`` table, trained on
data/subsampled/text/train.txt (validation: valid.txt) -> data/lm/<run>/ (weights
or n-gram counts, vocabulary, settings), with its training curve and statistics in
reports/lm/<run>/.

Neural runs checkpoint at every validation to data/checkpoints/lm/<run>.pt (outside
DVC's outputs, which DVC deletes before a run): a killed run resumes there and ends
with the same weights.

``accel`` in params.yaml sets the precision, compilation and the number of DDP
processes (torchrun; rank 0 writes every output); ``lm.common.cpu_bf16`` asks for
bf16 autocast on a CPU with bf16 units under ``accel.precision: auto``."""

from __future__ import annotations

from firth import distributed, stage_cli
from firth.accel import use_threads
from firth.config import load_sections
from firth.lm.config import Lm
from firth.lm.stage import LmTraining
from firth.training import curve_columns

CURVE = curve_columns("valid_loss", "valid_perplexity")


def body(args) -> None:
    cfg, _ = load_sections("lm", stage_cli.params_path(args), schema=Lm)
    use_threads(cfg.common.threads)
    job = LmTraining.load(
        cfg,
        args.run,
        train=args.train,
        valid=args.valid,
        tokenizer=args.tokenizer,
        checkpoint=args.checkpoint,
    )
    if job.family == "kn":  # counts: no device, no DDP
        job.kneser_ney().save(args.out, args.reports, CURVE)
        return
    distributed.train_stage(
        args,
        job,
        device=cfg.common.device,
        key="lm.common.device",
        script=__file__,
        ddp=True,
        curve=CURVE,
        cpu_bf16=cfg.common.cpu_bf16,
    )


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="a name under lm.runs in params.yaml")
    stage_cli.path(p, "train", "the training text")
    stage_cli.path(p, "valid", "the validation text")
    stage_cli.path(p, "tokenizer", "the text tokenizer's folder (BPE runs)")
    stage_cli.path(p, "out", "the model folder to write")
    stage_cli.path(p, "reports", "the folder of train.json and curve.csv")
    stage_cli.path(p, "checkpoint", "checkpoint file, outside DVC's outputs")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
