// kernels/attention/flash_mma.cuh — the mma.sync flash-attention kernel shared by rung 02 (one
// launch, whole KV range per tile) and rung 03 (the same kernel with some tiles' KV range split
// into pieces that write fp32 partials + log-sum-exp, merged by attention_combine).
//
// Tile: BM = 16 * MT * WARPS query rows (warp w owns rows 16*MT*w .. +16*MT-1 of the tile, as MT
// m16 tiles) against BN-key K/V tiles, D = 64 or 128. Shared memory, all bf16 rows of D elements, 16-byte chunks XOR-swizzled
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
// Shared-memory traffic: per BN-key tile a warp reads all of K and V (2 * BN * D * 2 bytes) with
//   ldmatrix and does 4 * 16 * MT * BN * D FLOPs with them, i.e. 16 * MT FLOP per byte. An SM reads
//   128 B/clk of shared memory and issues ~2470 mma.sync FLOP/clk (the dense mma.sync peak / 132 SMs),
//   so MT = 1 needs 154 B/clk (the ldmatrix stream, not the tensor pipe, is the roof: <= 83%) and
//   MT = 2 needs 77 (96 with its Q re-reads at BN = 64: 8 KB of Q per 32 KB of K/V).
// Row statistics: each thread holds 2 rows (g, g+8) per m-tile x BN/4 scores; a row's max and sum are a
//   register loop plus a 2-step xor shuffle over the quad (4 lanes sharing g).
#pragma once
#include <cuda_bf16.h>

#include "kl/attention.h"
#include "attention/attention_internal.h"
#include "kl/check.h"
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
  // Schedule (rung 03): tiles are numbered in tile_of's order (Cfg::HEAD_MAJOR).
  // Blocks [0, full_blocks) each own tile t = blockIdx.x whole; block full_blocks + k owns piece
  // k % splits of tail tile full_blocks + k / splits. Rung 02: full_blocks = all tiles.
  int full_blocks;
  int splits;
  float* ws_o;    // [tail tiles][splits][BM][D] fp32 partial O (normalized by its own sum)
  float* ws_lse;  // [tail tiles][splits][BM]    base-2 log-sum-exp of each partial row
};

// A tile's named choices. head_dim: D; warps: per block; m_tiles_per_warp: 16-row m-tiles per warp
// (1: Q fragments held in registers for the whole KV loop; 2: each K/V fragment read from shared
// memory feeds two m-tiles, halving the shared-memory bytes per FLOP, and Q fragments are re-read
// from shared memory per k-step instead, because 2 x (O + S + Q) fragments do not fit in 255
// registers); kv_tile: keys per K/V tile; stages: cp.async ring depth; min_blocks_per_sm: blocks per
// SM the register budget is sized for. head_major: tile_of's order (the launchers: non-causal true,
// causal false); compile-time, not a runtime flag: ptxas allocates the two versions differently,
// and the runtime-flag version of the D = 128 kernel spills 8 bytes inside the KV loop and runs
// slower non-causal.
//
// Rung 02's tile (rung 03's prefill tile too; tools/attn_ceiling): 128 query rows, 4 warps x 2
// m-tiles, 64-key tiles; D = 128: 2-stage ring, 96 KB, D = 64: 3 stages, 64 KB; 2 blocks/SM.
template <int D, bool HEAD_MAJOR = false>
struct Rows128Tile {
  static constexpr int head_dim = D;
  static constexpr int warps = 4;
  static constexpr int m_tiles_per_warp = 2;
  static constexpr int kv_tile = 64;
  static constexpr int stages = D == 64 ? 3 : 2;
  static constexpr int min_blocks_per_sm = 2;
  static constexpr bool head_major = HEAD_MAJOR;
};

// The kernel's compile-time shape, derived from a tile's choices.
template <class Tile>
struct Cfg {
  static constexpr int D = Tile::head_dim, WARPS = Tile::warps, MT = Tile::m_tiles_per_warp;
  static constexpr int BN = Tile::kv_tile, STAGES = Tile::stages, MINB = Tile::min_blocks_per_sm;
  static constexpr bool HEAD_MAJOR = Tile::head_major;
  static constexpr int WROWS = 16 * MT;     // query rows per warp
  static constexpr int BM = WROWS * WARPS;  // query rows per block
  static constexpr int THREADS = 32 * WARPS;
  static constexpr int CH = D / 8;          // 16-byte chunks per row
  static constexpr int KV_ELEMS = BN * D;   // one K (or V) tile
  static constexpr int SMEM = (BM * D + STAGES * 2 * KV_ELEMS) * 2;
  static_assert(D == 64 || D == 128, "D is 64 or 128");
  static_assert(MT == 1 || MT == 2, "one or two m-tiles per warp");
  static_assert(BN % 16 == 0 && D % 16 == 0, "mma k/n steps of 16");
  static_assert((BM * CH) % THREADS == 0 && (BN * CH) % THREADS == 0, "copy loops divide evenly");
  static_assert(CH >= 8, "the XOR swizzle needs 8 chunks per row");
  static_assert(STAGES >= 2, "pipeline needs 2+ stages");
};

template <int D, bool HEAD_MAJOR = false>
using CfgBig = Cfg<Rows128Tile<D, HEAD_MAJOR>>;

// Tile t -> (query tile qt, head bh = b * Hq + hq), BH = B * Hq heads of nqt tiles each.
//  * query-tile-major (causal): t = (nqt-1-qt) * BH + bh, the heaviest (last) query tiles of every
//    head first, so the last wave holds the lightest tiles;
//  * head-major (non-causal: every tile costs the same): t = bh * nqt + (nqt-1-qt), the tiles of
//    one head in a row, so the blocks resident at once read the K/V of a few heads (GQA: of fewer
//    still) and those stay in L2; query-tile-major order streams all heads' K/V at once (64 MB at
//    B=1, H=32, S=4096, D=128; 128 MB at S=8192) past the L2 and reads them several times. Causal
//    launches are slower head-major (their last wave is no longer the lightest tiles), so causal
//    keeps the other order.
__host__ __device__ __forceinline__ void tile_of(int t, int nqt, int BH, bool head_major, int& qt, int& bh) {
  qt = nqt - 1 - (head_major ? t % nqt : t / BH);
  bh = head_major ? t / nqt : t % BH;
}

// Chunk c of row r lives at chunk c ^ (r & 7).
__device__ __forceinline__ int swz(int r, int c) { return c ^ (r & 7); }

// ROWS x D bf16 tile from global rows [0, valid) (row stride D) into swizzled smem; rows >= valid
// are zero-filled by cp.async (no global read).
// OPAQUE: see below (the causal D = 128 kernel only).
template <int ROWS, int D, int THREADS, bool OPAQUE = false>
__device__ __forceinline__ void load_rows_async(__nv_bfloat16* sm, const __nv_bfloat16* g, int valid,
                                                int tid) {
  constexpr int CH = D / 8;
  constexpr int RSTEP = THREADS / CH;  // rows covered per pass
  static_assert(THREADS % CH == 0 && RSTEP % 8 == 0 && ROWS % RSTEP == 0,
                "each thread keeps one chunk column and one swizzle phase across passes");
  // Thread -> chunk c = tid % CH of rows r0 + i * RSTEP; r & 7 is the same in every pass, so the
  // swizzled smem offset only moves by an immediate.
  const int r0 = tid / CH, c = tid % CH;
  __nv_bfloat16* dst = sm + r0 * D + swz(r0, c) * 8;
  // OPAQUE: the thread's element offset is hidden from the optimizer here, so it is added to the
  // (block-uniform) tile base on every call instead of a 64-bit per-thread pointer per operand being
  // kept live across the KV loop. The causal D = 128 kernel spilled such a pointer inside its loop
  // (8 bytes; STL before the loop, LDL after its barrier); with OPAQUE it does not and runs faster.
  // The other kernels have no spill and run slower with it, so it is on for that kernel only.
  const __nv_bfloat16* src;
  if constexpr (OPAQUE) {
    int off = r0 * D + c * 8;
    asm volatile("" : "+r"(off));
    src = g + off;
  } else {
    src = g + static_cast<long long>(r0) * D + c * 8;
  }
#pragma unroll
  for (int i = 0; i < ROWS / RSTEP; ++i) {
    const bool ok = r0 + i * RSTEP < valid;
    cp_async_16(dst + i * RSTEP * D, ok ? src + static_cast<long long>(i) * RSTEP * D : g, ok);
  }
}

// The kernel's softmax (mask, running max and sum, O rescale, 1 / l) and its K/V ring (a STAGES-deep
// cp.async ring, one barrier per tile) are named pieces, template arguments of the kernel; the rungs
// take these two. tools/attn_ceiling substitutes pieces with present = false, which leave the part
// out (P = bf16(S) and O stored unscaled; every KV step on the resident stage 0, no copies or
// barriers in the loop) to time what remains; such a kernel does not compute attention.
struct OnlineSoftmax {
  static constexpr bool present = true;
};
struct CpAsyncRing {
  static constexpr bool present = true;
};

template <class C, class Softmax = OnlineSoftmax, class Ring = CpAsyncRing>
__global__ void __launch_bounds__(C::THREADS, C::MINB) flash_mma_kernel(Params p) {
  constexpr int D = C::D, BM = C::BM, BN = C::BN, STAGES = C::STAGES, THREADS = C::THREADS;
  constexpr bool kNoSoftmax = !Softmax::present, kNoRing = !Ring::present;
  constexpr int MT = C::MT, WROWS = C::WROWS;
  // load_rows_async's OPAQUE: only where the allocation spilled without it (causal, D = 128, MT = 2).
  constexpr bool kOpaque = D == 128 && MT == 2 && !C::HEAD_MAJOR;
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
  int qt, bh;
  tile_of(t, p.nqt, BH, C::HEAD_MAJOR, qt, bh);
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
    load_rows_async<BN, D, THREADS, kOpaque>(ks, Kg + static_cast<long long>(n) * BN * D, valid, tid);
    load_rows_async<BN, D, THREADS, kOpaque>(ks + C::KV_ELEMS, Vg + static_cast<long long>(n) * BN * D, valid, tid);
  };

  // ---- prologue: Q (group 0), then KV tiles n_begin .. n_begin+STAGES-2 (one group each, empty
  // groups committed too so the wait counts below stay uniform).
  load_rows_async<BM, D, THREADS, kOpaque>(Qs, Qg, p.Sq - q0, tid);
  cp_async_commit();
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (n_begin + st < n_end) load_kv(n_begin + st, st);
    cp_async_commit();
  }
  if constexpr (kNoRing) cp_async_wait<0>();  // stage 0 stays resident for the loop
  else cp_async_wait<STAGES - 1>();  // Q has landed (the KV groups may still be in flight)
  __syncthreads();

  // Q fragments: ldmatrix.x4 over a 16x16 block, lanes 0-7 rows 0-7 / chunk 2kk (a0), 8-15 rows
  // 8-15 (a1), 16-23 rows 0-7 / chunk 2kk+1 (a2), 24-31 rows 8-15 / chunk 2kk+1 (a3).
  //
  // Swizzled addresses without per-k-step registers: every ldmatrix row r of a lane has
  // r & 7 == lane & 7, and chunk 2kk + c (c in {0,1}) of it sits at element
  //   r * D + ((2kk + c) ^ (lane & 7)) * 8 = (r * D + ((c ^ (lane & 7)) << 3)) ^ (kk << 4)
  // (the XOR stays inside the row's low 7 bits: kk << 4 < D, (c ^ (lane & 7)) << 3 < 64), so a
  // lane keeps ONE offset per operand and steps k with an XOR, rows with an immediate add.
  const int x7 = lane & 7;
  const int q_off = (warp * WROWS + x7 + ((lane >> 3) & 1) * 8) * D + (((lane >> 4) ^ x7) << 3);
  // MT == 1: the warp's 16 rows stay in registers for the whole KV loop (MT == 2 re-reads them).
  uint32_t qf[MT == 1 ? D / 16 : 1][4];
  if constexpr (MT == 1) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      ldmatrix_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], Qs + (q_off ^ (kk << 4)));
  }

  float o[MT][D / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) o[mt][dn][0] = o[mt][dn][1] = o[mt][dn][2] = o[mt][dn][3] = 0.f;
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = neg_inf_f(), l[mt][0] = l[mt][1] = 0.f;
  const int wrow0 = q0 + warp * WROWS;  // first query row of this warp
  // This thread's rows: wrow0 + 16 mt + g and + 8.

  // Per-lane ldmatrix offsets (elements, swizzled for k-step 0) inside a K / V tile.
  // K (non-trans, x4 over 16 keys x 16 d): matrix mi = lane/8 -> keys +(mi>>1)*8, chunk +(mi&1).
  const int k_off = (((lane >> 4) << 3) + x7) * D + ((((lane >> 3) & 1) ^ x7) << 3);
  // V (trans, x4 over 16 keys x 16 d): matrix mi -> keys +(mi&1)*8, chunk +(mi>>1).
  const int v_off = ((((lane >> 3) & 1) << 3) + x7) * D + (((lane >> 4) ^ x7) << 3);

  for (int n = n_begin; n < n_end; ++n) {
    const int it = n - n_begin;
    if constexpr (!kNoRing) {
      cp_async_wait<STAGES - 2>();  // tile n has landed for this thread's copies ...
      __syncthreads();              // ... and everyone's; the stage refilled below is free
      const int nn = n + STAGES - 1;
      if (nn < n_end) load_kv(nn, (it + STAGES - 1) % STAGES);
      cp_async_commit();
    }
    const __nv_bfloat16* Ks = KVs + (kNoRing ? 0 : it % STAGES) * 2 * C::KV_ELEMS;
    const __nv_bfloat16* Vs = Ks + C::KV_ELEMS;

    // ---- S = Q K^T : WROWS rows x BN keys per warp, fp32; then the stale-max fast path
    // (unmasked tiles after the piece's first): P = exp2(s*sl2 - m*sl2) with each row's max as it
    // stands, no row max (BN/4 FMNMX + 2 SHFL per row and thread), if every row sum of the warp
    // stays <= kStaleSumMax (softmax_online.cuh; a max of -inf gives P = inf and fails). On success
    // O and l need no rescale (the max did not move); on failure the second pass computes S again
    // from the same shared tile (no __syncthreads since) for the online softmax below. One rolled
    // loop, so the S code exists once (two copies made ptxas spill at MT = 2, D = 128).
    // D = 128 only: at D = 64 it is slower.
    constexpr bool kStale = D == 128 && !kNoSoftmax;
    const int kv0 = n * BN;
    const bool masked = kv0 + BN > p.Skv || (p.causal && kv0 + BN - 1 > wrow0 + off);
    float s[MT][BN / 8][4];
    bool fast = false;
#pragma unroll 1
    for (int pass = !kStale || masked || it == 0 ? 1 : 0; pass < 2 && !fast; ++pass) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qa[MT][4];
        if constexpr (MT == 1) {
#pragma unroll
          for (int e = 0; e < 4; ++e) qa[0][e] = qf[kk][e];
        } else {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
            ldmatrix_x4(qa[mt][0], qa[mt][1], qa[mt][2], qa[mt][3], Qs + (q_off ^ (kk << 4)) + mt * 16 * D);
        }
        const __nv_bfloat16* kp = Ks + (k_off ^ (kk << 4));
#pragma unroll
        for (int nj = 0; nj < BN / 16; ++nj) {
          uint32_t b0[2], b1[2];
          ldmatrix_x4(b0[0], b0[1], b1[0], b1[1], kp + nj * 16 * D);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {  // one K fragment feeds every m-tile of the warp
            mma_bf16_16816(s[mt][2 * nj], qa[mt], b0);
            mma_bf16_16816(s[mt][2 * nj + 1], qa[mt], b1);
          }
        }
      }
      if (pass == 0) {
        float sum[MT][2];
        bool ok = true;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float ofs = m[mt][h] * p.sl2;
            sum[mt][h] = 0.f;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
              s[mt][j][2 * h] = online_prob(s[mt][j][2 * h], ofs, p.sl2);
              s[mt][j][2 * h + 1] = online_prob(s[mt][j][2 * h + 1], ofs, p.sl2);
              sum[mt][h] += s[mt][j][2 * h] + s[mt][j][2 * h + 1];
            }
            ok = ok && sum[mt][h] <= kStaleSumMax;  // NaN / inf: false
          }
        fast = __all_sync(0xffffffffu, ok);
        if (fast) {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) l[mt][0] += sum[mt][0], l[mt][1] += sum[mt][1];
        }
      }
    }

    // ---- mask: keys past Skv (ragged tile) and, causal, keys past the row's diagonal
    if (!kNoSoftmax && masked) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = kv0 + j * 8 + 2 * t4 + (e & 1);
            const int row = wrow0 + mt * 16 + g + (e >> 1) * 8;
            if (key >= p.Skv || (p.causal && key > row + off)) s[mt][j][e] = neg_inf_f();
          }
    }

    // ---- online softmax on the fragments (rows g: e = 0,1; g+8: e = 2,3)
    float alpha[MT][2];
    bool same = true;  // no row max of this thread moved: O and l need no rescale
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (fast || kNoSoftmax) continue;  // warp-uniform
        float mx = neg_inf_f();
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * h], s[mt][j][2 * h + 1]));
        mx = quad_max(mx);
        const float m_new = fmaxf(m[mt][h], mx);
        same = same && m_new == m[mt][h];
        const float ofs = online_row_offset(m_new, p.sl2);
        alpha[mt][h] = online_rescale(m[mt][h], ofs, p.sl2);
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          s[mt][j][2 * h] = online_prob(s[mt][j][2 * h], ofs, p.sl2);
          s[mt][j][2 * h + 1] = online_prob(s[mt][j][2 * h + 1], ofs, p.sl2);
          sum += s[mt][j][2 * h] + s[mt][j][2 * h + 1];
        }
        // per-thread partial; quad-reduced once at the end. When the max did not move, alpha is 1
        // up to the rounding of m * sl2 (or O is still 0), so the O rescale below may be skipped.
        l[mt][h] = fmaf(l[mt][h], alpha[mt][h], sum);
        m[mt][h] = m_new;
      }
    // Rescale O only when some row max of the warp moved (warp-uniform branch): after the first
    // few key tiles the running max rarely changes, and this is D/2 * MT multiplies per thread.
    if (!kNoSoftmax && !fast && !__all_sync(0xffffffffu, same)) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int dn = 0; dn < D / 8; ++dn) {
          o[mt][dn][0] *= alpha[mt][0];
          o[mt][dn][1] *= alpha[mt][0];
          o[mt][dn][2] *= alpha[mt][1];
          o[mt][dn][3] *= alpha[mt][1];
        }
    }

    // ---- O += P V : P packed to bf16 from the S accumulators (see the file comment; the fp32
    // scores die here, half their registers), V via ldmatrix.trans, d chunks outer so each V
    // address is one XOR per 16 d columns and an immediate add per 16 keys.
    uint32_t a[MT][BN / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        a[mt][kk][0] = pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][kk][1] = pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][kk][2] = pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][kk][3] = pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      const __nv_bfloat16* vp = Vs + (v_off ^ (dp << 4));
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        uint32_t b0[2], b1[2];
        ldmatrix_x4_trans(b0[0], b0[1], b1[0], b1[1], vp + kk * 16 * D);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {  // one V fragment feeds every m-tile of the warp
          mma_bf16_16816(o[mt][2 * dp], a[mt][kk], b0);
          mma_bf16_16816(o[mt][2 * dp + 1], a[mt][kk], b1);
        }
      }
    }
  }
  cp_async_wait<0>();  // only empty groups remain; drain them before the block exits

  // ---- epilogue
  float inv[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[mt][h] = quad_sum(l[mt][h]);
      // (without the softmax l stays 0: O is stored unscaled, so that no product is optimized away)
      inv[mt][h] = kNoSoftmax ? 1.f : l[mt][h] > 0.f ? 1.f / l[mt][h] : 0.f;
    }

  if (nsplit == 1) {
    // Stage bf16 O in this warp's own WROWS Q rows (no other warp reads them), then write whole
    // 16-byte chunks of each row. MT == 2 read Q from there during the loop: let every lane's last
    // ldmatrix complete before any lane overwrites the rows.
    __syncwarp();
    __nv_bfloat16* ws = Qs + warp * WROWS * D;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r0 = mt * 16 + g, r1 = r0 + 8;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        *reinterpret_cast<uint32_t*>(ws + r0 * D + swz(r0, dn) * 8 + 2 * t4) =
            pack_bf16x2(o[mt][dn][0] * inv[mt][0], o[mt][dn][1] * inv[mt][0]);
        *reinterpret_cast<uint32_t*>(ws + r1 * D + swz(r1, dn) * 8 + 2 * t4) =
            pack_bf16x2(o[mt][dn][2] * inv[mt][1], o[mt][dn][3] * inv[mt][1]);
      }
    }
    __syncwarp();
    __nv_bfloat16* Og = p.O + (static_cast<long long>(bh) * p.Sq + wrow0) * D;
#pragma unroll
    for (int it = 0; it < WROWS * C::CH / 32; ++it) {
      const int idx = lane + it * 32;
      const int r = idx / C::CH, c = idx % C::CH;
      if (wrow0 + r < p.Sq)
        *reinterpret_cast<uint4*>(Og + static_cast<long long>(r) * D + c * 8) =
            *reinterpret_cast<const uint4*>(ws + r * D + swz(r, c) * 8);
    }
  } else {
    // Partial of a split tile: normalized fp32 O and its base-2 LSE, merged by the combine kernel.
    const long long piece = static_cast<long long>(t - p.full_blocks) * nsplit + split;
    float* wo = p.ws_o + (piece * BM + warp * WROWS) * D;
    float* wl = p.ws_lse + piece * BM + warp * WROWS;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r0 = mt * 16 + g, r1 = r0 + 8;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        *reinterpret_cast<float2*>(wo + r0 * D + dn * 8 + 2 * t4) =
            make_float2(o[mt][dn][0] * inv[mt][0], o[mt][dn][1] * inv[mt][0]);
        *reinterpret_cast<float2*>(wo + r1 * D + dn * 8 + 2 * t4) =
            make_float2(o[mt][dn][2] * inv[mt][1], o[mt][dn][3] * inv[mt][1]);
      }
      if (t4 == 0) {
        wl[r0] = row_lse2(m[mt][0], l[mt][0], p.sl2);
        wl[r1] = row_lse2(m[mt][1], l[mt][1], p.sl2);
      }
    }
  }
}

// The problem's part of the kernel parameters (tensors, sizes, scale, query tiles of C::BM rows;
// full_blocks, splits and the workspace are the caller's), after opting the kernel into C's shared
// memory: launch_whole_tiles below (rung 02, tools/attn_ceiling) and rung 03's prefill.
template <class C, class Softmax = OnlineSoftmax, class Ring = CpAsyncRing>
Params problem_params(const AttentionArgs& a) {
  attention_smem_optin(reinterpret_cast<const void*>(flash_mma_kernel<C, Softmax, Ring>), C::SMEM);
  Params p{};
  p.Q = a.Q; p.K = a.K; p.V = a.V; p.O = a.O;
  p.B = a.B; p.Hq = a.Hq; p.Hkv = a.Hkv; p.Sq = a.Sq; p.Skv = a.Skv; p.group = a.Hq / a.Hkv;
  p.causal = a.causal ? 1 : 0;
  p.sl2 = attention_scale_log2(a);
  p.nqt = (a.Sq + C::BM - 1) / C::BM;
  return p;
}

// One block per query tile, every tile's whole KV range (rung 02; tools/attn_ceiling): the
// launch of flash_mma_kernel<C> with no split, tiles in C's order.
template <class C, class Softmax = OnlineSoftmax, class Ring = CpAsyncRing>
void launch_whole_tiles(const AttentionArgs& a, cudaStream_t s) {
  Params p = problem_params<C, Softmax, Ring>(a);
  const long long tiles = static_cast<long long>(p.nqt) * a.B * a.Hq;
  p.full_blocks = static_cast<int>(tiles);  // every tile whole: no split, no workspace
  p.splits = 1;
  flash_mma_kernel<C, Softmax, Ring><<<static_cast<unsigned>(tiles), C::THREADS, C::SMEM, s>>>(p);
  KL_CHECK_LAUNCH();
}

}  // namespace flash
}  // namespace kl
