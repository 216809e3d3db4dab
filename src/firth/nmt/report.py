"""The translation section of the report: test scores of every run beside the
copy-source baseline, scores by source length, attention maps, training curves,
best and worst verses, and the benchmark."""

from __future__ import annotations

import matplotlib.pyplot as plt

from firth.report import Section, _num, _png

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


def _order(evals: dict[str, dict]) -> list[str]:
    return sorted(
        evals,
        key=lambda r: (ORDER.index(evals[r]["model"]), r),
    )


def nmt_section(
    train: dict[str, dict],
    evals: dict[str, dict],
    details: dict[str, dict],
    curves: dict[str, list[dict]],
    bench: dict | None,
) -> Section:
    runs = _order(evals)
    n = next(iter(evals.values()))["test_pairs"]
    sig = next(iter(details.values())).get("signatures", {})
    sec = Section(
        "Translation",
        f"Every run translates the same {n:,} test verses "
        "(data/subsampled/parallel/test.tsv); scores are sacreBLEU corpus BLEU, chrF "
        "and chrF++ against the one reference, with the signatures "
        + "; ".join(f"{k}: `{v}`" for k, v in sig.items())
        + ". Beam search uses the width, length normalisation and penalty of "
        "evaluate_nmt; models keep the weights with the best validation loss. The "
        "copy-source baseline outputs the source verse unchanged; the target-side "
        "language model never sees the source.",
    )
    rows = []
    for r in runs:
        e, t = evals[r], train.get(r, {})
        g, b = e["greedy"], e.get("beam", e["greedy"])
        rows.append(
            [
                r,
                NAMES.get(e["model"], e["model"]),
                f"{t['parameters']:,}" if "parameters" in t else "-",
                _num(t.get("epochs_run"), 2),
                _num(t["train_seconds"] / 60, 1) if "train_seconds" in t else "-",
                f"{t['train_target_tokens_per_second']:,}"
                if "train_target_tokens_per_second" in t
                else "-",
                _num(e.get("test_perplexity"), 2),
                f"{g['bleu']:.2f} / {g['chrf']:.2f} / {g['chrf++']:.2f}",
                f"{b['bleu']:.2f} / {b['chrf']:.2f} / {b['chrf++']:.2f}",
                f"{100 * b['repeated_trigrams']:.2f}%",
            ]
        )
    sec.tables.append(
        (
            "Test scores (BLEU / chrF / chrF++)",
            (
                [
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
                ],
                rows,
            ),
        )
    )
    if COPY in evals:
        copy = evals[COPY]["greedy"]
        att = [r for r in runs if evals[r]["model"] in ATTENTION]
        if att:
            best = max(
                att, key=lambda r: evals[r].get("beam", evals[r]["greedy"])["bleu"]
            )
            s = evals[best].get("beam", evals[best]["greedy"])
            beats = s["bleu"] > copy["bleu"] and s["chrf"] > copy["chrf"]
            sec.intro += (
                f"\n\nThe best attention model, {best}, scores BLEU {s['bleu']:.2f} "
                f"and chrF {s['chrf']:.2f} with beam search against the copy-source "
                f"baseline's {copy['bleu']:.2f} and {copy['chrf']:.2f}: it "
                + ("beats copying in both." if beats else "does NOT beat copying.")
            )
    buckets = {r: details[r]["buckets"].get("greedy") for r in runs if r in details}
    buckets = {r: b for r, b in buckets.items() if b}
    if buckets:
        labels = [row["bucket"] for row in next(iter(buckets.values()))]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.0))
        for ax, metric in zip(axes, ("bleu", "chrf"), strict=True):
            for r, rows_ in buckets.items():
                ax.plot(
                    range(len(labels)),
                    [row[metric] for row in rows_],
                    marker="o",
                    linestyle="--" if r == COPY else "-",
                    label=r,
                )
            ax.set_xticks(range(len(labels)), labels)
            ax.set_xlabel("source length (words)")
            ax.set_ylabel(metric.upper() if metric == "bleu" else "chrF")
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=7)
        counts = ", ".join(
            f"{row['bucket']}: {row['n']}" for row in next(iter(buckets.values()))
        )
        sec.figures.append(
            (
                "Greedy BLEU and chrF by source length in words (verses per "
                f"bucket: {counts}).",
                _png(fig),
            )
        )
        note = _bucket_verdict(runs, evals, buckets)
        if note:
            sec.intro += "\n\n" + note
    for r in runs:
        for h in details.get(r, {}).get("heatmaps", []):
            fig, ax = plt.subplots(
                figsize=(
                    min(12, 2 + 0.22 * len(h["source"])),
                    min(12, 1.5 + 0.22 * len(h["output"])),
                )
            )
            ax.imshow(h["weights"], cmap="gray_r", vmin=0, vmax=1, aspect="auto")
            ax.set_xticks(range(len(h["source"])), h["source"], rotation=90, fontsize=6)
            ax.set_yticks(range(len(h["output"])), h["output"], fontsize=6)
            sec.figures.append(
                (
                    f"Attention of {r} on test verse {h['id']} (greedy output; rows "
                    "are output subwords, columns source subwords).",
                    _png(fig),
                )
            )
    if curves:
        fig, ax = plt.subplots(figsize=(6.5, 4.0))
        for r, rows_ in curves.items():
            pts = [
                (float(p["train_minutes"]), float(p["valid_bleu"]))
                for p in rows_
                if p.get("valid_bleu") not in (None, "")
            ]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker=".", label=r)
        ax.set_xlabel("training minutes")
        ax.set_ylabel("greedy BLEU on the valid subset")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        sec.figures.append(
            (
                "Greedy BLEU on a fixed subset of valid verses "
                "(nmt.common.valid_bleu_sentences) against training minutes.",
                _png(fig),
            )
        )
    trained = [r for r in runs if r != COPY]
    if trained:
        best = max(trained, key=lambda r: evals[r]["greedy"]["bleu"])
        ex = details.get(best, {}).get("examples", {}).get("greedy")
        if ex:
            rows = [
                [
                    kind,
                    e["id"],
                    f"{e['chrf']:.1f}",
                    e["source"],
                    e["output"],
                    e["reference"],
                ]
                for kind in ("best", "worst")
                for e in ex[kind]
            ]
            sec.tables.append(
                (
                    f"Best and worst test verses of {best} (greedy, sentence chrF)",
                    (["", "verse", "chrF", "source", "output", "reference"], rows),
                )
            )
    if bench:
        sec.tables.append(bench_table(bench))
    return sec


def _bucket_verdict(runs, evals, buckets) -> str:
    none = [r for r in runs if evals[r]["model"] == "none" and r in buckets]
    att = [r for r in runs if evals[r]["model"] in ATTENTION[:3] and r in buckets]
    if not none or not att:
        return ""
    lines = []
    for a in att:
        worse = []
        for ra, rn in zip(buckets[a], buckets[none[0]], strict=True):
            lo = int(ra["bucket"].split("-")[0].rstrip("+"))
            if lo > 30 and ra["n"] and (ra["bleu"] or 0) <= (rn["bleu"] or 0):
                worse.append(ra["bucket"])
        lines.append(
            f"{a} beats the bottleneck ({none[0]}) in every bucket above 30 source "
            "words"
            if not worse
            else f"{a} does NOT beat the bottleneck in bucket(s) {', '.join(worse)}"
        )
    return "Greedy BLEU by length: " + "; ".join(lines) + "."


def bench_table(bench: dict):
    rows = [
        [
            r["model"],
            f"{r['train_target_tokens_per_second']:,.0f}",
            f"{r['beam_batched_sentences_per_second']:.1f}",
            f"{r['beam_single_sentences_per_second']:.1f}",
            f"{r['beam_speedup']:.1f}x",
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
                "model",
                "train target tokens/s",
                "beam sent/s (batched)",
                "beam sent/s (one at a time)",
                "speed-up",
                "greedy sent/s (batched)",
                "peak RSS MB",
            ],
            rows,
        ),
    )
