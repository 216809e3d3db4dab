"""DVC stage report: reports/index.md and reports/index.html from the committed
metrics and the sources' provenance."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import yaml

from firth import render, runner
from firth.config import load_sections
from firth.embeddings.report import embeddings_section
from firth.embeddings.results import EmbeddingEval, EmbeddingTrain
from firth.findings import findings, scorecard
from firth.io import atomic_path, read_json, write_text
from firth.lm.report import lm_section
from firth.lm.results import LmEval, LmTrain
from firth.nli.report import nli_section
from firth.nli.results import NliEval, NliTrain
from firth.nmt.report import nmt_section
from firth.nmt.results import NmtEval, NmtTrain
from firth.partial import partial_input_section
from firth.report import (
    not_run_section,
    parallel_section,
    settings_table,
    sources_section,
    tagged_section,
    text_section,
    tokenizer_section,
)
from firth.results import load, parse
from firth.tagging.report import tagging_section
from firth.tagging.results import TaggerEval, TaggerTrain


def _maybe(path):
    return read_json(path) if path.exists() else None


def _runs(folder: Path) -> tuple[dict, dict, dict, dict]:
    """train.json, eval.json, eval_detail.json and curve.csv rows of every run
    folder under ``folder`` that has an eval.json, each as {run: ...}. A run trained
    as one stage per seed (seed-<s>/train.json, seed-<s>/curve.csv) is merged."""
    evals = {p.parent.name: read_json(p) for p in sorted(folder.glob("*/eval.json"))}
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
    return sorted(
        (p for p in folder.glob("seed-*") if p.name[5:].isdigit()),
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


def _revision(root) -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=root,
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


def body(args) -> None:
    params_file = runner.params_path(args)
    cfg, seed = load_sections("report", params_file)
    params = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    revision = _revision(args.root)
    root = args.root
    bench = args.benchmarks or root / "benchmarks" / "results"
    data, toks = root / "reports" / "data", root / "reports" / "tokenizers"
    sources = []
    for meta in sorted((root / "reports" / "sources").glob("*/*.json")):
        record = json.loads(meta.read_text(encoding="utf-8"))
        record["group"] = meta.parent.name
        sources.append(record)
    sections = [sources_section(sources)]
    if (stats := _maybe(data / "text.json")) is not None:
        sections.append(text_section(stats, _maybe(data / "subsample_text.json")))
    if (stats := _maybe(data / "parallel.json")) is not None:
        sections.append(
            parallel_section(stats, _maybe(data / "subsample_parallel.json"))
        )
    for path in sorted(data.glob("tagged_*.json")):
        name = path.stem.removeprefix("tagged_")
        sections.append(
            tagged_section(
                name, read_json(path), _maybe(data / f"subsample_tagged_{name}.json")
            )
        )
    tables = {}
    for path in sorted(toks.glob("*.csv")):
        with open(path, encoding="utf-8") as f:
            tables[path.stem] = list(csv.DictReader(f))
    sections.append(tokenizer_section(tables))
    emb = root / "reports" / "embeddings"
    evals = {
        p.parent.name: load(p, EmbeddingEval) for p in sorted(emb.glob("*/eval.json"))
    }

    def card(sec, names, trains, groups, extra=None, only=None):
        sec.tables.append(
            settings_table(
                revision=revision,
                params={n: _lookup(params, n) for n in names},
                data=_data_hashes(trains),
                sources=[
                    s
                    for s in sources
                    if s["group"] in groups and (only is None or s["name"] in only)
                ],
                extra=extra,
            )
        )
        sections.append(sec)

    if evals:
        emb_train = {m: _merged(emb / m)[0] for m in evals}
        card(
            embeddings_section(
                {
                    m: [
                        load(d / "train.json", EmbeddingTrain)
                        for d in _seed_dirs(emb / m)
                    ]
                    for m in evals
                },
                evals,
                {m: _maybe(emb / m / "eval_detail.json") or {} for m in evals},
                _maybe(bench / "embeddings.json"),
                _loss_curves(emb, list(evals)),
            ),
            ["embeddings", "evaluate_embeddings", "subsample.text"],
            emb_train,
            ("text", "eval"),
        )
    else:
        sections.append(
            not_run_section(
                "Word embeddings",
                _not_run(params, ["embeddings.seeds"], "evaluate-embeddings"),
            )
        )
    lm_dir = root / "reports" / "lm"
    lm_train, lm_evals, lm_details, lm_curves = _runs(lm_dir)
    lm_evals = {r: parse(e, LmEval, lm_dir / r) for r, e in lm_evals.items()}
    if lm_evals:
        card(
            lm_section(
                {r: parse(t, LmTrain, lm_dir / r) for r, t in lm_train.items() if t},
                lm_evals,
                lm_details,
                lm_curves,
                _maybe(bench / "lm.json"),
                _maybe(root / "reports" / "audit" / "text.json"),
            ),
            ["lm", "evaluate_lm", "subsample.text", "accel"],
            lm_train,
            ("text",),
        )
    else:
        sections.append(
            not_run_section(
                "Language models", _not_run(params, ["lm.runs"], "evaluate-lm")
            )
        )
    nmt_dir = root / "reports" / "nmt"
    nmt_train, nmt_evals, nmt_details, nmt_curves = _runs(nmt_dir)
    nmt_evals = {r: parse(e, NmtEval, nmt_dir / r) for r, e in nmt_evals.items()}
    if nmt_evals:
        sigs = next(
            (d["signatures"] for d in nmt_details.values() if d.get("signatures")), {}
        )
        card(
            nmt_section(
                {r: parse(t, NmtTrain, nmt_dir / r) for r, t in nmt_train.items() if t},
                nmt_evals,
                nmt_details,
                nmt_curves,
                _maybe(bench / "nmt.json"),
                _maybe(root / "reports" / "audit" / "parallel.json"),
            ),
            ["nmt", "evaluate_nmt", "subsample.parallel", "accel"],
            nmt_train,
            ("parallel",),
            extra={f"sacreBLEU signature ({m})": sig for m, sig in sigs.items()},
        )
    else:
        sections.append(
            not_run_section(
                "Translation", _not_run(params, ["nmt.runs"], "evaluate-nmt")
            )
        )
    tag_dir = root / "reports" / "tagging"
    tag_train, tag_evals, _, tag_curves = _runs(tag_dir)
    tag_evals = {r: parse(e, TaggerEval, tag_dir / r) for r, e in tag_evals.items()}
    if tag_evals:
        card(
            tagging_section(
                {
                    r: [
                        load(d / "train.json", TaggerTrain)
                        for d in _seed_dirs(tag_dir / r)
                    ]
                    for r in tag_evals
                },
                tag_evals,
                tag_curves,
                _maybe(bench / "tagger.json"),
                {
                    p.stem.removeprefix("tagged_"): read_json(p)
                    for p in sorted((root / "reports" / "audit").glob("tagged_*.json"))
                },
            ),
            ["tagger", "evaluate_tagger", "subsample.tagged", "accel"],
            tag_train,
            ("tagged",),
            only=set(params.get("tagger", {}).get("data") or []),
        )
    else:
        sections.append(
            not_run_section(
                "Sequence labelling",
                _not_run(
                    params,
                    ["tagger.data", "tagger.heads", "tagger.seeds"],
                    "evaluate-tagger",
                ),
            )
        )
    nli_dir = root / "reports" / "nli"
    nli_train, nli_evals, _, _ = _runs(nli_dir)
    nli_evals = {r: parse(e, NliEval, nli_dir / r) for r, e in nli_evals.items()}
    nli_seeds = {
        r: [load(d / "train.json", NliTrain) for d in _seed_dirs(nli_dir / r)]
        for r in nli_evals
    }
    if nli_evals:
        card(
            nli_section(nli_evals, nli_seeds),
            ["nli", "evaluate_nli", "accel"],
            nli_train,
            ("nli",),
        )
    else:
        sections.append(nli_section(nli_evals, nli_seeds))
    baselines = None
    if evals or lm_evals or nmt_evals or tag_evals or nli_evals:
        baselines = partial_input_section(
            evals, lm_evals, nmt_evals, tag_evals, nli_evals
        )
    found = findings(emb=evals, lm=lm_evals, nmt=nmt_evals, tagging=tag_evals)
    sections.insert(
        0, scorecard(found, budget_note=_budget(params), baselines=baselines)
    )
    meta = {
        "code revision": revision,
        "seed": str(seed),
        "built from": "reports/data/*.json, reports/tokenizers/*.csv, "
        "reports/embeddings/*/*.json, reports/lm/*/*, reports/nmt/*/*, "
        "reports/tagging/*/*, reports/nli/*/*, reports/audit/*.json, "
        "benchmarks/results/{embeddings,lm,nmt,tagger}.json, "
        "reports/sources/*/*.json",
    }
    figures = {}
    for sec in sections:
        for i, (caption, png) in enumerate(sec.figures):
            name = (
                f"figures/{sec.title.split(':')[0].lower().replace(' ', '-')}-{i}.png"
            )
            with atomic_path(root / "reports" / name) as tmp:
                tmp.write_bytes(png)
            figures[caption] = name
    write_text(
        root / "reports" / "index.md",
        render.report_markdown(cfg.title, meta, sections, figures),
    )
    write_text(
        root / "reports" / "index.html", render.report_html(cfg.title, meta, sections)
    )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument(
        "--benchmarks",
        type=Path,
        default=None,
        help="folder of the benchmark results the report cites "
        "(default: ROOT/benchmarks/results)",
    )
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
