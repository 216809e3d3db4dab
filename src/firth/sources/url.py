"""HTTP(S) downloads with resume, size and sha256 checks, and safe extraction.

Only http(s) URLs are fetched, and redirects are followed only to http(s), at most
MAX_REDIRECTS of them. Each URL has its own cache folder (keyed by the whole
URL), where a partial download is kept as ``<file>.part`` and resumed with an HTTP
Range request. A download shorter than the server's Content-Length is reported
as truncated and never used; a file whose sha256 differs from the pinned (or first
recorded) checksum is rejected and deleted.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import logging
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from firth.errors import DataError
from firth.io import sha256_file

log = logging.getLogger(__name__)
CHUNK = 1 << 16


MAX_REDIRECTS = 5


def _filename(url: str) -> str:
    """The file name a URL's path ends in ("download" where it names none, or a
    folder: "", ".", "..")."""
    name = PurePosixPath(urllib.request.urlparse(url).path).name
    return name if name not in ("", ".", "..") else "download"


class _HttpRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed only to http(s) URLs, at most MAX_REDIRECTS of them (a
    redirect to ftp:// or file:// is refused, whatever hop it comes at)."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        scheme = urllib.request.urlparse(newurl).scheme.lower()
        if scheme not in ("http", "https"):
            raise DataError(
                f"{req.full_url}: redirected ({code}) to {newurl}: only http:// and "
                "https:// redirects are followed"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpRedirects)


def cache_path(url: str, cache_dir: Path) -> Path:
    """Where ``url`` is kept: a folder per whole URL (the first 16 hex digits of its
    sha256), so two URLs ending in the same file name never share bytes and a
    changed URL never reuses the old file."""
    key = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return cache_dir / key / _filename(url)


def check_scheme(url: str) -> None:
    """Only http(s) URLs are downloaded (a file on this machine is a local source)."""
    scheme = urllib.request.urlparse(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise DataError(
            f"{url}: only http:// and https:// URLs are downloaded, not "
            f"{scheme + '://' if scheme else 'a bare path'} (a file on this machine "
            "is a kind: local source)"
        )


def download(
    url: str, cache_dir: Path, *, expected_sha256: str = "", timeout: float = 60.0
) -> tuple[Path, str]:
    """Download ``url`` into ``cache_dir`` (resuming a ``.part`` file) and return the
    path and its sha256. Raises DataError on truncation or checksum mismatch."""
    check_scheme(url)
    final = cache_path(url, cache_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        digest = sha256_file(final)
        if not expected_sha256 or digest == expected_sha256:
            return final, digest
        log.warning(
            "%s: cached file has sha256 %s, expected %s; downloading again",
            final,
            digest,
            expected_sha256,
        )
        final.unlink()
    part = final.with_name(final.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "firth"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = _OPENER.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # range past the end: start again
            part.unlink()
            return download(
                url, cache_dir, expected_sha256=expected_sha256, timeout=timeout
            )
        raise DataError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"{url}: cannot connect ({exc})") from None
    with response:
        if offset and response.status != 206:
            offset = 0  # server ignored the range: start over
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else None
        mode = "ab" if offset else "wb"
        received = offset
        with (
            open(part, mode) as f,
            tqdm(
                total=total,
                initial=offset,
                unit="B",
                unit_scale=True,
                desc=final.name,
                disable=None,
            ) as bar,
        ):
            try:
                while block := response.read(CHUNK):
                    f.write(block)
                    received += len(block)
                    bar.update(len(block))
            except (OSError, urllib.error.URLError) as exc:
                raise DataError(
                    f"{url}: connection lost after {received} bytes "
                    f"({exc}); rerun to resume"
                ) from None
    if total is not None and received < total:
        raise DataError(
            f"{url}: truncated download, got {received} of {total} bytes; "
            "rerun to resume"
        )
    digest = sha256_file(part)
    if expected_sha256 and digest != expected_sha256:
        part.unlink()
        raise DataError(
            f"{url}: sha256 mismatch, expected {expected_sha256}, "
            f"got {digest}; the file was deleted"
        )
    os.replace(part, final)
    return final, digest


def _safe_target(root: Path, name: str, archive: Path) -> Path:
    target = (root / name).resolve()
    if not target.is_relative_to(root.resolve()) or PurePosixPath(name).is_absolute():
        raise DataError(
            f"{archive}: member {name!r} would be written outside "
            f"{root}; archive refused"
        )
    return target


def _is_tar(archive: Path) -> bool:
    try:
        return tarfile.is_tarfile(archive)
    except (tarfile.TarError, EOFError, OSError):
        return False  # a truncated compressed stream; reported by the reader below


def extract(archive: Path, target_dir: Path) -> list[Path]:
    """Extract a zip/tar/gz/bz2 archive into ``target_dir``; refuse any member that
    would escape it (``../``, absolute paths, links). Returns the files written; a
    plain file is copied as is."""
    target_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.infolist() if not m.is_dir()]
            targets = [_safe_target(target_dir, m.filename, archive) for m in members]
            for member, target in zip(members, targets, strict=True):
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                written.append(target)
        return written
    if _is_tar(archive):
        with tarfile.open(archive) as tf:
            members = tf.getmembers()
            for m in members:
                _safe_target(target_dir, m.name, archive)
                if m.issym() or m.islnk() or m.isdev():
                    raise DataError(
                        f"{archive}: member {m.name!r} is a link or device; "
                        "archive refused"
                    )
            for m in members:
                if m.isfile():
                    target = _safe_target(target_dir, m.name, archive)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(m)
                    assert src is not None
                    with src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    written.append(target)
        return written
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(archive.suffix)
    if opener is not None:
        target = target_dir / archive.stem
        try:
            with opener(archive, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
        except (OSError, EOFError) as exc:
            raise DataError(
                f"{archive}: corrupt or truncated {archive.suffix} stream ({exc})"
            ) from None
        return [target]
    target = target_dir / archive.name
    shutil.copyfile(archive, target)
    return [target]
