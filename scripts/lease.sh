#!/usr/bin/env bash
# scripts/lease.sh — a development run on a GPU machine in one command (outputs under $OUT or ./out).
#
#   scripts/lease.sh [build] [test] [bench:FAMILY[:FLAGS]]... [torch[:FLAGS]] [sanitize] [sass]
#
#   build              configure (Ninja, CMAKE_CUDA_ARCHITECTURES=${KL_ARCH:-90a}) and build all
#   test               ctest -L gpu and -L cpu, full output in logs/ctest.log
#   bench:F[:FLAGS]    build/bench_F --out results/F.jsonl FLAGS (FLAGS: '+' stands for a space)
#   torch[:FLAGS]      scripts/torch_baseline.py --out results/torch.jsonl FLAGS
#   sanitize           scripts/sanitize.sh (memcheck, racecheck, synccheck, initcheck over every rung)
#   sass               counts HGMMA / HMMA / LDSM in each bench binary (the tensor-core instructions)
#
# Writes under $OUT (or ./out): logs/*.log, results/*.jsonl, and a summary.txt. Every step runs
# even if an earlier one failed (so one broken family does not hide the others); the exit code is
# the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-$PWD/out}
mkdir -p "$O/logs" "$O/results"
B=${KL_BUILD:-build}
fails=0
say() { echo "== $*" | tee -a "$O/summary.txt"; }
step() {  # step NAME CMD...: runs CMD, logs to logs/NAME.log, records pass/fail and time
  local name=$1; shift
  local t0=$(date +%s)
  "$@" > "$O/logs/$name.log" 2>&1
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then say "PASS $name (${dt}s)"; else say "FAIL $name rc=$rc (${dt}s)"; fails=$((fails+1)); tail -25 "$O/logs/$name.log" | sed 's/^/   | /' | tee -a "$O/summary.txt"; fi
  return $rc
}
export KL_GIT_COMMIT=${KL_GIT_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
for s in "$@"; do
  case "$s" in
    build)
      step configure cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${KL_ARCH:-90a}"
      step build ninja -C "$B" -k 0 -j"$(nproc)"
      grep -E "warning|error" "$O/logs/build.log" | grep -vE "^\s*$" | sort | uniq | head -40 > "$O/logs/build_warnings.txt"
      ;;
    test)
      step ctest ctest --test-dir "$B" --output-on-failure -j1 --timeout 300
      grep -E "tests passed|Skipped|Failed|\*\*\*" "$O/logs/ctest.log" | tail -40 | tee -a "$O/summary.txt" ;;
    bench:*)
      rest=${s#bench:}; fam=${rest%%:*}; flags=""
      [ "$rest" != "$fam" ] && flags=${rest#*:}
      flags=${flags//+/ }
      # shellcheck disable=SC2086
      step "bench_$fam" "$B/bench_$fam" --out "$O/results/$fam.jsonl" $flags
      grep -E "FAILED|skip|error" "$O/logs/bench_$fam.log" | head -20 | sed 's/^/   . /' | tee -a "$O/summary.txt"
      ;;
    torch*)
      flags=${s#torch}; flags=${flags#:}; flags=${flags//+/ }
      # shellcheck disable=SC2086
      step torch_baseline python3 scripts/torch_baseline.py --out "$O/results/torch.jsonl" $flags ;;
    sanitize)
      step sanitize env KL_BUILD="$B" SANITIZE_OUT="$O/logs/sanitizer.txt" scripts/sanitize.sh ;;
    sass)
      for f in "$B"/bench_*; do
        [ -x "$f" ] || continue
        echo "$(basename "$f"): $(cuobjdump --dump-sass "$f" 2>/dev/null | grep -oE '\b(HGMMA|HMMA|LDSM|UTMALDG|UTMASTG)\b' | sort | uniq -c | tr '\n' ' ')"
      done > "$O/logs/sass.txt" 2>&1; cat "$O/logs/sass.txt" | tee -a "$O/summary.txt" ;;
    *) echo "lease.sh: unknown step '$s'" >&2; exit 2 ;;
  esac
done
say "failed steps: $fails"
exit $fails
