"""The report's "Trainer throughput" section, from benchmarks/results/
throughput.json (written by benchmarks/throughput.py): each trainer's examples
per second under the previous code and this one, run side by side on one machine,
and their validation curves overlaid at equal epochs (the same examples seen)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from firth.report import Section, figure_png

TITLE = "Trainer throughput"


def _rate(values: list[float]) -> str:
    return ", ".join(f"{v:,.0f}" for v in values)


def _verdict(validation: dict) -> str:
    same = validation.get("new_same_or_better_at_every_point")
    if same is None:
        return "no common points"
    return "yes" if same else "not at every point"


def throughput_section(result: dict | None) -> Section | None:
    """None when the benchmark has not been run."""
    trainers = (result or {}).get("trainers") or {}
    if not trainers:
        return None
    sec = Section(TITLE)
    sec.intro = (
        f"The previous code (`{result['base']}`) against the commit in each row, "
        "each stage run through `benchmarks/budget_probe.py` in its own checkout "
        "on the same inputs, alternating old and new (each row keeps the run that "
        "measured it: its command is in the second table). Examples per second "
        "of training; the validation curves below are compared at equal epochs, "
        "the same examples seen."
    )
    header = ["trainer", "stage", "unit", "measured at", "old per s", "new per s"]
    header += ["speed-up", "validation same or better"]
    rows = [
        [
            name,
            t["stage"],
            t["unit"],
            f"`{t.get('commit', result['commit'])[:7]}`",
            _rate(t["per_second"]["old"]),
            _rate(t["per_second"]["new"]),
            f"{t['speedup']:.2f}x",
            _verdict(t["validation"]),
        ]
        for name, t in sorted(trainers.items())
    ]
    sec.tables.append(
        ("Examples per second, previous code against this", (header, rows))
    )
    commands = [
        [name, f"`{t.get('command', result['command'])}`"]
        for name, t in sorted(trainers.items())
    ]
    sec.tables.append(("The run of each row", (["trainer", "command"], commands)))
    curves = {
        n: t for n, t in sorted(trainers.items()) if t["validation"]["at_equal_epochs"]
    }
    if curves:
        sec.figures.append(("Validation at equal epochs", _figure(curves)))
    return sec


def _figure(trainers: dict) -> bytes:
    fig, axes = plt.subplots(
        1, len(trainers), figsize=(4 * len(trainers), 3.2), squeeze=False
    )
    for ax, (name, t) in zip(axes[0], trainers.items(), strict=True):
        v = t["validation"]
        points = v["at_equal_epochs"]
        xs = [p["epoch"] for p in points]
        ax.plot(xs, [p["old"] for p in points], "o--", color="grey", label="previous")
        ax.plot(xs, [p["new"] for p in points], "o-", color="tab:blue", label="this")
        ax.set_xlabel("epoch")
        ax.set_ylabel(
            v["column"] + (" (lower is better)" if v["lower_is_better"] else "")
        )
        ax.set_title(f"{name} ({t['speedup']:.2f}x)")
        ax.legend(fontsize=8)
    return figure_png(fig)
