# Two commands for a fresh machine:
#   make demo   set up .venv (the package alone) and summarize a bundled sample session
#   make test   set up .venv (the locked test environment), lint, and run the test suite
# Both install from uv.lock, so every machine and every day resolves the same versions;
# `make lock` updates it on purpose, and `make test-latest` runs the suite on the newest
# versions pyproject.toml allows (what `pip install cacheviz` gives a user).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SAMPLE ?= sample_sessions/reported_usage.jsonl
# uv, pinned, in a venv of its own under .cache (nothing is installed outside the checkout)
UV_VERSION := 0.13.9
UV_HOME    := .cache/uv-$(UV_VERSION)
UV         := $(UV_HOME)/bin/uv
export UV_PROJECT_ENVIRONMENT := $(VENV)
# the test environment: every extra but `tap` (claude-tap gets .venv-tap) and `mutation`
TEST_EXTRAS := --extra dev --extra browser --extra record --extra litellm --extra dask

# Offline machines: use a writable copy of ../shared/tiktoken unless the user set a cache.
ifeq ($(origin TIKTOKEN_CACHE_DIR), undefined)
ifneq ($(wildcard ../shared/tiktoken),)
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.cache/tiktoken
endif
endif

.PHONY: demo test test-fast test-engine test-latest test-oldest-sdks test-js lock jupyter widgets bench samples clean mutation \
	venv-test venv-demo

$(UV):
	$(PYTHON) -m venv $(UV_HOME)
	$(UV_HOME)/bin/python -m pip install --quiet --disable-pip-version-check 'uv==$(UV_VERSION)'

# `uv sync` is a quick no-op when .venv already matches the lock. The demo's sync is
# --inexact: it adds what it lacks and leaves the test extras in place.
venv-test: $(UV)
	$(UV) sync --quiet --frozen $(TEST_EXTRAS)

venv-demo: $(UV)
	$(UV) sync --quiet --frozen --inexact

# A deliberate update of the lock (then run `make test` and `make test-latest`, commit uv.lock).
lock: $(UV)
	$(UV) lock --upgrade

# claude-tap for tests/formats/test_claude_tap.py, in a venv of its own (its aiohttp pin
# conflicts with litellm's; pin as in pyproject's `tap` extra). Where it can't be
# installed, the test is skipped with the reason.
TAP_VENV := .venv-tap
CLAUDE_TAP ?= claude-tap==0.1.146
$(TAP_VENV)/.installed: pyproject.toml uv.lock | $(UV)
	@{ UV_PROJECT_ENVIRONMENT=$(TAP_VENV) $(UV) sync --quiet --frozen --extra tap \
	    --no-install-project && touch $@; } \
	  || echo "could not install $(CLAUDE_TAP): tests/formats/test_claude_tap.py will skip"

.cache/tiktoken/.copied:
	@if [ -d ../shared/tiktoken ]; then \
	  mkdir -p .cache/tiktoken && cp ../shared/tiktoken/[0-9a-f]* .cache/tiktoken/ && touch $@; fi

demo: venv-demo .cache/tiktoken/.copied
	$(BIN)/cacheviz summary $(SAMPLE)
	@echo
	@echo "next: .venv/bin/cacheviz --help   (or: source .venv/bin/activate; cacheviz --help)"
	@echo "      make jupyter                 (JupyterLab on notebooks/, with the inspector)"

# JupyterLab on the notebooks (adds the `notebooks` extra: JupyterLab and plotly)
jupyter: $(UV) .cache/tiktoken/.copied
	$(UV) sync --quiet --frozen --inexact --extra notebooks
	$(BIN)/jupyter lab notebooks/

# Browser tests run when Debian's chromium is installed (.ci/run installs it), else skip.
test: venv-test $(TAP_VENV)/.installed .cache/tiktoken/.copied
	$(BIN)/ruff check cacheviz tests bench
	$(BIN)/ruff format --check cacheviz tests bench
	$(BIN)/mypy
	$(BIN)/pytest
	@if command -v npm >/dev/null; then $(MAKE) test-js; else echo "npm not found: JS tests skipped"; fi

# The inner loop: no browser, no notebooks, no real-data sweeps (docs/testing.md).
test-fast: venv-test .cache/tiktoken/.copied
	$(BIN)/pytest -q -m "not browser and not realdata and not slow" -p no:cacheprovider

# The suite on the newest versions pyproject.toml allows, in a venv of its own (.venv-latest):
# what `pip install cacheviz` gives a user today. Run it when the lock is updated.
# The engine tier (opt-in, never part of `make test`; docs/testing.md): llama.cpp itself,
# through llama-cpp-python built once from its source package into ENGINE_DIR (a cached
# wheel reinstalls in seconds), a tiny random-weight model written from its vocab file.
ENGINE_DIR ?= $(CURDIR)/.cache/engine
LLAMA_CPP_VERSION = 0.3.36
test-engine: venv-test .cache/tiktoken/.copied
	bench/engine_setup.sh $(ENGINE_DIR) $(LLAMA_CPP_VERSION)
	CACHEVIZ_ENGINE_PYTHON=$(ENGINE_DIR)/venv/bin/python \
	CACHEVIZ_ENGINE_SERVER=$(ENGINE_DIR)/server-build/bin/llama-server \
	CACHEVIZ_ENGINE_VOCAB=$(ENGINE_DIR)/src/llama_cpp_python-$(LLAMA_CPP_VERSION)/vendor/llama.cpp/models/ggml-vocab-qwen2.gguf \
	$(BIN)/pytest -q -m engine tests/engine

test-latest: $(UV) $(TAP_VENV)/.installed .cache/tiktoken/.copied
	rm -rf .venv-latest
	$(UV) venv --quiet .venv-latest
	$(UV) pip install --quiet --python .venv-latest/bin/python --upgrade \
	  -e '.[dev,browser,record,litellm,dask]'
	$(UV) pip list --quiet --python .venv-latest/bin/python --format freeze > .venv-latest/versions.txt
	.venv-latest/bin/pytest -p no:cacheprovider

# The recording tests on the oldest SDKs the `record` extra allows (anthropic 0.40, openai
# 1.55.3: httpx, not httpx2), in .venv-oldest; docs/recording.md lists the pairs tested.
test-oldest-sdks: $(UV) .cache/tiktoken/.copied
	rm -rf .venv-oldest
	$(UV) venv --quiet .venv-oldest
	$(UV) pip install --quiet --python .venv-oldest/bin/python -e '.[dev,record]' \
	  'anthropic==0.40.0' 'openai==1.55.3'
	.venv-oldest/bin/pytest -q -p no:cacheprovider tests/recording

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

bench: venv-test .cache/tiktoken/.copied
	$(BIN)/python bench/bench_analysis.py

# Mutation testing (slow; not a CI gate): one mutmut run per module, each against that
# module's own unit tests (bench/mutation_rates.py); the table goes to bench/out/mutation.md.
# Narrow it with e.g. MODULES='prefix providers.openai'. Survivors: `mutmut results`.
MODULES ?= prefix diagnose providers.anthropic providers.openai providers.google \
	providers.deepseek providers.sglang providers.vllm providers.llamacpp providers._cache providers._base usage redact
mutation: $(UV) .cache/tiktoken/.copied
	$(UV) sync --quiet --frozen $(TEST_EXTRAS) --extra mutation
	$(BIN)/python bench/mutation_rates.py --run $(MODULES) --max-children 2

samples: venv-demo
	$(BIN)/python -m cacheviz.teach.samples sample_sessions

clean:
	rm -rf $(VENV) $(TAP_VENV) .venv-latest .venv-oldest .cache .pytest_cache .ruff_cache bench/out mutants
