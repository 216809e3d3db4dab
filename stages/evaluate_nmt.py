"""DVC stage evaluate-nmt@<run>: the test split translated by one trained model of
``nmt.runs``, greedily and with beam search -> reports/nmt/<run>/eval.json (BLEU,
chrF, chrF++ for both, test perplexity), reports/nmt/<run>/eval_detail.json
(sacreBLEU signatures, scores per source-length bucket, attention maps of the
``evaluate_nmt.heatmaps`` verses, best and worst verses) and the translations in
data/nmt-eval/<run>/test.tsv.

``copy-source`` (not a run name) scores the copy-source baseline the same way:
every output is its source.

Every score is also given on the clean and dirty test verses of the contamination
audit (data/audit/parallel/flags.tsv, stage audit-parallel): eval.json's
``contamination`` holds BLEU and chrF on all / dirty / clean verses.

reports/nmt/<run>/items.json.gz holds each test verse's sacreBLEU statistics of the
beam output and its dirty flag: what the report's verdicts resample."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_section, load_sections
from firth.io import write_folder, write_rows
from firth.nmt.config import EvaluateNmt, Nmt
from firth.nmt.stage import COPY, evaluate
from firth.results import save, save_items


def body(args) -> None:
    cfg, _ = load_sections("nmt", stage_cli.params_path(args), schema=Nmt)
    use_threads(cfg.common.threads)
    ev = load_section("evaluate_nmt", stage_cli.params_path(args), schema=EvaluateNmt)
    result, detail, items, columns = evaluate(
        cfg,
        ev,
        args.run,
        test_path=args.test,
        flags=args.flags,
        model=args.model,
        tokenizer=args.tokenizer,
    )
    rep = args.reports
    save(rep / "eval.json", result)
    save(rep / "eval_detail.json", detail)
    save_items(rep / "items.json.gz", items)
    rows = zip(*columns.values(), strict=True)
    write_folder(
        args.out,
        lambda folder: write_rows(
            folder / "test.tsv", list(columns), rows, delimiter="\t"
        ),
    )


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help=f"a name under nmt.runs in params.yaml, or {COPY}")
    stage_cli.path(
        p, "model", f"the trained run's folder (not for {COPY})", required=False
    )
    stage_cli.path(
        p, "tokenizer", f"the joint BPE's folder (not for {COPY})", required=False
    )
    stage_cli.path(p, "test", "the test pairs (TSV)")
    stage_cli.path(p, "flags", "the parallel audit's flags.tsv")
    stage_cli.path(p, "out", "the folder of the translations (test.tsv) to write")
    stage_cli.path(p, "reports", "the folder of eval.json, its detail and items")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
