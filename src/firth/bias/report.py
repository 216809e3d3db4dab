"""The report's "Bias in word vectors" section: each method's WEATs before and
after hard debiasing (the first seed's, with every seed's mean |d| over the gender
tests), the gender direction, and the recoverability of the debiased bias."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from firth.bias.results import BiasEval  # noqa: E402
from firth.bias.wordlists import WEAT  # noqa: E402
from firth.report import Section, figure_png  # noqa: E402

INTRO = (
    "Word vectors reproduce human association biases (Caliskan et al. 2017). Each "
    "WEAT asks whether target words X (e.g. math) sit closer to attribute words A "
    "(male terms) and Y (arts) to B (female terms) than the other way round: the "
    "effect size d is the difference of the mean associations over their pooled "
    "standard deviation, the p-value one-sided over re-partitions of X and Y. A "
    "test runs only where the vocabulary keeps enough of each word set (coverage "
    "below). Hard debiasing (Bolukbasi et al. 2016) removes the gender direction "
    "(the first principal component of definitional pairs such as she/he) from "
    "every word outside a hand-labelled gender-specific list and equalises pairs "
    "such as king/queen. Gonen and Goldberg (2019) showed that this hides the bias "
    "from the direction but not from the geometry: the most male- and female-"
    "aligned words (by the original projection) still cluster by gender, and a "
    "classifier still predicts it, from the debiased vectors. Chance is 50% (the "
    "classes are balanced). The scorecard tests the finding on the SGNS vectors."
)


def _f(x, digits: int = 2) -> str:
    return "-" if x is None else f"{x:+.{digits}f}"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def bias_section(evals: dict[str, BiasEval]) -> Section:
    sec = Section("Bias in word vectors", INTRO)
    rows = []
    for method, e in evals.items():
        first = str(e.seeds[0])
        for s in e.weat[first]:
            t = WEAT[s.test]
            cov = "/".join(str(s.coverage[k]) for k in "xyab")
            total = "/".join(str(len(getattr(t, k).words)) for k in "xyab")
            rows.append(
                [
                    method,
                    f"{s.test}: {t.x.name} vs {t.y.name}, {t.a.name} vs {t.b.name}",
                    f"{cov} of {total}",
                    _f(s.effect_size),
                    "-" if s.p_value is None else f"{s.p_value:.4f}",
                    _f(s.effect_size_debiased),
                    "-" if s.p_value_debiased is None else f"{s.p_value_debiased:.4f}",
                    "-" if t.human_d is None else f"{t.human_d:.2f}",
                ]
            )
    sec.tables.append(
        (
            "WEAT effect sizes before and after hard debiasing (each method's first "
            "seed; covered words of X/Y/A/B; '-': too few words to run; the last "
            "column is the implicit-association study's d the test replicates)",
            (
                [
                    "vectors",
                    "test",
                    "coverage",
                    "d",
                    "p",
                    "d debiased",
                    "p debiased",
                    "human IAT d",
                ],
                rows,
            ),
        )
    )
    rows = []
    for method, e in evals.items():
        sm = e.summary
        first = e.runs[str(e.seeds[0])]

        def mean(sp, fmt=_pct):
            return "-" if sp.mean is None else fmt(sp.mean)

        rows.append(
            [
                method,
                str(len(e.seeds)),
                f"{first.direction_explained[0]:.2f}",
                f"{first.neutralised:,} / {first.equalised_pairs}",
                mean(sm.gender_weat_abs_d, lambda x: f"{x:.2f}"),
                mean(sm.gender_weat_abs_d_debiased, lambda x: f"{x:.2f}"),
                mean(sm.kmeans_original),
                mean(sm.kmeans_debiased),
                mean(sm.svm_original),
                mean(sm.svm_debiased),
            ]
        )
    sec.tables.append(
        (
            "Hard debiasing and what it leaves (seed means): the gender direction's "
            "share of the definitional pairs' variance (first seed), words "
            "neutralised / pairs equalised, mean |d| over the gender WEATs that ran, "
            f"and the accuracy of recovering the original bias label of the "
            f"{2 * first.recover_words if evals else 0} most biased words by 2-means "
            "clustering and by a cross-validated RBF SVM",
            (
                [
                    "vectors",
                    "seeds",
                    "direction variance",
                    "neutralised / equalised",
                    "gender |d|",
                    "gender |d| debiased",
                    "k-means original",
                    "k-means debiased",
                    "SVM original",
                    "SVM debiased",
                ],
                rows,
            ),
        )
    )
    if evals:
        sec.figures.append(
            (
                "WEAT effect size d before (x) and after (y) hard debiasing, every "
                "test that ran, every seed; gender tests filled",
                _scatter(evals),
            )
        )
    return sec


def _scatter(evals: dict[str, BiasEval]) -> bytes:
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    lim = 0.5
    for i, (method, e) in enumerate(evals.items()):
        colour = f"C{i}"
        for seed, scores in e.weat.items():
            for s in scores:
                if not s.ran:
                    continue
                gender = WEAT[s.test].gender
                ax.scatter(
                    s.effect_size,
                    s.effect_size_debiased,
                    s=28,
                    color=colour if gender else "none",
                    edgecolors=colour,
                    label=method if seed == str(e.seeds[0]) and gender else None,
                )
                lim = max(lim, abs(s.effect_size), abs(s.effect_size_debiased))
    lim = min(2.0, lim * 1.1)
    ax.plot([-lim, lim], [-lim, lim], color="grey", lw=0.8, ls="--")
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_xlabel("WEAT d, original vectors")
    ax.set_ylabel("WEAT d, hard-debiased")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=8, loc="upper left")
    return figure_png(fig)
