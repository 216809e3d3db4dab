"""Prefect flows for teams: the DAG across two work pools, training stages on GPU
nodes and everything else on CPU nodes.

Nodes share nothing but the git repository and the DVC remote. A worker runs a
list of stages in its own clone with ``dvc repro --pull`` (missing inputs come
from the remote, and a stage whose exact inputs already ran anywhere is restored
from DVC's run cache instead of rerunning), then ``dvc push --run-cache`` so the
next node finds its outputs. The DAG splits into three phases that respect every
dependency: data stages (CPU), training (GPU), evaluation and the report (CPU).
``pipeline_on_pools`` runs them in order through the two deployments of
``prefect.yaml`` and finally reproduces the whole DAG on its own node, which then
only pulls (docs/scaling.md, "Work pools").
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.deployments import run_deployment
from prefect.logging import get_run_logger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import ROOT, dvc, stage_order  # noqa: E402


def is_training(stage: str) -> bool:
    return stage.startswith("train-")


def edges(repo: Path) -> list[tuple[str, str]]:
    """(upstream, downstream) stage pairs from ``dvc dag --dot``."""
    out = dvc(["dag", "--dot"], repo)
    return re.findall(r'"([^"]+)"\s*->\s*"([^"]+)"', out)


def phases(order: list[str], deps: list[tuple[str, str]]) -> list[list[str]]:
    """DVC's stage order split into [data, training, evaluation]: stages upstream
    of no training stage come first, then every training stage, then the rest,
    each in DVC's order. Raises if a training stage needs a stage of the last
    phase (then no split into pools is possible)."""
    children: dict[str, set[str]] = {}
    for up, down in deps:
        children.setdefault(up, set()).add(down)
    after: set[str] = set()
    todo = [s for s in order if is_training(s)]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in after:
                after.add(child)
                todo.append(child)
    data = [s for s in order if not is_training(s) and s not in after]
    train = [s for s in order if is_training(s)]
    rest = [s for s in order if not is_training(s) and s in after]
    last = set(rest)
    for up, down in deps:
        if is_training(down) and up in last:
            raise ValueError(f"{down} depends on {up}, which needs a trained model")
    return [data, train, rest]


@task(cache_policy=NO_CACHE, task_run_name="{stage}")
def repro_pulling(stage: str, repo: Path) -> bool:
    """Run one stage with its inputs pulled from the remote; True if it ran
    (False: up to date, or restored from the run cache)."""
    out = dvc(["repro", "--pull", "--single-item", stage], repo)
    return f"Running stage '{stage}'" in out


@flow(name="firth-stages", log_prints=False)
def run_stages(
    stages: list[str], repo: str = str(ROOT), push: bool = True
) -> dict[str, bool]:
    """What one worker does: run ``stages`` in order in its clone, pulling their
    inputs, then push the outputs and the run cache to the DVC remote."""
    logger = get_run_logger()
    path = Path(repo)
    ran = {s: repro_pulling(s, path) for s in stages}
    if push:
        dvc(["push", "--run-cache"], path)
    logger.info("%d of %d stages ran here", sum(ran.values()), len(ran))
    return ran


@flow(name="firth-pipeline-pools", log_prints=False)
def pipeline_on_pools(
    repo: str = str(ROOT),
    cpu: str = "firth-stages/firth-cpu",
    gpu: str = "firth-stages/firth-gpu",
) -> list[str]:
    """Data stages on the CPU pool, training on the GPU pool, evaluation on the
    CPU pool, each phase waiting for the one before; then ``dvc repro --pull``
    here, which restores every output from the remote without running anything
    again, and the report summary as an artifact."""
    logger = get_run_logger()
    path = Path(repo)
    order = stage_order(path)
    done = []
    for stages, deployment in zip(
        phases(order, edges(path)), (cpu, gpu, cpu), strict=True
    ):
        if not stages:
            continue
        logger.info("%s: %d stages", deployment, len(stages))
        run = run_deployment(
            name=deployment, parameters={"stages": stages}, timeout=None
        )
        if not run.state or not run.state.is_completed():
            raise RuntimeError(
                f"{deployment} run {run.name} ended "
                f"{run.state.name if run.state else 'without a state'}"
            )
        done.append(run.name)
    dvc(["repro", "--pull"], path)
    summary = path / "reports" / "index.md"
    if summary.exists():
        create_markdown_artifact(key="firth-report", markdown=summary.read_text())
    return done
