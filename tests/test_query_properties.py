"""Property tests (hypothesis) for issue 39: random text, bytes and option values
fed to the query commands and to the server never give a traceback, a 500 or a
server path: the CLI exits 0 or 2 with its message on one line, the API answers
2xx or 4xx with a one-line detail. The project is the tiny profile with nothing
trained, so every request ends in a validation error or in the name of the dvc
target to run; a test with trained models is tests/test_e2e.py's."""

from __future__ import annotations

import json

import pytest
from conftest import untrained_project
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from firth.cli import app
from firth.query.web import Limits, make_app

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
OPTION_VALUES = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.text(max_size=20),
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("props")
    untrained_project(root)
    return root


def _clean(output: str, root) -> None:
    assert "Traceback" not in output
    assert str(root.resolve()) not in output.replace(f"--repo {root}", "")


@SETTINGS
@given(
    command=st.sampled_from(["translate pointer", "tag wnut16-crf"]),
    data=st.binary(max_size=200),
)
def test_any_stdin_bytes_are_answered_or_refused_in_one_line(repo, command, data):
    res = CliRunner().invoke(app, [*command.split(), "--repo", str(repo)], input=data)
    assert res.exit_code in (0, 2), res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output


@SETTINGS
@given(
    args=st.sampled_from(
        [
            ["translate", "pointer", "--beam"],
            ["generate", "lstm", "--temperature"],
            ["generate", "lstm", "--samples"],
            ["generate", "lstm", "--tokens"],
            ["neighbours", "sgns", "king", "-k"],
            ["analogy", "sgns", "a", "b", "c", "-k"],
        ]
    ),
    value=OPTION_VALUES,
)
def test_any_option_value_is_accepted_or_refused_cleanly(repo, args, value):
    res = CliRunner().invoke(app, [*args, value, "--repo", str(repo)], input="a\n")
    assert res.exit_code in (0, 2), res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output


@pytest.fixture(scope="module")
def client(repo):
    with TestClient(make_app(repo, Limits()), base_url="http://127.0.0.1") as c:
        yield c


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@SETTINGS
@given(
    endpoint=st.sampled_from(
        [
            "/api/translate",
            "/api/tag",
            "/api/neighbours",
            "/api/analogy",
            "/api/generate",
        ]
    ),
    fields=st.dictionaries(
        st.sampled_from(
            ["run", "text", "beam", "method", "words", "k", "a", "b", "c", "prompt"]
            + ["samples", "extra"]
        ),
        JSONISH,
        max_size=6,
    ),
)
def test_any_json_body_gets_a_4xx_or_an_answer_never_a_500(
    client, repo, endpoint, fields
):
    body = json.dumps(fields).encode()  # NaN and Infinity as JSON carries them
    r = client.post(
        endpoint, content=body, headers={"content-type": "application/json"}
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        detail = r.json()["detail"]
        assert isinstance(detail, str) and "\n" not in detail
    _clean(r.text, repo)


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_raw_body_gets_a_4xx_never_a_500(client, repo, data):
    r = client.post(
        "/api/tag", content=data, headers={"content-type": "application/json"}
    )
    assert 400 <= r.status_code < 500, r.text
    _clean(r.text, repo)
