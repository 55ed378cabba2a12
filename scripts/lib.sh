# shellcheck shell=bash
# scripts/lib.sh — shared by run_all.sh and sanitize.sh (sourced, not run).
#
#   kl_require_gpu     sets GPU_NAME, DRIVER, SLUG ("NVIDIA H200" -> h200); exits 1 without a GPU
#   kl_gpu_arch        the CMAKE_CUDA_ARCHITECTURES value for this machine's GPU (90a on sm_90)
#   kl_build           configures (if needed) and builds $BUILD with Ninja for KL_ARCH, else for
#                      this machine's GPU (kl_gpu_arch), else the project default "90a;120"
#   say MSG            progress line with the seconds since the script started

KL_T0=$(date +%s)
say() { printf '[%s %4ds] %s\n' "${KL_SCRIPT:-kl}" "$(( $(date +%s) - KL_T0 ))" "$*"; }
die() { printf '%s: error: %s\n' "${KL_SCRIPT:-kl}" "$*" >&2; exit 1; }

kl_require_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 ||
    die "no nvidia-smi: this machine has no NVIDIA driver. This script needs a GPU; for the CPU tests run scripts/test.sh"
  GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | sed 's/[[:space:]]*$//')"
  [ -n "$GPU_NAME" ] ||
    die "nvidia-smi lists no GPU (driver not loaded? CUDA_VISIBLE_DEVICES empty?). This script needs a GPU; for the CPU tests run scripts/test.sh"
  DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' ')"
  # "NVIDIA H200" -> h200, "NVIDIA GeForce RTX 5090" -> rtx-5090, "NVIDIA H200 NVL" -> h200-nvl
  SLUG="$(printf '%s' "$GPU_NAME" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/^geforce //' \
          -e 's/[^a-z0-9][^a-z0-9]*/-/g' -e 's/^-//' -e 's/-$//')"
  export GPU_NAME DRIVER SLUG
}

# The CUDA architecture of the GPU in this machine ("90a" on an H100/H200, "120" on an RTX 5090),
# or nothing when there is no GPU. A bench or test run only needs code for the card it runs on, and
# building one architecture instead of two halves the build; CI (no GPU) builds both.
kl_gpu_arch() {
  local cc
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' ')"
  case "$cc" in
    "") ;;
    9.0) echo 90a ;;        # wgmma, setmaxnreg need the arch-specific target
    *) echo "${cc/./}" ;;
  esac
}

kl_build() {
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  local args=(-S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release)
  local arch="${KL_ARCH:-$(kl_gpu_arch)}"
  if [ -n "$arch" ]; then args+=("-DCMAKE_CUDA_ARCHITECTURES=$arch"); fi
  mkdir -p "$BUILD"
  say "configure: cmake ${args[*]}"
  cmake "${args[@]}" >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log" >&2; die "cmake configure failed"; }
  say "build: cmake --build $BUILD -j$JOBS"
  cmake --build "$BUILD" -j"$JOBS" || die "build failed"
}
