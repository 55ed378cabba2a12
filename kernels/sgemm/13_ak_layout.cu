// Rung 13 — A kept k-contiguous in shared memory: 16-byte cp.async for both operands, A
// fragments read along k.
//
// Change from 12: rungs 10-12 copy A one float at a time to transpose it (16 four-byte copies
// per thread and tile); cuBLAS's kernel for this problem on the H200
// (sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4,
// the same 256x128 tile and 4x2 warps) loads A 16 bytes at a time. Here A stays as it is in
// memory, rows of BK = 16 k: 4 sixteen-byte cp.async per thread and tile instead of 16 four-byte
// ones. The fragments follow: one LDS.128 of A gives 4 consecutive k of one row, so a thread
// works through a k-tile 4 k at a time: B fragments for 4 k (8 LDS.128, 32 registers), then for
// each of its 16 rows one LDS.128 of A and 32 FMAs (4 k x 8 columns). Same 6 LDS.128 per k.
//  * A swizzle: quad q of row m is stored at quad q ^ ((m >> 2) & 3). A warp's fragment read
//    touches 4 distinct rows m0 + 4 tm (lanes tm = 0..3, the 8 tn lanes broadcast), whose quads
//    land in 4 distinct 4-bank groups; the copies write whole 16-byte quads.
//  * One barrier per tile, at its top (wait for tile kt, barrier, then issue tile kt+2 into the
//    stage tile kt-1 used): the A reads of a tile run to its end, so the hand-over cannot sit
//    before the last k-step as in 08-12.
// Tile 256x128, BK = 16, 3-stage ring (72 KB), 8 warps of 64x64, 16x8 per thread.
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B and C (rung 08 takes the rest).
// Measured (H200, final run of 14647d0, results/h200/dev/final-14647d0/sgemm.jsonl, 1980 MHz): 4096^3 44.6 TFLOP/s
// (rung 12: 41.6, cuBLAS 51.2: 0.87x), 8192^3 44.8, 4096x11008x4096 43.7, 4096x4096x11008 44.8.
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string supports_13(const SgemmArgs& a, const DeviceInfo& d) { return ak::supports_ak<16>(a, d); }
void launch_13(const SgemmArgs& a, cudaStream_t s) { ak::launch_ak<16>(a, s); }

}  // namespace kl::sgemm_detail
