#!/usr/bin/env bash
# Build llama.cpp's llama-server from a pinned source into a cache, once per machine, and
# print its path. The tests marked real_engine and `fabula bench model` serve the Gemma 3
# 270M GGUF with it (docs/guides/model-mode.md).
#
#   tools/llama.sh            # the path of a built llama-server (builds it the first time)
#   FABULA_LLAMA_JOBS=2 tools/llama.sh
#
# The source: llama.cpp as vendored in the PyPI sdist of llama-cpp-python (pinned below),
# fetched with pip, the one registry this project can reach; its llama.cpp commit is
# recorded next to the binary. Built with cmake and the machine's C++ compiler, statically
# (one binary, nothing to install), for this CPU (GGML_NATIVE: the cache is per machine)
# but without AMX, without curl, OpenSSL or the web UI. The cache is
# ${FABULA_CACHE:-~/.cache/fabula}/llama.cpp/<build>/; a build that fails leaves nothing
# there, and a cached binary that no longer runs is built again.
#
# AMX: on a Xeon with AMX tiles (a cloud VM's, here), a native build compiles ggml's AMX
# kernels in, and llama-server died of SIGSEGV in ggml_backend_amx_mul_mat on its warm-up
# run, every time. -mno-amx-* before GGML_NATIVE's -march=native keeps them out (AVX-512
# and VNNI stay); the build's name says so, so that an older cached build is not reused.
set -euo pipefail

VERSION="0.3.36"  # llama-cpp-python, whose sdist vendors llama.cpp
BUILD="$VERSION-noamx"  # the cache's name for this source and these flags (bench/llama.py)
CACHE="${FABULA_CACHE:-$HOME/.cache/fabula}/llama.cpp/$BUILD"
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
BIN="$CACHE/bin/llama-server"
JOBS="${FABULA_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
PYTHON="${PYTHON:-python3}"

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi

for tool in cmake c++ "$PYTHON"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "tools/llama.sh: $tool is needed to build llama-server and is not installed" >&2
    exit 1
  fi
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/fabula-llama.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
started=$(date +%s)
echo "tools/llama.sh: building llama-server (llama-cpp-python $VERSION's llama.cpp) with $JOBS jobs" >&2
"$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
  "llama-cpp-python==$VERSION" -d "$WORK" >&2
tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
  -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" >"$WORK/configure.log" 2>&1 ||
  { tail -20 "$WORK/configure.log" >&2; exit 1; }
cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 ||
  { tail -30 "$WORK/build.log" >&2; exit 1; }

mkdir -p "$CACHE/bin.new"
cp "$WORK/build/bin/llama-server" "$CACHE/bin.new/llama-server"
"$CACHE/bin.new/llama-server" --version >"$CACHE/bin.new/VERSION" 2>&1
rm -rf "$CACHE/bin"
mv "$CACHE/bin.new" "$CACHE/bin"
echo "tools/llama.sh: built in $(( $(date +%s) - started )) s: $BIN" >&2
echo "$BIN"
