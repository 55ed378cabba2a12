#!/usr/bin/env bash
# tests/test_bench_cli.sh — every bench binary refuses bad input cleanly (CPU test, no GPU needed).
#
#   bash tests/test_bench_cli.sh BUILD_DIR            every BUILD_DIR/bench_* executable
#   bash tests/test_bench_cli.sh BIN [BIN ...]        the given bench binaries
#
# For each bench: --list and --help exit 0; malformed flags, an unknown --variant, malformed or
# unsupported --shape (zero dims, dims above 2^31 - 1, element caps, the family's own rules) and an
# unsupported --dtype exit 2 with a message on stderr, write no JSON row, and never crash or hang
# (signals and timeouts fail); so do the family flags (--op, --eps) given bad values, and shapes
# whose host buffers exceed the memory this machine has available (those cases run only where
# that is so). All of this must happen before any CUDA call, so it holds on a machine without a
# GPU. Prints "N passed, M failed"; exit 1 on failure.
set -u

TIMEOUT=${KL_CLI_TIMEOUT:-60}
pass=0
fail=0
bins=()
if [ $# -eq 1 ] && [ -d "$1" ]; then
  for b in "$1"/bench_*; do
    if [ -f "$b" ] && [ -x "$b" ]; then bins+=("$b"); fi
  done
else
  bins=("$@")
fi
if [ ${#bins[@]} -eq 0 ]; then
  echo "test_bench_cli.sh: no bench binaries found (args: $*); build first" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# expect BIN WANT_RC LABEL ARGS...   (WANT_RC 0: success with output on stdout; 2: refusal)
expect() {
  local bin="$1" want="$2" label="$3"
  shift 3
  local name rc
  name="$(basename "$bin")"
  timeout -k 5 "$TIMEOUT" "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  local why=""
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    why="hung (killed after ${TIMEOUT}s)"
  elif [ $rc -ge 128 ]; then
    why="crashed (signal $((rc - 128)))"
  elif [ $rc -ne "$want" ]; then
    why="exit $rc, want $want"
  elif [ "$want" -eq 0 ] && [ ! -s "$tmp/out" ]; then
    why="exit 0 but nothing on stdout"
  elif [ "$want" -ne 0 ] && [ ! -s "$tmp/err" ]; then
    why="exit $rc but no message on stderr"
  elif [ "$want" -ne 0 ] && grep -q '^{' "$tmp/out"; then
    why="wrote a JSON row although the input was refused"
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
    printf 'PASS  %-18s %-34s (%s)\n' "$name" "$label" "$(head -n1 "$tmp/err" | cut -c1-90)"
  else
    fail=$((fail + 1))
    printf 'FAIL  %-18s %-34s %s: %s %s\n' "$name" "$label" "$why" "$name" "$*"
    sed 's/^/        stderr: /' "$tmp/err" | head -n 8
  fi
}

# Host memory available now, in bytes (0 when unknown: the memory cases are then skipped).
avail_bytes=$(awk '/^MemAvailable:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo 2>/dev/null)
avail_bytes=${avail_bytes:-0}
skipped=0
# expect_no_host_memory NEED_BYTES BIN LABEL ARGS...: a refusal (exit 2) where NEED_BYTES exceed the
# available host memory; skipped where they do not (the bench would then go on to the device).
expect_no_host_memory() {
  local need="$1" bin="$2" label="$3"
  shift 3
  if [ "$avail_bytes" -gt 0 ] && awk -v n="$need" -v a="$avail_bytes" 'BEGIN { exit !(n > a) }'; then
    expect "$bin" 2 "$label" "$@"
  else
    skipped=$((skipped + 1))
    printf 'SKIP  %-18s %-34s (this machine has %s bytes available)\n' "$(basename "$bin")" "$label" "$avail_bytes"
  fi
}

for bin in "${bins[@]}"; do
  fam="$(basename "$bin")"
  fam="${fam#bench_}"
  expect "$bin" 0 "--list" --list
  expect "$bin" 0 "--help" --help
  expect "$bin" 2 "unknown flag" --no-such-flag
  expect "$bin" 2 "stray argument" stray
  expect "$bin" 2 "--iters not a number" --iters abc
  expect "$bin" 2 "--iters 0" --iters 0
  expect "$bin" 2 "--iters missing value" --iters
  expect "$bin" 2 "--warmup negative" --warmup -1
  expect "$bin" 2 "--dtype unknown" --dtype f64
  expect "$bin" 2 "--list with a value" --list=yes
  if [ "$fam" = peak ]; then
    # peak's only shape is bytes=N (the read floor): N a multiple of 16 in 16..2^34
    expect "$bin" 2 "--shape bytes not a multiple of 16" --shape bytes=17
    expect "$bin" 2 "--shape bytes too small" --shape bytes=0
    expect "$bin" 2 "--shape bytes too large" --shape bytes=34359738384
    expect "$bin" 2 "--shape unknown dim" --shape nope=3
    expect "$bin" 2 "--shape not a number" --shape abc
    expect "$bin" 2 "--variant (peak takes none)" --variant 0
    continue
  fi
  expect "$bin" 2 "--variant unknown" --variant no_such_rung
  expect "$bin" 2 "--variant number unknown" --variant 99
  expect "$bin" 2 "--shape not a number" --shape 12xabc
  expect "$bin" 2 "--shape unknown dim" --shape nope=3
  expect "$bin" 2 "--shape too many dims" --shape 1x2x3x4x5x6x7x8x9
  expect "$bin" 2 "--shape negative" --shape=-5
  expect "$bin" 2 "--shape missing value" --shape
  case "$fam" in
    gemm_bf16 | attention | rope | layer) expect "$bin" 2 "--dtype f32 unsupported" --dtype f32 ;;
    sgemm) expect "$bin" 2 "--dtype bf16 unsupported" --dtype bf16 ;;
  esac
  case "$fam" in
    sgemm)
      expect "$bin" 2 "--shape zero M" --shape 0x4x4
      expect "$bin" 2 "--shape zero K" --shape K=0,M=4,N=4
      expect "$bin" 2 "--shape M above 2^31-1" --shape 2147483648x1x1
      expect "$bin" 2 "--shape K above 2^31-1" --shape 1x1x2147483648
      expect_no_host_memory 137438953472 "$bin" "--shape host memory (128 GiB)" --shape 131072x131072x1
      ;;
    gemm_bf16)
      expect "$bin" 2 "--shape zero N" --shape 16x0x16
      expect "$bin" 2 "--shape zero M" --shape M=0,N=8,K=8
      expect "$bin" 2 "--shape N above 2^31-1" --shape 1x2147483648x8
      expect "$bin" 2 "--shape N not a multiple of 8" --shape 16x12x16
      expect "$bin" 2 "--shape K not a multiple of 8" --shape 16x16x12
      expect_no_host_memory 171798691840 "$bin" "--shape host memory (160 GiB)" --shape 131072x131072x8
      ;;
    rmsnorm | swiglu | softmax)
      expect "$bin" 2 "--shape zero rows" --shape 0x8
      expect "$bin" 2 "--shape zero cols" --shape cols=0,rows=8
      expect "$bin" 2 "--shape rows above 2^31-1" --shape 2147483648x1
      expect "$bin" 2 "--shape cols above 2^31-1" --shape 1x2147483648
      ;;
  esac
  case "$fam" in
    rmsnorm)
      expect "$bin" 2 "--shape above 2^33 elements" --shape 131072x131073
      # 2^33 elements: 144 GiB of host buffers for both ops
      expect_no_host_memory 154618822656 "$bin" "--shape host memory (144 GiB)" --shape 65536x131072
      expect "$bin" 2 "--op unknown" --op nope
      expect "$bin" 2 "--op missing value" --op
      expect "$bin" 2 "--eps trailing characters" --eps 1e-3foo
      expect "$bin" 2 "--eps inf" --eps inf
      expect "$bin" 2 "--eps nan" --eps nan
      expect "$bin" 2 "--eps negative" --eps -1e-6
      expect "$bin" 2 "--eps not a number" --eps abc
      expect "$bin" 2 "--eps beyond a float" --eps 1e39
      expect "$bin" 2 "--eps empty" --eps=
      ;;
    swiglu | softmax)
      expect "$bin" 2 "--shape above 2^34 elements" --shape 131072x262144
      # 2^34 elements: 224 GiB (softmax) or 256 GiB (swiglu) of host buffers
      expect_no_host_memory 240518168576 "$bin" "--shape host memory (224 GiB)" --shape 131072x131072
      ;;
  esac
  if [ "$fam" = rope ]; then
    expect "$bin" 2 "--shape zero B" --shape B=0,S=4
    expect "$bin" 2 "--shape zero S" --shape B=1,S=0
    expect "$bin" 2 "--shape zero Hkv" --shape B=1,S=4,Hkv=0
    expect "$bin" 2 "--shape D=96 unsupported" --shape B=1,S=4,D=96
    expect "$bin" 2 "--shape S > L" --shape B=1,S=8,L=4
    expect "$bin" 2 "--shape B above 2^31-1" --shape B=2147483648,S=1
    expect "$bin" 2 "--shape above 2^34 qkv elements" --shape B=1,S=2147483647
    expect "$bin" 2 "--shape cache above 2^34 elements" --shape B=64,S=1,L=2147483647
    expect "$bin" 2 "--op unknown" --op nope
    expect "$bin" 2 "--op missing value" --op
    expect "$bin" 2 "--theta zero" --theta 0
    expect "$bin" 2 "--theta negative" --theta -10000
    expect "$bin" 2 "--theta nan" --theta nan
    expect "$bin" 2 "--theta inf" --theta inf
    expect "$bin" 2 "--theta beyond a float" --theta 1e39
    expect "$bin" 2 "--theta not a number" --theta abc
    expect "$bin" 2 "--theta empty" --theta=
    # 2^34 qkv elements (Llama-3-8B heads): 26 bytes each of host buffers, 416 GiB
    expect_no_host_memory 446676598784 "$bin" "--shape host memory (416 GiB)" --shape B=1,S=2796202
  fi
  if [ "$fam" = layer ]; then
    expect "$bin" 2 "--shape zero B" --shape B=0,S=4
    expect "$bin" 2 "--shape zero S" --shape B=1,S=0
    expect "$bin" 2 "--shape zero mlp" --shape B=1,S=4,mlp=0
    expect "$bin" 2 "--shape S > L" --shape B=1,S=8,L=4
    expect "$bin" 2 "--shape D=96 unsupported" --shape B=1,S=4,D=96
    expect "$bin" 2 "--shape Hkv not dividing Hq" --shape B=1,S=4,Hq=32,Hkv=5
    expect "$bin" 2 "--shape hidden not a multiple of 8" --shape B=1,S=4,hidden=4092
    expect "$bin" 2 "--shape mlp not a multiple of 8" --shape B=1,S=4,mlp=14340
    expect "$bin" 2 "--shape B above 2^31-1" --shape B=2147483648,S=1,L=8
    expect "$bin" 2 "--shape activation above 2^34" --shape B=1,S=2147483647
    expect "$bin" 2 "--shape weights above 2^34" --shape B=1,S=1,hidden=1048576,mlp=1048576
    expect "$bin" 2 "--shape cache above 2^34 elements" --shape B=64,S=1,L=2147483647
    # 2^21 tokens of hidden 8192: 12 bytes per element of y on the host, 192 GiB
    expect_no_host_memory 206158430208 "$bin" "--shape host memory (192 GiB)" --shape B=1,S=2097152,hidden=8192,mlp=8192
  fi
  if [ "$fam" = attention ]; then
    expect "$bin" 2 "--shape D=96 unsupported" --shape B=1,Hq=4,Hkv=4,Sq=64,Skv=64,D=96,causal=0
    expect "$bin" 2 "--shape Hkv not dividing Hq" --shape B=1,Hq=4,Hkv=3,Sq=64,Skv=64,D=64,causal=0
    expect "$bin" 2 "--shape Sq > Skv" --shape B=1,Hq=4,Hkv=4,Sq=128,Skv=64,D=64,causal=1
    expect "$bin" 2 "--shape explicit Hkv=0" --shape B=1,Hq=4,Hkv=0,Sq=64,Skv=64,D=64,causal=0
    expect "$bin" 2 "--shape explicit Skv=0" --shape B=1,Hq=4,Hkv=4,Sq=64,Skv=0,D=64,causal=0
    expect "$bin" 2 "--shape positional Hkv 0" --shape 1x4x0x64x64x64x0
    expect "$bin" 2 "--shape zero B" --shape B=0,Hq=4,Sq=64
    expect "$bin" 2 "--shape zero Sq" --shape B=1,Hq=4,Sq=0
    expect "$bin" 2 "--shape Skv above 2^31-1" --shape B=1,Hq=1,Sq=1,Skv=2147483648
    expect "$bin" 2 "--shape causal=2" --shape B=1,Hq=4,Sq=64,causal=2
    # one KV head of 2^31 - 1 keys: terabytes of reference buffers on the host
    expect_no_host_memory 2748779069440 "$bin" "--shape host memory (one huge head)" --shape B=1,Hq=1,Hkv=1,Sq=1,Skv=2147483647,D=128
  fi
done

echo "$pass passed, $fail failed, $skipped skipped"
[ $fail -eq 0 ]
