// Rung 15 — a 2-deep ring of 64-deep k-tiles for rung 14's kernel.
//
// Change from 14: the ring is 2 stages of BK = 64 instead of 3 stages of BK = 32 (192 KB instead of
// 144 KB; still one block per SM). The loop over a tile's sixteen 4-deep k-steps is unrolled by 8,
// as 14's loop over its eight is: the body stays 4,096 FFMAs of straight-line code (fully unrolled,
// 8,192 FFMAs, the kernel ran at 20.8 TFLOP/s: instruction fetch cannot keep up).
// Why it can pay: rung 14 issues on 76% of the scheduler cycles (ncu at 4096^3: 20.6% of cycles with
// no eligible warp, 2 warps per scheduler, 255 registers) against cuBLAS's 86% (10.7%). Each k-tile
// costs a barrier that every warp of the block waits on, the copy issue and the ring bookkeeping;
// 64-deep tiles pay them once per 8,192 FMAs per thread. Two stages are enough: one 64-deep tile is
// ~16k cycles of FFMA per SM, far more than a copy's DRAM/L2 latency, so the next tile has landed
// before the barrier (cp.async.wait_group 0). No spill on sm_90a (14 spills 40 bytes).
// Measured (H200, 1980 MHz, experiment row 95 before it became this rung, 7 settings interleaved
// in both orders, results/h200/dev/sgemm_exp/exp_{a,b}.jsonl; same-run cuBLAS): 4096^3 48.0 vs 14's
// 46.5 TFLOP/s (+3.2%; cuBLAS 51.4: 0.93x), 8192^3 49.1 vs 47.1 (+4.3%; 0.96x), 4096x11008x4096
// 48.2 vs 46.0 (+4.7%; 0.96x), 4096x4096x11008 48.2 vs 46.6 (+3.3%; 0.95x). Unrolled by 4 instead:
// 48.0 / 48.3 / 47.1 / 48.1; by 2: 45.5-46.8; 32-deep tiles in 2 stages: 46.7-47.8.
// The default bench of d7dc698 (results/h200/dev/final-14647d0/sgemm.jsonl): 48.0 / 49.3 / 48.2 / 48.2 TFLOP/s.
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/sgemm.jsonl, 1980 MHz): 47.5 / 49.1 / 48.1 / 47.6 TFLOP/s against
// cuBLAS 51.4 / 51.3 / 50.2 / 50.9 (0.92 / 0.96 / 0.96 / 0.94x); docs/sgemm.md has the stall analysis.
// Session 18: this kernel with its copies, waits and barriers compiled out (bench_peak's
// fp32_ffma_16x8_lds) runs at 48.3-48.6 TFLOP/s, no faster than the rung (48.0 / 49.1 / 48.2 / 48.2
// in the same clone, results/h200/dev/ceilings/): what separates it from cuBLAS is the FFMA loop.
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B and C (rung 08 takes the rest).
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string supports_15(const SgemmArgs& a, const DeviceInfo& d) { return ak::supports_ak<64, 2>(a, d); }
void launch_15(const SgemmArgs& a, cudaStream_t s) { ak::launch_ak<64, 2, 8>(a, s); }

}  // namespace kl::sgemm_detail
