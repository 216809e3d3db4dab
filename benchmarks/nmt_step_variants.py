"""What rewriting the Bahdanau trainer's step could buy on the CPU, and its bound.

Three rewrites of the teacher-forced step, measured against the model as it is
(firth.nmt.models.Bahdanau under autograd) on real batches of the default's
training data (benchmarks/roofline.py's ``nmt_case``), one thread:

- ``recurrence``: the decoder's recurrence (additive attention from the previous
  state, the GRU cell) as one autograd Function with back-propagation through
  time written out: the forward keeps what the backward needs, the backward walks
  the steps in reverse with a handful of operators each and computes every weight
  gradient after the loop as one product over all steps; the embeddings, their
  input projection and the readout run once over all steps;
- ``recurrence+loss``: that, plus the output layer and the label-smoothed
  cross-entropy fused and chunked (the logits of 256 target positions at a time,
  their gradient computed in the forward, so the full logit matrix is never
  written out);
- ``torch.compile``: Firth's own step with the decoder's step compiled by
  inductor (dynamic shapes; the compilation happens in the warm-up).

Beside them, the step's parts that are not the decoder's recurrence, each timed
alone on the same batches with its own forward and backward: the encoder
(embeddings, dropout, the bidirectional GRU, the attention keys), the output
layer with the label-smoothed loss (on stand-in features of the decoder's
shape), and the AdamW update. What is left of the whole step is the decoder's
loop (attention, cell, readout). ``free_recurrence_bound`` is the whole step's
time over the parts' sum: the speed-up the step would have if the decoder's loop
cost nothing, which bounds any rewrite of it (torch.compile, hand-written
kernels) while the encoder, the output layer and the update stay library calls.
``peak_recurrence_bound`` is tighter and still generous: the decoder's loop costs
its matrix-product FLOPs (the whole step's, counted by
torch.utils.flop_counter, less the parts') at this CPU's one-thread rate on a
2048^3 product, and its elementwise work nothing.

Before timing, each rewrite's loss and every parameter gradient are checked
against autograd's in float64 on a small batch (the script stops on a mismatch).
Neither rewrite is Firth's trainer: this measures how much of the step is
autograd's and the loss's own overhead (benchmarks/results/roofline.json says how
far the step is from the CPU's arithmetic ceiling).

    python benchmarks/nmt_step_variants.py --from /path/to/checkout/after/make-run

Writes benchmarks/results/nmt_step_variants.json. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from common import head_commit, machine, write_result
from roofline import gemm_rate, nmt_case
from torch.utils.flop_counter import FlopCounterMode

from firth.nmt.data import PAD
from firth.nmt.models import build_model
from firth.nmt.train import loss_sum

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "nmt_step_variants.json"


class Recurrence(torch.autograd.Function):
    """s_i = GRU(s_{i-1}, [x_i; c_i]), c_i = sum_j a_ij h_j, a_i = softmax_j(v .
    tanh(W_q s_{i-1} + k_j) + mask_j), for every target position: returns the
    states, contexts and attention. ``gi_x``: the cell's input projection of the
    embeddings (with its bias), ``wcat``: [W_q; W_hh]."""

    @staticmethod
    def forward(ctx, gi_x, keys, values, mask_bias, h0, wcat, b_hh, w_ic, v):
        B, T, _ = gi_x.shape
        H, S = h0.shape[1], keys.shape[1]
        hs = gi_x.new_empty(B, T + 1, H)
        hs[:, 0] = h0
        cs, att = gi_x.new_empty(B, T, H), gi_x.new_empty(B, T, S)
        th_all = gi_x.new_empty(T, B, S, H)
        gates = gi_x.new_empty(T, 4, B, H)  # r, z, n and W_hn s + b_hn
        h, wcat_t, w_ic_t = h0, wcat.t(), w_ic.t()
        for t in range(T):
            hw = h @ wcat_t
            gh = hw[:, H:] + b_hh
            th = torch.tanh(hw[:, None, :H] + keys, out=th_all[t])
            a = torch.softmax((th @ v).add_(mask_bias), -1)
            att[:, t] = a
            c = torch.bmm(a[:, None], values).squeeze(1)
            cs[:, t] = c
            gi = gi_x[:, t] + c @ w_ic_t
            rz = torch.sigmoid(gi[:, : 2 * H] + gh[:, : 2 * H])
            r, z = rz[:, :H], rz[:, H:]
            n = torch.tanh(gi[:, 2 * H :] + r * gh[:, 2 * H :])
            h = n + z * (h - n)
            hs[:, t + 1] = h
            g = gates[t]
            g[0], g[1], g[2], g[3] = r, z, n, gh[:, 2 * H :]
        ctx.save_for_backward(values, hs, cs, att, th_all, gates, wcat, w_ic, v)
        ctx.keys_shape = keys.shape
        return hs[:, 1:], cs, att

    @staticmethod
    def backward(ctx, d_hs, d_cs, d_att):
        values, hs, cs, att, th_all, gates, wcat, w_ic, v = ctx.saved_tensors
        B, T, H = hs.shape[0], hs.shape[1] - 1, hs.shape[2]
        d_gi = hs.new_empty(B, T, 3 * H)
        d_qgh = hs.new_empty(B, T, 4 * H)  # [d q; d gh] per step
        d_sc = hs.new_empty(T, B, ctx.keys_shape[1])
        d_c_all = hs.new_empty(B, T, H)
        d_keys = hs.new_zeros(ctx.keys_shape)
        dh = hs.new_zeros(B, H)
        for t in range(T - 1, -1, -1):
            r, z, n, ghn = gates[t]
            if d_hs is not None:
                dh = dh + d_hs[:, t]
            dpn = dh * (1 - z) * (1 - n * n)
            dpz = dh * (hs[:, t] - n) * z * (1 - z)
            dpr = dpn * ghn * r * (1 - r)
            dgi = d_gi[:, t]
            dgi[:, :H], dgi[:, H : 2 * H], dgi[:, 2 * H :] = dpr, dpz, dpn
            dq = d_qgh[:, t]
            dq[:, H : 3 * H] = dgi[:, : 2 * H]
            dq[:, 3 * H :] = dpn * r
            dc = dgi @ w_ic
            if d_cs is not None:
                dc = dc + d_cs[:, t]
            d_c_all[:, t] = dc
            a = att[:, t]
            da = torch.bmm(values, dc[:, :, None]).squeeze(2)
            if d_att is not None:
                da = da + d_att[:, t]
            ds = a * (da - (a * da).sum(-1, keepdim=True))
            d_sc[t] = ds
            th = th_all[t]
            dpre = (ds[:, :, None] * v) * (1 - th * th)
            d_keys += dpre
            dq[:, :H] = dpre.sum(1)
            dh = dh * z + dq @ wcat
        d_wcat = d_qgh.reshape(-1, 4 * H).t() @ hs[:, :T].reshape(-1, H)
        d_b_hh = d_qgh[..., H:].sum((0, 1))
        d_w_ic = d_gi.reshape(-1, 3 * H).t() @ cs.reshape(-1, H)
        d_v = (d_sc.reshape(1, -1) @ th_all.reshape(-1, H)).view(-1)
        d_values = torch.bmm(att.transpose(1, 2), d_c_all)
        return d_gi, d_keys, d_values, None, dh, d_wcat, d_b_hh, d_w_ic, d_v


class LinearSmoothedCE(torch.autograd.Function):
    """The summed label-smoothed cross-entropy of x W^T + b over the rows whose
    target is not ``ignore``, ``chunk`` rows at a time; the gradients are computed
    in the forward (the loss is the graph's end, scaled in the backward)."""

    @staticmethod
    def forward(ctx, x, w, b, target, eps, ignore, chunk):
        V = w.shape[0]
        dx, dw, db = torch.empty_like(x), torch.zeros_like(w), torch.zeros_like(b)
        total = x.new_zeros(())
        for lo in range(0, x.shape[0], chunk):
            xc, tc = x[lo : lo + chunk], target[lo : lo + chunk]
            keep = (tc != ignore).to(x.dtype)
            tc = tc.clamp(min=0)[:, None]
            z = torch.addmm(b, xc, w.t())
            lse = torch.logsumexp(z, 1, keepdim=True)
            zt = z.gather(1, tc)
            loss = lse - (1 - eps) * zt - (eps / V) * z.sum(1, keepdim=True)
            total += (loss.squeeze(1) * keep).sum()
            g = z.sub_(lse).exp_().sub_(eps / V)
            g.scatter_add_(1, tc, torch.full_like(zt, -(1 - eps)))
            g.mul_(keep[:, None])
            torch.mm(g, w, out=dx[lo : lo + chunk])
            dw.addmm_(g.t(), xc)
            db += g.sum(0)
        ctx.save_for_backward(dx, dw, db)
        return total

    @staticmethod
    def backward(ctx, go):
        dx, dw, db = ctx.saved_tensors
        return dx * go, dw * go, db * go, None, None, None, None


def rewritten_loss(model, b, eps, fused_loss: bool):
    m = model
    memory = m.encode(b.src, b.src_mask)
    h0 = m.start(memory)["h"]
    e = m.drop(m.embedding(b.tgt_in))
    cell, att, E = m.cell.cell, m.attention, e.shape[-1]
    gi_x = F.linear(e, cell.weight_ih[:, :E], cell.bias_ih)
    wcat = torch.cat([att.w_query.weight, cell.weight_hh])
    bias = torch.zeros(b.src_mask.shape, dtype=e.dtype).masked_fill(
        ~b.src_mask, -math.inf
    )
    hs, cs, _ = Recurrence.apply(
        gi_x, memory["keys"], memory["values"], bias, h0, wcat, cell.bias_hh,
        cell.weight_ih[:, E:], att.v.weight.view(-1),
    )  # fmt: skip
    feat = m.drop(torch.tanh(m.readout(torch.cat([hs, cs, e], -1))))
    flat, target = feat.reshape(-1, E), b.tgt_out.reshape(-1)
    if fused_loss:
        return LinearSmoothedCE.apply(
            flat, m.embedding.weight, m.out_bias, target, eps, PAD, 256
        )
    return F.cross_entropy(
        F.linear(flat, m.embedding.weight, m.out_bias),
        target,
        ignore_index=PAD,
        label_smoothing=eps,
        reduction="sum",
    )


def encoder_part(model, b, eps):
    """The encoder's forward and a backward through all it returns."""
    memory = model.encode(b.src, b.src_mask)
    return memory["values"].sum() + memory["keys"].sum() + memory["summary"].sum()


def output_part(model, b, eps):
    """The output layer and the smoothed loss over stand-in decoder features."""
    feats = torch.randn(*b.tgt_in.shape, model.emb_dim, requires_grad=True)
    logits = model.logits(feats)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        b.tgt_out.reshape(-1),
        ignore_index=PAD,
        label_smoothing=eps,
        reduction="sum",
    )


def compiled_step(model, b, eps):
    """Firth's step with the decoder's step (``advance``) under torch.compile
    (inductor's generated C++, dynamic shapes: one compilation for every batch)."""
    if "compiled" not in model.__dict__:
        model.compiled = torch.compile(model.advance, dynamic=True)
    model.advance = model.compiled
    try:
        return loss_sum(model, b, eps)
    finally:
        del model.advance  # the class's method again


COMPILED = {"torch.compile (the decoder step)": compiled_step}

PARTS = {"encoder": encoder_part, "output layer and loss": output_part}

VARIANTS = {
    "autograd (Firth's step)": loss_sum,  # the trainer's own loss
    "recurrence": lambda m, b, eps: rewritten_loss(m, b, eps, False),
    "recurrence+loss": lambda m, b, eps: rewritten_loss(m, b, eps, True),
}


def check_gradients(batch, eps: float) -> dict:
    """Each rewrite's loss and gradients against autograd's, float64, no dropout."""
    c = SimpleNamespace(emb_dim=32, hidden=24, layers=1, dropout=0.0, cell="gru")
    torch.manual_seed(0)
    vocab = int(max(batch.src.max(), batch.tgt_out.max())) + 1
    model = build_model("bahdanau", vocab, SimpleNamespace(common=c)).double()
    worst = {}
    results = {}
    for name, fn in VARIANTS.items():
        model.zero_grad()
        loss = fn(model, batch, eps)
        loss.backward()
        results[name] = (loss.item(), [p.grad.clone() for p in model.parameters()])
    (ref_loss, ref_grads) = results["autograd (Firth's step)"]
    for name, (loss, grads) in results.items():
        err = max(
            float((a - b).abs().max()) for a, b in zip(grads, ref_grads, strict=True)
        )
        if abs(loss - ref_loss) > 1e-9 * abs(ref_loss) or err > 1e-9:
            raise SystemExit(
                f"{name}: loss {loss} against {ref_loss}, gradient error {err}"
            )
        worst[name] = err
    return worst


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="origin", type=Path, default=ROOT)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, batches, _, examples, unit = nmt_case(args.origin, args.batches)
    eps = 0.1
    small = batches[0]
    small = type(small)(*(x[:4] for x in (small.index, small.src, small.src_mask,
                                          small.tgt_in, small.tgt_out)))  # fmt: skip
    errors = check_gradients(small, eps)
    print("gradients match autograd's (float64):", errors)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    flops = {}  # matrix-product FLOPs of forward and backward over the batches
    for name, fn in [("whole", loss_sum), *PARTS.items()]:
        with FlopCounterMode(display=False) as counter:
            for b in batches:
                fn(model, b, eps).backward()
        flops[name] = counter.get_total_flops()
    model.zero_grad()
    peak = gemm_rate(torch.float32)
    timed = VARIANTS | COMPILED | PARTS
    times: dict[str, list[float]] = {name: [] for name in timed}
    times["optimizer"] = []
    for _ in range(args.repeats):  # the variants interleaved, repeat by repeat
        for name, fn in timed.items():
            for b in batches[:3]:
                fn(model, b, eps).backward()
            t = time.perf_counter()
            for b in batches:
                loss = fn(model, b, eps) / b.tokens
                if name not in PARTS:
                    opt.zero_grad()
                loss.backward()
                if name not in PARTS:
                    opt.step()
            times[name].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in batches:
            opt.step()
        times["optimizer"].append(time.perf_counter() - t)
    total = sum(examples)
    ms = {  # per 1,000 target tokens
        k: 1e6 * statistics.median(v) / total
        for k, v in times.items()
        if k in PARTS or k in ("optimizer", "autograd (Firth's step)")
    }
    whole = ms.pop("autograd (Firth's step)")
    parts = {k: round(v, 2) for k, v in ms.items()}
    parts["decoder loop (the rest)"] = round(whole - sum(ms.values()), 2)
    bound = whole / sum(ms.values())
    loop_flops = flops["whole"] - sum(flops[k] for k in PARTS)
    loop_ms = 1e6 * loop_flops / (peak * 1e9) / total  # as ``ms``: seconds at peak
    peak_bound = whole / (sum(ms.values()) + loop_ms)
    print(f"whole step {whole:.1f} ms per 1,000 {unit}; parts {parts}")
    print(
        f"a decoder loop that cost nothing: at most {bound:.2f}x the step; "
        f"one at {peak:.0f} GFLOP/s ({loop_ms:.2f} ms): {peak_bound:.2f}x"
    )
    rate = {k: total / statistics.median(v) for k, v in times.items()}
    base = rate["autograd (Firth's step)"]
    rows = {
        k: {"examples_per_second": round(v, 1), "speedup": round(v / base, 2)}
        for k, v in rate.items()
        if k not in PARTS and k != "optimizer"
    }
    for k, v in rows.items():
        print(f"{k}: {v['examples_per_second']:,.0f} {unit}/s ({v['speedup']}x)")
    write_result(
        OUT,
        {
            "machine": machine(),
            "commit": head_commit(ROOT),
            "command": "python " + " ".join(sys.argv),
            "threads": 1,
            "unit": unit,
            "batches": len(batches),
            "repeats": args.repeats,
            "max_gradient_error_float64": errors,
            "variants": rows,
            "whole_step_ms_per_1000": round(whole, 2),
            "parts_ms_per_1000": parts,
            "free_recurrence_bound": round(bound, 2),
            "matmul_flops_per_example": {k: round(v / total) for k, v in flops.items()},
            "gemm_gflops_one_thread": round(peak, 1),
            "decoder_loop_ms_per_1000_at_gemm_rate": round(loop_ms, 2),
            "peak_recurrence_bound": round(peak_bound, 2),
        },
    )
    print(OUT)


if __name__ == "__main__":
    main()
