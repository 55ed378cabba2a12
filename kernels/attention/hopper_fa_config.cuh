// kernels/attention/hopper_fa_config.cuh — the sm_90a attention kernel's compile-time shape
// (Cfg<Choices>, derived from a rung's configuration struct) and its launch parameters (Params).
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>

namespace kl {
namespace hattn {

// The kernel's compile-time shape, derived from a rung's choices.
template <class Choices>
struct Cfg {
  static constexpr int D = Choices::head_dim;
  static constexpr int kConsumers = Choices::consumer_warpgroups;
  static constexpr int BM = 64 * kConsumers;      // packed query rows per CTA
  static constexpr int BN = Choices::kv_tile;     // keys per KV tile
  static constexpr int kStages = Choices::stages;
  static constexpr int kCtasPerSm = Choices::ctas_per_sm;  // resident CTAs the launch bounds ask for
  using Producer = typename Choices::Producer;
  using Mainloop = typename Choices::Mainloop;
  using WarpgroupTurns = typename Choices::WarpgroupTurns;
  static constexpr bool kWS = Producer::kWarpgroup;
  static constexpr bool kOverlap = Mainloop::kOverlap;
  static constexpr bool kPingPong = WarpgroupTurns::kPingpong;
  using Scheduler = typename Choices::Scheduler;
  static constexpr bool kPersistent = Scheduler::kPersistent;
  static constexpr int kQBuffers = Scheduler::kQBuffers;  // Q tiles in shared memory (1, or 2 in turn)
  static constexpr int kPanels = D / 64;          // 64-column (128-byte) swizzle panels
  static constexpr int kThreads = (kWS ? 128 : 0) + 128 * kConsumers;
  static constexpr int kQBytes = BM * D * 2;
  static constexpr int kKVBytes = BN * D * 2;  // one K (or V) tile
  using Epilogue = typename Choices::Epilogue;
  static constexpr int kOBytes = Epilogue::kStaged ? BM * D * 2 : 0;  // O staging tile (Q's layout)
  static constexpr int kBarOffset = kQBuffers * kQBytes + 2 * kStages * kKVBytes + kOBytes;
  // mbarriers: q_full[kQBuffers], k_full[kStages], v_full[kStages], k_empty[kStages],
  // v_empty[kStages], q_empty[kQBuffers]; then the persistent item slots (8 bytes per Q buffer)
  static constexpr int kSmemBytes = kBarOffset + 8 * (3 * kQBuffers + 4 * kStages) + 1024;  // +1024: align slack
  // setmaxnreg split, when the warp-specialized CTA holds more than one consumer warpgroup per SM
  // (two consumers, or two CTAs of one): 128 * prod + 128 * cons per consumer warpgroup within the
  // CTA's pool, the threads times the registers the launch bounds give each (kLaunchRegs). The 176-key tile needs S 88 + O 64 + P 44 live registers per thread: 240
  // (FA3's split), producer 24. Two CTAs of one consumer each: 40/216.
  // The stale-max softmax (OnlineSoftmax::stale_step + its mma.sync fallback) on unmasked tiles of
  // the overlapped loop; not at BN = 176, whose 240 registers leave no room for the fallback (ptxas
  // spilled the loop counters).
  static constexpr bool kStale = kOverlap && BN <= 128;
  static constexpr bool kSplitRegs = kWS && kCtasPerSm * kConsumers > 1;
  static constexpr int kProducerRegs = BN > 128 ? 24 : 40;
  static constexpr int kConsumerRegs = BN > 128 ? 240 : kCtasPerSm == 2 ? 216 : 232;
  // What the launch bounds give each thread (a multiple of 8): the CTA's register pool that
  // setmaxnreg redistributes.
  static constexpr int kLaunchRegs = (65536 / (kThreads * kCtasPerSm)) & ~7;
  static_assert(!kSplitRegs || (128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <=
                                    kThreads * kLaunchRegs &&
                                kProducerRegs <= kLaunchRegs && kLaunchRegs <= kConsumerRegs),
                "register file");
  static_assert(kCtasPerSm == 1 || kCtasPerSm == 2, "one or two CTAs per SM");
  // sm_90: 228 KB of shared memory per SM, 1 KB of it reserved per CTA, plus the kernel's 1 KB of
  // static shared memory.
  static_assert(kCtasPerSm == 1 || kCtasPerSm * (kSmemBytes + 2048) <= 228 * 1024,
                "the CTAs per SM fit in shared memory");
  static_assert(D == 64 || D == 128, "head dim 64 or 128");
  static_assert(BN == 64 || BN == 128 || BN == 176, "wgmma N for S is BN: 64, 128 or 176");
  static_assert(kConsumers == 1 || kConsumers == 2, "one or two consumer warpgroups");
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles stay 1024-byte aligned");
  static_assert(!kOverlap || kWS, "the overlapped loop is written for the warp-specialized kernel");
  static_assert(!kPingPong || (kOverlap && kConsumers == 2), "ping-pong: two overlapped consumers");
  static_assert(!kWS || kStages >= 2, "a producer needs at least two stages to run ahead");
  static_assert(!kPersistent || kWS, "the persistent item loop is driven by the producer");
  static_assert(kQBuffers == 1 || (kQBuffers == 2 && kPersistent), "a second Q tile serves the next item");
};

struct Params {
  CUtensorMap tmQ, tmK, tmV;  // 3-D maps {D, rows|Skv, B*Hkv}, boxes {64, BM|BN, 1}, SWIZZLE_128B
  CUtensorMap tmO;            // TmaStoreEpilogue only: O as {D, rows, B*Hkv}, boxes {64, 64, 1}
  __nv_bfloat16* O;           // [B*Hkv, rows, D]
  int rows, Sq, Skv, BH, m_tiles, causal;
  int work, hgroup;           // persistent: m_tiles * BH items; heads per L2 group
  float scale_log2;           // softmax scale * log2(e): scores go through exp2
};

}  // namespace hattn
}  // namespace kl
