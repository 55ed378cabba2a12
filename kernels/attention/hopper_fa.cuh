// kernels/attention/hopper_fa.cuh — the sm_90a attention kernel (FlashAttention-3 style) that
// rungs 04-08 instantiate with one more feature switched on each. Included by the rung files only.
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
// Shared memory (every tile base 1024-byte aligned; "panel" = 64 columns = 128-byte rows):
//   sQ [D/64][BM][64], sK/sV [kStages][D/64][BN][64], then the mbarriers.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "attention/attention.h"
#include "attention/attention_internal.h"
#include "common/check.h"
#include "common/device.h"
#include "common/hopper.cuh"
#include "common/hopper_attn.cuh"
#include "common/mma.cuh"
#include "common/tma.h"

namespace kl {
namespace hattn {

// Compile-time shape of one rung/head-dim instantiation.
template <int D_, int kConsumers_, int BN_, int kStages_, bool kWS_, bool kOverlap_, bool kPingPong_,
          bool kHeavyFirst_>
struct Cfg {
  static constexpr int D = D_;
  static constexpr int kConsumers = kConsumers_;  // consumer warpgroups, 64 query rows each
  static constexpr int BM = 64 * kConsumers;      // packed query rows per CTA
  static constexpr int BN = BN_;                  // keys per KV tile
  static constexpr int kStages = kStages_;        // K/V ring depth
  static constexpr bool kWS = kWS_;               // producer warpgroup + setmaxnreg
  static constexpr bool kOverlap = kOverlap_;     // S(t+1) = QK^T issued before P(t)V(t) retires
  static constexpr bool kPingPong = kPingPong_;   // the 2 consumer WGs take turns issuing wgmma
  static constexpr bool kHeavyFirst = kHeavyFirst_;  // causal: longest row tiles launched first
  static constexpr int kPanels = D / 64;          // 64-column (128-byte) swizzle panels
  static constexpr int kThreads = (kWS ? 128 : 0) + 128 * kConsumers;
  static constexpr int kQBytes = BM * D * 2;
  static constexpr int kKVBytes = BN * D * 2;  // one K (or V) tile
  static constexpr int kBarOffset = kQBytes + 2 * kStages * kKVBytes;
  static constexpr int kSmemBytes = kBarOffset + 8 * (1 + 3 * kStages) + 1024;  // +1024: align slack
  static_assert(D == 64 || D == 128, "head dim 64 or 128");
  static_assert(BN == 64 || BN == 128, "wgmma N for S is BN: 64 or 128");
  static_assert(kConsumers == 1 || kConsumers == 2, "one or two consumer warpgroups");
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles stay 1024-byte aligned");
  static_assert(!kOverlap || kWS, "the overlapped loop is written for the warp-specialized kernel");
  static_assert(!kPingPong || (kOverlap && kConsumers == 2), "ping-pong: two overlapped consumers");
  static_assert(!kWS || kStages >= 2, "a producer needs at least two stages to run ahead");
};

struct Params {
  CUtensorMap tmQ, tmK, tmV;  // 3-D maps {D, rows|Skv, B*Hkv}, boxes {64, BM|BN, 1}, SWIZZLE_128B
  __nv_bfloat16* O;           // [B*Hkv, rows, D]
  float* Opart;               // [splits, B*Hkv, rows, D] normalized partial O (splits > 1)
  float* Lpart;               // [splits, B*Hkv, rows]     log2-sum-exp of each partial
  int rows, Sq, Skv, BH, m_tiles, splits, causal;
  float scale_log2;           // softmax scale * log2(e): scores go through exp2
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));  // ex2(-inf) = +0
  return y;
}

template <int N>
__device__ __forceinline__ void wg_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc) {
  if constexpr (N == 64) wgmma_ss_m64n64k16(d, da, db, acc);
  else wgmma_ss_m64n128k16(d, da, db, acc);
}
template <int N>
__device__ __forceinline__ void wg_rs_t(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (N == 64) wgmma_rs_m64n64k16_tnspb(d, a, db, 1);
  else wgmma_rs_m64n128k16_tnspb(d, a, db, 1);
}

// S = Q_wg K_t^T: D/16 k-steps. K-step kk lives in panel kk/4 at byte offset (kk%4)*32 inside the
// 128-byte swizzled rows (the hardware applies the XOR on the final address).
template <class C>
__device__ __forceinline__ void issue_qk(float (&s)[C::BN / 2], const uint8_t* q_wg,
                                         const uint8_t* k_stage) {
#pragma unroll
  for (int kk = 0; kk < C::D / 16; ++kk) {
    const int panel = kk / 4, off = (kk % 4) * 32;
    uint64_t da = make_smem_desc_sw128(q_wg + panel * (C::BM * 128) + off);
    uint64_t db = make_smem_desc_sw128(k_stage + panel * (C::BN * 128) + off);
    wg_ss<C::BN>(s, da, db, kk > 0);  // kk == 0 overwrites: no zeroing of s needed
  }
}
// O += P V_t: BN/16 k-steps over keys; step kk starts at key row 16*kk (16 * 128 bytes, stays
// 1024-aligned); the D/64 panels of V are LBO = BN*128 bytes apart.
template <class C>
__device__ __forceinline__ void issue_pv(float (&o)[C::D / 2], const uint32_t (&pf)[C::BN / 16][4],
                                         const uint8_t* v_stage) {
#pragma unroll
  for (int kk = 0; kk < C::BN / 16; ++kk) {
    uint64_t db = make_smem_desc_sw128_mn(v_stage + kk * 16 * 128, C::BN * 128);
    wg_rs_t<C::D>(o, pf[kk], db);
  }
}

// Online softmax of one S tile, in place (S becomes P in fp32). Thread holds rows h = 0 (t/4)
// and h = 1 (t/4 + 8) of its warp's 16; element s[4j + 2h + e] is column 8j + 2(t%4) + e.
// m_run is the running max in raw score units; alpha[h] is how much O and l shrink.
template <int BN>
__device__ __forceinline__ void online_softmax(float (&s)[BN / 2], float (&m_run)[2],
                                               float (&l_run)[2], float (&alpha)[2], bool do_mask,
                                               int kv0, const int (&lim)[2], int Skv, float sl,
                                               int lane) {
  if (do_mask) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = kv0 + 8 * j + 2 * (lane & 3) + (e & 1);
        // keys past the end (TMA zero-filled) and, with causal, keys after the row's diagonal
        if (col > lim[e >> 1] || col >= Skv) s[4 * j + e] = -INFINITY;
      }
  }
  float mx[2] = {m_run[0], m_run[1]};
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], s[4 * j + e]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // the 4 lanes of a quad share a row
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
  }
  float base[2], sum[2] = {0.f, 0.f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // A row with every key masked so far keeps max -inf: use 0 so exp2 gives 0, not NaN.
    base[h] = (mx[h] == -INFINITY) ? 0.f : mx[h] * sl;
    alpha[h] = fast_exp2(m_run[h] * sl - base[h]);  // m_run = -inf -> 0 (O and l are 0 anyway)
    m_run[h] = mx[h];
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float p = fast_exp2(fmaf(s[4 * j + e], sl, -base[e >> 1]));
      s[4 * j + e] = p;
      sum[e >> 1] += p;
    }
  // l stays a per-thread partial (quad-reduced once, in the epilogue)
  l_run[0] = l_run[0] * alpha[0] + sum[0];
  l_run[1] = l_run[1] * alpha[1] + sum[1];
}

// fp32 P (S accumulator layout) -> bf16 A fragments: k-block kk (keys 16kk..16kk+15) is accumulator
// groups j = 2kk (cols +0..7) and 2kk+1 (cols +8..15): {a0,a1,a2,a3} = {(r, c), (r+8, c),
// (r, c+8), (r+8, c+8)} = consecutive pairs s[8kk + 0..7].
template <int BN>
__device__ __forceinline__ void pack_p(const float (&s)[BN / 2], uint32_t (&pf)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) pf[kk][i] = pack_bf16x2(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
}

template <int D>
__device__ __forceinline__ void scale_o(float (&o)[D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[4 * j + e] *= alpha[e >> 1];
}

template <class C>
__device__ __forceinline__ void issue_kv_tile(const Params& p, uint8_t* sK, uint8_t* sV,
                                              uint64_t* k_full, uint64_t* v_full, int stage, int t,
                                              int bh) {
  mbar_arrive_expect_tx(&k_full[stage], C::kKVBytes);  // full box bytes, OOB zero-fill included
#pragma unroll
  for (int pn = 0; pn < C::kPanels; ++pn)
    tma_load_3d(sK + (stage * C::kPanels + pn) * (C::BN * 128), &p.tmK, &k_full[stage], pn * 64,
                t * C::BN, bh);
  mbar_arrive_expect_tx(&v_full[stage], C::kKVBytes);
#pragma unroll
  for (int pn = 0; pn < C::kPanels; ++pn)
    tma_load_3d(sV + (stage * C::kPanels + pn) * (C::BN * 128), &p.tmV, &v_full[stage], pn * 64,
                t * C::BN, bh);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <class C>
__global__ void __launch_bounds__(C::kThreads, 1) fa_kernel(const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  // 128B-swizzle TMA destinations and wgmma descriptors (base offset 0) need 1024-byte alignment.
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                             ~uintptr_t(1023));
  uint8_t* sQ = smem;
  uint8_t* sK = sQ + C::kQBytes;
  uint8_t* sV = sK + C::kStages * C::kKVBytes;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + C::kBarOffset);
  uint64_t* q_full = bars;
  uint64_t* k_full = bars + 1;
  uint64_t* v_full = bars + 1 + C::kStages;
  uint64_t* empty = bars + 1 + 2 * C::kStages;  // WS only: consumers -> producer

  // Grid (m tiles, B*Hkv, splits): m varies fastest, so the CTAs resident at one time share the
  // K/V of a few heads in L2.
  const int bh = blockIdx.y;
  // Causal row tiles get heavier with m: with kHeavyFirst the first-dispatched CTAs of each head
  // (low blockIdx.x) take the longest tiles, so the short ones fill the tail.
  const int m_blk = (C::kHeavyFirst && p.causal) ? (p.m_tiles - 1 - int(blockIdx.x)) : int(blockIdx.x);
  const int split = blockIdx.z;
  const int m0 = m_blk * C::BM;
  const int diag = p.Skv - p.Sq;  // query qpos sees keys <= qpos + diag (causal)

  // KV tiles this CTA visits. Rows of one tile may straddle two heads (Sq % BM != 0): then the
  // tile's qpos range is conservatively [0, Sq).
  const int last_row = min(m0 + C::BM, p.rows) - 1;
  int qmin = 0, qmax = p.Sq - 1;
  if (m0 / p.Sq == last_row / p.Sq) {
    qmin = m0 % p.Sq;
    qmax = last_row % p.Sq;
  }
  const int kv_end = p.causal ? min(p.Skv, qmax + diag + 1) : p.Skv;
  const int n_tiles = (kv_end + C::BN - 1) / C::BN;
  const int per_split = (n_tiles + p.splits - 1) / p.splits;
  const int t0 = split * per_split;
  const int n = max(0, min(n_tiles, t0 + per_split) - t0);  // may be 0 for a trailing split
  // First tile with a key some row of the tile must not see (causal) or past Skv: tiles before it
  // skip the mask.
  const int mask_from = min(p.causal ? (qmin + diag + 1) / C::BN : INT_MAX, p.Skv / C::BN);

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < C::kStages; ++s) {
      mbar_init(&k_full[s], 1);                      // producer's arrive.expect_tx
      mbar_init(&v_full[s], 1);
      mbar_init(&empty[s], C::kConsumers * 4);       // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if constexpr (C::kWS) {
    if (wg == 0) {
      // ---------------- producer warpgroup: one thread streams Q once, then the K/V ring
      if constexpr (C::kConsumers == 2) setmaxnreg_dec<40>();
      if (threadIdx.x == 0 && n > 0) {
        tma_prefetch_desc(&p.tmK);
        tma_prefetch_desc(&p.tmV);
        mbar_arrive_expect_tx(q_full, C::kQBytes);
        for (int pn = 0; pn < C::kPanels; ++pn)
          tma_load_3d(sQ + pn * (C::BM * 128), &p.tmQ, q_full, pn * 64, m0, bh);
        for (int i = 0; i < n; ++i) {
          const int stage = i % C::kStages;
          // Reuse of a stage waits for the consumers' release of its previous round.
          // Watchdog only here: in the consumers its clock/trap path made ptxas spill and
          // serialize the wgmmas. A consumer stuck on a full barrier (bad transaction count)
          // stalls its releases, so this wait traps too (when n > kStages).
          if (i >= C::kStages)
            mbar_wait_watchdog(&empty[stage], ((i / C::kStages) & 1) ^ 1);
          issue_kv_tile<C>(p, sK, sV, k_full, v_full, stage, t0 + i, bh);
        }
      }
      return;
    }
  }

  // ---------------- consumer warpgroups
  if constexpr (C::kWS && C::kConsumers == 2) setmaxnreg_inc<232>();
  const int c = C::kWS ? wg - 1 : wg;  // consumer index: rows 64c..64c+63 of the tile
  // Ping-pong (kPingPong): the two consumer warpgroups take turns at the tensor cores. Before each
  // batch of wgmma issues a warpgroup waits on its named barrier (id 1 + c, 256 threads: its own
  // 128 + the other's 128 arrivals); after issuing it arrives on the other's. So warpgroup A's
  // softmax runs while B's products run, and vice versa. Batches per warpgroup: n + 1 (S(0); then
  // S(i) with P(i-1)V(i-1); then P(n-1)V(n-1)). Warpgroup 1 pre-arrives once so that warpgroup 0
  // starts, and skips its last arrival: each barrier then sees exactly n + 1 sync/arrive pairs.
  int pp_batch = 0;
  auto pp_begin = [&]() {
    if constexpr (C::kPingPong) named_barrier_sync(1 + c, 256);
  };
  auto pp_end = [&](int n_batches) {
    if constexpr (C::kPingPong) {
      if (!(c == 1 && pp_batch == n_batches - 1)) named_barrier_arrive(1 + (1 - c), 256);
      ++pp_batch;
    }
  };
  if constexpr (C::kPingPong) {
    if (c == 1 && n > 0) named_barrier_arrive(1 + 0, 256);
  }
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r_lo = c * 64 + warp * 16 + lane / 4;  // tile row of h = 0; h = 1 is r_lo + 8
  int grow[2], lim[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    grow[h] = m0 + r_lo + 8 * h;
    lim[h] = p.causal ? (grow[h] % p.Sq) + diag : INT_MAX - 1;
  }
  const uint8_t* q_wg = sQ + c * (64 * 128);  // this warpgroup's 64 rows in every panel

  float o[C::D / 2];
#pragma unroll
  for (int i = 0; i < C::D / 2; ++i) o[i] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f}, alpha[2];
  float s[C::BN / 2];
  uint32_t pf[C::BN / 16][4];

  if constexpr (!C::kWS) {
    // Rung 04: no producer; thread 0 issues Q and the first kStages tiles, then refills a stage
    // after the whole CTA has finished with it (__syncthreads below).
    if (threadIdx.x == 0 && n > 0) {
      mbar_arrive_expect_tx(q_full, C::kQBytes);
      for (int pn = 0; pn < C::kPanels; ++pn)
        tma_load_3d(sQ + pn * (C::BM * 128), &p.tmQ, q_full, pn * 64, m0, bh);
      for (int i = 0; i < min(n, C::kStages); ++i)
        issue_kv_tile<C>(p, sK, sV, k_full, v_full, i, t0 + i, bh);
    }
  }

  if (n > 0) {
    mbar_wait(q_full, 0);
    if constexpr (!C::kOverlap) {
      for (int i = 0; i < n; ++i) {
        const int stage = i % C::kStages;
        const uint32_t ph = (i / C::kStages) & 1;
        const int t = t0 + i;
        mbar_wait(&k_full[stage], ph);
        wgmma_fence();
        issue_qk<C>(s, q_wg, sK + stage * C::kKVBytes);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operands(s);
        online_softmax<C::BN>(s, m_run, l_run, alpha, t >= mask_from, t * C::BN, lim, p.Skv,
                              p.scale_log2, lane);
        scale_o<C::D>(o, alpha);
        pack_p<C::BN>(s, pf);
        mbar_wait(&v_full[stage], ph);
        wgmma_fence();  // o and pf were written by ordinary instructions
        issue_pv<C>(o, pf, sV + stage * C::kKVBytes);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operands(o);
        wgmma_fence_operands_u32(pf);
        if constexpr (C::kWS) {
          __syncwarp();
          if (lane == 0) mbar_arrive(&empty[stage]);
        } else {
          __syncthreads();  // every warpgroup's wgmma has read this stage
          if (threadIdx.x == 0 && i + C::kStages < n)
            issue_kv_tile<C>(p, sK, sV, k_full, v_full, stage, t + C::kStages, bh);
        }
      }
    } else {
      // Intra-warpgroup overlap: S(i) = QK_i^T runs on the tensor cores while P(i-1)V(i-1) is
      // queued behind it; the softmax of S(i) then overlaps the P(i-1)V(i-1) wgmma.
      mbar_wait(&k_full[0], 0);
      pp_begin();
      wgmma_fence();
      issue_qk<C>(s, q_wg, sK);
      wgmma_commit();
      pp_end(n + 1);
      wgmma_wait<0>();
      wgmma_fence_operands(s);
      online_softmax<C::BN>(s, m_run, l_run, alpha, t0 >= mask_from, t0 * C::BN, lim, p.Skv,
                            p.scale_log2, lane);
      pack_p<C::BN>(s, pf);  // o is still 0: no rescale
      for (int i = 1; i < n; ++i) {
        const int stage = i % C::kStages, pstage = (i - 1) % C::kStages;
        const int t = t0 + i;
        mbar_wait(&k_full[stage], (i / C::kStages) & 1);
        mbar_wait(&v_full[pstage], ((i - 1) / C::kStages) & 1);
        pp_begin();
        wgmma_fence();
        issue_qk<C>(s, q_wg, sK + stage * C::kKVBytes);
        wgmma_commit();
        issue_pv<C>(o, pf, sV + pstage * C::kKVBytes);
        wgmma_commit();
        pp_end(n + 1);
        wgmma_wait<1>();  // S(i) done, P(i-1)V(i-1) may still run
        wgmma_fence_operands(s);
        online_softmax<C::BN>(s, m_run, l_run, alpha, t >= mask_from, t * C::BN, lim, p.Skv,
                              p.scale_log2, lane);
        // Keep the softmax before the wait for P(i-1)V(i-1): ptxas otherwise hoists that wait
        // into the middle of the masking code (seen in the SASS) and the overlap is lost. The
        // wait depends (by a branch) on l, which depends on every exp2 of the tile.
        wgmma_fence_operands(s);
        wgmma_fence_operands(l_run);
        wgmma_fence_operands(alpha);
        wgmma_wait0_after(l_run[0] + l_run[1]);
        wgmma_fence_operands(o);
        wgmma_fence_operands_u32(pf);  // pf stays live (unclobbered) until the PV retired
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[pstage]);
        scale_o<C::D>(o, alpha);
        pack_p<C::BN>(s, pf);
      }
      const int lstage = (n - 1) % C::kStages;
      mbar_wait(&v_full[lstage], ((n - 1) / C::kStages) & 1);
      pp_begin();
      wgmma_fence();
      issue_pv<C>(o, pf, sV + lstage * C::kKVBytes);
      wgmma_commit();
      pp_end(n + 1);
      wgmma_wait<0>();
      wgmma_fence_operands(o);
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[lstage]);
    }
  }

  // ---------------- epilogue: O / l (bf16), or the normalized partial and its log2-sum-exp
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
  }
  const int col0 = 2 * (lane & 3);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (grow[h] >= p.rows) continue;  // padding rows of the last tile (TMA read zeros)
    const float inv = l_run[h] > 0.f ? 1.f / l_run[h] : 0.f;
    if (p.splits == 1) {
      __nv_bfloat16* orow = p.O + (size_t(bh) * p.rows + grow[h]) * C::D;
#pragma unroll
      for (int j = 0; j < C::D / 8; ++j)
        *reinterpret_cast<uint32_t*>(orow + 8 * j + col0) =
            pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    } else {
      const size_t prow = (size_t(split) * p.BH + bh) * p.rows + grow[h];
      float* orow = p.Opart + prow * C::D;
#pragma unroll
      for (int j = 0; j < C::D / 8; ++j)
        *reinterpret_cast<float2*>(orow + 8 * j + col0) =
            make_float2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
      if ((lane & 3) == 0)
        p.Lpart[prow] = l_run[h] > 0.f ? m_run[h] * p.scale_log2 + log2f(l_run[h]) : -INFINITY;
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// Split-KV combine: one warp per packed row; O = sum_s 2^(L_s - Lmax) O_s / sum_s 2^(L_s - Lmax).
template <int D>
__global__ void __launch_bounds__(128) fa_combine(const float* __restrict__ Opart,
                                                  const float* __restrict__ Lpart,
                                                  __nv_bfloat16* __restrict__ O, int total_rows,
                                                  int splits) {
  const int row = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= total_rows) return;
  constexpr int E = D / 32;  // elements per lane: 4 (D=128) or 2 (D=64)
  float lmax = -INFINITY;
  for (int s = 0; s < splits; ++s) lmax = fmaxf(lmax, Lpart[size_t(s) * total_rows + row]);
  float acc[E] = {}, wsum = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float L = Lpart[size_t(s) * total_rows + row];
    if (L == -INFINITY) continue;  // a split that saw no visible key for this row
    const float w = exp2f(L - lmax);
    wsum += w;
    const float* src = Opart + (size_t(s) * total_rows + row) * D + lane * E;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] += w * src[e];
  }
  const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
  __nv_bfloat16* dst = O + size_t(row) * D + lane * E;
#pragma unroll
  for (int e = 0; e < E; e += 2)
    *reinterpret_cast<__nv_bfloat162*>(dst + e) = __floats2bfloat162_rn(acc[e] * inv, acc[e + 1] * inv);
}

// ------------------------------------------------------------------------------------------ host
// Shape checks every Hopper rung shares ("" = fine).
inline std::string common_supports(const AttentionArgs& a, const DeviceInfo& d, long long smem) {
  // Part 1's checks: pointers (16-byte aligned, as TMA needs), D in {64,128}, dims, GQA, Sq<=Skv.
  std::string why = attention_common_supports(a, d);
  if (!why.empty()) return why;
  why = require_sm90a(d);
  if (!why.empty()) return why;
  if ((long long)a.Hq / a.Hkv * a.Sq > INT_MAX / 2) return "shape too large";
  if ((long long)a.B * a.Hkv > 65535) return "B*Hkv > 65535 (grid y)";
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory";
  return "";
}

// Bytes of split-KV scratch for `splits` partials.
inline size_t split_bytes(const AttentionArgs& a, int splits) {
  const size_t rows = size_t(a.Hq / a.Hkv) * a.Sq, bh = size_t(a.B) * a.Hkv;
  return size_t(splits) * bh * rows * (a.D + 1) * sizeof(float);
}

template <class C>
void launch(const AttentionArgs& a, cudaStream_t stream, bool allow_split) {
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
  }
  // Split-KV (decode): enough CTAs for one wave (the decode config's 144 KB of shared memory
  // allows one CTA per SM; equal splits then finish together), each still >= 4 KV tiles, and only
  // as many partials as the caller's workspace holds.
  int splits = 1;
  if (allow_split) {
    const int kv_tiles = (a.Skv + C::BN - 1) / C::BN;
    const long long ctas = (long long)p.BH * p.m_tiles;
    // floor, not ceil: 64 CTAs on 132 SMs -> 2 splits (128 CTAs, one wave), not 3 (two waves).
    int want = int(std::min<long long>(dev.sms / ctas, (kv_tiles + 3) / 4));
    want = std::max(1, std::min(want, 128));
    const size_t per = split_bytes(a, 1);
    const int fit = per ? int(std::min<size_t>(a.workspace ? a.workspace_bytes / per : 0, 128)) : 0;
    splits = std::min(want, fit);
    if (splits > 1) {  // no empty trailing splits
      const int per_split = (kv_tiles + splits - 1) / splits;
      splits = (kv_tiles + per_split - 1) / per_split;
    }
    if (splits < 2) splits = 1;
  }
  p.splits = splits;
  if (splits > 1) {
    const size_t o_elems = size_t(splits) * p.BH * p.rows * C::D;
    p.Opart = static_cast<float*>(a.workspace);
    p.Lpart = p.Opart + o_elems;
  }
  static bool attr_set = false;  // once per instantiation (host-side, not a stream operation)
  if (!attr_set) {
    KL_CHECK(cudaFuncSetAttribute(fa_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  C::kSmemBytes));
    attr_set = true;
  }
  dim3 grid(p.m_tiles, p.BH, splits);
  fa_kernel<C><<<grid, C::kThreads, C::kSmemBytes, stream>>>(p);
  KL_CHECK_LAUNCH();
  if (splits > 1) {
    const int total = p.BH * p.rows;
    fa_combine<C::D><<<(total + 3) / 4, 128, 0, stream>>>(p.Opart, p.Lpart, a.O, total, splits);
    KL_CHECK_LAUNCH();
  }
}

}  // namespace hattn
}  // namespace kl
