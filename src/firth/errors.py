"""User-facing errors: each renders as one line naming the file, line or key."""


class FirthError(Exception):
    """Base class for errors a user can fix; the stage CLIs print them on one line."""


class ConfigError(FirthError):
    """A params.yaml key is unknown, missing or of the wrong type."""


class DataError(FirthError):
    """An input file is malformed, empty, misaligned or fails its checksum."""
