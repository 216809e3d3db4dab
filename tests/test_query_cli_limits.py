"""The query commands refuse every bad input issue 39 lists with one line and exit
status 2, never a traceback or a silent success: out-of-range options, empty,
Latin-1 or binary input, and an unreadable params file. The project is the tiny
profile with nothing trained: each refusal comes before a model would load (or
names the missing stage)."""

from __future__ import annotations

import pytest
from conftest import untrained_project
from typer.testing import CliRunner

from firth.cli import app


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    untrained_project(root)
    (root / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (root / "binary.bin").write_bytes(b"\x00\x01\x02abc")
    return root


CASES = [
    # (arguments, stdin, what the one line says)
    (["translate", "pointer", "--beam", "0"], "a\n", "error: --beam: "),
    (["translate", "pointer", "--beam", "-3"], "a\n", "error: --beam: "),
    (["translate", "pointer"], "", "stdin: no text to translate"),
    (["translate", "pointer"], "  \n\n", "stdin: no text to translate"),
    (
        ["translate", "pointer"],
        "caf\xe9\n".encode("latin-1"),
        "stdin: not UTF-8 at byte 3",
    ),
    (["translate", "pointer"], b"\x00\x01", "stdin: binary data"),
    (["translate", "pointer"], "a " * 50_000, "stdin line 1: 100000 characters"),
    (["tag", "wnut16-crf"], "", "stdin: no text to tag"),
    (["tag", "wnut16-crf"], "caf\xe9\n".encode("latin-1"), "not UTF-8 at byte 3"),
    (["tag", "wnut16-crf", "--seed", "99"], "a\n", "not 99"),
    (["generate", "lstm", "--temperature", "0"], None, "error: --temperature: "),
    (["generate", "lstm", "--temperature", "nan"], None, "error: --temperature: "),
    (["generate", "lstm", "--temperature", "-1"], None, "error: --temperature: "),
    (["generate", "lstm", "--samples", "0"], None, "error: --samples: "),
    (["generate", "lstm", "--samples", "-2"], None, "error: --samples: "),
    (["generate", "lstm", "--tokens", "0"], None, "error: --tokens: "),
    (["generate", "lstm", "--tokens", "-5"], None, "error: --tokens: "),
    (["neighbours", "sgns", "king", "-k", "-3"], None, "error: -k: "),
    (["neighbours", "sgns", "king", "-k", "0"], None, "error: -k: "),
    (["analogy", "sgns", "a", "b", "c", "-k", "-2"], None, "error: -k: "),
    (["score", "kn5", "{repo}/latin1.txt"], None, "latin1.txt: not UTF-8 at byte 3"),
    (["score", "kn5", "{repo}/binary.bin"], None, "binary.bin: binary data"),
]


@pytest.mark.parametrize("args, stdin, says", CASES)
def test_each_bad_input_is_one_line_and_exit_2(repo, args, stdin, says):
    args = [a.replace("{repo}", str(repo)) for a in args]
    res = CliRunner().invoke(app, [*args, "--repo", str(repo)], input=stdin)
    assert res.exit_code == 2, res.output
    assert says in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


@pytest.mark.parametrize(
    "command", [["neighbours", "sgns", "king"], ["analogy", "sgns", "a", "b", "c"]]
)
def test_an_invalid_params_file_is_one_line(tmp_path, command):
    (tmp_path / "params.yaml").write_text("lm: [unclosed\n")
    res = CliRunner().invoke(app, [*command, "--repo", str(tmp_path)])
    assert res.exit_code == 2
    assert "params.yaml: not valid YAML" in res.output
    assert len(res.output.strip().splitlines()) == 1
