"""The report page built from what the stages committed under reports/: the data
and tokenizer sections, one card per task (its section, with a Settings table of
the params, code revision, data hashes and sources behind it; or why it has not
run), opened by the Scorecard (stages/report.py writes it)."""

from __future__ import annotations

import csv
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from firth.bias.report import bias_section
from firth.bias.results import BiasEval
from firth.cross_machine_report import cross_machine_section
from firth.dag_report import dag_section
from firth.embeddings.report import embeddings_section
from firth.embeddings.results import EmbeddingDetail, EmbeddingEval, EmbeddingTrain
from firth.evidence import Evidence
from firth.inference import Rule
from firth.io import read_json
from firth.lm.report import lm_section
from firth.lm.results import LmDetail, LmEval, LmTrain
from firth.nli.report import nli_section
from firth.nli.results import NliEval, NliTrain
from firth.nmt.faithfulness_report import attention_section
from firth.nmt.report import nmt_section
from firth.nmt.results import AttentionEval, NmtDetail, NmtEval, NmtTrain
from firth.peers_report import peers_section
from firth.probe.report import probe_section
from firth.probe.results import ProbeEval
from firth.report import (
    Section,
    not_run_section,
    parallel_section,
    settings_table,
    sources_section,
    tagged_section,
    text_section,
    tokenizer_section,
)
from firth.results import load, parse
from firth.scorecard import (
    Scorecard,
    declared,
    load_evidence,
    run_folders,
    scorecard,
)
from firth.scorecard import sections as scorecard_sections
from firth.tagging.report import tagging_section
from firth.tagging.results import TaggerEval, TaggerTrain
from firth.throughput_report import throughput_section

BUILT_FROM = (
    "reports/data/*.json, reports/tokenizers/*.csv, "
    "reports/embeddings/*/*.json, reports/*/*/items.json.gz, "
    "reports/lm/*/*, reports/nmt/*/*, "
    "reports/tagging/*/*, reports/nli/*/*, reports/audit/*.json, "
    "benchmarks/results/{embeddings,lm,nmt,tagger,dag}.json, "
    "reports/sources/*/*.json"
)


def _maybe(path):
    return read_json(path) if path.exists() else None


def _runs(folder: Path, names: set[str] | None) -> tuple[dict, dict, dict, dict]:
    """train.json, eval.json, eval_detail.json and curve.csv rows of every run
    folder under ``folder`` that has an eval.json and that ``names`` keeps (all
    where None), each as {run: ...}. A run trained as one stage per seed
    (seed-<s>/train.json, seed-<s>/curve.csv) is merged."""
    evals = {p.parent.name: read_json(p) for p in run_folders(folder, names)}
    trains, curves = {}, {}
    for r in evals:
        trains[r], rows = _merged(folder / r)
        if rows:
            curves[r] = rows
    return (
        trains,
        evals,
        {r: _maybe(folder / r / "eval_detail.json") or {} for r in evals},
        curves,
    )


def _seed_dirs(folder: Path) -> list[Path]:
    """A run's seed-<s> folders, of the seeds its eval.json scored where it lists
    them (a folder left by a seed since removed from params.yaml is not read)."""
    scored = (_maybe(folder / "eval.json") or {}).get("seeds")
    return sorted(
        (
            p
            for p in folder.glob("seed-*")
            if p.name[5:].isdigit() and (scored is None or int(p.name[5:]) in scored)
        ),
        key=lambda p: int(p.name[5:]),
    )


def _merged(folder: Path) -> tuple[dict, list[dict]]:
    """A run's train.json and curve rows; for per-seed stages, the seeds' train.json
    merged (their ``models`` lists joined, or each seed's record as one model) and
    their curve rows joined (with a ``seed`` column)."""
    rows: list[dict] = []
    seeds = _seed_dirs(folder)
    if not seeds:
        path = folder / "curve.csv"
        if path.exists():
            with open(path, encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        return _maybe(folder / "train.json") or {}, rows
    merged: dict = {}
    models: list[dict] = []
    for d in seeds:
        t = _maybe(d / "train.json") or {}
        seed = int(d.name[5:])
        models += t.get("models") or [{"seed": seed, **t}]
        merged = merged or {k: v for k, v in t.items() if k != "models"}
        if (d / "curve.csv").exists():
            with open(d / "curve.csv", encoding="utf-8") as f:
                rows += [{"seed": str(seed), **r} for r in csv.DictReader(f)]
    merged["models"] = models
    merged["seeds"] = [int(d.name[5:]) for d in seeds]
    return merged, rows


def _loss_curves(folder: Path, methods: list[str]) -> dict:
    """method -> seed -> [(epoch, loss)] from each seed's loss.csv (the iterative
    trainers write one)."""
    out: dict = {}
    for m in methods:
        for d in _seed_dirs(folder / m):
            path = d / "loss.csv"
            if path.exists():
                with open(path, encoding="utf-8") as f:
                    rows = list(csv.DictReader(f))
                out.setdefault(m, {})[int(d.name[5:])] = [
                    (int(r["epoch"]), float(r["loss"])) for r in rows
                ]
    return out


def _revision(where: Path) -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=where,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else "not a git checkout"


# what each trainer calls the sha256 of the data it trained on
HASH_KEYS = ("corpus_sha256", "train_sha256", "examples_sha256")


def _data_hashes(trains: dict[str, dict]) -> dict[str, str]:
    """run -> the sha256 of the training data its (first) seed recorded."""
    out = {}
    for run, t in trains.items():
        if not t:
            continue  # no training (a baseline such as copy-source)
        for m in [t, *(t.get("models") or [])]:
            if h := next((m[k] for k in HASH_KEYS if m.get(k)), ""):
                out[run] = h
                break
        else:
            out[run] = ""
    return out


def _lookup(params: dict, key: str) -> object:
    value = params
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _not_run(params: dict, keys: list[str], stage: str) -> str:
    """Why a task has no results: disabled in params, or not reproduced yet."""
    for key in keys:
        if not _lookup(params, key):
            return (
                f"`{key}` is empty in params.yaml, so DVC defines no {stage} "
                "stage; list runs there to enable it."
            )
    return f"configured, but no results yet: run `dvc repro {stage}`."


def _budget(params: dict) -> str:
    """The profile's budgets in one sentence, for the findings' verdicts."""
    sub = params.get("subsample", {})

    def amount(value, unit: str) -> str:
        return f"all {unit}" if not value else f"{value:,} {unit}"

    return (
        "Budgets of this profile: "
        f"{amount(sub.get('text', {}).get('max_train_tokens'), 'training tokens')} "
        "for the word vectors and language models, "
        f"{amount(sub.get('parallel', {}).get('max_train_pairs'), 'training pairs')} "
        "for translation, "
        f"{amount(sub.get('tagged', {}).get('max_train_sentences'), 'sentences')} "
        "per tagging training set (`subsample` in params.yaml; the other budgets "
        "are in each card's Settings table)."
    )


def read_sources(reports: Path) -> list[dict]:
    """Every fetched source's provenance record (under ``reports``/sources), with
    its group."""
    out = []
    for meta in sorted((reports / "sources").glob("*/*.json")):
        record = json.loads(meta.read_text(encoding="utf-8"))
        record["group"] = meta.parent.name
        out.append(record)
    return out


def data_sections(reports: Path, sources: list[dict]) -> list[Section]:
    """Sources, the prepared corpora and the tokenizers."""
    data, toks = reports / "data", reports / "tokenizers"
    sections = [sources_section(sources)]
    if (stats := _maybe(data / "text.json")) is not None:
        sections.append(text_section(stats, _maybe(data / "subsample_text.json")))
    if (stats := _maybe(data / "parallel.json")) is not None:
        sub = _maybe(data / "subsample_parallel.json")
        sections.append(parallel_section(stats, sub))
    for path in sorted(data.glob("tagged_*.json")):
        name = path.stem.removeprefix("tagged_")
        sub = _maybe(data / f"subsample_tagged_{name}.json")
        sections.append(tagged_section(name, read_json(path), sub))
    tables = {}
    for path in sorted(toks.glob("*.csv")):
        with open(path, encoding="utf-8") as f:
            tables[path.stem] = list(csv.DictReader(f))
    sections.append(tokenizer_section(tables))
    return sections


@dataclass
class Page:
    """The report being built: its inputs (the reports folder, params, revision,
    sources, the benchmark folder), its sections so far, and each task's
    evaluations (for the scorecard)."""

    reports: Path
    params: dict
    revision: str
    sources: list[dict]
    bench: Path
    sections: list[Section] = field(default_factory=list)
    evals: dict[str, dict] = field(default_factory=dict)
    ev: Evidence | None = None  # the per-item evidence the comparisons are tested on

    def folder(self, task: str) -> Path:
        return self.reports / task

    def evaluated(self, task: str, schema, detail=None) -> tuple:
        """reports/<task>/'s folder and its runs (train, eval through ``schema``,
        eval_detail through ``detail`` where given, curve rows); the evaluations
        are kept for the scorecard."""
        folder = self.folder(task)
        train, evals, details, curves = _runs(folder, declared(self.params)[task])
        evals = {r: parse(e, schema, folder / r) for r, e in evals.items()}
        if detail is not None:
            details = {
                r: parse(d, detail, folder / r / "eval_detail.json")
                for r, d in details.items()
                if d
            }
        self.evals[task] = evals
        return folder, train, evals, details, curves

    def card(self, sec, names, trains, groups, extra=None, only=None) -> None:
        """``sec`` with its Settings table: the ``names`` params, the training
        data hashes of ``trains`` and the sources of ``groups`` (``only`` those
        names, if given)."""
        sec.tables.append(
            settings_table(
                revision=self.revision,
                params={n: _lookup(self.params, n) for n in names},
                data=_data_hashes(trains),
                sources=[
                    s
                    for s in self.sources
                    if s["group"] in groups and (only is None or s["name"] in only)
                ],
                extra=extra,
            )
        )
        self.sections.append(sec)

    def not_run(self, title: str, keys: list[str], stage: str) -> None:
        self.sections.append(not_run_section(title, _not_run(self.params, keys, stage)))

    def benchmark(self, name: str) -> dict | None:
        return _maybe(self.bench / f"{name}.json")

    def audit(self, name: str) -> dict | None:
        return _maybe(self.reports / "audit" / f"{name}.json")


def embeddings_card(page: Page) -> None:
    emb = page.folder("embeddings")
    evals = {
        p.parent.name: load(p, EmbeddingEval) for p in sorted(emb.glob("*/eval.json"))
    }
    page.evals["emb"] = evals
    if not evals:
        page.not_run("Word embeddings", ["embeddings.seeds"], "evaluate-embeddings")
        return
    trains = {
        m: [load(d / "train.json", EmbeddingTrain) for d in _seed_dirs(emb / m)]
        for m in evals
    }
    sec = embeddings_section(
        trains,
        evals,
        {
            m: load(emb / m / "eval_detail.json", EmbeddingDetail)
            for m in evals
            if (emb / m / "eval_detail.json").exists()
        },
        page.benchmark("embeddings"),
        _loss_curves(emb, list(evals)),
        ev=page.ev,
    )
    page.card(
        sec,
        ["embeddings", "evaluate_embeddings", "subsample.text"],
        {m: _merged(emb / m)[0] for m in evals},
        ("text", "eval"),
    )


def bias_card(page: Page) -> None:
    folder = page.folder("bias")
    evals = {
        p.parent.name: load(p, BiasEval) for p in sorted(folder.glob("*/eval.json"))
    }
    page.evals["bias"] = evals
    if not evals:
        page.not_run("Bias in word vectors", ["evaluate_bias"], "evaluate-bias")
        return
    page.card(
        bias_section(evals),
        ["evaluate_bias", "embeddings.seeds"],
        {},
        ("text",),
    )


def lm_card(page: Page) -> None:
    lm_dir, train, evals, details, curves = page.evaluated("lm", LmEval, LmDetail)
    if not evals:
        page.not_run("Language models", ["lm.runs"], "evaluate-lm")
        return
    sec = lm_section(
        {r: parse(t, LmTrain, lm_dir / r) for r, t in train.items() if t},
        evals,
        details,
        curves,
        page.benchmark("lm"),
        page.audit("text"),
        ev=page.ev,
    )
    page.card(sec, ["lm", "evaluate_lm", "subsample.text", "accel"], train, ("text",))


def nmt_card(page: Page) -> None:
    nmt_dir, train, evals, details, curves = page.evaluated("nmt", NmtEval, NmtDetail)
    if not evals:
        page.not_run("Translation", ["nmt.runs"], "evaluate-nmt")
        return
    sigs = next((d.signatures for d in details.values() if d.signatures), {})
    sec = nmt_section(
        {r: parse(t, NmtTrain, nmt_dir / r) for r, t in train.items() if t},
        evals,
        details,
        curves,
        page.benchmark("nmt"),
        page.audit("parallel"),
        ev=page.ev,
    )
    page.card(
        sec,
        ["nmt", "evaluate_nmt", "subsample.parallel", "accel"],
        train,
        ("parallel",),
        extra={f"sacreBLEU signature ({m})": sig for m, sig in sigs.items()},
    )


def probe_card(page: Page) -> None:
    keep = declared(page.params)["probe"]
    evals = {
        p.parent.name: load(p, ProbeEval)
        for p in run_folders(page.folder("probe"), keep)
    }
    page.evals["probe"] = evals
    if not evals:
        page.not_run(
            "Probes", ["probe.lm_runs", "probe.vectors"], "probe-lm, probe-vectors"
        )
        return
    page.card(
        probe_section(evals),
        ["probe", "lm.runs", "embeddings.seeds"],
        {},
        ("tagged", "text"),
    )


def attention_card(page: Page) -> None:
    keep = declared(page.params)["attention"]
    folder = page.folder("attention")
    evals = {p.parent.name: load(p, AttentionEval) for p in run_folders(folder, keep)}
    page.evals["attention"] = evals
    if not evals:
        page.not_run(
            "Is attention an explanation?",
            ["evaluate_attention.runs"],
            "evaluate-attention",
        )
        return
    page.card(
        attention_section(evals, page.ev),
        ["evaluate_attention", "nmt.runs"],
        {},
        ("parallel",),
    )


def tagging_card(page: Page) -> None:
    tag_dir, train, evals, _, curves = page.evaluated("tagging", TaggerEval)
    if not evals:
        keys = ["tagger.data", "tagger.heads", "tagger.seeds"]
        page.not_run("Sequence labelling", keys, "evaluate-tagger")
        return
    audits = sorted((page.reports / "audit").glob("tagged_*.json"))
    sec = tagging_section(
        {
            r: [load(d / "train.json", TaggerTrain) for d in _seed_dirs(tag_dir / r)]
            for r in evals
        },
        evals,
        curves,
        page.benchmark("tagger"),
        {p.stem.removeprefix("tagged_"): read_json(p) for p in audits},
        ev=page.ev,
    )
    page.card(
        sec,
        ["tagger", "evaluate_tagger", "subsample.tagged", "accel"],
        train,
        ("tagged",),
        only=set(page.params.get("tagger", {}).get("data") or []),
    )


def nli_card(page: Page) -> None:
    nli_dir, train, evals, _, _ = page.evaluated("nli", NliEval)
    seeds = {
        r: [load(d / "train.json", NliTrain) for d in _seed_dirs(nli_dir / r)]
        for r in evals
    }
    if evals:
        keys = ["nli", "evaluate_nli", "accel"]
        page.card(nli_section(evals, seeds), keys, train, ("nli",))
    else:  # the NLI section says itself how to enable it
        page.sections.append(nli_section(evals, seeds))


def build(
    reports: Path, params: dict, bench: Path, *, rule: Rule, margin: float
) -> tuple[list[Section], dict, Scorecard]:
    """Every section of the report, the Scorecard and the partial-input baselines
    first, the page's metadata (revision, built-from), and the scorecard."""
    revision = _revision(reports)
    sources = read_sources(reports)
    page = Page(
        reports, params, revision, sources, bench, data_sections(reports, sources)
    )
    page.ev = load_evidence(reports, rule, margin, params)
    for card in (
        embeddings_card,
        bias_card,
        lm_card,
        probe_card,
        nmt_card,
        attention_card,
        tagging_card,
        nli_card,
    ):
        card(page)
    for bench in (
        dag_section(page.benchmark("dag")),
        throughput_section(page.benchmark("throughput")),
        cross_machine_section(page.benchmark("cross_machine")),
        peers_section(page.benchmark("peers")),
    ):
        if bench is not None:
            page.sections.append(bench)
    card = scorecard(page.ev)
    lead = scorecard_sections(
        card, budget_note=_budget(params), nli=bool(page.evals.get("nli"))
    )
    meta = {"code revision": revision, "built from": BUILT_FROM}
    return [*lead, *page.sections], meta, card


def figure_name(title: str, i: int) -> str:
    """Where a section's i-th figure goes under reports/ (letters, digits and
    dashes only: a '?' in a file name would end its URL's path)."""
    slug = re.sub(r"[^a-z0-9-]", "", title.split(":")[0].lower().replace(" ", "-"))
    return f"figures/{slug}-{i}.png"
