"""`firth serve` within its limits (issue 39): each bad request the issue lists
gets a 4xx with one line naming the field, never a 500, a traceback or a server
path; the Host header is checked; /docs is off. The app runs in-process
(FastAPI's TestClient) over the tiny profile's params with no model trained:
every check here happens before a model would load, or names the dvc target."""

from __future__ import annotations

import pytest
from conftest import ROOT, untrained_project
from fastapi.testclient import TestClient

from firth.query.web import Limits, make_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    untrained_project(root)
    app = make_app(root, Limits(body_bytes=4_096, chars=500, concurrent=1))
    with TestClient(app, base_url="http://127.0.0.1") as c:
        c.root = root
        yield c


BAD = [
    # (endpoint, body, status, what the reply names)
    ("/api/translate", {"run": "pointer", "text": "x", "beam": 0}, 422, "beam"),
    ("/api/translate", {"run": "pointer", "text": "x", "beam": -1}, 422, "beam"),
    ("/api/translate", {"run": "pointer", "text": "x", "beam": 17}, 422, "beam"),
    ("/api/translate", {"run": "pointer", "text": "y" * 501}, 422, "text"),
    # a lone surrogate, as JSON can carry it ("\\ud800")
    ("/api/translate", b'{"run": "pointer", "text": "\\ud800"}', 422, "Unicode"),
    ("/api/translate", {"run": "pointer", "text": "x", "more": 1}, 422, "more"),
    ("/api/neighbours", {"method": "sgns", "words": ["a"], "k": 0}, 422, "k"),
    ("/api/neighbours", {"method": "sgns", "words": ["a"], "k": 101}, 422, "k"),
    ("/api/neighbours", {"method": "sgns", "words": ["a"], "k": -3}, 422, "k"),
    ("/api/analogy", {"method": "sgns", "a": "a", "b": "b", "c": ""}, 422, "c"),
    ("/api/generate", {"run": "lstm", "prompt": "a", "samples": 0}, 422, "samples"),
    ("/api/generate", {"run": "lstm", "prompt": "a", "samples": 11}, 422, "samples"),
    ("/api/tag", {"run": "wnut16-crf", "text": "z " * 300}, 422, "text"),
    ("/api/translate", {"run": "pointer", "text": "x"}, 400, "dvc repro"),
    ("/api/tag", {"run": "nope-crf", "text": "x"}, 400, "nope"),
]


@pytest.mark.parametrize("endpoint, body, status, names", BAD)
def test_each_bad_request_gets_a_clear_4xx(client, endpoint, body, status, names):
    if isinstance(body, bytes):
        r = client.post(
            endpoint, content=body, headers={"content-type": "application/json"}
        )
    else:
        r = client.post(endpoint, json=body)
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and names in detail
    assert "Traceback" not in r.text and str(client.root.resolve()) not in r.text


def test_nan_is_no_number(client):
    r = client.post(
        "/api/neighbours",
        content=b'{"method": "sgns", "words": ["a"], "k": NaN}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422 and "k" in r.json()["detail"]


def test_an_oversized_body_is_refused_before_it_is_read(client):
    r = client.post("/api/tag", json={"run": "wnut16-crf", "text": "a " * 5_000})
    assert r.status_code == 413 and "4096 bytes" in r.json()["detail"]


def test_a_foreign_host_is_refused(client):
    r = client.get("/api/runs", headers={"host": "attacker.example"})
    assert r.status_code == 400
    assert client.get("/api/runs").status_code == 200


def test_no_docs_and_no_schema(client):
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert client.get(path).status_code == 404


def test_limits_are_checked_as_options():
    from typer.testing import CliRunner

    from firth.cli import app

    for option, value, says in [
        ("--beam", "0", "greater than or equal to 1"),
        ("--beam", "65", "less than or equal to 64"),  # firth.limits.MAX_BEAM
        ("--seconds", "0", "greater than 0"),
        ("--seconds", "nan", "a finite number"),
        ("--tokens", "0", "greater than or equal to 1"),
        ("--concurrent", "0", "greater than or equal to 1"),
    ]:
        res = CliRunner().invoke(app, ["serve", "--repo", str(ROOT), option, value])
        assert res.exit_code == 2
        assert res.output == f"error: {option}: Input should be {says}\n"


def test_the_longest_source_a_transformer_reads_is_its_position_table():
    """A transformer's position table bounds the source and the output decoding
    allows (max_len_a x source + max_len_b): the query refuses longer lines with
    their piece count instead of an IndexError; a recurrent model has no bound."""
    from firth.config import load_sections
    from firth.nmt.config import Nmt
    from firth.nmt.models import build_model
    from firth.query.translate import longest_source

    cfg, _ = load_sections("nmt", ROOT / "params.yaml", schema=Nmt)
    c = cfg.common
    model = build_model("transformer", 60, cfg)
    most = longest_source(model, cfg)
    assert (
        c.max_len_a * most + c.max_len_b
        <= 2048
        < c.max_len_a * (most + 1) + (c.max_len_b)
        or most == 2048
    )
    assert longest_source(build_model("bahdanau", 60, cfg), cfg) is None


def test_an_unreadable_params_file_is_a_400_naming_it(tmp_path):
    """As for the commands: a params.yaml that is not valid YAML is one line
    naming it (relative to the project), not an internal error."""
    (tmp_path / "params.yaml").write_text("embeddings: [unclosed\n")
    with TestClient(make_app(tmp_path), base_url="http://127.0.0.1") as c:
        for path, body in (
            ("/api/neighbours", {"method": "sgns", "words": ["a"]}),
            ("/api/analogy", {"method": "sgns", "a": "a", "b": "b", "c": "c"}),
        ):
            r = c.post(path, json=body)
            assert r.status_code == 400, r.text
            assert r.json()["detail"].startswith("params.yaml: not valid YAML")
        assert c.get("/api/runs").status_code == 400
