"""DVC stage evaluate-bias@<method>: bias in one method's word vectors and what
hard debiasing does to it (firth.bias) -> reports/bias/<method>/.

For every seed of ``embeddings.seeds.<method>`` (data/embeddings/<method>/
seed-<seed>/vectors.txt): the WEATs of Caliskan et al. (2017) whose word sets the
vocabulary covers (effect size d and permutation p-value; the coverage of each
set and the missing words), the gender direction from Bolukbasi et al.'s
definitional pairs, their hard debiasing (neutralise and equalise), the WEATs on
the debiased vectors, and Gonen and Goldberg's (2019) recoverability checks:
k-means and an RBF SVM recovering the original bias label of the most biased words
from the debiased vectors. eval.json holds every seed's numbers and their spread;
weat.csv the effect sizes before and after (the report's figure); items.json.gz
each gender-test word's association and each recovered word's 0/1 answers: what
the scorecard's bias finding resamples."""

from __future__ import annotations

from firth import stage_cli
from firth.bias.config import EvaluateBias
from firth.bias.evaluate import WEAT_COLUMNS, evaluate_method
from firth.config import load_section
from firth.embeddings.config import Embeddings
from firth.embeddings.methods import METHODS
from firth.io import write_rows
from firth.results import save, save_items


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg = load_section("evaluate_bias", path, schema=EvaluateBias)
    seeds = load_section("embeddings", path, schema=Embeddings).seeds[args.method]
    result, items, rows = evaluate_method(args.vectors, args.method, seeds, cfg)
    rep = args.reports
    save(rep / "eval.json", result)
    save_items(rep / "items.json.gz", items)
    write_rows(rep / "weat.csv", WEAT_COLUMNS, rows)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("method", choices=METHODS)
    stage_cli.path(p, "vectors", "the method's folder of seed-<seed> vectors")
    stage_cli.path(p, "reports", "the folder of eval.json, weat.csv and items")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
