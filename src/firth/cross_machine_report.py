"""The report's "Same seed, another machine" section, from benchmarks/results/
cross_machine.json (written by benchmarks/cross_machine.py): runs repeat bit for
bit on one machine, not on another CPU, and how far the tracked scores moved when
the stages reran on another instruction set's kernels, against the seed band
`firth compare` holds a move to."""

from __future__ import annotations

from firth.report import Section

TITLE = "Same seed, another machine"

# beside every seed spread in the report
NOTE = (
    "The same seed repeats bit for bit on one machine only; on another CPU a "
    f'score moves like another seed\'s (section "{TITLE}").'
)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _verdicts(metrics: list[dict]) -> str:
    counts: dict[str, int] = {}
    for m in metrics:
        word = m["status"] or "within tolerance"
        counts[word] = counts.get(word, 0) + 1
    order = ["within tolerance", "noise", "better", "worse"]
    words = sorted(counts, key=lambda w: (order.index(w) if w in order else 9, w))
    return ", ".join(f"{counts[w]} {w}" for w in words)


def cross_machine_section(result: dict | None) -> Section | None:
    """None when the benchmark has not been run."""
    metrics = (result or {}).get("metrics")
    if not metrics:
        return None
    emulated = ", ".join(f"{k}={v}" for k, v in result["emulated"].items())
    s = result["summary"]
    sec = Section(TITLE)
    sec.intro = (
        "The same seed, params, data, threads and torch build give the same weights "
        "and metrics run after run on one machine (docs/measured.md, "
        "`make bench-determinism`), but not on another: another CPU runs other "
        "kernels (vector width, BLAS code path), the last bits of a sum differ, "
        "and training carries the difference on like another seed. `"
        + result["command"].strip()
        + f"` reran {len(result['stages'])} stages of a trained copy of the "
        f"default on this {result['native']} machine with {emulated} (the kernels "
        f"of a machine without it); {s['moved']} of {s['tracked']} tracked scores "
        f"moved, {s['inside_seed_band']} inside the seed band; `firth compare`'s "
        f"verdicts: {_verdicts(metrics)}. The band is 2 standard errors "
        "of the difference under seed variation alone (a seed mean: sd/sqrt(n) per "
        "side; one run: the sd over the run's seed folders); `firth compare` "
        "reports a move past a metric's tolerance but inside its band as `noise`, "
        "not as a change. With two seeds a side the band is itself a rough "
        "estimate: a move past it here is a cross-machine move larger than two "
        "seeds suggested, and more seeds firm the band up."
    )
    header = ["score", "this machine", "other kernels", "delta", "seed band", "verdict"]
    rows = [
        [
            f"{m['path'].removeprefix('reports/')}: {m['key']}",
            _num(m["native"]),
            _num(m["other"]),
            _num(m["delta"]),
            "-" if m["seed_band"] is None else f"±{m['seed_band']:.3g}",
            m["status"] or "within tolerance",
        ]
        for m in metrics
    ]
    sec.tables.append(
        ("Tracked scores, this machine's kernels and another's", (header, rows))
    )
    return sec
