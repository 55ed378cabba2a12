// Rung 09 — streaming cache hints on rungs 07/08 (08's layout where it applies, else 07's): x read with ld.global.nc.L1::no_allocate (read-only
// path, the line is not kept in L1) and y written with st.global.cs (evict-first in L2).
//
// Why: every byte is touched once. L1 allocation of x only costs L1 tag/fill work for lines never
// re-read, and normal-priority y lines compete in L2 with x lines still to be read (the rotation
// makes the next launch's x cold anyway). Whether this buys anything at the DRAM roof is what the
// rung measures (on SwiGLU the same hints were within +-0.3%). x must not be written during the
// kernel: y may not alias x (softmax_check_args refuses in-place).
// Measured (H200, round-2 batch 2026-11-29, results/h200/dev/batch/rowops/softmax.jsonl, 20 launches):
//   neutral, as on SwiGLU: 16384x8192 bf16 0.1329 ms vs rung 08 0.1332; 4096x16384 f32 0.1343 vs
//   rung 07 0.1342. Kept as the measured answer; not picked by auto (the plain rungs come first).
#include "fused_impl.cuh"

namespace kl::softmax_detail {

std::string supports_09(const SoftmaxArgs& a, const DeviceInfo&) { return fused_supports(a); }
void launch_09(const SoftmaxArgs& a, cudaStream_t s) {
  launch_fused<Ld::nc_noalloc, St::stream, true>(a, s);
}

}  // namespace kl::softmax_detail
