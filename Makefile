# The two front doors: `make run` (the whole DAG on the embedded default data) and
# `make test` (the test suite). Both create .venv if missing and are idempotent.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
STAMP := $(VENV)/.installed

.PHONY: run run-full test test-fast setup lint flow browser bench bench-embeddings bench-lm bench-nmt bench-tagger bench-audit bench-dag bench-query bench-serve bench-determinism bench-cross-machine bench-peers clean-venv

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml requirements.lock
	$(BIN)/pip install -q -c requirements.lock -e '.[dev]'
	@# KenLM's reader, for the ARPA oracle of tests/test_arpa.py (built from source)
	$(BIN)/pip install -q -c requirements.lock kenlm || \
	  echo "note: kenlm could not be built (a C++ compiler?): its ARPA test will be skipped"
	touch $(STAMP)

setup: $(STAMP)

# make run: the DAG as the Prefect flow, RUN_JOBS stages at once (every core by
# default; each stage takes the `threads` its params ask for). `dvc repro` after it
# is a no-op, and plain `dvc repro` runs the same DAG one stage at a time.
RUN_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
run: $(STAMP)
	@test -d .git || (git init -q && echo "initialised a git repository (DVC needs one)")
	$(BIN)/python flows/pipeline.py --jobs $(RUN_JOBS)
	@echo
	@echo "Report: $(CURDIR)/reports/index.html  (terminal summary: reports/index.md)"

# The canon budgets: the same DAG in the nested DVC project profiles/full (its own
# params.yaml, dvc.lock and reports/; about 6 hours on 2 cores). Interrupted, it
# resumes where it stopped: finished stages are cached, a killed training stage
# restarts from its last checkpoint. Each stage's wall time is kept in
# benchmarks/results/full_stage_seconds.json (benchmarks/stage_seconds.py).
# A run killed outright (SIGKILL: nothing merged) leaves its timed lines in
# profiles/full/.dvc/tmp/stage_seconds.log; merge them once with
# `python benchmarks/stage_seconds.py benchmarks/results/full_stage_seconds.json
# --from-log profiles/full/.dvc/tmp/stage_seconds.log`, then delete the log.
run-full: $(STAMP)
	cd profiles/full && $(CURDIR)/$(BIN)/python ../../benchmarks/stage_seconds.py \
	  ../../benchmarks/results/full_stage_seconds.json --log .dvc/tmp/stage_seconds.log \
	  -- $(CURDIR)/$(BIN)/dvc repro
	@echo
	@echo "Report: $(CURDIR)/profiles/full/reports/index.html"

# The DAG as a Prefect flow: JOBS stages at once, each started once the stages it
# reads from are done (threads per stage: the params' `threads` keys, out of every
# core). `make flow JOBS=2`; GPUS=0,1,2,3 gives each training stage its own GPU.
JOBS ?= 1
flow: $(STAMP)
	$(BIN)/python flows/pipeline.py --jobs $(JOBS) $(if $(GPUS),--gpus $(GPUS))

# Debian's chromium + chromedriver for the report-page browser test (skipped, with a
# note, where they cannot be installed)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }; }; } || \
	echo "note: chromium/chromedriver not installed: the browser tests will be skipped"

# make test: ruff, then the whole suite in two tiers: first every test but the
# end-to-end runs of the real DVC and Prefect (pytest marker e2e) and the
# multi-process and bit-identity runs (marker slow), one pytest worker per core
# (pytest-xdist; each test module on one worker), then those two markers in one
# process, with the machine to themselves (the e2e module's tests run in order, and
# the bit-identity and parallel-flow tests compare runs that use both cores). CI
# runs `make test`.
FIRST_TIER := -m "not e2e and not slow" -n auto --dist loadfile
test: $(STAMP) browser
	$(BIN)/ruff check src stages flows tests benchmarks
	$(BIN)/python -m pytest -q $(FIRST_TIER)
	$(BIN)/python -m pytest -q -m "e2e or slow"

# make test-fast: the loop while editing (about 3 minutes on 2 cores): ruff and the
# first tier of `make test`. Select a tier alone with `pytest -m e2e` or
# `pytest -m slow`.
test-fast: $(STAMP)
	$(BIN)/ruff check src stages flows tests benchmarks
	$(BIN)/python -m pytest -q $(FIRST_TIER)

# make run (seconds per stage, the no-op repro after it) and make test, each timed
# in a fresh clone of HEAD (~45 min on 2 cores): benchmarks/results/front_door.json
bench: $(STAMP)
	$(BIN)/python benchmarks/front_door.py

# Every embedding trainer against gensim, 3 seeds (~17 min on 2 cores); needs `make run-full`
# first (the corpus and the evaluation sets).
bench-embeddings: $(STAMP)
	FIRTH_PROJECT=$(CURDIR)/profiles/full $(BIN)/python benchmarks/embeddings.py

# Kneser-Ney build and every neural LM's training/evaluation speed (~5 min on 2 cores);
# needs `make run-full` first (the corpus and the BPE tokenizer).
bench-lm: $(STAMP)
	FIRTH_PROJECT=$(CURDIR)/profiles/full $(BIN)/python benchmarks/lm.py

# Translation training and decoding speed (beam batched vs one sentence at a time,
# ~10 min on 2 cores); needs `make run-full` first (the data, tokenizer and trained models).
bench-nmt: $(STAMP)
	FIRTH_PROJECT=$(CURDIR)/profiles/full $(BIN)/python benchmarks/nmt.py

# Tagger training and decoding speed (batched Viterbi vs one sentence at a time,
# ~2 min on 2 cores); needs `make run-full` first (the data and trained taggers).
bench-tagger: $(STAMP)
	FIRTH_PROJECT=$(CURDIR)/profiles/full $(BIN)/python benchmarks/tagger.py

# The contamination audit's streamed scan: words/s and peak memory (~1.5 min on 2
# cores); needs `make run-full` first (the text corpus and the WNUT-16 test split).
# The query commands' throughput on the default profile's trained models (after
# make run): translate and tag sentences/s, score tokens/s, neighbours words/s.
bench-query: $(STAMP)
	$(BIN)/python benchmarks/query.py

# `firth serve` under a bounded load (20 clients x 10 requests and an oversized body,
# ~2 min on 2 cores) over the models `make run` trained here.
bench-serve: $(STAMP)
	$(BIN)/python benchmarks/serve.py

# The DAG in parallel: `--jobs 2` against a serial run in fresh clones (~55 min on 2
# cores), then the simulated makespans on 1-16 workers (benchmarks/dag.py).
bench-dag: $(STAMP)
	$(BIN)/python benchmarks/dag.py measure
	$(BIN)/python benchmarks/dag.py simulate

# Repeated LSTM trainings compared byte for byte, 1 and 2 threads, with and without
# MKL_CBWR=AUTO,STRICT (~20 min on 2 cores); needs data/subsampled/text (make run).
bench-determinism: $(STAMP)
	$(BIN)/python benchmarks/determinism.py

# Same seed, another machine's kernels: a copy of this trained project reruns the
# wnut16-crf tagger, Bahdanau NMT and LSTM LM stages (both seeds) with ATen's AVX2
# kernels and MKL's AVX2 path, and compares the tracked scores with the seed band
# (~25 min on 2 cores, after make run).
bench-cross-machine: $(STAMP)
	$(BIN)/python benchmarks/cross_machine.py

# Firth beside gensim, fastText, KenLM (its reader and lmplz), NLTK, JoeyNMT, OpenNMT-py
# and flair on the same data and settings, after make run: benchmarks/results/peers.json
# (measured in parts on 2 cores: taggers and JoeyNMT translation 2,827 s, OpenNMT-py's
# translation 761 s; docs/measured.md). Installs the peers extra first (kenlm and
# fasttext build from source); JoeyNMT, OpenNMT-py and flair get venvs of their own.
bench-peers: $(STAMP)
	$(BIN)/pip install -q -c requirements.lock -e '.[peers]'
	$(BIN)/python benchmarks/peers.py

bench-audit: $(STAMP)
	FIRTH_PROJECT=$(CURDIR)/profiles/full $(BIN)/python benchmarks/audit.py

clean-venv:
	rm -rf $(VENV)
