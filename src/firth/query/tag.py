"""Tag new sentences with a trained tagger run (``<data>-<head>``, one seed's
model), as its evaluation tags the test split; BIO tags also give entity spans."""

from __future__ import annotations

from pathlib import Path

from firth.errors import ConfigError
from firth.query import NotTrained, loaded, stage_paths


def read_input(text: str) -> list[list[str]]:
    """Sentences of tokens: CoNLL (one token per line, the first column, blank
    lines between sentences; other columns such as gold tags are ignored) when
    some line holds a tab, else plain text, one sentence per line, split on
    whitespace."""
    lines = text.splitlines()
    if any("\t" in line for line in lines):
        sents, cur = [], []
        for line in lines:
            cols = line.split()
            if not cols:
                if cur:
                    sents.append(cur)
                cur = []
            elif cols[0] != "-DOCSTART-":
                cur.append(cols[0])
        return sents + ([cur] if cur else [])
    return [line.split() for line in lines if line.split()]


def spans(tokens: list[str], tags: list[str]) -> list[tuple[str, str]]:
    """(type, text) of each BIO chunk (an I- that continues nothing starts one)."""
    out: list[tuple[str, list[str]]] = []
    prev = "O"
    for token, tag in zip(tokens, tags, strict=True):
        if tag.startswith("B-") or (
            tag.startswith("I-") and (prev == "O" or prev[2:] != tag[2:])
        ):
            out.append((tag[2:], [token]))
        elif tag.startswith("I-"):
            out[-1][1].append(token)
        prev = tag
    return [(kind, " ".join(words)) for kind, words in out]


def load(
    root: Path,
    params: Path,
    name: str,
    *,
    seed: int | None = None,
    init: str | None = None,
):
    """The run's trained model (one seed, one init), its vocabulary, its device
    and whether its tags are BIO."""
    import torch

    from firth.io import read_json
    from firth.tagging.data import Vocab
    from firth.tagging.evaluate import scheme_of
    from firth.tagging.models import build_tagger
    from firth.tagging.stage import setup

    data, _, head = name.rpartition("-")
    if not data:
        raise ConfigError(f"{name}: a tagger run is <data>-<head>, e.g. wnut16-crf")
    run = setup(params, data, head)
    seed = run.cfg.seeds[0] if seed is None else seed
    if seed not in run.cfg.seeds:
        raise ConfigError(
            f"{run.name} is trained with seeds {run.cfg.seeds} (tagger.seeds), "
            f"not {seed}"
        )
    folder = stage_paths(root, f"train-tagger@{run.name}-{seed}")["out"]
    if not (folder / "config.json").exists():
        raise NotTrained(
            f"{run.name} (seed {seed}) is not trained yet: "
            f"dvc repro train-tagger@{run.name}-{seed}"
        )
    inits = read_json(folder / "config.json")["inits"]
    init = init or inits[-1]
    if init not in inits:
        raise ConfigError(f"{run.name}: inits are {', '.join(inits)}, not {init}")
    files = [folder / f"vocab-{init}.json", folder / f"{init}.pt"]

    def make():
        vocab = Vocab.from_json(read_json(files[0]))
        model = build_tagger(vocab, run.head, run.common)
        model.load_state_dict(torch.load(files[1], weights_only=True))
        return model.to(run.device).eval(), vocab

    key = ("tagger", str(folder.resolve()), init, run.common.model_dump_json())
    model, vocab = loaded(key, files, make)
    return model, vocab, run.device, scheme_of(vocab.tags) == "BIO"


def predict_tags(model, vocab, device, sentences: list[list[str]]) -> list[list[str]]:
    from firth.tagging.data import encode
    from firth.tagging.train import predict

    sents = [s for s in sentences if s]
    enc = encode(vocab, [(s, ["O"] * len(s)) for s in sents])
    pred = iter(predict(model, enc, vocab, batch=64, device=device))
    return [next(pred) if s else [] for s in sentences]


def tag(
    root: Path,
    params: Path,
    name: str,
    sentences: list[list[str]],
    *,
    seed: int | None = None,
    init: str | None = None,
) -> tuple[list[list[str]], bool]:
    """The tags of each sentence, and whether the run's tags are BIO."""
    model, vocab, device, bio = load(root, params, name, seed=seed, init=init)
    return predict_tags(model, vocab, device, sentences), bio
