"""DVC stage report: reports/index.md and reports/index.html from the committed
metrics and the sources' provenance (firth.report_page), and reports/scorecard.json:
every known finding and partial-input baseline tested on the committed per-item
statistics (firth.scorecard), by the ``verdicts`` rule."""

from __future__ import annotations

import yaml

from firth import render, stage_cli
from firth.config import load_section, load_sections
from firth.io import atomic_path, write_text
from firth.report_page import build, figure_name
from firth.results import save
from firth.scorecard import rule_of


def body(args) -> None:
    params_file = stage_cli.params_path(args)
    cfg, seed = load_sections("report", params_file)
    rule, margin = rule_of(load_section("verdicts", params_file))
    params = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    reports, figures = args.reports, {}
    sections, meta, card = build(
        reports, params, args.benchmarks, rule=rule, margin=margin
    )
    meta = {"code revision": meta.pop("code revision"), "seed": str(seed), **meta}
    for sec in sections:
        for i, (caption, png) in enumerate(sec.figures):
            figures[caption] = name = figure_name(sec.title, i)
            with atomic_path(reports / name) as tmp:
                tmp.write_bytes(png)
    page = render.report_markdown(cfg.title, meta, sections, figures)
    save(reports / "scorecard.json", card)
    write_text(reports / "index.md", page)
    html = render.report_html(cfg.title, meta, sections, figures)
    write_text(reports / "index.html", html)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    stage_cli.path(
        p,
        "reports",
        "the reports folder: every task's records in, index.md, index.html, "
        "figures/ and scorecard.json out",
    )
    stage_cli.path(p, "benchmarks", "the benchmark results the report cites")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
