"""Sample from and score with a trained run of ``lm.runs``, as its evaluation does:
text prepared the way the corpus was (normalize, tokenize, ``prepare_text.lowercase``),
ancestral samples after a prompt (``evaluate_lm``'s temperature and length unless
given), and perplexity and bits per character of any text."""

from __future__ import annotations

from pathlib import Path

from firth.config import load_section, load_sections
from firth.errors import DataError
from firth.lm.config import EvaluateLm, Lm
from firth.query import NotTrained, loaded, stage_paths


def _scorer(root: Path, params: Path, name: str):
    from firth.lm.stage import Scorer, select

    cfg, _ = load_sections("lm", params, schema=Lm)
    select(cfg, name, DataError)  # an unknown run name
    folder = stage_paths(root, f"train-lm@{name}")["out"]
    if not (folder / "vocab.json").exists():
        raise NotTrained(f"{name} is not trained yet: dvc repro train-lm@{name}")
    files = sorted(p for p in folder.iterdir() if p.is_file())
    key = ("lm", str(folder.resolve()), cfg.model_dump_json())
    return loaded(key, files, lambda: Scorer(folder, cfg, name))


def prepared(params: Path, lines: list[str]) -> list[str]:
    """``lines`` as prepare_text writes the corpus: normalized, tokenized, spaced."""
    from firth.prepare.normalize import normalize, tokenize

    lower = load_section("prepare_text", params).lowercase
    return [" ".join(tokenize(normalize(x), lowercase=lower)) for x in lines]


def generate(
    root: Path,
    params: Path,
    name: str,
    prompt: str,
    *,
    samples: int = 1,
    tokens: int | None = None,
    temperature: float | None = None,
) -> list[str]:
    """``samples`` continuations of ``prompt`` (seeded by the run's seed)."""
    scorer = _scorer(root, params, name)
    ev = load_section("evaluate_lm", params, schema=EvaluateLm)
    update: dict = {"prompts": prepared(params, [prompt]), "samples": samples}
    if tokens is not None:
        update["sample_tokens"] = tokens
    if temperature is not None:
        update["temperature"] = temperature
    return [s["continuation"] for s in scorer.samples(ev.model_copy(update=update))]


def score(root: Path, params: Path, name: str, lines: list[str]) -> dict:
    """Perplexity, bits per character, tokens, characters and OOV rate of
    ``lines`` (prepared as the corpus; empty lines dropped)."""
    text = [x for x in prepared(params, lines) if x]
    if not text:
        raise DataError("no text to score (every line is empty)")
    out, _ = _scorer(root, params, name).split(text, None)
    keep = ("perplexity", "bits_per_char", "tokens", "characters", "oov_rate")
    return {k: out[k] for k in keep} | {"tokens_per_second": out["tokens_per_second"]}


def export_arpa(root: Path, params: Path, name: str, out: Path) -> list[int]:
    """Write the Kneser-Ney run ``name`` as an ARPA file at ``out`` (readable by
    KenLM, SRILM and the other n-gram toolkits); the n-grams per order."""
    from firth.lm.arpa import write_arpa

    scorer = _scorer(root, params, name)
    if scorer.kn is None:
        raise DataError(
            f"{name} is not a Kneser-Ney run (family {scorer.run.family}): only "
            "n-gram models have an ARPA form"
        )
    return write_arpa(scorer.kn, out)
