// kernels/attention/hopper_fa.cuh — the sm_90a attention kernel (FlashAttention-3 style) that
// rungs 04-08, 10 and 12-15 instantiate, each with its parent's named configuration plus one
// change (struct Defaults below). Included by the rung files only. A rung file includes its parent's rung
// file for the parent's configuration: KL_ATTENTION_RUNG_FILE (the number of the file being
// compiled) keeps the parent's supports()/launch() out of the child's translation unit.
//
// Data layout trick shared by every rung ("GQA packing"): Q [B, Hq, Sq, D] is [B*Hkv, G*Sq, D]
// with G = Hq / Hkv, because the G query heads of one KV head are adjacent. So a CTA takes a tile
// of BM "packed rows" r of one (b, kv head) = bh; row r is query head hkv*G + r / Sq at position
// qpos = r % Sq, and all of them read the same K/V. O has the same [B*Hkv, G*Sq, D] view. For
// decode (Sq = 1) the G heads fill the M dimension instead of 1 row in a 64-row tile.
//
// CTA = kConsumers consumer warpgroups x 64 rows (BM = 64 * kConsumers) [+ 1 producer warpgroup
// when kWS]. Per KV tile t (BN keys):
//   S[64 x BN]  = Q_wg[64 x D] * K_t^T      wgmma SS, both K-major 128B-swizzled TMA tiles
//   P = online_softmax(S)                    in registers, accumulator layout
//   O[64 x D]  += P[64 x BN] * V_t[BN x D]   wgmma RS: P re-packed as A fragments, V N-major
//
// The kernel below only lays out shared memory and composes named pieces, each chosen by the
// rung's configuration (a `using` in Defaults or a rung file):
//   Scheduler       which items a CTA computes            hopper_fa_scheduler.cuh
//   Producer        who issues the Q/K/V TMA loads        hopper_fa_mainloop.cuh
//   Mainloop        the consumers' loop over KV tiles     hopper_fa_mainloop.cuh
//   WarpgroupTurns  when a consumer warpgroup may issue   hopper_fa_mainloop.cuh
//   Epilogue        how an item's O leaves                hopper_fa_epilogue.cuh
// and the fixed ones: OnlineSoftmax (hopper_fa_softmax.cuh), TileMma / KvLoads / KvRing
// (hopper_fa_mainloop.cuh), Cfg / Params (hopper_fa_config.cuh).
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "kl/attention.h"
#include "attention/attention_internal.h"
#include "kl/check.h"
#include "kl/device.h"
#include "common/hopper.cuh"
#include "common/hopper_attn.cuh"
#include "common/mma.cuh"
#include "common/softmax_online.cuh"
#include "attention/hopper_fa_config.cuh"
#include "attention/hopper_fa_epilogue.cuh"
#include "attention/hopper_fa_mainloop.cuh"
#include "attention/hopper_fa_scheduler.cuh"
#include "attention/hopper_fa_softmax.cuh"
#include "common/tma.h"

namespace kl {
namespace hattn {

// A rung's named choices (and head_dim, 64 or 128, which every configuration sets). Each rung file
// writes its configuration as its parent's plus the one choice it changes (04_wgmma_tma.cu starts
// from these defaults); the kernel reads the derived constants of Cfg<Choices>
// (hopper_fa_config.cuh). Every rung has its own configuration type, so every rung file
// instantiates its own kernel: two files instantiating one kernel type would share one
// (deduplicated) host stub, and with it the once-only shared-memory attribute, while each registers
// its own device copy, so the second would launch without the attribute (cudaErrorInvalidValue).
struct Defaults {
  static constexpr int consumer_warpgroups = 2;    // 64 query rows each
  static constexpr int kv_tile = 128;              // keys per KV tile (the wgmma N of S)
  static constexpr int stages = 2;                 // K/V ring depth
  static constexpr int ctas_per_sm = 1;            // resident CTAs per SM (launch bounds, grid)
  using Producer = ThreadZeroLoads;                // who issues the TMA loads
  using Mainloop = SerialMainloop;                 // S, softmax, P V of a tile in series
  using WarpgroupTurns = NoTurns;                  // the consumer WGs issue wgmma when ready
  using Scheduler = BlockOrderScheduler;           // which items a CTA takes (scheduler.cuh)
  using Epilogue = RegisterEpilogue;               // O stored from the accumulator (epilogue.cuh)
};

template <class Choices>
__global__ void __launch_bounds__(Cfg<Choices>::kThreads, Cfg<Choices>::kCtasPerSm)
    flash_attention_kernel(const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = Cfg<Choices>;
  using Softmax = OnlineSoftmax<C::BN, C::D>;
  using Mma = TileMma<C>;
  using Loads = KvLoads<C>;
  using Epilogue = typename C::Epilogue;
  using Producer = typename C::Producer;
  using Mainloop = typename C::Mainloop;
  using Turns = typename C::WarpgroupTurns;
  using Scheduler = typename C::Scheduler;
  extern __shared__ uint8_t smem_raw[];
  // 128B-swizzle TMA destinations and wgmma descriptors (base offset 0) need 1024-byte alignment.
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                             ~uintptr_t(1023));
  uint8_t* sQ = smem;  // [kQBuffers] Q tiles
  uint8_t* sK = sQ + C::kQBuffers * C::kQBytes;
  uint8_t* sV = sK + C::kStages * C::kKVBytes;
  uint8_t* sO = sV + C::kStages * C::kKVBytes;  // [kOBytes] Epilogue's staging tile, if any
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + C::kBarOffset);
  uint64_t* q_full = bars;  // [kQBuffers]
  uint64_t* k_full = q_full + C::kQBuffers;
  uint64_t* v_full = k_full + C::kStages;
  uint64_t* k_empty = v_full + C::kStages;
  uint64_t* v_empty = k_empty + C::kStages;
  uint64_t* q_empty = v_empty + C::kStages;  // [kQBuffers] persistent: Q of an item consumed
  // [kQBuffers] persistent: the item whose Q a buffer holds (one int per 8-byte slot)
  volatile int* item_slot = reinterpret_cast<volatile int*>(q_empty + C::kQBuffers);
  const KvRing ring{sK, sV, k_full, v_full, k_empty, v_empty};
  const Scheduler sched{q_full, q_empty, item_slot};

  if (threadIdx.x == 0) {
    for (int b = 0; b < C::kQBuffers; ++b) {
      mbar_init(&q_full[b], 1);
      mbar_init(&q_empty[b], C::kConsumers * 128);  // every consumer thread (each read its item slot)
    }
    for (int s = 0; s < C::kStages; ++s) {
      mbar_init(&k_full[s], 1);                      // producer's arrive.expect_tx
      mbar_init(&v_full[s], 1);
      mbar_init(&k_empty[s], C::kConsumers * 4);     // one arrival per consumer warp
      mbar_init(&v_empty[s], C::kConsumers * 4);
    }
    fence_barrier_init();
  }
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if constexpr (Producer::kWarpgroup) {
    if (wg == 0) {  // ---------------- producer warpgroup
      Producer::template run<C>(p, sched, sQ, q_full, ring);
      return;
    }
  }

  // ---------------- consumer warpgroups
  if constexpr (C::kSplitRegs) setmaxnreg_inc<C::kConsumerRegs>();
  // consumer index: rows 64c..64c+63 of the tile. Through redux.sync, whose result lands in a
  // uniform register: ptxas then builds Q's wgmma descriptors on the uniform datapath instead of
  // keeping 16 of them in vector registers and moving each with R2UR before its HGMMA.
  const int c = int(__reduce_max_sync(0xffffffffu, unsigned(C::kWS ? wg - 1 : wg)));
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r_lo = c * 64 + warp * 16 + lane / 4;  // tile row of h = 0; h = 1 is r_lo + 8
  const int diag = p.Skv - p.Sq;
  int it = 0, items = 0;  // ring position / items done (the producer counts the same way)

  while (true) {
    int bh, m_blk;
    if (!sched.consumer_item(p, items, bh, m_blk)) break;
    const TileRange tr = tile_range<C>(p, m_blk);
    const int n = tr.n, t0 = tr.t0, m0 = tr.m0, mask_from = tr.mask_from;
    it = sched.ring_position(it);
    const int qb = sched.q_buffer(items);  // the Q tile of this item
    const uint8_t* q_wg = sQ + qb * C::kQBytes + c * (64 * 128);  // this warpgroup's 64 rows in every panel

    Turns turns(c);
    turns.item_start(n);
    int grow[2], lim[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      grow[h] = m0 + r_lo + 8 * h;
      lim[h] = p.causal ? (grow[h] % p.Sq) + diag : INT_MAX - 1;
    }

    float o[C::D / 2];
#pragma unroll
    for (int i = 0; i < C::D / 2; ++i) o[i] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f}, alpha[2];
    float s[C::BN / 2];
    uint32_t pf[C::BN / 16][4];

    Producer::template item_start<C>(p, sQ, q_full, ring, n, m0, t0, bh);
    if (n > 0) {
      sched.wait_q();
      Mainloop::template run<C, Producer>(p, ring, sched, turns, q_wg, qb, it, n, t0, mask_from, lim,
                                          bh, warp, lane, o, m_run, l_run, alpha, s, pf);
    }

    // ---------------- epilogue: O / l (bf16)
    Softmax::finalize(l_run);
    Epilogue::template store<C>(p, sO, o, l_run, grow, m0, c, bh, warp, lane);
    it += n;
    ++items;
    if constexpr (!Scheduler::kPersistent) break;
  }
  Epilogue::finish();
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// ------------------------------------------------------------------------------------------ host
// Shape checks every Hopper rung shares ("" = fine).
inline std::string hopper_kernel_supports(const AttentionArgs& a, const DeviceInfo& d, long long smem) {
  // Part 1's checks: pointers (16-byte aligned, as TMA needs), D in {64,128}, dims, GQA, Sq<=Skv.
  std::string why = attention_args_supports(a, d);
  if (!why.empty()) return why;
  why = require_sm90a(d);
  if (!why.empty()) return why;
  if ((long long)a.Hq / a.Hkv * a.Sq > INT_MAX / 2) return "shape too large";
  if ((long long)a.B * a.Hkv > 65535) return "B*Hkv > 65535 (grid y)";
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory";
  return "";
}

template <class Choices>
void launch(const AttentionArgs& a, cudaStream_t stream) {
  using C = Cfg<Choices>;
  const DeviceInfo& dev = device_info();
  const int G = a.Hq / a.Hkv;
  Params p{};
  p.rows = G * a.Sq;
  p.Sq = a.Sq;
  p.Skv = a.Skv;
  p.BH = a.B * a.Hkv;
  p.m_tiles = (p.rows + C::BM - 1) / C::BM;
  p.causal = a.causal ? 1 : 0;
  p.scale_log2 = attention_scale_log2(a);  // same scale rule as part 1
  p.O = a.O;
  {
    const uint64_t dq[3] = {uint64_t(C::D), uint64_t(p.rows), uint64_t(p.BH)};
    const uint64_t sq[2] = {uint64_t(C::D) * 2, uint64_t(p.rows) * C::D * 2};
    const uint32_t bq[3] = {64, uint32_t(C::BM), 1};
    p.tmQ = make_tensor_map(a.Q, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dq, sq, bq,
                            CU_TENSOR_MAP_SWIZZLE_128B);
    const uint64_t dk[3] = {uint64_t(C::D), uint64_t(a.Skv), uint64_t(p.BH)};
    const uint64_t sk[2] = {uint64_t(C::D) * 2, uint64_t(a.Skv) * C::D * 2};
    const uint32_t bk[3] = {64, uint32_t(C::BN), 1};
    p.tmK = make_tensor_map(a.K, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dk, sk, bk,
                            CU_TENSOR_MAP_SWIZZLE_128B);
    p.tmV = make_tensor_map(a.V, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dk, sk, bk,
                            CU_TENSOR_MAP_SWIZZLE_128B);
    if constexpr (C::Epilogue::kStaged) {  // Q's view of O, one consumer warpgroup's 64 rows a box
      const uint32_t bo[3] = {64, 64, 1};
      p.tmO = make_tensor_map(a.O, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dq, sq, bo,
                              CU_TENSOR_MAP_SWIZZLE_128B);
    }
  }
  // Once per (kernel, device) in the process (attention.cu's registry of raised limits).
  attention_smem_optin(reinterpret_cast<const void*>(flash_attention_kernel<Choices>), C::kSmemBytes,
                       /*max_carveout=*/C::kCtasPerSm > 1);
  const dim3 grid = C::Scheduler::grid(p, (long long)a.Skv * C::D * 4, dev.sms * C::kCtasPerSm);
  flash_attention_kernel<Choices><<<grid, C::kThreads, C::kSmemBytes, stream>>>(p);
  KL_CHECK_LAUNCH();
}

// A rung's supports() and launch(): its configuration Config<D> at the problem's head dim.
template <template <int> class Config>
std::string rung_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hopper_kernel_supports(
      a, d, a.D == 64 ? Cfg<Config<64>>::kSmemBytes : Cfg<Config<128>>::kSmemBytes);
}
template <template <int> class Config>
void rung_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) launch<Config<64>>(a, s);
  else launch<Config<128>>(a, s);
}

}  // namespace hattn
}  // namespace kl
