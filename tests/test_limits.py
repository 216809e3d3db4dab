"""One validation for every entry point (issue 39): each value a question may
carry (beam, k, samples, tokens, temperature) has one type in firth.limits, and
the query command's option, `firth serve`'s JSON field and, where params.yaml
sets the default, `firth check-params` refuse the same bad values with the same
words (and accept the same edge values)."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from conftest import ROOT, untrained_project
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from firth import limits
from firth.cli import app
from firth.query.web import Limits, make_app

# (type, CLI arguments before the option, option, API endpoint and body, field,
#  params section and key or None, bad values, good edge values)
SHARED = [
    (
        limits.Beam,
        ["translate", "pointer"],
        "--beam",
        ("/api/translate", {"run": "pointer", "text": "a"}),
        "beam",
        ("evaluate_nmt", "beam"),
        [0, -3, limits.MAX_BEAM + 1],
        [1, limits.MAX_BEAM],
    ),
    (
        limits.K,
        ["neighbours", "sgns", "king"],
        "-k",
        ("/api/neighbours", {"method": "sgns", "words": ["king"]}),
        "k",
        None,
        [0, -3, limits.MAX_K + 1],
        [1, limits.MAX_K],
    ),
    (
        limits.Samples,
        ["generate", "lstm"],
        "--samples",
        ("/api/generate", {"run": "lstm", "prompt": "a"}),
        "samples",
        None,  # evaluate_lm.samples may be 0 (no samples in the report)
        [0, -2, limits.MAX_SAMPLES + 1],
        [1, limits.MAX_SAMPLES],
    ),
    (
        limits.Tokens,
        ["generate", "lstm"],
        "--tokens",
        ("/api/generate", {"run": "lstm", "prompt": "a"}),
        "tokens",
        ("evaluate_lm", "sample_tokens"),
        [0, -5, limits.MAX_TOKENS + 1],
        [1, limits.MAX_TOKENS],
    ),
    (
        limits.Temperature,
        ["generate", "lstm"],
        "--temperature",
        ("/api/generate", {"run": "lstm", "prompt": "a"}),
        "temperature",
        ("evaluate_lm", "temperature"),
        [0.0, -1.0, math.nan, math.inf, limits.MAX_TEMPERATURE * 2],
        [1e-3, limits.MAX_TEMPERATURE],
    ),
]
CASES = [
    pytest.param(kind, pre, opt, ask, field, key, bad, id=f"{opt}={bad}")
    for kind, pre, opt, ask, field, key, bads, _ in SHARED
    for bad in bads
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("limits")
    untrained_project(root)
    return root


@pytest.fixture(scope="module")
def client(repo):
    # the server's own caps set as high as the shared ranges: what is refused
    # here is refused by the type, not by this server's options
    wide = Limits(
        beam=limits.MAX_BEAM,
        k=limits.MAX_K,
        samples=limits.MAX_SAMPLES,
        tokens=limits.MAX_TOKENS,
        concurrent=1,
    )
    with TestClient(make_app(repo, wide), base_url="http://127.0.0.1") as c:
        yield c


def _words(kind, value) -> str:
    """What firth.limits says about ``value``: the one message all three share."""
    with pytest.raises(ValueError) as err:
        limits.check(kind, value, "X")
    return str(err.value).removeprefix("X: ").rsplit(" (got ", 1)[0]


@pytest.mark.parametrize("kind, pre, opt, ask, field, key, bad", CASES)
def test_every_entry_point_refuses_a_bad_value_in_the_same_words(
    repo, client, tmp_path, kind, pre, opt, ask, field, key, bad
):
    says = _words(kind, bad)
    res = CliRunner().invoke(app, [*pre, opt, str(bad), "--repo", str(repo)])
    assert res.exit_code == 2
    assert res.output == f"error: {opt}: {says} (got {bad!r})\n"

    endpoint, body = ask
    # JSON has no NaN or Infinity, but Python's json writes and reads them
    r = client.post(
        endpoint,
        content=json.dumps({**body, field: bad}),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == f"{field}: {says}"

    if key is not None:
        params = yaml.safe_load((repo / "params.yaml").read_text())
        params[key[0]][key[1]] = bad
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params))
        res = CliRunner().invoke(app, ["check-params", "--path", str(path)])
        assert res.exit_code == 2
        assert f"key '{key[0]}.{key[1]}': {says}" in res.output


@pytest.mark.parametrize(
    "kind, key, good",
    [
        (kind, key, good)
        for kind, _, _, _, _, key, _, goods in SHARED
        if key is not None
        for good in goods
    ],
)
def test_the_edge_values_are_accepted_everywhere(tmp_path, kind, key, good):
    assert limits.check(kind, good, "x") == good
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params[key[0]][key[1]] = good
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    res = CliRunner().invoke(app, ["check-params", "--path", str(path)])
    assert res.exit_code == 0, res.output


def test_the_servers_caps_are_the_shared_types():
    for option, value in [("beam", 0), ("k", limits.MAX_K + 1), ("tokens", 0)]:
        with pytest.raises(ValueError, match=option):
            Limits(**{option: value})
