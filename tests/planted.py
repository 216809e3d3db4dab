"""Planted evidence for the verdict tests: per-item statistics of known quality for
every task (firth.evidence.Evidence), built without training anything.

Translation statistics are sacreBLEU's own, extracted from real Psalms (KJV
sources, ASV references) with outputs whose quality is planted: a system of
quality q outputs the reference for a share q of the verses and a word-dropped
copy of the source for the rest (seeded per system and seed)."""

from __future__ import annotations

import functools
import random
import zlib

import numpy as np
from conftest import embedding_eval, lm_eval, nmt_eval, tagger_eval
from pythonbible import Book, Version, get_verse_id, get_verse_text
from sacrebleu.metrics import BLEU, CHRF

from firth.bias.results import (
    BiasEval,
    BiasItems,
    RecoverItems,
    Recovery,
    SeedBias,
    WeatItems,
)
from firth.embeddings.results import EmbeddingItems, Word2VecTrain
from firth.evidence import Evidence
from firth.inference import Rule
from firth.lm.results import LmItems
from firth.nmt.results import AttentionEval, AttentionItems, Intervention, NmtItems
from firth.probe.results import ProbeEval, ProbeItems, ProbeRow
from firth.tagging.results import TaggerItems, TaggerTrain

RULE = Rule(resamples=300)


def _seed(*parts) -> int:
    """A seed stable across processes (Python's str hash is not)."""
    return zlib.crc32("-".join(map(str, parts)).encode())


@functools.cache
def psalms() -> tuple[tuple[str, ...], tuple[str, ...]]:
    srcs, refs = [], []
    for chapter, verses in ((18, 50), (119, 120)):
        for verse in range(1, verses + 1):
            vid = get_verse_id(Book.PSALMS, chapter, verse)
            srcs.append(get_verse_text(vid, version=Version.KING_JAMES))
            refs.append(get_verse_text(vid, version=Version.AMERICAN_STANDARD))
    return tuple(srcs), tuple(refs)


def nmt_items(run: str, quality: float, seed: int, *, kind="model") -> NmtItems:
    """``kind``: model (quality q), copy (the sources), unrelated (another
    verse's reference: what a model that ignores the source may output)."""
    srcs, refs = psalms()
    rng = random.Random(f"{run}-{seed}")
    if kind == "copy":
        hyps = list(srcs)
    elif kind == "unrelated":
        hyps = [refs[(i + 7 + seed) % len(refs)] for i in range(len(refs))]
    else:
        hyps = [
            r if rng.random() < quality else " ".join(w for w in s.split()[::2])
            for s, r in zip(srcs, refs, strict=True)
        ]
    bleu = BLEU()._extract_corpus_statistics(hyps, [list(refs)])
    chrf = CHRF()._extract_corpus_statistics(hyps, [list(refs)])
    dirty = [int(i % 10 == 0) for i in range(len(hyps))]
    return NmtItems(
        run=run,
        test_sha256="t" * 64,
        dirty=dirty,
        src_words=[len(x.split()) for x in srcs],
        bleu=[[int(x) for x in r] for r in bleu],
        chrf=[[int(x) for x in r] for r in chrf],
    )


def lm_items(run: str, rate: float, seed: int, *, dirty_gain=0.0) -> LmItems:
    rng = np.random.default_rng(_seed(run, seed))
    chars = rng.integers(40, 160, size=400)
    dirty = (np.arange(400) % 8 == 0).astype(int)
    bits = chars * (rate - dirty_gain * dirty) + rng.normal(0, 3, size=400)
    return LmItems(
        run=run,
        test_sha256="l" * 64,
        bits=[round(float(b), 4) for b in bits],
        tokens=[int(c // 5) for c in chars],
        chars=[int(c) for c in chars],
        unigram_bits=[round(float(c * 2.5), 4) for c in chars],
        dirty=[int(d) for d in dirty],
    )


def tagger_items(run, *, f1, invalid, seeds=(13, 14), n=300, dirty=4):
    """BIO tagger statistics: per sentence 2 gold entities; a model finds a share
    ``f1[init]`` of them (and predicts as many) and breaks BIO in a share
    ``invalid`` of the sentences."""
    gold = [2] * n
    models = []
    for init, q in f1.items():
        for s in seeds:
            rng = np.random.default_rng(_seed(run, init, s))
            tp = rng.binomial(2, q, size=n)
            models.append(
                {
                    "init": init,
                    "seed": s,
                    "correct": [int(8 + t) for t in tp],
                    "tp": [int(t) for t in tp],
                    "pred": gold,
                    "invalid": [int(x) for x in rng.random(n) < invalid],
                }
            )
    base = {"correct": [8] * n, "tp": [1] * n, "pred": [2] * n, "invalid": [0] * n}
    return TaggerItems(
        run=run,
        test_sha256="g" * 64,
        tokens=[10] * n,
        gold=gold,
        dirty=[int(i < dirty) for i in range(n)],
        models=models,
        baselines={"word-only": base},
    )


def tagger_train(run, head, valid: dict[str, float], seed=13) -> TaggerTrain:
    loop = {"steps": 1, "planned_steps": 1, "steps_per_epoch": 1} | {
        "epochs_run": 1.0,
        "early_stopped": False,
        "train_seconds": 1.0,
    }
    models = [
        loop
        | {"init": init, "seed": seed, "epochs": 1, "best_epoch": 1}
        | {"best_valid_score": v, "sentences_per_second": 1.0}
        | {"pretrained_rows": 0, "vocab": 10, "parameters": 10}
        for init, v in valid.items()
    ]
    return TaggerTrain.model_validate(
        {"run": run, "data": "ner", "head": head, "seed": seed, "scheme": "BIO"}
        | {"valid_metric": "entity F1", "train_sentences": 10, "train_sha256": "x"}
        | {"tags": 5, "vectors": "sgns", "vectors_path": "v", "vectors_words": 1}
        | {"peak_rss_mb": 1.0, "models": models, "device": "cpu"}
        | {"precision": "fp32", "compile": False, "threads": 1}
    )


def embedding_items(
    method, *, noise, incl_keep, seeds=(13, 14), hit=0.4
) -> EmbeddingItems:
    """400 similarity pairs per set (cosine = score + noise) and 600 analogy
    questions answered right with p ``hit`` (only-b 0.05), of which the
    no-exclusion variant keeps a share ``incl_keep``."""
    rng0 = np.random.default_rng(0)
    gold = rng0.normal(size=400)
    test = [int(i % 2 == 0) for i in range(400)]
    sims, hits = {}, {}
    for s in seeds:
        rng = np.random.default_rng(_seed(method, s))
        cos = gold + rng.normal(0, noise, size=400)
        sims[str(s)] = [round(float(c), 6) for c in cos]
        add = rng.random(600) < hit
        hits[str(s)] = {
            "3cosadd": [int(x) for x in add],
            "3cosadd_incl": [int(x) for x in add & (rng.random(600) < incl_keep)],
            "3cosmul": [int(x) for x in add],
            "only_b": [int(x) for x in rng.random(600) < 0.05],
        }
    sim = {"gold": [float(g) for g in gold], "test": test, "cosine": sims}
    return EmbeddingItems(
        method=method,
        similarity={"wordsim353": sim, "simlex999": sim},
        analogy={
            "analogy-google": {"candidates": 3000, "covered": list(range(600))}
            | {"hits": hits}
        },
    )


def bias_evidence(*, before_gap=1.0, after_gap=0.0, recovered=0.9, seeds=(13, 14)):
    """SGNS's gender WEATs (2 tests, 2 x 12 target words) whose associations
    differ by ``before_gap`` between X and Y in the original vectors and by
    ``after_gap`` after debiasing, and 200 biased words recovered at
    ``recovered``."""
    rng = np.random.default_rng(7)
    test, in_x = [], []
    for t in range(2):
        test += [t] * 24
        in_x += [1] * 12 + [0] * 12
    x = np.asarray(in_x, dtype=float)
    before, after, recover = {}, {}, {}
    runs = {}
    for seed in seeds:
        before[str(seed)] = list(before_gap * x + rng.normal(0, 0.5, 48))
        after[str(seed)] = list(after_gap * x + rng.normal(0, 0.5, 48))
        hit = [int(v) for v in rng.random(200) < recovered]
        recover[str(seed)] = RecoverItems(
            words=[f"w{i}" for i in range(200)], male=[1] * 100 + [0] * 100,
            kmeans=hit, svm=hit, kmeans_original=[1] * 200, svm_original=[1] * 200,
        )  # fmt: skip
        runs[seed] = SeedBias(
            direction_explained=[0.6], definitional_pairs=9,
            kept_gender_specific=80, neutralised=1000, equalised_pairs=20,
            gender_weat_abs_d=1.0, gender_weat_abs_d_debiased=0.1, recover_words=100,
            original=Recovery(kmeans=1.0, svm=1.0),
            debiased=Recovery(kmeans=recovered, svm=recovered),
        )  # fmt: skip
    items = BiasItems(
        method="sgns",
        gender_tests=["weat7", "weat8"],
        weat=WeatItems(
            test=test,
            word=[f"t{i}" for i in range(48)],
            in_x=in_x,
            before=before,
            after=after,
        ),  # fmt: skip
        recover=recover,
    )
    return {"sgns": BiasEval.of("sgns", ["weat7", "weat8"], runs, {})}, {"sgns": items}


def attention_evidence(runs=("bahdanau", "bahdanau-seed14"), permuted=0.1):
    """Greedy statistics of the Bahdanau runs with their attention (quality 0.6)
    and with it permuted (quality ``permuted``)."""
    evals, items = {}, {}
    for run, seed in zip(runs, (13, 14), strict=False):
        own = nmt_items(run, 0.6, seed)
        perm = nmt_items(f"{run}-permuted", permuted, seed)
        n = len(own.bleu)
        evals[run] = AttentionEval(
            run=run, model="bahdanau", seed=seed, test_pairs=n, test_sha256="t" * 64,
            original={"bleu": 50.0, "chrf": 60.0},
            interventions={"permute": Intervention(
                changed_share=0.5, mean_tv=0.4, bleu=10.0, chrf=30.0)},
            tau_sentences=0, mean_tau=None,
        )  # fmt: skip
        items[run] = AttentionItems(
            run=run, test_sha256="t" * 64,
            bleu={"original": own.bleu, "permute": perm.bleu},
            chrf={"original": own.chrf, "permute": perm.chrf},
            change={"permute": [[1, 2, 0.5]] * n}, tau=[],
        )  # fmt: skip
    return evals, items


def probe_evidence(n=1000):
    """Two LSTM runs probed: trained linear 85% task / 40% control, MLP 95% /
    70%, untrained linear 60% / 45%; the top layer (1) carries these, layer 0
    chance."""
    rng = np.random.default_rng(3)
    rates = {
        ("trained", "linear"): (0.85, 0.40),
        ("trained", "mlp"): (0.95, 0.70),
        ("untrained", "linear"): (0.60, 0.45),
        ("untrained", "mlp"): (0.70, 0.60),
    }
    evals, items = {}, {}
    for run, seed in (("lstm", 13), ("lstm-seed14", 14)):
        task, control, rows = {}, {}, []
        for (model, kind), (t, c) in rates.items():
            for layer in (0, 1):
                tt, cc = (t, c) if layer == 1 else (0.3, 0.3)
                key = f"{model}|{seed}|{layer}|{kind}|13"
                task[key] = [int(v) for v in rng.random(n) < tt]
                control[key] = [int(v) for v in rng.random(n) < cc]
                rows.append(ProbeRow(
                    model=model, seed=seed, layer=layer, probe=kind, probe_seed=13,
                    task_accuracy=100 * tt, control_accuracy=100 * cc,
                    selectivity=100 * (tt - cc), valid_task_accuracy=0.0,
                    valid_control_accuracy=0.0, epochs_task=1, epochs_control=1,
                ))  # fmt: skip
        evals[run] = ProbeEval(
            name=run, kind="lm", family="lstm", data="wsj", tags=10,
            test_tokens=n, coverage=0.9, layers=2, rows=rows,
        )  # fmt: skip
        items[run] = ProbeItems(
            name=run, test_sha256="p" * 64, task=task, control=control
        )
    return evals, items


def word2vec_train(method, seed, rate, blocks=60) -> Word2VecTrain:
    """A w2v run's train.json: ``blocks`` timed blocks of kept tokens (the same
    tokens for every method at one seed) at ``rate`` thousand kept words/s, 5%
    noise on each block's time."""
    kept = np.random.default_rng(seed).integers(60_000, 80_000, blocks)
    rng = np.random.default_rng(_seed(method, seed))
    seconds = kept / (1000 * rate) * rng.normal(1, 0.05, blocks)
    return Word2VecTrain.model_validate(
        {"method": method, "seed": seed, "corpus_sha256": "x", "corpus_tokens": 1}
        | {"vocab": 10, "seconds": float(seconds.sum()), "words_per_second": 1.0}
        | {"peak_rss_mb": 1.0, "threads": 1, "device": "cpu", "final_loss": 1.0}
        | {"first_loss": 2.0, "kept_tokens_per_epoch": float(kept.sum()) / 3}
        | {
            "blocks": [
                {"kept_tokens": int(k), "seconds": float(t)}
                for k, t in zip(kept, seconds, strict=True)
            ]
        }
    )


def word2vec_evidence(*, ns_rate=150.0, hs_rate=110.0, ns_hit=0.5, hs_hit=0.4):
    """w2v-sg-ns and w2v-sg-hs, two seeds each: their evaluations, items (the
    same similarity noise; analogies right with p ``*_hit``) and train.json."""
    out = ({}, {}, {})
    for m, rate, hit in (
        ("w2v-sg-ns", ns_rate, ns_hit),
        ("w2v-sg-hs", hs_rate, hs_hit),
    ):
        out[0][m] = embedding_eval(m)
        out[1][m] = embedding_items(m, noise=0.3, incl_keep=0.1, hit=hit)
        out[2][m] = [word2vec_train(m, s, rate) for s in (13, 14)]
    return out


def evidence(**over) -> Evidence:
    """Every finding holds and every model beats its baseline here; ``over``
    replaces a task's evaluations and items (e.g. ``nmt=({}, {})``)."""
    emb = (
        {m: embedding_eval(m) for m in ("sgns", "ppmi-svd")},
        {
            "sgns": embedding_items("sgns", noise=0.3, incl_keep=0.05),
            "ppmi-svd": embedding_items("ppmi-svd", noise=0.3, incl_keep=0.5),
        },
    )
    lm = {}
    for run, fam, rate, seed in (
        ("kn5", "kn", 1.4, 13),
        ("lstm", "lstm", 1.2, 13),
        ("lstm-seed14", "lstm", 1.2, 14),
    ):
        e = lm_eval(fam).model_copy(update={"run": run, "seed": seed})
        lm[run] = (e, lm_items(run, rate, seed, dirty_gain=0.2))
    nmt = {}
    for run, model, q, seed, kw in (
        ("bahdanau", "bahdanau", 0.6, 13, {}),
        ("bahdanau-seed14", "bahdanau", 0.6, 14, {}),
        ("none", "none", 0.1, 13, {}),
        ("none-seed14", "none", 0.1, 14, {}),
        ("pointer", "bahdanau", 0.8, 13, {"pointer": True}),
        ("pointer-seed14", "bahdanau", 0.8, 14, {"pointer": True}),
        ("target-lm", "target-lm", 0.0, 13, {}),
        ("copy-source", "copy-source", 0.0, 13, {}),
    ):
        e = nmt_eval(run, model, 1.0, 1.0, **kw).model_copy(update={"seed": seed})
        kind = {"copy-source": "copy", "target-lm": "unrelated"}.get(model, "model")
        nmt[run] = (e, nmt_items(run, q, seed, kind=kind))
    tag = {}
    for run, head, f1, inv in (
        ("ner-crf", "crf", {"random": 0.75, "sgns": 0.8}, 0.0),
        ("ner-softmax", "softmax", {"random": 0.55, "sgns": 0.6}, 0.1),
    ):
        e = tagger_eval(run, head)
        train = [tagger_train(run, head, {"random": 0.5, "sgns": 0.6})]
        tag[run] = (e, tagger_items(run, f1=f1, invalid=inv), train)
    given = {
        "emb": emb,
        "lm": lm,
        "nmt": nmt,
        "tagging": tag,
        "bias": bias_evidence(),
        "attention": attention_evidence(),
        "probe": probe_evidence(),
        "word2vec": word2vec_evidence(),
    }
    given.update(over)
    ev = Evidence(rule=RULE, margin=0.1)
    ev.emb, ev.emb_items = dict(given["emb"][0]), dict(given["emb"][1])
    ev.emb.update(given["word2vec"][0])
    ev.emb_items.update(given["word2vec"][1])
    ev.emb_train = given["word2vec"][2]
    ev.lm = {r: v[0] for r, v in given["lm"].items()}
    ev.lm_items = {r: v[1] for r, v in given["lm"].items()}
    ev.nmt = {r: v[0] for r, v in given["nmt"].items()}
    ev.nmt_items = {r: v[1] for r, v in given["nmt"].items()}
    ev.tagging = {r: v[0] for r, v in given["tagging"].items()}
    ev.tag_items = {r: v[1] for r, v in given["tagging"].items()}
    ev.tag_train = {r: v[2] for r, v in given["tagging"].items()}
    ev.bias, ev.bias_items = given["bias"]
    ev.attention, ev.attention_items = given["attention"]
    ev.probe, ev.probe_items = given["probe"]
    return ev
