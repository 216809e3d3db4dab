"""Skip-gram with negative sampling (Mikolov et al. 2013, "Distributed
Representations of Words and Phrases and their Compositionality", sections 2.2-2.3).

Conventions
- ``W`` (V, d): centre ("input") vectors v, initialised uniform in [-0.5/d, 0.5/d].
- ``C`` (V, d): context ("output") vectors u, initialised to zero.
- Noise distribution q(w) = count(w)^0.75 / sum, K negatives per (centre, context)
  pair; the per-pair loss is  -log s(u_o.v_c) - sum_k log s(-u_k.v_c)  (s = sigmoid).
- Frequent-word subsampling keeps each occurrence of a word of relative frequency
  f with probability min(1, (sqrt(f/t) + 1) t/f) (``sample_rule="word2vec"``: the
  rule of word2vec.c, gensim and fastText) or min(1, sqrt(t/f)) (``"paper"``: Mikolov
  et al. 2013b's equation 5, which keeps fewer mid-frequency words).
- For every kept position a window b is drawn uniformly from 1..m and the pairs
  (centre, context) are taken for every context within b on both sides, inside the
  same sentence. Expected pairs per position, far from sentence ends: m + 1.

Scale: an epoch never materialises the list of all pairs. Centre positions are
shuffled and taken ``batch_centres`` at a time. On the CPU (``kernel="fused"``,
firth.embeddings.sgns_fused) one compiled, multi-threaded pass per batch draws each
centre's window and negatives from a counter-based generator and accumulates the
gradients; otherwise the pairs of a batch are built with tensor ops and the step is a
handful of sparse kernels (``kernel="sparse"``: ``sampled_addmm`` for the scores, CSR
products for the gradients) or plain gathers and ``index_add_`` (``kernel="gather"``,
used on GPUs). Negatives come from an alias table (O(1) per draw).

Optimiser. Updates are summed over the batch, so a row that occurs thousands of times
in one batch (a frequent word drawn as a negative) gets thousands of gradients at
once; word2vec's plain SGD on such sums diverges at this batch size (``sgd``, kept
for small batches). The default ``damped-sgd`` divides each row's summed step by
1 + lr * h_row, with h_row = sum over the row's occurrences of s'(z) |x|^2 (the
Gauss-Newton curvature of the batch loss in that row, s'(z) floored at
``curvature_floor``): a row seen once moves as in SGD, a row seen n times takes at
most about a Newton step instead of n stale SGD steps, which is what sequential SGD's
saturation achieves. ``adagrad`` (row-wise, one accumulator per row as in
PyTorch-BigGraph) is the other stable choice; on the default corpus it gives
higher WordSim but lower SimLex than gensim (benchmarks/embeddings.py).

Subword SGNS (fastText) reuses the trainer with a composition matrix S (V, R):
the centre vector of a word is S[w] @ Z, the sum of its n-gram rows and its own row.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from firth.embeddings import sgns_fused
from firth.embeddings.corpus import Corpus

log = logging.getLogger(__name__)

Kernel = Literal["auto", "fused", "online", "sparse", "gather"]
Optimizer = Literal["adagrad", "sgd", "damped-sgd"]

# CSR tensors are "beta" in torch and warn on creation; the kernels used here are
# checked against the dense reference in tests/test_embeddings.py.
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly")


@dataclass(frozen=True)
class SGNSConfig:
    dim: int = 100
    window: int = 5  # m: windows are drawn uniformly from 1..m (dynamic)
    dynamic_window: bool = True  # False: every context within m, always
    negatives: int = 5  # K
    cds: float = 0.75  # noise distribution unigram^cds (context smoothing)
    sample: float = 1e-4  # t; 0 = no subsampling
    sample_rule: str = "word2vec"  # word2vec | paper (keep_probabilities)
    epochs: int = 5
    lr: float = 0.2  # initial rate, decays linearly to lr * min_lr_ratio
    min_lr_ratio: float = 1e-4
    optimizer: Optimizer = "damped-sgd"
    batch_centres: int = 16384  # centre positions per step
    kernel: Kernel = "auto"
    curvature_floor: float = 0.02  # damped-sgd: lower bound on s'(z) in the curvature
    seed: int = 0


@dataclass
class TrainStats:
    epochs: int = 0
    steps: int = 0
    pairs: int = 0
    kept_tokens: int = 0
    seconds: float = 0.0
    compile_seconds: float = 0.0  # fused kernel: compiling or loading it (not seconds)
    epoch_loss: list[float] = field(default_factory=list)  # mean per-pair loss
    first_loss: float = float("nan")  # mean per-pair loss of the first step


SAMPLE_RULES = ("word2vec", "paper")


def keep_probabilities(counts: np.ndarray, sample: float, rule: str) -> np.ndarray:
    """The probability of keeping an occurrence of each word, f its relative
    frequency and t = ``sample``: min(1, (sqrt(f/t) + 1) t/f) under word2vec.c's
    rule (gensim's and fastText's too), min(1, sqrt(t/f)) under the paper's
    (Mikolov et al. 2013b, eq. 5); 1 when t = 0."""
    if rule not in SAMPLE_RULES:
        raise ValueError(f"sample rule {rule!r}: expected one of {SAMPLE_RULES}")
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones_like(counts)
    freq = counts / counts.sum()
    if rule == "paper":
        return np.minimum(1.0, np.sqrt(sample / freq))
    return np.minimum(1.0, (np.sqrt(freq / sample) + 1.0) * sample / freq)


def noise_distribution(counts: np.ndarray, power: float = 0.75) -> np.ndarray:
    """Unigram counts^power, renormalised."""
    q = np.asarray(counts, dtype=np.float64) ** power
    return q / q.sum()


def alias_table(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias method for sampling from q in O(1): draw i uniformly from
    0..V-1 and u from U(0, 1); the sample is i if u < prob[i], else alias[i]."""
    q = np.asarray(q, dtype=np.float64)
    V = len(q)
    scaled = q * V / q.sum()
    prob = np.ones(V, dtype=np.float64)
    alias = np.arange(V, dtype=np.int64)
    small = [i for i in range(V) if scaled[i] < 1.0]
    large = [i for i in range(V) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    return prob, alias  # leftovers keep prob 1 (rounding)


def alias_distribution(prob: np.ndarray, alias: np.ndarray) -> np.ndarray:
    """The distribution an alias table samples from (for checking it)."""
    V = len(prob)
    out = prob / V
    np.add.at(out, alias, (1.0 - prob) / V)
    return out


def sentence_bounds(sentence: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """First and last position of each position's sentence (``sentence`` sorted)."""
    first = torch.searchsorted(sentence, sentence, right=False)
    last = torch.searchsorted(sentence, sentence, right=True) - 1
    return first, last


def window_pairs(
    pos: torch.Tensor,
    first: torch.Tensor,
    last: torch.Tensor,
    *,
    window: int,
    generator: torch.Generator,
    dynamic: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(centre position, context position) pairs for the centres ``pos`` (B,).

    Each centre draws b ~ U{1..window} (``dynamic``; else b = window) and pairs
    with every position within b on either side that lies in its own sentence
    [first, last].
    """
    (B,) = pos.shape
    dev = pos.device
    if dynamic:
        b = torch.randint(1, window + 1, (B,), generator=generator, device=dev)
    else:
        b = torch.full((B,), window, device=dev)
    off = torch.cat(
        [torch.arange(-window, 0, device=dev), torch.arange(1, window + 1, device=dev)]
    )  # (2m,)
    ctx = pos[:, None] + off[None, :]  # (B, 2m)
    ok = (off.abs()[None, :] <= b[:, None]) & (ctx >= first[pos][:, None])
    ok &= ctx <= last[pos][:, None]
    row, col = ok.nonzero(as_tuple=True)
    return pos[row], ctx[row, col]


def pair_loss(z: torch.Tensor) -> torch.Tensor:
    """Per-pair SGNS loss from scores z (P, K+1), column 0 the true context:
    -log s(z_0) - sum_k log s(-z_k), as (P,)."""
    return F.softplus(-z[:, 0]) + F.softplus(z[:, 1:]).sum(1)


def _scores_sparse(
    v: torch.Tensor, C: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """z[p, j] = v[p] . C[targets[p, j]] without gathering the rows of C."""
    P, J = targets.shape
    crow = torch.arange(0, P * J + 1, J, device=v.device)
    ones = torch.ones(P * J, device=v.device, dtype=v.dtype)
    A = torch.sparse_csr_tensor(crow, targets.reshape(-1), ones, size=(P, C.shape[0]))
    z = torch.sparse.sampled_addmm(A, v, C.t(), beta=0.0).values().view(P, J)
    return z, crow


def step_gradients(
    v: torch.Tensor,
    C: torch.Tensor,
    targets: torch.Tensor,
    *,
    kernel: Literal["sparse", "gather"],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores and gradients of the summed SGNS loss of one batch.

    v (P, d): centre vectors; targets (P, K+1): true context then K negatives.
    Returns z (P, K+1), grad_v (P, d), and grad_C (V, d) dense.
    """
    P, J = targets.shape
    V, d = C.shape
    if kernel == "sparse":
        z, crow = _scores_sparse(v, C, targets)
        g = torch.sigmoid(z)
        g[:, 0] -= 1.0  # dL/dz: s(z) - 1 for the context, s(z) for negatives
        flat = targets.reshape(-1)
        A = torch.sparse_csr_tensor(crow, flat, g.reshape(-1), size=(P, V))
        grad_v = A @ C  # (P, d): sum_j g[p, j] C[t[p, j]]
        # grad_C = A^T v, built as a CSR over target rows (sorted once; int32
        # keys sort about twice as fast).
        order = torch.argsort(flat.to(torch.int32))
        rows = torch.div(order, J, rounding_mode="floor")
        counts = torch.bincount(flat, minlength=V)
        crow_t = torch.zeros(V + 1, dtype=torch.long, device=v.device)
        crow_t[1:] = counts.cumsum(0)
        At = torch.sparse_csr_tensor(crow_t, rows, g.reshape(-1)[order], size=(V, P))
        grad_C = At @ v
        return z, grad_v, grad_C
    u = C.index_select(0, targets.reshape(-1)).view(P, J, d)  # (P, K+1, d)
    z = torch.bmm(u, v.unsqueeze(2)).squeeze(2)  # (P, K+1)
    g = torch.sigmoid(z)
    g[:, 0] -= 1.0
    grad_v = torch.bmm(g.unsqueeze(1), u).squeeze(1)  # (P, d)
    grad_u = (g.unsqueeze(2) * v.unsqueeze(1)).view(-1, d)  # (P*(K+1), d)
    grad_C = torch.zeros_like(C).index_add_(0, targets.reshape(-1), grad_u)
    return z, grad_v, grad_C


def row_curvature(
    z: torch.Tensor,
    v: torch.Tensor,
    C: torch.Tensor,
    targets: torch.Tensor,
    centre: torch.Tensor,
    *,
    rows_in: int,
    floor: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row Gauss-Newton curvature of the batch loss, as scalars:
    h_in[w] = sum over pairs with centre w of sum_j s'(z_j) |u_j|^2 (rows_in,) and
    h_out[c] = sum over occurrences of c as a target of s'(z) |v|^2 (V,)."""
    sig = torch.sigmoid(z)
    h = (sig * (1.0 - sig)).clamp_(min=floor)  # (P, K+1): s'(z), floored
    u_norm = C.square().sum(1)  # (V,)
    hv = (h * u_norm[targets]).sum(1)  # (P,)
    h_in = torch.zeros(rows_in, device=z.device, dtype=z.dtype).index_add_(
        0, centre, hv
    )
    v_norm = v.square().sum(1)  # (P,)
    h_out = torch.zeros(C.shape[0], device=z.device, dtype=z.dtype).index_add_(
        0, targets.reshape(-1), (h * v_norm[:, None]).reshape(-1)
    )
    return h_in, h_out


class RowAdaGrad:
    """Row-wise AdaGrad: one squared-gradient accumulator per row, G += mean(g^2)."""

    def __init__(self, rows: int, *, device: torch.device, eps: float = 1e-8):
        self.acc = torch.zeros(rows, device=device)
        self.eps = eps

    def step(self, param: torch.Tensor, grad: torch.Tensor, lr: float) -> None:
        self.acc.add_(grad.square().mean(1))
        denom = self.acc.sqrt().add_(self.eps).unsqueeze(1)
        param.addcdiv_(grad, denom, value=-lr)


def resolve_kernel(
    kernel: Kernel, device: torch.device
) -> Literal["fused", "online", "sparse", "gather"]:
    if kernel == "auto":
        return "fused" if device.type == "cpu" else "gather"
    if kernel in ("fused", "online") and device.type != "cpu":
        raise ValueError(
            f"the {kernel} SGNS kernel runs on the CPU; use gather on a GPU"
        )
    return kernel


def init_tables(
    rows_in: int, rows_out: int, dim: int, *, generator: torch.Generator, device
) -> tuple[torch.Tensor, torch.Tensor]:
    W = (torch.rand(rows_in, dim, generator=generator, device=device) - 0.5) / dim
    C = torch.zeros(rows_out, dim, device=device)
    return W, C


def alias_sample(prob, alias, shape, *, generator) -> torch.Tensor:
    """Draws from the alias table (``prob``, ``alias``) of a distribution over
    its ``len(prob)`` outcomes: a uniform outcome, kept with its probability or
    replaced by its alias."""
    device = prob.device
    pick = torch.randint(0, len(prob), shape, generator=generator, device=device)
    u01 = torch.rand(*shape, generator=generator, device=device)
    return torch.where(u01 < prob[pick], pick, alias[pick])


@dataclass
class Tables:
    """The trained tables: input Z (words, or n-gram rows composed by S), context
    C, and the row-wise AdaGrad accumulators where the optimiser is AdaGrad."""

    Z: torch.Tensor
    C: torch.Tensor
    S: torch.Tensor | None
    opt_in: RowAdaGrad | None
    opt_out: RowAdaGrad | None

    def step(
        self, centre, targets, lr: float, cfg: SGNSConfig, *, kernel
    ) -> torch.Tensor:
        """One update on the pairs (centre, targets[:, 0]) and their negatives
        (targets[:, 1:]); the scores z of every (centre, target)."""
        Z, C, S = self.Z, self.C, self.S
        Wc = Z if S is None else S @ Z  # (V, d) word input vectors
        v = Wc.index_select(0, centre)  # (P, d)
        z, grad_v, grad_C = step_gradients(v, C, targets, kernel=kernel)
        grad_W = torch.zeros_like(Wc).index_add_(0, centre, grad_v)  # (V, d)
        grad_Z = grad_W if S is None else S.t() @ grad_W  # (R, d)
        if self.opt_in is not None:
            self.opt_in.step(Z, grad_Z, lr)
            self.opt_out.step(C, grad_C, lr)
        elif cfg.optimizer == "damped-sgd":
            h_in, h_out = row_curvature(
                z, v, C, targets, centre, rows_in=len(C), floor=cfg.curvature_floor
            )
            if S is not None:
                h_in = (S.t() @ h_in[:, None]).squeeze(1)
            Z.addcdiv_(grad_Z, (1.0 + lr * h_in)[:, None], value=-lr)
            C.addcdiv_(grad_C, (1.0 + lr * h_out)[:, None], value=-lr)
        else:
            Z.add_(grad_Z, alpha=-lr)
            C.add_(grad_C, alpha=-lr)
        return z

    def state(self, gen: torch.Generator, stats: TrainStats) -> dict:
        """The whole training state after an epoch (a checkpoint): a copy, which
        later steps (they update the tables in place) leave as it was."""
        return {
            "Z": self.Z.detach().cpu().clone(),
            "C": self.C.detach().cpu().clone(),
            "acc_in": self.opt_in.acc.cpu().clone()
            if self.opt_in is not None
            else None,
            "acc_out": self.opt_out.acc.cpu().clone()
            if self.opt_out is not None
            else None,
            "generator": gen.get_state(),
            "stats": asdict(stats),
        }

    def restore(self, saved: dict, gen: torch.Generator, device) -> TrainStats:
        """Set the tables, accumulators and generator from ``state``'s output."""
        self.Z.copy_(saved["Z"].to(device))
        self.C.copy_(saved["C"].to(device))
        if self.opt_in is not None:
            self.opt_in.acc.copy_(saved["acc_in"].to(device))
            self.opt_out.acc.copy_(saved["acc_out"].to(device))
        gen.set_state(saved["generator"])
        return TrainStats(**saved["stats"])


def train_sgns(
    corpus: Corpus,
    cfg: SGNSConfig,
    *,
    device: str | torch.device = "cpu",
    composition: torch.Tensor | None = None,
    progress: bool = True,
    resume: dict | None = None,
    on_epoch: Callable[[dict], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, TrainStats]:
    """Train SGNS on ``corpus``; return (input table, context table, stats).

    With ``composition`` S (V, R) sparse CSR, the input table Z has R rows and the
    centre vector of word w is S[w] @ Z (subword SGNS); otherwise it is W[w].

    ``on_epoch`` receives the full training state after every epoch (tables,
    optimiser state, random generator, statistics); passing such a state back as
    ``resume`` continues exactly where it left off: a resumed run gives the same
    vectors as an uninterrupted one.
    """
    device = torch.device(device)
    kernel = resolve_kernel(cfg.kernel, device)
    V = len(corpus.vocab)
    if V < 2:
        raise ValueError("SGNS needs at least two words in the vocabulary")
    gen = torch.Generator(device=device)
    gen.manual_seed(cfg.seed)
    rows_in = V if composition is None else composition.shape[1]
    Z, C = init_tables(rows_in, V, cfg.dim, generator=gen, device=device)
    S = composition.to(device) if composition is not None else None

    data = Sampling.of(corpus, cfg, device)
    # Expected steps for the linear decay: kept positions per epoch / batch.
    expected_kept = float(data.keep[data.ids].sum().item())
    total_steps = max(1, cfg.epochs * math.ceil(expected_kept / cfg.batch_centres))
    opt_in = RowAdaGrad(rows_in, device=device) if cfg.optimizer == "adagrad" else None
    opt_out = RowAdaGrad(V, device=device) if cfg.optimizer == "adagrad" else None

    tables = Tables(Z, C, S, opt_in, opt_out)
    stats = TrainStats()
    if resume is not None:
        stats = tables.restore(resume, gen, device)
        log.info("sgns: resuming after epoch %d/%d", stats.epochs, cfg.epochs)
    fused = None
    if kernel in ("fused", "online"):
        c0 = time.perf_counter()
        fused = (Fused if kernel == "fused" else Online).of(tables, cfg)
        stats.compile_seconds = time.perf_counter() - c0
    start_epoch, seconds_before = stats.epochs, stats.seconds
    t0 = time.perf_counter()
    for epoch in range(start_epoch, cfg.epochs):
        desc = f"sgns epoch {epoch + 1}/{cfg.epochs}"
        if fused is not None:
            n, pairs, mean = fused.epoch(
                data, gen, cfg, stats, total_steps, desc=desc, progress=progress
            )
        else:
            n, pairs, mean = _epoch(
                data, tables, gen, cfg, stats, total_steps, kernel, desc, progress
            )
        log.info(
            "sgns epoch %d/%d: %d kept tokens, %d pairs, loss %.4f",
            epoch + 1,
            cfg.epochs,
            n,
            pairs,
            mean,
        )
        if on_epoch is not None:
            stats.seconds = seconds_before + time.perf_counter() - t0
            on_epoch(tables.state(gen, stats))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    stats.seconds = seconds_before + time.perf_counter() - t0
    return Z, C, stats


@dataclass
class Sampling:
    """The corpus on the device as the sampler reads it: token and sentence ids,
    each type's keep probability (subsampling), and the alias table of the noise
    distribution."""

    ids: torch.Tensor
    sent: torch.Tensor
    keep: torch.Tensor
    prob: torch.Tensor
    alias: torch.Tensor

    @classmethod
    def of(cls, corpus: Corpus, cfg: SGNSConfig, device: torch.device) -> Sampling:
        counts = corpus.vocab.counts
        keep = torch.from_numpy(keep_probabilities(counts, cfg.sample, cfg.sample_rule))
        prob, alias = alias_table(noise_distribution(corpus.vocab.counts, cfg.cds))
        return cls(
            ids=torch.from_numpy(corpus.ids).to(device),
            sent=torch.from_numpy(corpus.sentence).to(device),
            keep=keep.to(device=device, dtype=torch.float32),
            prob=torch.from_numpy(prob).to(device=device, dtype=torch.float32),
            alias=torch.from_numpy(alias).to(device),
        )


def _epoch(
    data: Sampling,
    tables: Tables,
    gen: torch.Generator,
    cfg: SGNSConfig,
    stats: TrainStats,
    total_steps: int,
    kernel,
    desc: str,
    progress: bool,
) -> tuple[int, int, float]:
    """One epoch: subsample, shuffle the kept positions, and step over batches of
    ``batch_centres`` of them with their windows' pairs and negatives. The kept
    tokens, the pairs and the mean pair loss (``stats`` updated)."""
    device, ids = data.ids.device, data.ids
    K, B = cfg.negatives, cfg.batch_centres
    mask = torch.rand(len(ids), generator=gen, device=device) < data.keep[ids]
    kept, kept_sent = ids[mask], data.sent[mask]
    n = len(kept)
    stats.kept_tokens += n
    first, last = sentence_bounds(kept_sent)
    order = torch.randperm(n, generator=gen, device=device)
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    pairs_epoch = 0
    bar = tqdm(
        range(0, n, B), desc=desc, unit=" steps", disable=not progress, leave=False
    )
    for start in bar:
        pos = order[start : start + B]
        cpos, opos = window_pairs(
            pos,
            first,
            last,
            window=cfg.window,
            generator=gen,
            dynamic=cfg.dynamic_window,
        )
        P = len(cpos)
        if P == 0:
            continue
        centre, context = kept[cpos], kept[opos]
        neg = alias_sample(data.prob, data.alias, (P, K), generator=gen)  # ~ q
        targets = torch.cat([context[:, None], neg], 1)  # (P, K+1)
        lr = _lr(cfg, stats.steps, total_steps)
        z = tables.step(centre, targets, lr, cfg, kernel=kernel)
        batch_loss = pair_loss(z).sum()
        if stats.steps == 0:
            stats.first_loss = float(batch_loss.item()) / P
        loss_sum += batch_loss
        pairs_epoch += P
        stats.steps += 1
        if stats.steps % 20 == 0:
            mean = float(loss_sum.item()) / pairs_epoch  # one sync per 20 steps
            bar.set_postfix(loss=f"{mean:.4f}", lr=f"{lr:.4g}")
    stats.pairs += pairs_epoch
    stats.epochs += 1
    mean = float(loss_sum.item()) / max(1, pairs_epoch)
    stats.epoch_loss.append(mean)
    return n, pairs_epoch, mean


def _lr(cfg: SGNSConfig, step: int, total_steps: int) -> float:
    """The linearly decayed rate of step ``step`` (floored at lr * min_lr_ratio)."""
    frac = min(1.0, step / total_steps)
    return cfg.lr * max(cfg.min_lr_ratio, 1.0 - frac)


@dataclass
class Fused:
    """The fused CPU kernel's view of the tables (numpy arrays sharing the tensors'
    memory) and its per-thread buffers (firth.embeddings.sgns_fused)."""

    tables: Tables
    buffers: sgns_fused.Buffers

    @classmethod
    def of(cls, tables: Tables, cfg: SGNSConfig) -> Fused:
        """Set the kernels' threads to torch's and compile (or load) them on a
        tiny batch, so that the first real step is not charged with it."""
        threads = sgns_fused.use_threads(torch.get_num_threads())
        V = tables.C.shape[0]  # word rows of both tables (subword: of S @ Z)
        bufs = sgns_fused.Buffers(threads, V, V, cfg.dim)
        sgns_fused.row_norms(tables.C.numpy(), bufs.c_norm)  # a resumed C is not 0
        sgns_fused.warm_up(threads)
        return cls(tables, bufs)

    def epoch(
        self,
        data: Sampling,
        gen: torch.Generator,
        cfg: SGNSConfig,
        stats: TrainStats,
        total_steps: int,
        *,
        desc: str,
        progress: bool,
    ) -> tuple[int, int, float]:
        """As ``_epoch``: subsample and shuffle with ``gen``; then each batch of
        centres is drawn and accumulated by the compiled kernel, its randomness
        keyed by (seed, step)."""
        ids = data.ids
        mask = torch.rand(len(ids), generator=gen) < data.keep[ids]
        kept, kept_sent = ids[mask], data.sent[mask]
        n = len(kept)
        stats.kept_tokens += n
        first, last = sentence_bounds(kept_sent)
        order = torch.randperm(n, generator=gen).numpy()
        kept_np, first_np, last_np = kept.numpy(), first.numpy(), last.numpy()
        prob, alias = data.prob.numpy(), data.alias.numpy()
        B = cfg.batch_centres
        loss_sum, pairs_epoch = 0.0, 0
        bar = tqdm(
            range(0, n, B), desc=desc, unit=" steps", disable=not progress, leave=False
        )
        for start in bar:
            pos = order[start : start + B]
            lr = _lr(cfg, stats.steps, total_steps)
            batch_loss, P = self.step(
                pos, kept_np, first_np, last_np, prob, alias, lr, cfg, stats.steps
            )
            if P == 0:
                continue
            if stats.steps == 0:
                stats.first_loss = batch_loss / P
            loss_sum += batch_loss
            pairs_epoch += P
            stats.steps += 1
            if stats.steps % 20 == 0:
                bar.set_postfix(loss=f"{loss_sum / pairs_epoch:.4f}", lr=f"{lr:.4g}")
        stats.pairs += pairs_epoch
        stats.epochs += 1
        mean = loss_sum / max(1, pairs_epoch)
        stats.epoch_loss.append(mean)
        return n, pairs_epoch, mean

    def step(self, pos, kept, first, last, prob, alias, lr, cfg, step):
        """One batch: accumulate, then the optimiser's row update. Returns the
        batch's summed pair loss and its number of pairs."""
        t, b = self.tables, self.buffers
        Z, C, S = t.Z, t.C, t.S
        Wc = Z if S is None else S @ Z  # (V, d) word input vectors
        C_np = C.numpy()
        sgns_fused.batch_gradients(
            Wc.numpy(), C_np, b.c_norm, sgns_fused.batch_key(cfg.seed, step), pos,
            first, last, kept, prob, alias, cfg.window, cfg.dynamic_window,
            cfg.negatives, np.float32(cfg.curvature_floor), b.gW, b.hW, b.touched,
            b.gC, b.hC, b.loss, b.pairs,
        )  # fmt: skip
        loss, P = float(b.loss.sum()), int(b.pairs.sum())
        if S is None and t.opt_in is None and cfg.optimizer == "damped-sgd":
            lr32 = np.float32(lr)
            sgns_fused.damped_update_rows(Z.numpy(), b.gW, b.hW, b.touched, lr32)
            sgns_fused.damped_update_threads(C_np, b.gC, b.hC, lr32, b.c_norm)
            return loss, P
        sgns_fused.reduce_threads(b.gC, b.hC)
        grad_W, h_in = torch.from_numpy(b.gW), torch.from_numpy(b.hW)
        grad_C, h_out = torch.from_numpy(b.gC[0]), torch.from_numpy(b.hC[0])
        grad_Z = grad_W if S is None else S.t() @ grad_W  # (R, d)
        if t.opt_in is not None:
            t.opt_in.step(Z, grad_Z, lr)
            t.opt_out.step(C, grad_C, lr)
        elif cfg.optimizer == "damped-sgd":
            if S is not None:
                h_in = (S.t() @ h_in[:, None]).squeeze(1)
            Z.addcdiv_(grad_Z, (1.0 + lr * h_in)[:, None], value=-lr)
            C.addcdiv_(grad_C, (1.0 + lr * h_out)[:, None], value=-lr)
        else:
            Z.add_(grad_Z, alpha=-lr)
            C.add_(grad_C, alpha=-lr)
        for x in (b.gW, b.hW, b.touched, b.gC[0], b.hC[0]):
            x[...] = 0
        sgns_fused.row_norms(C_np, b.c_norm)
        return loss, P


@dataclass
class Online(Fused):
    """The online loop (``kernel="online"``): word2vec's and fastText's own rule,
    an SGD step per (centre, context) pair in corpus order at the linearly
    decaying rate ``lr`` (``optimizer`` is not read), through
    ``sgns_fused.online_batch``. With more than one thread, each thread trains its
    own copy of the tables on its share of a batch and their changes are summed
    after the batch (``sgns_fused.merge_copies``): deterministic for a given thread
    count, where word2vec's and fastText's threads race on shared tables."""

    rows: tuple[np.ndarray, np.ndarray, np.ndarray] = ()  # CSR of each word's rows
    flags: tuple[np.ndarray, np.ndarray] = ()  # (T, rows) touched flags of Z and C
    copies: tuple[np.ndarray, np.ndarray] | None = None  # threads' (T, rows, d) tables

    @classmethod
    def of(cls, tables: Tables, cfg: SGNSConfig) -> Online:
        threads = sgns_fused.use_threads(torch.get_num_threads())
        S, Z, C = tables.S, tables.Z, tables.C
        if S is None:
            V = Z.shape[0]
            ptr, idx = np.arange(V + 1), np.arange(V)
            val = np.ones(V, dtype=np.float32)
        else:
            ptr, idx = S.crow_indices().numpy(), S.col_indices().numpy()
            val = S.values().numpy()
        rows = (ptr.astype(np.int64), idx.astype(np.int64), val.astype(np.float32))
        copies = None
        if threads > 1:
            Zs = np.repeat(Z.numpy()[None], threads, axis=0)
            Cs = np.repeat(C.numpy()[None], threads, axis=0)
            copies = (Zs, Cs)
        flags = (
            np.zeros((threads, Z.shape[0]), dtype=np.uint8),
            np.zeros((threads, C.shape[0]), dtype=np.uint8),
        )
        bufs = sgns_fused.Buffers(threads, 1, 1, 1)  # its loss and pairs only
        sgns_fused.warm_up_online(threads)
        return cls(tables, bufs, rows, flags, copies)

    def step(self, pos, kept, first, last, prob, alias, lr, cfg, step):
        """One batch of pair-by-pair updates, then (threads > 1) the merge of the
        threads' copies. Returns the batch's summed pair loss and its pairs."""
        t, b = self.tables, self.buffers
        Z, C = t.Z.numpy(), t.C.numpy()
        if self.copies is None:
            Zs, Cs = Z[None], C[None]
        else:
            Zs, Cs = self.copies
        sgns_fused.online_batch(
            Zs, Cs, *self.rows, sgns_fused.batch_key(cfg.seed, step), pos, first,
            last, kept, prob, alias, cfg.window, cfg.dynamic_window, cfg.negatives,
            np.float32(lr), *self.flags, b.loss, b.pairs,
        )  # fmt: skip
        if self.copies is not None:
            sgns_fused.merge_copies(Z, Zs, self.flags[0])
            sgns_fused.merge_copies(C, Cs, self.flags[1])
        return float(b.loss.sum()), int(b.pairs.sum())
