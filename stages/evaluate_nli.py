"""DVC stage evaluate-nli@<data>-<model>: test accuracy of every seed of a run
(data/nli/<data>-<model>/seed-<seed>/), with per-label precision / recall / F1, the
confusion matrix, the seed spread, the majority-class baseline (the most frequent
training label), the accuracy on the contamination audit's clean and dirty test
examples (audit-nli@<data>), and a few misclassified test examples ->
reports/nli/<data>-<model>/eval.json."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_sections
from firth.nli.config import EvaluateNli
from firth.nli.stage import evaluate, setup
from firth.results import save, save_items


def body(args) -> None:
    run = setup(stage_cli.params_path(args), args.data, args.model)
    use_threads(run.cfg.threads)
    ev, _ = load_sections("evaluate_nli", run.params, schema=EvaluateNli)
    result, items = evaluate(
        run, ev, source=args.source, models_dir=args.models, flags=args.flags
    )
    save(args.reports / "eval.json", result)
    save_items(args.reports / "items.json.gz", items)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("data", help="a name in nli.data (a source under sources.nli)")
    p.add_argument("model", help="a model in nli.models: pair | hypothesis")
    stage_cli.path(p, "source", "the fetched NLI source's folder (examples.jsonl)")
    stage_cli.path(p, "models", "the run's folder of seed-<seed> models")
    stage_cli.path(p, "flags", "the NLI audit's flags.tsv")
    stage_cli.path(p, "reports", "the folder of eval.json and items")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
