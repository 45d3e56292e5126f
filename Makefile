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

.PHONY: demo test test-js widgets bench samples clean mutation

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,browser,record,litellm,dask]'
	@touch $@

.cache/tiktoken/.copied:
	@if [ -d ../shared/tiktoken ]; then \
	  mkdir -p .cache/tiktoken && cp ../shared/tiktoken/[0-9a-f]* .cache/tiktoken/ && touch $@; fi

demo: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/cacheviz summary $(SAMPLE)

# Browser tests run when Debian's chromium is installed (.ci/run installs it), else skip.
test: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/ruff check cacheviz tests bench
	$(BIN)/ruff format --check cacheviz tests bench
	$(BIN)/mypy
	$(BIN)/pytest
	@if command -v npm >/dev/null; then $(MAKE) test-js; else echo "npm not found: JS tests skipped"; fi

test-js: widgets/node_modules/.installed
	npm --prefix widgets test

widgets/node_modules/.installed: widgets/package-lock.json
	npm --prefix widgets ci --no-audit --no-fund --loglevel=error
	@touch $@

# Rebuild the front end into cacheviz/static/ (committed, so installs need no Node).
widgets: widgets/node_modules/.installed
	npm --prefix widgets run build

bench: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/python bench/bench_analysis.py

# Mutation testing over prefix, diagnose, providers, usage and redact (slow; not a CI gate).
# Narrow it with e.g. MUTANTS='cacheviz.redact.* cacheviz.usage.*'. Results: `mutmut results`.
MUTANTS ?=
mutation: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/python -m pip install --quiet -e '.[mutation]'
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2 $(MUTANTS) || true
	$(BIN)/python bench/mutation_rates.py

samples: $(VENV)/.installed
	$(BIN)/python -m cacheviz.teach.samples sample_sessions

clean:
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache bench/out mutants
