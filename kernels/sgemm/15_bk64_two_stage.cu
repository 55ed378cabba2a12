// Rung 15 — a 2-deep ring of 64-deep k-tiles for rung 14's kernel.
//
// Change from 14: the ring is 2 stages of BK = 64 instead of 3 stages of BK = 32 (192 KB instead of
// 144 KB; still one block per SM), and the loop over a tile's sixteen 4-deep k-steps is unrolled by
// 4 instead of fully (a full unroll of 16 k-steps is 8,192 FFMAs of straight-line code).
// Why it can pay: rung 14 issues on 76% of the scheduler cycles (ncu at 4096^3: 20.6% of cycles with
// no eligible warp, 2 warps per scheduler, 255 registers) against cuBLAS's 86% (10.7%). Each k-tile
// costs a barrier that every warp of the block waits on, the copy issue and the ring bookkeeping;
// 64-deep tiles pay them once per 8,192 FMAs per thread. Two stages are enough: one 64-deep tile is
// ~16k cycles of FFMA per SM, far more than a copy's DRAM/L2 latency, so the next tile has landed
// before the barrier (cp.async.wait_group 0).
// Measured (H200, request of 2026-11-29 17:10 UTC, interleaved in both orders with the other
// settings, same-run cuBLAS; the rows are rebuilt in results/h200/dev/sgemm_exp/): 4096^3 48.0 vs
// 14's 46.5 TFLOP/s (+3.2%; cuBLAS 51.4), 8192^3 48.3 vs 47.1 (+2.5%), 4096x11008x4096 47.1 vs
// 46.0 (+2.4%), 4096x4096x11008 48.1 vs 46.6 (+3.2%): 0.93-0.94x cuBLAS. The k-step unroll matters:
// the same ring unrolled by 2 measured 46.6-46.8 (= 14), rung 14 not unrolled 41-42.
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B and C (rung 08 takes the rest).
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string supports_15(const SgemmArgs& a, const DeviceInfo& d) { return ak::supports_ak<64, 2>(a, d); }
void launch_15(const SgemmArgs& a, cudaStream_t s) { ak::launch_ak<64, 2, 4>(a, s); }

}  // namespace kl::sgemm_detail
