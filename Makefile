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

# claude-tap for tests/formats/test_claude_tap.py, in a venv of its own (its aiohttp pin
# conflicts with litellm's; pin as in pyproject's `tap` extra). Where it can't be
# installed, the test is skipped with the reason.
TAP_VENV := .venv-tap
CLAUDE_TAP ?= claude-tap==0.1.146
$(TAP_VENV)/.installed: pyproject.toml
	@{ $(PYTHON) -m venv $(TAP_VENV) && \
	  $(TAP_VENV)/bin/python -m pip install --quiet '$(CLAUDE_TAP)' && touch $@; } \
	  || echo "could not install $(CLAUDE_TAP): tests/formats/test_claude_tap.py will skip"

.cache/tiktoken/.copied:
	@if [ -d ../shared/tiktoken ]; then \
	  mkdir -p .cache/tiktoken && cp ../shared/tiktoken/[0-9a-f]* .cache/tiktoken/ && touch $@; fi

demo: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/cacheviz summary $(SAMPLE)

# Browser tests run when Debian's chromium is installed (.ci/run installs it), else skip.
test: $(VENV)/.installed $(TAP_VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/ruff check cacheviz tests bench
	$(BIN)/ruff format --check cacheviz tests bench
	$(BIN)/mypy
	$(BIN)/pytest
	@if command -v npm >/dev/null; then $(MAKE) test-js; else echo "npm not found: JS tests skipped"; fi

# JS: typecheck, rebuild, vitest, then check the committed bundles are the fresh build
# (the build is deterministic: a source change without `make widgets` + commit fails here).
test-js: widgets/node_modules/.installed
	npm --prefix widgets run typecheck
	npm --prefix widgets run build
	npm --prefix widgets test
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  if git diff --quiet -- cacheviz/static && [ -z "$$(git status --porcelain -- cacheviz/static)" ]; then \
	    echo "cacheviz/static matches widgets/src"; \
	  else git status --short -- cacheviz/static; \
	    echo "cacheviz/static differs from a fresh build of widgets/src: run \`make widgets\` and commit cacheviz/static"; exit 1; fi; \
	fi

widgets/node_modules/.installed: widgets/package-lock.json
	npm --prefix widgets ci --no-audit --no-fund --loglevel=error
	@touch $@

# Rebuild the front end into cacheviz/static/ (committed, so installs need no Node).
widgets: widgets/node_modules/.installed
	npm --prefix widgets run build

bench: $(VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/python bench/bench_analysis.py

# Mutation testing (slow; not a CI gate): one mutmut run per module, each against that
# module's own unit tests (bench/mutation_rates.py); the table goes to bench/out/mutation.md.
# Narrow it with e.g. MODULES='prefix providers.openai'. Survivors: `mutmut results`.
MODULES ?= prefix diagnose providers.anthropic providers.openai providers.google \
	providers.deepseek providers.sglang providers.vllm providers._cache providers._base usage redact
$(VENV)/.mutmut: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[mutation]'
	@touch $@

mutation: $(VENV)/.mutmut .cache/tiktoken/.copied
	$(BIN)/python bench/mutation_rates.py --run $(MODULES) --max-children 2

samples: $(VENV)/.installed
	$(BIN)/python -m cacheviz.teach.samples sample_sessions

clean:
	rm -rf $(VENV) $(TAP_VENV) .cache .pytest_cache .ruff_cache bench/out mutants
