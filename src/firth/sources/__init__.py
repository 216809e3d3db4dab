"""Data sources: each one writes ``data/raw/<name>/`` in a canonical format plus
``SOURCE.json`` (kind, id/URL/package, member, sha256 of the bytes read, licence,
retrieval time).

Canonical formats, by what the source holds:

- ``text``: ``docs.jsonl``, one JSON object per document: ``id``, ``group`` (the unit
  that must not be split across train/valid/test: an article, a Bible chapter) and
  ``text``.
- ``parallel``: ``pairs.tsv``, ``id<TAB>source<TAB>target`` per line.
- ``tagged``: ``<split>.conll`` (``all``, or ``train``/``valid``/``test``), one
  ``token<TAB>tag`` per line, a blank line between sentences.
- ``analogy``: ``questions-words.txt`` in the word2vec format (``: section`` headers).
- ``similarity``: ``pairs.tsv``, ``word1<TAB>word2<TAB>score``.
"""
