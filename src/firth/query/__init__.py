"""Ask a trained model something: the functions behind `firth neighbours`,
`firth analogy` (and the local page). Each finds its run's DVC outputs by name and
says which `dvc repro` target to run when they are not there yet."""

import threading

from firth.errors import FirthError


class NotTrained(FirthError):
    """The run's outputs are not in the workspace: its message names the `dvc
    repro` target that makes them."""


_COMMANDS: dict = {}  # (root, dvc.yaml and params.yaml bytes' sha256) -> {stage: cmd}


def _commands(root) -> dict[str, str]:
    """Every stage's command in the project ``root``, from DVC's own index (its
    templates resolved against params.yaml); cached while both files hold the
    same bytes (not the same mtime: two writes within a clock tick share one)."""
    import hashlib

    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    stamp = tuple(
        hashlib.sha256((root / f).read_bytes()).hexdigest()
        if (root / f).exists()
        else ""
        for f in ("dvc.yaml", "params.yaml")
    )
    key = (str(root.resolve()), stamp)
    if key not in _COMMANDS:
        try:
            with Repo(str(root), uninitialized=True) as repo:
                _COMMANDS[key] = {st.name: st.cmd for st in repo.index.stages}
        except DvcException as exc:
            raise FirthError(f"{root / 'dvc.yaml'}: {exc}") from None
    return _COMMANDS[key]


def stage_command(root, stage: str) -> list[str]:
    """The command of the DVC stage ``stage`` in the project ``root`` as words,
    as its dvc.yaml (the one place paths are written) has it: ``python``, the
    script, its arguments (paths relative to ``root``)."""
    import shlex
    from pathlib import Path

    root = Path(root)
    commands = _commands(root)
    if stage not in commands:
        raise FirthError(f"{root / 'dvc.yaml'} has no stage {stage}")
    return shlex.split(commands[stage])


def stage_paths(root, stage: str) -> dict:
    """The path arguments (``--flag value``) of the DVC stage ``stage`` in the
    project ``root``, each below ``root``. A query finds a stage's outputs
    there."""
    from pathlib import Path

    root = Path(root)
    words = stage_command(root, stage)
    return {
        flag[2:]: root / value
        for flag, value in zip(words, words[1:], strict=False)
        if flag.startswith("--") and flag != "--params"
    }


_LOADED: dict = {}  # key -> (stamp, value): models a server keeps between requests
_LOADING = threading.Lock()


def loaded(key: tuple, files: list, make):
    """``make()``'s value for ``key``, kept while ``files`` (the model's files on
    disk) keep their size and mtime: `firth serve` loads a run's model once, not
    on every request, and a retrained run is loaded again. Loading is serialised
    (one model read at a time); the value is shared, so its user must not change
    it while another request may use it."""
    import os

    def mark(f) -> tuple[int, int] | None:
        try:
            st = os.stat(f)
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    stamp = tuple(mark(f) for f in files)
    with _LOADING:
        hit = _LOADED.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = make()
        _LOADED[key] = (stamp, value)
        return value
