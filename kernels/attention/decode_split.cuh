// kernels/attention/decode_split.cuh — the split-KV decode step that rung 03 (cp.async ring) and
// rung 09 (TMA + mbarrier ring, sm_90a) share: the GQA row packing, the per-tile math of one
// 64-key K/V tile, the merge of the 4 warps, and the in-kernel merge of the split pieces.
//
// Problem (decode: Sq <= 16): the G = Hq / Hkv query heads of one KV head and their Sq queries are
// packed into the 16 rows of one m16 tile (packed row pr = head_in_group * Sq + i), so K and V are
// streamed from DRAM once per KV head. A block = 4 consumer warps; warp w takes keys 16w..16w+15 of
// every 64-key tile (one m16n8k16 k-step of P V) with its own online-softmax state; the 4 states
// are merged through shared memory at the end.
//
// Split KV and the in-kernel merge ("the last piece merges"). The KV range of each (b, kv head,
// 16-row tile) is cut into `splits` pieces, one block each. A piece writes its normalized fp32
// partial O and base-2 log-sum-exp to the workspace; every piece but the last then fences and
// release-stores its flag (the launch's epoch) and exits. The last piece (split = splits - 1, the
// tile's highest block index) stores its own partial, acquires the other pieces' flags, lowering
// each once seen, and merges the pieces in split order, O = sum_s 2^(lse_s - max) O_s / sum_s
// 2^(lse_s - max), writing bf16 O: the same bits on every launch. No second kernel, no second
// launch. It waits only for lower block indices, which the hardware dispatches no later than
// itself (blocks start in index order; the usual split-K "last block" argument), so the wait
// cannot hold an SM that a piece it waits for needs, even when the grid is more than one wave
// (the Stream-K fixups of common/streamk.cuh, whose owners wait for later CTAs, rely instead on a
// persistent grid that is all resident; their flag helpers are reused here). Flags (the
// first kFlagBytes of the workspace, one word per piece) count only when equal to this launch's
// epoch (a host counter, never 0 or ~0), so nothing is cleared between launches; the caller zeroes
// the workspace once (garbage would be harmless unless it equalled the epoch exactly, but a reused
// buffer can hold small integers); the merger lowers each flag, so a CUDA graph replaying one
// captured launch (same epoch) waits afresh. Why one
// merger: an atomicCAS ticket serializes the pieces of a tile (they finish together, so the CAS
// retries cost one round trip per piece), and letting every piece raise its flag, fence and read
// all the others (whoever sees them all merges) puts two more L2 round trips on the step's
// critical path.
// Two launches sharing one workspace must not run concurrently (their partials would collide
// anyway).
#pragma once
#include <cuda_bf16.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "kl/attention.h"
#include "attention/attention_internal.h"
#include "kl/check.h"
#include "kl/device.h"
#include "common/mma.cuh"
#include "common/pdl.cuh"
#include "common/softmax_online.cuh"
#include "common/streamk.cuh"

namespace kl {
namespace dec {

constexpr int kRows = 16;  // packed query rows per block (one m16 tile)
constexpr int kBN = 64;    // keys per K/V tile; consumer warp w takes keys 16w..16w+15
constexpr int kWarps = 4;  // consumer warps
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxSplits = 64;      // pieces per tile (bounds the merging block's L2 reads)
constexpr int kMaxPieces = 8192;    // split pieces per launch (flags); plans with more run unsplit
constexpr size_t kFlagBytes = size_t(kMaxPieces) * sizeof(unsigned);  // 32 KB
static_assert(kBN == 16 * kWarps, "each warp owns one 16-key k-step of every tile");
static_assert(kFlagBytes % 256 == 0, "partials after the flags stay 256-byte aligned");

struct Params {
  const __nv_bfloat16* Q;
  const __nv_bfloat16* K;
  const __nv_bfloat16* V;
  __nv_bfloat16* O;
  int B, Hq, Hkv, Sq, Skv, group, causal;
  float sl2;
  int R;       // packed rows per KV head: group * Sq
  int mtiles;  // ceil(R / 16)
  int splits;  // KV pieces per tile (1: write O directly)
  unsigned epoch;                 // this launch's flag value (splits > 1)
  unsigned* flags;                // [tile][split]          (workspace bytes [0, kFlagBytes))
  float* ws_o;                    // [tile][split][16][D]   normalized partial O
  float* ws_lse;                  // [tile][split][16]      base-2 log-sum-exp of each partial row
};

// Block -> (tile, split); tile = (b * Hkv + hkv) * mtiles + mt.
struct Work {
  int tile, split, mt, b, hkv, bk;
};
__device__ __forceinline__ Work work_of(const Params& p, int block) {
  Work w;
  w.split = block % p.splits;
  w.tile = block / p.splits;
  w.mt = w.tile % p.mtiles;
  w.bk = w.tile / p.mtiles;
  w.b = w.bk / p.Hkv;
  w.hkv = w.bk % p.Hkv;
  return w;
}

// Barrier of the 128 consumer threads only (id 1; rung 09's producer warp never joins it).
__device__ __forceinline__ void consumer_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
}

// Element offset of 16-byte chunk c (0 .. D/8-1) of K/V row r (0..63) in a stage tile.
//  * row-major [64][D], chunk c at c ^ (r & 7) (rung 03's cp.async layout; flash::swz);
//  * PANELS: the TMA 128-byte-swizzle layout, D/64 panels [64 rows][64 cols], chunk c in panel
//    c / 8 at (c % 8) ^ (r & 7) (the hardware's SWIZZLE_128B pattern on a 1024-byte aligned tile).
// Both put the 8 row addresses of every ldmatrix 8x8 matrix in 8 distinct 16-byte bank groups.
template <int D, bool PANELS>
__device__ __forceinline__ int kv_off(int r, int c) {
  if constexpr (PANELS) return (c >> 3) * (kBN * 64) + r * 64 + (((c & 7) ^ (r & 7)) << 3);
  else return r * D + ((c ^ (r & 7)) << 3);
}

// Q rows of this tile into smem Qs [16][D] (row-major, chunk-swizzled) with cp.async; packed rows
// >= R are zero-filled. Call from the 128 consumer threads; commits one cp.async group.
template <int D>
__device__ __forceinline__ void load_q_async(const Params& p, const Work& w, __nv_bfloat16* Qs, int tid) {
  constexpr int CH = D / 8;
  static_assert((kRows * CH) % kThreads == 0, "Q copy loop divides evenly");
#pragma unroll
  for (int it = 0; it < kRows * CH / kThreads; ++it) {
    const int idx = tid + it * kThreads;
    const int r = idx / CH, c = idx % CH;
    const int pr = w.mt * kRows + r;
    const bool ok = pr < p.R;
    const int hq = w.hkv * p.group + (ok ? pr / p.Sq : 0), i = ok ? pr % p.Sq : 0;
    const __nv_bfloat16* src = p.Q + ((static_cast<long long>(w.b) * p.Hq + hq) * p.Sq + i) * D + c * 8;
    cp_async_16(Qs + r * D + ((c ^ (r & 7)) << 3), src, ok);
  }
  cp_async_commit();
}

// A fragments of the 16 packed Q rows (every warp holds all of them).
template <int D>
__device__ __forceinline__ void q_frags(const __nv_bfloat16* Qs, uint32_t (&qf)[D / 16][4], int lane) {
  const int r = (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int c = 2 * kk + (lane >> 4);
    ldmatrix_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], Qs + r * D + ((c ^ (r & 7)) << 3));
  }
}

// Online-softmax state of one warp: its 16 keys of every tile, the 16 packed rows (thread rows g,
// g + 8), O unnormalized.
template <int D>
struct WarpState {
  float o[D / 8][4];
  float m[2], l[2];
  __device__ __forceinline__ void init() {
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;
    m[0] = m[1] = neg_inf_f();
    l[0] = l[1] = 0.f;
  }
};

// One 64-key tile n (keys 64n..64n+63) for warp `warp`: S = Q K^T on its 16 keys, mask (ragged
// end, causal), online softmax, O += P V. Ks / Vs: the stage's K and V tiles (layout kv_off).
// i0 / i1: query index of the thread's two rows (causal limit key <= i + Skv - Sq).
template <int D, bool PANELS>
__device__ __forceinline__ void tile_step(const Params& p, WarpState<D>& st, const uint32_t (&qf)[D / 16][4],
                                          const __nv_bfloat16* Ks, const __nv_bfloat16* Vs, int n, int i0,
                                          int i1, int warp, int lane) {
  const int t4 = lane & 3;
  const int k_row = warp * 16 + ((lane >> 4) << 3) + (lane & 7), k_chk = (lane >> 3) & 1;
  const int v_row = warp * 16 + (((lane >> 3) & 1) << 3) + (lane & 7), v_chk = lane >> 4;
  // S = Q K^T for 16 rows x this warp's 16 keys, as two accumulator sets (even / odd k-steps) so
  // the dependent mma chain is D/32 long instead of D/16 (the tile's critical path: a block's
  // pieces of the small caches are a few tiles that land together and are then computed serially).
  float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  float s2[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t b0[2], b1[2];
    ldmatrix_x4(b0[0], b0[1], b1[0], b1[1], Ks + kv_off<D, PANELS>(k_row, 2 * kk + k_chk));
    if (kk % 2 == 0) {
      mma_bf16_16816(s[0], qf[kk], b0);
      mma_bf16_16816(s[1], qf[kk], b1);
    } else {
      mma_bf16_16816(s2[0], qf[kk], b0);
      mma_bf16_16816(s2[1], qf[kk], b1);
    }
  }
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[j][e] += s2[j][e];
  const int off = p.Skv - p.Sq;
  const int kw = n * kBN + warp * 16;  // first key of this warp's slice
  if (kw + 16 > p.Skv || (p.causal && kw + 15 > off)) {  // row i sees keys <= i + off, i >= 0
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kw + j * 8 + 2 * t4 + (e & 1);
        const int i = (e >> 1) ? i1 : i0;
        if (key >= p.Skv || (p.causal && key > i + off)) s[j][e] = neg_inf_f();
      }
  }
  float alpha[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = fmaxf(fmaxf(s[0][2 * h], s[0][2 * h + 1]), fmaxf(s[1][2 * h], s[1][2 * h + 1]));
    mx = quad_max(mx);
    const float m_new = fmaxf(st.m[h], mx);
    const float ofs = online_row_offset(m_new, p.sl2);
    alpha[h] = online_rescale(st.m[h], ofs, p.sl2);
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      s[j][2 * h] = online_prob(s[j][2 * h], ofs, p.sl2);
      s[j][2 * h + 1] = online_prob(s[j][2 * h + 1], ofs, p.sl2);
      sum += s[j][2 * h] + s[j][2 * h + 1];
    }
    st.l[h] = fmaf(st.l[h], alpha[h], sum);
    st.m[h] = m_new;
  }
  // Rescale O only when some row max of the warp moved (alpha = exp2(0) = 1 exactly otherwise):
  // after the first tiles of a piece it rarely does, and it is D/2 multiplies per thread.
  if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      st.o[dn][0] *= alpha[0];
      st.o[dn][1] *= alpha[0];
      st.o[dn][2] *= alpha[1];
      st.o[dn][3] *= alpha[1];
    }
  }
  const uint32_t a[4] = {pack_bf16x2(s[0][0], s[0][1]), pack_bf16x2(s[0][2], s[0][3]),
                         pack_bf16x2(s[1][0], s[1][1]), pack_bf16x2(s[1][2], s[1][3])};
#pragma unroll
  for (int dp = 0; dp < D / 16; ++dp) {
    uint32_t b0[2], b1[2];
    ldmatrix_x4_trans(b0[0], b0[1], b1[0], b1[1], Vs + kv_off<D, PANELS>(v_row, 2 * dp + v_chk));
    mma_bf16_16816(st.o[2 * dp], a, b0);
    mma_bf16_16816(st.o[2 * dp + 1], a, b1);
  }
}

// fp32 merge buffer the 4 warps use at the end (placed over the drained K/V stages).
template <int D>
struct MergeSmem {
  static constexpr int OSTRIDE = D + 4;  // floats; rows stay 16-byte aligned
  static constexpr int BYTES = (kWarps * kRows * OSTRIDE + 2 * kWarps * kRows) * 4;
};

// End of a piece, run by the 128 consumer threads after their last tile (and after a
// consumer_sync, so the K/V stages under `msm` are free): merge the 4 warps' (m, l, O) per row,
// then write O (one piece) or the partial (+ flag), and if this block is the tile's last piece,
// merge the pieces.
template <int D>
__device__ __forceinline__ void finish(const Params& p, const Work& w, WarpState<D>& st, unsigned char* msm,
                                       int tid) {
  using M = MergeSmem<D>;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  float* mo = reinterpret_cast<float*>(msm);          // [warp][16][D+4] unnormalized O
  float* mm = mo + kWarps * kRows * M::OSTRIDE;       // [warp][16] m * sl2 (or -inf)
  float* ml = mm + kWarps * kRows;                    // [warp][16] l
  st.l[0] = quad_sum(st.l[0]);
  st.l[1] = quad_sum(st.l[1]);
  {
    float* wo = mo + warp * kRows * M::OSTRIDE;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      *reinterpret_cast<float2*>(wo + g * M::OSTRIDE + dn * 8 + 2 * t4) = make_float2(st.o[dn][0], st.o[dn][1]);
      *reinterpret_cast<float2*>(wo + (g + 8) * M::OSTRIDE + dn * 8 + 2 * t4) =
          make_float2(st.o[dn][2], st.o[dn][3]);
    }
    if (t4 == 0) {
      mm[warp * kRows + g] = st.m[0] == neg_inf_f() ? neg_inf_f() : st.m[0] * p.sl2;
      mm[warp * kRows + g + 8] = st.m[1] == neg_inf_f() ? neg_inf_f() : st.m[1] * p.sl2;
      ml[warp * kRows + g] = st.l[0];
      ml[warp * kRows + g + 8] = st.l[1];
    }
  }
  consumer_sync();
  // Thread -> row r = tid / 8, columns [(tid % 8) * D/8, +D/8).
  constexpr int COLS = D / 8;
  const int r = tid >> 3, c0 = (tid & 7) * COLS;
  float mx = neg_inf_f();
#pragma unroll
  for (int k = 0; k < kWarps; ++k) mx = fmaxf(mx, mm[k * kRows + r]);
  const float mref = mx == neg_inf_f() ? 0.f : mx;
  float wk[kWarps], lsum = 0.f;
#pragma unroll
  for (int k = 0; k < kWarps; ++k) {
    wk[k] = exp2f(mm[k * kRows + r] - mref);  // -inf (warp saw nothing) -> 0
    lsum = fmaf(wk[k], ml[k * kRows + r], lsum);
  }
  const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
  float out[COLS];
#pragma unroll
  for (int c = 0; c < COLS; c += 4) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kWarps; ++k) {
      const float4 v = *reinterpret_cast<const float4*>(mo + (k * kRows + r) * M::OSTRIDE + c0 + c);
      acc.x = fmaf(wk[k], v.x, acc.x);
      acc.y = fmaf(wk[k], v.y, acc.y);
      acc.z = fmaf(wk[k], v.z, acc.z);
      acc.w = fmaf(wk[k], v.w, acc.w);
    }
    out[c] = acc.x * inv;
    out[c + 1] = acc.y * inv;
    out[c + 2] = acc.z * inv;
    out[c + 3] = acc.w * inv;
  }
  const int pr = w.mt * kRows + r;
  const int rows_valid = min(kRows, p.R - w.mt * kRows);  // padding rows are never written
  auto out_row = [&](int row) {  // packed row -> its O row
    const int prr = w.mt * kRows + row;
    const int hq = w.hkv * p.group + prr / p.Sq, i = prr % p.Sq;
    return p.O + ((static_cast<long long>(w.b) * p.Hq + hq) * p.Sq + i) * D;
  };
  if (p.splits == 1) {
    if (pr < p.R) {
      __nv_bfloat16* dst = out_row(r) + c0;
#pragma unroll
      for (int c = 0; c < COLS; c += 8) {
        uint4 v;
        v.x = pack_bf16x2(out[c], out[c + 1]);
        v.y = pack_bf16x2(out[c + 2], out[c + 3]);
        v.z = pack_bf16x2(out[c + 4], out[c + 5]);
        v.w = pack_bf16x2(out[c + 6], out[c + 7]);
        *reinterpret_cast<uint4*>(dst + c) = v;
      }
    }
    return;
  }
  const long long tile_base = static_cast<long long>(w.tile) * p.splits;  // piece index of split 0
  if (pr < p.R) {
    float* dst = p.ws_o + ((tile_base + w.split) * kRows + r) * D + c0;
#pragma unroll
    for (int c = 0; c < COLS; c += 4)
      *reinterpret_cast<float4*>(dst + c) = make_float4(out[c], out[c + 1], out[c + 2], out[c + 3]);
    if ((tid & 7) == 0) p.ws_lse[(tile_base + w.split) * kRows + r] = lsum > 0.f ? mref + log2f(lsum) : neg_inf_f();
  }
  // The tile's last piece (highest split, so the highest block index of the tile) merges; every
  // other piece publishes its partial and leaves. The merger waits for flags of LOWER block
  // indices only, which the hardware dispatches no later than the merger itself (header), so
  // the wait cannot hold an SM that a piece it waits for needs.
  volatile unsigned* fl = p.flags + tile_base;  // this tile's flags, split order
  if (w.split != p.splits - 1) {
    __threadfence();  // this thread's partial is visible at gpu scope before the block's flag
    consumer_sync();
    if (tid == 0) streamk_st_release(const_cast<unsigned*>(fl + w.split), p.epoch);
    return;
  }
  // Merger: its own partial needs no fence (the block's barrier orders it before its own loads).
  // Warp 0 acquires the other pieces' flags (a flag counts only when it holds this launch's epoch)
  // and lowers each one after seeing it (this launch writes it once; a replayed graph, same
  // epoch, waits afresh).
  if (warp == 0) {
    for (int k = lane; k < p.splits - 1; k += 32) {
      while (streamk_ld_acquire(const_cast<const unsigned*>(fl + k)) != p.epoch) __nanosleep(32);
      fl[k] = 0u;
    }
  }
  consumer_sync();  // every thread's partial loads below come after warp 0's acquires
  // ---- this block completes the tile: merge the pieces in split order. Item = (row, 4 columns);
  // the LSEs and partial rows of 16 splits are loaded together (one L2 round trip per 16 splits)
  // and folded in with a running max, in split order: the same bits whichever block merges.
  constexpr int C4 = D / 4, BATCH = 16;
  for (int item = tid; item < rows_valid * C4; item += kThreads) {
    const int row = item / C4, c = (item % C4) * 4;
    const float* src = p.ws_o + (tile_base * kRows + row) * D + c;
    const float* lse = p.ws_lse + tile_base * kRows + row;
    float M = neg_inf_f(), wsum = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < p.splits; s0 += BATCH) {
      float L[BATCH];
      float4 v[BATCH];
#pragma unroll
      for (int k = 0; k < BATCH; ++k) {
        const bool ok = s0 + k < p.splits;
        L[k] = ok ? __ldcg(lse + static_cast<long long>(s0 + k) * kRows) : neg_inf_f();
        v[k] = ok ? __ldcg(reinterpret_cast<const float4*>(src + static_cast<long long>(s0 + k) * kRows * D))
                  : make_float4(0.f, 0.f, 0.f, 0.f);
      }
      float bm = M;
#pragma unroll
      for (int k = 0; k < BATCH; ++k) bm = fmaxf(bm, L[k]);
      if (bm == neg_inf_f()) continue;  // only empty pieces so far (weights 0)
      const float sc = exp2f(M - bm);   // M = -inf -> 0 (acc and wsum are 0 then)
      acc.x *= sc; acc.y *= sc; acc.z *= sc; acc.w *= sc;
      wsum *= sc;
#pragma unroll
      for (int k = 0; k < BATCH; ++k) {  // split order
        const float wv = exp2f(L[k] - bm);  // empty piece (-inf) -> 0
        wsum += wv;
        acc.x = fmaf(wv, v[k].x, acc.x);
        acc.y = fmaf(wv, v[k].y, acc.y);
        acc.z = fmaf(wv, v[k].z, acc.z);
        acc.w = fmaf(wv, v[k].w, acc.w);
      }
      M = bm;
    }
    const float iv = wsum > 0.f ? 1.f / wsum : 0.f;
    uint2 o2;
    o2.x = pack_bf16x2(acc.x * iv, acc.y * iv);
    o2.y = pack_bf16x2(acc.z * iv, acc.w * iv);
    *reinterpret_cast<uint2*>(out_row(row) + c) = o2;
  }
}

// ------------------------------------------------------------------ host: the split plan
struct Plan {
  long long tiles = 0;  // B * Hkv * mtiles
  int R = 0, mtiles = 0;
  int splits = 1;
  size_t ws_bytes = 0;  // workspace the plan needs (0: unsplit)
};

inline size_t ws_need(long long tiles, int splits, int D) {
  return splits > 1 ? kFlagBytes + static_cast<size_t>(tiles) * splits * kRows * (D + 1) * 4 : 0;
}

// Splits of each tile's KV range. `W`: blocks resident at once (SMs x blocks per SM); `stages`:
// key tiles a block has in flight from its first instruction (a piece of <= stages tiles is one
// DRAM round trip). Cost in key-tile units: waves x (key tiles per piece + 3: launch, first round
// trip, epilogue) + the merge (the last piece reads splits x rows x D fp32 partials from L2) ; at
// least 2 key tiles per piece; at most kMaxSplits; only as many partials as `ws_avail` holds.
inline Plan make_plan(const AttentionArgs& a, long long W, size_t ws_avail) {
  Plan pl;
  pl.R = (a.Hq / a.Hkv) * a.Sq;
  pl.mtiles = (pl.R + kRows - 1) / kRows;
  pl.tiles = static_cast<long long>(a.B) * a.Hkv * pl.mtiles;
  const int nkv = (a.Skv + kBN - 1) / kBN;
  const int rows = pl.R < kRows ? pl.R : kRows;
  const int smax = nkv / 2 < kMaxSplits ? (nkv / 2 > 1 ? nkv / 2 : 1) : kMaxSplits;
  double best = 1e300;
  for (int s = 1; s <= smax; ++s) {
    const size_t need = ws_need(pl.tiles, s, a.D);
    if (need > ws_avail || (s > 1 && pl.tiles * s > kMaxPieces)) break;
    const long long waves = (pl.tiles * s + W - 1) / W;
    const double merge = s > 1 ? 1.0 + static_cast<double>(s) * rows * a.D * 4 / (kBN * a.D * 4.0) : 0.0;
    const double cost = static_cast<double>(waves) * ((nkv + s - 1) / s + 3) + merge;
    if (cost < best) {
      best = cost;
      pl.splits = s;
      pl.ws_bytes = need;
    }
  }
  return pl;
}

// Kernel parameters for `a` under plan `pl`: workspace layout [flags | partial O | LSE], and a
// fresh epoch when the plan splits.
inline Params make_params(const AttentionArgs& a, const Plan& pl) {
  Params p{};
  p.Q = a.Q; p.K = a.K; p.V = a.V; p.O = a.O;
  p.B = a.B; p.Hq = a.Hq; p.Hkv = a.Hkv; p.Sq = a.Sq; p.Skv = a.Skv; p.group = a.Hq / a.Hkv;
  p.causal = a.causal ? 1 : 0;
  p.sl2 = attention_scale_log2(a);
  p.R = pl.R;
  p.mtiles = pl.mtiles;
  p.splits = pl.splits;
  if (pl.splits > 1) {
    char* base = static_cast<char*>(a.workspace);
    p.epoch = attention_decode_epoch();
    p.flags = reinterpret_cast<unsigned*>(base);
    p.ws_o = reinterpret_cast<float*>(base + kFlagBytes);
    p.ws_lse = p.ws_o + pl.tiles * pl.splits * kRows * a.D;
  }
  return p;
}

// Launches a decode kernel (one piece per block). On cc >= 9.0 it is a programmatic dependent
// launch: its blocks may be scheduled while the previous kernel of the stream drains (the kernel
// waits with griddepcontrol.wait before reading anything), which hides the launch latency of a
// step that moves a few MB.
template <class... KArgs, class... Args>
void launch(void (*kernel)(KArgs...), unsigned grid, unsigned threads, int smem, cudaStream_t st,
            Args&&... args) {
  pdl_launch(kernel, dim3(grid), dim3(threads), static_cast<size_t>(smem), st,
             device_info().cc() >= 90, std::forward<Args>(args)...);
}

}  // namespace dec
}  // namespace kl
