"""Ask a trained model something: the functions behind `firth neighbours`,
`firth analogy` (and the local page). Each finds its run's DVC outputs by name and
says which `dvc repro` target to run when they are not there yet."""

from firth.errors import FirthError


class NotTrained(FirthError):
    """The run's outputs are not in the workspace: its message names the `dvc
    repro` target that makes them."""
