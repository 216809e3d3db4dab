"""Write a Kneser-Ney model as a standard ARPA back-off file (the format of SRILM,
KenLM and every n-gram toolkit since; Stolcke 2002, "SRILM - an extensible
language modeling toolkit", and the ARPA format described in KenLM's docs).

An ARPA file lists, per order k, n-grams with log10 p(w | h) and a log10 back-off
weight b(hw); a reader scores w after context h with the longest listed n-gram
ending in w and adds the back-off weights of the longer contexts it skipped:

    log p(w | h) = log p(w | h)                    if hw is listed
                 = b(h) + log p(w | h')            otherwise (b = 0 if h is unlisted)

Interpolated Kneser-Ney fits this exactly: a listed n-gram carries its full
interpolated probability, and b(h) = gamma(h), the mass the discounts freed.

Sentence starts. kneser_ney's models start a sentence from one <s> (KenLM's
convention: "<s> w1" is a bigram), so the file lists <s> as a unigram that is never
predicted (log10 probability -99, as lmplz writes it) and carries the back-off
weight of the sentence-start context, and a reader's default sentence scoring
(KenLM's ``bos=True, eos=True``) gives Firth's probabilities.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from firth.errors import DataError
from firth.io import atomic_path
from firth.lm.kneser_ney import KneserNey, id_columns

log = logging.getLogger(__name__)

BOS_ID = 1
NEVER = -99.0  # log10 "probability" of <s>, which is never predicted (ARPA convention)


def _truncated(lm: KneserNey, k: int) -> KneserNey:
    """The same model cut at order ``k`` (its lower levels are unchanged)."""
    return KneserNey(k, lm.vocab, lm.grams[:k], lm.contexts[:k], lm.discounts[:k])


def _log10_gamma(lm: KneserNey, k: int) -> pd.DataFrame:
    """Order k's contexts (columns w0..w{k-2}) with log10 gamma_k(h), as "b"."""
    c = lm.contexts[k - 1]
    d1, d2, d3 = lm.discounts[k - 1]
    gamma = (d1 * c["N1"] + d2 * c["N2"] + d3 * c["N3"]) / c["A"]
    with np.errstate(divide="ignore"):  # gamma = 0 only with zero discounts
        b = np.log10(gamma.to_numpy(np.float64))
    out = c[id_columns(k - 1)].copy()
    out["b"] = b
    return out


def entries(lm: KneserNey) -> list[pd.DataFrame]:
    """Per ARPA order k (index k-1): columns w0..w{k-1} (vocabulary ids), "p" (log10
    probability) and "b" (log10 back-off weight, 0 where the n-gram is no
    context)."""
    n = lm.order
    orders = []
    for k in range(1, n + 1):
        if k == 1:  # every predictable word, counted or not (p_1 > 0 for all)
            ids = np.array([i for i in range(len(lm.vocab)) if i != BOS_ID])
            g = pd.DataFrame({"w0": ids})
        else:
            g = lm.grams[k - 1][id_columns(k)]
            padded = (g["w0"] == BOS_ID) & (g["w1"] == BOS_ID)
            if padded.any():
                raise DataError(
                    f"this Kneser-Ney model has {int(padded.sum())} {k}-grams of "
                    "repeated <s> padding (an older convention): retrain it "
                    "(dvc repro) to write it as ARPA"
                )
        p = _truncated(lm, k).log_probs(g.to_numpy(np.int64)) / math.log(10)
        g = g.assign(p=p, b=0.0)
        if k == 1:  # <s>: never predicted, the context of every sentence start
            g = pd.concat([g, pd.DataFrame({"w0": [BOS_ID], "p": [NEVER], "b": [0.0]})])
        if k < n:  # back-off weights: gamma of the order above
            g = _set_backoff(g.reset_index(drop=True), _log10_gamma(lm, k + 1), k)
        orders.append(g)
    return orders


def _set_backoff(order: pd.DataFrame, b: pd.DataFrame, k: int) -> pd.DataFrame:
    """``order`` with "b" taken from ``b`` (columns w0..w{k-1}, "b")."""
    keys = id_columns(k)
    merged = order.merge(b.rename(columns={"b": "new"}), on=keys, how="left")
    if len(merged) != len(order):
        raise AssertionError(f"order {k}: duplicate back-off keys")
    listed = b.merge(order[keys], on=keys, how="left", indicator=True)
    missing = int((listed["_merge"] == "left_only").sum())
    if missing:  # every context must be an n-gram of the file (ARPA's rule)
        raise AssertionError(f"order {k}: {missing} contexts are not n-grams")
    merged["b"] = merged["new"].fillna(merged["b"])
    return merged.drop(columns="new")


def write_arpa(lm: KneserNey, path) -> list[int]:
    """Write ``lm`` to the ARPA file ``path`` (atomically); returns the n-gram
    count per order. Probabilities and weights carry 7 significant digits (the
    float32 that readers such as KenLM keep)."""
    orders = entries(lm)
    words = np.array(lm.vocab, dtype=object)
    counts = [len(o) for o in orders]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write("\\data\\\n")
        for k, c in enumerate(counts, 1):
            f.write(f"ngram {k}={c}\n")
        for k, o in enumerate(orders, 1):
            f.write(f"\n\\{k}-grams:\n")
            text = words[o["w0"].to_numpy()]
            for c in id_columns(k)[1:]:
                text = text + " " + words[o[c].to_numpy()]
            lines = np.char.mod("%.7g", o["p"].to_numpy()).astype(object) + "\t" + text
            if k < lm.order:
                lines = (
                    lines + "\t" + np.char.mod("%.7g", o["b"].to_numpy()).astype(object)
                )
            f.write("\n".join(lines.tolist()))
            f.write("\n")
        f.write("\n\\end\\\n")
    log.info("ARPA %s: %s n-grams per order", path, counts)
    return counts


__all__ = ["entries", "write_arpa"]
