// Rung 13 — cluster_multicast_4stage: rung 09's 2x1 cluster W multicast, on top of rung 12's
// 4-deep ring (epilogue staged in 64x64 quarters since session 19, as rung 12).
//
// Change from rung 12: clusters with TMA multicast (the change rung 09 made on top of rung 08).
// Why 09 lost 40% to 08 (round 1: 450 vs 777 TF at 4096^3, and 2x slower even at M = 1 where both
// are bound by the k-loop): with wgmma_wait<1> the consumers hold TWO stages (the one in the tensor
// core and the one just issued), so a 3-stage ring leaves ONE load in flight, and in a cluster that
// load can only start after BOTH CTAs' consumers released the slot (a remote mbarrier arrive) and
// both producers issued their halves: the refill latency chain outgrows one k-block of math
// (~0.6 us) and the tensor cores wait every k-block. With 4 stages two loads are in flight, which
// is what rung 12 measures for the single-CTA case; this rung re-applies the multicast on top.
// Everything else is rung 09: each CTA loads half the 256-row W box and multicasts it to both,
// empty[s] counts 8 consumer warps x 2 CTAs, barrier init is cluster-visible before any remote
// traffic, a final cluster barrier keeps smem alive for the peer's arrivals.
// Budget: as rung 12, 230,464 B of shared memory.
// Measured (H200, 2026-11-29, gemm2 request 1, still with 09's membar bug): 455 TF at 4096^3
// (12: 793): the depth was not the problem. With mbar_arrive_remote: request 2.
// Code: cluster_gemm.cuh (rung 09's kernel), instantiated with STAGES = 4 and four passes (two
// before session 19).
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/gemm_bf16.jsonl; TFLOP/s, NVML MHz in brackets, same-run cuBLAS):
// 2048^3 617.8 [1980] (0.947x cuBLAS [1980]); 4096^3 784.7 [1965] (0.993x cuBLAS [1980]);
// 8192^3 698.7 [1919] (1.016x cuBLAS [1734]); 4096x11008x4096 776.9 [1950] (1.071x cuBLAS [1965]);
// 4096x4096x11008 810.0 [1920] (0.991x cuBLAS [1965]).
#include "gemm_bf16/cluster_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string supports_13(const GemmBf16Args& a, const DeviceInfo& d) {
  return cluster::supports<4, 4>(a, d);
}
void launch_13(const GemmBf16Args& a, cudaStream_t s) { cluster::launch<4, 4>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
