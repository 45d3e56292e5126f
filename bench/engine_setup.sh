#!/bin/sh
# The engine tier's llama.cpp (make test-engine; docs/testing.md), set up once in DIR:
#   DIR/src     llama-cpp-python's source package (PyPI) and its vocab-only Qwen2 GGUF
#   DIR/wheels  the wheel built from it, CPU only (30 min on a busy 2-core machine, once)
#   DIR/venv    a Python with that wheel, gguf and numpy (the tests run the engine there)
#   DIR/server-build/bin/llama-server  llama.cpp's server from the same source (SERVER=0: not built)
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

# llama-server, built from the same source package's vendored llama.cpp (CPU only) into
# DIR/server-build (the pip build makes the library only); SERVER=0 skips it. cmake from
# PATH, else pip's into DIR/venv. The build log: DIR/server-build.log.
server="$dir/server-build/bin/llama-server"
if [ "${SERVER:-1}" != 0 ] && [ ! -x "$server" ]; then
    tree="$dir/server-src/llama_cpp_python-$version/vendor/llama.cpp"
    if [ ! -f "$tree/CMakeLists.txt" ]; then
        mkdir -p "$dir/server-src"
        tar -xzf "$sdist" -C "$dir/server-src" "llama_cpp_python-$version/vendor/llama.cpp"
    fi
    cmake=$(command -v cmake || true)
    if [ -z "$cmake" ]; then
        [ -x "$dir/venv/bin/cmake" ] || "$pip" install -q cmake
        cmake="$dir/venv/bin/cmake"
    fi
    echo "building llama-server (CPU; log: $dir/server-build.log)"
    {
        "$cmake" -S "$tree" -B "$dir/server-build" -DCMAKE_BUILD_TYPE=Release \
            -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF &&
            nice -n 10 "$cmake" --build "$dir/server-build" --target llama-server -j2
    } >"$dir/server-build.log" 2>&1 ||
        echo "llama-server did not build (see $dir/server-build.log): its tests skip"
fi
