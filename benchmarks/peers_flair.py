"""flair's BiLSTM-CRF tagger on one of Firth's tagged data sets, for
benchmarks/peers.py: run by a Python that has flair (its own venv; flair's
dependencies are not the project's), never imported by Firth.

    python peers_flair.py SETTINGS.json

SETTINGS names the CoNLL folder (train/valid/test.conll: token, tag), the word
vectors (word2vec text), the seed, the sizes and the training budget; the script
writes OUT/predictions.tsv (one predicted tag per test token, a blank line between
sentences) and OUT/result.json (training and tagging seconds, epochs, flair's
version). BIO tags are predicted as BIO (tag_format "BIO"), anything else as
plain token labels."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path


def read_conll(path: Path) -> list[list[tuple[str, str]]]:
    sents, cur = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            if cur:
                sents.append(cur)
                cur = []
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise SystemExit(f"{path}:{n}: expected 'token<TAB>tag', got {line!r}")
        cur.append((parts[0], parts[1]))
    if cur:
        sents.append(cur)
    return sents


def is_bio(sents) -> bool:
    return all(t == "O" or t[:2] in ("B-", "I-") for s in sents for _, t in s)


def bio_tags(sentence, label_type: str) -> list[str]:
    """A predicted sentence's spans as BIO tags over its tokens."""
    tags = ["O"] * len(sentence)
    for span in sentence.get_spans(label_type):
        idx = [t.idx - 1 for t in span.tokens]
        tags[idx[0]] = f"B-{span.tag}"
        for i in idx[1:]:
            tags[i] = f"I-{span.tag}"
    return tags


PROGRESS = r"epoch (\d+) - iter (\d+)/(\d+) - .* - time \(sec\): ([\d.]+)"


def training_rate(log: str, sentences: int) -> tuple[float, float]:
    """(sentences, seconds) of training steps from flair's training log: each
    epoch's last progress line gives the seconds since the epoch began after
    iteration i of n (its samples/sec counts tokens, not sentences)."""
    last: dict[int, tuple[float, float]] = {}
    for line in log.splitlines():
        m = re.search(PROGRESS, line)
        if m:
            i, n = int(m.group(2)), int(m.group(3))
            last[int(m.group(1))] = (sentences * i / n, float(m.group(4)))
    return sum(s for s, _ in last.values()), sum(t for _, t in last.values())


def main() -> None:
    s = json.loads(Path(sys.argv[1]).read_text())
    import flair
    import torch
    from flair.data import Dictionary, Sentence
    from flair.datasets import ColumnCorpus
    from flair.embeddings import CharacterEmbeddings, StackedEmbeddings, WordEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer

    torch.set_num_threads(s["threads"])
    flair.set_seed(s["seed"])
    flair.device = torch.device("cpu")
    data, out = Path(s["data"]), Path(s["out"])
    out.mkdir(parents=True, exist_ok=True)
    train = read_conll(data / "train.conll")
    bio = is_bio(train)
    label = "ner" if bio else "pos"
    corpus = ColumnCorpus(
        data,
        {0: "text", 1: label},
        train_file="train.conll",
        dev_file="valid.conll",
        test_file="test.conll",
        column_delimiter="\t",
        in_memory=True,
    )
    # tags seen only in valid or test map to <unk>, which is never predicted
    tags = corpus.make_label_dictionary(label_type=label, add_unk=True)
    chars = Dictionary()  # the training words' characters (flair's default list
    for c in sorted({c for sent in train for w, _ in sent for c in w}):
        chars.add_item(c)  # is downloaded); others are its <unk>
    embeddings = StackedEmbeddings(
        [
            WordEmbeddings(s["vectors"], fine_tune=True),
            CharacterEmbeddings(
                chars,
                char_embedding_dim=s["char_dim"],
                hidden_size_char=s["char_hidden"],
            ),
        ]
    )
    tagger = SequenceTagger(
        hidden_size=s["hidden"],
        embeddings=embeddings,
        tag_dictionary=tags,
        tag_type=label,
        use_crf=True,
        tag_format="BIO",
        reproject_embeddings=False,
        dropout=s["dropout"],
        locked_dropout=0.0,
        word_dropout=s["word_dropout"],
    )
    trainer = ModelTrainer(tagger, corpus)
    t0 = time.perf_counter()
    trainer.train(
        str(out / "model"),
        learning_rate=s["lr"],
        optimizer=torch.optim.Adam,
        mini_batch_size=s["batch"],
        max_epochs=s["epochs"],
        patience=s["patience"],
        embeddings_storage_mode="none",
        save_final_model=False,
        use_final_model_for_eval=False,
    )
    train_wall = time.perf_counter() - t0
    best = out / "model" / "best-model.pt"
    model = SequenceTagger.load(best) if best.exists() else tagger
    model.eval()
    test = read_conll(data / "test.conll")
    warm = [Sentence([w for w, _ in sent]) for sent in test]
    model.predict(warm, mini_batch_size=s["eval_batch"], label_name="predicted")
    sentences = [Sentence([w for w, _ in sent]) for sent in test]
    t0 = time.perf_counter()  # the second pass, as for Firth
    model.predict(sentences, mini_batch_size=s["eval_batch"], label_name="predicted")
    tag_seconds = time.perf_counter() - t0
    rows = []
    for sent in sentences:
        if bio:
            pred = bio_tags(sent, "predicted")
        else:
            pred = [t.get_label("predicted").value for t in sent]
        rows.append("".join(f"{p}\n" for p in pred))
    (out / "predictions.tsv").write_text("\n".join(rows), encoding="utf-8")
    sentences_done, seconds = training_rate(
        (out / "model" / "training.log").read_text(encoding="utf-8"), len(train)
    )
    result = {
        "flair_version": flair.__version__,
        "torch_version": torch.__version__,
        "train_wall_seconds": round(train_wall, 2),
        "train_seconds": round(seconds, 2),
        "train_sentences_per_second": round(sentences_done / max(seconds, 1e-9), 1),
        "tag_seconds": round(tag_seconds, 3),
        "test_sentences": len(test),
        "best_model": best.exists(),
        "parameters": sum(p.numel() for p in tagger.parameters()),
    }
    (out / "result.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
