"""The report's language-model section: every run on the test text (perplexity
per own token, bits per character), families with their seed spread and the
baselines, the LSTM's margin over Kneser-Ney, samples, the gradient-flow and
training-curve figures, the contamination split and the benchmark; read from the
typed result files (firth.lm.results)."""

from __future__ import annotations

import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from firth.audit.report import audit_sentence, contamination_table  # noqa: E402
from firth.cross_machine_report import NOTE as MACHINE_NOTE  # noqa: E402
from firth.evidence import BPC, Evidence, NoEvidence, lm_side  # noqa: E402
from firth.formatting import num  # noqa: E402
from firth.inference import compare  # noqa: E402
from firth.lm.results import (  # noqa: E402
    FlowPoint,
    LmDetail,
    LmEval,
    LmTrain,
    NeuralTrain,
)
from firth.report import Section, Table, figure_png  # noqa: E402

ORDER = ("kn", "ffnn", "elman", "lstm", "gru", "transformer")
NAMES = {
    "kn": "Kneser-Ney",
    "ffnn": "Bengio FFNN",
    "elman": "Elman RNN",
    "lstm": "LSTM",
    "gru": "GRU",
    "transformer": "Transformer",
}
INTRO = (
    "Every model is scored on the same test text (data/subsampled/text/test.txt, "
    "{characters:,} characters). Perplexity is per token of the model's own "
    "tokenization (one </s> per line included); bits per character is the total "
    "negative log-likelihood in bits over the characters (each line plus its line "
    "break), the number that compares word, BPE and n-gram models. Word-level "
    "models share one vocabulary (training words seen at least lm.common.min_count "
    "times, the rest <unk>), so their scores leave out the cost of spelling an "
    "<unk>: the OOV rate is beside them. Neural models keep the weights with the "
    "best validation loss. One learning rate, schedule and budget (lm.common) serve "
    "every neural family: they are not tuned per family (params.yaml says what the "
    "shared rate was chosen on), so a family's rank may reflect its fit to them."
)


def mean_sd(xs: list[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (0 for one value)."""
    return statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0


def by_family(evals: dict[str, LmEval]) -> dict[str, list[str]]:
    """family -> its runs, families in ORDER, runs by name."""
    runs = sorted(
        evals,
        key=lambda r: (
            ORDER.index(evals[r].family) if evals[r].family in ORDER else 99,
            r,
        ),
    )
    out: dict[str, list[str]] = {}
    for r in runs:
        out.setdefault(evals[r].family, []).append(r)
    return out


def lm_section(
    train: dict[str, LmTrain],
    evals: dict[str, LmEval],
    details: dict[str, LmDetail],
    curves: dict[str, list[dict]],
    bench: dict | None,
    audit: dict | None = None,
    ev: Evidence | None = None,
) -> Section:
    """``details``: each run's eval_detail.json (samples, gradient flow);
    ``curves``: each run's curve.csv rows; ``ev``: the per-line evidence the
    comparison with Kneser-Ney is tested on."""
    fam = by_family(evals)
    runs = [r for rs in fam.values() for r in rs]
    sec = Section(
        "Language models",
        INTRO.format(characters=evals[runs[0]].test.characters),
    )
    sec.tables.append(runs_table(runs, train, evals))
    sec.tables.append(families_table(fam, evals))
    if "lstm" in fam and "kn" in fam:
        sec.intro += "\n\n" + kn_margin(fam, train, evals, ev)
    flows = {r: details[r].gradient_flow for r in runs if r in details}
    flows = {r: points for r, points in flows.items() if points}
    if flows:
        sec.figures.append(gradient_flow_figure(flows, evals))
    if curves:
        sec.figures.append(
            ("Validation perplexity during training", curves_figure(curves))
        )
    firsts = [rs[0] for rs in fam.values()]
    samples = [
        [r, s.prompt, s.continuation.replace("\n", " ⏎ ")]
        for r in firsts
        if r in details
        for s in details[r].samples
    ]
    if samples:
        sec.tables.append(
            (
                "Sampled continuations of the first seed of each family "
                "(temperature from evaluate_lm; ⏎ is </s>)",
                (["run", "prompt", "continuation"], samples),
            )
        )
    dirty = [
        (r, {"perplexity": evals[r].test.contamination.model_dump()})
        for r in runs
        if evals[r].test.contamination
    ]
    if dirty:
        if audit:
            sec.intro += "\n\n" + audit_sentence(audit, "test lines")
        sec.tables.append(
            contamination_table(
                dirty,
                ["perplexity"],
                "Test perplexity on all / dirty / clean test lines (GPT-3 format; "
                "clean vs all = (clean - all) / all; lower is better)",
            )
        )
    if bench:
        sec.tables.append(benchmark_table(bench))
    return sec


def runs_table(
    runs: list[str], train: dict[str, LmTrain], evals: dict[str, LmEval]
) -> tuple[str, Table]:
    rows = []
    for r in runs:
        e, t = evals[r], train.get(r)
        neural = t if isinstance(t, NeuralTrain) else None
        rows.append(
            [
                r,
                NAMES.get(e.family, e.family),
                str(e.seed),
                e.unit,
                f"{e.vocab:,}",
                f"{neural.parameters:,}" if neural else "-",
                num(neural.epochs_run, 2) if neural else "-",
                f"{neural.train_tokens_per_second:,}" if neural else "-",
                f"{e.test.perplexity:.2f}",
                f"{e.test.bits_per_char:.4f}",
                f"{e.valid.perplexity:.2f}",
                f"{100 * e.test.oov_rate:.2f}%",
            ]
        )
    header = ["run", "model", "seed", "unit", "vocab", "parameters", "epochs"]
    header += ["train tokens/s", "test ppl", "test bits/char", "valid ppl", "test OOV"]
    return "Test scores per run", (header, rows)


def families_table(
    fam: dict[str, list[str]], evals: dict[str, LmEval]
) -> tuple[str, Table]:
    rows = []
    for f, rs in fam.items():
        ppl = mean_sd([evals[r].test.perplexity for r in rs])
        bpc = mean_sd([evals[r].test.bits_per_char for r in rs])
        rows.append(
            [
                NAMES.get(f, f),
                str(len(rs)),
                f"{ppl[0]:.2f} ± {ppl[1]:.2f}",
                f"{bpc[0]:.4f} ± {bpc[1]:.4f}",
            ]
        )
    runs = [r for rs in fam.values() for r in rs]
    for unit in sorted({evals[r].unit for r in runs}):
        e = next(evals[r] for r in runs if evals[r].unit == unit)
        for name, b in sorted(
            e.test.baselines.items(), key=lambda kv: kv[0] != "uniform"
        ):
            rows.append(
                [
                    f"{name} baseline ({unit}, V={e.vocab:,})",
                    "-",
                    f"{b.perplexity:.2f}",
                    f"{b.bits_per_char:.4f}",
                ]
            )
    return (
        "By model family (mean ± sample sd over seeds) and baselines. " + MACHINE_NOTE,
        (["model", "seeds", "test ppl", "test bits/char"], rows),
    )


def kn_margin(
    fam: dict[str, list[str]],
    train: dict[str, LmTrain],
    evals: dict[str, LmEval],
    ev: Evidence | None = None,
) -> str:
    """The LSTM against Kneser-Ney in bits per character: the test (paired over
    test lines, seeds resampled) where the evidence is given, and the per-seed
    margins."""
    kn = mean_sd([evals[r].test.bits_per_char for r in fam["kn"]])[0]
    margins = [kn - evals[r].test.bits_per_char for r in fam["lstm"]]
    order = next(
        (t.order for r in fam["kn"] if (t := train.get(r)) and t.family == "kn"), "?"
    )
    head = f"The LSTM against the Kneser-Ney {order}-gram in bits per character"
    per_seed = (
        "margin over KN per LSTM seed: "
        + ", ".join(f"{x:+.4f}" for x in margins)
        + f" bits/char (KN: {kn:.4f})"
    )
    if ev is None:
        return f"{head} (no per-line evidence, so no test): {per_seed}."
    try:
        a = lm_side(ev, "lstm", fam["lstm"])
        b = lm_side(ev, "kn", fam["kn"])
    except NoEvidence as exc:
        return f"{head} ({exc}, so no test): {per_seed}."
    t = compare(a, b, BPC, ev.rule)
    return f"{head}: {t.sentence(4)}; {per_seed}."


def gradient_flow_figure(
    flows: dict[str, list[FlowPoint]], evals: dict[str, LmEval]
) -> tuple[str, bytes]:
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for r, rows in flows.items():
        ax.semilogy(
            [p.distance for p in rows],
            [p.relative for p in rows],
            label=f"{r} ({NAMES.get(evals[r].family, '')})",
        )
    ax.set_xlabel("distance T - t")
    ax.set_ylabel("||dL_T/dh_t|| / ||dL_T/dh_T||")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    png = figure_png(fig)
    first = {evals[r].family: r for r in reversed(list(flows))}
    note = ""
    if "elman" in first and "lstm" in first:
        el, ls = flows[first["elman"]][-1], flows[first["lstm"]][-1]
        note = (
            f" At distance {el.distance} the Elman RNN keeps "
            f"{el.relative:.2e} of its distance-0 gradient norm, the LSTM "
            f"{ls.relative:.2e} (first seed of each, a batch mean: described, not "
            "tested)."
        )
    caption = (
        "Gradient flow on the trained models: the norm of dL_T/dh_t (top layer, "
        "batch mean over test sequences, relative to distance 0) against the "
        "distance T - t." + note
    )
    return caption, png


def curves_figure(curves: dict[str, list[dict]]) -> bytes:
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for r, rows in curves.items():
        if rows:
            ax.plot(
                [float(p["epoch"]) for p in rows],
                [float(p["valid_perplexity"]) for p in rows],
                marker=".",
                label=r,
            )
    ax.set_xlabel("epoch")
    ax.set_ylabel("valid perplexity")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return figure_png(fig)


def benchmark_table(bench: dict) -> tuple[str, Table]:
    rows = []
    for b in bench.get("rows", []):
        speed = b.get("build_tokens_per_second") or b.get("train_tokens_per_second")
        rows.append(
            [
                b["model"],
                f"{b.get('train_tokens', 0):,}",
                num(b.get("build_seconds") or b.get("train_seconds"), 1),
                f"{speed:,}",
                f"{b['eval_tokens_per_second']:,}",
                f"{b.get('peak_rss_mb', 0):,}",
            ]
        )
    header = ["model", "train tokens", "build/train s", "build/train tokens/s"]
    header += ["eval tokens/s", "peak RSS MB"]
    return (
        f"Benchmark: `{bench['command']}` ({bench['machine']['cpus']} CPUs)",
        (header, rows),
    )
