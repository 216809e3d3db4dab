"""The shared layers' CPU speed against what they replace.

Forward and backward, one thread, at the default's sizes, each pair on the same
inputs (lengths drawn from a fixed generator):

- ``firth.layers.BiRNN`` against ``nn.LSTM``/``nn.GRU(bidirectional=True)`` over a
  ``PackedSequence``: the tagger's BiLSTM (16 sentences of 12-20 tokens, 130
  inputs, 64 units a direction) and the translation encoder's BiGRU (37 verses of
  22-28 tokens, 128 inputs, 64 units a direction);
- ``firth.layers.Dropout`` against ``nn.Dropout`` on the tagger's token features
  (16 x 20 x 230, p = 0.5);
- the tagger's character CNN (``CharCNN._features``: the convolution as one
  product over embedded windows of character ids) against ``nn.Conv1d`` over the
  embedded characters, 25 dimensions, 30 filters of width 3, at the sizes of its
  length groups: 300 words of 8 characters, 100 of 16, 15 of 32;
- the CRF's log partition (``CRF.log_partition``: the recursion runs over the
  padding and each sentence's alpha is gathered at its end) against the forward
  algorithm that freezes alpha past the end with a ``where`` per step
  (``firth.tagging.crf.alphas``, as marginals still use it): 16 sentences of
  12-20 tokens, 21 tags (WNUT-16's BIO set).

``before`` is the replaced code, ``after`` Firth's. Each side's time is the median
over ``--repeats`` rounds of ``--calls`` calls, the sides alternating. Writes
benchmarks/results/layer_speed.json.

    python benchmarks/layer_speed.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from common import head_commit, machine, write_result
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from firth.layers import BiRNN, Dropout
from firth.tagging.crf import CRF, alphas
from firth.tagging.models import CharCNN

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "layer_speed.json"


def recurrent_case(cell: str, b: int, lo: int, hi: int, inp: int, hidden: int):
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(lo, hi + 1, (b,), generator=g)
    lengths[0] = hi
    x = torch.randn(b, hi, inp, generator=g, requires_grad=True)
    torch.manual_seed(0)
    packed_rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(
        inp, hidden, batch_first=True, bidirectional=True
    )
    torch.manual_seed(0)
    mine = BiRNN(cell, inp, hidden)

    def packed():
        p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = packed_rnn(p)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=hi)
        out.sum().backward()

    def padded():
        mine(x, lengths)[0].sum().backward()

    return {"before": packed, "after": padded}


def dropout_case():
    x = torch.randn(16, 20, 230, requires_grad=True)
    theirs, mine = nn.Dropout(0.5), Dropout(0.5)
    return {
        "before": lambda: theirs(x).sum().backward(),
        "after": lambda: mine(x).sum().backward(),
    }


def char_cnn_case(words: int, length: int):
    g = torch.Generator().manual_seed(0)
    chars = torch.randint(1, 80, (words, length), generator=g)
    mod = CharCNN(80, 25, 30, 3)

    def conv():
        x = mod.conv(mod.emb(chars).transpose(1, 2))
        x.max(2).values.sum().backward()

    def windows():
        mod._features(chars).sum().backward()

    return {"before": conv, "after": windows}


def crf_case():
    g = torch.Generator().manual_seed(0)
    b, n, k = 16, 20, 21
    lengths = torch.randint(12, n + 1, (b,), generator=g)
    lengths[0] = n
    mask = torch.arange(n) < lengths[:, None]
    em = torch.randn(b, n, k, generator=g, requires_grad=True)
    crf = CRF(k)

    def frozen():
        alpha = alphas(em, crf.trans(), crf.first(), mask)[-1]
        torch.logsumexp(alpha + crf.last(), 1).sum().backward()

    def gathered():
        crf.log_partition(em, mask).sum().backward()

    return {"before": frozen, "after": gathered}


CASES = {
    "tagger_bilstm": lambda: recurrent_case("lstm", 16, 12, 20, 130, 64),
    "encoder_bigru": lambda: recurrent_case("gru", 37, 22, 28, 128, 64),
    "dropout": dropout_case,
    "char_cnn_300x8": lambda: char_cnn_case(300, 8),
    "char_cnn_100x16": lambda: char_cnn_case(100, 16),
    "char_cnn_15x32": lambda: char_cnn_case(15, 32),
    "crf_log_partition": crf_case,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = {}
    for name, make in CASES.items():
        fns = make()
        for fn in fns.values():  # warm-up (oneDNN builds its kernels once per shape)
            for _ in range(5):
                fn()
        times = {k: [] for k in fns}
        for i in range(args.repeats):
            for k in fns if i % 2 == 0 else list(fns)[::-1]:
                t = time.perf_counter()
                for _ in range(args.calls):
                    fns[k]()
                times[k].append((time.perf_counter() - t) / args.calls * 1e3)
        ms = {k: round(statistics.median(v), 4) for k, v in times.items()}
        rows[name] = {"ms": ms, "speedup": round(ms["before"] / ms["after"], 2)}
        print(name, rows[name], flush=True)
    write_result(
        OUT,
        {
            "machine": machine(),
            "commit": head_commit(ROOT),
            "command": "python " + " ".join(sys.argv),
            "threads": 1,
            "cases": rows,
        },
    )


if __name__ == "__main__":
    main()
