"""The ``firth`` command line (typer)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from firth.config import SECTIONS, check_top_level, load_section, load_sources
from firth.errors import FirthError
from firth.limits import (
    MAX_BEAM,
    MAX_SAMPLES,
    MAX_TEMPERATURE,
    MAX_TOKENS,
    Beam,
    Chars,
    K,
    Samples,
    Temperature,
    Tokens,
)
from firth.limits import check as check_range
from firth.sources.registry import REGISTRY

app = typer.Typer(
    help="Firth: the classic neural NLP canon, honestly evaluated.",
    no_args_is_help=True,
)


@app.command()
def sources() -> None:
    """List the registered data sources with their origin and licence."""
    for name, reg in sorted(REGISTRY.items()):
        where = reg.package or reg.url or reg.id
        typer.echo(f"{name:<18} {reg.kind:<8} {reg.format:<11} {where}")
        typer.echo(f"{'':<18} {reg.license}")
    typer.echo(
        "also: bible:<VERSION>, bible-pair:<SRC>-<TGT>, local:<path>, "
        "or a mapping with kind url|hf|local"
    )


def all_sections() -> dict:
    """Every params section with its schema, the tasks' own included."""
    from firth.audit.config import AuditParams
    from firth.bias.config import EvaluateBias
    from firth.embeddings.config import Embeddings, EvaluateEmbeddings
    from firth.lm.config import EvaluateLm, Lm
    from firth.nli.config import EvaluateNli, Nli
    from firth.nmt.config import EvaluateAttention, EvaluateNmt, Nmt
    from firth.probe.config import Probe
    from firth.tagging.config import EvaluateTagger, Tagger

    return {
        **SECTIONS,
        "audit": AuditParams,
        "embeddings": Embeddings,
        "evaluate_embeddings": EvaluateEmbeddings,
        "evaluate_bias": EvaluateBias,
        "lm": Lm,
        "evaluate_lm": EvaluateLm,
        "nmt": Nmt,
        "evaluate_nmt": EvaluateNmt,
        "evaluate_attention": EvaluateAttention,
        "probe": Probe,
        "tagger": Tagger,
        "evaluate_tagger": EvaluateTagger,
        "nli": Nli,
        "evaluate_nli": EvaluateNli,
    }


@app.command("deps")
def deps(
    root: Annotated[Path, typer.Option(help="The repository root.")] = Path("."),
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Rewrite dvc.yaml's code deps and regenerate profiles/*/dvc.yaml.",
        ),
    ] = False,
) -> None:
    """Check that each stage's code deps in dvc.yaml are exactly the import closure
    of its script, and that every profile project's dvc.yaml is generated from it."""
    from firth.code_deps import for_project, prefix_of, profile_projects, rewrite

    main = root / "dvc.yaml"
    text = main.read_text(encoding="utf-8")
    want = {main: rewrite(text, root)}
    for project in profile_projects(root):
        want[project / "dvc.yaml"] = for_project(
            want[main], prefix=prefix_of(root, project)
        )
    stale = [p for p, t in want.items() if p.read_text(encoding="utf-8") != t]
    if write:
        for path in stale:
            path.write_text(want[path], encoding="utf-8")
            typer.echo(f"wrote {path}")
        return
    for path in stale:
        typer.echo(f"{path}: code deps differ from the import closure", err=True)
    if stale:
        typer.echo("fix: firth deps --write", err=True)
        raise typer.Exit(1)
    typer.echo(f"{len(want)} dvc.yaml files: code deps are the import closure")


@app.command("check-params")
def check_params(path: Path = Path("params.yaml")) -> None:
    """Validate every section of a params file; print the first error on one line."""
    try:
        check_top_level(path)
        for name, schema in all_sections().items():
            load_section(name, path, schema=schema)
        for group in ("text", "parallel", "tagged", "eval"):
            load_sources(group, path)
        from firth.param_refs import check_references

        check_references(path)
    except FirthError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{path}: ok")


@app.command()
def compare(
    a: Annotated[
        str | None,
        typer.Argument(
            help="Baseline: git revision, DVC experiment name or report folder."
        ),
    ] = None,
    b: Annotated[
        str, typer.Argument(help="Candidate (same kinds; default: the working tree).")
    ] = "workspace",
    repo: Annotated[Path, typer.Option(help="The DVC repository to read.")] = Path("."),
    rules: Annotated[
        Path | None,
        typer.Option(help="YAML rules replacing the defaults (see --show-rules)."),
    ] = None,
    show: Annotated[
        str,
        typer.Option(
            help="tracked: tracked metrics and any that moved; changed: only those "
            "that moved; all: every metric."
        ),
    ] = "tracked",
    html: Annotated[
        Path | None, typer.Option(help="Also write the comparison as an HTML page.")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write every metric as JSON.")
    ] = None,
    fail: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when a tracked metric regressed beyond its tolerance.",
        ),
    ] = False,
    show_rules: Annotated[
        bool,
        typer.Option("--show-rules", help="Print the default rules as YAML and exit."),
    ] = False,
) -> None:
    """Every metric of A and B with the delta, flagging tracked metrics that moved
    beyond their tolerance in the bad direction (numbers as `dvc metrics diff`)."""
    from firth import compare as cmp
    from firth.io import write_text

    if show_rules:
        typer.echo(cmp.rules_yaml(), nl=False)
        return
    if a is None:
        typer.echo("error: give the baseline A (e.g. main, HEAD~1, exp-name)", err=True)
        raise typer.Exit(2)
    if show not in ("tracked", "changed", "all"):
        typer.echo(f"error: --show: tracked, changed or all, not {show}", err=True)
        raise typer.Exit(2)
    try:
        table = cmp.load_rules(rules) if rules else cmp.DEFAULT_RULES
        tests: dict = {}
        metrics = cmp.load([a, b], repo, tests)
    except FirthError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for line in cmp.split_warnings(tests.get(a, {}), tests.get(b, {}), (a, b)):
        typer.echo(line, err=True)
    rows = cmp.compare(metrics[a], metrics[b], rules=table)
    typer.echo(cmp.render_text(cmp.selected(rows, show=show), a, b), nl=False)
    typer.echo(cmp.summary(rows))
    for r in cmp.regressions(rows):
        typer.echo(cmp.flag_line(r, a, b))
    if html:
        write_text(html, cmp.render_html(cmp.selected(rows, show=show), a, b))
        typer.echo(f"html: {html}")
    if json_out:
        write_text(json_out, cmp.render_json(rows, a, b))
        typer.echo(f"json: {json_out}")
    if fail and cmp.regressions(rows):
        raise typer.Exit(1)


def _as_json(record) -> str:
    """``record`` as the JSON it is saved as: an undefined interval (NaN) equals
    itself here, as it does not in a Python comparison."""
    return json.dumps(record.model_dump(mode="json", by_alias=True), sort_keys=True)


@app.command("scorecard")
def scorecard_cmd(
    repo: Annotated[
        Path,
        typer.Option(
            help="A profile's project (its params.yaml and reports/): . or "
            "profiles/full."
        ),
    ] = Path("."),
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Exit 1 unless the committed reports/scorecard.json holds exactly "
            "these tests.",
        ),
    ] = False,
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown", help="Print the findings as a Markdown table (README)."
        ),
    ] = False,
    beside: Annotated[
        Path | None,
        typer.Option(help="With --markdown: another profile's project, in 2 columns."),
    ] = None,
    names: Annotated[
        str,
        typer.Option(help="With --markdown: the two profiles' column names."),
    ] = "full,default",
) -> None:
    """Every known finding and partial-input baseline tested again from the
    committed files alone (reports/*/*/items.json.gz, eval.json, the taggers'
    train.json): nothing is trained or read from data/."""
    from firth.results import load
    from firth.scorecard import Scorecard, lines, recompute
    from firth.scorecard import markdown as table

    try:
        card = recompute(repo)
        other = recompute(beside) if beside is not None else None
    except FirthError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if markdown:
        first, _, second = names.partition(",")
        typer.echo(table(card, other, (first, second)))
    else:
        for line in lines(card):
            typer.echo(line)
    if not check:
        return
    path = repo / "reports" / "scorecard.json"
    try:
        committed = load(path, Scorecard)
    except (FirthError, OSError) as exc:
        typer.echo(f"error: {path}: {exc}", err=True)
        raise typer.Exit(2) from None
    if _as_json(committed) != _as_json(card):
        diff = [
            f.key
            for f, g in zip(card.findings, committed.findings, strict=False)
            if _as_json(f) != _as_json(g)
        ]
        typer.echo(
            f"{path} differs from the recomputed scorecard"
            + (f" (findings: {', '.join(diff)})" if diff else "")
            + ": rerun `dvc repro report`",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(f"{path}: the committed scorecard is what its files give")


METHODS_HELP = (
    "sgns, subword, ppmi-svd, glove, gensim or w2v-<sg|cbow>-<ns|hs> "
    "(word2vec's own loop)"
)


def _params(repo: Path) -> dict:
    """params.yaml as a mapping; a missing or unreadable file is one line."""
    from firth.config import read_params

    path = repo / "params.yaml"
    if not path.exists():
        typer.echo(f"error: {path}: not found (is --repo a Firth checkout?)", err=True)
        raise typer.Exit(2)
    return _asked(lambda: read_params(path))


def _text(data: bytes, where: str, what: str) -> list[str]:
    """``data`` as lines of strict UTF-8 text, with at least one that is not
    blank; otherwise one line naming ``where`` and exit 2."""
    if b"\x00" in data:
        typer.echo(f"error: {where}: binary data, not text", err=True)
        raise typer.Exit(2)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        typer.echo(
            f"error: {where}: not UTF-8 at byte {exc.start} "
            f"({data[exc.start : exc.start + 1]!r})",
            err=True,
        )
        raise typer.Exit(2) from None
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        typer.echo(f"error: {where}: no text to {what}", err=True)
        raise typer.Exit(2)
    return lines


def _stdin(what: str) -> list[str]:
    import sys

    return _text(sys.stdin.buffer.read(), "stdin", what)


def _ranged(kind, option: str):
    """A typer callback validating an option with the shared type ``kind`` of
    firth.limits (the API and check-params use the same ranges): a bad value is
    one line naming ``option`` and the range, exit 2."""

    def callback(value):
        if value is None:
            return None
        try:
            return check_range(kind, value, option)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    return callback


def _asked(fn):
    """Run a query; its FirthError (a run not trained yet, an unknown word) is one
    line on stderr and exit code 2."""
    try:
        return fn()
    except FirthError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def neighbours(
    method: Annotated[str, typer.Argument(help=METHODS_HELP)],
    words: Annotated[list[str], typer.Argument(help="One or more words.")],
    k: Annotated[
        int, typer.Option("-k", callback=_ranged(K, "-k"), help="Neighbours per word.")
    ] = 10,
    seed: Annotated[int | None, typer.Option(help="Default: the first seed.")] = None,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """The nearest words by cosine in a trained embedding run (subword: also for
    words it never saw, from their n-grams)."""
    from firth.query import embeddings as q

    params = _params(repo)
    folder = _asked(lambda: q.vectors_folder(repo, params, method, seed))
    for row in _asked(lambda: q.neighbours(folder, words, k=k)):
        if not row["neighbours"]:
            typer.echo(f"{row['word']}: not in the vocabulary (no vector)")
            continue
        oov = "" if row["in_vocab"] else "  (out of vocabulary: from its n-grams)"
        typer.echo(f"{row['word']}{oov}")
        for word, cos in row["neighbours"]:
            typer.echo(f"  {cos:7.4f}  {word}")


@app.command()
def probe(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Probed runs or methods (default: every one)."),
    ] = None,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """POS probes of the probe stages (reports/probe/): per representation, model
    (trained or untrained), layer and probe, the test accuracy on the task and on
    its control task and the selectivity (task minus control), seed means."""
    from firth.probe.results import ProbeEval
    from firth.results import load

    folder = repo / "reports" / "probe"
    found = sorted(p.parent.name for p in folder.glob("*/eval.json"))
    if not found:
        typer.echo(
            f"error: {folder}: no probe results (dvc repro probe-lm probe-vectors)",
            err=True,
        )
        raise typer.Exit(2)
    unknown = [n for n in names or [] if n not in found]
    if unknown:
        typer.echo(
            f"error: no probe results for {', '.join(unknown)} "
            f"(probed: {', '.join(found)})",
            err=True,
        )
        raise typer.Exit(2)
    typer.echo(
        f"{'representation':<16} {'model':<10} {'layer':>5} {'probe':<7} "
        f"{'POS acc':>8} {'control':>8} {'select.':>8}"
    )
    for name in names or found:
        e = _asked(lambda n=name: load(folder / n / "eval.json", ProbeEval))
        groups: dict = {}
        for r in e.rows:
            groups.setdefault((r.model, r.layer, r.probe), []).append(r)
        for (model, layer, kind), rs in sorted(groups.items()):

            def mean(f, rs=rs):
                return sum(f(r) for r in rs) / len(rs)

            typer.echo(
                f"{name:<16} {model:<10} {layer:>5} {kind:<7} "
                f"{mean(lambda r: r.task_accuracy):8.2f} "
                f"{mean(lambda r: r.control_accuracy):8.2f} "
                f"{mean(lambda r: r.selectivity):8.2f}"
            )


@app.command()
def bias(
    method: Annotated[str, typer.Argument(help=METHODS_HELP)],
    tests: Annotated[
        list[str] | None,
        typer.Argument(help="WEAT tests (weat1..weat10); default: every one."),
    ] = None,
    x: Annotated[
        str | None, typer.Option(help="Target words X, comma-separated.")
    ] = None,
    y: Annotated[str | None, typer.Option(help="Target words Y.")] = None,
    a: Annotated[str | None, typer.Option(help="Attribute words A.")] = None,
    b: Annotated[str | None, typer.Option(help="Attribute words B.")] = None,
    min_words: Annotated[
        int, typer.Option(help="Fewest covered words per set to run a test.")
    ] = 4,
    permutations: Annotated[
        int, typer.Option(help="Re-partitions for the p-value (exact if fewer).")
    ] = 10_000,
    seed: Annotated[int | None, typer.Option(help="Default: the first seed.")] = None,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """WEAT effect sizes (Caliskan et al. 2017) and permutation p-values on a
    trained run's vectors, as trained and after hard debiasing (Bolukbasi et al.
    2016): the named tests, or one given by --x --y --a --b (X closer to A and Y
    to B gives d > 0)."""
    from firth.query import bias as q
    from firth.query import embeddings as qe

    params = _params(repo)
    folder = _asked(lambda: qe.vectors_folder(repo, params, method, seed))
    given = [v is not None for v in (x, y, a, b)]
    if any(given) and not all(given):
        typer.echo("error: a custom test needs all of --x --y --a --b", err=True)
        raise typer.Exit(2)
    if all(given):
        chosen = [_asked(lambda: q.custom_test(x, y, a, b))]
    else:
        chosen = _asked(lambda: q.named_tests(tests or list(q.WEAT)))
    rows = _asked(
        lambda: q.run_weat(
            folder, chosen, min_words=min_words, permutations=permutations, seed=0
        )
    )
    typer.echo(
        f"{'test':<8} {'coverage X/Y/A/B':<17} {'d':>7} {'p':>7}  "
        f"{'d debiased':>10} {'p':>7}"
    )
    for r in rows:
        cov = "/".join(str(r["coverage"][k]) for k in "xyab")
        if not r["ran"]:
            typer.echo(
                f"{r['test']:<8} {cov:<17} not run (< {min_words} words in a set)"
            )
            continue
        typer.echo(
            f"{r['test']:<8} {cov:<17} {r['d']:+7.3f} {r['p']:7.4f}  "
            f"{r['d_debiased']:+10.3f} {r['p_debiased']:7.4f}"
        )
        typer.echo(f"         {r['x']} vs {r['y']}, {r['a']} vs {r['b']}")
        missing = [w for k in "xyab" for w in r["missing"][k]]
        if missing:
            typer.echo(f"         missing: {', '.join(missing)}")


@app.command()
def analogy(
    method: Annotated[str, typer.Argument(help=METHODS_HELP)],
    a: Annotated[str, typer.Argument(help="a in a : b :: c : ?")],
    b: Annotated[str, typer.Argument()],
    c: Annotated[str, typer.Argument()],
    k: Annotated[
        int, typer.Option("-k", callback=_ranged(K, "-k"), help="Answers to list.")
    ] = 5,
    seed: Annotated[int | None, typer.Option(help="Default: the first seed.")] = None,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """a : b :: c : ? by 3CosAdd under the evaluation's rules (the
    evaluate_embeddings.restrict most frequent words, a, b and c excluded)."""
    from firth.query import embeddings as q

    params = _params(repo)
    restrict = int(params.get("evaluate_embeddings", {}).get("restrict", 0))
    folder = _asked(lambda: q.vectors_folder(repo, params, method, seed))
    answers = _asked(lambda: q.analogy(folder, a, b, c, k=k, restrict=restrict))
    typer.echo(f"{a} : {b} :: {c} : ?")
    for word, cos in answers:
        typer.echo(f"  {cos:7.4f}  {word}")


@app.command()
def translate(
    run: Annotated[str, typer.Argument(help="A run of nmt.runs, e.g. bahdanau.")],
    beam: Annotated[
        int | None,
        typer.Option(
            callback=_ranged(Beam, "--beam"),
            help=f"Beam size, 1-{MAX_BEAM} (default evaluate_nmt.beam).",
        ),
    ] = None,
    greedy: Annotated[bool, typer.Option(help="Greedy decoding (beam 1).")] = False,
    max_chars: Annotated[
        int,
        typer.Option(
            callback=_ranged(Chars, "--max-chars"),
            help="Longest line to translate (characters).",
        ),
    ] = 4_000,
    attention: Annotated[
        bool,
        typer.Option(help="Also print each output piece's most attended source piece."),
    ] = False,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """Translate stdin, one sentence per line, to stdout with a trained run."""

    from firth.query.translate import translate as run_translate

    lines = _stdin("translate")
    for i, line in enumerate(lines, 1):
        if len(line) > max_chars:
            typer.echo(
                f"error: stdin line {i}: {len(line)} characters, over --max-chars "
                f"{max_chars} (decoding time grows with the line)",
                err=True,
            )
            raise typer.Exit(2)
    rows = _asked(
        lambda: run_translate(
            repo,
            repo / "params.yaml",
            run,
            lines,
            beam=1 if greedy else beam,
            attention=attention,
        )
    )
    for row in rows:
        typer.echo(row["output"])
        align = row["alignment"]
        if attention and align is None:
            typer.echo(f"  ({run} has no attention)", err=True)
        elif align:
            for piece, weights in zip(align["output"], align["weights"], strict=True):
                j = max(range(len(weights)), key=weights.__getitem__)
                typer.echo(f"  {piece:>14} <- {align['source'][j]} ({weights[j]:.2f})")
    aligned = [row for row in rows if row["alignment"]]
    if aligned:
        typer.echo(f"({aligned[0]['attention_note']})", err=True)


@app.command()
def generate(
    run: Annotated[str, typer.Argument(help="A run of lm.runs, e.g. lstm.")],
    prompt: Annotated[str, typer.Option(help="The text to continue.")] = "",
    samples: Annotated[
        int,
        typer.Option(
            callback=_ranged(Samples, "--samples"),
            help=f"How many continuations, 1-{MAX_SAMPLES}.",
        ),
    ] = 3,
    tokens: Annotated[
        int | None,
        typer.Option(
            callback=_ranged(Tokens, "--tokens"),
            help=f"Tokens each, 1-{MAX_TOKENS} (default evaluate_lm.sample_tokens).",
        ),
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option(
            callback=_ranged(Temperature, "--temperature"),
            help=f"Above 0, at most {MAX_TEMPERATURE:g} "
            "(default evaluate_lm.temperature).",
        ),
    ] = None,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """Sample continuations of --prompt from a trained language model."""
    from firth.query.lm import generate as run_generate

    out = _asked(
        lambda: run_generate(
            repo,
            repo / "params.yaml",
            run,
            prompt,
            samples=samples,
            tokens=tokens,
            temperature=temperature,
        )
    )
    for text in out:
        typer.echo(f"{prompt} | {text}")


@app.command()
def score(
    run: Annotated[str, typer.Argument(help="A run of lm.runs, e.g. kn5.")],
    file: Annotated[Path, typer.Argument(help="Text to score, one line per line.")],
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """Perplexity and bits per character of any text under a trained language
    model (the text prepared as the corpus was)."""
    from firth.query.lm import score as run_score

    if not file.is_file():
        typer.echo(f"error: {file}: not found", err=True)
        raise typer.Exit(2)
    lines = _text(file.read_bytes(), str(file), "score")
    out = _asked(lambda: run_score(repo, repo / "params.yaml", run, lines))
    typer.echo(
        f"{file}: perplexity {out['perplexity']:.2f}, "
        f"{out['bits_per_char']:.4f} bits/char, {out['tokens']} tokens, "
        f"{out['characters']} characters, OOV {100 * out['oov_rate']:.2f}%"
    )


@app.command()
def arpa(
    run: Annotated[str, typer.Argument(help="A Kneser-Ney run of lm.runs, e.g. kn5.")],
    out: Annotated[Path, typer.Argument(help="The ARPA file to write.")],
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """Write a trained Kneser-Ney model as a standard ARPA back-off file (KenLM's
    `kenlm.Model(path)` then scores text as `firth score` does)."""
    from firth.query.lm import export_arpa

    counts = _asked(lambda: export_arpa(repo, repo / "params.yaml", run, out))
    typer.echo(
        f"{out}: " + ", ".join(f"{c:,} {k}-grams" for k, c in enumerate(counts, 1))
    )


@app.command()
def tag(
    run: Annotated[str, typer.Argument(help="<data>-<head>, e.g. wnut16-crf.")],
    seed: Annotated[int | None, typer.Option(help="Default: the first seed.")] = None,
    init: Annotated[
        str | None, typer.Option(help="random or sgns (default: the last trained).")
    ] = None,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
) -> None:
    """Tag stdin (CoNLL, or plain text one sentence per line) with a trained
    tagger; CoNLL out (token, tag), and the entity spans of BIO tags."""

    from firth.query.tag import read_input, spans
    from firth.query.tag import tag as run_tag

    sentences = read_input("\n".join(_stdin("tag")))
    tags, bio = _asked(
        lambda: run_tag(
            repo, repo / "params.yaml", run, sentences, seed=seed, init=init
        )
    )
    for tokens, sent_tags in zip(sentences, tags, strict=True):
        for token, t in zip(tokens, sent_tags, strict=True):
            typer.echo(f"{token}\t{t}")
        if bio:
            for kind, text in spans(tokens, sent_tags):
                typer.echo(f"# {kind}: {text}")
        typer.echo("")


@app.command()
def serve(
    host: Annotated[
        str,
        typer.Option(
            help="Bind address (local only by default; to share it, also name "
            "the host clients use with --allow-host)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    repo: Annotated[Path, typer.Option(help="The Firth checkout.")] = Path("."),
    body_bytes: Annotated[
        int, typer.Option(help="Largest request body (bytes; more: 413).")
    ] = 65_536,
    chars: Annotated[int, typer.Option(help="Most characters of text.")] = 4_000,
    beam: Annotated[int, typer.Option(help="Widest beam a request may ask.")] = 16,
    k: Annotated[int, typer.Option(help="Most neighbours or answers.")] = 100,
    samples: Annotated[int, typer.Option(help="Most samples per prompt.")] = 10,
    tokens: Annotated[int, typer.Option(help="Most tokens per sample.")] = 200,
    seconds: Annotated[
        float,
        typer.Option(
            help="Time budget of one request: past it, its worker is killed (503)."
        ),
    ] = 30.0,
    concurrent: Annotated[
        int,
        typer.Option(help="Requests computing at once, one worker process each."),
    ] = 2,
    wait_seconds: Annotated[
        float, typer.Option(help="How long a request waits for a slot (then 503).")
    ] = 10.0,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="A Host name to answer besides 127.0.0.1 and localhost."),
    ] = None,
) -> None:
    """A local page asking every trained model: translation with its attention
    heatmap and copy shares, neighbours and analogies, samples, tagged text.
    Every request is bounded (the options; firth.query.web.Limits)."""
    import uvicorn
    from pydantic import ValidationError

    from firth.query.web import Limits, make_app

    if not (repo / "params.yaml").exists():
        typer.echo(f"error: {repo / 'params.yaml'}: not found", err=True)
        raise typer.Exit(2)
    try:
        limits = Limits(
            body_bytes=body_bytes,
            chars=chars,
            beam=beam,
            k=k,
            samples=samples,
            tokens=tokens,
            seconds=seconds,
            concurrent=concurrent,
            wait_seconds=wait_seconds,
            hosts=("127.0.0.1", "localhost", *(allow_host or [])),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        typer.echo(
            f"error: --{str(err['loc'][0]).replace('_', '-')}: {err['msg']}", err=True
        )
        raise typer.Exit(2) from None
    typer.echo(f"Firth: http://{host}:{port}/ (Ctrl-C stops it)")
    uvicorn.run(make_app(repo, limits), host=host, port=port, log_level="warning")


flows_app = typer.Typer(help="Prefect flows: the pipeline and scheduled retraining.")
app.add_typer(flows_app, name="flows")


def _load_flow(repo: Path, module: str, name: str):
    """A flow object from ``<repo>/flows/<module>.py`` (flows/ is not a package)."""
    from prefect.flows import load_flow_from_entrypoint

    path = repo.resolve() / "flows" / f"{module}.py"
    if not path.exists():
        raise FirthError(f"{path}: not found (is --repo a Firth checkout?)")
    return load_flow_from_entrypoint(f"{path}:{name}")


def _local_server(port: int):
    """Start Prefect's local server (SQLite, with its scheduler) unless
    PREFECT_API_URL already points at one; return the process or None."""
    import subprocess
    import time
    import urllib.request

    if os.environ.get("PREFECT_API_URL"):
        return None
    url = f"http://127.0.0.1:{port}/api"
    proc = subprocess.Popen(
        ["prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                break
        except OSError:
            if proc.poll() is not None:
                raise FirthError(
                    f"prefect server exited with {proc.returncode}"
                ) from None
            time.sleep(1)
    else:
        proc.terminate()
        raise FirthError(f"prefect server did not answer on {url} within 2 minutes")
    os.environ["PREFECT_API_URL"] = url
    typer.echo(f"Prefect server: http://127.0.0.1:{port} (UI and API)")
    return proc


@flows_app.command("serve")
def flows_serve(
    cron: Annotated[
        str, typer.Option(help="When to retrain (cron, UTC); default Sundays 03:00.")
    ] = "0 3 * * 0",
    repo: Annotated[Path, typer.Option(help="The Firth checkout to retrain.")] = Path(
        "."
    ),
    baseline: Annotated[str, typer.Option(help="Branch to gate on and promote to.")] = (
        "main"
    ),
    name: Annotated[str, typer.Option(help="Deployment name.")] = "firth-retrain",
    port: Annotated[int, typer.Option(help="Port of the local server.")] = 4200,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the deployment and exit; serve nothing."),
    ] = False,
) -> None:
    """Serve flows/retrain.py on a cron schedule (starting Prefect's local server
    when PREFECT_API_URL is unset); Ctrl-C stops it and pauses the schedule."""
    from prefect.schedules import Cron

    try:
        retrain = _load_flow(repo, "retrain", "retrain")
        schedule = Cron(cron, timezone="UTC")
    except (FirthError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    params = {"repo": str(repo.resolve()), "baseline": baseline}
    if dry_run:
        dep = retrain.to_deployment(name=name, schedule=schedule, parameters=params)
        typer.echo(f"deployment: {dep.flow_name}/{dep.name}")
        for s in dep.schedules:
            typer.echo(f"schedule: cron {s.schedule.cron} ({s.schedule.timezone})")
        typer.echo(f"parameters: {dep.parameters}")
        return
    try:
        server = _local_server(port)
    except FirthError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        from prefect.settings import PREFECT_API_URL, temporary_settings

        # prefect read its settings at import: point them at the server now
        with temporary_settings({PREFECT_API_URL: os.environ["PREFECT_API_URL"]}):
            retrain.serve(name=name, schedule=schedule, parameters=params)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    app()
