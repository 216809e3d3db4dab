"""DVC stage evaluate-attention@<run>: is the attention of one trained run of
``nmt.runs`` faithful? (firth.nmt.faithfulness) -> reports/attention/<run>/.

On the test split, every decoding step's attention distribution is replaced by a
random permutation of itself, by the uniform distribution, or by itself without
its most-attended source token (``evaluate_attention.interventions``), everything
else held fixed: eval.json gives, per intervention, the share of target tokens
whose most probable token changes under teacher forcing, the mean total variation
distance of the output distribution, and the greedy translations' BLEU and chrF,
beside the unedited greedy scores; and the mean Kendall tau between attention and
the gradient x input importance of the source tokens on the first
``tau_sentences`` verses. items.json.gz keeps each verse's statistics: what the
scorecard's faithfulness finding resamples."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_section, load_sections
from firth.nmt.config import EvaluateAttention, Nmt
from firth.nmt.faithfulness import evaluate_faithfulness
from firth.results import save, save_items


def body(args) -> None:
    cfg, _ = load_sections("nmt", stage_cli.params_path(args), schema=Nmt)
    use_threads(cfg.common.threads)
    ev = load_section(
        "evaluate_attention", stage_cli.params_path(args), schema=EvaluateAttention
    )
    result, items = evaluate_faithfulness(
        cfg,
        ev,
        args.run,
        test_path=args.test,
        model=args.model,
        tokenizer=args.tokenizer,
    )
    save(args.reports / "eval.json", result)
    save_items(args.reports / "items.json.gz", items)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="an attention run of nmt.runs")
    stage_cli.path(p, "model", "the trained run's folder")
    stage_cli.path(p, "tokenizer", "the joint BPE's folder")
    stage_cli.path(p, "test", "the test pairs (TSV)")
    stage_cli.path(p, "reports", "the folder of eval.json and items.json.gz")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
