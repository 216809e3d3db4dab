"""The DVC pipeline as a task graph: which stage waits for which, what each one
asks of the machine, and how long the whole graph takes on N workers.

``load`` reads the graph from DVC's own index (``Repo.index.graph``, whose edges
point from a stage to the stages it reads from); everything else here is pure and
works on the resulting ``Dag``:

- ``ready``: the stages whose upstream stages are all done;
- ``critical_path``: the longest chain of durations (no schedule can beat it);
- ``makespan``: list scheduling on ``workers`` identical workers, the ready
  stage with the longest remaining chain first (Graham's list scheduling with
  HLFET priorities), which is within a factor of two of the optimum;
- ``ideal``: the lower bound max(critical path, total work / workers).
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Stage:
    """One DVC stage as the scheduler sees it.

    ``threads``: CPU threads its params ask for (the largest ``threads`` key in the
    params it reads, 0 meaning every core; 1 when they name none), times its DDP
    ``accel.processes``. ``gpus``: GPUs it would use on a GPU node (its
    ``accel.processes``). ``outs``: (path relative to the repository, persist).
    """

    name: str
    upstream: frozenset[str]
    cmd: tuple[str, ...] = ()
    wdir: str = "."
    outs: tuple[tuple[str, bool], ...] = ()
    threads: int = 1
    gpus: int = 1


@dataclass(frozen=True)
class Dag:
    """Stages in the order DVC would run them one by one (every stage after its
    upstream stages)."""

    stages: dict[str, Stage] = field(default_factory=dict)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for name, stage in self.stages.items():
            missing = stage.upstream - set(self.stages)
            if missing:
                raise ValueError(f"{name} reads from unknown stages {sorted(missing)}")
            late = stage.upstream - seen
            if late:
                raise ValueError(f"{name} comes before its upstream {sorted(late)}")
            seen.add(name)

    def __len__(self) -> int:
        return len(self.stages)

    def downstream(self) -> dict[str, set[str]]:
        """Stage -> the stages that read from it directly."""
        children: dict[str, set[str]] = {name: set() for name in self.stages}
        for name, stage in self.stages.items():
            for up in stage.upstream:
                children[up].add(name)
        return children

    def ready(self, done: Iterable[str], started: Iterable[str] = ()) -> list[str]:
        """Stages not started whose upstream stages are all in ``done``, in order."""
        done, started = set(done), set(started)
        return [
            name
            for name, stage in self.stages.items()
            if name not in done and name not in started and stage.upstream <= done
        ]

    def after(self, names: Iterable[str]) -> set[str]:
        """Every stage downstream of ``names``, directly or not (not themselves)."""
        children = self.downstream()
        todo, out = list(names), set()
        while todo:
            for child in children[todo.pop()]:
                if child not in out:
                    out.add(child)
                    todo.append(child)
        return out

    def subset(self, names: Iterable[str]) -> Dag:
        """The graph restricted to ``names`` (edges to other stages dropped)."""
        keep = set(names)
        return Dag(
            {
                n: replace(s, upstream=s.upstream & keep)
                for n, s in self.stages.items()
                if n in keep
            }
        )


TRAINING = ("train-",)  # the stages that train a model


def is_training(name: str) -> bool:
    """Whether stage ``name`` trains a model: what a GPU serves, whether a GPU
    of the local flow (``--gpus``) or the GPU work pool."""
    return name.startswith(TRAINING)


# --- reading the graph from DVC ------------------------------------------------------


def _find_key(tree: Any, key: str) -> list[Any]:
    if isinstance(tree, Mapping):
        found = [v for k, v in tree.items() if k == key]
        for v in tree.values():
            found += _find_key(v, key)
        return found
    return []


def _resources(dvc_stage: Any, cpus: int) -> tuple[int, int]:
    """(threads, gpus) from the params the stage reads (see ``Stage``)."""
    from dvc.dependency import ParamsDependency

    values: list[Any] = []
    for dep in dvc_stage.deps:
        if isinstance(dep, ParamsDependency):
            try:
                values.append(dep.read_params())
            except Exception:  # noqa: BLE001 - a missing params file: DVC reports it
                continue
    threads = [t for v in values for t in _find_key(v, "threads") if isinstance(t, int)]
    per_process = max((cpus if t == 0 else t for t in threads), default=1)
    processes = [
        p
        for v in values
        for accel in _find_key(v, "accel")
        if isinstance(accel, Mapping)
        for p in [accel.get("processes")]
        if isinstance(p, int) and p > 0
    ]
    n = max(processes, default=1)
    return min(per_process * n, cpus), n


def ran_in(output: str) -> list[str]:
    """The stages a ``dvc repro`` output says it ran, in order."""
    return re.findall(r"Running stage '([^']+)'", output)


def address(dvc_stage: Any, root: str | Path) -> str:
    """How ``dvc repro`` names the stage from the repository's root: its name for
    a stage of the root dvc.yaml, else ``path/dvc.yaml:name`` (or the .dvc file)."""
    path = os.path.relpath(dvc_stage.path, root)
    name = getattr(dvc_stage, "name", None)
    if name is None:
        return path
    return name if path == "dvc.yaml" else f"{path}:{name}"


def load(repo: str | Path, targets: Iterable[str] = (), cpus: int = 0) -> Dag:
    """The pipeline of the DVC repository at ``repo`` (or the stages ``targets``
    need, themselves included), from DVC's index. ``cpus``: the cores a stage
    asking for "every core" (threads 0) counts as (default: this machine's)."""
    import networkx as nx
    from dvc.repo import Repo

    cpus = cpus or os.cpu_count() or 1
    with Repo(str(repo)) as dvc_repo:
        graph = dvc_repo.index.graph
        root = Path(dvc_repo.root_dir)
        nodes = list(graph)
        if targets:
            by_name = {address(s, root): s for s in nodes}
            unknown = [t for t in targets if t not in by_name]
            if unknown:
                raise KeyError(
                    f"{', '.join(unknown)}: no such stage in {root / 'dvc.yaml'}"
                )
            keep = set()
            for t in targets:
                keep |= {by_name[t], *nx.descendants(graph, by_name[t])}
            nodes = [s for s in nodes if s in keep]
        # DVC's own serial order: a post-order walk from each stage to its deps
        order: list[Any] = []
        placed: set[Any] = set()
        wanted = set(nodes)
        for node in nodes:
            for s in nx.dfs_postorder_nodes(graph, node):
                if s not in placed and s in wanted:
                    placed.add(s)
                    order.append(s)
        stages = {}
        for s in order:
            if not s.cmd:  # a .dvc file (data source): nothing to run
                continue
            threads, gpus = _resources(s, cpus)
            name = address(s, root)
            stages[name] = Stage(
                name=name,
                upstream=frozenset(
                    address(u, root) for u in graph.successors(s) if u.cmd
                ),
                cmd=tuple([s.cmd] if isinstance(s.cmd, str) else s.cmd),
                wdir=os.path.relpath(s.wdir, root),
                outs=tuple(
                    (os.path.relpath(o.fs_path, root), bool(o.persist)) for o in s.outs
                ),
                threads=threads,
                gpus=gpus,
            )
    return Dag(stages)


# --- schedules -------------------------------------------------------------------


def bottom_levels(dag: Dag, seconds: Mapping[str, float]) -> dict[str, float]:
    """Each stage's duration plus its longest chain of downstream stages."""
    children = dag.downstream()
    level: dict[str, float] = {}
    for name in reversed(list(dag.stages)):
        level[name] = seconds[name] + max(
            (level[c] for c in children[name]), default=0.0
        )
    return level


def critical_path(dag: Dag, seconds: Mapping[str, float]) -> tuple[float, list[str]]:
    """The longest chain of stages by total duration, and its length in seconds."""
    if not dag.stages:
        return 0.0, []
    level = bottom_levels(dag, seconds)
    children = dag.downstream()
    roots = [n for n, s in dag.stages.items() if not s.upstream]
    name = max(roots, key=lambda n: level[n])
    path = [name]
    while children[name]:
        name = max(children[name], key=lambda n: level[n])
        path.append(name)
    return level[path[0]], path


def makespan(dag: Dag, seconds: Mapping[str, float], workers: int) -> float:
    """Wall time of list scheduling on ``workers`` identical workers: whenever a
    worker is free, it takes the ready stage with the longest remaining chain
    (ties: DVC's order). Each stage runs on one worker for ``seconds[stage]``."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    level = bottom_levels(dag, seconds)
    rank = {name: i for i, name in enumerate(dag.stages)}
    waiting = {n: len(s.upstream) for n, s in dag.stages.items()}
    children = dag.downstream()
    ready = [(-level[n], rank[n], n) for n, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    running: list[tuple[float, str]] = []  # (finish time, stage)
    now = 0.0
    while ready or running:
        while ready and len(running) < workers:
            _, _, name = heapq.heappop(ready)
            heapq.heappush(running, (now + seconds[name], name))
        now, name = heapq.heappop(running)
        for child in children[name]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, (-level[child], rank[child], child))
    return now


def ideal(dag: Dag, seconds: Mapping[str, float], workers: int) -> float:
    """The lower bound on any schedule: the critical path, or the total work
    spread evenly over ``workers``, whichever is longer."""
    total = sum(seconds[n] for n in dag.stages)
    return max(critical_path(dag, seconds)[0], total / workers)
