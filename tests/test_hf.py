"""hf: sources tested offline on local files via datasets.load_dataset."""

import json

import pandas as pd

from firth.sources.fetch import fetch


def test_hf_parquet_parallel_with_field_mapping(tmp_path):
    data = tmp_path / "mt"
    data.mkdir()
    pd.DataFrame(
        {
            "translation": [
                {"de": "Ein Hund", "en": "A dog"},
                {"de": "Zwei Katzen", "en": "Two cats"},
            ]
        }
    ).to_parquet(data / "train.parquet")
    spec = {
        "kind": "hf",
        "format": "parallel",
        "id": "parquet",
        "path": str(data / "train.parquet"),
        "fields": {"source": "translation.de", "target": "translation.en"},
    }
    rec = fetch("mt", spec, tmp_path / "out", cache_dir=tmp_path)
    assert rec["counts"] == {"pairs": 2}
    lines = (tmp_path / "out" / "pairs.tsv").read_text().splitlines()
    assert lines[0] == "train-0\tEin Hund\tA dog"


def test_hf_jsonl_nli_drops_examples_without_gold_label(tmp_path):
    path = tmp_path / "snli.jsonl"
    rows = [
        {
            "premise": "A man sleeps.",
            "hypothesis": "A man rests.",
            "label": "entailment",
        },
        {"premise": "A cat.", "hypothesis": "A dog.", "label": "-"},
        {"premise": "A cat.", "hypothesis": "A pet.", "label": "Neutral"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"kind": "hf", "format": "nli", "id": "json", "path": str(path)}
    rec = fetch("nli", spec, tmp_path / "out", cache_dir=tmp_path)
    assert rec["counts"] == {"train_examples": 2, "dropped_without_gold_label": 1}
    out = [json.loads(x) for x in (tmp_path / "out" / "examples.jsonl").open()]
    assert [r["label"] for r in out] == ["entailment", "neutral"]
    assert {r["split"] for r in out} == {"train"}


def test_hf_tagged_class_labels_become_names(tmp_path):
    import datasets

    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(
                datasets.ClassLabel(names=["O", "B-PER", "I-PER"])
            ),
        }
    )
    ds = datasets.Dataset.from_dict(
        {"tokens": [["Ada", "Lovelace", "wrote"]], "ner_tags": [[1, 2, 0]]},
        features=features,
    )
    # parquet keeps the ClassLabel feature in its schema metadata
    ds.to_parquet(str(tmp_path / "train.parquet"))
    spec = {
        "kind": "hf",
        "format": "tagged",
        "id": "parquet",
        "path": str(tmp_path / "train.parquet"),
        "fields": {"tags": "ner_tags"},
    }
    rec = fetch("ner", spec, tmp_path / "out", cache_dir=tmp_path)
    assert rec["counts"] == {"train_sentences": 1}
    assert (tmp_path / "out" / "train.conll").read_text() == (
        "Ada\tB-PER\nLovelace\tI-PER\nwrote\tO\n\n"
    )


def test_registered_parquet_export_reads_one_config_folder(tmp_path, monkeypatch):
    """ud-en-ewt and conll2003 read the hub's parquet export (one folder per config,
    one folder per split); here a local copy of that layout stands in for the hub."""
    import dataclasses

    import datasets

    from firth.sources import registry

    upos = datasets.ClassLabel(names=["NOUN", "VERB", "PUNCT"])
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "upos": datasets.Sequence(upos),
        }
    )
    export = tmp_path / "export"
    for config, word in (("en_ewt", "dogs"), ("fr_gsd", "chiens")):
        for split in ("train", "validation", "test"):
            (export / config / split).mkdir(parents=True)
            datasets.Dataset.from_dict(
                {"tokens": [[word, "bark", "."]], "upos": [[0, 1, 2]]},
                features=features,
            ).to_parquet(str(export / config / split / "0000.parquet"))
    spec = registry.REGISTRY["ud-en-ewt"]
    assert spec.revision == "refs/convert/parquet" and spec.data_dir == "en_ewt"
    assert registry.REGISTRY["conll2003"].data_dir == "conll2003"
    local = dataclasses.replace(spec, id=str(export), revision="")
    monkeypatch.setitem(registry.REGISTRY, "ud-en-ewt", local)
    rec = fetch("ud-en-ewt", "ud-en-ewt", tmp_path / "out", cache_dir=tmp_path)
    assert rec["data_dir"] == "en_ewt"
    assert rec["counts"] == {
        "train_sentences": 1,
        "valid_sentences": 1,
        "test_sentences": 1,
    }
    for split in ("train", "valid", "test"):
        assert (tmp_path / "out" / f"{split}.conll").read_text() == (
            "dogs\tNOUN\nbark\tVERB\n.\tPUNCT\n\n"
        )
