#!/bin/sh
# The engine tier's llama.cpp (make test-engine; docs/testing.md), set up once in DIR:
#   DIR/src     llama-cpp-python's source package (PyPI) and its vocab-only Qwen2 GGUF
#   DIR/wheels  the wheel built from it, CPU only (30 min on a busy 2-core machine, once)
#   DIR/venv    a Python with that wheel, gguf and numpy (the tests run the engine there)
# Usage: bench/engine_setup.sh DIR VERSION   (PYTHON: the interpreter of the venv)
set -eu
dir=$1
version=$2
mkdir -p "$dir/src" "$dir/wheels"
sdist="$dir/src/llama_cpp_python-$version.tar.gz"
vocab_member="llama_cpp_python-$version/vendor/llama.cpp/models/ggml-vocab-qwen2.gguf"
[ -x "$dir/venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$dir/venv"
pip="$dir/venv/bin/pip"
[ -f "$sdist" ] || "$pip" download "llama-cpp-python==$version" --no-binary :all: --no-deps -d "$dir/src"
[ -f "$dir/src/$vocab_member" ] || tar -xzf "$sdist" -C "$dir/src" "$vocab_member"
if ! ls "$dir/wheels/llama_cpp_python-$version-"*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $version (CPU; log: $dir/build.log)"
    CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DGGML_VULKAN=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 10 "$pip" wheel --no-deps -w "$dir/wheels" "$sdist" >"$dir/build.log" 2>&1
fi
"$dir/venv/bin/python" -c "import llama_cpp" 2>/dev/null || "$pip" install -q "$dir/wheels/llama_cpp_python-$version-"*.whl
"$dir/venv/bin/python" -c "import gguf, numpy" 2>/dev/null || "$pip" install -q gguf numpy
