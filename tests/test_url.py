"""url: sources against a local HTTP server (Range support, truncation on demand)."""

import hashlib
import http.server
import io
import tarfile
import threading
import zipfile

import pytest

from firth.errors import DataError
from firth.sources import url
from firth.sources.fetch import fetch

PAYLOAD = b"anarchism originated as a term of abuse\n" * 2000


class Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    redirects: dict[str, str] = {}  # path -> Location of a 302
    truncate_next = 0  # send only this many bytes of the next response, then close

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path in self.redirects:
            self.send_response(302)
            self.send_header("Location", self.redirects[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header(
                "Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}"
            )
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        chunk = body[start:]
        if Handler.truncate_next:
            chunk = chunk[: Handler.truncate_next]
            Handler.truncate_next = 0
        self.wfile.write(chunk)


@pytest.fixture()
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    Handler.files, Handler.redirects = {}, {}
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_download_checks_sha256(server, tmp_path):
    Handler.files["/corpus.txt"] = PAYLOAD
    path, digest = url.download(
        f"{server}/corpus.txt", tmp_path, expected_sha256=sha(PAYLOAD)
    )
    assert path.read_bytes() == PAYLOAD and digest == sha(PAYLOAD)


def test_wrong_sha256_is_refused_and_deleted(server, tmp_path):
    Handler.files["/corpus.txt"] = PAYLOAD
    with pytest.raises(DataError, match="sha256 mismatch"):
        url.download(f"{server}/corpus.txt", tmp_path, expected_sha256="0" * 64)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_truncated_download_is_detected_then_resumed(server, tmp_path):
    Handler.files["/corpus.txt"] = PAYLOAD
    Handler.truncate_next = 1000
    with pytest.raises(DataError, match="truncated download, got 1000 of"):
        url.download(f"{server}/corpus.txt", tmp_path)
    kept = url.cache_path(f"{server}/corpus.txt", tmp_path)
    assert not kept.exists()
    assert kept.with_name("corpus.txt.part").stat().st_size == 1000
    path, digest = url.download(f"{server}/corpus.txt", tmp_path)
    assert path.read_bytes() == PAYLOAD and digest == sha(PAYLOAD)


def test_first_download_records_checksum_later_must_match(server, tmp_path):
    Handler.files["/text.zip"] = _zip({"text8": PAYLOAD})
    spec = {
        "kind": "url",
        "format": "text",
        "url": f"{server}/text.zip",
        "member": "text8",
    }
    out = tmp_path / "raw"
    record = fetch("t", spec, out, cache_dir=tmp_path / "cache1")
    assert record["download"]["sha256"] == sha(Handler.files["/text.zip"])
    assert (out / "docs.jsonl").exists()
    Handler.files["/text.zip"] = _zip({"text8": PAYLOAD + b"changed"})
    with pytest.raises(DataError, match="sha256 mismatch"):
        fetch("t", spec, out, cache_dir=tmp_path / "cache2")
    assert (out / "docs.jsonl").exists()  # the previous output is untouched


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_zip_member_escaping_target_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    archive.write_bytes(_zip({"ok.txt": b"x", "../escape.txt": b"y"}))
    with pytest.raises(DataError, match=r"'../escape.txt' would be written outside"):
        url.extract(archive, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "out" / "ok.txt").exists()


def test_tar_member_escaping_target_is_refused(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("../../escape.txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"y"))
    with pytest.raises(DataError, match="would be written outside"):
        url.extract(archive, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()


def test_gz_and_plain_extraction(tmp_path):
    import gzip

    archive = tmp_path / "c.txt.gz"
    archive.write_bytes(gzip.compress(PAYLOAD))
    (written,) = url.extract(archive, tmp_path / "out")
    assert written.name == "c.txt" and written.read_bytes() == PAYLOAD
    trunc = tmp_path / "t.txt.gz"
    trunc.write_bytes(gzip.compress(PAYLOAD)[:50])
    with pytest.raises(DataError, match="corrupt or truncated"):
        url.extract(trunc, tmp_path / "out2")


def test_two_urls_with_the_same_file_name_keep_their_own_bytes(server, tmp_path):
    """The cache is keyed by the whole URL: before, the second `…/data.txt` got the
    first one's bytes, and a source whose URL changed kept the old file."""
    Handler.files["/a/data.txt"] = b"first corpus\n"
    Handler.files["/b/data.txt"] = b"second corpus\n"
    cache = tmp_path / "cache"
    a, _ = url.download(f"{server}/a/data.txt", cache)
    b, _ = url.download(f"{server}/b/data.txt", cache)
    assert a.read_bytes() == b"first corpus\n"
    assert b.read_bytes() == b"second corpus\n"
    for name, body in (("first", b"one\n"), ("second", b"two\n")):
        spec = {"kind": "url", "format": "text", "url": f"{server}/{name}/data.txt"}
        Handler.files[f"/{name}/data.txt"] = body
        fetch("t", spec, tmp_path / name, cache_dir=cache)
        assert body.decode().strip() in (tmp_path / name / "docs.jsonl").read_text()


@pytest.mark.parametrize(
    "address", ["file:///etc/hostname", "ftp://example.org/data.txt", "data.txt"]
)
def test_only_http_urls_are_fetched(address, tmp_path):
    with pytest.raises(DataError, match=r"only http:// and https:// URLs") as err:
        url.download(address, tmp_path)
    assert "\n" not in str(err.value)
    assert not any(tmp_path.iterdir())  # nothing was tried, nothing written


def test_redirects_are_followed_only_to_http_and_only_so_far(server, tmp_path):
    """A redirect to another http(s) URL is followed; one to ftp:// (or file://)
    is refused at whatever hop it comes, before anything is fetched from there;
    a redirect loop stops after a bounded number of hops."""
    Handler.files["/data.txt"] = PAYLOAD
    Handler.redirects["/moved"] = f"{server}/data.txt"
    path, digest = url.download(f"{server}/moved", tmp_path)
    assert path.read_bytes() == PAYLOAD and digest == sha(PAYLOAD)
    Handler.redirects["/to-ftp"] = "ftp://127.0.0.1:2121/data.txt"
    Handler.redirects["/hop"] = f"{server}/to-ftp"
    for start in ("/to-ftp", "/hop"):
        with pytest.raises(DataError, match="only http:// and https:// redirects"):
            url.download(f"{server}{start}", tmp_path / start.strip("/"))
    Handler.redirects["/loop"] = f"{server}/loop"
    with pytest.raises(DataError, match="HTTP 302"):
        url.download(f"{server}/loop", tmp_path / "loop")


def test_a_url_naming_a_folder_is_an_http_error_not_a_crash(server, tmp_path):
    with pytest.raises(DataError, match="HTTP 404"):
        url.download(f"{server}/corpus/..", tmp_path)
    assert url.cache_path(f"{server}/a/..", tmp_path).name == "download"


def test_a_changed_url_is_not_held_to_the_old_urls_checksum(server, tmp_path):
    """The checksum a fetch recorded belongs to its spec: pointing the source at
    another URL downloads and records that file (the same URL serving other bytes
    is still refused, test above)."""
    Handler.files["/a.txt"] = PAYLOAD
    Handler.files["/b.txt"] = PAYLOAD + b"a second edition\n"
    out = tmp_path / "raw"
    spec = {"kind": "url", "format": "text", "url": f"{server}/a.txt"}
    fetch("t", spec, out, cache_dir=tmp_path / "cache")
    moved = {**spec, "url": f"{server}/b.txt"}
    record = fetch("t", moved, out, cache_dir=tmp_path / "cache")
    assert record["download"]["sha256"] == sha(Handler.files["/b.txt"])


def test_a_bad_url_file_is_named_by_its_url(server, tmp_path):
    """A downloaded file that is not UTF-8, or a malformed TSV, is one DataError
    naming the URL (not a UnicodeDecodeError, not a deleted temporary path)."""
    Handler.files["/latin1.txt"] = "caf\xe9\n".encode("latin-1")
    spec = {"kind": "url", "format": "text", "url": f"{server}/latin1.txt"}
    with pytest.raises(DataError, match=r"/latin1.txt:1: not UTF-8") as err:
        fetch("t", spec, tmp_path / "raw", cache_dir=tmp_path / "cache")
    assert "/tmp" not in str(err.value).replace(str(tmp_path), "")
    Handler.files["/pairs.tsv"] = b"1\tIn\tthe\tbeginning\n"  # four columns
    spec = {"kind": "url", "format": "parallel", "url": f"{server}/pairs.tsv"}
    with pytest.raises(DataError) as err:
        fetch("p", spec, tmp_path / "raw2", cache_dir=tmp_path / "cache")
    assert f"{server}/pairs.tsv" in str(err.value)
