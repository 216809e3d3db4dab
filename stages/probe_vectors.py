"""DVC stage probe-vectors@<method>: what one method's word vectors encode about
part of speech: linear and MLP probes on every seed's vectors, each on the task
(the WSJ sample's POS tags) and on its control task (a random tag per word type),
selectivity = task - control accuracy (Hewitt and Liang 2019; firth.probe) ->
reports/probe/<method>/eval.json and items.json.gz."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_section
from firth.embeddings.config import Embeddings
from firth.embeddings.methods import METHODS
from firth.probe.config import Probe
from firth.probe.stage import probe_vectors
from firth.results import save, save_items


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg = load_section("probe", path, schema=Probe)
    seeds = load_section("embeddings", path, schema=Embeddings).seeds[args.method]
    result, items = probe_vectors(args.vectors, args.method, seeds, args.pos, cfg)
    save(args.reports / "eval.json", result)
    save_items(args.reports / "items.json.gz", items)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("method", choices=METHODS)
    stage_cli.path(p, "vectors", "the method's folder of seed-<seed> vectors")
    stage_cli.path(p, "pos", "the POS-tagged data's folder (train/valid/test.conll)")
    stage_cli.path(p, "reports", "the folder of eval.json and items.json.gz")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
