"""Checks across params sections: a list in one section that names runs or
methods of another (``probe.lm_runs`` -> ``lm.runs``, ``probe.vectors`` and
``tagger.vectors`` -> the embedding methods, ``evaluate_attention.runs`` ->
``nmt.runs``). Each section's own schema cannot see the other, so without this a
bad name fails only when its DVC stage runs; ``firth check-params`` runs these
after every section validates on its own."""

from __future__ import annotations

from pathlib import Path

from firth.config import load_section
from firth.embeddings.config import EMBEDDING_METHODS
from firth.errors import ConfigError
from firth.lm.config import Lm
from firth.nmt.config import EvaluateAttention, Nmt
from firth.probe.config import Probe
from firth.tagging.config import Tagger

# nmt models with an attention distribution the interventions replace
ATTENTION_MODELS = ("bahdanau", "luong-general", "luong-dot", "transformer")
# lm families with layers of states to probe
PROBED_FAMILIES = ("elman", "lstm", "gru", "transformer")


def check_references(path: str | Path = "params.yaml") -> None:
    """Raise ConfigError naming the file, the key and the bad entry."""
    lm = load_section("lm", path, schema=Lm)
    nmt = load_section("nmt", path, schema=Nmt)
    probe = load_section("probe", path, schema=Probe)
    attention = load_section("evaluate_attention", path, schema=EvaluateAttention)
    tagger_vectors = load_section("tagger", path, schema=Tagger).vectors

    def bad(key: str, entry: str, why: str) -> ConfigError:
        return ConfigError(f"{path}: key '{key}' lists {entry!r}: {why}")

    # a list naming runs of another section, and the kinds of run it can use
    for key, names, section, runs, kind, allowed, lacks in (
        ("probe.lm_runs", probe.lm_runs, "lm.runs", lm.runs, "family",
         PROBED_FAMILIES, "has no layers of states to probe"),
        ("evaluate_attention.runs", attention.runs, "nmt.runs", nmt.runs, "model",
         ATTENTION_MODELS, "has no attention"),
    ):  # fmt: skip
        for run in names:
            if run not in runs:
                raise bad(key, run, f"not a run of {section} ({_names(runs)})")
            value = getattr(runs[run], kind)
            if value not in allowed:
                raise bad(
                    key, run, f"its {kind} {value!r} {lacks} (use {', '.join(allowed)})"
                )
    if probe.lm_runs and lm.common.unit != "word":
        raise ConfigError(
            f"{path}: key 'probe.lm_runs' needs word-level LMs, but lm.common.unit "
            f"is {lm.common.unit!r} (set probe.lm_runs: [] or unit: word)"
        )
    for key, methods in (
        ("probe.vectors", probe.vectors),
        ("tagger.vectors", [tagger_vectors]),
    ):
        for m in methods:
            if m not in EMBEDDING_METHODS:
                raise bad(
                    key, m, f"not an embedding method ({', '.join(EMBEDDING_METHODS)})"
                )


def _names(runs: dict) -> str:
    return ", ".join(runs) or "none"
