// 04 wgmma_tma — (sm_90a) wgmma for both products, TMA for Q/K/V.
//
// Parent: 02 flash_mma_sync (the prefill kernel; rung 03's split schedule is not carried over).
// Change: S = Q K^T is a wgmma (m64nBNk16) reading Q and K from shared memory through 128B-swizzle
//   descriptors; O += P V is a wgmma with P from registers (the S accumulator re-packed as bf16 A
//   fragments) and V read N-major from the same swizzled tiles. Q, K, V arrive by TMA on mbarrier
//   transaction counts (ragged tiles zero-filled, masked to -inf). CTA = 2 warpgroups x 64 query
//   rows, KV tiles of 128 keys double-buffered; GQA heads packed into M (hopper_fa.cuh).
// Why: wgmma issues 64xN x16 per instruction and keeps operands out of registers, the only way to
//   Hopper tensor-core rates; TMA removes cp.async's address arithmetic.
// Limits: all 256 threads compute and thread 0 refills a stage after a __syncthreads, so every
//   refill waits for the slowest warpgroup (rung 05).
// Code: the kernel hopper_fa.cuh, its pieces hopper_fa_*.cuh; this rung is their Defaults.
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 4
#endif
#ifndef KL_ATTENTION_04_CONFIG
#define KL_ATTENTION_04_CONFIG
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace hattn {
// Rung 04's configuration: the Defaults (2 consumer warpgroups x 64 rows, 128-key tiles, a
// 2-stage K/V ring refilled by thread 0, no producer warpgroup) at head dim D.
template <int D>
struct WgmmaTma : Defaults {
  static constexpr int head_dim = D;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 4
namespace kl {
std::string attention_wgmma_tma_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::WgmmaTma>(a, d);
}

void attention_wgmma_tma_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::WgmmaTma>(a, s);
}
}  // namespace kl
#endif
