"""The report's "Is attention an explanation?" section: each attention run's
outputs under the interventions of firth.nmt.faithfulness (the teacher-forced
change and the greedy scores, each BLEU difference tested by the paired
bootstrap over verses) and the correlation of attention with gradient x input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from firth.evidence import BLEU_METRIC, Evidence, NoEvidence, attention_sides  # noqa: E402
from firth.inference import compare  # noqa: E402
from firth.nmt.results import AttentionEval  # noqa: E402
from firth.report import Section, figure_png  # noqa: E402

INTRO = (
    "An attention map is often read as an explanation: the source words the model "
    "looked at. Jain and Wallace (2019) showed that other attention distributions "
    "often give the same outputs, so a map need not be faithful; Wiegreffe and "
    "Pinter (2019) answered that the test must hold everything else fixed and ask "
    "whether the model's outputs depend on the weights. Here every decoding step's "
    "attention over the source is replaced (a random permutation of itself, the "
    "uniform distribution, or itself without its most-attended token, "
    "renormalised), nothing else changes, and the outputs are compared with the "
    "model's own: under teacher forcing on the references, the share of target "
    "tokens whose most probable token changes and the mean total variation "
    "distance between the two output distributions (0 = identical, 1 = disjoint); "
    "and the greedy translations' BLEU and chrF. Apart from the interventions, "
    "Kendall's tau between each step's attention and the gradient x input "
    "importance of the source tokens says whether the two explanations agree. A "
    "pointer-generator copies by the edited distribution too; the transformer's "
    "edit is on every cross-attention head of every layer."
)


def attention_section(evals: dict[str, AttentionEval], ev: Evidence | None) -> Section:
    sec = Section("Is attention an explanation?", INTRO)
    rows = []
    for run, e in evals.items():
        taus = None
        if ev is not None and run in ev.attention_items:
            t = [x for x in ev.attention_items[run].tau if x is not None]
            taus = np.asarray(t) if t else None
        tau = "-" if e.mean_tau is None else f"{e.mean_tau:+.3f}"
        if taus is not None and len(taus) > 1:
            rng = np.random.default_rng(ev.rule.seed)
            boot = taus[rng.integers(len(taus), size=(ev.rule.resamples, len(taus)))]
            lo, hi = np.quantile(boot.mean(1), [0.025, 0.975])
            tau += f" [{lo:+.3f}, {hi:+.3f}], n={len(taus)}"
        rows.append(
            [
                run,
                "none (the model's own)",
                "-",
                "-",
                f"{e.original['bleu']:.2f}",
                "-",
                f"{e.original['chrf']:.2f}",
                tau,
            ]
        )
        for kind, r in e.interventions.items():
            diff = "-"
            if ev is not None:
                try:
                    a, b = attention_sides(ev, run, [run], kind, "bleu")
                    t = compare(b, a, BLEU_METRIC, ev.rule)
                    diff = t.interval(2)
                except NoEvidence:
                    pass
            rows.append(
                [
                    "",
                    kind,
                    f"{100 * r.changed_share:.1f}%",
                    f"{r.mean_tv:.3f}",
                    f"{r.bleu:.2f}",
                    diff,
                    f"{r.chrf:.2f}",
                    "",
                ]
            )
    n = next(iter(evals.values())).test_pairs if evals else 0
    sec.tables.append(
        (
            f"Outputs under each intervention on the {n:,} test verses (one seed per "
            "row; the BLEU change is the intervention minus the model's own, paired "
            "bootstrap over verses, 95% interval; Kendall's tau is the model's "
            "mean over its verses with a bootstrap interval)",
            (
                [
                    "run",
                    "attention replaced by",
                    "argmax changed",
                    "mean TV",
                    "greedy BLEU",
                    "BLEU change [95% CI]",
                    "greedy chrF",
                    "tau(attention, grad x input)",
                ],
                rows,
            ),
        )
    )
    if evals:
        sec.figures.append(
            (
                "Greedy BLEU of each attention run with its own attention and under "
                "each intervention",
                _bars(evals),
            )
        )
    return sec


def _bars(evals: dict[str, AttentionEval]) -> bytes:
    kinds = ["original", *next(iter(evals.values())).interventions]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    width = 0.8 / len(kinds)
    x = np.arange(len(evals))
    for i, kind in enumerate(kinds):
        vals = [
            e.original["bleu"] if kind == "original" else e.interventions[kind].bleu
            for e in evals.values()
        ]
        ax.bar(x + i * width, vals, width, label=kind)
    ax.set_xticks(x + width * (len(kinds) - 1) / 2, list(evals), fontsize=8)
    ax.set_ylabel("greedy test BLEU")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return figure_png(fig)


def heatmap_note(e: AttentionEval | None) -> str:
    """The run's faithfulness numbers for its heatmap's caption ('' if none)."""
    if e is None or "permute" not in e.interventions:
        return ""
    p = e.interventions["permute"]
    tau = (
        ""
        if e.mean_tau is None
        else f"; Kendall tau with gradient x input {e.mean_tau:+.2f}"
    )
    return (
        f" Faithfulness (evaluate-attention): permuting this run's attention changes "
        f"{100 * p.changed_share:.1f}% of its teacher-forced next tokens and its "
        f"greedy BLEU from {e.original['bleu']:.1f} to {p.bleu:.1f}{tau}."
    )
