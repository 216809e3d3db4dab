"""The report's NLI section: the premise+hypothesis classifier beside its
hypothesis-only twin and the majority class, with seed spread, per-label F1, the
contamination split and misclassified examples; or one line saying how to enable it."""

from __future__ import annotations

from firth.cross_machine_report import NOTE as MACHINE_NOTE
from firth.formatting import num
from firth.nli.results import NliEval, NliTrain
from firth.report import Section
from firth.results import Contamination, Spread

ENABLE = (
    "NLI: not run. The offline default ships no NLI data; with the Hugging Face hub "
    "`dvc exp run -S 'sources.nli={snli: snli}' -S 'nli.data=[snli]'` trains the "
    "premise+hypothesis and hypothesis-only classifiers (a `local` source reads "
    "SNLI/MultiNLI JSON lines instead)."
)


def _ms(s: Spread) -> str:
    if s.n == 1:
        return num(100 * s.mean, 2)
    return (
        f"{100 * s.mean:.2f} ± {100 * s.sd:.2f} ({100 * s.min:.2f}-{100 * s.max:.2f})"
    )


def _clean(c: Contamination) -> str:
    if c.clean is None:
        return "-"
    return f"{100 * c.clean:.2f} ({c.n_clean} of {c.n_all})"


def nli_section(evals: dict[str, NliEval], train: dict[str, list[NliTrain]]) -> Section:
    """``evals``: run -> eval.json; ``train``: run -> each seed's train.json."""
    if not evals:
        return Section("Natural language inference", ENABLE)
    sec = Section(
        "Natural language inference",
        "BiLSTM max-pool sentence encoders (InferSent's family): `pair` classifies "
        "[u; v; |u-v|; u*v] of premise and hypothesis, `hypothesis` the hypothesis "
        "alone (a partial-input baseline: Gururangan et al. 2018 report about 67% "
        "against 34% majority on SNLI, Poliak et al. 2018 about 69%). Test "
        "accuracy in points; mean ± std over seeds (min-max). " + MACHINE_NOTE,
    )
    rows = []
    for data in sorted({e.data for e in evals.values()}):
        runs = [r for r in sorted(evals) if evals[r].data == data]
        maj = evals[runs[0]].baselines["majority"]
        rows.append(
            [data, f"majority ({maj.label})", "-", num(100 * maj.accuracy, 2)]
            + ["-"] * 5
        )
        for r in runs:
            e = evals[r]
            per = {
                k: sum(m.per_label[k].f1 for m in e.models) / len(e.models)
                for k in e.models[0].per_label
            }
            secs = [t.train_seconds for t in train.get(r, [])]
            rows.append(
                [
                    data,
                    e.model,
                    str(len(e.models)),
                    _ms(e.summary.accuracy),
                    ", ".join(f"{m.seed}: {100 * m.accuracy:.2f}" for m in e.models),
                    " / ".join(num(100 * per[k], 1) for k in per),
                    _clean(e.contamination),
                    num(sum(secs) / 60, 1) if secs else "-",
                    str(e.test_examples),
                ]
            )
    sec.tables.append(
        (
            "Test accuracy (points)",
            (
                [
                    "data",
                    "model",
                    "seeds",
                    "accuracy",
                    "every seed",
                    "F1 entailment / neutral / contradiction",
                    "clean accuracy (clean examples)",
                    "train minutes (all seeds)",
                    "test examples",
                ],
                rows,
            ),
        )
    )
    ex = []
    for r in sorted(evals):
        for x in evals[r].examples:
            ex.append([r, x.premise, x.hypothesis, x.label, x.predicted])
    if ex:
        sec.tables.append(
            (
                "Misclassified test examples (first seed)",
                (["run", "premise", "hypothesis", "gold", "predicted"], ex),
            )
        )
    return sec
