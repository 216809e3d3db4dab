"""The translation section of the report: test scores of every run beside the
copy-source baseline, scores by source length, copying and repetition, attention
maps, training curves, best and worst verses, and the benchmark."""

from __future__ import annotations

import matplotlib.pyplot as plt

from firth.audit.report import audit_sentence, contamination_table
from firth.evidence import (
    BLEU_METRIC,
    Evidence,
    NoEvidence,
    label,
    nmt_sides,
    nmt_systems,
)
from firth.formatting import num
from firth.inference import compare
from firth.nmt.faithfulness_report import heatmap_note
from firth.nmt.results import Bucket, Heatmap, NmtDetail, NmtEval, NmtTrain
from firth.report import Section, figure_png

NAMES = {
    "none": "no attention (bottleneck)",
    "context": "GRU with context (Cho)",
    "bahdanau": "Bahdanau (additive)",
    "luong-general": "Luong (general)",
    "luong-dot": "Luong (dot)",
    "transformer": "transformer",
    "target-lm": "target-side LM (no source)",
    "copy-source": "copy-source baseline",
}
ORDER = list(NAMES)
ATTENTION = ("bahdanau", "luong-general", "luong-dot", "transformer")
COPY = "copy-source"


def describe(e: NmtEval) -> str:
    """The model's name with its copying switches (pointer, coverage)."""
    name = NAMES.get(e.model, e.model)
    extra = ["pointer"] if e.pointer else []
    if e.coverage:
        extra.append("coverage")
    if e.coverage_loss:
        extra.append(f"coverage loss {e.coverage_loss:g}")
    return " + ".join([name, *extra])


def _order(evals: dict[str, NmtEval]) -> list[str]:
    return sorted(evals, key=lambda r: (ORDER.index(evals[r].model), r))


def nmt_section(
    train: dict[str, NmtTrain],
    evals: dict[str, NmtEval],
    details: dict[str, NmtDetail],
    curves: dict[str, list[dict]],
    bench: dict | None,
    audit: dict | None = None,
    ev: Evidence | None = None,
) -> Section:
    """``ev``: the per-verse evidence the comparisons are tested on (without it,
    they are not made)."""
    runs = _order(evals)
    n = next(iter(evals.values())).test_pairs
    sig = next((d.signatures for d in details.values() if d.signatures), {})
    sec = Section(
        "Translation",
        f"Every run translates the same {n:,} test verses "
        "(data/subsampled/parallel/test.tsv); scores are sacreBLEU corpus BLEU, chrF "
        "and chrF++ against the one reference, with the signatures "
        + "; ".join(f"{k}: `{v}`" for k, v in sig.items())
        + ". Beam search uses the width, length normalisation and penalty of "
        "evaluate_nmt; models keep the weights with the best validation loss. One "
        "learning rate, schedule and batch size (nmt.common) serve every model: "
        "they are not tuned per model (params.yaml says what the shared rate was "
        "chosen on). The copy-source baseline outputs the source verse unchanged; "
        "the target-side language model never sees the source.",
    )
    sec.tables.append(scores_table(runs, evals, train))
    sec.intro += (
        " Every model is tested against copy-source and the target-side LM in the "
        "Partial-input baselines section, and the Scorecard tests attention against "
        "the bottleneck and the pointer-generator against copying (seed means, "
        "paired bootstrap over the test verses). Tables list every run; a single "
        "run shown (attention maps, best and worst verses) is the first seed, "
        "never one chosen by its score."
    )
    sec.tables.append(_copy_table(runs, evals))
    if verdict := _copy_verdict(runs, evals, train, curves):
        sec.intro += "\n\n" + verdict
    buckets = {r: details[r].buckets.get("greedy") for r in runs if r in details}
    if buckets := {r: b for r, b in buckets.items() if b}:
        sec.figures.append(bucket_figure(buckets))
        if note := _long_verses(evals, ev):
            sec.intro += "\n\n" + note
    for r in runs:
        note = heatmap_note(ev.attention.get(r)) if ev is not None else ""
        for h in details[r].heatmaps if r in details else []:
            sec.figures.append(heatmap_figure(r, h, note))
    if curves:
        sec.figures.append(curves_figure(curves, train))
    if table := examples_table(runs, evals, details, train):
        sec.tables.append(table)
    rows = [
        (r, {k: c.model_dump() for k, c in evals[r].contamination["beam"].items()})
        for r in runs
        if "beam" in evals[r].contamination
    ]
    if audit and rows:
        sec.intro += "\n\n" + audit_sentence(audit, "test verses")
        sec.tables.append(
            contamination_table(
                rows,
                ["bleu", "chrf"],
                "Beam scores on all / dirty / clean test verses (GPT-3 format; "
                "clean vs all = (clean - all) / all)",
            )
        )
    if bench:
        sec.tables.append(bench_table(bench))
    return sec


SCORE_COLUMNS = [
    "run",
    "model",
    "parameters",
    "epochs",
    "train minutes",
    "train target tokens/s",
    "test ppl",
    "greedy",
    "beam",
    "repeated 3-grams (beam)",
]


def scores_table(runs, evals: dict[str, NmtEval], train: dict[str, NmtTrain]):
    """Test scores of every run (BLEU / chrF / chrF++) with its training cost."""
    rows = []
    for r in runs:
        e, t = evals[r], train.get(r)
        g, b = e.greedy, e.beam
        rows.append(
            [
                r,
                describe(e),
                f"{t.parameters:,}" if t else "-",
                num(t.epochs_run, 2) if t else "-",
                num(t.train_seconds / 60, 1) if t else "-",
                f"{t.train_target_tokens_per_second:,}" if t else "-",
                num(e.test_perplexity, 2),
                f"{g.bleu:.2f} / {g.chrf:.2f} / {g.chrf_pp:.2f}",
                f"{b.bleu:.2f} / {b.chrf:.2f} / {b.chrf_pp:.2f}",
                f"{100 * b.repeated_trigrams:.2f}%",
            ]
        )
    return "Test scores (BLEU / chrF / chrF++)", (SCORE_COLUMNS, rows)


def bucket_figure(buckets: dict[str, list[Bucket]]) -> tuple[str, bytes]:
    """Greedy BLEU and chrF by source-length bucket, one line per run."""
    first = next(iter(buckets.values()))
    labels = [row.bucket for row in first]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0))
    for ax, metric in zip(axes, ("bleu", "chrf"), strict=True):
        for r, rows in buckets.items():
            ax.plot(
                range(len(labels)),
                [getattr(row, metric) for row in rows],
                marker="o",
                linestyle="--" if r == COPY else "-",
                label=r,
            )
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlabel("source length (words)")
        ax.set_ylabel(metric.upper() if metric == "bleu" else "chrF")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    counts = ", ".join(f"{row.bucket}: {row.n}" for row in first)
    return (
        "Greedy BLEU and chrF by source length in words (verses per "
        f"bucket: {counts}).",
        figure_png(fig),
    )


def heatmap_figure(run: str, h: Heatmap, note: str = "") -> tuple[str, bytes]:
    """One verse's attention weights (rows output subwords, columns source)."""
    fig, ax = plt.subplots(
        figsize=(
            min(12, 2 + 0.22 * len(h.source)),
            min(12, 1.5 + 0.22 * len(h.output)),
        )
    )
    ax.imshow(h.weights, cmap="gray_r", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(h.source)), h.source, rotation=90, fontsize=6)
    ax.set_yticks(range(len(h.output)), h.output, fontsize=6)
    return (
        f"Attention of {run} on test verse {h.id} (greedy output; rows "
        "are output subwords, columns source subwords)." + note,
        figure_png(fig),
    )


def curves_figure(curves, train: dict[str, NmtTrain]) -> tuple[str, bytes]:
    """Greedy valid BLEU against training minutes, with the copy-source line."""
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for r, rows in curves.items():
        pts = [
            (float(p["train_seconds"]) / 60, float(p["valid_bleu"]))
            for p in rows
            if p.get("valid_bleu") not in (None, "")
        ]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker=".", label=r)
    copy = [t.valid_bleu_copy_source for t in train.values()]
    copy = [c for c in copy if c is not None]
    if copy:
        ax.axhline(copy[0], color="black", linestyle="--", label="copy-source")
    ax.set_xlabel("training minutes")
    ax.set_ylabel("greedy BLEU on the valid subset")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return (
        "Greedy BLEU on a fixed subset of valid verses "
        "(nmt.common.valid_bleu_sentences) against training minutes "
        "(validation time excluded); the dashed line is the copy-source "
        "baseline on the same verses.",
        figure_png(fig),
    )


def examples_table(
    runs,
    evals: dict[str, NmtEval],
    details: dict[str, NmtDetail],
    train: dict[str, NmtTrain] | None = None,
):
    """The best and worst greedy test verses (sentence chrF) of the run with the
    lowest validation loss (chosen on validation, never on a test score)."""
    trained = [r for r in runs if r != COPY and r in (train or {})]
    if not trained:
        return None
    best = min(trained, key=lambda r: (train[r].best_valid_loss, r))
    ex = details[best].examples.get("greedy") if best in details else None
    if not ex:
        return None
    rows = [
        [which, e.id, f"{e.chrf:.1f}", e.source, e.output, e.reference]
        for which, examples in (("best", ex.best), ("worst", ex.worst))
        for e in examples
    ]
    return (
        f"Best and worst test verses of {best}, the run with the lowest validation "
        "loss (greedy, sentence chrF)",
        (["", "verse", "chrF", "source", "output", "reference"], rows),
    )


def _copy_table(runs, evals):
    """Copying and repetition of the beam outputs beside the references."""
    rows = []
    for r in runs:
        e = evals[r]
        ptr = e.beam_pointer
        rows.append(
            [
                r,
                _pct(e.beam.source_word_share),
                num(ptr.mean_p_gen, 3) if ptr else "-",
                _pct(ptr.copied_token_share) if ptr else "-",
                _pct(e.beam.repeated_trigrams),
            ]
        )
    e = evals[runs[0]]
    rows.append(
        [
            "reference",
            _pct(e.reference_source_word_share),
            "-",
            "-",
            _pct(e.reference_repeated_trigrams),
        ]
    )
    return (
        "Copying and repetition (beam outputs): output words found in their source; "
        "for pointer-generators the mean switch p_gen over output tokens and the "
        "share of output tokens whose probability came mostly from copying; "
        "repeated word 3-grams within an output",
        (
            [
                "run",
                "words from the source",
                "mean p_gen",
                "copied tokens",
                "repeated 3-grams",
            ],
            rows,
        ),
    )


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _points(curve: list[dict]) -> list[tuple[float, float]]:
    return [
        (float(p["train_seconds"]) / 60, float(p["valid_bleu"]))
        for p in curve
        if p.get("valid_bleu") not in (None, "")
    ]


def _at_minutes(curve: list[dict], minutes: float) -> float | None:
    """Valid BLEU of ``curve`` at ``minutes``, linear between its validations;
    None outside the minutes it covers."""
    pts = _points(curve)
    for (m0, b0), (m1, b1) in zip(pts, pts[1:], strict=False):
        if m0 <= minutes <= m1:
            return b0 + (b1 - b0) * (minutes - m0) / (m1 - m0) if m1 > m0 else b1
    return pts[0][1] if pts and pts[0][0] == minutes else None


def _copy_verdict(runs, evals, train, curves) -> str:
    """Pointer-generators against copying, against plain attention at equal
    training time, and coverage against none on repetition."""
    lines = []
    plain = [r for r in runs if evals[r].model == "bahdanau" and not evals[r].pointer]
    for r in runs:
        e = evals[r]
        if not e.pointer:
            continue
        for p in plain:
            if r not in curves or p not in curves or r not in train:
                continue
            pairs = [(m, a, _at_minutes(curves[p], m)) for m, a in _points(curves[r])]
            pairs = [x for x in pairs if x[1] is not None and x[2] is not None]
            if pairs:
                ahead = sum(a > c for _, a, c in pairs)
                m, a, c = pairs[-1]
                lines.append(
                    f"at equal training minutes {r} leads {p} at {ahead} of "
                    f"{len(pairs)} of its validations ({p}'s curve interpolated; "
                    f"valid BLEU {a:.2f} against {c:.2f} at {m:.1f} minutes)"
                )
    cov = [r for r in runs if evals[r].uses_coverage]
    for r in cov:
        twin = [
            q
            for q in runs
            if evals[q].model == evals[r].model
            and evals[q].pointer == evals[r].pointer
            and not evals[q].uses_coverage
        ]
        for q in twin:
            a = evals[r].beam.repeated_trigrams
            c = evals[q].beam.repeated_trigrams
            lines.append(
                f"repeated 3-grams with coverage ({r}) {100 * a:.2f}% against "
                f"{100 * c:.2f}% without ({q})"
            )
    if not lines:
        return ""
    return (
        "Copying, described (validation curves and output statistics, not tests): "
        + "; ".join(lines)
        + "."
    )


def _long_verses(evals: dict[str, NmtEval], ev: Evidence | None) -> str:
    """Each attention system against the bottleneck on the test verses of more
    than 30 source words (where Bahdanau et al. 2015 saw the fixed vector fail),
    beam BLEU, tested."""
    if ev is None or not ev.nmt_items:
        return ""
    groups = nmt_systems(evals)
    none = next((n for n, r in groups.items() if evals[r[0]].model == "none"), None)
    if none is None:
        return ""
    lines = []
    for name, runs in sorted(groups.items()):
        e = evals[runs[0]]
        if e.model not in ATTENTION or e.pointer:
            continue
        try:
            a, b = nmt_sides(ev, runs, groups[none], "bleu", (name, none))
        except NoEvidence:
            continue
        words = ev.nmt_items[runs[0]].src_words
        long = [i for i, w in enumerate(words) if w > 30]
        if not long:
            return ""
        t = compare(a.subset(long), b.subset(long), BLEU_METRIC, ev.rule)
        lines.append(f"{label(name, a)} against {label(none, b)}: {t.sentence()}")
    if not lines:
        return ""
    return (
        "Beam BLEU on the test verses of more than 30 source words: "
        + "; ".join(lines)
        + "."
    )


def bench_table(bench: dict):
    rows = [
        [
            r.get("run", r["model"]),
            f"{r['train_target_tokens_per_second']:,.0f}",
            f"{r['beam_batched_sentences_per_second']:.1f}",
            f"{r['beam_single_sentences_per_second']:.1f}",
            f"{r['beam_speedup']:.1f}x",
            f"{r['step_row_cost_ratio']:.1f}x" if "step_row_cost_ratio" in r else "-",
            f"{r['greedy_batched_sentences_per_second']:.1f}",
            f"{r['peak_rss_mb']:,.0f}",
        ]
        for r in bench["models"]
    ]
    return (
        f"Benchmark (`python benchmarks/nmt.py`, {bench['device']}, "
        f"{bench['threads']} threads, beam {bench['beam']})",
        (
            [
                "run",
                "train target tokens/s",
                "beam sent/s (batched)",
                "beam sent/s (one at a time)",
                "speed-up",
                "step cost per row, 1 sentence / full batch",
                "greedy sent/s (batched)",
                "peak RSS MB",
            ],
            rows,
        ),
    )
