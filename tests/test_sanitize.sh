#!/usr/bin/env bash
# tests/test_sanitize.sh — scripts/sanitize.sh's bookkeeping without a GPU: stand-ins for nvidia-smi,
# compute-sanitizer and two benches. A clean sweep must say "clean" and list every rung of every
# process in order; a bench that leaves a rung without a validated row, a sanitizer that reports
# errors and a bench that exits non-zero must each fail the sweep, named.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/build"
cat >"$T/bin/nvidia-smi" <<'S'
#!/bin/bash
case "$*" in *name*) echo "NVIDIA H200" ;; *driver_version*) echo "580.0" ;; *compute_cap*) echo "9.0" ;; esac
S
# compute-sanitizer --tool T --error-exitcode 99 --print-limit 100 BENCH ARGS...: runs the bench; it
# reports 2 errors under the tool named by $STUB_ERRORS_TOOL.
cat >"$T/bin/compute-sanitizer" <<'S'
#!/bin/bash
if [ "$1" = --version ]; then echo "Version 0 (stand-in)"; exit 0; fi
tool="$2"; shift 6
"$@"; rc=$?
if [ "$tool" = "${STUB_ERRORS_TOOL:-}" ]; then echo "========= ERROR SUMMARY: 2 errors"; exit 99; fi
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
S
# bench_a: rungs 00 and 01 and the entry point, those that --variant names ("all", or a comma list
# of numbers and "auto"; each process's list goes to variants.txt beside its rows); $STUB_SKIP_RUNG
# leaves that rung without a row, $STUB_EXIT makes it exit with that status.
for fam in a b; do
  cat >"$T/build/bench_$fam" <<S
#!/bin/bash
if [ "\$1" = --list ]; then
  printf '$fam rungs\n  rung parent name change\n  00   --     naive  the first\n  01   00     fast   the second\n'
  exit 0
fi
out=""; want="all"
while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out="\$2"; [ "\$1" = --variant ] && want="\$2"; shift; done
echo "\$want" >>"\$(dirname "\$out")/variants.txt"
for v in 0 1 -1; do
  tok="\$v"; [ "\$v" = -1 ] && tok=auto
  case ",\$want," in *,all,* | *,"\$tok",*) ;; *) continue ;; esac
  [ "$fam" = a ] && [ "\$v" = "\${STUB_SKIP_RUNG:-x}" ] && continue
  echo "{\"impl\":\"kl\",\"validated\":true,\"variant\":\$v,\"variant_name\":\"r\$v\",\"op\":\"$fam\",\"dtype\":\"bf16\",\"shape_str\":\"n=1\",\"notes\":{\"picked\":\"01\"}}" >>"\$out"
done
[ "$fam" = a ] && exit \${STUB_EXIT:-0}
exit 0
S
done
chmod +x "$T/bin/"* "$T/build/"*

pass=0 fail=0
check() {  # check NAME CONDITION-EXIT-STATUS
  if [ "$2" = 0 ]; then pass=$((pass + 1)); echo "PASS  $1"; else fail=$((fail + 1)); echo "FAIL  $1"; fi
}
sweep() {  # sweep [VAR=VALUE ...]: runs sanitize.sh with the stand-ins; summary in $T/sum.txt
  env "$@" PATH="$T/bin:$PATH" KL_NO_BUILD=1 KL_BUILD_DIR="$T/build" SANITIZE_OUT="$T/sum.txt" \
    KL_SAN_JOBS=3 "$ROOT/scripts/sanitize.sh" >"$T/out.txt" 2>&1
}

sweep; rc=$?
check "clean sweep exits 0" $([ $rc = 0 ]; echo $?)
check "clean sweep says clean" $(grep -q '^clean: every tool' "$T/sum.txt"; echo $?)
check "4 tools x 2 benches x 3 rows listed" $([ "$(grep -c '^[a-z]*check ' "$T/sum.txt")" = 24 ]; echo $?)
order="$(sed -n 's/^#   \([a-z]*check\) *\(bench_[a-z]*\).*/\1 \2/p' "$T/sum.txt" | tr '\n' ' ')"
check "processes listed in tool, bench order" $([ "$order" = "memcheck bench_a memcheck bench_b racecheck bench_a racecheck bench_b synccheck bench_a synccheck bench_b initcheck bench_a initcheck bench_b " ]; echo $?)

rm -f "$T/build/sanitizer/variants.txt"
sweep KL_TOOLS=racecheck KL_SAN_RUNGS=1; rc=$?
check "racecheck split one rung a process: clean" $([ $rc = 0 ] && grep -q '^clean: every tool' "$T/sum.txt"; echo $?)
check "  ... 2 processes per bench, every row listed once" $([ "$(grep -c '^#   racecheck' "$T/sum.txt")" = 4 ] &&
  [ "$(grep -c '^racecheck ' "$T/sum.txt")" = 6 ]; echo $?)
check "  ... the entry point with the first part" $([ "$(sort "$T/build/sanitizer/variants.txt" | tr '\n' ' ')" = "1 1 auto,0 auto,0 " ]; echo $?)
sweep KL_TOOLS=racecheck KL_SAN_RUNGS=1 STUB_SKIP_RUNG=1; rc=$?
check "  ... a rung without a row still fails the sweep, named once" $([ $rc = 1 ] &&
  [ "$(grep -c 'NOT CLEAN: racecheck bench_a: a rung 01 fast: no validated row' "$T/sum.txt")" = 1 ]; echo $?)
sweep KL_SAN_RUNGS=0; rc=$?
check "KL_SAN_RUNGS=0 refused" $([ $rc != 0 ] && grep -q 'KL_SAN_RUNGS must be a positive number' "$T/out.txt"; echo $?)

sweep STUB_SKIP_RUNG=1; rc=$?
check "a rung without a row fails the sweep" $([ $rc = 1 ]; echo $?)
check "  ... named, under every tool" $([ "$(grep -c 'NOT CLEAN: [a-z]*check bench_a: a rung 01 fast: no validated row' "$T/sum.txt")" = 4 ]; echo $?)

sweep STUB_ERRORS_TOOL=racecheck; rc=$?
check "sanitizer errors fail the sweep" $([ $rc = 1 ]; echo $?)
check "  ... counted (2 per racecheck process)" $(grep -q '^total errors: 4$' "$T/sum.txt"; echo $?)
check "  ... named per process" $([ "$(grep -c 'NOT CLEAN: racecheck bench_[ab]: sanitizer errors' "$T/sum.txt")" = 2 ]; echo $?)

sweep STUB_EXIT=3; rc=$?
check "a bench that fails its validation fails the sweep" $([ $rc = 1 ]; echo $?)
check "  ... named with its exit status" $(grep -q 'NOT CLEAN: memcheck bench_a: exit 3' "$T/sum.txt"; echo $?)

echo "$pass passed, $fail failed"
[ $fail = 0 ]
