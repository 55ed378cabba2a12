#!/usr/bin/env bash
# scripts/setup.sh — the one place that knows what the project needs, and installs what is missing.
#
#   scripts/setup.sh build    what scripts/test.sh needs: CUDA toolkit, CMake >= 3.25, Ninja, a C++
#                             compiler, GoogleTest, nlohmann-json, matplotlib (the report's tests),
#                             and, not required, cuobjdump + nvdisasm for the SASS test
#   scripts/setup.sh bench    the same, and a GPU with a driver for CUDA 13 (scripts/run_all.sh)
#
# As root (or with password-less sudo) it installs what is missing (apt-get, pip) before anything
# is configured; otherwise it prints the one command to run and exits 2. Every other failure (no
# nvcc, a CMake or driver too old) exits 1 with a line naming the fix. Sourced or run, it leaves
# nvcc on PATH (/usr/local/cuda/bin is added when nvcc is only there).
set -euo pipefail

MODE="${1:-build}"
case "$MODE" in build|bench) ;; *) echo "setup.sh: usage: scripts/setup.sh [build|bench]" >&2; exit 2 ;; esac

export PIP_ROOT_USER_ACTION=ignore
note() { printf 'setup.sh: %s\n' "$*"; }
fail() { printf 'setup.sh: error: %s\n' "$*" >&2; exit 1; }
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }  # $1 >= $2

# ---- the install list: Debian / Ubuntu package names, and the Python package for the report.
APT_BUILD=(cmake ninja-build g++ libgtest-dev nlohmann-json3-dev python3)
PIP_REPORT=matplotlib
PIP_SASS=(nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)   # optional: the SASS test skips without them
CMAKE_MIN=3.25
NVCC_MIN=12.8      # sm_120 and the sm_90a features used here; CUDA 13 is what the project is run with
DRIVER_MIN=580     # the R580 driver is the first that runs CUDA 13 code

# ---- the CUDA toolkit: not installed here (it is large and vendor-specific), only checked.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null 2>&1 ||
  fail "no nvcc on PATH or in /usr/local/cuda/bin: install the CUDA 13 toolkit and put its bin/ on PATH"
NVCC_VER="$(nvcc --version | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p' | head -n1)"
version_ge "$NVCC_VER" "$NVCC_MIN" || fail "nvcc $NVCC_VER is too old (need >= $NVCC_MIN, CUDA 13 recommended)"

# ---- a GPU, where the mode needs one or where there is one: its driver must run CUDA 13 code.
GPU_DRIVER=""
if command -v nvidia-smi >/dev/null 2>&1; then
  GPU_DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' ' || true)"
fi
if [ -n "$GPU_DRIVER" ]; then
  version_ge "$GPU_DRIVER" "$DRIVER_MIN" ||
    fail "NVIDIA driver $GPU_DRIVER is too old for CUDA 13 code (need >= $DRIVER_MIN): update the driver"
elif [ "$MODE" = bench ]; then
  fail "no NVIDIA GPU visible (nvidia-smi missing or lists none): the benches need one; scripts/test.sh runs the CPU tests"
fi

# ---- what is missing
have_header() {  # have_header REL: REL under a system or CMAKE_PREFIX_PATH include directory
  local d
  local p="${CMAKE_PREFIX_PATH:-}"
  for d in /usr/include /usr/local/include ${p//:/ } ${CONDA_PREFIX:-}; do
    [ -f "$d/$1" ] || [ -f "$d/include/$1" ] && return 0
  done
  return 1
}
MISSING_APT=()
if ! command -v cmake >/dev/null 2>&1; then
  MISSING_APT+=(cmake)
else
  CMAKE_VER="$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
  version_ge "$CMAKE_VER" "$CMAKE_MIN" ||
    fail "CMake $CMAKE_VER is too old (need >= $CMAKE_MIN): 'pip install cmake' or your distribution's backports"
fi
command -v ninja >/dev/null 2>&1 || MISSING_APT+=(ninja-build)
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || MISSING_APT+=(g++)
have_header gtest/gtest.h || MISSING_APT+=(libgtest-dev)
have_header nlohmann/json.hpp || MISSING_APT+=(nlohmann-json3-dev)
command -v python3 >/dev/null 2>&1 || MISSING_APT+=(python3)

# matplotlib goes into the python3 first on PATH (the one the tests and the report run with): with
# pip where that interpreter may be written to, from Debian's package where it is the system's own.
PY_MISSING=0
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import matplotlib' >/dev/null 2>&1 || PY_MISSING=1
else
  PY_MISSING=1
fi
py_externally_managed() {
  python3 - <<'EOF' 2>/dev/null
import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED"))
         or sys.prefix == "/usr" and sys.prefix == sys.base_prefix else 1)
EOF
}
PIP_CMD=""
if [ $PY_MISSING = 1 ]; then
  if command -v python3 >/dev/null 2>&1 && ! py_externally_managed && python3 -m pip --version >/dev/null 2>&1; then
    PIP_CMD="python3 -m pip install --quiet --disable-pip-version-check $PIP_REPORT"
  else
    MISSING_APT+=(python3-matplotlib)
  fi
fi

# ---- install (root or password-less sudo), or print the one command and stop
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="-"; fi
fi
if [ ${#MISSING_APT[@]} -gt 0 ]; then
  APT_CMD="apt-get update && apt-get install -y --no-install-recommends ${MISSING_APT[*]}"
  if [ "$SUDO" = "-" ] || ! command -v apt-get >/dev/null 2>&1; then
    cmd="sudo sh -c '$APT_CMD'"
    [ -n "$PIP_CMD" ] && cmd="$cmd && $PIP_CMD"
    command -v apt-get >/dev/null 2>&1 || note "no apt-get here: install the equivalents of: ${MISSING_APT[*]}"
    note "missing: ${MISSING_APT[*]}$([ -n "$PIP_CMD" ] && echo " $PIP_REPORT"). Run this, then the same command again:"
    printf '  %s\n' "$cmd"
    exit 2
  fi
  note "installing ${MISSING_APT[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${MISSING_APT[@]}" >/dev/null
fi
if [ -n "$PIP_CMD" ]; then
  note "installing $PIP_REPORT into $(command -v python3)"
  $PIP_CMD || { note "pip could not install $PIP_REPORT. Run this, then the same command again:"; printf '  %s\n' "$PIP_CMD"; exit 2; }
fi
python3 -c 'import matplotlib' >/dev/null 2>&1 ||
  fail "python3 ($(command -v python3)) still cannot import matplotlib"

# Optional: cuobjdump + nvdisasm for the SASS test (tests/test_sass.py looks on PATH, in the
# toolkit's bin/ and in PyPI's nvidia-cuda-* wheels). A toolkit may ship nvcc without them; never fatal.
have_sass_tools() {
  { command -v cuobjdump && command -v nvdisasm; } >/dev/null 2>&1 && return 0
  python3 - <<'EOF' 2>/dev/null
import glob, importlib.util, os, sys
spec = importlib.util.find_spec("nvidia")
roots = list(spec.submodule_search_locations or []) if spec else []
dirs = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")]
dirs += [d for r in roots for d in glob.glob(os.path.join(r, "cu*", "bin"))]
sys.exit(0 if any(all(os.path.exists(os.path.join(d, t)) for t in ("cuobjdump", "nvdisasm")) for d in dirs) else 1)
EOF
}
if ! have_sass_tools; then
  if python3 -m pip --version >/dev/null 2>&1 && ! py_externally_managed; then
    note "installing ${PIP_SASS[*]} (for the SASS test)"
    python3 -m pip install --quiet --disable-pip-version-check "${PIP_SASS[@]}" >/dev/null 2>&1 || true
  fi
  have_sass_tools || note "no cuobjdump + nvdisasm (pip install ${PIP_SASS[*]}): the SASS test will be skipped"
fi

note "ready: nvcc $NVCC_VER, cmake $(cmake --version | sed -n 's/^cmake version //p'), $(python3 -c 'import matplotlib; print("matplotlib", matplotlib.__version__)')$([ -n "$GPU_DRIVER" ] && echo ", driver $GPU_DRIVER")"
