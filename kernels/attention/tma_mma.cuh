// kernels/attention/tma_mma.cuh — rung 11's kernel: rung 03's mma.sync prefill tile (flash_mma.cuh:
// fragments, stale-max pass, mask, online softmax, P in registers, split partials) with Q, K and V
// brought into shared memory by TMA boxes through a ring of mbarriers.
//
// Shared memory (1024-aligned): Q [BM rows], STAGES x (K [BN rows], V [BN rows]), then full[STAGES],
// q_full and released[STAGES] (int). Every tile is D / 64 panels of ROWS rows x 128 bytes, as TMA
// writes a 64-column box with the 128-byte swizzle: chunk c of row r sits in panel c / 8 at chunk
// (c % 8) ^ (r % 8). At D = 64 that is flash_mma.cuh's layout; at D = 128 the row's second half
// moves to the second panel (panel_off), which only changes the per-lane offsets and the k-step
// term: an XOR inside the panel plus an immediate panel offset, as flash_mma.cuh's XOR alone.
// Threads: rung 03's four warps and nothing else. Thread 0 issues Q and the first STAGES tiles; after
// that the last warp to finish with a stage refills it: each warp, after its last ldmatrix of the
// stage (fence.proxy.async first), counts itself in released[s] with a shared atomic, and the warp
// whose count completes the round issues the next tile's boxes. No warp waits for another to free a
// stage, and no producer warp takes registers (with one, two blocks per SM would not fit).
// Barriers: q_full completes once (Q's bytes); full[s] on the issuing lane's arrive + the stage's
// bytes (out-of-range rows zero-filled, counted too). The only block-wide barrier follows init.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>

#include "attention/flash_mma.cuh"
#include "common/hopper.cuh"

namespace kl {
namespace flash {

// A TMA-fed tile's named choices (Rows128Tile's). m_tiles_per_warp: 2 (128 rows, Q re-read from
// shared memory) or 1 (64 rows, Q in registers); stages: ring depth; min_blocks_per_sm: two, as
// rung 03 (four warps of up to 255 registers each).
template <int D, int MT, bool HEAD_MAJOR>
struct TmaTile {
  static constexpr int head_dim = D;
  static constexpr int m_tiles_per_warp = MT;
  static constexpr int kv_tile = 64;
  // D = 128: 2 stages, so that the 128-row tile fits sm_120's shared memory per block.
  static constexpr int stages = D == 64 ? 3 : 2;
  static constexpr int min_blocks_per_sm = 2;
  static constexpr bool head_major = HEAD_MAJOR;
};

template <class Tile>
struct TmaCfg {
  static constexpr int D = Tile::head_dim, MT = Tile::m_tiles_per_warp, BN = Tile::kv_tile;
  static constexpr int STAGES = Tile::stages, MINB = Tile::min_blocks_per_sm;
  static constexpr bool HEAD_MAJOR = Tile::head_major;
  static constexpr int CONSUMER_WARPS = 4;  // every warp computes; see the header for who loads
  static constexpr int THREADS = CONSUMER_WARPS * 32;
  static constexpr int WROWS = 16 * MT, BM = WROWS * CONSUMER_WARPS;
  static constexpr int CH = D / 8, PANELS = D / 64;
  static constexpr int Q_ELEMS = BM * D, KV_ELEMS = BN * D;
  static constexpr int STAGE_BYTES = 2 * KV_ELEMS * 2;
  static constexpr int TILE_BYTES = (Q_ELEMS + STAGES * 2 * KV_ELEMS) * 2;
  static constexpr int SMEM = 1024 + TILE_BYTES + (STAGES + 1) * 8 + STAGES * 4;
  static_assert(D == 64 || D == 128, "D is 64 or 128");
  static_assert(MT == 1 || MT == 2, "one or two m-tiles per warp");
  static_assert(STAGES >= 2, "the ring refills one stage while another is read");
  static_assert((BM * 128) % 1024 == 0 && (BN * 128) % 1024 == 0, "every panel stays 1024-aligned");
  static_assert(BM <= 256 && BN <= 256, "a TMA box has at most 256 rows");
};

// Element offset of 16-byte chunk c of row r in a tile of ROWS rows (layout above).
template <int ROWS>
__device__ __forceinline__ int panel_off(int r, int c) {
  return (c >> 3) * (ROWS * 64) + r * 64 + (((c & 7) ^ (r & 7)) << 3);
}

// Which per-tile address inputs of the KV loop an empty asm hides from the optimizer.
enum class Hide { None, Q, StageAndQ, All };

// Block -> (tile t, query tile qt, head bh, piece split of nsplit): flash_mma_kernel's schedule.
struct TilePiece {
  int t, qt, bh, split, nsplit;
};
template <class C>
__device__ __forceinline__ TilePiece tile_piece(const Params& p, int L) {
  TilePiece r;
  r.split = 0, r.nsplit = 1;
  if (L < p.full_blocks) {
    r.t = L;
  } else {
    const int k = L - p.full_blocks;
    r.t = p.full_blocks + k / p.splits;
    r.split = k % p.splits;
    r.nsplit = p.splits;
  }
  tile_of(r.t, p.nqt, p.B * p.Hq, C::HEAD_MAJOR, r.qt, r.bh);
  return r;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
template <class C>
__device__ __forceinline__ void tma_mma_tile(const Params& p, const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                             const CUtensorMap* tmV) {
  constexpr int D = C::D, BM = C::BM, BN = C::BN, STAGES = C::STAGES;
  constexpr int MT = C::MT, WROWS = C::WROWS;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  // Rounded up to 1024 bytes (the swizzle's phase) as an offset from the shared symbol, so that the
  // tile addresses stay 32-bit shared-window offsets.
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(smem);
  __nv_bfloat16* KVs = Qs + C::Q_ELEMS;  // stage st: K at st*2*KV_ELEMS, V right after
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + C::TILE_BYTES);
  uint64_t* q_full = full + STAGES;
  int* released = reinterpret_cast<int*>(q_full + 1);  // warps done with stage s in this round
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  // ---- which tile, which piece of its KV range (flash_mma_kernel's schedule)
  const TilePiece tp = tile_piece<C>(p, blockIdx.x);
  const int bh = tp.bh;
  const int split = tp.split, nsplit = tp.nsplit;
  const int b = bh / p.Hq, hq = bh % p.Hq, hkv = hq / p.group;
  const int q0 = tp.qt * BM;
  const int off = p.Skv - p.Sq;
  const int kv_end = p.causal ? min(p.Skv, q0 + BM + off) : p.Skv;
  const int n_tiles = (kv_end + BN - 1) / BN;
  const int n_begin = static_cast<int>(static_cast<long long>(n_tiles) * split / nsplit);
  const int n_end = static_cast<int>(static_cast<long long>(n_tiles) * (split + 1) / nsplit);

  // K and V tile n of KV head bkv into stage st: one lane, the stage's bytes on full[st] (keys >= Skv
  // zero-filled).
  // `base` is the aligned shared-memory base (smem), passed in so that a refill can form it anew.
  auto load_kv = [tmK, tmV](unsigned char* base, int n, int st, int bkv) {
    __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(base) + C::Q_ELEMS + st * 2 * C::KV_ELEMS;
    uint64_t* fb = reinterpret_cast<uint64_t*>(base + C::TILE_BYTES) + st;
    mbar_arrive_expect_tx(fb, C::STAGE_BYTES);
#pragma unroll
    for (int pn = 0; pn < C::PANELS; ++pn) {
      tma_load_3d_cta(ks + pn * BN * 64, tmK, fb, pn * 64, n * BN, bkv);
      tma_load_3d_cta(ks + C::KV_ELEMS + pn * BN * 64, tmV, fb, pn * 64, n * BN, bkv);
    }
  };
  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int st = 0; st < STAGES; ++st) mbar_init(&full[st], 1), released[st] = 0;
    fence_barrier_init();
  }
  __syncthreads();  // the only block-wide barrier: the barriers exist before anyone uses them
  if (tid == 0) {  // Q and the first STAGES tiles; the warps refill the ring from here on
    tma_prefetch_desc(tmQ);
    tma_prefetch_desc(tmK);
    tma_prefetch_desc(tmV);
    // Q rows past Sq (this head's) are zero-filled, as load_rows_async does.
    mbar_arrive_expect_tx(q_full, C::Q_ELEMS * 2);
#pragma unroll
    for (int pn = 0; pn < C::PANELS; ++pn) tma_load_3d_cta(Qs + pn * BM * 64, tmQ, q_full, pn * 64, q0, bh);
    for (int n = n_begin; n < n_end && n < n_begin + STAGES; ++n) load_kv(smem, n, n - n_begin, b * p.Hkv + hkv);
  }

  mbar_wait(q_full, 0);  // also before the epilogue's O staging in Qs: no TMA write can follow it

  // Per-lane ldmatrix addresses (32-bit shared window, bytes), flash_mma_kernel's with 128-byte
  // panel rows: chunk 2kk + c of a row r (r % 8 == lane % 8) is at byte
  //   (addr0 ^ ((kk % 4) << 5)) + (kk / 4) * ROWS * 128,
  // the XOR inside the row's 128 bytes (every tile 1024-aligned), the panel an immediate.
  const int x7 = lane & 7;
  const uint32_t q_addr =
      smem_u32(Qs) + 2 * ((warp * WROWS + x7 + ((lane >> 3) & 1) * 8) * 64 + (((lane >> 4) ^ x7) << 3));
  uint32_t qf[MT == 1 ? D / 16 : 1][4];
  if constexpr (MT == 1) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      ldsm_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], (q_addr ^ ((kk & 3) << 5)) + (kk >> 2) * BM * 128);
  }

  float o[MT][D / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) o[mt][dn][0] = o[mt][dn][1] = o[mt][dn][2] = o[mt][dn][3] = 0.f;
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = neg_inf_f(), l[mt][0] = l[mt][1] = 0.f;
  const int wrow0 = q0 + warp * WROWS;

  const uint32_t k_off = 2 * ((((lane >> 4) << 3) + x7) * 64 + ((((lane >> 3) & 1) ^ x7) << 3));
  const uint32_t v_off =
      2 * (((((lane >> 3) & 1) << 3) + x7) * 64 + (((lane >> 4) ^ x7) << 3)) + C::KV_ELEMS * 2;
  const uint32_t kv_addr = smem_u32(KVs);
#if __CUDA_ARCH__ >= 1200
  constexpr Hide kHide = Hide::StageAndQ;
#else
  constexpr Hide kHide = C::HEAD_MAJOR ? Hide::Q : (D == 128 && MT == 2 ? Hide::None : Hide::All);
#endif

  for (int n = n_begin; n < n_end; ++n) {
    const int it = n - n_begin;
    // Stage and phase from the tile index (no loop-carried ring state).
    const int s_idx = it % STAGES;
    mbar_wait(&full[s_idx], static_cast<uint32_t>(it / STAGES) & 1u);  // tile n has landed
    // Some of the stage's base and the lanes' offsets are hidden from the optimizer (kHide), so
    // that ptxas forms the ldmatrix addresses per tile instead of keeping loop-invariant address
    // sets live at the register limit. Which values is an allocation choice per architecture and tile
    // order: the set each 128-row D = 128 kernel builds without a spill.
    uint32_t st_addr = kv_addr + s_idx * C::STAGE_BYTES, ko = k_off, vo = v_off, qo = q_addr;
    if constexpr (kHide == Hide::Q) {
      asm volatile("" : "+r"(qo));
    } else if constexpr (kHide == Hide::StageAndQ) {
      asm volatile("" : "+r"(st_addr), "+r"(qo));
    } else if constexpr (kHide == Hide::All) {
      asm volatile("" : "+r"(st_addr), "+r"(ko), "+r"(vo), "+r"(qo));
    }
    const uint32_t k_addr = st_addr + ko;

    // ---- S = Q K^T, then the stale-max fast path (flash_mma_kernel's, D = 128 only)
    constexpr bool kStale = D == 128;
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
            ldsm_x4(qa[mt][0], qa[mt][1], qa[mt][2], qa[mt][3],
                    (qo ^ ((kk & 3) << 5)) + (kk >> 2) * BM * 128 + mt * 16 * 128);
        }
        const uint32_t kp = (k_addr ^ ((kk & 3) << 5)) + (kk >> 2) * BN * 128;
#pragma unroll
        for (int nj = 0; nj < BN / 16; ++nj) {
          uint32_t b0[2], b1[2];
          ldsm_x4(b0[0], b0[1], b1[0], b1[1], kp + nj * 16 * 128);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
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
            ok = ok && sum[mt][h] <= kStaleSumMax;
          }
        fast = __all_sync(0xffffffffu, ok);
        if (fast) {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) l[mt][0] += sum[mt][0], l[mt][1] += sum[mt][1];
        }
      }
    }

    // ---- mask: keys past Skv (zero-filled rows of a ragged tile) and, causal, past the diagonal
    if (masked) {
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

    // ---- online softmax on the fragments
    float alpha[MT][2];
    bool same = true;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (fast) continue;  // warp-uniform
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
        l[mt][h] = fmaf(l[mt][h], alpha[mt][h], sum);
        m[mt][h] = m_new;
      }
    if (!fast && !__all_sync(0xffffffffu, same)) {
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

    // ---- O += P V : P from the S accumulators, V via ldmatrix.trans
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
      const uint32_t vp = ((st_addr + vo) ^ ((dp & 3) << 5)) + (dp >> 2) * BN * 128;
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        uint32_t b0[2], b1[2];
        ldsm_x4_trans(b0[0], b0[1], b1[0], b1[1], vp + kk * 16 * 128);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_bf16_16816(o[mt][2 * dp], a[mt][kk], b0);
          mma_bf16_16816(o[mt][2 * dp + 1], a[mt][kk], b1);
        }
      }
    }
    // This warp's ldmatrix reads (generic proxy) are ordered before the next TMA write (async
    // proxy) into the stage; the warp whose count completes the stage's round loads tile
    // n + STAGES into it (the others go on without waiting).
    fence_proxy_async_smem();
    __syncwarp();
    if (lane == 0 && n + STAGES < n_end) {
      __threadfence_block();
      // atomicInc wraps the count to 0 on the last warp's arrival: the stage's next round starts at 0.
      if (atomicInc(reinterpret_cast<unsigned*>(&released[s_idx]), C::CONSUMER_WARPS - 1) == C::CONSUMER_WARPS - 1) {
        __threadfence_block();
        // The tile's head again, from the block index: nothing of the refill stays live across
        // the loop (at the 255-register limit of the 128-row tiles).
        int L = blockIdx.x;
        uint32_t r0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
        asm volatile("" : "+r"(L), "+r"(r0));
        const TilePiece rp = tile_piece<C>(p, L);
        const int rb = rp.bh / p.Hq;
        load_kv(smem_raw + (((r0 + 1023u) & ~1023u) - r0), n + STAGES, s_idx,
                rb * p.Hkv + (rp.bh % p.Hq) / p.group);
      }
    }
  }

  // ---- epilogue (flash_mma_kernel's, O staged through this warp's own Q rows in panel layout)
  float inv[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[mt][h] = quad_sum(l[mt][h]);
      inv[mt][h] = l[mt][h] > 0.f ? 1.f / l[mt][h] : 0.f;
    }

  // The tile and piece again, from a block index the optimizer cannot see through: none of them
  // stays live across the KV loop (registers are at the limit there).
  int L = blockIdx.x;
  asm volatile("" : "+r"(L));
  const TilePiece ep = tile_piece<C>(p, L);
  if (ep.nsplit == 1) {
    __syncwarp();  // MT == 2 read Q rows from here in the loop
    const int wr = warp * WROWS;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r0 = wr + mt * 16 + g, r1 = r0 + 8;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        *reinterpret_cast<uint32_t*>(Qs + panel_off<BM>(r0, dn) + 2 * t4) =
            pack_bf16x2(o[mt][dn][0] * inv[mt][0], o[mt][dn][1] * inv[mt][0]);
        *reinterpret_cast<uint32_t*>(Qs + panel_off<BM>(r1, dn) + 2 * t4) =
            pack_bf16x2(o[mt][dn][2] * inv[mt][1], o[mt][dn][3] * inv[mt][1]);
      }
    }
    __syncwarp();
    __nv_bfloat16* Og = p.O + (static_cast<long long>(ep.bh) * p.Sq + wrow0) * D;
#pragma unroll
    for (int i = 0; i < WROWS * C::CH / 32; ++i) {
      const int idx = lane + i * 32;
      const int r = idx / C::CH, c = idx % C::CH;
      if (wrow0 + r < p.Sq)
        *reinterpret_cast<uint4*>(Og + static_cast<long long>(r) * D + c * 8) =
            *reinterpret_cast<const uint4*>(Qs + panel_off<BM>(wr + r, c));
    }
  } else {
    const long long piece = static_cast<long long>(ep.t - p.full_blocks) * ep.nsplit + ep.split;
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
#endif

template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB)
    attention_tma_mma_sync_kernel(Params p, const __grid_constant__ CUtensorMap tmQ,
                                  const __grid_constant__ CUtensorMap tmK,
                                  const __grid_constant__ CUtensorMap tmV) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  tma_mma_tile<C>(p, &tmQ, &tmK, &tmV);
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_90+ code: supports() refuses such cards
#endif
}

}  // namespace flash
}  // namespace kl
