"""DVC stage evaluate-lm@<run>: score one trained language model on the test text
(data/subsampled/text/test.txt) -> reports/lm/<run>/eval.json (test and valid
perplexity per token of the run's own tokenization, bits per character, OOV rate,
the uniform and unigram baselines of that tokenization) and eval_detail.json
(sampled continuations; for recurrent runs the gradient-flow measurement
||dL_T/dh_t|| against T - t). The test perplexity is also given on the
contamination audit's clean and dirty test lines (audit-text: data/audit/text/
flags.tsv), from per-line scores (firth.lm.lines).

Bits per character: the total NLL in bits over the characters of the text (every
line plus its line break, firth.lm.metrics), the same denominator for every model.
reports/lm/<run>/items.json.gz keeps each test line's bits, tokens, characters,
unigram bits and dirty flag: what the report's verdicts resample."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_section, load_sections
from firth.lm.config import EvaluateLm, Lm
from firth.lm.stage import evaluate
from firth.results import save, save_items


def body(args) -> None:
    cfg, _ = load_sections("lm", stage_cli.params_path(args), schema=Lm)
    use_threads(cfg.common.threads)
    ev = load_section("evaluate_lm", stage_cli.params_path(args), schema=EvaluateLm)
    result, detail, items = evaluate(
        cfg,
        ev,
        args.run,
        model=args.model,
        test=args.test,
        valid=args.valid,
        flags=args.flags,
    )
    rep = args.reports
    save(rep / "eval.json", result)
    save(rep / "eval_detail.json", detail)
    save_items(rep / "items.json.gz", items)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="a name under lm.runs in params.yaml")
    stage_cli.path(p, "model", "the trained run's folder")
    stage_cli.path(p, "test", "the test text")
    stage_cli.path(p, "valid", "the validation text")
    stage_cli.path(p, "flags", "the text audit's flags.tsv")
    stage_cli.path(p, "reports", "the folder of eval.json, its detail and items")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
