"""Interpolated modified Kneser-Ney n-gram language model (Chen and Goodman 1998,
"An Empirical Study of Smoothing Techniques for Language Modeling", section 3.5).

For order k with context h (k-1 tokens) and word w, with adjusted counts a:

    p_k(w | h) = max(a(hw) - D_k(a(hw)), 0) / A(h) + gamma_k(h) p_{k-1}(w | h')
    gamma_k(h) = (D_k1 N1(h.) + D_k2 N2(h.) + D_k3+ N3+(h.)) / A(h)

where A(h) = sum_w a(hw), N_i(h.) counts the words w with a(hw) = i (3+: >= 3), h'
drops the first token of h, and p_0 is uniform over the predictable vocabulary. An
unseen context (A(h) = 0) passes straight to the lower order. Adjusted counts are
raw counts at the highest order and for n-grams that start with <s>; otherwise they
are continuation counts N1+(. hw), the number of distinct words seen before hw
(KenLM's convention). Three discounts per order from the counts-of-counts n1..n4
of that order's adjusted counts: Y = n1 / (n1 + 2 n2), D1 = 1 - 2Y n2/n1,
D2 = 2 - 3Y n3/n2, D3+ = 3 - 4Y n4/n3. The freed mass is exactly gamma, so every
conditional sums to 1 over the predictable vocabulary.

Conventions: a sentence starts from one <s> and ends with one </s>; <s> is context
only (never predicted). As KenLM's lmplz does, the first words of a sentence are
predicted by the shorter n-grams that start at that <s> ("<s> w1" is a bigram, with
raw counts), not by n-grams of repeated padding: the count tables are filled from
windows padded with order-1 <s>, but every n-gram with two or more leading <s> is
dropped, so a padded context is unseen and passes straight down to the one that
starts at the single <s>. (Counting the padding as n-grams of every order
discounts each sentence start once per order and skews the counts-of-counts behind
the discounts: on the default's text that model's test perplexity was 55.53 against
lmplz's 53.52, `python benchmarks/peers.py --tasks ngram`; docs/measured.md.)

<unk> policy: the vocabulary is every training word (plus <unk>, </s>); a test
word outside it is scored as <unk>, whose probability is the uniform share
interpolated at the lowest order (its unigram count is 0). Perplexities over texts
with OOVs are therefore optimistic; the OOV rate is reported beside them.

Counts live in pandas frames of integer id columns (one per position), grouped and
merged column-wise: no dicts of dicts.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from firth.lm.metrics import perplexity

log = logging.getLogger(__name__)

UNK, BOS, EOS = "<unk>", "<s>", "</s>"


def id_columns(k: int) -> list[str]:
    return [f"w{i}" for i in range(k)]


def estimate_discounts(adjusted: np.ndarray) -> tuple[float, float, float]:
    """Chen and Goodman's D1, D2, D3+ from the counts-of-counts of one order."""
    n = [int((adjusted == i).sum()) for i in (1, 2, 3, 4)]
    if min(n) == 0:
        raise ValueError(
            f"counts-of-counts n1..n4 = {n}: some are 0, too little data to "
            "estimate modified Kneser-Ney discounts for this order"
        )
    y = n[0] / (n[0] + 2 * n[1])
    d = (1 - 2 * y * n[1] / n[0], 2 - 3 * y * n[2] / n[1], 3 - 4 * y * n[3] / n[2])
    return tuple(float(min(max(x, 0.0), i + 1)) for i, x in enumerate(d))  # type: ignore[return-value]


@dataclass
class KneserNey:
    order: int
    vocab: list[str]  # id -> word; 0 <unk>, 1 <s>, 2 </s>
    grams: list[pd.DataFrame]  # [k-1]: columns w0..w{k-1}, adjusted count "a"
    contexts: list[pd.DataFrame]  # [k-1]: w0..w{k-2}, "A", "N1", "N2", "N3"
    discounts: list[tuple[float, float, float]]

    @property
    def predictable(self) -> int:
        """Size of the predicted vocabulary (every word but <s>)."""
        return len(self.vocab) - 1

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.vocab)}

    # -- scoring -------------------------------------------------------------------

    def log_probs(self, windows: np.ndarray) -> np.ndarray:
        """Natural-log probabilities of the last id of each row of ``windows``
        (N, order) given the ids before it."""
        n = self.order
        N = len(windows)
        p = np.full(N, 1.0 / self.predictable)  # p_0: uniform
        frame = pd.DataFrame(windows, columns=id_columns(n))
        for k in range(1, n + 1):
            # the last k tokens: context = first k-1 of them. Left merges keep the
            # left row order and the right frames have unique keys (grouped).
            q = frame.iloc[:, n - k :]
            q.columns = id_columns(k)
            a = q.merge(self.grams[k - 1], on=id_columns(k), how="left")["a"]
            a = a.fillna(0).to_numpy()
            if k > 1:
                c = q[id_columns(k - 1)].merge(
                    self.contexts[k - 1], on=id_columns(k - 1), how="left"
                )
                A = c["A"].fillna(0).to_numpy()
                Ns = c[["N1", "N2", "N3"]].fillna(0).to_numpy()
            else:
                ctx = self.contexts[0]
                A = np.full(N, float(ctx["A"].iloc[0]))
                Ns = np.repeat(ctx[["N1", "N2", "N3"]].to_numpy(), N, axis=0)
            d1, d2, d3 = self.discounts[k - 1]
            disc = np.where(a >= 3, d3, np.where(a == 2, d2, np.where(a == 1, d1, 0.0)))
            seen = A > 0
            safe = np.where(seen, A, 1.0)
            gamma = (d1 * Ns[:, 0] + d2 * Ns[:, 1] + d3 * Ns[:, 2]) / safe
            mixed = np.maximum(a - disc, 0.0) / safe + gamma * p
            p = np.where(seen, mixed, p)
        with np.errstate(divide="ignore"):  # p = 0 only with zero discounts
            return np.log(p)

    def conditional(self, context: list[str]) -> np.ndarray:
        """p(w | context) for every predictable w (ids 0, 2, 3, ...), as (V-1,).

        The same recursion as :meth:`log_probs`, for one context and every word at
        once: each order's n-grams that continue the context are one contiguous
        run of its lexicographically sorted table (found by binary search), so a
        call costs O(order log N + V) rather than a merge of V windows."""
        idx = self.index()
        ctx = (
            [idx.get(w, 0) for w in context][-(self.order - 1) :]
            if self.order > 1
            else []
        )
        ctx = [1] * (self.order - 1 - len(ctx)) + ctx
        V = len(self.vocab)
        p = np.full(V, 1.0 / self.predictable)  # p_0: uniform
        for k in range(1, self.order + 1):
            h = ctx[len(ctx) - (k - 1) :] if k > 1 else []
            cols, _ = self._sorted(k)
            lo, hi = _prefix(cols, h)
            a = np.zeros(V)
            a[cols[k - 1][lo:hi]] = self._sorted(k)[1][lo:hi]
            if k > 1:
                ccols, stats = self._sorted_contexts(k)
                clo, chi = _prefix(ccols, h)
                if chi == clo:  # unseen context: straight to the lower order
                    continue
                A, n1, n2, n3 = stats[clo]
            else:
                A, n1, n2, n3 = self.contexts[0][["A", "N1", "N2", "N3"]].to_numpy()[0]
            if A <= 0:
                continue
            d1, d2, d3 = self.discounts[k - 1]
            disc = np.where(a >= 3, d3, np.where(a == 2, d2, np.where(a == 1, d1, 0.0)))
            gamma = (d1 * n1 + d2 * n2 + d3 * n3) / A
            p = np.maximum(a - disc, 0.0) / A + gamma * p
        return np.delete(p, 1)

    def _sorted(self, k: int) -> tuple[list[np.ndarray], np.ndarray]:
        """Order k's id columns and adjusted counts, sorted lexicographically."""
        cache = self.__dict__.setdefault("_sorted_cache", {})
        if ("g", k) not in cache:
            g = self.grams[k - 1]
            cache[("g", k)] = _lexsorted(g, id_columns(k), g["a"].to_numpy(np.float64))
        return cache[("g", k)]

    def _sorted_contexts(self, k: int) -> tuple[list[np.ndarray], np.ndarray]:
        """Order k's context columns and (A, N1, N2, N3) rows, sorted the same way."""
        cache = self.__dict__.setdefault("_sorted_cache", {})
        if ("c", k) not in cache:
            c = self.contexts[k - 1]
            stats = c[["A", "N1", "N2", "N3"]].to_numpy(np.float64)
            cache[("c", k)] = _lexsorted(c, id_columns(k - 1), stats)
        return cache[("c", k)]

    def windows(self, sentences: list[list[str]]) -> tuple[np.ndarray, int]:
        """(N, order) id windows of every predicted token (words and </s>) of
        ``sentences``, and how many words were outside the vocabulary."""
        idx = self.index()
        seqs, oov = [], 0
        for s in sentences:
            ids = [idx.get(w, 0) for w in s]
            oov += sum(1 for w in s if w not in idx)
            seqs.append([1] * (self.order - 1) + ids + [2])
        return _windows(seqs, self.order), oov

    def score(self, sentences: list[list[str]]) -> dict:
        """Total negative log-likelihood (nats and bits), tokens, OOVs, perplexity."""
        w, oov = self.windows(sentences)
        nll = float(-self.log_probs(w).sum())
        return {
            "tokens": len(w),  # words + one </s> per sentence
            "oov": oov,
            "nll_nats": nll,
            "nll_bits": nll / math.log(2),
            "perplexity": perplexity(nll, len(w)),
        }


def _lexsorted(frame: pd.DataFrame, names: list[str], values: np.ndarray):
    """``frame``'s columns ``names`` as arrays and ``values``' rows, reordered so
    the rows are sorted by (names[0], names[1], ...)."""
    cols = [frame[c].to_numpy(np.int64) for c in names]
    order = np.lexsort(cols[::-1])
    return [c[order] for c in cols], values[order]


def _prefix(cols: list[np.ndarray], ids: list[int]) -> tuple[int, int]:
    """The row range [lo, hi) of lexicographically sorted ``cols`` whose first
    len(ids) columns equal ``ids``."""
    lo, hi = 0, len(cols[0]) if cols else 0
    for c, i in zip(cols, ids, strict=False):  # ids may be shorter
        part = c[lo:hi]
        lo, hi = (
            lo + int(np.searchsorted(part, i, "left")),
            lo + int(np.searchsorted(part, i, "right")),
        )
        if lo == hi:
            break
    return lo, hi


def _windows(seqs: list[list[int]], order: int) -> np.ndarray:
    """Every window of ``order`` ids ending at a non-padding position."""
    out = []
    for s in seqs:
        arr = np.asarray(s, dtype=np.int64)
        if len(arr) < order:
            continue
        view = np.lib.stride_tricks.sliding_window_view(
            arr, order
        )  # (L-order+1, order)
        out.append(view)
    if not out:
        return np.zeros((0, order), dtype=np.int64)
    return np.concatenate(out)


def build(
    sentences: list[list[str]],
    *,
    order: int = 5,
    discounts: list[tuple[float, float, float]] | None = None,
) -> KneserNey:
    """Count, adjust and discount; sentences are lists of tokens. ``discounts``
    (per order, lowest first) overrides the Chen-Goodman estimates."""
    if order < 1:
        raise ValueError("order must be at least 1")
    words = sorted({w for s in sentences for w in s} - {UNK, BOS, EOS})
    if not words:
        raise ValueError("no training tokens")
    vocab = [UNK, BOS, EOS, *words]
    idx = {w: i for i, w in enumerate(vocab)}
    seqs = [[1] * (order - 1) + [idx[w] for w in s] + [2] for s in sentences]
    top = _windows(seqs, order)  # every predicted token with its full context
    grams: list[pd.DataFrame] = []
    contexts: list[pd.DataFrame] = []
    fixed = discounts
    discounts = []
    raw_by_order = {}
    for k in range(order, 0, -1):
        frame = pd.DataFrame(top[:, order - k :], columns=id_columns(k))
        if k > 1:  # one <s> starts a sentence; repeated padding is no n-gram
            frame = frame[(frame["w0"] != 1) | (frame["w1"] != 1)]
        raw = frame.groupby(id_columns(k), sort=True).size().rename("a").reset_index()
        raw_by_order[k] = raw
    adjusted: dict[int, pd.DataFrame] = {order: raw_by_order[order]}
    for k in range(order - 1, 0, -1):
        higher = raw_by_order[k + 1]  # distinct (k+1)-grams
        cont = higher.groupby(id_columns(k + 1)[1:], sort=True).size().rename("a")
        cont = cont.reset_index()
        cont.columns = id_columns(k) + ["a"]
        raw = raw_by_order[k]
        merged = raw[id_columns(k)].merge(cont, on=id_columns(k), how="left")
        merged["a"] = merged["a"].fillna(0).astype(np.int64)
        starts = (raw["w0"] == 1).to_numpy()  # begins with <s>: keep the raw count
        merged.loc[starts, "a"] = raw.loc[starts, "a"].to_numpy()
        adjusted[k] = merged[merged["a"] > 0].reset_index(drop=True)
    for k in range(1, order + 1):
        g = adjusted[k]
        discounts.append(
            fixed[k - 1] if fixed else estimate_discounts(g["a"].to_numpy())
        )
        grams.append(g)
        a = g["a"]
        stats = pd.DataFrame(
            {
                "A": a,
                "N1": (a == 1).astype(np.int64),
                "N2": (a == 2).astype(np.int64),
                "N3": (a >= 3).astype(np.int64),
            }
        )
        if k > 1:
            stats[id_columns(k - 1)] = g[id_columns(k - 1)]
            ctx = stats.groupby(id_columns(k - 1), sort=True)[
                ["A", "N1", "N2", "N3"]
            ].sum()
            contexts.append(ctx.reset_index())
        else:
            contexts.append(stats[["A", "N1", "N2", "N3"]].sum().to_frame().T)
        log.info(
            "order %d: %d n-grams, discounts %.3f %.3f %.3f", k, len(g), *discounts[-1]
        )
    return KneserNey(order, vocab, grams, contexts, discounts)


def save(lm: KneserNey, folder) -> None:
    """Write ``lm`` to ``folder`` (created): one parquet file per order for the
    n-grams and for the contexts, and meta.json (order, vocabulary, discounts)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(1, lm.order + 1):
        lm.grams[k - 1].to_parquet(folder / f"grams{k}.parquet", index=False)
        lm.contexts[k - 1].to_parquet(folder / f"contexts{k}.parquet", index=False)
    (folder / "meta.json").write_text(
        json.dumps({"order": lm.order, "vocab": lm.vocab, "discounts": lm.discounts})
        + "\n",
        encoding="utf-8",
    )


def load(folder) -> KneserNey:
    """Read a model written by :func:`save`."""
    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    order = meta["order"]
    return KneserNey(
        order,
        meta["vocab"],
        [pd.read_parquet(folder / f"grams{k}.parquet") for k in range(1, order + 1)],
        [pd.read_parquet(folder / f"contexts{k}.parquet") for k in range(1, order + 1)],
        [tuple(d) for d in meta["discounts"]],
    )
