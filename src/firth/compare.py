"""Compare the metrics of two versions of the pipeline: git revisions, DVC
experiments or report folders.

Metrics are read exactly as ``dvc metrics diff`` reads them: every metrics file
that ``dvc.yaml`` declares, nested dicts flattened with dots, numeric leaves only
(lists are opaque to DVC and to this module), delta = new - old. On top of DVC's
numbers each metric gets a rule: which direction is better and how far it may move
in the bad direction before it counts as a regression. Rules match
``<path>:<key>``; the path is a glob (``*`` spans folders) and the key a dotted
pattern whose ``*`` stays inside one segment (``**`` spans any number), so
``summary.*.f1.mean`` matches the seed mean of every init but not the per-seed
values. The first matching rule wins; a metric without one is shown, never flagged.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from firth import render
from firth.embeddings import results as embedding_results
from firth.errors import ConfigError, DataError
from firth.lm import results as lm_results
from firth.nli import results as nli_results
from firth.nmt import results as nmt_results
from firth.tagging import results as tagging_results

Better = Literal["higher", "lower"]
WORKSPACE = "workspace"


@dataclass(frozen=True)
class Rule:
    """``pattern`` = ``<path glob>:<dotted key pattern>``; ``better`` None = shown,
    never flagged (baselines, counts, spreads). A move in the bad direction is a
    regression when it exceeds max(abs_tol, rel_tol * |old|)."""

    pattern: str
    better: Better | None = None
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    why: str = ""

    def matches(self, path: str, key: str) -> bool:
        pglob, _, kpat = self.pattern.partition(":")
        if not fnmatch.fnmatchcase(path, pglob):
            return False
        return _segments_match(key.split("."), kpat.split("."))

    def tolerance(self, old: float) -> float:
        return max(self.abs_tol, self.rel_tol * abs(old))


def _segments_match(parts: list[str], pats: list[str]) -> bool:
    """Dotted-key match: ``*`` inside one segment, ``**`` any number of them."""
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_segments_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and (
        fnmatch.fnmatchcase(parts[0], pats[0]) and _segments_match(parts[1:], pats[1:])
    )


# The tracked metrics of the default DAG: the headline score of every trained model
# (seed means where a run has several seeds). Baselines that need no training
# (copy-source, target-LM-only, only-b, majority, word-only) move only with the data
# and are shown untracked. Tolerances sit near the smallest change worth a look on
# the default data; timings are never tracked (they measure the machine).
def _schema_rules(*modules) -> tuple[Rule, ...]:
    """The rules each task's result schema declares (its tracked fields), named
    after the module that declares them."""
    return tuple(
        Rule(pattern, how["better"], how["abs_tol"], how["rel_tol"], m.__name__)
        for m in modules
        for pattern, how in m.compare_rules()
    )


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("reports/nmt/copy-source/*:**", why="baseline (no model)"),
    Rule("reports/nmt/target-lm/*:**", why="baseline (no source)"),
    *_schema_rules(
        embedding_results, lm_results, nmt_results, tagging_results, nli_results
    ),
)


def load_rules(path: str | Path) -> tuple[Rule, ...]:
    """Rules from a YAML list of {pattern, better, abs_tol, rel_tol, why}; they
    replace the defaults (copy the defaults from ``firth compare --show-rules``)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the rules: {exc}") from None
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: expected a list of rules, got {type(raw).__name__}")
    rules = []
    allowed = {"pattern", "better", "abs_tol", "rel_tol", "why"}
    for i, item in enumerate(raw):
        where = f"{path}: rule {i + 1}"
        if not isinstance(item, dict) or "pattern" not in item:
            raise ConfigError(f"{where}: expected a mapping with a 'pattern'")
        if unknown := set(item) - allowed:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
        if ":" not in str(item["pattern"]):
            raise ConfigError(f"{where}: pattern must be '<path glob>:<key pattern>'")
        if item.get("better") not in (None, "higher", "lower"):
            raise ConfigError(f"{where}: better must be higher, lower or null")
        for k in ("abs_tol", "rel_tol"):
            v = item.get(k, 0.0)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"{where}: {k} must be a number >= 0, got {v!r}")
        rules.append(Rule(**{k: item[k] for k in item}))
    return tuple(rules)


def rules_yaml(rules: tuple[Rule, ...] = DEFAULT_RULES) -> str:
    return yaml.safe_dump(
        [
            {
                "pattern": r.pattern,
                "better": r.better,
                "abs_tol": r.abs_tol,
                "rel_tol": r.rel_tol,
                **({"why": r.why} if r.why else {}),
            }
            for r in rules
        ],
        sort_keys=False,
    )


def flatten(data: object, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of nested dicts, keys joined with dots (as DVC flattens)."""
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        out[prefix] = data
    return out


Metrics = dict[str, dict[str, float]]  # path -> flattened key -> value


Tests = dict[str, str]  # metrics path -> sha256 of the test split it scored


def _test_hash(data: object) -> str | None:
    """The ``test_sha256`` an eval.json records (None for other metrics files)."""
    return data.get("test_sha256") if isinstance(data, dict) else None


def _from_dvc_result(result: dict, label: str, tests: Tests) -> Metrics:
    if err := result.get("error"):
        raise DataError(f"{label}: DVC could not read the metrics: {err}")
    out: Metrics = {}
    for path, entry in sorted(result.get("data", {}).items()):
        if "error" in entry:
            continue  # a declared metrics file absent at that revision
        out[path] = flatten(entry.get("data", {}))
        if sha := _test_hash(entry.get("data")):
            tests[path] = sha
    return out


def declared_metrics(repo: str | Path) -> list[str]:
    """The metrics files ``dvc.yaml`` declares in ``repo``'s workspace, as paths
    relative to the repository root."""
    from dvc.repo import Repo

    with Repo(str(repo)) as r:
        paths = {
            str(Path(out.fs_path).relative_to(r.root_dir))
            for stage in r.index.stages
            for out in stage.outs
            if out.metric
        }
    return sorted(paths)


def load_revisions(
    revs: list[str], repo: str | Path, tests: dict[str, Tests] | None = None
) -> dict[str, Metrics]:
    """Metrics at git revisions or DVC experiment names (``workspace`` = the working
    tree), read by DVC itself; ``tests`` gets each one's test-split hashes."""
    tests = {} if tests is None else tests
    from dvc.repo import Repo
    from dvc.scm import RevError

    try:
        with Repo(str(repo)) as r:
            shown = r.metrics.show(revs=list(revs), hide_workspace=False)
    except RevError as exc:
        raise DataError(f"{repo}: unknown revision or experiment: {exc}") from None
    out = {}
    for rev in revs:
        if rev not in shown:
            raise DataError(f"{repo}: unknown revision or experiment {rev!r}")
        out[rev] = _from_dvc_result(shown[rev], rev, tests.setdefault(rev, {}))
    return out


def load_folder(
    folder: str | Path, declared: list[str], tests: Tests | None = None
) -> Metrics:
    """Metrics from a report folder: a ``reports/`` folder (or a checkout holding
    one); ``declared`` are the metrics paths (``reports/...``) to look for;
    ``tests`` gets the test-split hashes the eval files record."""
    tests = {} if tests is None else tests
    folder = Path(folder)
    checkout = (folder / "reports").is_dir()
    out: Metrics = {}
    for path in declared:
        if checkout:
            file = folder / path
        elif path.startswith("reports/"):  # the folder itself stands for reports/
            file = folder / path.removeprefix("reports/")
        else:
            continue
        if file.exists():
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise DataError(f"{file}: not JSON: {exc}") from None
            out[path] = flatten(data)
            if sha := _test_hash(data):
                tests[path] = sha
    if not out:
        raise DataError(
            f"{folder}: no metrics file found (expected the files dvc.yaml declares, "
            f"e.g. {declared[0] if declared else 'reports/.../eval.json'})"
        )
    return out


def load(
    sources: list[str], repo: str | Path = ".", tests: dict[str, Tests] | None = None
) -> dict[str, Metrics]:
    """Each source is a report folder if such a directory exists, else a revision
    or experiment name; ``tests`` (filled in) gets each source's test-split hashes
    by metrics path."""
    tests = {} if tests is None else tests
    out: dict[str, Metrics] = {}
    revs = [s for s in sources if not Path(s).is_dir()]
    if revs:
        out.update(load_revisions(revs, repo, tests))
    folders = [s for s in sources if Path(s).is_dir()]
    if folders:
        declared = declared_metrics(repo)
        for s in folders:
            out[s] = load_folder(s, declared, tests.setdefault(s, {}))
    return out


def split_warnings(a: Tests, b: Tests, names: tuple[str, str]) -> list[str]:
    """One line per task folder whose runs were scored on different test splits
    on the two sides (their scores then differ by the data as well as the
    models: the default and full profiles, for one)."""
    differ: dict[str, set[tuple[str, str]]] = {}
    for path in sorted(set(a) & set(b)):
        if a[path] != b[path]:
            task = "/".join(path.split("/")[:2])
            differ.setdefault(task, set()).add((a[path][:12], b[path][:12]))
    return [
        f"warning: {task}: {names[0]} and {names[1]} scored different test splits "
        f"(test sha256 {', '.join(f'{x} vs {y}' for x, y in sorted(pairs))}): "
        "a delta there mixes the data with the models"
        for task, pairs in differ.items()
    ]


SEED_RUN = re.compile(r"^(?P<run>.+)-seed\d+$")
NOISE_Z = 2.0  # the band: about 95% of the seed-to-seed differences of two draws


def seed_error(metrics: Metrics, path: str, key: str) -> float | None:
    """How much ``path``'s ``key`` varies with the seed alone, as the standard
    error of the value compared: for a seed mean (``<stat>.mean`` beside its
    ``.sd`` and ``.n``), sd / sqrt(n); for one run's value, the sample sd of that
    value over the run's seed folders (``<run>`` and ``<run>-seed<N>``: the
    default's LM and translation runs); None where there is one seed. Another
    machine (other CPU kernels, another BLAS) changes a trained model's last bits
    and from there its training, so its runs differ like another seed's: this is
    the yardstick `firth compare` holds a move against (benchmarks/
    cross_machine.py measures it)."""
    values = metrics.get(path, {})
    if key.endswith(".mean"):
        stem = key[: -len(".mean")]
        sd, n = values.get(f"{stem}.sd"), values.get(f"{stem}.n")
        if sd is None or not n or n < 2 or math.isnan(sd):
            return None
        return sd / math.sqrt(n)
    where = _seed_group(path)
    if where is None:
        return None
    seeds = [
        v[key]
        for p, v in metrics.items()
        if key in v and _seed_group(p) == where and not _nan(v[key])
    ]
    return statistics.stdev(seeds) if len(seeds) >= 2 else None


def _seed_group(path: str) -> tuple[str, str, str] | None:
    """(task folder, run without its -seed<N>, file name) of a run's metrics file
    ``reports/<task>/<run>/<file>``."""
    parts = path.split("/")
    if len(parts) < 4:
        return None
    run = parts[-2]
    if m := SEED_RUN.match(run):
        run = m["run"]
    return "/".join(parts[:-2]), run, parts[-1]


def _nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def noise_band(a: float | None, b: float | None) -> float | None:
    """NOISE_Z standard errors of the difference of the two sides' values; a side
    without seeds borrows the other's."""
    if a is None and b is None:
        return None
    a = b if a is None else a
    b = a if b is None else b
    return NOISE_Z * math.sqrt(a * a + b * b)


@dataclass(frozen=True)
class Row:
    path: str
    key: str
    old: float | None
    new: float | None
    rule: Rule | None
    noise: float | None = None  # the seed band (noise_band), tracked rows only

    @property
    def delta(self) -> float | None:
        if self.old is None or self.new is None:
            return None
        return self.new - self.old

    @property
    def tracked(self) -> bool:
        return self.rule is not None and self.rule.better is not None

    @property
    def status(self) -> str:
        """'worse' / 'better' beyond tolerance, 'noise' for a move beyond it but
        inside the seed band (another seed or machine moves it as far), 'missing'
        for a tracked metric gone in B, 'added' / 'removed' for untracked ones, ''
        otherwise."""
        if self.old is None:
            return "added"
        if self.new is None:
            return "missing" if self.tracked else "removed"
        if not self.tracked:
            return ""
        if isinstance(self.new, float) and math.isnan(self.new):
            return "worse"
        signed = self.delta if self.rule.better == "higher" else -self.delta
        tol = self.rule.tolerance(self.old)
        if abs(signed) <= tol:
            return ""
        if self.noise is not None and abs(signed) <= self.noise:
            return "noise"
        return "worse" if signed < 0 else "better"


def rule_for(path: str, key: str, rules: tuple[Rule, ...]) -> Rule | None:
    return next((r for r in rules if r.matches(path, key)), None)


def compare(
    a: Metrics, b: Metrics, *, rules: tuple[Rule, ...] = DEFAULT_RULES
) -> list[Row]:
    """Every metric in A or B, sorted by path and key; a tracked one carries the
    seed band of its two sides (``noise_band``)."""
    rows = []
    for path in sorted(set(a) | set(b)):
        ka, kb = a.get(path, {}), b.get(path, {})
        for key in sorted(set(ka) | set(kb)):
            rule = rule_for(path, key, rules)
            noise = None
            if rule is not None and rule.better is not None:
                # a seed mean's spread is each side's own; one run's value is
                # held to the baseline's seeds (B's would widen with the move)
                own = seed_error(b, path, key) if key.endswith(".mean") else None
                noise = noise_band(seed_error(a, path, key), own)
            rows.append(Row(path, key, ka.get(key), kb.get(key), rule, noise))
    return rows


FLAGS = {"worse": "REGRESSED", "missing": "MISSING"}  # the statuses that gate


def regressions(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.status in FLAGS]


def flag_line(r: Row, a: str, b: str) -> str:
    """One regression in words: a tracked metric that got worse, or that B lacks
    (e.g. a run only A has), not a move to None."""
    if r.status == "missing":
        return f"MISSING: {r.path}:{r.key} {r.old} in {a}, absent from {b}"
    return f"REGRESSED: {r.path}:{r.key} {r.old} -> {r.new}"


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    return f"{x:.6g}"


def _tol(r: Row) -> str:
    if not r.tracked:
        return ""
    arrow = "↑" if r.rule.better == "higher" else "↓"
    seeds = "" if r.noise is None else f", seeds ±{_fmt(r.noise)}"
    return f"{arrow} ±{_fmt(r.rule.tolerance(r.old or 0.0))}{seeds}"


def selected(rows: list[Row], *, show: str) -> list[Row]:
    """show: 'all' every metric; 'changed' those that moved or appeared;
    'tracked' every tracked metric plus any other that moved."""
    if show == "all":
        return rows
    moved = [r for r in rows if r.delta != 0 or r.status]
    if show == "changed":
        return moved
    return [r for r in rows if r.tracked or r in moved]


def summary(rows: list[Row]) -> str:
    tracked = [r for r in rows if r.tracked]
    worse = regressions(rows)
    better = [r for r in rows if r.status == "better"]
    noise = [r for r in rows if r.status == "noise"]
    return (
        f"{len(rows)} metrics, {len(tracked)} tracked: {len(worse)} regressed "
        f"beyond tolerance, {len(better)} improved beyond tolerance, "
        f"{len(noise)} moved within the seed spread (noise), "
        f"{sum(1 for r in rows if r.delta not in (0, None))} changed in all"
    )


def render_text(rows: list[Row], a: str, b: str) -> str:
    head = ("path", "metric", a, b, "delta", "tolerance", "flag")
    body = [
        (
            r.path,
            r.key,
            _fmt(r.old),
            _fmt(r.new),
            _fmt(r.delta),
            _tol(r),
            FLAGS.get(r.status, r.status),
        )
        for r in rows
    ]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=False)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (head, tuple("-" * w for w in widths), *body)
    ]
    return "\n".join(lines) + "\n"


def render_json(rows: list[Row], a: str, b: str) -> str:
    return json.dumps(
        {
            "a": a,
            "b": b,
            "metrics": [
                {
                    "path": r.path,
                    "key": r.key,
                    "old": r.old,
                    "new": r.new,
                    "delta": r.delta,
                    "better": r.rule.better if r.rule else None,
                    "tolerance": r.rule.tolerance(r.old or 0.0) if r.tracked else None,
                    "seed_band": r.noise,
                    "status": r.status,
                }
                for r in rows
            ],
            "regressions": len(regressions(rows)),
        },
        indent=2,
    )


def _cells(r: Row) -> dict:
    return {
        "path": r.path,
        "key": r.key,
        "old": _fmt(r.old),
        "new": _fmt(r.new),
        "delta": _fmt(r.delta),
        "tolerance": _tol(r),
        "status": r.status,
    }


def render_markdown(rows: list[Row], a: str, b: str, *, limit: int = 200) -> str:
    """A Markdown table of at most ``limit`` rows (then a line for the rest)."""
    shown = [_cells(r) for r in rows[:limit]]
    return render.compare_markdown(shown, a, b, more=max(0, len(rows) - limit))


def render_html(rows: list[Row], a: str, b: str) -> str:
    return render.compare_html([_cells(r) for r in rows], a, b, summary(rows))
