#!/usr/bin/env bash
# scripts/sanitize.sh — compute-sanitizer memcheck, racecheck and synccheck over every rung of every
# bench at small shapes (one validation launch and one timed launch per rung).
#
#   scripts/sanitize.sh                  every bench, the three tools
#   KL_TOOLS=memcheck scripts/sanitize.sh bench_gemm_bf16      one tool, one bench
#
# Writes results/<device>/sanitizer.txt (errors per tool and bench; the file to commit) and the
# full logs under $BUILD/sanitizer/. Exits 1 if any tool reported an error or a bench failed.
# Environment: KL_BUILD_DIR or KL_BUILD (build), KL_ARCH, KL_JOBS, KL_RESULTS_DIR, SANITIZE_OUT
# (summary path; default results/<device>/sanitizer.txt), KL_TOOLS
# ("memcheck racecheck synccheck"), KL_SANITIZER (path of compute-sanitizer), KL_SAN_TIMEOUT
# (seconds per tool and bench, default 600).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
KL_SCRIPT=sanitize
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

kl_require_gpu
OUT="${KL_RESULTS_DIR:-results/$SLUG}"
BUILD="${KL_BUILD_DIR:-${KL_BUILD:-build}}"
JOBS="${KL_JOBS:-$(nproc)}"
TOOLS="${KL_TOOLS:-memcheck racecheck synccheck}"
SAN_TIMEOUT="${KL_SAN_TIMEOUT:-600}"  # seconds per tool and bench; a hang counts as a failure (exit 124)
SAN="${KL_SANITIZER:-$(command -v compute-sanitizer || true)}"
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if [ -z "$SAN" ] && [ -x "$c" ]; then SAN="$c"; fi
done
[ -n "$SAN" ] || die "compute-sanitizer not found (it ships with the CUDA toolkit; set KL_SANITIZER)"
mkdir -p "$OUT"
kl_build
LOGS="$BUILD/sanitizer"
mkdir -p "$LOGS"

# Small shapes per family (named dims), chosen so every rung's supports() accepts at least one,
# including the odd/unaligned path, the split-K / Stream-K and split-KV paths and GQA.
shapes_for() {
  case "$1" in
    rmsnorm | swiglu | softmax)
      echo "--dtype f32,bf16 --shape rows=64,cols=4096 --shape rows=33,cols=1000" ;;
    sgemm)  # 256x256 takes every tile's divisibility path; K kept short (racecheck is ~1000x slower)
      # except K=288: 4.5 of rung 15's 64-deep tiles, so its 2-stage ring wraps (and rung 14's 3-stage)
      echo "--dtype f32 --shape M=256,N=256,K=64 --shape M=130,N=72,K=96 --shape M=256,N=128,K=288" ;;
    gemm_bf16)  # M=16 with K=1024 reaches the decode and split-K paths
      echo "--dtype bf16 --shape M=256,N=256,K=256 --shape M=16,N=512,K=1024 --shape M=130,N=72,K=96" ;;
    attention)
      echo "--dtype bf16 --shape B=1,Hq=4,Hkv=4,Sq=256,Skv=256,D=128,causal=0" \
           "--shape B=1,Hq=4,Hkv=4,Sq=256,Skv=256,D=128,causal=1" \
           "--shape B=1,Hq=4,Hkv=2,Sq=192,Skv=320,D=64,causal=1" \
           "--shape B=2,Hq=4,Hkv=1,Sq=1,Skv=600,D=128,causal=0" ;;
    peak) echo "--quick" ;;
    *) echo "--quick" ;;
  esac
}

BENCHES=()
if [ $# -gt 0 ]; then
  for b in "$@"; do BENCHES+=("$BUILD/$(basename "$b")"); done
else
  for b in "$BUILD"/bench_*; do
    if [ -f "$b" ] && [ -x "$b" ]; then BENCHES+=("$b"); fi
  done
fi
[ ${#BENCHES[@]} -gt 0 ] || die "no bench binaries in $BUILD"

SUMMARY="${SANITIZE_OUT:-$OUT/sanitizer.txt}"
mkdir -p "$(dirname "$SUMMARY")"
TMP="$SUMMARY.tmp"
{
  echo "# compute-sanitizer sweep (scripts/sanitize.sh)"
  echo "# $GPU_NAME, driver $DRIVER, $("$SAN" --version 2>/dev/null | grep -i version | head -n1)"
  echo "# commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# every rung (--variant all) at small shapes, --iters 1 --warmup 0; logs in $LOGS/"
  printf '%-10s %-18s %7s %6s %6s %5s %5s  %s\n' tool bench errors exit secs rows skips args
} >"$TMP"

TOTAL=0
BAD=()
export KL_NO_RAMP=1  # the 300 ms clock ramp is pointless under a sanitizer (honoured if the harness reads it)
for tool in $TOOLS; do
  for b in "${BENCHES[@]}"; do
    name="$(basename "$b")"
    fam="${name#bench_}"
    read -r -a args <<<"$(shapes_for "$fam")"
    if [ "$fam" != peak ]; then args+=(--variant all); fi
    args+=(--iters 1 --warmup 0 --seed 1)
    log="$LOGS/$tool-$name.log"
    rows="$LOGS/$tool-$name.jsonl"
    : >"$rows"
    say "$tool $name ${args[*]}"
    t=$(date +%s)
    timeout -k 5 "$SAN_TIMEOUT" "$SAN" --tool "$tool" --error-exitcode 99 --print-limit 100 \
      "$b" "${args[@]}" --out "$rows" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - t ))
    # "========= ERROR SUMMARY: 3 errors"; racecheck also prints hazards in its own summary.
    errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log" | tail -n1)
    # racecheck prints "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)" instead.
    if [ -z "$errs" ]; then
      errs=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$log" | tail -n1)
    fi
    if [ -z "$errs" ]; then errs="?"; fi
    nrows=$(grep -c . "$rows" 2>/dev/null || true)
    skips=$(grep -ci 'skip' "$log" || true)
    printf '%-10s %-18s %7s %6s %6s %5s %5s  %s\n' "$tool" "$name" "$errs" "$rc" "$secs" "$nrows" "$skips" \
      "${args[*]}" >>"$TMP"
    if [ "$errs" != 0 ] || [ $rc -ne 0 ]; then
      BAD+=("$tool $name: errors=$errs exit=$rc (log $log)")
      say "$tool $name: errors=$errs exit=$rc — see $log"
    fi
    if [ "$errs" != "?" ]; then TOTAL=$((TOTAL + errs)); fi
  done
done
{
  echo "total errors: $TOTAL"
  if [ ${#BAD[@]} -gt 0 ]; then printf 'not clean: %s\n' "${BAD[@]}"; else echo "clean: every tool, every bench"; fi
} >>"$TMP"
mv "$TMP" "$SUMMARY"
cat "$SUMMARY"
say "wrote $SUMMARY"
[ ${#BAD[@]} -eq 0 ]
