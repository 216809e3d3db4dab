"""Prefect flow: run the DVC DAG, independent stages at once, and publish the
report summary.

Each DVC stage is a Prefect task that starts once every stage it reads from has
finished (the graph from DVC's index: ``firth.dag``). ``--jobs N`` caps how many
run at once; a stage also waits for its CPU threads (the ``threads`` its params
ask for, out of ``--cpus``) and, given ``--gpus 0,1,...``, a training stage for
its GPUs (``CUDA_VISIBLE_DEVICES``). ``--jobs 1`` (the default) runs one stage
at a time in DVC's own order.

Concurrent stages share one workspace without fighting over DVC's lock: this
process keeps one DVC repository open and does DVC's own bookkeeping for each
stage exactly as ``dvc repro`` does (``Stage.changed``, ``remove_outs``, the run
cache, ``save``/``commit``, the dvc.lock entry), one stage at a time under DVC's
repository lock; only the stage's command runs outside it, as DVC itself runs
it (``dvc.stage.run``: its shell, working folder, ``DVC_ROOT``/``DVC_STAGE``).
So after the flow ``dvc status`` is clean and ``dvc repro`` is a no-op, exactly
as after a serial run. A failing stage fails the flow with its own error after
the stages already running have finished and been committed; nothing that
depends on it starts (with ``--keep-going``, every stage that does not depend on
it still runs). Fetch stages are retried. Each stage's output goes to
``.dvc/tmp/firth-flow/<stage>.log``; ``run.json`` beside it records when each
stage started and ended.

Run it with ``python flows/pipeline.py --jobs 2`` (``make flow JOBS=2``; Prefect
starts its embedded local server, no setup).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture, as_completed
from prefect.logging import get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from firth import dag

ROOT = Path(__file__).resolve().parents[1]

LOGS = Path(".dvc", "tmp", "firth-flow")


def tool_env() -> dict[str, str]:
    """The environment for dvc and git subprocesses: this interpreter's bin first
    on PATH (the dvc of the venv running the flow)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def dvc(args: list[str], repo: Path) -> str:
    proc = subprocess.run(
        ["dvc", *args], cwd=repo, env=tool_env(), capture_output=True, text=True
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


# --- DVC's bookkeeping, one stage at a time -------------------------------------------


class Ledger:
    """One open DVC repository whose stages this flow runs. ``begin`` and
    ``finish`` are the two halves of DVC's own ``Stage.run`` with the command left
    out; each holds DVC's repository lock (and this object's) while it runs."""

    def __init__(self, root: Path) -> None:
        from dvc.repo import Repo

        self.repo = Repo(str(root))
        root = self.repo.root_dir
        self.stages = {dag.address(s, root): s for s in self.repo.index.stages}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        from dvc.repo import lock_repo

        with self._lock, lock_repo(self.repo):
            yield

    def begin(self, name: str) -> str:
        """'up to date', 'restored' (from DVC's run cache) or 'run' (its outputs
        removed, its deps saved: run the command, then ``finish``)."""
        from dvc.stage.cache import RunCacheNotFoundError

        stage = self.stages[name]
        with self.locked():
            if not stage.changed():
                return "up to date"
            stage.remove_outs(ignore_remove=False, force=False)
            try:
                self.repo.stage_cache.restore(stage)
            except RunCacheNotFoundError:
                stage.save_deps()
                return "run"
            self._record(name)
            return "restored"

    def finish(self, name: str) -> None:
        """Hash the outputs, move them to the cache, write the dvc.lock entry."""
        with self.locked():
            self._record(name)

    def _record(self, name: str) -> None:
        stage = self.stages[name]
        # as Stage.run: no run cache for a stage with uncached plain outputs
        no_cache_outs = any(
            not (out.use_cache or out.is_metric or out.is_plot) for out in stage.outs
        )
        stage.save(run_cache=not no_cache_outs)
        stage.commit()
        stage.dump(update_pipeline=False)

    def command(self, name: str, env: dict[str, str]) -> tuple[list[list[str]], dict]:
        """The argv of each of the stage's commands and the Popen keywords, as
        ``dvc repro`` would run them."""
        from dvc.stage.run import (
            _enforce_cmd_list,
            _make_cmd,
            get_executable,
            prepare_kwargs,
        )

        stage = self.stages[name]
        kwargs = prepare_kwargs(stage, run_env=env)
        executable = get_executable()
        return [_make_cmd(executable, c) for c in _enforce_cmd_list(stage.cmd)], kwargs

    def close(self) -> None:
        self.repo.close()


# --- one stage ----------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """What a running stage holds: CPU threads, and GPU ids on a GPU node."""

    threads: int = 1
    gpus: tuple[str, ...] | None = None  # None: leave CUDA_VISIBLE_DEVICES alone

    def env(self) -> dict[str, str]:
        if self.gpus is None:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(self.gpus)}


@task(cache_policy=NO_CACHE, task_run_name="{name}")
def run_stage(name: str, ledger: Ledger, slot: Slot, logs: Path) -> bool:
    """One stage as ``dvc repro --single-item`` would run it; True if it ran (or
    was restored from the run cache), False if it was up to date."""
    logger = get_run_logger()
    verdict = ledger.begin(name)
    if verdict != "run":
        logger.info("%s: %s", name, verdict)
        return verdict == "restored"
    commands, kwargs = ledger.command(name, slot.env())
    log = logs / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("w") as sink:
        for argv in commands:
            proc = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, **kwargs)
            if proc.returncode != 0:
                sink.flush()
                tail = log.read_text(errors="replace").replace("\r", "\n")
                tail = "\n".join(line for line in tail.splitlines() if line.strip())
                raise RuntimeError(
                    f"stage {name}: `{argv[-1]}` exited with {proc.returncode}; "
                    f"the end of {log}:\n" + "\n".join(tail.splitlines()[-15:])
                )
    ledger.finish(name)
    logger.info("%s: ran in %.1f s (log: %s)", name, time.monotonic() - start, log)
    return True


fetch_stage = run_stage.with_options(retries=3, retry_delay_seconds=5)


# --- the schedule -------------------------------------------------------------------


@dataclass
class Schedule:
    """Which stage may start now: at most ``jobs`` at once, their threads within
    ``cpus`` (a stage asking for more runs alone), and a stage whose name starts
    that trains (``firth.dag.is_training``) holding ``stage.gpus`` of ``gpus`` (when
    ``gpus`` is not None; the others then see no GPU)."""

    graph: dag.Dag
    jobs: int
    cpus: int
    gpus: list[str] | None = None
    held: dict[str, Slot] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {self.jobs}")
        if self.gpus is not None:
            for s in self.graph.stages.values():
                if self.needs_gpu(s.name) and s.gpus > len(self.gpus):
                    raise ValueError(
                        f"{s.name} runs {s.gpus} processes (accel.processes) but "
                        f"only {len(self.gpus)} GPUs were given ({','.join(self.gpus)})"
                    )

    def needs_gpu(self, name: str) -> bool:
        return self.gpus is not None and dag.is_training(name)

    def take(self, name: str) -> Slot | None:
        """A slot for ``name`` if it can start now, else None."""
        if len(self.held) >= self.jobs:
            return None
        stage = self.graph.stages[name]
        threads = min(stage.threads, self.cpus)
        busy = sum(s.threads for s in self.held.values())
        if self.held and busy + threads > self.cpus:
            return None
        gpus: tuple[str, ...] | None = None
        if self.gpus is not None:
            gpus = ()
            if self.needs_gpu(name):
                taken = {g for s in self.held.values() for g in s.gpus or ()}
                free = [g for g in self.gpus if g not in taken]
                if len(free) < stage.gpus:
                    return None
                gpus = tuple(free[: stage.gpus])
        slot = Slot(threads, gpus)
        self.held[name] = slot
        return slot

    def give_back(self, name: str) -> None:
        self.held.pop(name, None)


@dataclass
class Outcome:
    """What ``run_graph`` saw: stage -> ran (True) or up to date (False), the
    stages that failed with their errors, and each started stage's start and end
    in seconds from the start, with the threads it held."""

    done: dict[str, bool] = field(default_factory=dict)
    failed: dict[str, BaseException] = field(default_factory=dict)
    times: dict[str, dict[str, float]] = field(default_factory=dict)


def run_graph(
    graph: dag.Dag,
    submit: Callable[[str, Slot], PrefectFuture],
    schedule: Schedule,
    *,
    keep_going: bool = False,
) -> Outcome:
    """Start each stage once its upstream stages are done and ``schedule`` has a
    slot for it (in DVC's order among the ready ones). After a failure no new
    stage starts, unless ``keep_going``: then only what depends on it is left out."""
    out = Outcome()
    running: dict[PrefectFuture, str] = {}
    blocked: set[str] = set()
    t0 = time.monotonic()
    while True:
        if not out.failed or keep_going:
            started = set(running.values()) | set(out.failed) | blocked
            for name in graph.ready(out.done, started):
                slot = schedule.take(name)
                if slot is not None:
                    running[submit(name, slot)] = name
                    out.times[name] = {
                        "start": round(time.monotonic() - t0, 2),
                        "threads": slot.threads,
                    }
        if not running:
            return out
        future = next(as_completed(list(running)))
        name = running.pop(future)
        out.times[name]["end"] = round(time.monotonic() - t0, 2)
        schedule.give_back(name)
        future.wait()  # (sets its final state)
        state = future.state
        if state.is_completed():
            out.done[name] = bool(future.result())
        else:
            error = future.result(raise_on_failure=False)
            out.failed[name] = (
                error if isinstance(error, BaseException) else RuntimeError(str(state))
            )
            blocked |= graph.after([name])


@flow(
    name="firth-pipeline",
    log_prints=False,
    task_runner=ThreadPoolTaskRunner(max_workers=64),
)
def pipeline(
    repo: str = str(ROOT),
    jobs: int = 1,
    cpus: int = 0,
    gpus: str | None = None,
    targets: list[str] | None = None,
    keep_going: bool = False,
) -> dict[str, bool]:
    """Run the DAG (or what ``targets`` need), up to ``jobs`` stages at once;
    return which stages ran. ``cpus``: threads to share out (0: this machine's
    cores). ``gpus``: GPU ids to hand to training stages, e.g. "0,1,2,3"."""
    logger = get_run_logger()
    path = Path(repo)
    cpus = cpus or os.cpu_count() or 1
    graph = dag.load(path, targets or (), cpus=cpus)
    schedule = Schedule(
        graph, jobs, cpus, [g for g in gpus.split(",") if g] if gpus else None
    )
    logger.info("%d stages, up to %d at once on %d CPUs", len(graph), jobs, cpus)
    path = path.resolve()
    logs = path / LOGS

    def submit(name: str, slot: Slot) -> PrefectFuture:
        runner = fetch_stage if name.startswith("fetch-") else run_stage
        return runner.submit(name, ledger, slot, logs)

    start = time.monotonic()
    # DVC resolves paths from the working folder, as its CLI does from the repo's
    with contextlib.chdir(path):
        ledger = Ledger(path)
        try:
            outcome = run_graph(graph, submit, schedule, keep_going=keep_going)
        finally:
            ledger.close()
    done, failed = outcome.done, outcome.failed
    logs.mkdir(parents=True, exist_ok=True)
    record = {"jobs": jobs, "cpus": cpus, "gpus": gpus}
    record |= {"seconds": round(time.monotonic() - start, 2), "stages": outcome.times}
    (logs / "run.json").write_text(json.dumps(record, indent=1))
    if failed:
        for name, error in failed.items():
            logger.error("%s failed: %s", name, error)
        first = next(iter(failed.values()))
        not_run = sorted(set(graph.stages) - set(done) - set(failed))
        raise RuntimeError(
            f"{len(failed)} stage(s) failed ({', '.join(failed)}); "
            f"{len(done)} finished and kept, {len(not_run)} not started. "
            f"First error: {first}"
        ) from first
    summary = path / "reports" / "index.md"
    if summary.exists():
        create_markdown_artifact(
            key="firth-report",
            markdown=summary.read_text(),
            description="Firth report summary",
        )
    logger.info("report: %s", path / "reports" / "index.html")
    return done


@contextlib.contextmanager
def patient_server(seconds: int = 120) -> Iterator[None]:
    """Give Prefect's ephemeral server (no PREFECT_API_URL set) ``seconds`` to
    start rather than its default 20: on a busy 2-core machine it took longer,
    and the flow failed before running a stage."""
    from prefect.settings import (
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS as timeout,
    )
    from prefect.settings import temporary_settings

    with temporary_settings(updates={timeout: max(seconds, timeout.value())}):
        yield


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(ROOT))
    parser.add_argument("--jobs", "-j", type=int, default=1, help="stages at once")
    parser.add_argument("--cpus", type=int, default=0, help="0: every core")
    parser.add_argument("--gpus", default=None, help='GPU ids, e.g. "0,1,2,3"')
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("targets", nargs="*", help="stages (default: every stage)")
    args = parser.parse_args(argv)
    with patient_server():
        ran = pipeline(
            args.repo,
            jobs=args.jobs,
            cpus=args.cpus,
            gpus=args.gpus,
            targets=args.targets or None,
            keep_going=args.keep_going,
        )
    print(
        f"{sum(ran.values())} of {len(ran)} stages ran; report: "
        f"{Path(args.repo) / 'reports' / 'index.html'}"
    )


if __name__ == "__main__":
    main()
