"""The sequence-labelling section of the report: test scores of every tagger run with
their seed spread beside the majority and word-only baselines, BIO validity, the
gain from pretrained word vectors, per-type entity F1, validation curves, the worst
test sentences, and the benchmark."""

from __future__ import annotations

from collections import defaultdict

import matplotlib.pyplot as plt

from firth.audit.report import audit_sentence, contamination_table
from firth.cross_machine_report import NOTE as MACHINE_NOTE
from firth.evidence import Evidence, NoEvidence, chosen_init, tag_metric, tag_side
from firth.formatting import num
from firth.inference import compare
from firth.report import Section, figure_png
from firth.results import Spread
from firth.tagging.results import TaggerEval, TaggerTrain


def _ms(s: Spread | None, scale: float = 100.0, digits: int = 2) -> str:
    """mean ± sd (min-max) of a spread, in points."""
    if s is None or s.mean is None:
        return "-"
    if s.n == 1:
        return f"{scale * s.mean:.{digits}f}"
    return (
        f"{scale * s.mean:.{digits}f} ± {scale * s.sd:.{digits}f} "
        f"({scale * s.min:.{digits}f}-{scale * s.max:.{digits}f})"
    )


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def tagging_section(
    train: dict[str, list[TaggerTrain]],
    evals: dict[str, TaggerEval],
    curves: dict[str, list[dict]],
    bench: dict | None,
    audits: dict[str, dict] | None = None,
    ev: Evidence | None = None,
) -> Section:
    """``ev``: the per-sentence evidence the comparisons are tested on (without
    it, they are not made)."""
    audits = audits or {}
    runs = sorted(evals, key=lambda r: (evals[r].data, evals[r].head, r))
    datasets = sorted({evals[r].data for r in runs})
    seeds = sorted({s for r in runs for s in evals[r].seeds})
    sec = Section(
        "Sequence labelling",
        "BiLSTM taggers with character features and a softmax or CRF head, each "
        f"trained with {len(seeds)} seeds ({', '.join(map(str, seeds))}) twice: word "
        "embeddings initialised at random, and from the pretrained vectors named in "
        "the init column. Scores are on the test split of each dataset, as mean ± "
        "sample standard deviation over seeds (min-max). "
        + MACHINE_NOTE
        + " NER (BIO tags): seqeval "
        "entity-level micro F1 (conlleval's reading); POS: token accuracy, and "
        "accuracy on test tokens whose form never occurs in training (OOV). The "
        "baselines use the training split only: the majority tag everywhere, and "
        "each word's most frequent training tag (word-only, no context; unseen "
        "words get the majority tag). Heads: softmax; crf learns every transition "
        "score (Lample et al. 2016); crf-constrained forbids the moves that break "
        "BIO in training and decoding. A free CRF is also decoded under the BIO "
        "constraints ('+ BIO-constrained Viterbi' rows): a constraint imposed at "
        "decoding, which cannot break BIO by design, not something the model "
        "learned. Both heads share one learning rate and budget (tagger.common), "
        "not tuned per head or dataset.",
    )
    sec.tables.append(scores_table(runs, datasets, evals, train))
    sec.intro += "\n\n" + " ".join(_verdicts(runs, evals, ev))
    if rows := contamination_rows(runs, datasets, evals):
        for data in datasets:
            if data in audits:
                sentence = audit_sentence(audits[data], f"{data} test sentences")
                sec.intro += "\n\n" + sentence
        sec.tables.append(
            contamination_table(
                rows,
                ["f1", "accuracy"],
                "Entity F1 (NER) or accuracy (POS) on all / dirty / clean test "
                "sentences, in points (GPT-3 format; clean vs all = (clean - all) / "
                "all)",
                scale=100.0,
            )
        )
    sec.tables.append(_every_model(runs, evals, train))
    types = _type_table(runs, evals)
    if types:
        sec.tables.append(types)
    fig = _curves_figure(runs, evals, train, curves)
    if fig:
        sec.figures.append(
            (
                "Validation score (entity F1 for NER, accuracy for POS) per epoch, "
                "mean over the seeds still training at that epoch (early stopping "
                "ends some seeds sooner)",
                fig,
            )
        )
    ex = _examples_table(runs, evals)
    if ex:
        sec.tables.append(ex)
    if bench:
        sec.tables.append(bench_table(bench))
    return sec


SCORE_COLUMNS = [
    "data",
    "run",
    "head",
    "init",
    "entity F1",
    "token accuracy",
    "OOV accuracy",
    "invalid BIO sentences %",
    "train minutes (all seeds)",
    "best epochs",
]


def scores_table(runs, datasets, evals: dict[str, TaggerEval], train):
    """Per dataset: the baselines, then every run and init (seed spread)."""
    rows = []
    for data in datasets:
        in_data = [r for r in runs if evals[r].data == data]
        e0 = evals[in_data[0]]
        bio = e0.bio
        for name, b in e0.baselines.items():
            rows.append(
                [
                    data,
                    "baseline",
                    name,
                    "-",
                    _pct(b.f1) if bio else "-",
                    _pct(b.accuracy),
                    _pct(b.oov_accuracy),
                    _pct(b.invalid_bio_share) if bio else "-",
                    "-",
                    "-",
                ]
            )
        for r in in_data:
            e = evals[r]
            for init in e.inits:
                ms = [m for t in train.get(r, []) for m in t.models if m.init == init]
                for head, s in (
                    (e.head, e.summary[init]),
                    (f"{e.head} + BIO-constrained Viterbi", e.constrained.get(init)),
                ):
                    if s is None:
                        continue
                    rows.append(
                        [
                            data,
                            r,
                            head,
                            init,
                            _ms(s.f1) if bio else "-",
                            _ms(s.accuracy),
                            _ms(s.oov_accuracy),
                            _ms(s.invalid_bio_share) if bio else "-",
                            num(sum(m.train_seconds for m in ms) / 60, 1)
                            if ms
                            else "-",
                            ", ".join(str(m.best_epoch) for m in ms) if ms else "-",
                        ]
                    )
    title = "Test scores (points; mean ± std over seeds, min-max)"
    return title, (SCORE_COLUMNS, rows)


def contamination_rows(runs, datasets, evals: dict[str, TaggerEval]) -> list:
    """(label, {metric: all/dirty/clean}) of each baseline and run (seed mean)."""
    rows = []
    for data in datasets:
        e0 = next(evals[r] for r in runs if evals[r].data == data)
        for name, b in e0.baselines.items():
            rows.append(
                (f"{data} {name} baseline", {e0.metric: b.contamination.model_dump()})
            )
        for r in runs:
            e = evals[r]
            if e.data != data:
                continue
            for init, c in e.contamination.items():
                rows.append((f"{r} ({init}, seed mean)", {e.metric: c.model_dump()}))
    return rows


def _every_model(runs, evals, train):
    """One row per trained model: run, initialisation, seed, its test scores, its
    clean-sentence score and its best epoch."""
    rows = []
    for r in runs:
        e = evals[r]
        bio = e.bio
        epochs = {
            (m.init, m.seed): m.best_epoch for t in train.get(r, []) for m in t.models
        }
        for m in e.models:
            rows.append(
                [
                    r,
                    m.init,
                    str(m.seed),
                    _pct(m.f1) if bio else "-",
                    _pct(m.accuracy),
                    _pct(m.oov_accuracy),
                    _pct(m.invalid_bio_share) if bio else "-",
                    _pct(m.contamination.clean),
                    str(epochs.get((m.init, m.seed), "-")),
                ]
            )
    return (
        "Every model (points)",
        (
            [
                "run",
                "init",
                "seed",
                "entity F1",
                "token accuracy",
                "OOV accuracy",
                "invalid BIO %",
                "headline on clean sentences",
                "best epoch",
            ],
            rows,
        ),
    )


def _verdicts(runs, evals, ev: Evidence | None) -> list[str]:
    """BIO validity of every run, then the tested comparisons: pretrained against
    random word embeddings within each run, and each CRF head against the
    softmax head, each run at its initialisation chosen on validation."""
    out = []
    for r in runs:
        e = evals[r]
        if not e.bio:
            continue
        shares = [m.invalid_bio_share for m in e.models]
        worst, mean = max(shares), sum(shares) / len(shares)
        line = (
            f"{r}: {100 * mean:.2f}% of predicted test sentences break BIO (mean "
            f"over its {len(shares)} models; worst {100 * worst:.2f}%)"
        )
        if e.constrained_models:
            cs = [m.invalid_bio_share for m in e.constrained_models]
            line += f", {100 * max(cs):.2f}% under BIO-constrained Viterbi"
        out.append(line + ".")
    if ev is None or not ev.tag_items:
        return out
    for r in runs:
        e = evals[r]
        if len(e.inits) < 2:
            continue
        try:
            base, pre = (tag_side(ev, r, i) for i in e.inits[:2])
        except NoEvidence:
            continue
        t = compare(pre, base, tag_metric(e), ev.rule)
        out.append(
            f"{r}, {e.inits[1]} vectors against random initialisation, "
            f"{tag_metric(e).name}: {t.sentence()}."
        )
    for data in sorted({evals[r].data for r in runs}):
        heads = {evals[r].head: r for r in runs if evals[r].data == data}
        if "softmax" not in heads:
            continue
        soft = heads["softmax"]
        for head in ("crf", "crf-constrained"):
            if head not in heads:
                continue
            crf = heads[head]
            try:
                ic, is_ = chosen_init(ev, crf), chosen_init(ev, soft)
                a, b = tag_side(ev, crf, ic), tag_side(ev, soft, is_)
            except NoEvidence:
                continue
            metric = tag_metric(evals[crf])
            t = compare(a, b, metric, ev.rule)
            out.append(
                f"{data}: the {head} head ({ic}) against the softmax head ({is_}), "
                f"{metric.name}, inits chosen on validation: {t.sentence()}."
            )
    return out


def _type_table(runs, evals):
    rows = []
    for r in runs:
        e = evals[r]
        if not e.bio:
            continue
        for init in e.inits:
            ms = [m for m in e.models if m.init == init]
            types = sorted(ms[0].per_type)
            for ty in types:
                f1 = [m.per_type[ty].f1 for m in ms]
                rows.append(
                    [
                        r,
                        init,
                        ty,
                        str(ms[0].per_type[ty].support),
                        f"{100 * sum(f1) / len(f1):.2f}",
                        f"{100 * min(f1):.2f}-{100 * max(f1):.2f}",
                    ]
                )
    if not rows:
        return None
    return (
        "Entity F1 per type on test (mean over seeds, min-max)",
        (["run", "init", "type", "test entities", "F1", "range"], rows),
    )


def _curves_figure(runs, evals, train, curves) -> bytes | None:
    datasets = sorted({evals[r].data for r in runs if curves.get(r)})
    if not datasets:
        return None
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.0))
    axes = [axes] if len(datasets) == 1 else list(axes)
    for ax, data in zip(axes, datasets, strict=True):
        for r in runs:
            if evals[r].data != data or not curves.get(r):
                continue
            by = defaultdict(lambda: defaultdict(list))
            for row in curves[r]:
                by[row["init"]][round(float(row["epoch"]))].append(
                    float(row["valid_score"])
                )
            for init, pts in by.items():
                xs = sorted(pts)
                ax.plot(
                    xs,
                    [100 * sum(pts[x]) / len(pts[x]) for x in xs],
                    label=f"{evals[r].head}, {init}",
                    linestyle="-" if init == "random" else "--",
                )
        ax.set_title(data)
        ax.set_xlabel("epoch")
        bio = any(evals[r].bio for r in runs if evals[r].data == data)
        ax.set_ylabel("valid entity F1" if bio else "valid accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return figure_png(fig)


def _examples_table(runs, evals):
    rows = []
    for r in runs:
        e = evals[r]
        for init, sents in e.examples.items():
            for s in sents:
                marked = " ".join(
                    w if g == p else f"{w}/{g}→{p}"
                    for w, g, p in zip(s.tokens, s.gold, s.predicted, strict=True)
                )
                rows.append([r, init, marked])
    if not rows:
        return None
    return (
        "Test sentences with the most errors (first seed; word/gold→predicted)",
        (["run", "init", "sentence"], rows),
    )


def bench_table(bench: dict):
    rows = []
    for r in bench.get("runs", []):
        rows.append(
            [
                r["run"],
                f"{r['train_sentences_per_second']:,.1f}",
                f"{r['viterbi_batched_sentences_per_second']:,.1f}"
                if "viterbi_batched_sentences_per_second" in r
                else "-",
                f"{r['viterbi_loop_sentences_per_second']:,.1f}"
                if "viterbi_loop_sentences_per_second" in r
                else "-",
                f"{r['viterbi_speedup']:.1f}x" if "viterbi_speedup" in r else "-",
                f"{r['decode_sentences_per_second']:,.1f}",
            ]
        )
    return (
        f"Benchmark (benchmarks/tagger.py, {bench.get('device', '?')}, "
        f"{bench.get('threads', '?')} threads)",
        (
            [
                "run",
                "train sentences/s",
                "Viterbi batched sentences/s",
                "Viterbi per sentence sentences/s",
                "batched speed-up",
                "tagger decode sentences/s",
            ],
            rows,
        ),
    )
