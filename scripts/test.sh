#!/usr/bin/env bash
# scripts/test.sh — the README's test command: install what is missing, configure, build, run every test.
#
#   scripts/test.sh            all tests (GPU tests skip, visibly, when no GPU is usable)
#   scripts/test.sh -L cpu     extra arguments go to ctest (-L cpu, -L gpu, -R regex, ...)
#
# Environment (optional): KL_ARCH (CMAKE_CUDA_ARCHITECTURES; default: the architecture of this
# machine's GPU, or the project's "90a;120" where there is none, as in CI), KL_BUILD_DIR (default
# build), KL_JOBS (build jobs, default nproc), KL_TEST_JOBS (tests run at once, default 4: most of
# them spend their time in CPU references, so they overlap well even on one GPU).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${KL_BUILD_DIR:-${KL_BUILD:-build}}"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
JOBS="${KL_JOBS:-$(nproc)}"

# Bring in what is missing first (or say the one command that does, and stop).
scripts/setup.sh build || exit $?
if ! command -v nvcc >/dev/null 2>&1; then export PATH="/usr/local/cuda/bin:$PATH"; fi

CMAKE_ARGS=(-S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release)
ARCH="${KL_ARCH:-$(kl_gpu_arch)}"
if [ -n "$ARCH" ]; then CMAKE_ARGS+=("-DCMAKE_CUDA_ARCHITECTURES=$ARCH"); fi
# The script tests (report.py) run with the python3 on PATH, the one that has matplotlib.
if command -v python3 >/dev/null 2>&1; then
  CMAKE_ARGS+=("-DPython3_EXECUTABLE=$(command -v python3)")
fi

echo "test.sh: cmake ${CMAKE_ARGS[*]}"
cmake "${CMAKE_ARGS[@]}"
echo "test.sh: cmake --build $BUILD -j$JOBS"
cmake --build "$BUILD" -j"$JOBS"
echo "test.sh: commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
TJOBS="${KL_TEST_JOBS:-4}"
echo "test.sh: ctest --test-dir $BUILD --output-on-failure -j $TJOBS $*"
rc=0
ctest --test-dir "$BUILD" --output-on-failure -j "$TJOBS" "$@" || rc=$?
echo "test.sh: finished in $SECONDS s (exit $rc)"
exit $rc
