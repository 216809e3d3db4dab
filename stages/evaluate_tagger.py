"""DVC stage evaluate-tagger@<data>-<head>: test-split scores of every model of a
tagger run (each seed of ``tagger.seeds``, random and pretrained word embeddings,
from data/taggers/<data>-<head>/seed-<seed>/), their seed spread, the
baselines (majority tag, word-only) on the same test split, the headline metric on
the contamination audit's clean and dirty test sentences (audit-tagged@<data>), and
a few test sentences with gold and predicted tags ->
reports/tagging/<data>-<head>/eval.json.

NER: seqeval entity F1 (micro and per type), token accuracy, and the share of
predicted sentences that break BIO; a free CRF (head ``crf``) is scored twice, as
it decodes and under the BIO constraints (a constraint, reported apart). POS: token
accuracy, and accuracy on tokens whose form never occurs in training.
reports/tagging/<data>-<head>/items.json.gz keeps each test sentence's statistics
(tokens right, entities predicted and matched, BIO breaks) per model and baseline:
what the report's verdicts resample."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_sections
from firth.results import save, save_items
from firth.tagging.config import EvaluateTagger
from firth.tagging.stage import TestSplit, evaluate, setup


def body(args) -> None:
    run = setup(stage_cli.params_path(args), args.data, args.head)
    use_threads(run.common.threads)
    ev, _ = load_sections("evaluate_tagger", run.params, schema=EvaluateTagger)
    test = TestSplit(args.train, args.test, args.flags)
    result, items = evaluate(run, ev, test, args.models)
    save(args.reports / "eval.json", result)
    save_items(args.reports / "items.json.gz", items)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("data", help="a name in tagger.data (a source under sources.tagged)")
    p.add_argument(
        "head", help="a head in tagger.heads: softmax | crf | crf-constrained"
    )
    stage_cli.path(p, "models", "the run's folder of seed-<seed> models")
    stage_cli.path(p, "train", "the training sentences (CoNLL; forms, scheme)")
    stage_cli.path(p, "test", "the test sentences (CoNLL)")
    stage_cli.path(p, "flags", "the tagged audit's flags.tsv")
    stage_cli.path(p, "reports", "the folder of eval.json and items")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
