"""The report's word-embedding section: methods side by side (gensim the
reference), every seed, analogies by section, neighbours of probe words, the
benchmark against gensim, and the figures; read from the typed result files
(firth.embeddings.results)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from firth.cross_machine_report import NOTE as MACHINE_NOTE  # noqa: E402
from firth.embeddings.results import (  # noqa: E402
    AnalogyDetail,
    EmbeddingDetail,
    EmbeddingEval,
    EmbeddingTrain,
    Scores,
)
from firth.evidence import (  # noqa: E402
    HIT,
    Evidence,
    NoEvidence,
    hit_side,
    similarity_sides,
)
from firth.formatting import num  # noqa: E402
from firth.inference import compare, equivalent, spearman_metric  # noqa: E402
from firth.report import Section, Table, figure_png  # noqa: E402
from firth.results import Spread  # noqa: E402

ORDER = ("sgns", "subword", "ppmi-svd", "glove", "gensim")
SIMILARITY = (("wordsim353", "WS-353"), ("simlex999", "SimLex-999"))
INTRO = (
    "Trained on data/subsampled/text/train.txt; gensim's Word2Vec (skip-gram, "
    "same d, window and its weighting, negatives, sample, min_count, epochs, "
    "threads) is the reference. SGNS and PPMI-SVD are matched as Levy, Goldberg "
    "and Dagan (2015) match them: the same window (size and weighting) and the "
    "same subsampling, and each method's own setting (negatives or shift, context "
    "smoothing, w or w+c, eigenvalue weighting) chosen from one grid on the dev "
    "half of every similarity set (embeddings.tune; the table of every setting "
    "below). Similarity: Spearman over the pairs of each set's test half whose "
    "words have vectors (coverage beside it); the dev half chose the settings and "
    "is never reported as a score. Analogies: Google set, accuracy over covered "
    "questions; 'top' restricts candidates to the most frequent "
    "evaluate_embeddings.restrict words where the vocabulary is larger (else it "
    "is the whole vocabulary, as 'full'); 3CosAdd excludes the three input words, "
    "'3CosAdd incl.' does not; only-b answers the nearest neighbour of b (a "
    "baseline). w2v-<arch>-<loss> is word2vec.c's own sequential loop "
    "(firth.embeddings.word2vec, one thread): skip-gram or CBOW with negative "
    "sampling or the hierarchical softmax over a Huffman tree of the counts, at "
    "the common settings and word2vec.c's rates. A deterministic method whose "
    "seeds give identical vectors counts as one run. " + MACHINE_NOTE
)


def ordered(methods) -> list[str]:
    return [m for m in ORDER if m in methods] + sorted(
        m for m in methods if m not in ORDER
    )


def spread(s: Spread | None, digits: int = 4) -> str:
    """mean ± sd where there are several seeds, else the value."""
    if s is None or s.mean is None:
        return "-"
    if s.n > 1 and s.sd is not None:
        return f"{num(s.mean, digits)} ± {num(s.sd, digits)}"
    return num(s.mean, digits)


def _mean(s: Spread | None) -> float | None:
    return None if s is None else s.mean


def embeddings_section(
    train: dict[str, list[EmbeddingTrain]],
    evals: dict[str, EmbeddingEval],
    details: dict[str, EmbeddingDetail],
    bench: dict | None,
    curves: dict[str, dict[int, list[tuple[int, float]]]] | None = None,
    ev: Evidence | None = None,
) -> Section:
    """``train``: each method's train records (one per seed); ``details``: each
    method's eval_detail.json; ``curves``: method -> seed -> (epoch, training
    loss) of the iterative methods; ``ev``: the per-item evidence SGNS and
    PPMI-SVD are compared on."""
    methods = ordered(evals)
    sec = Section("Word embeddings", INTRO + _candidates(details))
    sec.tables.append(methods_table(methods, train, evals))
    sec.tables.append(seeds_table(methods, evals))
    if tuned := tuning_table(train):
        sec.tables.append(tuned)
    if ev is not None and (matched := matched_table(ev)):
        sec.tables.append(matched)
    if ev is not None and (softmax := softmax_table(ev)):
        sec.tables.append(softmax)
    if any(evals[m].summary.similarity_with_oov for m in methods):
        sec.tables.append(oov_similarity_table(methods, evals))
    top = {m: details[m].top() if m in details else None for m in methods}
    names = list(dict.fromkeys(n for r in top.values() if r for n in r.sections))
    if names:
        sec.tables.append(analogy_sections_table(methods, top, names))
    sec.tables += neighbour_tables(methods, details)
    if bench:
        sec.tables.append(benchmark_table(bench, train))
    sec.figures.append(
        ("Embedding quality by method", embeddings_figure(methods, evals))
    )
    if names:
        sec.figures.append(
            (
                "Analogy accuracy (3CosAdd, top candidates; first seed) by section "
                "of the Google set: semantic sections first, then the syntactic ones",
                analogy_sections_figure(methods, top),
            )
        )
    if curves:
        sec.figures.append(
            (
                "Training loss per epoch (each method's own objective, log scale; "
                "one line per seed)",
                embedding_loss_figure(curves),
            )
        )
    return sec


def methods_table(
    methods: list[str],
    train: dict[str, list[EmbeddingTrain]],
    evals: dict[str, EmbeddingEval],
) -> tuple[str, Table]:
    rows = []
    for m in methods:
        s, runs = evals[m].summary, train.get(m, [])

        def avg(key, runs=runs):
            vals = [getattr(r, key) for r in runs]
            return sum(vals) / len(vals) if vals else None

        top = s.analogy_at("top")
        full = s.analogy_at("full")
        sim = [s.similarity.get(k) for k, _ in SIMILARITY]
        n, distinct = len(evals[m].seeds), evals[m].distinct
        rows.append(
            [
                m,
                f"{n} ({distinct} distinct)" if distinct and distinct < n else str(n),
                num(avg("words_per_second"), 0),
                num(avg("seconds"), 1),
                num(avg("peak_rss_mb"), 0),
                spread(top and top.cos_add),
                num(_mean(top and top.cos_add_incl)),
                num(_mean(top and top.cos_mul)),
                num(_mean(top and top.only_b)),
                num(_mean(top and top.coverage), 3)
                + " / "
                + num(_mean(full and full.coverage), 3),
                num(_mean(full and full.cos_add)),
                *(
                    f"{spread(x and x.spearman)} ({num(_mean(x and x.coverage), 2)})"
                    for x in sim
                ),
            ]
        )
    header = ["method", "seeds", "words/s", "train s", "peak RSS MB"]
    header += ["3CosAdd (top)", "3CosAdd incl.", "3CosMul", "only-b"]
    header += ["coverage top / full", "3CosAdd (full)"]
    header += [f"{label} (cov.)" for _, label in SIMILARITY]
    return (
        "Methods (stage runs: train-embeddings-<method>@<seed>, "
        "evaluate-embeddings@<method>; means over the seeds, ± sample sd)",
        (header, rows),
    )


def _candidates(details: dict[str, EmbeddingDetail]) -> str:
    """What 'top' means on this run: the restriction, or every word."""
    top = next((d.top() for d in details.values() if d.top()), None)
    if top is None:
        return ""
    if top.restrict:
        return f" Here 'top' is the {top.candidates:,} most frequent words."
    return (
        f" Here the vocabulary ({top.candidates:,} words) is smaller than the "
        "restriction, so 'top' and 'full' are the same evaluation."
    )


def tuning_table(train: dict[str, list[EmbeddingTrain]]):
    """Every setting of the tuned methods' grids with its dev Spearman (seed
    mean) and how often it was chosen."""
    rows = []
    for m in ("sgns", "ppmi-svd"):
        runs = [t for t in train.get(m, []) if getattr(t, "tuning", None)]
        if not runs:
            continue
        settings = [row.setting for row in runs[0].tuning]
        sets = sorted(runs[0].tuning[0].dev_spearman)
        for i, setting in enumerate(settings):
            cells = [run.tuning[i] for run in runs]
            per_set = []
            for name in sets:
                vals = [c.dev_spearman.get(name) for c in cells]
                vals = [v for v in vals if v is not None]
                per_set.append(num(sum(vals) / len(vals), 4) if vals else "-")
            means = [c.dev_mean for c in cells if c.dev_mean is not None]
            rows.append(
                [
                    m,
                    setting,
                    *per_set,
                    num(sum(means) / len(means), 4) if means else "-",
                    f"{sum(c.chosen for c in cells)} of {len(cells)}",
                ]
            )
    if not rows:
        return None
    header = ["method", "setting", *(f"dev {n}" for n in sets), "dev mean", "chosen"]
    return (
        "Tuning on the dev halves: every setting of embeddings.tune, its dev "
        "Spearman (mean over seeds) and how many seeds chose it (each seed chooses "
        "its own)",
        (header, rows),
    )


def matched_table(ev: Evidence):
    """SGNS against PPMI-SVD, matched and tuned: every similarity set's test half
    (an equivalence test at the margin) and the analogies (paired differences)."""
    if not {"sgns", "ppmi-svd"} <= set(ev.emb_items):
        return None
    rows = []
    for name in sorted(ev.emb_items["sgns"].similarity):
        try:
            (a, b), half = similarity_sides(ev, ["sgns", "ppmi-svd"], name)
        except NoEvidence:
            continue
        t = equivalent(a, b, spearman_metric(), ev.rule, ev.margin)
        rows.append(
            [f"{name}, test half", f"Spearman, within ±{ev.margin:g}", *_cells(t, 4)]
        )
    for key, what in (("3cosadd", "3CosAdd"), ("3cosmul", "3CosMul")):
        for name in sorted(ev.emb_items["sgns"].analogy):
            try:
                a = hit_side(ev, "sgns", name, key, "sgns")
                b = hit_side(ev, "ppmi-svd", name, key, "ppmi-svd")
            except NoEvidence:
                continue
            if a.items != b.items:
                continue
            t = compare(a, b, HIT, ev.rule)
            rows.append([name, f"{what} accuracy %, difference", *_cells(t, 2)])
    if not rows:
        return None
    header = ["set", "test", "SGNS", "PPMI-SVD", "difference [interval]"]
    header += ["items", "seeds", "verdict"]
    return (
        "SGNS against PPMI-SVD, matched and each tuned on dev (paired bootstrap, "
        "seeds resampled; similarity: equivalence tests, 90% intervals)",
        (header, rows),
    )


def softmax_table(ev: Evidence):
    """word2vec's loop, negative sampling against the hierarchical softmax, for
    skip-gram and CBOW where both ran: speed (paired over timed blocks) and a
    non-inferiority test per benchmark (firth.findings.ns_hs_tests)."""
    from firth.findings import ns_hs_tests, ns_hs_verdict

    rows = []
    for arch, name in (("sg", "skip-gram"), ("cbow", "CBOW")):
        try:
            tests, labels = ns_hs_tests(ev, arch)
        except NoEvidence:
            continue
        for t, lab in zip(tests, labels, strict=True):
            digits = 4 if t.metric == "Spearman" else 1 if "words/s" in t.metric else 2
            test = (
                t.metric
                if t.kind == "difference"
                else (f"{t.metric}, not worse by {t.margin:g}")
            )
            rows.append([name, lab.split(",")[0], test, *_cells(t, digits)])
        verdict, quality = ns_hs_verdict(tests)
        rows.append(
            [name, "the claim", "faster, and not worse on most benchmarks"]
            + ["", "", "", "", "", f"{verdict} (benchmarks: {quality})"]
        )
    if not rows:
        return None
    header = ["arch", "measure", "test", "negative sampling", "hierarchical softmax"]
    header += ["difference [interval]", "items", "seeds", "verdict"]
    return (
        "Negative sampling against the hierarchical softmax, both in word2vec's own "
        "loop (w2v-<arch>-ns, w2v-<arch>-hs: the same corpus, window, subsampling, "
        "epochs and rate; one thread). Speed in thousands of kept (subsampled) "
        "tokens per second, paired over the timed blocks of each epoch; quality as "
        "non-inferiority tests (95% intervals; seeds resampled)",
        (header, rows),
    )


def _cells(t, digits: int) -> list[str]:
    return [
        num(t.a.score, digits),
        num(t.b.score, digits),
        t.interval(digits),
        f"{t.n:,}",
        f"{t.a.seeds} / {t.b.seeds}",
        t.verdict,
    ]


def seeds_table(methods: list[str], evals: dict[str, EmbeddingEval]):
    def row(m: str, seed: str, r: Scores) -> list[str]:
        top = r.analogy_at("top")
        full = r.analogy_at("full")
        sims = [r.similarity.get(k) for k, _ in SIMILARITY]
        return [
            m,
            seed,
            num(top and top.cos_add),
            num(top and top.cos_mul),
            num(full and full.cos_add),
            *(num(x and x.spearman) for x in sims),
        ]

    rows = [row(m, seed, r) for m in methods for seed, r in evals[m].runs.items()]
    header = ["method", "seed", "3CosAdd (top)", "3CosMul", "3CosAdd (full)"]
    return (
        "Every run (one row per method and seed)",
        (header + [label for _, label in SIMILARITY], rows),
    )


def oov_similarity_table(methods: list[str], evals: dict[str, EmbeddingEval]):
    rows = [
        [
            f"{m}: {name}",
            f"{spread(x.spearman)} ({num(x.coverage.mean, 2)})",
        ]
        for m in methods
        for name, x in evals[m].summary.similarity_with_oov.items()
    ]
    return (
        "Similarity with vectors for unseen words too (subword model)",
        (["method: set", "Spearman (coverage)"], rows),
    )


def analogy_sections_table(methods, top, names) -> tuple[str, Table]:
    rows = []
    for n in names:
        entries = [top[m].sections.get(n) if top[m] else None for m in methods]
        cov = next((f"{e.covered}/{e.questions}" for e in entries if e), "-")
        rows.append([n, *(num(e.cos_add, 3) if e else "-" for e in entries), cov])
    return (
        "3CosAdd by analogy section (top candidates; first seed)",
        (["section", *methods, "covered"], rows),
    )


def neighbour_tables(methods: list[str], details: dict[str, EmbeddingDetail]) -> list:
    probe_rows, oov_rows = [], []
    for m in methods:
        if m not in details:
            continue
        for entry in details[m].neighbours:
            near = ", ".join(w for w, _ in entry.neighbours[:6])
            probe_rows.append([entry.word, m, near or "(not in vocabulary)"])
        for entry in details[m].oov_neighbours:
            near = ", ".join(w for w, _ in entry.neighbours[:6])
            seen = "in vocabulary" if entry.in_vocab else "unseen"
            oov_rows.append([entry.word, seen, m, near or "(no known n-gram)"])
    out = []
    if probe_rows:
        probe_rows.sort(key=lambda r: r[0])
        header = ["probe", "method", "neighbours"]
        out.append(("Nearest neighbours (cosine; first seed)", (header, probe_rows)))
    if oov_rows:
        header = ["word", "status", "method", "neighbours"]
        out.append(
            ("Neighbours of words built from n-grams (first seed)", (header, oov_rows))
        )
    return out


def embeddings_figure(methods: list[str], evals: dict[str, EmbeddingEval]) -> bytes:
    def values(s: Scores) -> list[float]:
        top = s.analogy_at("top")
        sims = [s.similarity.get(k) for k, _ in SIMILARITY]
        picked = [top and top.cos_add, top and top.cos_mul, top and top.only_b]
        picked += [x and x.spearman for x in sims]
        return [_mean(x) or 0.0 for x in picked]

    labels = ["analogy 3CosAdd", "analogy 3CosMul", "only-b baseline"]
    labels += [f"{label} ρ" for _, label in SIMILARITY]
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    width = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        vals = values(evals[m].summary)
        ax.bar([j + i * width for j in range(len(labels))], vals, width, label=m)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))])
    ax.set_xticklabels(labels, fontsize=8)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("accuracy / Spearman")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return figure_png(fig)


def benchmark_table(
    bench: dict, train: dict[str, list[EmbeddingTrain]] | None = None
) -> tuple[str, Table]:
    """benchmarks/results/embeddings.json's rows, with a caption saying whether
    they come from this run's corpus (its sha256 against the models')."""
    summary = bench["summary"]
    # each row's ratio: to gensim's skip-gram measured by the same command (a
    # merged file keeps earlier ones), word2vec's loop to gensim's same variant
    ratios = {
        **{k: v for k, v in bench.get("ratio_to_gensim_earlier", {}).items()
           if k != "command"},
        **bench.get("ratio_to_gensim", {}),
        **bench.get("ratio_to_gensim_variant", {}),
    }  # fmt: skip
    rows = []
    for m, e in summary.items():
        r = ratios.get(m, {})
        rows.append(
            [
                m,
                str(e["runs"]),
                f"{e['words_per_second']:,.0f}",
                num(r.get("words_per_second"), 2) if r else "1",
                f"{e['peak_rss_mb']:,.0f}",
                f"{e['analogy_3cosadd']:.4f} ± {e['analogy_3cosadd_sd']:.4f}",
                f"{e['wordsim353_spearman']:.3f} ± {e['wordsim353_spearman_sd']:.3f}",
                f"{e['simlex999_spearman']:.3f} ± {e['simlex999_spearman_sd']:.3f}",
                " / ".join(
                    num(r.get(k), 2)
                    for k in (
                        "analogy_3cosadd",
                        "wordsim353_spearman",
                        "simlex999_spearman",
                    )
                )
                if r
                else "1 / 1 / 1",
                f"{bench.get('text8_expected_cpu_seconds', {}).get(m, '-'):,}"
                if m in bench.get("text8_expected_cpu_seconds", {})
                else "-",
            ]
        )
    ours = {t.corpus_sha256 for runs in (train or {}).values() for t in runs}
    same = bench.get("corpus_sha256") in ours
    where = (
        f"this run's corpus ({bench.get('corpus_tokens', 0):,} tokens)"
        if same
        else (
            f"NOT this run's corpus: the file {bench['corpus']} of the project "
            f"{bench.get('project', 'the benchmark ran in')}"
            + (
                f", {bench['corpus_tokens']:,} tokens"
                if "corpus_tokens" in bench
                else " when it ran (its hash was not recorded)"
            )
            + "; its rows are not the models above"
        )
    )
    merged = "".join(f" and `{c}`" for c in bench.get("merged_from", []))
    caption = (
        f"Benchmark: `{bench['command']}`{merged} ({bench['machine']['cpus']} CPUs, "
        f"{where}; mean ± sd over seeds; ratios to gensim's skip-gram of the same "
        "command, w2v-* to gensim's same variant; each method at its reference "
        "setting, not tuned)"
    )
    return (
        caption,
        (
            [
                "method",
                "runs",
                "words/s",
                "speed ratio",
                "peak RSS MB",
                "3CosAdd",
                "WS-353",
                "SimLex-999",
                "quality ratios",
                "text8 CPU s (est.)",
            ],
            rows,
        ),
    )


def analogy_sections_figure(
    methods: list[str], top: dict[str, AnalogyDetail | None]
) -> bytes:
    """3CosAdd per analogy section (top candidates), one bar per method."""
    names = list(dict.fromkeys(n for r in top.values() if r for n in r.sections))
    fig, ax = plt.subplots(
        figsize=(7.5, 0.32 * len(names) * max(1, len(methods)) / 2 + 1.5)
    )
    height = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        secs = top[m].sections if top.get(m) else {}
        vals = [secs[n].cos_add if n in secs else 0.0 for n in names]
        ax.barh([j + i * height for j in range(len(names))], vals, height, label=m)
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(names))])
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("3CosAdd accuracy (covered questions, top candidates)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    return figure_png(fig)


def embedding_loss_figure(
    curves: dict[str, dict[int, list[tuple[int, float]]]],
) -> bytes:
    """Training loss per epoch of each iterative method, every seed a line."""
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for i, (m, seeds) in enumerate(sorted(curves.items())):
        for j, (_seed, points) in enumerate(sorted(seeds.items())):
            xs, ys = zip(*points, strict=True)
            ax.plot(
                xs,
                ys,
                color=f"C{i}",
                alpha=1.0 if j == 0 else 0.5,
                marker="o",
                markersize=3,
                label=m if j == 0 else None,
            )
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (method's own objective)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return figure_png(fig)
