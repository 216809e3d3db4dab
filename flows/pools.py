"""Prefect flows for teams: the DAG fanned out across two work pools, each ready
stage one deployment run, training stages on GPU nodes and the rest on CPU nodes.

Nodes share nothing but the git repository and the DVC remote. ``pipeline_on_pools``
walks DVC's graph (``firth.dag``) as the local pipeline flow does: a stage is
sent once every stage it reads from has finished, up to ``jobs`` at once, so N
workers on a pool run N stages at once. A worker (``run_stages``) runs its stage
in its own workspace with ``dvc repro --pull``: missing inputs come from the
remote, and an upstream stage that already ran on another node is restored from
DVC's run cache instead of running again; then ``dvc push --run-cache`` hands its
outputs to the next node. At the end the orchestrator runs ``dvc repro --pull``
in its own workspace, which restores every output from the remote and run cache
(only stages the run cache cannot hold run there: fetches, whose outputs persist,
and the report). docs/scaling.md, "Work pools".
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# flows/ is on sys.path however a flow is loaded (python flows/<flow>.py, Prefect's
# entrypoints, firth flows): its modules import each other by name
from pipeline import ROOT, Schedule, Slot, dvc, run_graph
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.deployments import run_deployment
from prefect.futures import PrefectFuture
from prefect.logging import get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from firth import dag

NODE = "FIRTH_NODE_REPO"  # a worker's own workspace (default: the flow's checkout)


def _git(args: list[str], repo: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {repo}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _at_commit(repo: Path, commit: str) -> None:
    """Check out ``commit`` in the worker's workspace (fetching it if needed), so
    every node runs the orchestrator's code and params."""
    if _git(["rev-parse", "HEAD"], repo) == commit:
        return
    try:
        _git(["cat-file", "-e", f"{commit}^{{commit}}"], repo)
    except RuntimeError:
        _git(["fetch", "--quiet", "origin"], repo)
    _git(["checkout", "--quiet", "--force", commit], repo)


@task(cache_policy=NO_CACHE, task_run_name="{stage}")
def repro_pulling(stage: str, repo: Path) -> bool:
    """Run one stage (and whatever it needs that neither the remote nor the run
    cache holds) with inputs pulled; True if the stage itself ran."""
    logger = get_run_logger()
    out = dvc(["repro", "--pull", stage], repo)
    # upstream stages that neither the remote nor the run cache could restore here
    upstream = [s for s in dag.ran_in(out) if s != stage]
    if upstream:
        logger.info("%s: ran %s here first", stage, ", ".join(upstream))
    return stage in dag.ran_in(out)


@flow(name="firth-stages", log_prints=False)
def run_stages(
    stages: list[str],
    repo: str | None = None,
    push: bool = True,
    commit: str | None = None,
) -> dict[str, bool]:
    """What one worker does: run ``stages`` in its workspace (``repo``, else
    ``$FIRTH_NODE_REPO``, else the flow's checkout) at ``commit``, pulling their
    inputs, then push the outputs and the run cache to the DVC remote."""
    logger = get_run_logger()
    path = Path(repo or os.environ.get(NODE) or ROOT)
    if commit:
        _at_commit(path, commit)
    ran = {s: repro_pulling(s, path) for s in stages}
    if push:
        dvc(["push", "--run-cache"], path)
    logger.info("%s: %d of %d stages ran here", path, sum(ran.values()), len(ran))
    return ran


@task(cache_policy=NO_CACHE, task_run_name="{stage} on {deployment}")
def on_pool(stage: str, deployment: str, commit: str | None) -> bool:
    """One deployment run of ``run_stages`` for ``stage``; waits for it."""
    run = run_deployment(
        name=deployment,
        parameters={"stages": [stage], "commit": commit},
        timeout=None,
    )
    if not run.state or not run.state.is_completed():
        message = run.state.message if run.state else "no state"
        raise RuntimeError(
            f"{stage}: {deployment} run {run.name} ended "
            f"{run.state.name if run.state else 'without a state'}: {message}"
        )
    return True


@flow(
    name="firth-pipeline-pools",
    log_prints=False,
    task_runner=ThreadPoolTaskRunner(max_workers=256),
)
def pipeline_on_pools(
    repo: str = str(ROOT),
    cpu: str = "firth-stages/firth-cpu",
    gpu: str = "firth-stages/firth-gpu",
    jobs: int = 64,
    targets: list[str] | None = None,
    keep_going: bool = False,
) -> dict[str, bool]:
    """Send each stage to its pool as soon as its upstream stages are done (at most
    ``jobs`` deployment runs at once; the pools' workers set the real limit), then
    ``dvc repro --pull`` here, and publish the report summary. Returns the stages
    that were sent and finished."""
    logger = get_run_logger()
    path = Path(repo)
    graph = dag.load(path, targets or ())
    try:
        commit: str | None = _git(["rev-parse", "HEAD"], path)
    except RuntimeError:
        commit = None
    logger.info("%d stages to %s (train-*) and %s (the rest)", len(graph), gpu, cpu)

    def submit(name: str, slot: Slot) -> PrefectFuture:
        return on_pool.submit(name, gpu if dag.is_training(name) else cpu, commit)

    schedule = Schedule(graph, jobs, cpus=10**6)  # the workers hold the machines
    outcome = run_graph(graph, submit, schedule, keep_going=keep_going)
    if outcome.failed:
        first = next(iter(outcome.failed.values()))
        raise RuntimeError(
            f"{len(outcome.failed)} stage(s) failed on the pools "
            f"({', '.join(outcome.failed)}): {first}"
        ) from first
    restored = dvc(["repro", "--pull", *(targets or [])], path)
    again = dag.ran_in(restored)
    logger.info("here: %s", f"ran {', '.join(again)}" if again else "nothing ran")
    summary = path / "reports" / "index.md"
    if summary.exists():
        create_markdown_artifact(key="firth-report", markdown=summary.read_text())
    return outcome.done
