"""When the shared training loop validates (firth.training.Plan): every
interval, and once at the end unless a validation came just before; a run
shorter than one interval still validates (and so keeps weights) once."""

import pytest
import torch

from firth.training import Plan, Task, clip_gradients, fit


def validations(steps: int, every: int) -> list[int]:
    plan = Plan(steps=steps, steps_per_epoch=every * 3, eval_every=every, lr=1.0)
    out, last = [], 0
    for step in range(1, steps + 1):
        if plan.validates_after(step, last):
            out.append(step)
            last = step
    return out


@pytest.mark.parametrize(
    "steps, every, expected",
    [
        (212, 1407, [212]),  # 0.05 of an LM epoch: one validation, at the end
        (1, 10, [1]),
        (30, 10, [10, 20, 30]),
        (32, 10, [10, 20, 30]),  # 2 steps after the last: not again
        (34, 10, [10, 20, 30, 34]),  # more than a quarter interval after it
    ],
)
def test_validation_steps(steps, every, expected):
    assert validations(steps, every) == expected


def test_every_run_validates_at_least_once():
    for steps in range(1, 60):
        for every in range(1, 25):
            got = validations(steps, every)
            assert got, (steps, every)
            assert got[-1] >= steps - every // 4, (steps, every)


@pytest.mark.parametrize("kind", ["adam", "adamw"])
def test_fused_optimizer_matches_the_reference_loop(kind):
    """The trainers' fused Adam/AdamW takes the steps torch's per-tensor loop
    takes (the reference implementation), to float rounding."""
    import torch

    from firth.training import optimizer

    plan = Plan(
        steps=5,
        steps_per_epoch=5,
        eval_every=5,
        lr=0.01,
        optimizer=kind,
        weight_decay=0.1,
    )

    def run(make):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Embedding(50, 8), torch.nn.LSTM(8, 6, batch_first=True)
        )
        opt = make(model)
        x = torch.randint(0, 50, (4, 7))
        for _ in range(5):
            opt.zero_grad()
            model(x)[0].square().sum().backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    got = run(lambda m: optimizer(m, plan))
    assert got and all(g.is_floating_point() for g in got)
    ref_cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
    extra = {} if kind == "adam" else {"weight_decay": 0.1}
    want = run(lambda m: ref_cls(m.parameters(), lr=0.01, foreach=False, **extra))
    start = run(lambda m: ref_cls(m.parameters(), lr=0.0))
    for g, w, s in zip(got, want, start, strict=True):
        assert torch.allclose(g, w, atol=1e-6), (g - w).abs().max()
        assert not torch.equal(g, s)  # the steps moved the weights
    assert torch.optim.Adam in type(optimizer(torch.nn.Linear(2, 2), plan)).__mro__
    assert optimizer(torch.nn.Linear(2, 2), plan).defaults["fused"]


class _Line(Task):
    """y = 2x + 1 on eight points, one batch per step: the loop's bookkeeping,
    not a model, is under test."""

    def __init__(self, model):
        self.model = model
        self.x = torch.linspace(-1, 1, 8).unsqueeze(1)

    def epoch_batches(self, epoch):
        return [slice(0, 4), slice(4, 8)]

    def loss(self, batch):
        err = self.model(self.x[batch]) - (2 * self.x[batch] + 1)
        loss = (err**2).sum()
        return loss / 4, loss.item(), 4.0

    def validate(self):
        with torch.no_grad():
            v = float(((self.model(self.x) - (2 * self.x + 1)) ** 2).mean())
        return v, {"valid_loss": v}


def test_a_step_budget_cuts_the_plan_and_still_validates():
    """fit's ``max_steps`` (benchmarks time the real loop with it): the run stops
    after that many steps, its last step validates and keeps weights, and the
    curve and the counts say so."""
    from firth.accel import Accel

    plan = Plan(steps=40, steps_per_epoch=2, eval_every=10, lr=0.05)
    runs = {}
    for budget in (None, 7):
        torch.manual_seed(0)
        model = torch.nn.Linear(1, 1)
        accel = Accel.build(device="cpu", precision="fp32", compile=False, key="t")
        runs[budget] = fit(
            model, _Line(model), plan, seed=0, accel=accel, max_steps=budget
        )
    cut, full = runs[7], runs[None]
    assert (cut.steps, cut.plan.steps, full.steps) == (7, 7, 40)
    assert [r["step"] for r in cut.history] == [7]
    assert cut.best_state is not None and cut.trained == 7 * 4
    assert cut.stats["planned_steps"] == 7 and full.stats["planned_steps"] == 40
    assert [r["step"] for r in full.history] == [10, 20, 30, 40]


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_clip_gradients_is_torchs_clip_to_the_bit(scale):
    """Within the norm (no multiply) and beyond it (scaled), with a parameter
    that got no gradient, against torch.nn.utils.clip_grad_norm_."""
    g = torch.Generator().manual_seed(0)
    shapes = [(50, 20), (20,), (7, 3, 2), (4,)]
    ours, theirs = [], []
    for i, shape in enumerate(shapes):
        grad = torch.randn(shape, generator=g) * scale
        for out in (ours, theirs):
            p = torch.nn.Parameter(torch.zeros(shape))
            p.grad = None if i == 3 else grad.clone()
            out.append(p)
    clip_gradients(ours, 5.0)
    torch.nn.utils.clip_grad_norm_(theirs, 5.0)
    for a, b in zip(ours, theirs, strict=True):
        assert (a.grad is None) == (b.grad is None)
        assert a.grad is None or torch.equal(a.grad, b.grad)
    if scale > 1:
        flat = torch.cat([p.grad.flatten() for p in ours[:3]])
        total = torch.linalg.vector_norm(flat)
        assert float(total) == pytest.approx(5.0, rel=1e-5)
