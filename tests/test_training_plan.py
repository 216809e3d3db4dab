"""When the shared training loop validates (firth.training.Plan): every
interval, and once at the end unless a validation came just before; a run
shorter than one interval still validates (and so keeps weights) once."""

import pytest

from firth.training import Plan


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
