"""Firth beside the tools its users already run, on the same data, split and
tokenisation, at matched settings, in one run on this machine.

- vectors: Firth's SGNS against gensim's skip-gram, CBOW (both with negative
  sampling) and skip-gram with hierarchical softmax; Firth's subword SGNS against
  fastText's skip-gram with character n-grams. Same corpus (the default's
  data/subsampled/text/train.txt, cut into the same sentences), vocabulary
  (min_count), dimension, window, negatives, subsampling, epochs and threads; each
  tool keeps its own learning rate (gensim 0.025, fastText 0.05, Firth's
  params). Quality on every analogy question and similarity pair the vocabulary
  covers (the same items for every tool: rows are Firth's vocabulary), words/s
  and peak memory, per seed, each run in a fresh process.
- ngram: Firth's modified Kneser-Ney (order lm.kn.order, the default's word
  vocabulary) written as ARPA; KenLM's Python module reads that file and scores
  the test split: the two perplexities must agree to 4 significant digits (same
  model, two readers). KenLM's own estimator, lmplz, where it can be had (on PATH,
  $FIRTH_LMPLZ, or built from the kenlm sdist on PyPI with cmake and Debian's
  Boost), builds its model from the same tokens: build seconds and test
  perplexity beside Firth's. NLTK's KneserNeyInterpolated on a slice (it is pure
  Python): build and scoring seconds, perplexity at order 3.
- nmt: Firth's Bahdanau attention GRU and transformer (its train-nmt and
  evaluate-nmt stage scripts) against JoeyNMT's recurrent model with Bahdanau
  attention and its transformer, on the default's KJV -> WEB split with Firth's
  joint BPE (JoeyNMT reads the same subword pieces and vocabulary; its outputs
  are decoded by the same tokenizer). Same sizes, dropout, label smoothing,
  batch tokens, learning rate, warm-up share, clipping and epochs; beam 5 with
  JoeyNMT's length penalty for both. Test BLEU and chrF (sacreBLEU), training
  target tokens/s, decoding sentences/s. JoeyNMT runs from its own venv
  (~/.cache/firth/joeynmt-2.3.0-venv, built by the script, or
  $FIRTH_JOEYNMT_PYTHON): it pins protobuf < 3.21 and pulls linters. OpenNMT-py
  3.0.4 likewise (~/.cache/firth/opennmt-3.0.4-venv or $FIRTH_OPENNMT_PYTHON;
  3.5.x pins torch < 2.3), one epoch at the same settings with its recipes'
  schedules (--nmt-peers picks the peers).
- taggers: Firth's BiLSTM-CRF (its train-tagger stage script, character BiLSTM)
  against flair's SequenceTagger (BiLSTM-CRF, character BiLSTM) on WNUT-16 and
  the WSJ POS sample, the default's splits, both starting from the same SGNS
  vectors of the seed: seqeval entity F1 or token accuracy on the test split,
  training and tagging sentences/s. flair runs benchmarks/peers_flair.py from
  its own venv (~/.cache/firth/flair-0.15.1-venv or $FIRTH_FLAIR_PYTHON).

Comparisons of quality are paired bootstraps over the test items (and seeds), as
the scorecard's: "Firth ahead", "peer ahead" or "inconclusive".

    python benchmarks/peers.py                          # every task
    python benchmarks/peers.py --tasks ngram
    python benchmarks/peers.py --tasks nmt --nmt-models bahdanau
    python benchmarks/peers.py --tasks nmt --nmt-peers opennmt
    python benchmarks/peers.py --tasks taggers --seeds 13
    FIRTH_PROJECT=/path/to/trained/clone python benchmarks/peers.py

The data come from a project whose prepare, subsample and fetch stages have run
(FIRTH_PROJECT, default this checkout); the nmt and taggers settings from this
checkout's params.yaml, the vectors and ngram settings from the project's (they
shape its corpus). Writes benchmarks/results/peers.json.
Needs the peers extra: pip install -c requirements.lock -e '.[peers]'.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import (
    head_commit,
    in_fresh_process,
    machine,
    mean_sd,
    speed_probe,
    write_result,
)

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "firth"
VECTOR_TOOLS = {  # tool: (package, what it is)
    "firth-sgns": ("firth", "Firth SGNS (negative sampling)"),
    "gensim-sg-ns": ("gensim", "gensim Word2Vec skip-gram, negative sampling"),
    "gensim-cbow-ns": ("gensim", "gensim Word2Vec CBOW, negative sampling"),
    "gensim-sg-hs": ("gensim", "gensim Word2Vec skip-gram, hierarchical softmax"),
    "firth-subword": ("firth", "Firth subword SGNS (character n-grams)"),
    "fasttext-sg": ("fasttext", "fastText skip-gram with character n-grams"),
}
VECTOR_PAIRS = [  # (Firth's, the peer's)
    ("firth-sgns", "gensim-sg-ns"),
    ("firth-sgns", "gensim-cbow-ns"),
    ("firth-sgns", "gensim-sg-hs"),
    ("firth-subword", "fasttext-sg"),
]


TASKS = ("vectors", "ngram", "nmt", "taggers")


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def peak_rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


# -- word vectors -------------------------------------------------------------


def _vectors_one(tool: str, seed: int, params: str, threads: int, queue) -> None:
    import numpy as np
    import torch

    from firth.config import load_section
    from firth.embeddings.analogy import evaluate_analogies, read_analogies
    from firth.embeddings.config import Embeddings
    from firth.embeddings.corpus import load_corpus
    from firth.embeddings.methods import train_gensim, train_method
    from firth.embeddings.similarity import cosines, read_pairs
    from firth.embeddings.vectors import Embedding
    from firth.query import stage_paths

    cfg = load_section("embeddings", params, schema=Embeddings)
    common = cfg.common.model_copy(update={"threads": threads, "device": "cpu"})
    cfg = cfg.model_copy(update={"common": common})
    torch.set_num_threads(threads)
    c = cfg.common
    corpus_path = PROJECT / "data/subsampled/text/train.txt"
    data, sentences = load_corpus(
        corpus_path, min_count=c.min_count, max_sentence_len=c.max_sentence_len
    )
    words = data.vocab.words
    if tool == "firth-sgns":
        out = train_method("sgns", data, sentences, cfg, seed=seed, progress=False)
        emb, seconds = out.embedding, out.stats["seconds"]
    elif tool == "firth-subword":
        out = train_method("subword", data, sentences, cfg, seed=seed, progress=False)
        emb, seconds = out.embedding, out.stats["seconds"]
    elif tool.startswith("gensim-"):
        out = train_gensim(
            data, sentences, cfg, seed=seed, sg="-sg-" in tool, hs=tool.endswith("-hs")
        )
        emb, seconds = out.embedding, out.stats["seconds"]
    elif tool == "fasttext-sg":
        import fasttext

        sub = cfg.subword
        with tempfile.TemporaryDirectory() as tmp:
            text = Path(tmp) / "train.txt"  # the same sentences, one per line
            text.write_text("\n".join(" ".join(s) for s in sentences) + "\n")
            t0 = time.perf_counter()
            model = fasttext.train_unsupervised(
                str(text),
                model="skipgram",
                dim=c.dim,
                ws=c.window,
                epoch=c.epochs,
                minCount=c.min_count,
                neg=c.negatives,
                minn=sub.min_n,
                maxn=sub.max_n,
                bucket=sub.buckets,
                t=c.sample,
                thread=threads,  # no seed in its Python API (0.9.3): runs differ
                verbose=0,
            )
            seconds = time.perf_counter() - t0
        vecs = np.stack([model.get_word_vector(w) for w in words]).astype(np.float32)
        emb = Embedding(words, vecs)
    else:
        raise SystemExit(f"unknown vector tool {tool!r}")
    raw = stage_paths(PROJECT, "evaluate-embeddings@sgns")["eval"]
    hits: dict = {}
    ana = evaluate_analogies(
        emb,
        read_analogies(raw / "analogy-google" / "questions-words.txt"),
        restrict=30000,
        hits=hits,
    )
    row = {
        "tool": tool,
        "seed": seed,
        "threads": threads,
        "seconds": round(seconds, 2),
        "words_per_second": round(data.vocab.total_tokens * c.epochs / seconds),
        "peak_rss_mb": peak_rss_mb(),
        "analogy_3cosadd": round(ana["3cosadd"], 5),
        "analogy_covered": ana["covered"],
        "items": {"analogy": hits["3cosadd"]},
    }
    for name in ("wordsim353", "simlex999"):
        pairs = read_pairs(raw / name / "pairs.tsv")
        cos = cosines(emb, pairs)
        items = [(p[2], x) for p, x in zip(pairs, cos, strict=True) if x is not None]
        gold, model_cos = zip(*items, strict=True)
        from scipy import stats

        row[f"{name}_spearman"] = round(float(stats.spearmanr(gold, model_cos)[0]), 5)
        row[f"{name}_covered"] = len(items)
        row["items"][name] = items
    queue.put(row)


VECTOR_METRICS = ("analogy_3cosadd", "wordsim353_spearman", "simlex999_spearman")


def vectors(seeds: list[int], threads: int, rule) -> dict:
    import numpy as np

    from firth.inference import compare, ratio, side, spearman_metric

    available = {t: version(pkg) for t, (pkg, _) in VECTOR_TOOLS.items()}
    rows, skipped = [], {}
    for tool, ver in available.items():
        if ver is None:
            pkg = VECTOR_TOOLS[tool][0]
            skipped[tool] = f"{pkg} is not installed (pip install -e '.[peers]')"
            continue
        for seed in seeds:
            row = in_fresh_process(
                _vectors_one,
                tool,
                seed,
                str(PROJECT / "params.yaml"),
                threads,
                label=f"{tool} seed {seed}",
            )
            print(
                json.dumps({k: v for k, v in row.items() if k != "items"}), flush=True
            )
            rows.append(row)
    keys = ("words_per_second", "seconds", "peak_rss_mb", *VECTOR_METRICS)
    summary = {
        tool: {"what": VECTOR_TOOLS[tool][1], "version": available[tool], **entry}
        for tool, entry in mean_sd(rows, "tool", keys).items()
    }
    metrics = {
        "analogy": ("analogy_3cosadd", ratio("3CosAdd accuracy", "higher", 0, 1)),
        "wordsim353": ("wordsim353_spearman", spearman_metric()),
        "simlex999": ("simlex999_spearman", spearman_metric()),
    }

    def items(tool: str, name: str) -> list:
        per_seed = []
        for r in rows:
            if r["tool"] == tool:
                x = r["items"][name]
                per_seed.append(
                    np.array([[h, 1] for h in x]) if name == "analogy" else np.array(x)
                )
        return per_seed

    comparisons = []
    for ours, peer in VECTOR_PAIRS:
        if ours not in summary or peer not in summary:
            continue
        entry = {
            "firth": ours,
            "peer": peer,
            "words_per_second_ratio": round(
                summary[ours]["words_per_second"] / summary[peer]["words_per_second"], 3
            ),
            "tests": {},
        }
        for name, (_key, metric) in metrics.items():
            t = compare(
                side(ours, items(ours, name)),
                side(peer, items(peer, name)),
                metric,
                rule,
            )
            entry["tests"][name] = {
                "outcome": OUTCOME[t.verdict],
                "firth": round(t.a.score, 4),
                "peer": round(t.b.score, 4),
                "ratio": round(t.a.score / t.b.score, 3) if t.b.score else None,
                "sentence": t.sentence(3),
            }
        comparisons.append(entry)
    for r in rows:
        r.pop("items")
    return {
        "corpus": "data/subsampled/text/train.txt",
        "settings": "embeddings.common of params.yaml (dim, window, negatives, "
        "sample, epochs, min_count); threads as given; fastText's n-grams from "
        "embeddings.subword (min_n, max_n, buckets); learning rates each tool's own; "
        "fastText's Python API takes no seed, so its runs differ by thread timing",
        "rows": rows,
        "summary": summary,
        "comparisons": comparisons,
        "skipped": skipped,
    }


OUTCOME = {
    "holds": "Firth ahead",
    "does not hold": "peer ahead",
    "inconclusive": "inconclusive",
}


# -- n-gram LM ----------------------------------------------------------------


def lmplz_binary(log: list[str]) -> tuple[str | None, str]:
    """KenLM's estimator: $FIRTH_LMPLZ, lmplz on PATH, a cached build, or a new
    build from the kenlm sdist (cmake, g++ and Boost's program_options, system,
    thread and test libraries). (path, how it was had) or (None, why not)."""
    for found in (os.environ.get("FIRTH_LMPLZ"), shutil.which("lmplz")):
        if found:
            return found, f"found at {found}"
    ver = version("kenlm")
    if ver is None:
        return None, "kenlm is not installed, so its sdist version is unknown"
    build = CACHE / f"kenlm-{ver}" / "build"
    binary = build / "bin" / "lmplz"
    if binary.exists():
        return str(binary), f"built from the kenlm {ver} sdist (cached in {build})"
    src = CACHE / f"kenlm-{ver}"
    steps = [
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"kenlm=={ver}",
            "-d",
            str(src),
        ],
        [
            "tar",
            "xzf",
            str(src / f"kenlm-{ver}.tar.gz"),
            "-C",
            str(src),
            "--strip-components",
            "1",
        ],
        ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
        [
            "cmake",
            "--build",
            str(build),
            "--target",
            "lmplz",
            "-j",
            str(os.cpu_count()),
        ],
    ]
    src.mkdir(parents=True, exist_ok=True)
    for cmd in steps:
        log.append(" ".join(cmd))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{cmd[0]}: {exc}"
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return None, f"`{' '.join(cmd[:3])} ...` failed: {' | '.join(tail)}"
    return str(binary), f"built from the kenlm {ver} sdist with cmake"


def _firth_kn(
    train: list[list[str]], test: list[list[str]], order: int, arpa: str, queue
):
    from firth.lm import kneser_ney
    from firth.lm.arpa import write_arpa
    from firth.lm.lines import kn_by_line
    from firth.lm.metrics import perplexity

    t0 = time.perf_counter()
    lm = kneser_ney.build(train, order=order)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    counts = write_arpa(lm, arpa)
    arpa_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    line_nats, line_tokens = kn_by_line(lm, test)  # what evaluate-lm scores with
    score_s = time.perf_counter() - t0
    tokens = int(line_tokens.sum())
    queue.put(
        {
            "build_seconds": round(build_s, 2),
            "arpa_seconds": round(arpa_s, 2),
            "ngrams": counts,
            "perplexity": perplexity(float(line_nats.sum()), tokens),
            "tokens": tokens,
            "score_seconds": round(score_s, 3),
            "tokens_per_second": round(tokens / score_s),
            "peak_rss_mb": peak_rss_mb(),
            "line_bits": [float(x) / math.log(2) for x in line_nats],
        }
    )


def _kenlm_score(path: str, test: list[list[str]]) -> dict:
    import kenlm

    t0 = time.perf_counter()
    model = kenlm.Model(path)
    load_s = time.perf_counter() - t0
    lines = [" ".join(s) for s in test]
    t0 = time.perf_counter()
    log10 = [model.score(x, bos=True, eos=True) for x in lines]
    score_s = time.perf_counter() - t0
    tokens = sum(len(s) + 1 for s in test)
    return {
        "load_seconds": round(load_s, 2),
        "perplexity": 10 ** (-sum(log10) / tokens),
        "score_seconds": round(score_s, 4),
        "tokens_per_second": round(tokens / score_s),
        "line_bits": [-x * math.log2(10) for x in log10],
    }


def _nltk_slice(train, test, order: int, queue) -> None:
    from nltk.lm import KneserNeyInterpolated
    from nltk.lm.preprocessing import padded_everygram_pipeline

    from firth.lm import kneser_ney

    out = {}
    t0 = time.perf_counter()
    grams, vocab = padded_everygram_pipeline(order, train)
    ref = KneserNeyInterpolated(order)
    ref.fit(grams, vocab)
    out["nltk_build_seconds"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    nll, tokens = 0.0, 0
    for s in test:  # the tokens Firth predicts: words and one </s>, order-1 <s> before
        seq = ["<s>"] * (order - 1) + s + ["</s>"]
        for j in range(order - 1, len(seq)):
            nll -= ref.logscore(seq[j], seq[j - order + 1 : j])  # log2
            tokens += 1
    out["nltk_score_seconds"] = round(time.perf_counter() - t0, 2)
    out["nltk_perplexity"] = 2 ** (nll / tokens)
    out["nltk_tokens_per_second"] = round(tokens / out["nltk_score_seconds"])
    t0 = time.perf_counter()
    lm = kneser_ney.build(train, order=order)
    out["firth_build_seconds"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    score = lm.score(test)
    out["firth_score_seconds"] = round(time.perf_counter() - t0, 3)
    out["firth_perplexity"] = score["perplexity"]
    out["tokens"] = tokens
    queue.put(out)


EQUAL_BPC = 0.001  # bits per character within which two n-gram models are the same


def _respelt(sentence: list[str], rare: str) -> list[str]:
    return [rare if w == "<unk>" else w for w in sentence]


def ngram(rule, nltk_lines: int, nltk_test: int, workdir: Path) -> dict:
    import numpy as np

    from firth.config import load_sections
    from firth.inference import bits_per_char_metric, compare, equivalent, side
    from firth.lm.config import Lm
    from firth.lm.data import build_vocabulary, read_lines

    cfg, _ = load_sections("lm", PROJECT / "params.yaml", schema=Lm)
    order, c = cfg.kn.order, cfg.common
    text = PROJECT / "data/subsampled/text"
    train_lines, test_lines = (
        read_lines(text / "train.txt"),
        read_lines(text / "test.txt"),
    )
    vocab = build_vocabulary(train_lines, unit="word", min_count=c.min_count)

    def words(lines):
        return [[vocab.tokens[i] for i in vocab.encode_line(x)] for x in lines]

    train, test = words(train_lines), words(test_lines)
    chars = [len(x) + 1 for x in test_lines]
    arpa = str(workdir / "firth-kn.arpa")
    firth = in_fresh_process(_firth_kn, train, test, order, arpa, label="Firth KN")
    out: dict = {
        "order": order,
        "vocabulary": f"words seen {c.min_count}+ times in train.txt (lm.common."
        "min_count); the rest are <unk>, in training and test alike",
        "train_tokens": sum(len(s) for s in train),
        "test_tokens": firth["tokens"],
        "firth": {k: v for k, v in firth.items() if k != "line_bits"},
        "skipped": {},
    }
    if version("kenlm") is None:
        out["skipped"]["kenlm"] = "kenlm is not installed (pip install -e '.[peers]')"
        return out
    ken = _kenlm_score(arpa, test)
    out["kenlm_reads_firth_arpa"] = {
        **{k: v for k, v in ken.items() if k != "line_bits"},
        "kenlm_version": version("kenlm"),
        "agree_4_significant_digits": f"{ken['perplexity']:.4g}"
        == f"{firth['perplexity']:.4g}",
        "relative_difference": abs(ken["perplexity"] / firth["perplexity"] - 1),
        "query_speed_ratio_firth_to_kenlm": round(
            firth["tokens_per_second"] / ken["tokens_per_second"], 4
        ),
    }
    log: list[str] = []
    binary, how = lmplz_binary(log)
    if binary is None:
        out["skipped"]["lmplz"] = f"tried: {'; '.join(log)}; {how}"
    else:
        # lmplz refuses <unk> in its corpus: Firth's <unk> is an ordinary counted
        # word, so the same tokens with another spelling make the same problem
        rare = "<rare>"
        if rare in vocab.tokens:
            raise SystemExit(f"{rare!r} is a word of the corpus: pick another spelling")
        corpus = workdir / "train.tok"
        corpus.write_text("\n".join(" ".join(_respelt(s, rare)) for s in train) + "\n")
        built = workdir / "lmplz.arpa"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                binary,
                "-o",
                str(order),
                "-S",
                "40%",
                "-T",
                str(workdir),
                "--text",
                str(corpus),
                "--arpa",
                str(built),
            ],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            out["skipped"]["lmplz"] = f"lmplz failed: {proc.stderr.strip()[-400:]}"
        else:
            theirs = _kenlm_score(str(built), [_respelt(s, rare) for s in test])
            fs = side("firth", [np.column_stack([firth["line_bits"], chars])])
            ks = side("lmplz", [np.column_stack([theirs["line_bits"], chars])])
            t = compare(fs, ks, bits_per_char_metric(), rule)
            same = equivalent(fs, ks, bits_per_char_metric(), rule, EQUAL_BPC)
            header = built.read_text(encoding="utf-8").split("\n\n")[0]
            counts = [int(x.split("=")[1]) for x in header.split("\n")[1:]]
            out["lmplz"] = {
                "how": how,
                "command": f"lmplz -o {order} -S 40% --text train.tok "
                "--arpa lmplz.arpa",
                "build_seconds": round(seconds, 2),
                "ngrams": counts,
                "same_ngram_counts_as_firth": counts == firth["ngrams"],
                "perplexity": theirs["perplexity"],
                "build_speed_ratio_firth_to_lmplz": round(
                    seconds / firth["build_seconds"], 4
                ),
                "bits_per_char": {
                    "outcome": OUTCOME[t.verdict],
                    "firth": round(t.a.score, 6),
                    "peer": round(t.b.score, 6),
                    "sentence": t.sentence(6),
                    "equivalent_within": EQUAL_BPC,
                    "equivalence": same.verdict,
                    "equivalence_sentence": same.sentence(6),
                },
            }
    if version("nltk") is not None:
        part = train[:nltk_lines]
        seen = {w for s in part for w in s}  # test words outside the slice: <unk>
        part_test = [[w if w in seen else "<unk>" for w in s] for s in test[:nltk_test]]
        row = in_fresh_process(_nltk_slice, part, part_test, 3, label="NLTK KN")
        out["nltk_slice"] = {
            "order": 3,
            "train_lines": nltk_lines,
            "test_lines": nltk_test,
            "note": "not the same estimator: nltk has one discount (0.1) for every "
            "order and no uniform floor; Firth's is modified Kneser-Ney. Test words "
            "outside the slice's training lines are <unk> for both",
            "nltk_version": version("nltk"),
            **row,
            "build_speed_ratio_firth_to_nltk": round(
                row["nltk_build_seconds"] / max(row["firth_build_seconds"], 1e-9), 1
            ),
            "query_speed_ratio_firth_to_nltk": round(
                row["nltk_score_seconds"] / max(row["firth_score_seconds"], 1e-9), 1
            ),
        }
    return out


# -- translation --------------------------------------------------------------

JOEYNMT = "2.3.0"
NMT_KINDS = ("bahdanau", "transformer")
NMT_PEERS = ("joeynmt", "opennmt")
JOEYNMT_PACKAGES = (f"joeynmt=={JOEYNMT}", "importlib-metadata==10.2.0")


def peer_python(tool: str, env: str, pins: list[str], log: list[str]):
    """(python, how) of a peer kept out of the project's environment: $``env``,
    a venv cached under ~/.cache/firth/<tool>-venv, or a new one there with
    ``pins`` (None and the reason where pip fails; ``log`` gets the error)."""
    given = os.environ.get(env)
    if given:
        return given, f"${env} ({given})"
    venv = CACHE / f"{tool}-venv"
    python, done = venv / "bin/python", venv / ".installed"
    if done.exists():
        return str(python), f"cached venv {venv}"
    for cmd in (
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(venv / "bin/pip"), "install", "-q", *pins],
    ):
        print(f"{tool}: {' '.join(cmd)}", flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            log.append(f"{' '.join(cmd)}: {proc.stderr.strip()[-300:]}")
            return None, f"could not install {tool}"
    done.touch()
    return str(
        python
    ), f"venv {venv} built by this script: pip install {' '.join(pins)}"


def torch_pin() -> str:
    return f"torch=={version('torch').split('+')[0]}"


def joeynmt_python(log: list[str]) -> tuple[str | None, str]:
    """JoeyNMT's Python ($FIRTH_JOEYNMT_PYTHON or its own venv) with this venv's
    torch version. JoeyNMT 2.3.0 pins protobuf < 3.21 and pulls tensorboard,
    pylint, flake8 and pytest, so it is kept out of the project's environment; it
    imports importlib_metadata without declaring it."""
    pins = [torch_pin(), *JOEYNMT_PACKAGES]
    return peer_python(f"joeynmt-{JOEYNMT}", "FIRTH_JOEYNMT_PYTHON", pins, log)


def _joey_steps(src: list[int], tgt: list[int], batch: int, seed: int) -> int:
    """Batches per epoch of JoeyNMT's token sampler (shuffled sentences, a batch
    closes once its longest sentence times its size reaches ``batch``)."""
    import random

    order = list(range(len(src)))
    random.Random(seed).shuffle(order)
    steps, longest, size = 0, 0, 0
    for i in order:
        longest, size = max(longest, src[i], tgt[i]), size + 1
        if longest * size >= batch:
            steps, longest, size = steps + 1, 0, 0
    return steps + (size > 0)


def _joey_config(
    kind: str,
    seed: int,
    epochs: int,
    files: Path,
    model_dir: Path,
    steps: int,
    cfg,
    beam: int,
    alpha: float,
    schedule: str = "recipe",
    setting: tuple[float, int] | None = None,
) -> dict:
    """JoeyNMT's configuration at Firth's settings (nmt.common, nmt.transformer);
    ``schedule``: inverse-sqrt (after Firth's warm-up share), constant, or recipe
    (JoeyNMT's own recipes: constant for the recurrent model, whose configs reduce
    the rate on a plateau, inverse-sqrt for the transformer). ``setting``: a
    (peak rate, batch tokens) of its own in place of Firth's (``--joey-grid``)."""
    c = cfg.common
    every = max(1, steps // c.evals_per_epoch)
    logging = 10 if every >= 10 else every
    every -= every % logging
    lang = {
        "level": "word",  # the text is already Firth's BPE pieces, space-separated
        "lowercase": False,
        "normalize": False,
        "max_length": -1,
        "min_length": -1,
        "voc_file": str(files / "vocab.txt"),
        "tokenizer_cfg": {"pretokenizer": "none"},
    }
    from firth.nmt.config import schedule as model_schedule

    own = model_schedule(cfg, kind)  # the model's own lr, warm-up and batches
    lr, warmup, batch_tokens = own.lr, own.warmup, own.batch_tokens
    if setting is not None:
        lr, batch_tokens = setting
    if kind == "transformer":
        t = cfg.transformer
        layer = {
            "type": "transformer",
            "num_layers": t.layers,
            "num_heads": t.heads,
            "hidden_size": c.emb_dim,
            "ff_size": t.ff,
            "dropout": c.dropout,
            "embeddings": {
                "embedding_dim": c.emb_dim,
                "scale": True,
                "dropout": c.dropout,
            },
        }
        encoder, decoder = dict(layer), dict(layer)
    else:
        emb = {"embedding_dim": c.emb_dim, "dropout": c.dropout}
        encoder = {
            "type": "recurrent",
            "rnn_type": c.cell,
            "hidden_size": c.hidden // 2,
            "bidirectional": True,
            "num_layers": c.layers,
            "dropout": c.dropout,
            "embeddings": emb,
        }
        decoder = {
            "type": "recurrent",
            "rnn_type": c.cell,
            "hidden_size": c.hidden,
            "num_layers": 1,
            "dropout": c.dropout,
            "hidden_dropout": c.dropout,
            "attention": "bahdanau",
            "input_feeding": True,
            "init_hidden": "bridge",
            "embeddings": emb,
        }
    # Firth's warm-up share, then JoeyNMT's inverse square root decay (its plateau
    # scheduler passes `verbose`, which torch 2.13's ReduceLROnPlateau refuses)
    sched = {
        "scheduling": "warmupinversesquareroot",
        "learning_rate_warmup": max(1, round(warmup * steps * epochs)),
    }
    if schedule == "constant" or (schedule == "recipe" and kind != "transformer"):
        # JoeyNMT 2.3.0 refuses no scheduler: an exponential one with factor 1
        sched = {"scheduling": "exponential", "decrease_factor": 1.0}
    return {
        "name": f"joeynmt-{kind}-{seed}",
        "joeynmt_version": JOEYNMT,
        "model_dir": str(model_dir),
        "use_cuda": False,
        "fp16": False,
        "random_seed": seed,
        "data": {
            "train": str(files / "train"),
            "dev": str(files / "valid"),
            "test": str(files / "test"),
            "dataset_type": "plain",
            "src": {"lang": "src", **lang},
            "trg": {"lang": "trg", **lang},
        },
        "testing": {
            "beam_size": beam,
            "beam_alpha": alpha,
            "batch_size": cfg.common.eval_batch,
            "batch_type": "sentence",
            "eval_metrics": ["bleu"],
            "max_output_length": -1,
            "generate_unk": True,
        },
        "training": {
            "optimizer": "adamw",
            "adam_betas": [0.9, 0.999],
            "learning_rate": lr,
            "learning_rate_min": 1.0e-8,
            "weight_decay": c.weight_decay,
            "clip_grad_norm": c.clip,
            "loss": "crossentropy",
            "label_smoothing": c.label_smoothing,
            "batch_size": batch_tokens,
            "batch_type": "token",
            "normalization": "tokens",
            "epochs": epochs,
            "validation_freq": every,
            "logging_freq": logging,  # it must divide validation_freq
            "early_stopping_metric": "loss",
            "keep_best_ckpts": 1,
            "overwrite": True,
            "shuffle": True,
            "print_valid_sents": [],
            **sched,
        },
        "model": {
            "initializer": "xavier_uniform",
            "bias_initializer": "zeros",
            "embed_initializer": "xavier_uniform",
            "tied_embeddings": True,
            "tied_softmax": True,
            "encoder": encoder,
            "decoder": decoder,
        },
    }


def _joey_log(path: Path) -> dict:
    """Training target tokens and seconds (validation excluded) from JoeyNMT's
    epoch lines, and its steps and decoding seconds."""
    import re

    text = path.read_text(encoding="utf-8", errors="replace")
    epochs = re.findall(r"num\. of tokens: (\d+), ([\d.]+)\[sec\]", text)
    steps = re.findall(r"Step:\s+(\d+)", text)
    gen = re.findall(r"Generation took ([\d.]+)\[sec\]", text)
    # JoeyNMT's validations: exp of its per-token loss (label smoothing included)
    valid = re.findall(r"Evaluation result \(greedy\).*?ppl:\s*([\d.]+)", text)
    return {
        "valid_ppls": [float(v) for v in valid],
        "tokens": sum(int(t) for t, _ in epochs),
        "seconds": sum(float(s) for _, s in epochs),
        "steps": int(steps[-1]) if steps else None,
        "generation_seconds": [float(g) for g in gen],
    }


def _run(cmd: list[str], label: str, threads: int, **env: str) -> str:
    """Run one tool's command with ``threads`` OpenMP threads (and ``env``); its
    output (stdout then stderr). A failure stops the benchmark with the end of
    it."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), **env}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip()[-2000:]
        raise SystemExit(f"{label} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout + proc.stderr


def _stage(script: str, args: list[str], options: dict, label: str, threads: int):
    """Run one of Firth's DVC stage scripts (stages/``script``) with its
    positional ``args`` and ``--key value`` ``options``."""
    cmd = [sys.executable, str(ROOT / "stages" / script), *args]
    for key, value in options.items():
        cmd += [f"--{key}", str(value)]
    _run(cmd, label, threads)


def _firth_nmt(kind, seed, epochs, params, paths, work: Path, threads: int) -> dict:
    """Train and evaluate one Firth run through its DVC stages' scripts."""
    name = f"peer-{kind}-{seed}"
    model, rep = work / "model" / name, work / "reports" / name
    t0 = time.perf_counter()
    _stage(
        "train_nmt.py",
        [name],
        {
            "params": params,
            "train": paths["train"],
            "valid": paths["valid"],
            "tokenizer": paths["tokenizer"],
            "out": model,
            "reports": rep,
            "checkpoint": work / f"{name}.pt",
        },
        f"Firth train-nmt {kind} seed {seed}",
        threads,
    )
    train_wall = time.perf_counter() - t0
    out = work / "eval" / name
    _stage(
        "evaluate_nmt.py",
        [name],
        {
            "params": params,
            "model": model,
            "tokenizer": paths["tokenizer"],
            "test": paths["test"],
            "flags": paths["flags"],
            "out": out,
            "reports": rep,
        },
        f"Firth evaluate-nmt {kind} seed {seed}",
        threads,
    )
    train = json.loads((rep / "train.json").read_text())
    detail = json.loads((rep / "eval_detail.json").read_text())
    import csv

    with open(out / "test.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return {
        "train_target_tokens": train["train_target_tokens"],
        "train_seconds": train["train_seconds"],
        "train_wall_seconds": round(train_wall, 1),
        "steps": train["steps"],
        "parameters": train["parameters"],
        "best_valid_loss": round(train["best_valid_loss"], 4),
        "decode_seconds": detail.get("decode_seconds", {}),
        "greedy": [r["greedy"] for r in rows],
        "beam": [r["beam"] for r in rows],
    }


@dataclass(frozen=True)
class _Joey:
    """What every JoeyNMT run of one benchmark shares: its Python, the tokenizer
    that decodes its outputs, the data folder and the pieces' lengths per split
    (for its batches per epoch), Firth's settings and the run's options."""

    python: str
    tok: object
    files: Path
    lengths: dict
    cfg: object
    ev: object
    epochs: int
    work: Path
    threads: int
    schedule: str


def _joey_train(j: _Joey, kind, seed, setting=None) -> tuple[dict, dict, Path]:
    """Train one JoeyNMT model (``setting``: its own (rate, batch tokens), else
    Firth's); its log's figures, its configuration and its model folder."""
    import yaml

    from firth.nmt.config import schedule as model_schedule

    batch = setting[1] if setting else model_schedule(j.cfg, kind).batch_tokens
    steps = _joey_steps(
        j.lengths["train", "src"], j.lengths["train", "trg"], batch, seed
    )
    tag = "" if setting is None else f"-lr{setting[0]:g}-b{setting[1]}"
    model_dir = j.work / f"joey-{kind}-{seed}{tag}"
    conf = _joey_config(
        kind,
        seed,
        j.epochs,
        j.files,
        model_dir,
        steps,
        j.cfg,
        j.ev.beam,
        j.ev.alpha,
        j.schedule,
        setting,
    )
    train_yaml = j.work / f"joey-{kind}-{seed}{tag}.yaml"
    train_yaml.write_text(yaml.safe_dump(conf))
    t0 = time.perf_counter()
    _run(
        [j.python, "-m", "joeynmt", "train", str(train_yaml), "--skip-test"],
        f"joeynmt train {kind} seed {seed}{tag}",
        j.threads,
    )
    train_wall = time.perf_counter() - t0
    log = _joey_log(model_dir / "train.log")
    row: dict = {
        "train_target_tokens": log["tokens"],
        "train_seconds": round(log["seconds"], 2),
        "train_wall_seconds": round(train_wall, 1),
        "steps": log["steps"],
        "lr": conf["training"]["learning_rate"],
        "batch_tokens": conf["training"]["batch_size"],
        "best_valid_ppl": min(log["valid_ppls"], default=None),
    }
    return row, conf, model_dir


def _detokenised(tok, path: Path) -> list[str]:
    """A peer's translations (``path``: one line of space-separated subword
    pieces each) decoded by Firth's tokenizer, unknown pieces and the special
    tokens (ids 0-3) dropped."""
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    return [
        tok.decode(
            [
                i
                for i in (tok.token_to_id(p) for p in line.split(" "))
                if i is not None and i > 3
            ]
        )
        for line in lines
    ]


def _joey_decode(j: _Joey, kind, seed, trained) -> dict:
    """A trained JoeyNMT model's (``_joey_train``'s) row with its greedy and
    beam translations of the test split and their decoding seconds."""
    import yaml

    row, conf, model_dir = trained
    row = {**row, "decode_seconds": {}}
    for decoding, width in (("greedy", 1), ("beam", j.ev.beam)):
        test = {
            **conf,
            "data": {k: v for k, v in conf["data"].items() if k != "dev"},
            "testing": {**conf["testing"], "beam_size": width},
        }
        test_yaml = j.work / f"{model_dir.name}-{decoding}.yaml"
        test_yaml.write_text(yaml.safe_dump(test))
        (model_dir / "test.log").unlink(missing_ok=True)
        hyp = j.work / f"{model_dir.name}.{decoding}"
        _run(
            [
                j.python,
                "-m",
                "joeynmt",
                "test",
                str(test_yaml),
                "--output-path",
                str(hyp),
            ],
            f"joeynmt test {kind} seed {seed}",
            j.threads,
        )
        row["decode_seconds"][decoding] = round(
            _joey_log(model_dir / "test.log")["generation_seconds"][-1], 2
        )
        row[decoding] = _detokenised(j.tok, Path(f"{hyp}.test"))
    return row


def _joey_tune(j: _Joey, kind, seed, grid) -> tuple[list[dict], tuple]:
    """JoeyNMT trained at each (rate, batch tokens) of ``grid`` at one seed; the
    trials (best validation perplexity each, as JoeyNMT logs it) and the trained run
    of the setting with the lowest, which the comparison then uses."""
    trials, runs = [], {}
    for lr, batch in grid:
        print(
            f"nmt: joeynmt {kind} seed {seed} tuning lr {lr:g} batch {batch}",
            flush=True,
        )
        runs[lr, batch] = _joey_train(j, kind, seed, (lr, batch))
        row = runs[lr, batch][0]
        trials.append(
            {
                k: row[k]
                for k in (
                    "lr",
                    "batch_tokens",
                    "steps",
                    "best_valid_ppl",
                    "train_seconds",
                )
            }
        )
        print(json.dumps(trials[-1]), flush=True)
    scored = [r for r in trials if r["best_valid_ppl"] is not None]
    if not scored:
        raise SystemExit(f"joeynmt {kind}: no validation loss in any trial's log")
    best = min(scored, key=lambda r: r["best_valid_ppl"])
    return trials, runs[best["lr"], best["batch_tokens"]]


OPENNMT = "3.0.4"  # the newest OpenNMT-py release whose pins admit torch 2.13


def opennmt_python(log: list[str]) -> tuple[str | None, str]:
    """OpenNMT-py's Python ($FIRTH_OPENNMT_PYTHON or its own venv) with this
    venv's torch version. OpenNMT-py 3.5.x pins torch < 2.3; 3.0.4 pins no
    torch version and runs on 2.13 (its cuda.amp deprecation warnings aside)."""
    pins = [torch_pin(), f"OpenNMT-py=={OPENNMT}"]
    return peer_python(f"opennmt-{OPENNMT}", "FIRTH_OPENNMT_PYTHON", pins, log)


def _onmt_steps(
    src: list[int], tgt: list[int], srcs: list[str], batch: int
) -> tuple[int, int]:
    """Batches and sentences in one epoch of OpenNMT-py 3.0's token batching,
    its DynamicDatasetIter.batch_iter (transliterated) over one bucket holding
    the whole training set (bucket_size = the training sentences): examples
    sorted by max(source pieces, target pieces + <s> and </s>); a batch closes
    once its size times its longest reaches ``batch``, the example that
    overflows it opening the next (one that overflows alone stays); a source
    already seen since the last batch closed is skipped (``srcs``: the source
    lines)."""
    key = [max(s, t + 2) for s, t in zip(src, tgt, strict=True)]
    steps, taken, minibatch, longest, seen = 0, 0, [], 0, set()
    for i in sorted(range(len(src)), key=key.__getitem__):
        if srcs[i] in seen:
            continue
        seen.add(srcs[i])
        taken += 1
        minibatch.append(i)
        longest = max(longest, key[i])
        size = len(minibatch) * longest
        if size == batch:
            steps, minibatch, longest, seen = steps + 1, [], 0, set()
        elif size > batch and len(minibatch) > 1:  # the last one opens the next
            steps, minibatch, longest, seen = steps + 1, [i], key[i], set()
    return steps + (len(minibatch) > 0), taken


def _onmt_config(
    kind: str, seed: int, files: Path, model: Path, steps: int, cfg, examples: int
) -> dict:
    """OpenNMT-py's training configuration at Firth's settings (nmt.common,
    nmt.transformer) for one epoch of ``steps`` batches. Its schedules are its
    recipes': a constant rate for the recurrent model (decay_method none, no
    warm-up) and the Noam schedule for the transformer, its rate set so that
    the peak (at the end of Firth's warm-up share) is Firth's peak rate."""
    from firth.nmt.config import schedule as model_schedule

    c, own = cfg.common, model_schedule(cfg, kind)
    conf = {
        "src_vocab": str(files / "vocab.txt"),
        "tgt_vocab": str(files / "vocab.txt"),
        "share_vocab": True,
        "src_vocab_size": 100000,
        "tgt_vocab_size": 100000,
        "data": {
            "corpus_1": {
                "path_src": str(files / "train.src"),
                "path_tgt": str(files / "train.trg"),
            },
            "valid": {
                "path_src": str(files / "valid.src"),
                "path_tgt": str(files / "valid.trg"),
            },
        },
        "bucket_size": examples,  # one bucket = one epoch, sorted and batched
        "num_workers": 0,  # in-process data, as Firth's
        "save_model": str(model / "model"),
        "save_checkpoint_steps": steps,
        "keep_checkpoint": 1,
        "seed": seed,
        "train_steps": steps,
        "valid_steps": max(1, steps // c.evals_per_epoch),
        "valid_batch_size": 2000,
        "report_every": 1,  # every step's sentences: the epoch is checked
        "word_vec_size": c.emb_dim,
        "share_embeddings": True,
        "share_decoder_embeddings": True,  # tied output layer
        "dropout": [c.dropout],
        "label_smoothing": c.label_smoothing,
        "optim": "adam",  # AdamW at Firth's weight decay 0 is Adam
        "adam_beta1": 0.9,
        "adam_beta2": 0.999,
        "max_grad_norm": c.clip,
        "batch_type": "tokens",
        "batch_size": own.batch_tokens,
        "normalization": "tokens",
        "param_init": 0.0,
        "param_init_glorot": True,
    }
    if kind == "transformer":
        t, warmup = cfg.transformer, max(1, round(own.warmup * steps))
        conf |= {
            "encoder_type": "transformer",
            "decoder_type": "transformer",
            "enc_layers": t.layers,
            "dec_layers": t.layers,
            "heads": t.heads,
            "hidden_size": c.emb_dim,
            "transformer_ff": t.ff,
            "position_encoding": True,
            "attention_dropout": [c.dropout],
            "decay_method": "noam",
            "warmup_steps": warmup,
            # Noam's peak, at step warmup: rate * (d * warmup) ** -0.5
            "learning_rate": own.lr * math.sqrt(c.emb_dim * warmup),
        }
    else:
        conf |= {
            "encoder_type": "brnn",  # hidden/2 per direction, as Firth's
            "decoder_type": "rnn",
            "rnn_type": c.cell.upper(),
            "enc_layers": c.layers,
            "dec_layers": 1,
            "enc_hid_size": c.hidden,
            "dec_hid_size": c.hidden,
            "global_attention": "mlp",  # Bahdanau's additive scorer
            "input_feed": 1,
            "bridge": True,
            "decay_method": "none",
            "learning_rate": own.lr,
        }
    return conf


def _onmt_log(path: Path) -> dict:
    """OpenNMT-py 3.0's training log: its steps, training seconds (the elapsed
    seconds of its last step report less its validations), the validation
    perplexities, and the translation seconds of ``-report_time``."""
    import re

    text = path.read_text(encoding="utf-8", errors="replace")
    reports = re.findall(r"Step\s+(\d+)/\s*\d+;.*?;\s+(\d+) sec;", text)
    sents = re.findall(r"Step\s+\d+/\s*\d+;.*?sents:\s+(\d+);", text)
    valid = re.findall(r"valid stats calculation.*?took: ([\d.]+) s", text, re.S)
    ppl = re.findall(r"Validation perplexity: ([\d.]+)", text)
    total = re.findall(r"Total translation time \(s\): ([\d.]+)", text)
    return {
        "steps": int(reports[-1][0]) if reports else None,
        "sentences": sum(int(n) for n in sents),
        "seconds": float(reports[-1][1]) - sum(map(float, valid)) if reports else None,
        "valid_ppls": [float(v) for v in ppl],
        "translation_seconds": [float(t) for t in total],
    }


@dataclass(frozen=True)
class _Onmt:
    """What every OpenNMT-py run of one benchmark shares (as ``_Joey``)."""

    python: str
    tok: object
    files: Path
    lengths: dict
    sources: list
    cfg: object
    ev: object
    work: Path
    threads: int
    target_tokens: int


def _onmt_bin(o: _Onmt, name: str) -> str:
    return str(Path(o.python).parent / name)


def _onmt_train(o: _Onmt, kind: str, seed: int) -> tuple[dict, Path]:
    """Train one OpenNMT-py model for one epoch at Firth's settings; its row
    and the last checkpoint (one epoch at a constant or Noam rate: no
    best-checkpoint choice, as OpenNMT-py keeps none)."""
    import yaml

    from firth.nmt.config import schedule as model_schedule

    batch = model_schedule(o.cfg, kind).batch_tokens
    src, tgt = o.lengths["train", "src"], o.lengths["train", "trg"]
    steps, sentences = _onmt_steps(src, tgt, o.sources, batch)
    model = o.work / f"onmt-{kind}-{seed}"
    model.mkdir()
    conf = _onmt_config(kind, seed, o.files, model, steps, o.cfg, len(src))
    path = o.work / f"onmt-{kind}-{seed}.yaml"
    path.write_text(yaml.safe_dump(conf))
    t0 = time.perf_counter()
    # its log, from its output: its -log_file loses every line after the data
    # loader's first log call (which re-initialises the logger without it)
    (model / "train.log").write_text(
        _run(
            [_onmt_bin(o, "onmt_train"), "-config", str(path)],
            f"OpenNMT-py train {kind} seed {seed}",
            o.threads,
        ),
        encoding="utf-8",
    )
    log = _onmt_log(model / "train.log")
    if (log["steps"], log["sentences"]) != (steps, sentences):
        raise SystemExit(
            f"OpenNMT-py {kind} seed {seed}: its log ends at step {log['steps']} "
            f"after {log['sentences']} sentences, expected one epoch: {steps} "
            f"steps, {sentences} sentences ({model / 'train.log'})"
        )
    row = {
        # one epoch: every training verse's target pieces and </s>, as Firth counts
        "train_target_tokens": o.target_tokens,
        "train_seconds": round(log["seconds"], 2),
        "train_wall_seconds": round(time.perf_counter() - t0, 1),
        "steps": steps,
        "lr": conf["learning_rate"],
        "batch_tokens": conf["batch_size"],
        "last_valid_ppl": log["valid_ppls"][-1] if log["valid_ppls"] else None,
    }
    return row, model / f"model_step_{steps}.pt"


def _onmt_decode(o: _Onmt, kind: str, seed: int, trained) -> dict:
    """A trained OpenNMT-py model's row with its greedy and beam translations
    of the test split: GNMT's length penalty (``-length_penalty wu``) at
    evaluate_nmt.alpha, at least evaluate_nmt.min_len tokens, the longest
    output as Firth's (a * the longest test source + b)."""
    row, checkpoint = trained
    row = {**row, "decode_seconds": {}}
    longest = math.floor(
        o.cfg.common.max_len_a * max(o.lengths["test", "src"]) + o.cfg.common.max_len_b
    )
    for decoding, width in (("greedy", 1), ("beam", o.ev.beam)):
        hyp = o.work / f"{checkpoint.parent.name}.{decoding}"
        log = o.work / f"{checkpoint.parent.name}.{decoding}.log"
        out = _run(
            [
                _onmt_bin(o, "onmt_translate"),
                "-model",
                str(checkpoint),
                "-src",
                str(o.files / "test.src"),
                "-output",
                str(hyp),
                "-beam_size",
                str(width),
                "-length_penalty",
                "wu",
                "-alpha",
                str(o.ev.alpha),
                "-min_length",
                str(o.ev.min_len),
                "-max_length",
                str(longest),
                "-batch_size",
                str(o.cfg.common.eval_batch),
                "-batch_type",
                "sents",
                "-seed",
                str(seed),
                "-report_time",
            ],
            f"OpenNMT-py translate {kind} seed {seed}",
            o.threads,
            # its checkpoints pickle argparse.Namespace, which torch >= 2.6's
            # weights-only load refuses; these are the benchmark's own files
            TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1",
        )
        log.write_text(out, encoding="utf-8")
        row["decode_seconds"][decoding] = round(
            _onmt_log(log)["translation_seconds"][-1], 2
        )
        row[decoding] = _detokenised(o.tok, hyp)
    return row


def _nmt_row(row: dict, tool: str, kind: str, seed: int, refs: list[str]) -> dict:
    """One tool's run with its test scores and speeds (printed without the
    translations)."""
    from firth.nmt.evaluate import Scores

    row = {"tool": tool, "model": kind, "seed": seed, **row}
    row["system"] = f"{tool}-{kind}"
    row["train_target_tokens_per_second"] = round(
        row["train_target_tokens"] / row["train_seconds"]
    )
    for decoding in ("greedy", "beam"):
        sc = Scores(row[decoding], refs)
        row[f"{decoding}_bleu"] = round(sc.score("bleu"), 3)
        row[f"{decoding}_chrf"] = round(sc.score("chrf"), 3)
        row[f"{decoding}_sentences_per_second"] = round(
            len(refs) / row["decode_seconds"][decoding], 1
        )
        row.setdefault("stats", {})[decoding] = sc.stats
    shown = {k: v for k, v in row.items() if k not in ("greedy", "beam", "stats")}
    print(json.dumps(shown), flush=True)
    return row


def _nmt_stats(rows, tool: str, kind: str, decoding: str, metric: str) -> list:
    """Each seed's per-verse sacreBLEU statistics of one tool's model."""
    import numpy as np

    return [
        np.array(r["stats"][decoding][metric])
        for r in rows
        if r["tool"] == tool and r["model"] == kind
    ]


def nmt(
    seeds: list[int],
    threads: int,
    rule,
    epochs: int,
    kinds,
    workdir: Path,
    joey_schedule: str = "recipe",
    joey_grid: list[tuple[float, int]] | None = None,
    peers: tuple[str, ...] = NMT_PEERS,
) -> dict:
    """Each of ``kinds`` by Firth and each of ``peers`` (joeynmt, opennmt) at
    ``seeds``. With ``joey_grid``, JoeyNMT's (rate, batch tokens) is chosen per
    model on the validation split at the first seed (its lowest best validation
    loss) and that setting runs at every seed; Firth keeps its params
    (themselves chosen on validation). A peer that cannot be installed is
    skipped with the error."""
    import yaml

    from firth.config import load_section, load_sections
    from firth.evidence import BLEU_METRIC, CHRF_METRIC
    from firth.inference import compare, side
    from firth.nmt.config import EvaluateNmt, Nmt
    from firth.nmt.data import load_tokenizer, read_pairs

    pythons, skipped = {}, {}
    for peer, find in (("joeynmt", joeynmt_python), ("opennmt", opennmt_python)):
        if peer in peers:
            log: list[str] = []
            pythons[peer] = find(log)
            if pythons[peer][0] is None:
                skipped[peer] = f"tried: {'; '.join(log)}; {pythons[peer][1]}"
                del pythons[peer]
    if not pythons:
        return {"skipped": skipped}
    data = PROJECT / "data/subsampled/parallel"
    paths = {
        "train": data / "train.tsv",
        "valid": data / "valid.tsv",
        "test": data / "test.tsv",
        "tokenizer": PROJECT / "data/tokenizers/parallel",
        "flags": PROJECT / "data/audit/parallel/flags.tsv",
    }
    # Firth's settings, its runs at the peer's epochs, JoeyNMT's length penalty
    # the settings of this checkout (the code measured); the data are PROJECT's
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["nmt"]["common"].update(threads=threads, device="cpu")
    params["nmt"]["runs"] = {
        f"peer-{k}-{s}": {"model": k, "seed": s, "epochs": float(epochs)}
        for k in kinds
        for s in seeds
    }
    params["evaluate_nmt"].update(penalty="gnmt", heatmaps=[])
    params_path = workdir / "params.yaml"
    params_path.write_text(yaml.safe_dump(params), encoding="utf-8")
    cfg, _ = load_sections("nmt", params_path, schema=Nmt)
    ev = load_section("evaluate_nmt", params_path, schema=EvaluateNmt)

    tok = load_tokenizer(paths["tokenizer"] / "tokenizer.json")
    files = workdir / "joey-data"
    files.mkdir()
    lengths = {}
    for split in ("train", "valid", "test"):
        pairs = read_pairs(paths[split])
        for ext, texts in (("src", pairs.source), ("trg", pairs.target)):
            pieces = [e.tokens for e in tok.encode_batch(list(texts))]
            lengths[split, ext] = [len(p) for p in pieces]
            (files / f"{split}.{ext}").write_text(
                "".join(" ".join(p) + "\n" for p in pieces), encoding="utf-8"
            )
    vocab = [tok.id_to_token(i) for i in range(4, tok.get_vocab_size())]
    (files / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    refs = list(read_pairs(paths["test"]).target)

    joey = onmt = None
    if "joeynmt" in pythons:
        joey = _Joey(
            pythons["joeynmt"][0],
            *(tok, files, lengths, cfg, ev, epochs, workdir, threads, joey_schedule),
        )
    if "opennmt" in pythons:
        if epochs != 1:
            raise SystemExit("OpenNMT-py runs one epoch here: --nmt-epochs 1")
        onmt = _Onmt(
            pythons["opennmt"][0],
            *(tok, files, lengths, list(read_pairs(paths["train"]).source), cfg, ev),
            workdir,
            threads,
            sum(lengths["train", "trg"]) + len(lengths["train", "trg"]),
        )
    rows, tuning, tuned = [], {}, {}
    for kind in kinds if joey_grid and joey else ():
        trials, tuned[kind] = _joey_tune(joey, kind, seeds[0], joey_grid)
        chosen = tuned[kind][0]
        tuning[kind] = {
            "seed": seeds[0],
            "trials": trials,
            "chosen": {"lr": chosen["lr"], "batch_tokens": chosen["batch_tokens"]},
        }
    for kind in kinds:
        setting = None
        if kind in tuned:
            setting = (tuned[kind][0]["lr"], tuned[kind][0]["batch_tokens"])
        for seed in seeds:
            for tool in ("firth", *pythons):
                print(f"nmt: {tool} {kind} seed {seed}", flush=True)
                if tool == "firth":
                    row = _firth_nmt(
                        kind, seed, epochs, params_path, paths, workdir, threads
                    )
                elif tool == "opennmt":
                    row = _onmt_decode(onmt, kind, seed, _onmt_train(onmt, kind, seed))
                elif kind in tuned and seed == seeds[0]:  # its tuning run
                    row = _joey_decode(joey, kind, seed, tuned[kind])
                else:
                    trained = _joey_train(joey, kind, seed, setting)
                    row = _joey_decode(joey, kind, seed, trained)
                rows.append(_nmt_row(row, tool, kind, seed, refs))
    keys = (
        "train_target_tokens_per_second",
        "train_seconds",
        "train_wall_seconds",
        "greedy_bleu",
        "greedy_chrf",
        "beam_bleu",
        "beam_chrf",
        "greedy_sentences_per_second",
        "beam_sentences_per_second",
    )
    summary = mean_sd(rows, "system", keys)
    metrics = {"bleu": BLEU_METRIC, "chrf": CHRF_METRIC}
    comparisons = []
    for kind, tool in ((k, t) for k in kinds for t in pythons):
        ours, peer = summary.get(f"firth-{kind}"), summary.get(f"{tool}-{kind}")
        if ours is None or peer is None:
            continue
        entry = {
            "model": kind,
            "peer": tool,
            "train_tokens_per_second_ratio": round(
                ours["train_target_tokens_per_second"]
                / peer["train_target_tokens_per_second"],
                3,
            ),
            "beam_sentences_per_second_ratio": round(
                ours["beam_sentences_per_second"] / peer["beam_sentences_per_second"], 3
            ),
            "tests": {},
        }
        for decoding in ("greedy", "beam"):
            for name, metric in metrics.items():
                t = compare(
                    side("firth", _nmt_stats(rows, "firth", kind, decoding, name)),
                    side(tool, _nmt_stats(rows, tool, kind, decoding, name)),
                    metric,
                    rule,
                )
                entry["tests"][f"{decoding}_{name}"] = {
                    "outcome": OUTCOME[t.verdict],
                    "firth": round(t.a.score, 3),
                    "peer": round(t.b.score, 3),
                    "sentence": t.sentence(2),
                }
        comparisons.append(entry)
    for r in rows:
        for k in ("greedy", "beam", "stats"):
            r.pop(k)
    out = {
        "data": "data/subsampled/parallel (KJV -> WEB verses), Firth's joint BPE "
        "(data/tokenizers/parallel) for every tool: the peers read the same subword "
        "pieces (JoeyNMT at level word, OpenNMT-py without transforms, both with "
        "Firth's vocabulary) and their outputs are decoded by the same tokenizer; "
        "sacreBLEU's BLEU and chrF on the detokenised test verses",
        "settings": f"{epochs} epoch(s) each; nmt.common of params.yaml for both "
        "(embedding and hidden sizes, dropout, label smoothing, batch_tokens, "
        "lr, clip, evaluations per epoch), AdamW, tied embeddings; transformer: "
        "nmt.transformer (layers, heads, ff, lr, warm-up, batch_tokens; both "
        "tools). Schedules each tool's own: Firth cosine decay after its warm-up "
        "share (the transformer: nmt.transformer.decay); JoeyNMT per "
        "joeynmt.schedule (recipe: constant rate for the recurrent model, the same "
        "warm-up share then inverse square root for the transformer). Beam 5 with "
        "JoeyNMT's "
        "length penalty ((5 + |y|) / 6)^alpha for both (evaluate_nmt.penalty "
        "gnmt); JoeyNMT's batches are shuffled sentences (padding counts against "
        "batch_tokens), Firth's length-sorted. Tokens/s: training target tokens "
        "per second of training steps (validation excluded), as each tool logs "
        f"it; {threads} threads each",
        "rows": rows,
        "summary": summary,
        "comparisons": comparisons,
        "skipped": skipped,
    }
    if joey:
        out["joeynmt"] = {
            "version": JOEYNMT,
            "how": pythons["joeynmt"][1],
            "schedule": joey_schedule,
            "tuned_on_validation": tuning,
        }
    if onmt:
        out["opennmt"] = {
            "version": OPENNMT,
            "how": pythons["opennmt"][1],
            "settings": "OpenNMT-py 3.0.4 (onmt_train, onmt_translate) at the same "
            "sizes, dropout, label smoothing, batch tokens, clipping and tied "
            "embeddings: a bidirectional GRU encoder (hidden/2 per direction), an "
            "input-feeding GRU decoder with the additive (mlp) attention and a "
            "bridge; its transformer with sinusoidal positions. Adam (Firth's "
            "AdamW at weight decay 0); its recipes' schedules: constant rate for "
            "the recurrent model, Noam warm-up and decay for the transformer with "
            "its peak at Firth's rate after Firth's warm-up share. One epoch: one "
            "bucket holding the whole training set, sorted by length, token "
            "batches shuffled; the last checkpoint translates (it keeps no best). "
            "Decoding: GNMT length penalty (wu) at evaluate_nmt.alpha, min_length "
            "evaluate_nmt.min_len, max_length from the longest test source",
        }
    return out


# -- taggers ------------------------------------------------------------------

FLAIR = "0.15.1"
FLAIR_DATA = ("wnut16", "wsj-pos-sample")


def flair_python(log: list[str]) -> tuple[str | None, str]:
    """flair's Python ($FIRTH_FLAIR_PYTHON or its own venv) with flair, gensim
    (its word2vec reader) and this venv's torch and gensim versions (flair pulls
    transformers, boto3 and more, kept out of the project's environment)."""
    pins = [torch_pin(), f"gensim=={version('gensim')}", f"flair=={FLAIR}"]
    return peer_python(f"flair-{FLAIR}", "FIRTH_FLAIR_PYTHON", pins, log)


def _firth_tag_one(folder: str, test: list, threads: int, queue) -> None:
    """Tag ``test`` with a trained cell's pretrained-init model, timed."""
    import torch

    from firth.io import read_json
    from firth.query.tag import predict_tags
    from firth.tagging.config import TaggerCommon
    from firth.tagging.data import Vocab
    from firth.tagging.models import build_tagger

    torch.set_num_threads(threads)
    cfg = read_json(Path(folder) / "config.json")
    init = cfg["inits"][-1]
    vocab = Vocab.from_json(read_json(Path(folder) / f"vocab-{init}.json"))
    common = TaggerCommon.model_validate(cfg["common"])
    model = build_tagger(vocab, cfg["head"], common)
    model.load_state_dict(torch.load(Path(folder) / f"{init}.pt", weights_only=True))
    model.eval()
    predict_tags(model, vocab, torch.device("cpu"), test)  # warm-up, as for flair
    t0 = time.perf_counter()
    pred = predict_tags(model, vocab, torch.device("cpu"), test)
    queue.put({"init": init, "tag_seconds": time.perf_counter() - t0, "pred": pred})


def taggers(seeds: list[int], threads: int, rule, workdir: Path) -> dict:
    import yaml

    from firth.evidence import ACCURACY, F1, tag_columns
    from firth.inference import compare, side
    from firth.tagging.data import read_split
    from firth.tagging.evaluate import gold_entities, sentence_stats

    log: list[str] = []
    python, how = flair_python(log)
    if python is None:
        return {"skipped": {"flair": f"tried: {'; '.join(log)}; {how}"}}
    # the settings of this checkout (the code measured); the data are PROJECT's
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    t = params["tagger"]
    t["common"].update(chars="lstm", threads=threads, device="cpu")
    t.update(heads=["crf"], seeds=list(seeds), data=list(FLAIR_DATA))
    params_path = workdir / "params.yaml"
    params_path.write_text(yaml.safe_dump(params), encoding="utf-8")
    c = t["common"]
    vectors = PROJECT / "data/embeddings" / t["vectors"]
    rows, stats, metrics = [], {}, {}
    for data in FLAIR_DATA:
        folder = PROJECT / "data/subsampled/tagged" / data
        test = read_split(folder / "test.conll")
        words = [list(w) for w, _ in test]
        gold = [list(g) for _, g in test]
        bio = all(x == "O" or x[:2] in ("B-", "I-") for g in gold for x in g)
        n_gold = gold_entities(gold) if bio else [0] * len(gold)
        metric = metrics[data] = F1 if bio else ACCURACY
        for seed in seeds:
            seed_vectors = vectors / f"seed-{seed}"
            if not seed_vectors.exists():
                seed_vectors = next(iter(sorted(vectors.glob("seed-*"))))
            for tool in ("firth", "flair"):
                print(f"taggers: {tool} {data} seed {seed}", flush=True)
                out = workdir / f"{tool}-{data}-{seed}"
                if tool == "firth":
                    rep = out / "reports"
                    _stage(
                        "train_tagger.py",
                        [data, "crf", str(seed)],
                        {
                            "params": params_path,
                            "train": folder / "train.conll",
                            "valid": folder / "valid.conll",
                            "vectors": vectors,
                            "out": out / "model",
                            "reports": rep,
                            "checkpoints": out / "checkpoints",
                        },
                        f"Firth train-tagger {data} seed {seed}",
                        threads,
                    )
                    trained = json.loads((rep / "train.json").read_text())
                    tagged = in_fresh_process(
                        _firth_tag_one,
                        str(out / "model"),
                        words,
                        threads,
                        label=f"Firth tagger {data} seed {seed}",
                    )
                    m = next(
                        x for x in trained["models"] if x["init"] == tagged["init"]
                    )
                    row = {
                        "train_sentences_per_second": m["sentences_per_second"],
                        "train_seconds": m["train_seconds"],
                        "epochs_run": m["epochs_run"],
                        "best_epoch": m["best_epoch"],
                        "parameters": m["parameters"],
                        "tag_seconds": round(tagged["tag_seconds"], 3),
                    }
                    pred = tagged["pred"]
                else:
                    settings = {
                        "data": str(folder),
                        "vectors": str(seed_vectors / "vectors.txt"),
                        "seed": seed,
                        "threads": threads,
                        "out": str(out),
                        "hidden": c["hidden"],
                        "char_dim": c["char_dim"],
                        "char_hidden": c["char_hidden"],
                        "dropout": c["dropout"],
                        "word_dropout": 0.05,
                        "lr": c["lr"],
                        "batch": c["batch"],
                        "epochs": c["epochs"],
                        "patience": c["patience"],
                        "eval_batch": params["evaluate_tagger"]["batch"],
                    }
                    conf = workdir / f"flair-{data}-{seed}.json"
                    conf.write_text(json.dumps(settings))
                    _run(
                        [python, str(ROOT / "benchmarks/peers_flair.py"), str(conf)],
                        f"flair {data} seed {seed}",
                        threads,
                    )
                    res = json.loads((out / "result.json").read_text())
                    row = {
                        k: res[k]
                        for k in (
                            "train_sentences_per_second",
                            "train_seconds",
                            "parameters",
                            "tag_seconds",
                            "flair_version",
                        )
                    }
                    blocks = (out / "predictions.tsv").read_text(encoding="utf-8")
                    pred = [b.split("\n") for b in blocks.rstrip("\n").split("\n\n")]
                    if [len(p) for p in pred] != [len(g) for g in gold]:
                        raise SystemExit(
                            f"flair {data} seed {seed}: predictions "
                            "do not align with the test tokens"
                        )
                st = sentence_stats(gold, pred, bio=bio)
                cols = tag_columns(
                    tokens=[len(g) for g in gold],
                    correct=st["correct"],
                    gold=n_gold,
                    tp=st.get("tp"),
                    pred=st.get("pred"),
                    invalid=st.get("invalid"),
                )
                stats.setdefault((data, tool), []).append(cols)
                row = {
                    "tool": tool,
                    "data": data,
                    "seed": seed,
                    "system": f"{tool}-{data}",
                    "metric": metric.name,
                    "score": round(metric.score(stats[data, tool][-1]), 3),
                    "tag_sentences_per_second": round(
                        len(gold) / max(row["tag_seconds"], 1e-9), 1
                    ),
                    **row,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    keys = (
        "score",
        "train_sentences_per_second",
        "train_seconds",
        "tag_sentences_per_second",
    )
    summary = mean_sd(rows, "system", keys)
    comparisons = []
    for data in FLAIR_DATA:
        ours, peer = summary[f"firth-{data}"], summary[f"flair-{data}"]
        metric = metrics[data]
        test_ = compare(
            side("firth", stats[data, "firth"]),
            side("flair", stats[data, "flair"]),
            metric,
            rule,
        )
        comparisons.append(
            {
                "data": data,
                "metric": metric.name,
                "outcome": OUTCOME[test_.verdict],
                "firth": round(test_.a.score, 3),
                "peer": round(test_.b.score, 3),
                "sentence": test_.sentence(2),
                "train_sentences_per_second_ratio": round(
                    ours["train_sentences_per_second"]
                    / peer["train_sentences_per_second"],
                    3,
                ),
                "tag_sentences_per_second_ratio": round(
                    ours["tag_sentences_per_second"] / peer["tag_sentences_per_second"],
                    3,
                ),
            }
        )
    return {
        "data": "data/subsampled/tagged/<data>/{train,valid,test}.conll of the "
        "default (the same splits for both); test scores by seqeval's entities "
        "(WNUT-16, BIO) or token accuracy (WSJ POS), from each tool's predicted tags",
        "flair": {"version": FLAIR, "how": how},
        "settings": "BiLSTM-CRF, word vectors tagger.vectors (seed s: Firth's "
        "data/embeddings/<vectors>/seed-<s>/vectors.txt) fine-tuned, character "
        "BiLSTM (tagger.common.char_dim, char_hidden per direction; Firth's "
        "chars: lstm), hidden, dropout, batch, Adam lr, at most tagger.common."
        "epochs with the best validation epoch kept, from params.yaml. Each "
        "tool's own: Firth stops after `patience` epochs without a better "
        "validation score and reads training singletons as <unk> with "
        "probability word_dropout; flair halves the rate after `patience` such "
        "epochs and drops whole words with probability 0.05 (its default). "
        "Training sentences/s over training steps (validation excluded); "
        f"tagging: the test split, batches of evaluate_tagger.batch; {threads} "
        "threads each",
        "rows": rows,
        "summary": summary,
        "comparisons": comparisons,
        "skipped": {},
    }


def merge_nmt(old: dict | None, new: dict) -> dict:
    """The new nmt result with the (model, tool) runs it did not make kept from
    the old one: rows and summaries per model and tool, comparisons per model
    and peer (JoeyNMT where an older file names none), each keeping its commit;
    a peer's own block (its version, tuning) is kept where the new run did not
    run that peer."""
    if not old or "rows" not in old or "rows" not in new:
        return new
    ran = {(r["model"], r["tool"]) for r in new["rows"]}
    for kept in (*old["rows"], *old["comparisons"]):
        kept.setdefault("head_commit", old.get("head_commit"))
    out = {**{k: v for k, v in old.items() if k in NMT_PEERS}, **new}
    out["rows"] = [r for r in old["rows"] if (r["model"], r["tool"]) not in ran] + new[
        "rows"
    ]
    out["summary"] = {
        **{
            k: v
            for k, v in old["summary"].items()
            if tuple(reversed(k.split("-", 1))) not in ran
        },
        **new["summary"],
    }
    out["comparisons"] = [
        c
        for c in old["comparisons"]
        if (c["model"], c.get("peer", "joeynmt")) not in ran
    ] + new["comparisons"]
    out["skipped"] = {**old.get("skipped", {}), **new.get("skipped", {})}
    for peer in {t for _, t in ran}:
        out["skipped"].pop(peer, None)
    return out


# -- main ---------------------------------------------------------------------


def _grid_point(text: str) -> tuple[float, int]:
    """``LR:BATCH`` of --joey-grid."""
    try:
        lr, batch = text.split(":")
        return float(lr), int(batch)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected LR:BATCH, a rate and batch tokens, e.g. 0.0005:1000"
        ) from None


def main(argv=None) -> None:
    from firth.inference import Rule

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--seeds", nargs="+", type=int, default=[13, 14])
    p.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="threads of every tool (default: every core)",
    )
    p.add_argument("--nltk-lines", type=int, default=2000)
    p.add_argument(
        "--nmt-epochs", type=int, default=1, help="epochs of every NMT run (both tools)"
    )
    p.add_argument(
        "--nmt-models", nargs="+", default=list(NMT_KINDS), choices=NMT_KINDS
    )
    p.add_argument(
        "--nmt-peers",
        nargs="+",
        default=list(NMT_PEERS),
        choices=NMT_PEERS,
        help="the NMT toolkits Firth is run beside (each in its own venv)",
    )
    p.add_argument(
        "--joey-schedule",
        default="recipe",
        choices=["recipe", "inverse-sqrt", "constant"],
        help="JoeyNMT's rate: its recipes' (constant for the recurrent model, whose "
        "plateau scheduler does not fire in one epoch; warm-up then inverse square "
        "root for the transformer), inverse-sqrt for both, or constant for both",
    )
    p.add_argument(
        "--joey-grid",
        nargs="+",
        type=_grid_point,
        metavar="LR:BATCH",
        help="choose JoeyNMT's peak rate and batch tokens per model among these on "
        "the validation split (first seed; lowest validation perplexity), e.g. "
        "0.0005:250 0.0005:1000 0.001:1000",
    )
    p.add_argument(
        "--nltk-test",
        type=int,
        default=40,
        help="test lines nltk scores (about 15 tokens/s)",
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/peers.json"))
    args = p.parse_args(argv)
    if not (PROJECT / "data/subsampled/text/train.txt").exists():
        raise SystemExit(
            f"{PROJECT}: no data/subsampled/text/train.txt; run `dvc repro` there "
            "first (or point FIRTH_PROJECT at a trained clone)"
        )
    rule = Rule()
    result = {
        "command": " ".join(["python benchmarks/peers.py", *(argv or sys.argv[1:])]),
        "head_commit": head_commit(ROOT),
        "project": str(PROJECT),
        "machine": machine(),
        "speed_probe_before": speed_probe(),
        "versions": {
            k: version(k) for k in ("torch", "gensim", "fasttext", "kenlm", "nltk")
        },
        "rule": "paired bootstrap over test items (and seeds), "
        f"{rule.resamples} replicates, {rule.confidence:.0%} intervals",
        "tasks": {},
    }
    t0 = time.time()
    if "vectors" in args.tasks:
        result["tasks"]["vectors"] = vectors(args.seeds, args.threads, rule)
    if "ngram" in args.tasks:
        with tempfile.TemporaryDirectory() as tmp:
            result["tasks"]["ngram"] = ngram(
                rule, args.nltk_lines, args.nltk_test, Path(tmp)
            )
    if "nmt" in args.tasks:
        with tempfile.TemporaryDirectory() as tmp:
            result["tasks"]["nmt"] = nmt(
                args.seeds,
                args.threads,
                rule,
                args.nmt_epochs,
                args.nmt_models,
                Path(tmp),
                args.joey_schedule,
                args.joey_grid,
                tuple(args.nmt_peers),
            )
    if "taggers" in args.tasks:
        with tempfile.TemporaryDirectory() as tmp:
            result["tasks"]["taggers"] = taggers(
                args.seeds, args.threads, rule, Path(tmp)
            )
    for name in args.tasks:  # a task kept from an earlier run says when it was run
        result["tasks"][name]["head_commit"] = result["head_commit"]
        for row in result["tasks"][name].get("rows", []):
            row["head_commit"] = result["head_commit"]
        for entry in result["tasks"][name].get("comparisons", []):
            entry["head_commit"] = result["head_commit"]
    result["speed_probe_after"] = speed_probe()
    result["wall_seconds"] = round(time.time() - t0, 1)
    old = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    if "nmt" in args.tasks and (
        set(args.nmt_models) != set(NMT_KINDS) or set(args.nmt_peers) != set(NMT_PEERS)
    ):
        result["tasks"]["nmt"] = merge_nmt(
            old.get("tasks", {}).get("nmt"), result["tasks"]["nmt"]
        )
    if set(args.tasks) != set(TASKS):  # keep the other tasks' results
        result["tasks"] = {**old.get("tasks", {}), **result["tasks"]}
    write_result(args.out, result)
    print(json.dumps(result["tasks"], indent=1)[:4000])


if __name__ == "__main__":
    main()
