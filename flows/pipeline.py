"""Prefect flow: run the DVC DAG stage by stage and publish the report summary.

DVC decides what is stale (Prefect's caching is off); stages run one at a time
because DVC holds a repository lock; fetch stages are retried. Run it with
``python flows/pipeline.py`` (Prefect starts its embedded local server, no setup).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def dvc(args: list[str], repo: Path) -> str:
    proc = subprocess.run(
        ["dvc", *args], cwd=repo, env=_env(), capture_output=True, text=True
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"dvc {' '.join(args)} failed:\n{tail}")
    return proc.stdout + proc.stderr


def stage_order(repo: Path, targets: list[str] | None = None) -> list[str]:
    """Every stage (or every stage ``targets`` need) in the order DVC would run
    them (from a forced dry run)."""
    out = dvc(["repro", "--dry", "--force", *(targets or [])], repo)
    return re.findall(r"Running stage '([^']+)'", out)


@task(cache_policy=NO_CACHE, task_run_name="{stage}")
def run_stage(stage: str, repo: Path) -> bool:
    """``dvc repro --single-item``: DVC reruns the stage only if it is stale."""
    logger = get_run_logger()
    out = dvc(["repro", "--single-item", stage], repo)
    ran = f"Running stage '{stage}'" in out
    logger.info("%s: %s", stage, "ran" if ran else "up to date")
    return ran


fetch_stage = run_stage.with_options(retries=3, retry_delay_seconds=5)


@flow(name="firth-pipeline", log_prints=False)
def pipeline(repo: str = str(ROOT)) -> dict[str, bool]:
    """Run the whole DAG in dependency order; return which stages ran."""
    logger = get_run_logger()
    path = Path(repo)
    order = stage_order(path)
    logger.info("%d stages: %s", len(order), ", ".join(order))
    results = {}
    for stage in order:
        runner = fetch_stage if stage.startswith("fetch-") else run_stage
        results[stage] = runner(stage, path)
    summary = path / "reports" / "index.md"
    if summary.exists():
        create_markdown_artifact(
            key="firth-report",
            markdown=summary.read_text(),
            description="Firth report summary",
        )
    logger.info("report: %s", path / "reports" / "index.html")
    return results


if __name__ == "__main__":
    ran = pipeline()
    print(
        f"{sum(ran.values())} of {len(ran)} stages ran; report: "
        f"{ROOT / 'reports' / 'index.html'}"
    )
