#!/usr/bin/env bash
# scripts/run_all.sh — the README's bench command: every bench on its default shapes, the PyTorch
# baseline, the head to head, then the tables, the charts and (on the README's card) the README.
#
#   scripts/run_all.sh                 the full run into results/<device>/ (replacing the last one)
#   scripts/run_all.sh --no-h2h        everything but the head to head
#   scripts/run_all.sh --h2h-only      only the head to head (and the report), into the rows of an
#                                      earlier --no-h2h run of the same commit
#   scripts/run_all.sh --readme        rewrite README.md and the design notes' ladder tables even if the
#                                      run's card or folder is not the README's (results/<its card>)
#   scripts/run_all.sh --no-readme     never rewrite README.md
#
# Environment (all optional): KL_ARCH (CMAKE_CUDA_ARCHITECTURES; default this GPU's, e.g. 90a),
# KL_BUILD_DIR (build), KL_JOBS (nproc), KL_RESULTS_DIR (results/<device slug>; point development
# runs at an ignored folder such as out/), KL_BENCH_ARGS (extra flags for every family bench, e.g.
# "--quick"), KL_NO_TORCH=1 (no PyTorch rows).
#
# Writes into the results folder: <family>.jsonl, peak.jsonl, torch.jsonl, torch_kernels.json (the
# kernels PyTorch launches per row), binding/ (the PyTorch ops' per-call cost), h2h/, env.txt (what
# ran, where, how long), run_all.log (this script's whole output), tables.md, roofline.png and
# ladder_<family>.png; with the README, also the ladder tables of docs/<family>.md and the binding
# table of docs/api.md. Exits non-zero if any step failed (the later steps still run).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
KL_SCRIPT=run_all
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

H2H=1 BENCHES=1 README=auto
for a in "$@"; do
  case "$a" in
    --no-h2h) H2H=0 ;;
    --h2h-only) BENCHES=0 ;;
    --readme) README=yes ;;
    --no-readme) README=no ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_all.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
[ "${KL_NO_H2H:-0}" = 1 ] && H2H=0
[ "${KL_NO_README:-0}" = 1 ] && README=no
[ $BENCHES = 0 ] && [ $H2H = 0 ] && { echo "run_all.sh: --h2h-only and --no-h2h leave nothing to run" >&2; exit 2; }

# ---- set-up and the checks that must pass before minutes of benchmarking (matplotlib included)
scripts/setup.sh bench || exit $?
if ! command -v nvcc >/dev/null 2>&1; then export PATH="/usr/local/cuda/bin:$PATH"; fi
kl_require_gpu
OUT="${KL_RESULTS_DIR:-results/$SLUG}"
BUILD="${KL_BUILD_DIR:-${KL_BUILD:-build}}"
JOBS="${KL_JOBS:-$(nproc)}"
HAVE_TORCH=0
if [ "${KL_NO_TORCH:-0}" != 1 ] &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  HAVE_TORCH=1
fi

mkdir -p "$OUT"
if [ $BENCHES = 1 ]; then
  # The folder holds one run: the last run's outputs go (git keeps them).
  rm -rf "$OUT"/*.jsonl "$OUT"/*.png "$OUT"/tables.md "$OUT"/h2h "$OUT"/binding "$OUT"/torch_kernels.json
  exec > >(tee "$OUT/run_all.log") 2>&1
else
  [ -s "$OUT/env.txt" ] || die "--h2h-only adds to an earlier run in $OUT, and there is none (no env.txt)"
  exec > >(tee "$OUT/run_all_h2h.log") 2>&1
fi

# ---- the steps, counted up front so that progress reads "step i of N"
STEPS=(build)
FAMILY_BENCHES=()  # bench_<family> of every family, in name order (bench_peak runs first, alone)
if [ $BENCHES = 1 ]; then
  for b in bench/bench_*.cu; do
    n="$(basename "$b" .cu)"; [ "$n" = bench_peak ] || FAMILY_BENCHES+=("$n")
  done
  STEPS+=(bench_peak "${FAMILY_BENCHES[@]}")
  [ $HAVE_TORCH = 1 ] && STEPS+=(torch torch_kernels binding)
fi
[ $H2H = 1 ] && STEPS+=(h2h)
STEPS+=(report)
STEP=0
step() { STEP=$((STEP + 1)); say "step $STEP of ${#STEPS[@]}: $*"; }

say "GPU: $GPU_NAME (driver $DRIVER) -> $OUT"
FAILED=()

step "build"
T_BUILD=$(date +%s)
kl_build
BUILD_SECONDS=$(( $(date +%s) - T_BUILD ))

commit="$(scripts/commit_id.sh)"  # as the rows name it
if [ $BENCHES = 1 ]; then
  {
    echo "gpu=$GPU_NAME"
    echo "driver_version=$DRIVER"
    echo "nvcc=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n1)"
    echo "git_commit=$commit"
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "arch=${KL_ARCH:-$(kl_gpu_arch)}"
    [ $HAVE_TORCH = 1 ] && echo "torch=$(python3 -c 'import torch; print(torch.__version__)')"
    echo "build_seconds=$BUILD_SECONDS"
  } >"$OUT/env.txt"
else
  run_commit="$(sed -n 's/^git_commit=//p' "$OUT/env.txt")"
  [ "$run_commit" = "$commit" ] ||
    die "--h2h-only: $OUT holds a run of commit $run_commit, this tree is $commit (one run of one commit)"
fi

run_bench() {  # run_bench NAME FILE ARGS...
  local name="$1" file="$2"; shift 2
  step "$name -> $file"
  local t rc n
  t=$(date +%s)
  [ -x "$BUILD/$name" ] || { FAILED+=("$name (not built)"); say "$name was not built"; return; }
  "$BUILD/$name" "$@" --out "$file"
  rc=$?
  n=$(grep -c . "$file" 2>/dev/null || true)
  if [ $rc -ne 0 ]; then
    FAILED+=("$name (exit $rc)")
    say "$name FAILED (exit $rc) after $(( $(date +%s) - t )) s, $n rows kept"
  else
    say "$name done in $(( $(date +%s) - t )) s, $n rows"
  fi
}

if [ $BENCHES = 1 ]; then
  T_BENCH=$(date +%s)
  run_bench bench_peak "$OUT/peak.jsonl"
  for s in "${FAMILY_BENCHES[@]}"; do
    # shellcheck disable=SC2086
    run_bench "$s" "$OUT/${s#bench_}.jsonl" ${KL_BENCH_ARGS:-}
  done
  if [ $HAVE_TORCH = 1 ]; then
    step "PyTorch baseline -> $OUT/torch.jsonl"
    t=$(date +%s)
    if python3 scripts/torch_baseline.py --out "$OUT/torch.jsonl"; then
      say "PyTorch baseline done in $(( $(date +%s) - t )) s"
    else
      FAILED+=("torch_baseline.py (exit $?)")
    fi
    # What PyTorch runs at each shape (its library kernels), in a process of its own: the profiler
    # never runs beside a timed launch.
    step "PyTorch's kernels -> $OUT/torch_kernels.json"
    if python3 scripts/torch_baseline.py --kernels "$OUT/torch_kernels.json"; then
      say "PyTorch's kernels recorded"
    else
      FAILED+=("torch_baseline.py --kernels (exit $?)")
    fi
    # What a call of the PyTorch ops (python/kernel_ladder over this build's C API) costs.
    step "binding cost -> $OUT/binding/rows.jsonl"
    if KL_C_LIBRARY="$BUILD/libkernel_ladder_c.so" python3 scripts/binding_overhead.py --out "$OUT/binding/rows.jsonl"; then
      say "binding cost done"
    else
      FAILED+=("binding_overhead.py (exit $?)")
    fi
  elif [ "${KL_NO_TORCH:-0}" = 1 ]; then
    say "PyTorch baseline skipped (KL_NO_TORCH=1)"
  else
    say "PyTorch with CUDA not importable by python3: no PyTorch rows (install torch for the comparison)"
  fi
  echo "bench_seconds=$(( $(date +%s) - T_BENCH ))" >>"$OUT/env.txt"
fi

# ---- head to head: the comparison shapes, our rows and the libraries' interleaved round-robin
# (best round per row, spread of the rounds). The attention sets need PyTorch (its SDPA rows).
if [ $H2H = 1 ]; then
  H2H_SETS=gemm_bf16,sgemm
  [ $HAVE_TORCH = 1 ] && H2H_SETS=attention,gemm_bf16,sgemm,attention_d64
  H2H_ROUNDS=3
  case " ${KL_BENCH_ARGS:-} " in *" --quick "*) H2H_ROUNDS=1 ;; esac  # a smoke run: one round
  step "head to head ($H2H_SETS, $H2H_ROUNDS rounds) -> $OUT/h2h/"
  t=$(date +%s)
  if python3 scripts/h2h.py --build "$BUILD" --dir "$OUT/h2h" --set "$H2H_SETS" --rounds "$H2H_ROUNDS" >/dev/null; then
    say "head to head done in $(( $(date +%s) - t )) s: $OUT/h2h/table.md"
  else
    FAILED+=("h2h.py (exit $?)")
  fi
  sed -i '/^h2h_seconds=/d' "$OUT/env.txt"
  echo "h2h_seconds=$(( $(date +%s) - t ))" >>"$OUT/env.txt"
fi

# ---- tables, charts, README (only on the README's card, unless asked)
readme_device="$(sed -n 's/.*<!-- readme-device: \([a-z0-9-]*\) -->.*/\1/p' README.md 2>/dev/null | head -n1)"
REPORT_ARGS=()
if [ $README = yes ] || { [ $README = auto ] && [ "$readme_device" = "$SLUG" ] && [ "$OUT" = "results/$SLUG" ]; }; then
  REPORT_ARGS=(--readme README.md --docs docs)
elif [ $README = auto ]; then
  say "README.md and the design notes left alone: they show results/${readme_device:-?}/, this run is $OUT (--readme rewrites them)"
fi
step "report: scripts/report.py $OUT ${REPORT_ARGS[*]}"
python3 scripts/report.py "$OUT" "${REPORT_ARGS[@]}" || FAILED+=("report.py")

say "finished in $(( $(date +%s) - KL_T0 )) s: $OUT/tables.md, $OUT/*.png$([ ${#REPORT_ARGS[@]} -gt 0 ] && echo ', README.md')"
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'run_all.sh: FAILED: %s\n' "${FAILED[@]}" >&2
  exit 1
fi
