// kernels/attention/flash_mma.cuh — the mma.sync flash-attention kernel shared by rung 02 (one
// launch, whole KV range per tile) and rung 03 (the same kernel with some tiles' KV range split
// into pieces that write fp32 partials + log-sum-exp, merged by attention_combine).
//
// Tile: BM = 16 * WARPS query rows (warp w owns rows 16w..16w+15 of the tile) against BN = 64-key
// K/V tiles, D = 64 or 128. Shared memory, all bf16 rows of D elements, 16-byte chunks XOR-swizzled
// (chunk c of row r stored at chunk c ^ (r & 7)) so that the 8 row addresses of every ldmatrix 8x8
// matrix fall in 8 distinct 16-byte bank groups and cp.async writes stay 16-byte aligned:
//   Qs [BM][D]                        loaded once; its rows are reused per warp as the O staging tile
//   stage s (STAGES of them): Ks [BN][D], Vs [BN][D]
//
// Fragment layouts (mma.m16n8k16, g = lane / 4, t = lane % 4):
//   A 16x16 row-major:  a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//   B 16x8 "col":       b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g)
//   C 16x8:             c0,c1 (g, 2t..2t+1)  c2,c3 (g+8, 2t..2t+1)
// S = Q K^T: B[k=d][n=key] = K[key][d], i.e. K rows as stored are the B operand's columns: a plain
//   (non-transposed) ldmatrix of an 8x8 block K[key0..+7][d0..+7] gives lane (g, t) the pair
//   K[key0+g][d0+2t..] = b0. V in O += P V: B[k=key][n=d] = V[key][d] is row-major in k, so the
//   transposing ldmatrix gives lane the pair V[key0+2t..][d0+g] = b0.
// P: the C fragment of S n-tiles 2kk and 2kk+1 (keys 16kk..16kk+15) is, element for element, the A
//   fragment of the k-step kk of P V: a0 = pack(S[2kk].c0,c1), a1 = pack(S[2kk].c2,c3),
//   a2 = pack(S[2kk+1].c0,c1), a3 = pack(S[2kk+1].c2,c3). P never leaves registers.
// Row statistics: each thread holds 2 rows (g, g+8) x BN/4 scores; a row's max and sum are a
//   register loop plus a 2-step xor shuffle over the quad (4 lanes sharing g).
#pragma once
#include <cuda_bf16.h>

#include "attention/attention.h"
#include "common/mma.cuh"
#include "common/softmax_online.cuh"

namespace kl {
namespace flash {

struct Params {
  const __nv_bfloat16* Q;
  const __nv_bfloat16* K;
  const __nv_bfloat16* V;
  __nv_bfloat16* O;
  int B, Hq, Hkv, Sq, Skv, group;  // group = Hq / Hkv
  int causal;
  float sl2;                       // scale * log2(e)
  int nqt;                         // query tiles per head
  // Schedule (rung 03): tiles are numbered heaviest first, t = (nqt-1-qt) * B*Hq + b*Hq + hq.
  // Blocks [0, full_blocks) each own tile t = blockIdx.x whole; block full_blocks + k owns piece
  // k % splits of tail tile full_blocks + k / splits. Rung 02: full_blocks = all tiles.
  int full_blocks;
  int splits;
  float* ws_o;    // [tail tiles][splits][BM][D] fp32 partial O (normalized by its own sum)
  float* ws_lse;  // [tail tiles][splits][BM]    base-2 log-sum-exp of each partial row
};

template <int D_, int WARPS_, int BN_, int STAGES_>
struct Cfg {
  static constexpr int D = D_, WARPS = WARPS_, BN = BN_, STAGES = STAGES_;
  static constexpr int BM = 16 * WARPS;     // query rows per block
  static constexpr int THREADS = 32 * WARPS;
  static constexpr int CH = D / 8;          // 16-byte chunks per row
  static constexpr int KV_ELEMS = BN * D;   // one K (or V) tile
  static constexpr int SMEM = (BM * D + STAGES * 2 * KV_ELEMS) * 2;
  static constexpr int MIN_BLOCKS = D == 64 ? 2 : 1;  // registers: ~100 (D=64), ~170 (D=128)
  static_assert(D == 64 || D == 128, "D is 64 or 128");
  static_assert(BN % 16 == 0 && D % 16 == 0, "mma k/n steps of 16");
  static_assert((BM * CH) % THREADS == 0 && (BN * CH) % THREADS == 0, "copy loops divide evenly");
  static_assert(CH >= 8, "the XOR swizzle needs 8 chunks per row");
  static_assert(STAGES >= 2, "pipeline needs 2+ stages");
};

// Chunk c of row r lives at chunk c ^ (r & 7).
__device__ __forceinline__ int swz(int r, int c) { return c ^ (r & 7); }

// ROWS x D bf16 tile from global rows [0, valid) (row stride D) into swizzled smem; rows >= valid
// are zero-filled by cp.async (no global read).
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void load_rows_async(__nv_bfloat16* sm, const __nv_bfloat16* g, int valid,
                                                int tid) {
  constexpr int CH = D / 8;
#pragma unroll
  for (int it = 0; it < ROWS * CH / THREADS; ++it) {
    const int idx = tid + it * THREADS;
    const int r = idx / CH, c = idx % CH;  // consecutive threads: consecutive chunks of a row
    const bool ok = r < valid;
    cp_async_16(sm + r * D + swz(r, c) * 8, g + static_cast<long long>(ok ? r : 0) * D + c * 8, ok);
  }
}

template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MIN_BLOCKS) flash_mma_kernel(Params p) {
  constexpr int D = C::D, BM = C::BM, BN = C::BN, STAGES = C::STAGES, THREADS = C::THREADS;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* KVs = Qs + BM * D;  // stage st: K at st*2*KV_ELEMS, V right after
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  // ---- which tile, which piece of its KV range
  const int L = blockIdx.x;
  int t, split = 0, nsplit = 1;
  if (L < p.full_blocks) {
    t = L;
  } else {
    const int k = L - p.full_blocks;
    t = p.full_blocks + k / p.splits;
    split = k % p.splits;
    nsplit = p.splits;
  }
  const int BH = p.B * p.Hq;
  const int qt = p.nqt - 1 - t / BH;  // tile order: heaviest (last) query tiles first
  const int bh = t % BH;
  const int b = bh / p.Hq, hq = bh % p.Hq, hkv = hq / p.group;
  const int q0 = qt * BM;
  const int off = p.Skv - p.Sq;
  const __nv_bfloat16* Qg = p.Q + (static_cast<long long>(bh) * p.Sq + q0) * D;
  const long long kvh = (static_cast<long long>(b) * p.Hkv + hkv) * p.Skv * D;
  const __nv_bfloat16* Kg = p.K + kvh;
  const __nv_bfloat16* Vg = p.V + kvh;

  // Keys any row of this tile can see; causal tiles above the diagonal are never loaded.
  const int kv_end = p.causal ? min(p.Skv, q0 + BM + off) : p.Skv;
  const int n_tiles = (kv_end + BN - 1) / BN;
  const int n_begin = static_cast<int>(static_cast<long long>(n_tiles) * split / nsplit);
  const int n_end = static_cast<int>(static_cast<long long>(n_tiles) * (split + 1) / nsplit);

  auto load_kv = [&](int n, int st) {
    __nv_bfloat16* ks = KVs + st * 2 * C::KV_ELEMS;
    const int valid = min(BN, p.Skv - n * BN);  // ragged last tile: zero-filled rows
    load_rows_async<BN, D, THREADS>(ks, Kg + static_cast<long long>(n) * BN * D, valid, tid);
    load_rows_async<BN, D, THREADS>(ks + C::KV_ELEMS, Vg + static_cast<long long>(n) * BN * D, valid, tid);
  };

  // ---- prologue: Q (group 0), then KV tiles n_begin .. n_begin+STAGES-2 (one group each, empty
  // groups committed too so the wait counts below stay uniform).
  load_rows_async<BM, D, THREADS>(Qs, Qg, p.Sq - q0, tid);
  cp_async_commit();
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (n_begin + st < n_end) load_kv(n_begin + st, st);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 1>();  // Q has landed (the KV groups may still be in flight)
  __syncthreads();

  // Q fragments for the warp's 16 rows, kept in registers for the whole KV loop.
  // ldmatrix.x4: lanes 0-7 rows 0-7 / chunk 2kk (a0), 8-15 rows 8-15 (a1), 16-23 rows 0-7 /
  // chunk 2kk+1 (a2), 24-31 rows 8-15 / chunk 2kk+1 (a3).
  uint32_t qf[D / 16][4];
  {
    const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      ldmatrix_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3],
                  Qs + r * D + swz(r, 2 * kk + (lane >> 4)) * 8);
  }

  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;
  float m[2] = {neg_inf_f(), neg_inf_f()}, l[2] = {0.f, 0.f};
  const int row_g = q0 + warp * 16 + g;  // this thread's rows: row_g and row_g + 8

  // Per-lane ldmatrix row offsets (elements) inside a K / V tile, before the swizzle.
  // K (non-trans, x4 over 16 keys x 16 d): matrix mi = lane/8 -> keys +(mi>>1)*8, chunk +(mi&1).
  const int k_row = ((lane >> 4) << 3) + (lane & 7), k_chk = (lane >> 3) & 1;
  // V (trans, x4 over 16 keys x 16 d): matrix mi -> keys +(mi&1)*8, chunk +(mi>>1).
  const int v_row = (((lane >> 3) & 1) << 3) + (lane & 7), v_chk = lane >> 4;

  for (int n = n_begin; n < n_end; ++n) {
    const int it = n - n_begin;
    cp_async_wait<STAGES - 2>();  // tile n has landed for this thread's copies ...
    __syncthreads();              // ... and everyone's; the stage refilled below is free
    {
      const int nn = n + STAGES - 1;
      if (nn < n_end) load_kv(nn, (it + STAGES - 1) % STAGES);
      cp_async_commit();
    }
    const __nv_bfloat16* Ks = KVs + (it % STAGES) * 2 * C::KV_ELEMS;
    const __nv_bfloat16* Vs = Ks + C::KV_ELEMS;

    // ---- S = Q K^T : 16 rows x BN keys per warp, fp32
    float s[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int nj = 0; nj < BN / 16; ++nj) {
        const int r = nj * 16 + k_row;
        uint32_t b0[2], b1[2];
        ldmatrix_x4(b0[0], b0[1], b1[0], b1[1], Ks + r * D + swz(r, 2 * kk + k_chk) * 8);
        mma_bf16_16816(s[2 * nj], qf[kk], b0);
        mma_bf16_16816(s[2 * nj + 1], qf[kk], b1);
      }
    }

    // ---- mask: keys past Skv (ragged tile) and, causal, keys past the row's diagonal
    const int kv0 = n * BN;
    if (kv0 + BN > p.Skv || (p.causal && kv0 + BN - 1 > q0 + warp * 16 + off)) {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = kv0 + j * 8 + 2 * t4 + (e & 1);
          const int row = row_g + (e >> 1) * 8;
          if (key >= p.Skv || (p.causal && key > row + off)) s[j][e] = neg_inf_f();
        }
    }

    // ---- online softmax on the fragments (rows g: e = 0,1; g+8: e = 2,3)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = neg_inf_f();
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
      mx = quad_max(mx);
      const float m_new = fmaxf(m[h], mx);
      const float ofs = online_row_offset(m_new, p.sl2);
      const float alpha = online_rescale(m[h], ofs, p.sl2);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        s[j][2 * h] = online_prob(s[j][2 * h], ofs, p.sl2);
        s[j][2 * h + 1] = online_prob(s[j][2 * h + 1], ofs, p.sl2);
        sum += s[j][2 * h] + s[j][2 * h + 1];
      }
      l[h] = fmaf(l[h], alpha, sum);  // per-thread partial; quad-reduced once at the end
      m[h] = m_new;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        o[dn][2 * h] *= alpha;
        o[dn][2 * h + 1] *= alpha;
      }
    }

    // ---- O += P V : P from the S accumulators (see the file comment), V via ldmatrix.trans
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t a[4];
      a[0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);
      a[1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);
      a[2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      const int r = kk * 16 + v_row;
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t b0[2], b1[2];
        ldmatrix_x4_trans(b0[0], b0[1], b1[0], b1[1], Vs + r * D + swz(r, 2 * dp + v_chk) * 8);
        mma_bf16_16816(o[2 * dp], a, b0);
        mma_bf16_16816(o[2 * dp + 1], a, b1);
      }
    }
  }
  cp_async_wait<0>();  // only empty groups remain; drain them before the block exits

  // ---- epilogue
  l[0] = quad_sum(l[0]);
  l[1] = quad_sum(l[1]);
  const float inv0 = l[0] > 0.f ? 1.f / l[0] : 0.f;
  const float inv1 = l[1] > 0.f ? 1.f / l[1] : 0.f;

  if (nsplit == 1) {
    // Stage bf16 O in this warp's own 16 Q rows (no other warp reads them after the Q fragments
    // were loaded), then write whole 16-byte chunks of each row.
    __nv_bfloat16* ws = Qs + warp * 16 * D;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      *reinterpret_cast<uint32_t*>(ws + g * D + swz(g, dn) * 8 + 2 * t4) =
          pack_bf16x2(o[dn][0] * inv0, o[dn][1] * inv0);
      *reinterpret_cast<uint32_t*>(ws + (g + 8) * D + swz(g + 8, dn) * 8 + 2 * t4) =
          pack_bf16x2(o[dn][2] * inv1, o[dn][3] * inv1);
    }
    __syncwarp();
    __nv_bfloat16* Og = p.O + (static_cast<long long>(bh) * p.Sq + q0 + warp * 16) * D;
#pragma unroll
    for (int it = 0; it < 16 * C::CH / 32; ++it) {
      const int idx = lane + it * 32;
      const int r = idx / C::CH, c = idx % C::CH;
      if (q0 + warp * 16 + r < p.Sq)
        *reinterpret_cast<uint4*>(Og + static_cast<long long>(r) * D + c * 8) =
            *reinterpret_cast<const uint4*>(ws + r * D + swz(r, c) * 8);
    }
  } else {
    // Partial of a split tile: normalized fp32 O and its base-2 LSE, merged by the combine kernel.
    const long long piece = static_cast<long long>(t - p.full_blocks) * nsplit + split;
    float* wo = p.ws_o + (piece * BM + warp * 16) * D;
    float* wl = p.ws_lse + piece * BM + warp * 16;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      *reinterpret_cast<float2*>(wo + g * D + dn * 8 + 2 * t4) = make_float2(o[dn][0] * inv0, o[dn][1] * inv0);
      *reinterpret_cast<float2*>(wo + (g + 8) * D + dn * 8 + 2 * t4) =
          make_float2(o[dn][2] * inv1, o[dn][3] * inv1);
    }
    if (t4 == 0) {
      wl[g] = row_lse2(m[0], l[0], p.sl2);
      wl[g + 8] = row_lse2(m[1], l[1], p.sl2);
    }
  }
}

}  // namespace flash
}  // namespace kl
