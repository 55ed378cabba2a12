#!/usr/bin/env bash
# scripts/run_all.sh — the README's bench command: build, run every bench on its default shapes, the
# PyTorch baseline where PyTorch is installed, then the tables, the roofline and the README tables.
#
#   scripts/run_all.sh
#
# Environment (all optional):
#   KL_ARCH         CMAKE_CUDA_ARCHITECTURES (default: this machine's GPU, e.g. 90a on an H200)
#   KL_BUILD_DIR    build folder (default: build)
#   KL_JOBS         parallel build jobs (default: nproc)
#   KL_RESULTS_DIR  output folder (default: results/<device slug>, e.g. results/h200)
#   KL_BENCH_ARGS   extra flags for every family bench (e.g. "--quick")
#   KL_NO_TORCH=1   skip the PyTorch baseline
#   KL_NO_H2H=1     skip the head-to-head (scripts/h2h.py: the issues' comparison shapes, arms interleaved)
#   KL_NO_README=1  do not touch README.md (tables.md and roofline.png are still written)
#
# Writes results/<device>/<family>.jsonl (peak.jsonl, torch.jsonl, ...), env.txt, tables.md,
# roofline.png, h2h/ (rows.jsonl, table.md, log.txt of scripts/h2h.py), and the generated sections
# of README.md. Exits non-zero if any bench failed (the
# other benches still run, and the report is still generated from what was measured).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
KL_SCRIPT=run_all
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# ---- a GPU first: nothing below makes sense without one.
kl_require_gpu
OUT="${KL_RESULTS_DIR:-results/$SLUG}"
BUILD="${KL_BUILD_DIR:-${KL_BUILD:-build}}"
JOBS="${KL_JOBS:-$(nproc)}"
mkdir -p "$OUT"
say "GPU: $GPU_NAME (driver $DRIVER) -> $OUT"

# ---- build
kl_build

# ---- what this run is (report.py reads env.txt for the driver release)
{
  echo "gpu=$GPU_NAME"
  echo "driver_version=$DRIVER"
  echo "nvcc=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n1)"
  echo "git_commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "arch=${KL_ARCH:-$(kl_gpu_arch)}"
} >"$OUT/env.txt"

# ---- benches: bench_peak first (the roofs), then every family on its default shapes.
FAILED=()
run_bench() {  # run_bench NAME FILE ARGS...
  local name="$1" file="$2"; shift 2
  : >"$file"  # this run's rows only (the previous run is in git)
  say "$name $* -> $file"
  local t
  t=$(date +%s)
  "$BUILD/$name" "$@" --out "$file"
  local rc=$?
  local n; n=$(grep -c . "$file" 2>/dev/null || true)
  if [ $rc -ne 0 ]; then
    FAILED+=("$name (exit $rc)")
    say "$name FAILED (exit $rc) after $(( $(date +%s) - t )) s, $n rows kept"
  else
    say "$name done in $(( $(date +%s) - t )) s, $n rows"
  fi
}

[ -x "$BUILD/bench_peak" ] || die "$BUILD/bench_peak was not built"
run_bench bench_peak "$OUT/peak.jsonl"
for b in "$BUILD"/bench_*; do
  name="$(basename "$b")"
  if [ ! -f "$b" ] || [ ! -x "$b" ]; then continue; fi
  [ "$name" = bench_peak ] && continue
  fam="${name#bench_}"
  # shellcheck disable=SC2086
  run_bench "$name" "$OUT/$fam.jsonl" ${KL_BENCH_ARGS:-}
done

# ---- PyTorch, where it is installed
HAVE_TORCH=0
if [ "${KL_NO_TORCH:-0}" != 1 ] &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  HAVE_TORCH=1
fi
if [ "${KL_NO_TORCH:-0}" = 1 ]; then
  say "PyTorch baseline skipped (KL_NO_TORCH=1)"
elif [ $HAVE_TORCH = 1 ]; then
  echo "torch=$(python3 -c 'import torch; print(torch.__version__)')" >>"$OUT/env.txt"
  : >"$OUT/torch.jsonl"
  say "PyTorch baseline -> $OUT/torch.jsonl"
  t=$(date +%s)
  if python3 scripts/torch_baseline.py --out "$OUT/torch.jsonl"; then
    say "PyTorch baseline done in $(( $(date +%s) - t )) s"
  else
    FAILED+=("torch_baseline.py (exit $?)")
  fi
else
  say "PyTorch with CUDA not importable by python3: no torch rows (pip install torch for the comparison)"
fi

# ---- head to head: the shapes the issues' ratio bars name, our rows and the libraries' interleaved
# round-robin (best round per row, spread of the rounds); $OUT/h2h/table.md. The attention sets need
# PyTorch (its SDPA rows are the comparison).
if [ "${KL_NO_H2H:-0}" = 1 ]; then
  say "head to head skipped (KL_NO_H2H=1)"
else
  H2H_SETS=gemm_bf16,sgemm
  [ $HAVE_TORCH = 1 ] && H2H_SETS=attention,gemm_bf16,sgemm,attention_d64
  H2H_ROUNDS=3
  case " ${KL_BENCH_ARGS:-} " in *" --quick "*) H2H_ROUNDS=1 ;; esac  # a smoke run: one round
  say "head to head ($H2H_SETS, $H2H_ROUNDS rounds) -> $OUT/h2h/"
  t=$(date +%s)
  if python3 scripts/h2h.py --build "$BUILD" --dir "$OUT/h2h" --set "$H2H_SETS" --rounds "$H2H_ROUNDS" >/dev/null; then
    say "head to head done in $(( $(date +%s) - t )) s: $OUT/h2h/table.md"
  else
    FAILED+=("h2h.py (exit $?)")
  fi
fi

# ---- tables, roofline, README
python3 -c 'import matplotlib' 2>/dev/null || die "python3 has no matplotlib (pip install matplotlib); rows are in $OUT"
README_ARGS=(--readme README.md)
[ "${KL_NO_README:-0}" = 1 ] && README_ARGS=()
say "report: scripts/report.py $OUT ${README_ARGS[*]}"
python3 scripts/report.py "$OUT" "${README_ARGS[@]}" || die "report.py failed"

say "finished in $(( $(date +%s) - KL_T0 )) s: $OUT/tables.md, $OUT/roofline.png$([ ${#README_ARGS[@]} -gt 0 ] && echo ', README.md')"
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'run_all.sh: FAILED: %s\n' "${FAILED[@]}" >&2
  exit 1
fi
