"""Prefect flow: scheduled retraining with a regression gate.

1. refresh: every fetch stage is forced to fetch its source again (retried); a
   source whose bytes did not change leaves dvc.lock as it was;
2. run the pipeline as a DVC experiment (``dvc exp run --temp``: the working tree is
   left alone while it runs);
3. compare the experiment with the baseline (``main``) by the rules of
   ``firth compare`` and publish the comparison as a Prefect artifact;
4. promote only when no tracked metric regressed beyond its tolerance: apply the
   experiment (its changed files, then the outputs the cache holds) and commit it
   on the baseline branch. Otherwise the branch and the
   working tree are left as they were and the run ends Failed with the reason.

Run once: ``python flows/retrain.py``; on a schedule: ``firth flows serve``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

# flows/ is on sys.path however a flow is loaded (python flows/<flow>.py, Prefect's
# entrypoints, firth flows): its modules import each other by name
from pipeline import ROOT, dvc, patient_server, stage_order, tool_env
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger
from prefect.states import Completed, Failed

from firth import compare as cmp


def git(args: list[str], repo: Path) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=tool_env(), capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def fetch_stages(repo: Path, targets: list[str]) -> list[str]:
    """The fetch stages the pipeline (or ``targets``) depends on."""
    return [s for s in stage_order(repo, targets) if s.startswith("fetch-")]


@task(cache_policy=NO_CACHE, retries=3, retry_delay_seconds=5, task_run_name="{stage}")
def refresh(stage: str, repo: Path) -> None:
    """Fetch one source again even if DVC thinks it is up to date."""
    dvc(["repro", "--force", "--single-item", stage], repo)


@task(cache_policy=NO_CACHE)
def run_experiment(
    repo: Path, name: str, set_params: list[str], targets: list[str]
) -> str:
    args = ["exp", "run", "--temp", "--name", name]
    for p in set_params:
        args += ["--set-param", p]
    dvc([*args, *targets], repo)
    return name


@task(cache_policy=NO_CACHE)
def gate(repo: Path, baseline: str, name: str, rules: str | None) -> list[cmp.Row]:
    table = cmp.load_rules(rules) if rules else cmp.DEFAULT_RULES
    metrics = cmp.load([baseline, name], repo)
    return cmp.compare(metrics[baseline], metrics[name], rules=table)


def markdown(rows: list[cmp.Row], baseline: str, name: str, verdict: str) -> str:
    shown = cmp.selected(rows, show="changed")
    table = (
        cmp.render_markdown(shown, baseline, name) if shown else "No metric changed."
    )
    return (
        f"# Retrain {name} vs {baseline}\n\n**{verdict}**\n\n{cmp.summary(rows)}.\n\n"
        + table
    )


def experiment_commit(repo: Path, name: str) -> str:
    """The commit of experiment ``name`` made on top of HEAD."""
    head = git(["rev-parse", "HEAD"], repo).strip()
    refs = git(["for-each-ref", "--format=%(objectname) %(refname)", "refs/exps"], repo)
    for line in refs.splitlines():
        sha, ref = line.split(" ", 1)
        if (
            ref.rsplit("/", 1)[-1] == name
            and git(["rev-parse", f"{sha}^"], repo).strip() == head
        ):
            return sha
    raise RuntimeError(f"no experiment {name!r} on top of {head[:7]}")


def _apply(repo: Path, name: str) -> None:
    """``dvc exp apply`` without its strictness about outputs: take the files the
    experiment commit changed, then check out the outputs the cache holds (a
    baseline that never reproduced some stages has no cache for them, and the
    experiment did not need them either)."""
    sha = experiment_commit(repo, name)
    changed = [
        line.split("\t", 1)
        for line in git(
            ["diff", "--name-status", "--no-renames", "HEAD", sha], repo
        ).splitlines()
    ]
    if gone := [f for status, f in changed if status == "D"]:
        git(["rm", "-q", "--", *gone], repo)
    if kept := [f for status, f in changed if status != "D"]:
        git(["checkout", sha, "--", *kept], repo)
    dvc(["checkout", "--allow-missing"], repo)


def _untracked(repo: Path) -> set[str]:
    out = git(["ls-files", "--others", "--exclude-standard", "-z"], repo)
    return {p for p in out.split("\0") if p}


def _restore(repo: Path, stages: list[str]) -> None:
    """Undo what the refresh changed in the working tree (dvc.lock, fetched data)."""
    if git(["status", "--porcelain", "--untracked-files=no"], repo).strip():
        git(["checkout", "--", "."], repo)
        if stages:
            dvc(["checkout", "--force", *stages], repo)


@flow(name="firth-retrain", log_prints=False)
def retrain(
    repo: str = str(ROOT),
    baseline: str = "main",
    name: str | None = None,
    set_params: list[str] | None = None,
    targets: list[str] | None = None,
    rules: str | None = None,
    refresh_sources: bool = True,
    promote: bool = True,
    push: bool = False,
):
    """Refresh, retrain as an experiment, gate on the baseline, promote or fail.

    set_params: ``dvc exp run -S`` values (a sweep point, or a planted change);
    targets: stages to reproduce (default: the whole DAG); rules: a YAML rules file
    for the gate (default: firth compare's rules); push: after promotion, push the
    outputs to the DVC remote (when one is configured) and the commit to origin, as
    a worker's throwaway clone must.
    """
    logger = get_run_logger()
    path = Path(repo)
    branch = git(["branch", "--show-current"], path).strip()
    if promote and branch != baseline:
        return Failed(
            message=f"the working tree is on {branch or 'a detached HEAD'!r}, not "
            f"on the baseline {baseline!r}: promotion would commit elsewhere"
        )
    if git(["status", "--porcelain", "--untracked-files=no"], path).strip():
        return Failed(
            message="the working tree has uncommitted changes: commit or stash "
            "them first (the experiment would carry them into the baseline)"
        )
    name = name or "retrain-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        return Failed(message=f"experiment name {name!r}: letters, digits, ._- only")
    untracked = _untracked(path)
    fetches = fetch_stages(path, list(targets or [])) if refresh_sources else []
    try:
        for stage in fetches:
            refresh(stage, path)
        run_experiment(path, name, list(set_params or []), list(targets or []))
        rows = gate(path, baseline, name, rules)
    except Exception:
        _restore(path, fetches)
        raise
    bad = cmp.regressions(rows)
    if bad:
        worst = "; ".join(cmp.flag_line(r, baseline, name) for r in bad[:5])
        verdict = f"blocked: {len(bad)} tracked metrics regressed ({worst})"
    else:
        verdict = "promoted" if promote else "passed (promotion off)"
    create_markdown_artifact(
        key="firth-retrain",
        markdown=markdown(rows, baseline, name, verdict),
        description=f"Retrain {name} vs {baseline}: {verdict}",
    )
    if bad:
        _restore(path, fetches)
        logger.error("%s", verdict)
        return Failed(message=verdict)
    if not promote:
        _restore(path, fetches)
        return Completed(message=verdict)
    _apply(path, name)
    # everything the experiment changed: tracked files, and files it created (the
    # tree was clean before; untracked files the user had are left out)
    git(["add", "--update"], path)
    if new := sorted(_untracked(path) - untracked):
        git(["add", "--", *new], path)
    if not git(["status", "--porcelain", "--untracked-files=no"], path).strip():
        logger.info("%s: nothing changed, nothing to commit", name)
        return Completed(message=f"{name}: identical to {baseline}, nothing to commit")
    git(
        [
            "commit",
            "-q",
            "-m",
            f"retrain: promote experiment {name} ({cmp.summary(rows)})",
        ],
        path,
    )
    rev = git(["rev-parse", "--short", "HEAD"], path).strip()
    logger.info("promoted %s as %s on %s", name, rev, baseline)
    if push:
        if dvc(["remote", "list"], path).strip():
            dvc(["push"], path)
        else:
            logger.warning("no DVC remote configured: outputs stay in the local cache")
        git(["push", "origin", baseline], path)
        logger.info("pushed %s to origin/%s", rev, baseline)
    return Completed(message=f"promoted {name} as {rev}")


if __name__ == "__main__":
    with patient_server():
        state = retrain(return_state=True)
    print(f"{state.name}: {state.message}")
    sys.exit(0 if state.is_completed() else 1)
