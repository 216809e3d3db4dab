# The two front doors: `make run` (the whole DAG on the embedded default data) and
# `make test` (the test suite). Both create .venv if missing and are idempotent.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
STAMP := $(VENV)/.installed

.PHONY: run test setup lint flow browser bench bench-embeddings bench-lm bench-nmt bench-tagger bench-audit clean-venv

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml requirements.lock
	$(BIN)/pip install -q -c requirements.lock -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	@test -d .git || (git init -q && echo "initialised a git repository (DVC needs one)")
	$(BIN)/dvc repro
	@echo
	@echo "Report: $(CURDIR)/reports/index.html  (terminal summary: reports/index.md)"

flow: $(STAMP)
	$(BIN)/python flows/pipeline.py

# Debian's chromium + chromedriver for the report-page browser test (skipped, with a
# note, where they cannot be installed)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }; }; } || \
	echo "note: chromium/chromedriver not installed: the browser tests will be skipped"

test: $(STAMP) browser
	$(BIN)/ruff check src stages flows tests benchmarks
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/stages.py

# Every embedding trainer against gensim, 3 seeds (~17 min on 2 cores); needs `make run`
# first (the corpus and the evaluation sets).
bench-embeddings: $(STAMP)
	$(BIN)/python benchmarks/embeddings.py

# Kneser-Ney build and every neural LM's training/evaluation speed (~5 min on 2 cores);
# needs `make run` first (the corpus and the BPE tokenizer).
bench-lm: $(STAMP)
	$(BIN)/python benchmarks/lm.py

# Translation training and decoding speed (beam batched vs one sentence at a time,
# ~10 min on 2 cores); needs `make run` first (the data, tokenizer and trained models).
bench-nmt: $(STAMP)
	$(BIN)/python benchmarks/nmt.py

# Tagger training and decoding speed (batched Viterbi vs one sentence at a time,
# ~2 min on 2 cores); needs `make run` first (the data and trained taggers).
bench-tagger: $(STAMP)
	$(BIN)/python benchmarks/tagger.py

# The contamination audit's streamed scan: words/s and peak memory (~1.5 min on 2
# cores); needs `make run` first (the text corpus and the WNUT-16 test split).
bench-audit: $(STAMP)
	$(BIN)/python benchmarks/audit.py

clean-venv:
	rm -rf $(VENV)
