import json
from collections import Counter

import pytest

from firth.errors import DataError
from firth.prepare.normalize import normalize, tokenize
from firth.prepare.parallel import prepare_parallel
from firth.prepare.tagged import prepare_tagged, repair_bio
from firth.prepare.text import prepare_text
from firth.sources.checks import check_mostly_bio
from firth.sources.formats import read_conll
from firth.subsample import choose


def test_bio_repair():
    assert repair_bio(["O", "I-PER", "I-PER", "O"]) == (["O", "B-PER", "I-PER", "O"], 1)
    assert repair_bio(["I-LOC"]) == (["B-LOC"], 1)
    assert repair_bio(["B-PER", "I-LOC"]) == (["B-PER", "B-LOC"], 1)
    assert repair_bio(["B-PER", "I-PER", "O", "B-LOC"])[1] == 0


def test_prepare_tagged_counts_repairs_and_splits(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    sents = "".join(f"w{i}\tO\nx\tI-PER\n\n" for i in range(20))
    (raw / "all.conll").write_text(sents)
    stats = prepare_tagged(
        raw, tmp_path, seed=1, valid_fraction=0.1, test_fraction=0.1, repair=True
    )
    assert stats["scheme"] == "BIO"
    assert [stats["splits"][s]["sentences"] for s in ("train", "valid", "test")] == [
        16,
        2,
        2,
    ]
    assert sum(stats["splits"][s]["bio_repairs"] for s in stats["splits"]) == 20
    tags = {
        t
        for s in ("train", "valid", "test")
        for _, ts in read_conll(tmp_path / f"{s}.conll")
        for t in ts
    }
    assert tags == {"O", "B-PER"}


def test_prepare_tagged_dedup_keeps_repeats_out_of_test(tmp_path):
    """Twenty sentences, each present three times (one copy tagged differently):
    with dedup no token sequence lands in two splits, and the counts say why."""
    raw = tmp_path / "raw"
    raw.mkdir()
    block = "".join(f"w{i}\tO\nx\tB-PER\n\n" for i in range(20))
    variant = "".join(f"W{i}\tO\nx\tO\n\n" for i in range(20))  # case, tags
    (raw / "all.conll").write_text(block + variant + block)
    out = tmp_path / "out"
    out.mkdir()
    stats = prepare_tagged(
        raw,
        out,
        seed=1,
        valid_fraction=0.1,
        test_fraction=0.1,
        repair=True,
        dedup=True,
    )
    assert stats["duplicates_dropped"] == 40
    seen = {}
    for s in ("train", "valid", "test"):
        for tokens, tags in read_conll(out / f"{s}.conll"):
            key = tuple(t.lower() for t in tokens)
            assert key not in seen, (key, s, seen.get(key))
            seen[key] = s
            assert tags == ["O", "B-PER"]  # the first copy is the one kept
    assert len(seen) == 20
    off = tmp_path / "off"
    off.mkdir()
    stats = prepare_tagged(
        raw, off, seed=1, valid_fraction=0.1, test_fraction=0.1, repair=True
    )
    assert "duplicates_dropped" not in stats
    assert sum(stats["splits"][s]["sentences"] for s in stats["splits"]) == 60


def test_normalize_web_backticks_and_kjv_brackets():
    assert normalize("Benjamin`s portion [was] five") == "Benjamin's portion was five"
    assert tokenize(normalize("He said, \u201cGo!\u201d"), lowercase=True) == [
        "he",
        "said",
        ",",
        '"',
        "go",
        "!",
        '"',
    ]


def test_parallel_split_by_id_no_overlap(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "".join(f"{1001000 + i}\tsrc {i}\ttgt {i}\n" for i in range(1, 101))
    )
    stats = prepare_parallel(
        pairs,
        tmp_path,
        max_len=100,
        max_ratio=3.0,
        split_mod=10,
        test_residue=0,
        valid_residue=5,
    )
    ids = {
        s: [line.split("\t")[0] for line in open(tmp_path / f"{s}.tsv")]
        for s in ("train", "valid", "test")
    }
    assert all(int(i) % 10 == 0 for i in ids["test"])
    assert all(int(i) % 10 == 5 for i in ids["valid"])
    assert (
        sum(map(len, ids.values())) == len(set().union(*map(set, ids.values()))) == 100
    )
    assert stats["splits"]["test"]["pairs"] == 10


def test_text_split_keeps_groups_together(tmp_path):
    docs = [
        {"id": f"{v}-{i}", "group": f"chapter{i % 40}", "text": f"verse {i} of {v}"}
        for v in ("kjv", "web")
        for i in range(400)
    ]
    for v in ("kjv", "web"):
        (tmp_path / v).mkdir()
        with open(tmp_path / v / "docs.jsonl", "w") as f:
            for d in docs:
                if d["id"].startswith(v):
                    f.write(json.dumps(d) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    stats = prepare_text(
        {v: tmp_path / v for v in ("kjv", "web")},
        out,
        seed=3,
        lowercase=True,
        valid_fraction=0.2,
        test_fraction=0.2,
        min_tokens=1,
    )
    where = {}
    for split in ("train", "valid", "test"):
        for line in open(out / f"{split}.txt"):
            i = int(line.split()[1])
            where.setdefault(i % 40, set()).add(split)
    assert all(len(s) == 1 for s in where.values())
    assert stats["splits"]["train"]["tokens"] > 0


def test_subsample_choose_is_deterministic_and_zero_keeps_all():
    sizes = [5] * 100
    assert choose(sizes, 0, seed=1) == list(range(100))
    a, b = choose(sizes, 50, seed=1), choose(sizes, 50, seed=1)
    assert a == b == sorted(a) and len(a) == 10
    assert choose(sizes, 50, seed=2) != a
    assert Counter(choose([1, 1000], 10, seed=s)[0] for s in range(20)).keys() <= {0, 1}


def test_parallel_keeps_official_splits(tmp_path):
    """hf: sources name pairs <split>-<n>: those keep their split (Multi30k's
    test2016 stays the test set); other ids are split by id."""
    pairs = tmp_path / "pairs.tsv"
    rows = [f"train-{i}\tsrc {i}\ttgt {i}" for i in range(30)]
    rows += [f"valid-{i}\tsrc v{i}\ttgt v{i}" for i in range(5)]
    rows += [f"test-{i}\tsrc t{i}\ttgt t{i}" for i in range(7)]
    rows += ["test-x\tsrc q\ttgt q", "other-3\tsrc o\ttgt o"]
    pairs.write_text("\n".join(rows) + "\n")
    stats = prepare_parallel(
        pairs,
        tmp_path,
        max_len=100,
        max_ratio=3.0,
        split_mod=10,
        test_residue=0,
        valid_residue=5,
    )
    ids = {
        s: {line.split("\t")[0] for line in open(tmp_path / f"{s}.tsv")}
        for s in ("train", "valid", "test")
    }
    assert {f"test-{i}" for i in range(7)} <= ids["test"]
    assert {f"valid-{i}" for i in range(5)} <= ids["valid"]
    assert {f"train-{i}" for i in range(30)} <= ids["train"]
    assert sum(len(v) for v in ids.values()) == 44  # the two others hashed somewhere
    assert stats["splits"]["test"]["pairs"] >= 7


@pytest.mark.parametrize("stray", ["0", "PER", "B_PER"])
def test_one_stray_tag_in_a_bio_corpus_is_an_error_naming_file_line_and_tag(
    tmp_path, stray
):
    """Before, one such tag turned the whole corpus into plain tags: no BIO repair,
    token accuracy instead of entity F1, and no word of it."""
    lines = [f"w{i}\tB-LOC\nx\tI-LOC\ny\tO\n\n" for i in range(30)]
    lines[7] = f"w7\tB-LOC\nx\t{stray}\ny\tO\n\n"
    (tmp_path / "all.conll").write_text("".join(lines))
    with pytest.raises(DataError) as err:
        check_mostly_bio([tmp_path / "all.conll"])
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'all.conll'}:30: tag {stray!r} is not BIO")
    assert "89 of 90 tags are" in message


def test_plain_tags_and_clean_bio_pass_the_bio_check(tmp_path):
    for tags in (["NN", "VB", "O"], ["B-X", "I-X", "O"], ["B-X", "NN", "VB"]):
        body = "".join(f"a\t{tags[0]}\nb\t{tags[1]}\nc\t{tags[2]}\n\n" * 20)
        (tmp_path / "all.conll").write_text(body)
        check_mostly_bio([tmp_path / "all.conll"])  # (the last: mostly not BIO)
