// Rung 12 — four_stages: rung 08 with a 4-deep load ring; the epilogue stages a quarter of a
// warpgroup's output at a time (half until session 19) so the fourth 48 KB stage fits.
//
// Change from rung 08: STAGES 3 -> 4. At the wgmma peak a 128x256x64 k-block is ~0.6 us of math
// per SM while its 48 KB stage takes ~1 us of L2 latency to arrive: with 3 stages only 2 loads are
// in flight behind the one being consumed, so any L2 hiccup (or the grouped raster moving to a
// new W column) starves the tensor cores. 4 x 48 KB = 192 KB leaves 32 KB of the 227 KB for the C
// staging, so each consumer warpgroup now owns 16 KB (two 64x64 swizzled boxes) instead of 32 KB
// and writes its 64x256 block in parts (as first written: two halves, stmatrix 64x128 ->
// fence.proxy.async -> named barrier -> 2 TMA stores, then for the second half
// cp.async.bulk.wait_group.read 0 before overwriting the boxes; since session 19 four quarters,
// below). The wait is for the TMA engine to READ the smem (not for the global write).
// Budget: 1024 (align) + 4 x 48 KB + 2 x 16 KB + barriers = 230,464 B <= 232,448 (227 KB opt-in).
// Proxy rule: as rung 08 (generic writes -> fence.proxy.async.shared::cta -> bar.sync -> TMA store;
// reuse of a staging box only after wait_group.read by the thread that committed the stores,
// followed by bar.sync among the warpgroup).
// Measured (H200, 2026-11-29, gemm2 request 1): 793 TF at 4096^3 (08: 778, cuBLAS 800), 808 at
// 8192^3 (08: 792, cuBLAS 802: 1.007x), 783 at 4096x11008x4096 (cuBLAS 781), 817 at
// 4096x4096x11008 (cuBLAS 829), 632 at 2048^3 (08: 614, cuBLAS 644).
// Code: tma_store_gemm.cuh (rung 08's kernel), instantiated with STAGES = 4 and four passes.
// Session 19 (the epilogue, rungs 13 and 14 inherit it): the 64x256 block now leaves in four 64x64
// passes through the same two boxes used in turn, so a pass waits (wait_group.read 1) only for
// the store of two passes back and the stmatrix of one pass overlaps the TMA read of the previous
// (two halves waited for ALL earlier stores: wait_group.read 0). Same-call A/B (3 processes x 2
// rows each, mirrored order; results/h200/dev/epi/c2_*): four passes vs two halves -0.3 to -0.7% time
// at 2048^3 26.92 vs 27.10 us / 4096^3 176.79 vs 177.73 / 4096x4096x11008 459.73 vs 461.86 /
// 4096x11008x4096 481.32 vs 482.90 (8192^3 throttles: noise). Also since then a CTA exits once
// its last stores have READ smem (cp.async.bulk.wait_group.read, as CUTLASS does) instead of
// waiting for their global writes: no measurable effect (2048^3 27.14 vs 27.20 us in one call,
// 27.10 vs 27.04 in the next). Tried and reverted: the CTA's last tile staged in the idle load
// ring and stored in ONE 64x256 pass: +0.31 / +0.39 us at 2048^3 against two halves with the same
// exit (27.51 vs 27.20 us waiting for the writes, 27.54 vs 27.14 exiting after the reads; one pass
// overlaps nothing, the two halves overlap one's stmatrix with the other's store).
// Also session 19 (08 shares the kernel): programmatic dependent launch. Every thread waits
// (griddepcontrol.wait) for the previous grid after the prologue, and the launch carries the PDL
// attribute on created streams, so back to back the next GEMM's launch and prologue run under this
// one's tail. ncu had shown the kernel itself no slower than cuBLAS's at 2048^3 (25.41-25.47 vs
// 25.54-25.63 us, both at 1.71 GHz under the profiler; results/h200/dev/epi/ncu2048/) while timed
// back to back it was 1.4% slower (CUDA graph 24.3 vs 23.9 us; graph2048/). Same-call A/B (3
// processes; epi/pdl/), CUDA graph us: 2048^3 23.58 vs 24.19 without PDL (cuBLAS 23.86: 1.012x
// now), 4096^3 201.2 vs 203.7 (throttled, noisy); launch by launch with events between launches
// (the tables' column) no change (2048^3 27.21 vs 27.12, cuBLAS 26.78): the events serialize the
// launches.
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/gemm_bf16.jsonl; TFLOP/s, NVML MHz in brackets, same-run cuBLAS):
// 2048^3 641.0 [1980] (0.983x cuBLAS [1980]); 4096^3 781.8 [1950] (0.989x cuBLAS [1980]);
// 8192^3 697.6 [1940] (1.015x cuBLAS [1734]); 4096x11008x4096 772.4 [1934] (1.065x cuBLAS [1965]);
// 4096x4096x11008 806.7 [1793] (0.987x cuBLAS [1965]).
#include "gemm_bf16/tma_store_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string supports_12(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_store::supports<4, 4>(a, d);
}
void launch_12(const GemmBf16Args& a, cudaStream_t s) { tma_store::launch<4, 4>(a, s); }
void launch_12_two_halves(const GemmBf16Args& a, cudaStream_t s) { tma_store::launch<4, 2>(a, s); }
void launch_12_no_pdl(const GemmBf16Args& a, cudaStream_t s) { tma_store::launch<4, 4, false>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
