// Rung 12 — four_stages: rung 08 with a 4-deep load ring; the epilogue stages half a warpgroup's
// output at a time so the fourth 48 KB stage fits.
//
// Change from rung 08: STAGES 3 -> 4. At the wgmma peak a 128x256x64 k-block is ~0.6 us of math
// per SM while its 48 KB stage takes ~1 us of L2 latency to arrive: with 3 stages only 2 loads are
// in flight behind the one being consumed, so any L2 hiccup (or the grouped raster moving to a
// new W column) starves the tensor cores. 4 x 48 KB = 192 KB leaves 32 KB of the 227 KB for the C
// staging, so each consumer warpgroup now owns 16 KB (two 64x64 swizzled boxes) instead of 32 KB
// and writes its 64x256 block in two halves: stmatrix 64x128 -> fence.proxy.async -> named barrier
// -> 2 TMA stores, then (second half) cp.async.bulk.wait_group.read 0 before overwriting the boxes.
// The wait is for the TMA engine to READ 16 KB of smem (not for the global write), a few hundred
// cycles once per tile.
// Budget: 1024 (align) + 4 x 48 KB + 2 x 16 KB + barriers = 230,464 B <= 232,448 (227 KB opt-in).
// Proxy rule: as rung 08 (generic writes -> fence.proxy.async.shared::cta -> bar.sync -> TMA store;
// reuse of a staging box only after wait_group.read by the thread that committed the stores,
// followed by bar.sync among the warpgroup).
// Measured (H200, 2026-11-29, gemm2 request 1): 793 TF at 4096^3 (08: 778, cuBLAS 800), 808 at
// 8192^3 (08: 792, cuBLAS 802: 1.007x), 783 at 4096x11008x4096 (cuBLAS 781), 817 at
// 4096x4096x11008 (cuBLAS 829), 632 at 2048^3 (08: 614, cuBLAS 644).
// Code: tma_store_gemm.cuh (rung 08's kernel), instantiated with STAGES = 4 and two passes.
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/gemm_bf16.jsonl; TFLOP/s, NVML MHz in brackets, same-run cuBLAS):
// 2048^3 641.0 [1980] (0.983x cuBLAS [1980]); 4096^3 781.8 [1950] (0.989x cuBLAS [1980]);
// 8192^3 697.6 [1940] (1.015x cuBLAS [1734]); 4096x11008x4096 772.4 [1934] (1.065x cuBLAS [1965]);
// 4096x4096x11008 806.7 [1793] (0.987x cuBLAS [1965]).
#include "gemm_bf16/tma_store_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string supports_12(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_store::supports<4, 2>(a, d);
}
void launch_12(const GemmBf16Args& a, cudaStream_t s) { tma_store::launch<4, 2>(a, s); }
void launch_12_variant(const GemmBf16Args& a, cudaStream_t s, int variant) {
  if (variant == 0) tma_store::launch<4, 2, false>(a, s);
  else tma_store::launch<4, 4>(a, s);
}

}  // namespace hopper_gemm
}  // namespace kl
