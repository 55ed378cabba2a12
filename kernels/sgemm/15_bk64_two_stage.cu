// 15 bk64_two_stage — a 2-deep ring of 64-deep k-tiles for rung 14's kernel.
//
// Parent: 14 ak_bk32.
// Change: the ring is 2 stages of BK = 64 instead of 3 of BK = 32 (192 KB; one block per SM). The
//   loop over a tile's sixteen 4-deep k-steps is unrolled by 8, so the body stays 4,096 FFMAs of
//   straight-line code (fully unrolled, instruction fetch cannot keep up).
// Why: each k-tile costs a barrier every warp waits on, the copy issue and the ring bookkeeping;
//   64-deep tiles pay them once per 8,192 FMAs per thread. Two stages suffice: one tile is far more
//   FFMA time than a copy's DRAM/L2 latency, so the next tile has landed before the barrier.
// Limits: no spill on sm_90a (14 spills 40 bytes). With copies, waits and barriers compiled out
//   (bench_peak's fp32_ffma_16x8_lds) the loop is no faster than the rung: what separates it from
//   cuBLAS is the FFMA loop itself (docs/sgemm.md has the stall analysis).
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B and C (rung 08 takes the rest).
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string sgemm_bk64_two_stage_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ak::aligned_abc_supports<ak::Bk64TwoStage>(a, d);
}
void sgemm_bk64_two_stage_launch(const SgemmArgs& a, cudaStream_t s) {
  ak::sgemm_ak_launch<ak::Bk64TwoStage>(a, s);
}

}  // namespace kl::sgemm_detail
