// kernels/attention/hopper_fa_mainloop.cuh — the per-KV-tile work of the sm_90a attention kernel
// (hopper_fa.cuh): which key tiles an item visits (tile_range), the TMA loads into the K/V ring
// (KvLoads) and the two wgmma products of a tile (TileMma).
//
// Shared memory (every tile base 1024-byte aligned; "panel" = 64 columns = 128-byte rows):
//   sQ [D/64][BM][64], sK/sV [kStages][D/64][BN][64], then the mbarriers.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "attention/hopper_fa_config.cuh"
#include "common/hopper.cuh"
#include "common/hopper_attn.cuh"
#include "common/mma.cuh"

namespace kl {
namespace hattn {

// The KV range one work item (a BM-row tile of one (b, kv head)) visits: key tiles [t0, t0 + n).
struct TileRange {
  int m0, n, t0, mask_from;
};
template <class C>
__device__ __forceinline__ TileRange tile_range(const Params& p, int m_blk) {
  TileRange r;
  r.m0 = m_blk * C::BM;
  const int diag = p.Skv - p.Sq;  // query qpos sees keys <= qpos + diag (causal)
  // Rows of one tile may straddle two heads (Sq % BM != 0): then the tile's qpos range is
  // conservatively [0, Sq).
  const int last_row = min(r.m0 + C::BM, p.rows) - 1;
  int qmin = 0, qmax = p.Sq - 1;
  if (r.m0 / p.Sq == last_row / p.Sq) {
    qmin = r.m0 % p.Sq;
    qmax = last_row % p.Sq;
  }
  const int kv_end = p.causal ? min(p.Skv, qmax + diag + 1) : p.Skv;
  const int n_tiles = (kv_end + C::BN - 1) / C::BN;
  r.t0 = 0;
  r.n = n_tiles;
  // First tile with a key some row of the tile must not see (causal) or past Skv: tiles before it
  // skip the mask.
  r.mask_from = min(p.causal ? (qmin + diag + 1) / C::BN : INT_MAX, p.Skv / C::BN);
  return r;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <int N>
__device__ __forceinline__ void wg_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc) {
  if constexpr (N == 64) wgmma_ss_m64n64k16(d, da, db, acc);
  else if constexpr (N == 128) wgmma_ss_m64n128k16(d, da, db, acc);
  else wgmma_ss_m64n176k16(d, da, db, acc);
}
template <int N>
__device__ __forceinline__ void wg_rs_t(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (N == 64) wgmma_rs_m64n64k16_tnspb(d, a, db, 1);
  else wgmma_rs_m64n128k16_tnspb(d, a, db, 1);
}

// The two wgmma products of one KV tile for one consumer warpgroup (64 rows), the mma.sync
// recompute of S, and the S accumulator -> P A-fragment conversion.
template <class C>
struct TileMma {
  // S = Q_wg K_t^T: D/16 k-steps. K-step kk lives in panel kk/4 at byte offset (kk%4)*32 inside the
  // 128-byte swizzled rows (the hardware applies the XOR on the final address). One descriptor per
  // operand is built; each k-step adds its byte offset / 16 to the start-address field (bits 0-13:
  // shared addresses stay below 256 KB, so the add never carries out of it), as the GEMM rungs do.
  static __device__ __forceinline__ void qk(float (&s)[C::BN / 2], const uint8_t* q_wg,
                                            const uint8_t* k_stage) {
    const uint64_t da0 = make_smem_desc_sw128(q_wg), db0 = make_smem_desc_sw128(k_stage);
#pragma unroll
    for (int kk = 0; kk < C::D / 16; ++kk) {
      const int panel = kk / 4, off = (kk % 4) * 32;
      const uint64_t da = da0 + ((panel * (C::BM * 128) + off) >> 4);
      const uint64_t db = db0 + ((panel * (C::BN * 128) + off) >> 4);
      wg_ss<C::BN>(s, da, db, kk > 0);  // kk == 0 overwrites: no zeroing of s needed
    }
  }
  // O += P V_t: BN/16 k-steps over keys; step kk starts at key row 16*kk (16 * 128 bytes, stays
  // 1024-aligned); the D/64 panels of V are LBO = BN*128 bytes apart.
  static __device__ __forceinline__ void pv(float (&o)[C::D / 2],
                                            const uint32_t (&pf)[C::BN / 16][4],
                                            const uint8_t* v_stage) {
    const uint64_t db0 = make_smem_desc_sw128_mn(v_stage, C::BN * 128);
#pragma unroll
    for (int kk = 0; kk < C::BN / 16; ++kk) wg_rs_t<C::D>(o, pf[kk], db0 + ((kk * 16 * 128) >> 4));
  }

  // S again, for the fallback of OnlineSoftmax::stale_step: Q_wg K^T for this warp's 16 rows, with
  // mma.sync from the shared tiles (a wgmma in a branch would make ptxas serialize every wgmma of
  // the kernel). The m16n8k16 accumulator of key block j is exactly s[4j..4j+3] of the wgmma m64nBN
  // layout (rows g and g+8 of the warp's 16, columns 2(t%4), +1), so S lands where the wgmma put
  // it. Both tiles are 128B-swizzled panels: 16-byte chunk c of row r sits at c ^ (r & 7).
  static __device__ __forceinline__ void qk_mma_sync(float (&s)[C::BN / 2], const uint8_t* q_wg,
                                                     const uint8_t* k_stage, int warp, int lane) {
    // ldmatrix x4 rows: A = Q rows 0-7 / 8-15 (lane bit 3) x k chunk +0 / +1 (lane bit 4);
    // B = keys +0-7 / +8-15 (lane bit 4) x k chunk +0 / +1 (lane bit 3).
    const int qr = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, qc = lane >> 4;
    const int kr = ((lane >> 4) << 3) + (lane & 7), kc = (lane >> 3) & 1;
    // 32-bit shared-window addresses (a generic pointer costs two registers; BN = 176 runs at 240).
    const uint32_t qrow = smem_u32(q_wg) + qr * 128;
    // key 16 jp + kr: + 2048 jp, swizzle kr & 7
    const uint32_t krow = smem_u32(k_stage) + kr * 128;
#pragma unroll  // s is indexed by jp: a rolled loop would put it in local memory
    for (int jp = 0; jp < C::BN / 16; ++jp) {
      float* d0 = &s[8 * jp];
      float* d1 = &s[8 * jp + 4];
#pragma unroll
      for (int e = 0; e < 4; ++e) d0[e] = d1[e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < C::D / 16; ++kk) {
        // k-step kk reads chunk 2 kk + {qc, kc}: panel kk / 4, swizzled 16-byte column in the panel
        uint32_t a[4], b0[2], b1[2];
        ldsm_x4(a[0], a[1], a[2], a[3],
                qrow + (kk / 4) * (C::BM * 128) + (((2 * (kk % 4) + qc) ^ (qr & 7)) << 4));
        ldsm_x4(b0[0], b0[1], b1[0], b1[1],
                krow + jp * 2048 + (kk / 4) * (C::BN * 128) +
                    (((2 * (kk % 4) + kc) ^ (kr & 7)) << 4));
        mma_bf16_16816(*reinterpret_cast<float(*)[4]>(d0), a, b0);
        mma_bf16_16816(*reinterpret_cast<float(*)[4]>(d1), a, b1);
      }
    }
  }

  // fp32 P (S accumulator layout) -> bf16 A fragments: k-block kk (keys 16kk..16kk+15) is
  // accumulator groups j = 2kk (cols +0..7) and 2kk+1 (cols +8..15): {a0,a1,a2,a3} = {(r, c), (r+8,
  // c), (r, c+8), (r+8, c+8)} = consecutive pairs s[8kk + 0..7].
  static __device__ __forceinline__ void pack_p(const float (&s)[C::BN / 2],
                                                uint32_t (&pf)[C::BN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < C::BN / 16; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) pf[kk][i] = pack_bf16x2(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
  }
};

// TMA loads into the K/V ring: one thread issues them after arrive.expect_tx on the slot's full
// barrier.
template <class C>
struct KvLoads {
  // One K (or V) tile t into ring slot `stage` (D/64 panel boxes), completing on `full`.
  static __device__ __forceinline__ void tile(const CUtensorMap* tm, uint8_t* base, uint64_t* full,
                                              int stage, int t, int bh) {
    mbar_arrive_expect_tx(full, C::kKVBytes);  // full box bytes, OOB zero-fill included
#pragma unroll
    for (int pn = 0; pn < C::kPanels; ++pn)
      tma_load_3d(base + (stage * C::kPanels + pn) * (C::BN * 128), tm, full, pn * 64, t * C::BN,
                  bh);
  }
  static __device__ __forceinline__ void kv(const Params& p, uint8_t* sK, uint8_t* sV,
                                            uint64_t* k_full, uint64_t* v_full, int stage, int t,
                                            int bh) {
    tile(&p.tmK, sK, &k_full[stage], stage, t, bh);
    tile(&p.tmV, sV, &v_full[stage], stage, t, bh);
  }
};

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace hattn
}  // namespace kl
