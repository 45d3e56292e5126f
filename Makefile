# Two commands for a fresh machine:
#   make demo   set up .venv and summarize a bundled sample session
#   make test   set up .venv, lint, and run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SAMPLE ?= sample_sessions/environment_details.jsonl

# Offline machines: use a writable copy of ../shared/tiktoken unless the user set a cache.
ifeq ($(origin TIKTOKEN_CACHE_DIR), undefined)
ifneq ($(wildcard ../shared/tiktoken),)
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.cache/tiktoken
endif
endif

.PHONY: demo test bench samples clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

.cache/tiktoken/.copied:
	@if [ -d ../shared/tiktoken ]; then \
	  mkdir -p .cache/tiktoken && cp ../shared/tiktoken/[0-9a-f]* .cache/tiktoken/ && touch $@; fi

demo: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/cacheviz summary $(SAMPLE)

test: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/ruff check cacheviz tests bench
	$(BIN)/ruff format --check cacheviz tests bench
	$(BIN)/pytest

bench: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/python bench/bench_analysis.py

samples: $(VENV)/.installed
	$(BIN)/python -m cacheviz.samples sample_sessions

clean:
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache bench/out
