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
