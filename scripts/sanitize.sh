#!/usr/bin/env bash
# scripts/sanitize.sh — compute-sanitizer memcheck, racecheck, synccheck and initcheck over every rung
# of every bench, on small shapes that every rung accepts at least once (one validation launch and
# one timed launch per rung, shape and dtype).
#
#   scripts/sanitize.sh                                  every bench, the four tools
#   KL_TOOLS=memcheck scripts/sanitize.sh bench_gemm_bf16   one tool, one bench
#   scripts/sanitize.sh --dry-run                        the plan (commands, timeouts, rungs); no GPU
#
# One process per tool and bench runs every rung (--variant all) on that family's shapes; racecheck
# splits a bench's rungs over several processes (KL_SAN_RUNGS a process). After them, the bench's
# JSON rows are checked: every rung that `bench_<family> --list` names (and the entry point, "auto")
# must have at least one validated row, else the sweep fails naming the rung. A process that hangs
# past its timeout, exits non-zero (a validation failed, or a sanitizer error: --error-exitcode 99)
# or leaves a rung without a row fails the sweep.
#
# Writes results/<device>/sanitizer.txt (the file to commit): a header (GPU, driver, sanitizer
# version, commit, date), then one line per tool x rung x shape with the error count of the process
# that ran it, a total and "clean" or the failures; the full logs and rows go to $BUILD/sanitizer/.
# Exits 1 on any error, failure or missing rung.
# Environment: KL_BUILD_DIR or KL_BUILD (build dir, default build), KL_NO_BUILD=1 (use it as built),
# KL_ARCH, KL_JOBS, KL_RESULTS_DIR, SANITIZE_OUT (summary path), KL_TOOLS ("memcheck racecheck
# synccheck initcheck"), KL_SANITIZER (path of compute-sanitizer), KL_SAN_TIMEOUT (seconds per tool
# and process; default 600 for racecheck, 240 for the others), KL_SAN_JOBS (processes at once, 4),
# KL_SAN_RUNGS (rungs per racecheck process, 6).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
KL_SCRIPT=sanitize
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

DRY=0
NAMES=()
for a in "$@"; do
  case "$a" in
    --dry-run) DRY=1 ;;
    -h | --help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$a' (see --help)" ;;
    *) NAMES+=("$(basename "$a")") ;;
  esac
done

BUILD="${KL_BUILD_DIR:-${KL_BUILD:-build}}"
JOBS="${KL_JOBS:-$(nproc)}"
TOOLS="${KL_TOOLS:-memcheck racecheck synccheck initcheck}"
for tool in $TOOLS; do
  case "$tool" in
    memcheck | racecheck | synccheck | initcheck) ;;
    *) die "KL_TOOLS: unknown tool '$tool' (memcheck, racecheck, synccheck, initcheck)" ;;
  esac
done
if [ -n "${KL_SAN_TIMEOUT:-}" ]; then
  case "$KL_SAN_TIMEOUT" in '' | *[!0-9]*) die "KL_SAN_TIMEOUT must be a number of seconds" ;; esac
fi
case "${KL_SAN_RUNGS:-6}" in '' | *[!0-9]* | 0) die "KL_SAN_RUNGS must be a positive number" ;; esac
# Seconds per tool and process; a hang counts as a failure. racecheck is by far the slowest tool.
timeout_for() {
  if [ -n "${KL_SAN_TIMEOUT:-}" ]; then echo "$KL_SAN_TIMEOUT"
  elif [ "$1" = racecheck ]; then echo 600
  else echo 240
  fi
}

# Shapes per family (named dims, as the bench parses them), chosen from the rungs' supports() so that
# every rung accepts at least one of them on an H200 (132 SMs):
#   rmsnorm  rows=700: >= 4 x SMs aligned rows for the persistent rungs 06 / 07 and fused 04;
#            cols=999: odd rows (the scalar paths; the vector rungs 02 / 03 refuse it); 64 x 4096:
#            few rows, split over a cluster (05 / 08, fused 03 / 05).
#   softmax  rows=300,cols=4096: >= 2 x SMs rows of 128..512 threads (rung 06); rows=8,cols=8192:
#            the 256-thread bf16 class of rung 08; 64 x 4096: a row split over a cluster (rung 05);
#            33 x 999: odd rows.
#   rope     both ops (the tokens layout: rungs 00, 01; the attention layout: 00, 02): a prefill of
#            2 sequences of 33 tokens into caches of 40 rows (GQA 4, D 128) and a decode step of 3
#            sequences (MHA, D 64).
#   sgemm    256 x 256 takes every tile's divisibility path; K kept short (racecheck) except K=288:
#            4.5 of rung 15's 64-deep tiles, so its 2-stage ring wraps (and rung 14's 3-stage).
#   gemm_bf16  M=16 with K=1024 reaches the decode and split-K paths; 130 x 72 x 96 the ragged tiles.
#   layer    a prefill of 96 tokens (more than 64: the prefill kernels of rungs 02, 03) and a decode step of 2
#            (its whole-K kernel), at hidden 256.
#   attention  square causal and not, D=64 GQA 2 with Sq < Skv, a light decode step (B=2, Hq=4,
#            Hkv=1, Skv=600: 10 key tiles split into pieces, a ragged last tile, GQA 4), and 2 x 136
#            one-tile heads: more items than persistent CTAs, so CTAs run two or more items (rungs
#            08, 12, 14 with one CTA per SM, 13 and 15 with two).
shapes_for() {
  case "$1" in
    rmsnorm)
      echo "--dtype f32,bf16 --shape rows=64,cols=4096 --shape rows=33,cols=999 --shape rows=700,cols=1000" ;;
    swiglu)
      echo "--dtype f32,bf16 --shape rows=64,cols=4096 --shape rows=33,cols=999" ;;
    softmax)
      echo "--dtype f32,bf16 --shape rows=64,cols=4096 --shape rows=33,cols=999" \
           "--shape rows=300,cols=4096 --shape rows=8,cols=8192" ;;
    rope)
      echo "--shape B=2,S=33,Hq=8,Hkv=2,D=128,L=40 --shape B=3,S=1,Hq=4,Hkv=4,D=64,L=17" ;;
    layer)
      echo "--shape B=1,S=96,L=96,hidden=256,Hq=4,Hkv=2,D=64,mlp=512" \
           "--shape B=2,S=1,L=96,hidden=256,Hq=4,Hkv=2,D=64,mlp=512" ;;
    sgemm)
      echo "--dtype f32 --shape M=256,N=256,K=64 --shape M=130,N=72,K=96 --shape M=256,N=128,K=288" \
           "--shape M=67,N=129,K=600" ;;
    gemm_bf16)
      echo "--dtype bf16 --shape M=256,N=256,K=256 --shape M=16,N=512,K=1024 --shape M=130,N=72,K=96" ;;
    attention)
      echo "--dtype bf16 --shape B=1,Hq=4,Hkv=4,Sq=256,Skv=256,D=128,causal=0" \
           "--shape B=1,Hq=4,Hkv=4,Sq=256,Skv=256,D=128,causal=1" \
           "--shape B=1,Hq=4,Hkv=2,Sq=192,Skv=320,D=64,causal=1" \
           "--shape B=2,Hq=4,Hkv=1,Sq=1,Skv=600,D=128,causal=0" \
           "--shape B=2,Hq=136,Hkv=136,Sq=64,Skv=64,D=64,causal=0" ;;
    *) # bench_peak (no rung table) and anything else; racecheck (about 1000x slower) would take
       # hours over the peak loops, so it checks the read kernels and the empty launch alone.
      if [ "${2:-}" = racecheck ]; then echo "--shape bytes=1048576"; else echo "--quick"; fi ;;
  esac
}
# The bench arguments: shapes, one timed launch, one input copy (no rotation sets: the sanitizers
# track every byte), a fixed seed. The rungs come from the process's part (parts_of).
args_for() {  # args_for FAMILY TOOL
  local fam="$1"
  shapes_for "$fam" "${2:-}"
  if [ "$fam" != peak ]; then echo "--no-rotate"; fi
  echo "--iters 1 --warmup 0 --seed 1"
}

# The processes of one tool over one bench, one --variant list a line ("-": a bench without rungs).
# racecheck runs about 1000x slower than the bench, so a bench with one rung table is split into
# processes of at most KL_SAN_RUNGS rungs (default 6; the first also runs the entry point) that run
# side by side; the other tools run every rung in one process ("all").
parts_of() {  # parts_of TOOL BENCH_PATH
  local tool="$1" b="$2" per="${KL_SAN_RUNGS:-6}"
  if [ "$(basename "$b")" = bench_peak ]; then echo "-"; return; fi
  local listing tables
  listing="$(rungs_of "$b")"
  tables=$(awk '{print $1}' <<<"$listing" | sort -u | grep -c .)
  if [ "$tool" != racecheck ] || [ "$tables" != 1 ]; then echo all; return; fi
  awk -v per="$per" '{ i = int((NR - 1) / per); n = $2 + 0
                       if ((NR - 1) % per) line = line "," n; else line = (i ? "" : "auto,") n
                       if ((NR - 1) % per == per - 1) print line; }
                     END { if ((NR - 1) % per != per - 1) print line }' <<<"$listing"
}

# The benches: the names given, else every bench_* of the build (or of bench/*.cu in a dry run
# before any build).
bench_list() {
  if [ ${#NAMES[@]} -gt 0 ]; then
    printf '%s\n' "${NAMES[@]}"
  elif compgen -G "$BUILD/bench_*" >/dev/null; then
    for b in "$BUILD"/bench_*; do
      if [ -f "$b" ] && [ -x "$b" ]; then basename "$b"; fi
    done
  else
    for s in bench/bench_*.cu; do basename "$s" .cu; done
  fi
}

# `bench --list` (number, parent, name, change) as "table number name" lines (table: the first
# word of a table's title line; bench_peak prints no rung lines).
rungs_of() {
  "$1" --list 2>/dev/null | awk '
    /^[^ ]/ { table = $1; next }
    /^  [0-9]+  / { print table, $1, $3 }'
}

SAN="${KL_SANITIZER:-$(command -v compute-sanitizer || true)}"
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if [ -z "$SAN" ] && [ -x "$c" ]; then SAN="$c"; fi
done

if [ "$DRY" = 1 ]; then
  say "dry run: build $BUILD, tools: $TOOLS, sanitizer: ${SAN:-not found}"
  mapfile -t BL < <(bench_list)
  for name in "${BL[@]}"; do
    fam="${name#bench_}"
    if [ -x "$BUILD/$name" ]; then
      n=$(rungs_of "$BUILD/$name" | wc -l)
      say "$name: $n rungs to cover ($(rungs_of "$BUILD/$name" | awk '{printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $2}'))"
    else
      say "$name: not built yet (its rungs come from --list after the build)"
    fi
    for tool in $TOOLS; do
      if [ -x "$BUILD/$name" ]; then mapfile -t PARTS < <(parts_of "$tool" "$BUILD/$name"); else PARTS=(all); fi
      for i in "${!PARTS[@]}"; do
        v=""; [ "${PARTS[$i]}" != - ] && v="--variant ${PARTS[$i]}"
        # shellcheck disable=SC2046
        echo "  timeout $(timeout_for "$tool") compute-sanitizer --tool $tool --error-exitcode 99 $BUILD/$name" \
          $(args_for "$fam" "$tool") $v "--out $BUILD/sanitizer/$tool-$name.p$i.jsonl"
      done
    done
  done
  exit 0
fi

kl_require_gpu
[ -n "$SAN" ] || die "compute-sanitizer not found (it ships with the CUDA toolkit; set KL_SANITIZER)"
command -v python3 >/dev/null 2>&1 || die "python3 not found (it reads the benches' JSON rows)"
OUT="${KL_RESULTS_DIR:-results/$SLUG}"
mkdir -p "$OUT"
if [ "${KL_NO_BUILD:-0}" = 1 ]; then say "KL_NO_BUILD=1: using $BUILD as built"; else kl_build; fi
LOGS="$BUILD/sanitizer"
mkdir -p "$LOGS"
mapfile -t BL < <(bench_list)
[ ${#BL[@]} -gt 0 ] || die "no bench binaries in $BUILD"
for name in "${BL[@]}"; do [ -x "$BUILD/$name" ] || die "no bench binary $BUILD/$name"; done

SUMMARY="${SANITIZE_OUT:-$OUT/sanitizer.txt}"
mkdir -p "$(dirname "$SUMMARY")"
TMP="$SUMMARY.tmp"
COMMIT="$(scripts/commit_id.sh --full)"
SCOPE="every bench"  # or the benches named on the command line
if [ ${#NAMES[@]} -gt 0 ]; then SCOPE="${NAMES[*]}"; fi
{
  echo "# compute-sanitizer sweep (scripts/sanitize.sh): every rung of $SCOPE, tools: $TOOLS"
  echo "# GPU: $GPU_NAME, driver $DRIVER"
  echo "# sanitizer: $("$SAN" --version 2>/dev/null | grep -i version | head -n1)"
  echo "# commit: $COMMIT"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# One process per tool and bench runs every rung (--variant all) and the entry point (auto) on"
  echo "# its family's shapes; racecheck splits the rungs of a one-table bench over several processes"
  echo "# (the arguments of each process are listed at the end). compute-sanitizer"
  echo "# counts errors per process: each line carries the count of the process that ran it (a non-zero"
  echo "# count marks every line of that process; its log names the kernel). Logs and rows: $LOGS/"
  echo "#"
  printf '%-10s %-16s %-12s %-30s %-5s %-48s %s\n' tool bench op rung dtype shape errors
} >"$TMP"

export KL_NO_RAMP=1  # the harness skips its clock ramp: pointless under a sanitizer

# One process: TOOL over bench NAME, part I (its --variant list SPEC, "-" for none). Writes, under
# $LOGS, <tool>-<name>.p<I>.jsonl (its rows), .log, .run (its line in the process list), .bad (its
# failures, one a line) and .errs (its error count, "?" when the sanitizer printed none).
sweep_one() {  # sweep_one TOOL NAME I SPEC
  local tool="$1" name="$2" i="$3" spec="$4"
  local b="$BUILD/$name" fam="${name#bench_}" stem="$LOGS/$1-$2.p$3"
  local log="$stem.log" rows="$stem.jsonl"
  local args to t rc secs errs nrows why
  read -r -a args <<<"$(args_for "$fam" "$tool" | tr '\n' ' ')"
  if [ "$spec" != - ]; then args+=(--variant "$spec"); fi
  : >"$rows"; : >"$stem.bad"
  to=$(timeout_for "$tool")
  say "$tool $name (timeout $to s): ${args[*]}"
  t=$(date +%s)
  timeout -k 10 "$to" "$SAN" --tool "$tool" --error-exitcode 99 --print-limit 100 \
    "$b" "${args[@]}" --out "$rows" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t ))
  # "========= ERROR SUMMARY: 3 errors"; racecheck prints "RACECHECK SUMMARY: H hazards displayed
  # (E errors, W warnings)" instead.
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log" | tail -n1)
  if [ -z "$errs" ]; then
    errs=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$log" | tail -n1)
  fi
  if [ -z "$errs" ]; then errs="?"; fi  # no summary: the process died, or the log is not ours
  echo "$errs" >"$stem.errs"
  nrows=$(grep -c . "$rows" 2>/dev/null || true)
  printf '%-10s %-16s errors %-3s exit %-3s %5ss %4s rows  %s\n' "$tool" "$name" "$errs" "$rc" \
    "$secs" "$nrows" "${args[*]}" >"$stem.run"
  why=""
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then why="timed out after $to s (a hang counts as a failure)"
  elif [ $rc -eq 99 ]; then why="sanitizer errors"
  elif [ $rc -ne 0 ]; then why="exit $rc (a validation failed or the bench stopped)"
  elif [ "$errs" != 0 ]; then why="errors=$errs"
  fi
  if [ -n "$why" ]; then
    echo "$tool $name: $why (log $log)" >>"$stem.bad"
    say "$tool $name: $why — see $log"
  fi
  say "$tool $name: done in $secs s, errors $errs"
}

# After the processes of TOOL over bench NAME: one summary line per validated row (rung x dtype x
# shape, with the error count of the process that ran it) in <tool>-<name>.lines; rungs that --list
# names but no part's validated row covers go to <tool>-<name>.bad.
cover() {  # cover TOOL NAME NPARTS
  local tool="$1" name="$2" n="$3" stem="$LOGS/$1-$2" list="$LOGS/$1-$2.rungs" missing pyrc i
  : >"$stem.lines"; : >"$stem.bad"
  if ! rungs_of "$BUILD/$name" >"$list"; then
    echo "$tool $name: '$name --list' failed" >>"$stem.bad"
  elif [ "$name" != bench_peak ] && [ ! -s "$list" ]; then
    echo "$tool $name: '$name --list' names no rung" >>"$stem.bad"
  fi
  local parts=()
  for ((i = 0; i < n; i++)); do parts+=("$stem.p$i.jsonl" "$(cat "$stem.p$i.errs" 2>/dev/null || echo "?")"); done
  missing=$(python3 - "$list" "$tool" "$name" "${parts[@]}" 2>&1 >>"$stem.lines" <<'PY'
import json, sys
listing, tool, bench = sys.argv[1:4]
parts = sys.argv[4:]
tables = {}  # table -> {number: name}
for line in open(listing):
    t, num, nm = line.split()
    tables.setdefault(t, {})[int(num)] = nm
seen = set()
for rows_path, errs in zip(parts[0::2], parts[1::2]):
    for line in open(rows_path):
        line = line.strip()
        if not line:
            continue
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line cut short by a killed process
        if r.get("impl") != "kl" or not r.get("validated"):
            continue
        # One table: every row is its (attention's rows are op "attention" or "decode"); several
        # (rmsnorm, add_rmsnorm): the row's op names it.
        t = next(iter(tables)) if len(tables) == 1 else r.get("op")
        v = r.get("variant", -1)
        if v >= 0:
            seen.add((t, v))
            rung = "%02d %s" % (v, r.get("variant_name", ""))
        else:
            seen.add((t, "auto"))
            rung = "auto -> %s" % r.get("notes", {}).get("picked", "?")
        print("%-10s %-16s %-12s %-30s %-5s %-48s %s" % (tool, bench, r.get("op", ""), rung,
              r.get("dtype", ""), r.get("shape_str", ""), errs))
for t, rungs in tables.items():
    for num, nm in sorted(rungs.items()):
        if (t, num) not in seen:
            print("%s rung %02d %s: no validated row" % (t, num, nm), file=sys.stderr)
    if (t, "auto") not in seen:
        print("%s auto (the entry point): no validated row" % t, file=sys.stderr)
PY
  )
  pyrc=$?
  if [ $pyrc -ne 0 ]; then missing="${missing:+$missing; }could not read the rows (python exit $pyrc)"; fi
  if [ -n "$missing" ]; then
    while IFS= read -r m; do echo "$tool $name: $m" >>"$stem.bad"; done <<<"$missing"
    say "$tool $name: rungs without a validated row:"
    printf '  %s\n' "$missing"
  fi
}

# The processes run KL_SAN_JOBS at a time (default 4: racecheck of the attention bench is most of
# the sweep's time, and the GPU has room for the others beside it); the summary lists them in order.
SAN_JOBS="${KL_SAN_JOBS:-4}"
case "$SAN_JOBS" in '' | *[!0-9]* | 0) die "KL_SAN_JOBS must be a positive number" ;; esac
declare -A NPARTS
for tool in $TOOLS; do
  for name in "${BL[@]}"; do
    mapfile -t PARTS < <(parts_of "$tool" "$BUILD/$name")
    [ ${#PARTS[@]} -gt 0 ] || PARTS=(all)  # --list failed: one process, and cover() names the failure
    NPARTS["$tool $name"]=${#PARTS[@]}
    for i in "${!PARTS[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "$SAN_JOBS" ]; do wait -n; done
      sweep_one "$tool" "$name" "$i" "${PARTS[$i]}" &
    done
  done
done
wait
TOTAL=0
BAD=()
RUNS=()
for tool in $TOOLS; do
  for name in "${BL[@]}"; do
    n=${NPARTS["$tool $name"]}
    cover "$tool" "$name" "$n"
    stem="$LOGS/$tool-$name"
    cat "$stem.lines" >>"$TMP"
    for ((i = 0; i < n; i++)); do
      RUNS+=("$(cat "$stem.p$i.run" 2>/dev/null || echo "$tool $name: no record (the process did not finish)")")
      while IFS= read -r m; do [ -n "$m" ] && BAD+=("$m"); done <"$stem.p$i.bad"
      errs="$(cat "$stem.p$i.errs" 2>/dev/null || echo "?")"
      if [ "$errs" != "?" ]; then TOTAL=$((TOTAL + errs)); fi
    done
    while IFS= read -r m; do [ -n "$m" ] && BAD+=("$m"); done <"$stem.bad"
  done
done
{
  echo "#"
  echo "# processes:"
  printf '#   %s\n' "${RUNS[@]}"
  echo "total errors: $TOTAL"
  if [ ${#BAD[@]} -gt 0 ]; then
    printf 'NOT CLEAN: %s\n' "${BAD[@]}"
  else
    echo "clean: every tool, every rung of $SCOPE, 0 errors"
  fi
} >>"$TMP"
mv "$TMP" "$SUMMARY"
grep -v '^[a-z]*check ' "$SUMMARY"
say "wrote $SUMMARY ($(grep -c '^[a-z]*check ' "$SUMMARY") rung x shape lines)"
[ ${#BAD[@]} -eq 0 ]
