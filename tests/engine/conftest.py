"""The engine tier: real llama.cpp, opt-in (``make test-engine``; docs/testing.md).

Every test here is marked ``engine`` and skips unless ``CACHEVIZ_ENGINE_PYTHON`` names a
Python with ``llama_cpp``, ``gguf`` and ``numpy`` and ``CACHEVIZ_ENGINE_VOCAB`` the
vocab-only ``ggml-vocab-qwen2.gguf`` of the llama-cpp-python source package (``make
test-engine`` sets both up).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from engine_sessions import sessions

HERE = Path(__file__).parent
collect_ignore = ["tiny_qwen2.py", "llama_worker.py"]  # run by the engine's Python


def pytest_collection_modifyitems(items):
    for item in items:
        if "/tests/engine/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="session")
def engine_python() -> str:
    python = os.environ.get("CACHEVIZ_ENGINE_PYTHON")
    vocab = os.environ.get("CACHEVIZ_ENGINE_VOCAB")
    if not python or not vocab:
        pytest.skip("the engine tier: run `make test-engine` (CACHEVIZ_ENGINE_PYTHON unset)")
    return python


@pytest.fixture(scope="session")
def tiny_model(engine_python, tmp_path_factory) -> Path:
    """The random-weight qwen2 GGUF, written from the vocab file (once per run)."""
    out = tmp_path_factory.mktemp("engine") / "tiny-qwen2.gguf"
    vocab = os.environ["CACHEVIZ_ENGINE_VOCAB"]
    subprocess.run([engine_python, str(HERE / "tiny_qwen2.py"), vocab, str(out)], check=True)
    return out


@pytest.fixture(scope="session")
def measured(engine_python, tiny_model) -> dict:
    """The five session kinds run on llama.cpp: per call its ids, reuse and prefill time."""
    done = subprocess.run(
        [engine_python, str(HERE / "llama_worker.py"), str(tiny_model)],
        input=json.dumps(sessions()),
        capture_output=True,
        text=True,
        check=True,
    )
    saved = os.environ.get("CACHEVIZ_ENGINE_MEASURED")
    if saved:  # the raw measurements, for the figures in docs/simulation.md
        Path(saved).write_text(done.stdout, encoding="utf-8")
    return json.loads(done.stdout)
