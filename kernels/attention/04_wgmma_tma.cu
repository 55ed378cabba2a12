// kernels/attention/04_wgmma_tma.cu — rung 04 (sm_90a): wgmma for both products, TMA for Q/K/V.
//
// Change from rung 03 (mma.sync + cp.async): S = Q K^T is a warpgroup MMA (wgmma m64nBNk16) reading
// Q and K straight from shared memory through 128B-swizzle descriptors, and O += P V is a wgmma
// with P from registers (the S accumulator re-packed as bf16 A fragments: no shared round trip)
// and V read N-major (imm-trans-b = 1) from the same swizzled tiles. Q, K, V arrive by TMA
// (cp.async.bulk.tensor, one thread issues, mbarrier transaction counts signal arrival; ragged
// tiles are zero-filled by TMA and masked to -inf). CTA = 2 warpgroups x 64 query rows, KV tiles of
// 128 keys double-buffered; all 256 threads compute, thread 0 refills a stage after a __syncthreads.
// GQA heads are packed into the M dimension (see hopper_fa.cuh).
// Why: wgmma issues 64xN x16 per instruction per warpgroup and keeps operands out of registers, the
// only way to reach Hopper tensor-core rates; TMA removes the address arithmetic of cp.async.
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/prefill.jsonl): S=4096 D=128 399 / 520
// TFLOP/s causal / non-causal, S=8192 488 / 535, D=64 S=4096 non-causal 341 (round 1: 415 / 515).
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/attention.jsonl; after 3f441c8's one-descriptor-per-operand
// change, docs/attention.md log item 9; NVML MHz in brackets): S=4096 D=128 418.7 [1980] /
// 506.4 [1926] TFLOP/s causal / non-causal, S=8192 479.3 [1903] / 492.3 [1782], D=64 S=4096
// non-causal 340.6 [1980].
// Since 9dd5fcb (lazy rescale, docs/attention.md log item 10; this rung has no stale-max path):
// full run of 9dd5fcb (results/h200/dev/final-9dd5fcb/attention.jsonl) S=4096 D=128 422.6 [1980] / 515.7 [1938]
// TFLOP/s causal / non-causal, S=8192 477.0 [1920] / 497.3 [1839], D=64 S=4096 non-causal 333.2.
// Since df97d2b (Q's wgmma descriptors on the uniform datapath, docs/attention.md log item 13; not
// A/B'd on this rung): full run of df97d2b (results/h200/dev/final-df97d2b/attention.jsonl) S=4096 D=128 426.0 [1980] /
// 525.3 [1977] TFLOP/s causal / non-causal, S=8192 490.3 [1947] / 491.9 [1829], D=64 S=4096
// non-causal 333.4 [1980].
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 2, false, false, false, false, 4>;
using C128 = hattn::Cfg<128, 2, 128, 2, false, false, false, false, 4>;
}  // namespace

std::string attn_wgmma_tma_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_wgmma_tma_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
