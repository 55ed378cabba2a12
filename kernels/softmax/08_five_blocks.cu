// Rung 08 — five resident rows per SM for 8192-wide bf16 rows: rung 07, but a 16-byte bf16 row of
// exactly 256 threads (7.2K..8K elements) is launched as a compile-time one-row-per-block group
// under __launch_bounds__(256, 5), i.e. <= 48 registers (kernel: fused_impl.cuh, kBound = true).
// Offered only for that row class: on every other shape it would be rung 07's code.
//
// Why: a row is in flight only while its block is resident, so resident rows per SM ARE the bytes
// in flight. Rung 07 runs this row as a run-time-sized block (G = 0) at 63 registers (rung 03: 51):
// 4 blocks of 256 threads per SM, 64 KB of loads in flight per SM. At 48 registers (no spills,
// -Xptxas -v on sm_90a) 5 fit: 80 KB; the compile-time group also makes the per-warp pair merge a
// fixed 8-step loop.
// Measured (H200, round-2 batch 2026-11-29, results/h200/dev/batch/rowops/softmax.jsonl, 20 launches):
//   16384x8192 bf16 0.1332 ms = 4031 GB/s (95.4% of bench_peak's 4224 GB/s copy, 96.4% of the
//   same-run cudaMemcpy 0.1284 ms) vs rung 07 0.1416, rung 03 0.1337 (same run). What the 6%
//   over 07 comes from (the fifth block or the compile-time group) is not separated.
#include "fused_impl.cuh"

namespace kl::softmax_detail {

std::string supports_08(const SoftmaxArgs& a, const DeviceInfo&) {
  std::string why = fused_supports(a);
  if (!why.empty()) return why;
  if (!fused_bounded_class(a))
    return "only 16-byte bf16 rows of exactly 256 threads (7.2K..8K elements) differ from rung 07";
  return "";
}
void launch_08(const SoftmaxArgs& a, cudaStream_t s) {
  launch_fused<Ld::normal, St::normal, true>(a, s);
}

}  // namespace kl::softmax_detail
