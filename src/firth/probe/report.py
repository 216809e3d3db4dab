"""The report's "Probes" section: POS accuracy, control accuracy and selectivity
of every probed representation by layer (trained and untrained LMs, word
vectors), their seed means, and selectivity by layer drawn."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean, stdev

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from firth.probe.results import ProbeEval  # noqa: E402
from firth.report import Section, figure_png  # noqa: E402

INTRO = (
    "What do the representations encode? A probe is a small classifier trained to "
    "read a property, here each word's part of speech in the WSJ sample, from "
    "frozen representations: every layer of the trained LMs, of the same networks "
    "untrained (random weights: the baseline a probing claim needs), and the word "
    "vectors. A probe can also learn the task itself: Hewitt and Liang (2019) give "
    "each word type a random but fixed tag (the control task) and report "
    "selectivity, task accuracy minus control accuracy. A rich probe (the MLP) "
    "memorises more, so it scores higher on both and is less selective. The LMs "
    "read each sentence lowercased, with words outside their vocabulary as <unk> "
    "(punctuation among them: the LM text has none), as they would at test time; "
    "coverage is the share of test tokens a representation knows. Valid accuracy "
    "picks each probe's training step; the table's accuracies are on the test "
    "tokens, seed means (the representation's seeds and the probe's)."
)


def _agg(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{fmean(values):.1f} ± {stdev(values):.1f}"


def probe_section(evals: dict[str, ProbeEval]) -> Section:
    sec = Section("Probes", INTRO)
    rows = []
    for name, e in evals.items():
        groups: dict[tuple, list] = defaultdict(list)
        for r in e.rows:
            groups[(r.model, r.layer, r.probe)].append(r)
        for (model, layer, probe), rs in sorted(groups.items()):
            rows.append(
                [
                    name,
                    f"{e.family} {model}" if e.kind == "lm" else e.family,
                    str(layer) if e.kind == "lm" else "-",
                    probe,
                    _agg([r.task_accuracy for r in rs]),
                    _agg([r.control_accuracy for r in rs]),
                    _agg([r.selectivity for r in rs]),
                    str(len(rs)),
                    f"{100 * e.coverage:.1f}%",
                ]
            )
    n = next(iter(evals.values())) if evals else None
    sec.tables.append(
        (
            "POS probes by representation and layer (layer 0: the input embedding; "
            f"{n.test_tokens if n else 0:,} test tokens, {n.tags if n else 0} tags; "
            "accuracies in %, selectivity in points; mean ± sd over the runs "
            "counted in 'n')",
            (
                [
                    "representation",
                    "model",
                    "layer",
                    "probe",
                    "POS accuracy",
                    "control accuracy",
                    "selectivity",
                    "n",
                    "coverage",
                ],
                rows,
            ),
        )
    )
    lms = {k: e for k, e in evals.items() if e.kind == "lm"}
    if lms:
        sec.figures.append(
            (
                "Selectivity by layer of the probed LMs, trained (solid) and "
                "untrained (dashed), linear and MLP probes (seed means)",
                _by_layer(lms),
            )
        )
    return sec


def _by_layer(evals: dict[str, ProbeEval]) -> bytes:
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    families: dict[str, list[ProbeEval]] = defaultdict(list)
    for e in evals.values():
        families[e.family].append(e)
    for i, (family, es) in enumerate(sorted(families.items())):
        for probe, marker in (("linear", "o"), ("mlp", "s")):
            for model, style in (("trained", "-"), ("untrained", "--")):
                by_layer: dict[int, list[float]] = defaultdict(list)
                for e in es:
                    for r in e.rows:
                        if r.model == model and r.probe == probe:
                            by_layer[r.layer].append(r.selectivity)
                if not by_layer:
                    continue
                xs = sorted(by_layer)
                ax.plot(
                    xs,
                    [fmean(by_layer[x]) for x in xs],
                    style,
                    marker=marker,
                    color=f"C{i}",
                    label=f"{family} {model}, {probe}",
                )
    ax.set_xlabel("layer (0 = embedding)")
    ax.set_ylabel("selectivity (points)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return figure_png(fig)
