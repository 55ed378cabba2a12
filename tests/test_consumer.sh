#!/usr/bin/env bash
# tests/test_consumer.sh BUILD_DIR — builds examples/consumer, a project outside the tree, through
# both CMake routes: find_package(kernel_ladder) after `cmake --install BUILD_DIR` into a temporary
# prefix, and add_subdirectory of the source tree. Runs each program where a GPU exists (it
# validates the GEMM and attention outputs); without one, building is the test.
set -euo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "$1" && pwd)"
ARCH="$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
JOBS="${KL_JOBS:-$(nproc)}"
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)

run() {  # run NAME BINARY
  local rc=0
  "$2" || rc=$?
  case $rc in
    0) echo "test_consumer: $1: ran and validated" ;;
    77) echo "test_consumer: $1: built (no GPU here, so not run)" ;;
    *) echo "test_consumer: $1: FAILED (exit $rc)"; exit 1 ;;
  esac
}

echo "test_consumer: route 1: cmake --install $BUILD, then find_package(kernel_ladder)"
cmake --install "$BUILD" --prefix "$TMP/prefix" >"$TMP/install.log"
cmake -S "$SRC/examples/consumer" -B "$TMP/by_package" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$TMP/prefix" >"$TMP/configure1.log" || { cat "$TMP/configure1.log"; exit 1; }
cmake --build "$TMP/by_package" -j"$JOBS"
run find_package "$TMP/by_package/consumer"

echo "test_consumer: route 2: add_subdirectory($SRC) for CUDA architectures $ARCH"
cmake -S "$SRC/examples/consumer" -B "$TMP/by_source" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DKL_SOURCE_DIR="$SRC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >"$TMP/configure2.log" ||
  { cat "$TMP/configure2.log"; exit 1; }
# The subproject builds its libraries and nothing else: no benches, tests or tools, no GoogleTest.
if grep -q -E "^(GTest|nlohmann_json)_DIR:" "$TMP/by_source/CMakeCache.txt"; then
  echo "test_consumer: the subproject looked for GoogleTest or nlohmann-json"; exit 1
fi
cmake --build "$TMP/by_source" -j"$JOBS"
run add_subdirectory "$TMP/by_source/consumer"
