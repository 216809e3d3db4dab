"""DVC stage probe-lm@<run>: what one trained word-level language model of
``lm.runs`` encodes about part of speech, and what the same architecture encodes
untrained (random initialisation from the run's seed): linear and MLP probes on
every layer, each on the task (the WSJ sample's POS tags) and on its control task
(a random tag per word type), selectivity = task - control accuracy (Hewitt and
Liang 2019; firth.probe) -> reports/probe/<run>/eval.json and items.json.gz (each
test token's answers: what the scorecard's probing findings resample)."""

from __future__ import annotations

from firth import stage_cli
from firth.accel import use_threads
from firth.config import load_section, load_sections
from firth.lm.config import Lm
from firth.probe.config import Probe
from firth.probe.stage import probe_lm
from firth.results import save, save_items


def body(args) -> None:
    lm, _ = load_sections("lm", stage_cli.params_path(args), schema=Lm)
    use_threads(lm.common.threads)
    cfg = load_section("probe", stage_cli.params_path(args), schema=Probe)
    result, items = probe_lm(args.model, lm, args.run, args.pos, cfg)
    save(args.reports / "eval.json", result)
    save_items(args.reports / "items.json.gz", items)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("run", help="a word-level recurrent or transformer run of lm.runs")
    stage_cli.path(p, "model", "the trained run's folder (train-lm's out)")
    stage_cli.path(p, "pos", "the POS-tagged data's folder (train/valid/test.conll)")
    stage_cli.path(p, "reports", "the folder of eval.json and items.json.gz")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
