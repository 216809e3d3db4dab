"""The report's "Running the DAG" section, from benchmarks/results/dag.json
(written by benchmarks/dag.py): the measured serial and parallel wall times on this
machine, and each profile's simulated makespan on 1-16 workers against its
critical path and the ideal bound."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter

from firth.report import Section, figure_png

TITLE = "Running the DAG"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _share(x: float | None) -> str:
    return "not measured" if x is None else f"{100 * x:.0f}%"


def _unmeasured(sims: dict) -> str:
    """What the simulation leaves out: the stages without a measurement count 0 s."""
    missing = {name: s.get("unmeasured_stages", []) for name, s in sims.items()}
    if not any(missing.values()):
        return "Every stage is measured."
    counts = ", ".join(f"{name} {len(m)}" for name, m in missing.items())
    manifests = all(s.startswith("code-") for m in missing.values() for s in m)
    what = (
        "the code-* manifest stages, a few seconds each"
        if manifests
        else "listed in dag.json"
    )
    return (
        f"Stages without a measurement count 0 s ({counts}: {what}), so the "
        "makespans are lower bounds by that much."
    )


def dag_section(result: dict | None) -> Section | None:
    """None when the benchmark has not been run."""
    if not result or not (result.get("measured") or result.get("simulated")):
        return None
    sec = Section(TITLE)
    lines = []
    measured = result.get("measured")
    if measured:
        runs = measured["runs"]
        serial, par = runs["serial"], runs["jobs-2-1thread"]
        lines.append(
            f"Measured from fresh clones on {result['machine']['cpus']} CPUs "
            f"(commit `{measured['commit'][:7]}`, `python benchmarks/dag.py measure`): "
            f"serial `dvc repro` {_minutes(serial['seconds'])}, "
            f"`{par['command']}` with one thread per stage "
            f"{_minutes(par['seconds'])}, a speed-up of "
            f"{measured['speedup_jobs2_vs_serial']:.2f}x"
            + ("" if par.get("dvc_status_clean", True) else " (dvc status NOT clean)")
            + "."
        )
        rows = [
            [name, f"{run['seconds']:.0f}", str(len(run["stages"]))]
            + [_share(run.get("cpu_steal_share"))]
            for name, run in runs.items()
        ]
        header = ["run", "seconds", "stages run", "CPU time stolen by the hypervisor"]
        sec.tables.append(("Measured wall time", (header, rows)))
    sims = {k: v for k, v in (result.get("simulated") or {}).items() if k != "commit"}
    if sims:
        lines.append(
            "Simulated: list scheduling of each profile's DAG (longest remaining "
            "chain first) from its measured seconds per stage, against the "
            "critical path and the ideal bound max(critical path, work / workers). "
            + _unmeasured(sims)
            + " Seconds from: "
            + "; ".join(f"{name}: {s['source']}" for name, s in sims.items())
            + "."
        )
        workers = list(next(iter(sims.values()))["workers"])
        header = ["profile", "stages", "unmeasured", "work (s)", "critical path (s)"]
        header += [f"{w} workers (s)" for w in workers]
        rows = []
        for name, s in sims.items():
            row = [name, str(s["stages"]), str(len(s.get("unmeasured_stages", [])))]
            row.append(f"{s['work_seconds']:.0f}")
            row.append(f"{s['critical_path']['seconds']:.0f}")
            for w in workers:
                cell = s["workers"][w]
                row.append(f"{cell['makespan_seconds']:.0f} ({cell['speedup']:.1f}x)")
            rows.append(row)
        sec.tables.append(
            ("Simulated makespan (speed-up over one worker)", (header, rows))
        )
        sec.figures.append(("Makespan against workers", _figure(sims)))
    sec.intro = " ".join(lines)
    return sec


def _figure(sims: dict) -> bytes:
    fig, axes = plt.subplots(1, len(sims), figsize=(5 * len(sims), 3.6), squeeze=False)
    for ax, (name, s) in zip(axes[0], sims.items(), strict=True):
        workers = [int(w) for w in s["workers"]]
        minutes = [s["workers"][str(w)]["makespan_seconds"] / 60 for w in workers]
        ideal = [s["workers"][str(w)]["ideal_seconds"] / 60 for w in workers]
        ax.plot(workers, minutes, "o-", label="list schedule")
        ax.plot(workers, ideal, "--", color="grey", label="ideal bound")
        ax.axhline(
            s["critical_path"]["seconds"] / 60,
            color="tab:red",
            lw=1,
            label="critical path",
        )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis(FormatStrFormatter("%g"))
        ax.set_xticks(workers, [str(w) for w in workers])
        ax.set_xlabel("workers")
        ax.set_ylabel("minutes")
        ax.set_title(f"{name} profile ({s['stages']} stages)")
        ax.legend(fontsize=8)
    return figure_png(fig)
