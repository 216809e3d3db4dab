"""DVC stage evaluate-embeddings@<method>: analogies (3CosAdd with and without
excluding the inputs, 3CosMul, the only-b baseline; by section, over the N most
frequent words where the vocabulary is larger, and over the whole vocabulary),
word-similarity Spearman with pair coverage on the test half of each set (the dev
half, which chose SGNS's and PPMI-SVD's settings, is reported apart), and nearest
neighbours of probe words (of unseen words too, for the subword model) ->
reports/embeddings/<method>/.

Every seed of ``embeddings.seeds.<method>`` is scored (data/embeddings/<method>/
seed-<seed>/). eval.json (firth.embeddings.results.EmbeddingEval) holds every
seed's scores under ``runs`` and their spread (mean, sample sd, n) under
``summary``; eval_detail.json and analogy_sections.csv describe the first seed;
items.json.gz keeps every seed's cosine per similarity pair and answer per covered
analogy question: what the report's verdicts resample."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_section, load_sections
from firth.embeddings.config import Embeddings, EvaluateEmbeddings
from firth.embeddings.methods import METHODS
from firth.embeddings.stage import SECTION_COLUMNS, evaluate_method
from firth.io import write_rows
from firth.results import save, save_items


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg, _ = load_sections("evaluate_embeddings", path, schema=EvaluateEmbeddings)
    seeds = load_section("embeddings", path, schema=Embeddings).seeds[args.method]
    result, detail, sections, items = evaluate_method(
        args.vectors, args.eval, args.method, seeds, cfg
    )
    rep = args.reports
    save(rep / "eval.json", result)
    save(rep / "eval_detail.json", detail)
    save_items(rep / "items.json.gz", items)
    write_rows(rep / "analogy_sections.csv", SECTION_COLUMNS, sections)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("method", choices=METHODS)
    stage_cli.path(p, "vectors", "the method's folder of seed-<seed> vectors")
    stage_cli.path(p, "eval", "the analogy and similarity sets")
    stage_cli.path(p, "reports", "the folder of eval.json, its detail and items")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
