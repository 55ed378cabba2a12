// kernels/attention/03_flash_split_kv.cu — rung 03: a schedule on top of rung 02's kernel.
//
// Change from rung 02: how the work is cut, not the inner loop (rung 02's kernel, flash_mma.cuh).
//  * Tail wave: with W = SMs x resident blocks, a prefill launch of T query tiles runs
//    floor(T / W) full waves and then T % W tiles alone on as many SMs. When that tail is at most
//    half a wave (and the problem is non-causal, or is entirely that tail), each tail tile's KV range
//    is cut into `splits` pieces (up to W / tail, each piece >= 2 key tiles) that run side by side on
//    the idle SMs and write an fp32 partial O plus its base-2 log-sum-exp to the workspace; a combine
//    kernel merges them in split order (deterministic). Causal launches rely on heaviest-first
//    order instead: their last wave is made of the lightest tiles.
//  * Small query counts: Sq <= 64 uses a 64-row tile (4 warps x 16 rows) instead of 128 rows, so a
//    40-query chunk does not compute 88 padding rows.
//  * Decode (Sq <= 16): the G = Hq / Hkv query heads that share a KV head are packed with their Sq
//    queries into the M dimension of one 16-row tile (rows r = head_in_group * Sq + i), so each KV
//    head is streamed from DRAM once per 16 packed rows instead of once per query head; the 4 warps
//    of a block take 16 keys each of every 64-key tile (one m16n8k16 k-step of P V), each with its
//    own online-softmax state, merged through shared memory at the end; the KV range is split over
//    enough blocks to fill the card (a small cost model picks the count, >= 2 key tiles a piece)
//    and merged by the combine kernel, launched as a programmatic dependent launch on sm_90 so its
//    launch overlaps the split kernel. A 4-stage cp.async ring keeps 96 KB (D = 128) of K/V in
//    flight per SM.
// Without a large enough workspace the rung still runs, unsplit.
// What limits it: decode is a DRAM stream (K and V read once) plus a fixed cost per step (launch,
// clock-up of 132 SMs, one DRAM round trip before the first tile, the combine) that the small
// caches cannot amortize: B=1, Hkv=8, Skv=4096 is 16.8 MB, 4 us at 4.2 TB/s. Prefill is rung 02's
// kernel.
// Measured (H200, 2026-11-29, request attn1 r2-1, results/h200/dev/batch/attn1/dec_4.jsonl, event / graph
// time, vs the same-run cudaMemcpy of the same bytes): decode B=1,Hkv=8,Skv=4096 15.6 / 12.1 us
// (copy 7.6 / 5.1 us: 49% / 42% of copy); B=1,Hkv=32,Skv=4096 24.6 / 21.7 us (copy 20.1 / 17.5:
// 82% / 81%); B=8,Hkv=8,Skv=4096 40.4 / 37.3 us (88% / 89%); B=1,Hkv=8,Skv=32768 42.5 / 39.4 us
// (84% / 85%). Round 1: 16.6, 26.9, 41.0, 43.6 us. Prefill: see rung 02 (same kernel).
#include <algorithm>
#include <climits>

#include "attention/attention_internal.h"
#include "attention/combine.cuh"
#include "attention/flash_mma.cuh"

namespace kl {
namespace {

// ------------------------------------------------------------------ decode kernel
constexpr int kDecRows = 16;    // packed query rows per block (one m16 tile)
constexpr int kDecBN = 64;      // keys per pipeline stage; warp w takes keys 16w..16w+15
constexpr int kDecWarps = 4;
constexpr int kDecThreads = 32 * kDecWarps;
static_assert(kDecBN == 16 * kDecWarps, "each warp owns one 16-key k-step of every tile");

// STAGES-deep cp.async ring of 64-key K/V tiles.
template <int D, int STAGES>
struct DecCfg {
  static constexpr int CH = D / 8;
  static constexpr int KV_ELEMS = kDecBN * D;
  static constexpr int OSTRIDE = D + 4;  // fp32 merge buffer row stride (floats), 16-B aligned
  static constexpr int SMEM = (kDecRows * D + STAGES * 2 * KV_ELEMS) * 2;
  static_assert((kDecWarps * kDecRows * OSTRIDE + 2 * kDecWarps * kDecRows) * 4 <=
                    STAGES * 2 * KV_ELEMS * 2,
                "the warp-merge buffer fits in the (drained) K/V stages");
  static_assert((kDecBN * CH) % kDecThreads == 0 && (kDecRows * CH) % kDecThreads == 0, "copies");
};

struct DecParams {
  const __nv_bfloat16* Q;
  const __nv_bfloat16* K;
  const __nv_bfloat16* V;
  __nv_bfloat16* O;
  int B, Hq, Hkv, Sq, Skv, group, causal;
  float sl2;
  int R;       // packed rows per KV head: group * Sq
  int mtiles;  // ceil(R / 16)
  int splits;  // KV pieces per tile (1: write O directly)
  float* ws_o;    // [tile][split][16][D]
  float* ws_lse;  // [tile][split][16]
};

template <int D, int STAGES>
__global__ void __launch_bounds__(kDecThreads) decode_kernel(DecParams p) {
  using C = DecCfg<D, STAGES>;
  constexpr int kDecStages = STAGES;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);  // [16][D]
  __nv_bfloat16* KVs = Qs + kDecRows * D;                           // stages: K [64][D], V [64][D]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  const int split = blockIdx.x % p.splits;
  const int tile = blockIdx.x / p.splits;  // (b * Hkv + hkv) * mtiles + mt
  const int mt = tile % p.mtiles;
  const int bk = tile / p.mtiles;
  const int b = bk / p.Hkv, hkv = bk % p.Hkv;
  const int off = p.Skv - p.Sq;
  const long long kvh = static_cast<long long>(bk) * p.Skv * D;
  const __nv_bfloat16* Kg = p.K + kvh;
  const __nv_bfloat16* Vg = p.V + kvh;

  // Packed row pr -> (query head hkv*G + pr / Sq, query i = pr % Sq); rows >= R are zero.
#pragma unroll
  for (int it = 0; it < kDecRows * C::CH / kDecThreads; ++it) {
    const int idx = tid + it * kDecThreads;
    const int r = idx / C::CH, c = idx % C::CH;
    const int pr = mt * kDecRows + r;
    const bool ok = pr < p.R;
    const int hq = hkv * p.group + (ok ? pr / p.Sq : 0), i = ok ? pr % p.Sq : 0;
    const __nv_bfloat16* src = p.Q + ((static_cast<long long>(b) * p.Hq + hq) * p.Sq + i) * D + c * 8;
    cp_async_16(Qs + r * D + flash::swz(r, c) * 8, src, ok);
  }
  cp_async_commit();

  const int n_tiles = (p.Skv + kDecBN - 1) / kDecBN;
  const int n_begin = static_cast<int>(static_cast<long long>(n_tiles) * split / p.splits);
  const int n_end = static_cast<int>(static_cast<long long>(n_tiles) * (split + 1) / p.splits);
  auto load_kv = [&](int n, int st) {
    __nv_bfloat16* ks = KVs + st * 2 * C::KV_ELEMS;
    const int valid = min(kDecBN, p.Skv - n * kDecBN);
    flash::load_rows_async<kDecBN, D, kDecThreads>(ks, Kg + static_cast<long long>(n) * kDecBN * D, valid, tid);
    flash::load_rows_async<kDecBN, D, kDecThreads>(ks + C::KV_ELEMS, Vg + static_cast<long long>(n) * kDecBN * D,
                                                  valid, tid);
  };
#pragma unroll
  for (int st = 0; st < kDecStages - 1; ++st) {
    if (n_begin + st < n_end) load_kv(n_begin + st, st);
    cp_async_commit();
  }
  flash::pdl_trigger();  // the combine kernel may be launched now; it waits for our completion
  cp_async_wait<kDecStages - 1>();
  __syncthreads();

  uint32_t qf[D / 16][4];  // every warp holds the same 16 packed rows
  {
    const int r = (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      ldmatrix_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], Qs + r * D + flash::swz(r, 2 * kk + (lane >> 4)) * 8);
  }
  // Query index of this thread's two rows (for the causal mask).
  const int pr0 = mt * kDecRows + g, pr1 = pr0 + 8;
  const int i0 = pr0 % p.Sq, i1 = pr1 % p.Sq;

  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;
  float m[2] = {neg_inf_f(), neg_inf_f()}, l[2] = {0.f, 0.f};
  const int k_row = warp * 16 + ((lane >> 4) << 3) + (lane & 7), k_chk = (lane >> 3) & 1;
  const int v_row = warp * 16 + (((lane >> 3) & 1) << 3) + (lane & 7), v_chk = lane >> 4;

  for (int n = n_begin; n < n_end; ++n) {
    const int it = n - n_begin;
    cp_async_wait<kDecStages - 2>();
    __syncthreads();
    {
      const int nn = n + kDecStages - 1;
      if (nn < n_end) load_kv(nn, (it + kDecStages - 1) % kDecStages);
      cp_async_commit();
    }
    const __nv_bfloat16* Ks = KVs + (it % kDecStages) * 2 * C::KV_ELEMS;
    const __nv_bfloat16* Vs = Ks + C::KV_ELEMS;

    float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};  // 16 rows x this warp's 16 keys
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t b0[2], b1[2];
      ldmatrix_x4(b0[0], b0[1], b1[0], b1[1], Ks + k_row * D + flash::swz(k_row, 2 * kk + k_chk) * 8);
      mma_bf16_16816(s[0], qf[kk], b0);
      mma_bf16_16816(s[1], qf[kk], b1);
    }
    const int kw = n * kDecBN + warp * 16;  // first key of this warp's slice
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
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = fmaxf(fmaxf(s[0][2 * h], s[0][2 * h + 1]), fmaxf(s[1][2 * h], s[1][2 * h + 1]));
      mx = quad_max(mx);
      const float m_new = fmaxf(m[h], mx);
      const float ofs = online_row_offset(m_new, p.sl2);
      const float alpha = online_rescale(m[h], ofs, p.sl2);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        s[j][2 * h] = online_prob(s[j][2 * h], ofs, p.sl2);
        s[j][2 * h + 1] = online_prob(s[j][2 * h + 1], ofs, p.sl2);
        sum += s[j][2 * h] + s[j][2 * h + 1];
      }
      l[h] = fmaf(l[h], alpha, sum);
      m[h] = m_new;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        o[dn][2 * h] *= alpha;
        o[dn][2 * h + 1] *= alpha;
      }
    }
    uint32_t a[4] = {pack_bf16x2(s[0][0], s[0][1]), pack_bf16x2(s[0][2], s[0][3]),
                     pack_bf16x2(s[1][0], s[1][1]), pack_bf16x2(s[1][2], s[1][3])};
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      uint32_t b0[2], b1[2];
      ldmatrix_x4_trans(b0[0], b0[1], b1[0], b1[1], Vs + v_row * D + flash::swz(v_row, 2 * dp + v_chk) * 8);
      mma_bf16_16816(o[2 * dp], a, b0);
      mma_bf16_16816(o[2 * dp + 1], a, b1);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the stages: reuse them as the fp32 merge buffer

  // ---- merge the 4 warps' (m, l, O) per row through shared memory
  float* mo = reinterpret_cast<float*>(KVs);                  // [warp][16][D+4] unnormalized O
  float* mm = mo + kDecWarps * kDecRows * C::OSTRIDE;         // [warp][16] m * sl2 (or -inf)
  float* ml = mm + kDecWarps * kDecRows;                      // [warp][16] l
  l[0] = quad_sum(l[0]);
  l[1] = quad_sum(l[1]);
  {
    float* wo = mo + warp * kDecRows * C::OSTRIDE;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      *reinterpret_cast<float2*>(wo + g * C::OSTRIDE + dn * 8 + 2 * t4) = make_float2(o[dn][0], o[dn][1]);
      *reinterpret_cast<float2*>(wo + (g + 8) * C::OSTRIDE + dn * 8 + 2 * t4) = make_float2(o[dn][2], o[dn][3]);
    }
    if (t4 == 0) {
      mm[warp * kDecRows + g] = m[0] == neg_inf_f() ? neg_inf_f() : m[0] * p.sl2;
      mm[warp * kDecRows + g + 8] = m[1] == neg_inf_f() ? neg_inf_f() : m[1] * p.sl2;
      ml[warp * kDecRows + g] = l[0];
      ml[warp * kDecRows + g + 8] = l[1];
    }
  }
  __syncthreads();
  // Thread -> row r = tid / 8, columns [(tid % 8) * D/8, +D/8).
  constexpr int COLS = D / 8;
  const int r = tid >> 3, c0 = (tid & 7) * COLS;
  float mx = neg_inf_f();
#pragma unroll
  for (int w = 0; w < kDecWarps; ++w) mx = fmaxf(mx, mm[w * kDecRows + r]);
  const float mref = mx == neg_inf_f() ? 0.f : mx;
  float wt[kDecWarps], lsum = 0.f;
#pragma unroll
  for (int w = 0; w < kDecWarps; ++w) {
    wt[w] = exp2f(mm[w * kDecRows + r] - mref);  // -inf (warp saw nothing) -> 0
    lsum = fmaf(wt[w], ml[w * kDecRows + r], lsum);
  }
  const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
  float out[COLS];
#pragma unroll
  for (int c = 0; c < COLS; c += 4) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kDecWarps; ++w) {
      const float4 v = *reinterpret_cast<const float4*>(mo + (w * kDecRows + r) * C::OSTRIDE + c0 + c);
      acc.x = fmaf(wt[w], v.x, acc.x);
      acc.y = fmaf(wt[w], v.y, acc.y);
      acc.z = fmaf(wt[w], v.z, acc.z);
      acc.w = fmaf(wt[w], v.w, acc.w);
    }
    out[c] = acc.x * inv;
    out[c + 1] = acc.y * inv;
    out[c + 2] = acc.z * inv;
    out[c + 3] = acc.w * inv;
  }
  const int pr = mt * kDecRows + r;
  if (p.splits == 1) {
    if (pr < p.R) {
      const int hq = hkv * p.group + pr / p.Sq, i = pr % p.Sq;
      __nv_bfloat16* dst = p.O + ((static_cast<long long>(b) * p.Hq + hq) * p.Sq + i) * D + c0;
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
  } else if (pr < p.R) {  // padding rows of the packed tile: the combine never reads them
    const long long piece = static_cast<long long>(tile) * p.splits + split;
    float* dst = p.ws_o + (piece * kDecRows + r) * D + c0;
#pragma unroll
    for (int c = 0; c < COLS; c += 4)
      *reinterpret_cast<float4*>(dst + c) = make_float4(out[c], out[c + 1], out[c + 2], out[c + 3]);
    if ((tid & 7) == 0) p.ws_lse[piece * kDecRows + r] = lsum > 0.f ? mref + log2f(lsum) : neg_inf_f();
  }
}

// Output row of a decode tile's packed row.
struct DecodeMap {
  __nv_bfloat16* O;
  int Hq, Hkv, Sq, group, R, mtiles, d;
  __device__ __nv_bfloat16* operator()(int tile, int r) const {
    const int mt = tile % mtiles, bk = tile / mtiles;
    const int b = bk / Hkv, hkv = bk % Hkv;
    const int pr = mt * kDecRows + r;
    if (pr >= R) return nullptr;
    const int hq = hkv * group + pr / Sq, i = pr % Sq;
    return O + ((static_cast<long long>(b) * Hq + hq) * Sq + i) * d;
  }
};

// Output row of a split prefill tail tile.
struct TailMap {
  __nv_bfloat16* O;
  int B, Hq, Sq, nqt, BM, full_blocks, d;
  __device__ __nv_bfloat16* operator()(int tl, int r) const {
    const int t = full_blocks + tl, BH = B * Hq;
    const int qt = nqt - 1 - t / BH, bh = t % BH;
    const int i = qt * BM + r;
    if (i >= Sq) return nullptr;
    return O + (static_cast<long long>(bh) * Sq + i) * d;
  }
};

// ------------------------------------------------------------------ the plan
struct Plan {
  bool decode = false;
  bool small = false;   // prefill tile: 64 rows (4 warps x 16) instead of 128 (4 warps x 32)
  int nqt = 0;
  long long tiles = 0;  // prefill: query tiles; decode: B * Hkv * mtiles
  int full_blocks = 0;  // prefill: whole tiles
  int splits = 1;       // pieces per split tile
  int mtiles = 0, R = 0;
  size_t ws_bytes = 0;  // workspace this plan needs
};

// Prefill tiles: rung 02's 128-row tile (4 warps x 2 m-tiles), and a 64-row tile (4 warps x 1
// m-tile, Q in registers) for Sq <= 64; both 2 blocks/SM.
template <int D>
using PBig = flash::Cfg<D, 4, 2, 64, D == 64 ? 3 : 2, 2>;
template <int D>
using PSmall = flash::Cfg<D, 4, 1, 64, 3, 2>;

int prefill_smem(int D, bool small) {
  if (D == 64) return small ? PSmall<64>::SMEM : PBig<64>::SMEM;
  return small ? PSmall<128>::SMEM : PBig<128>::SMEM;
}
// Registers per thread of those kernels (ptxas -v, sm_90a), for the resident-block count.
int prefill_regs(int D, bool small) { return small ? (D == 64 ? 168 : 232) : (D == 64 ? 240 : 255); }
// Decode ring depth: 4 stages (3 key tiles in flight from the prologue, 1 block/SM at D = 128).
// Measured against 3 stages at 2 blocks/SM (request r2-1): 4 stages faster on every decode shape.
constexpr int kDecodeStages = 4;
int dec_smem(int D) { return D == 64 ? DecCfg<64, kDecodeStages>::SMEM : DecCfg<128, kDecodeStages>::SMEM; }

int blocks_per_sm(const DeviceInfo& d, int smem, int threads, int regs_per_thread) {
  const long long by_smem = d.smem_per_sm / (smem + 1024);
  const long long by_regs = 65536 / (static_cast<long long>(threads) * regs_per_thread);
  return static_cast<int>(std::max(1LL, std::min({by_smem, by_regs, 2048LL / threads})));
}

// `ws_avail`: bytes of workspace the caller gives (SIZE_MAX when sizing it).
Plan make_plan(const AttentionArgs& a, const DeviceInfo& d, size_t ws_avail) {
  Plan pl;
  const int sms = std::max(1, d.sms);
  if (attention_is_decode(a)) {
    pl.decode = true;
    pl.R = (a.Hq / a.Hkv) * a.Sq;
    pl.mtiles = (pl.R + kDecRows - 1) / kDecRows;
    pl.tiles = static_cast<long long>(a.B) * a.Hkv * pl.mtiles;
    const int nkv = (a.Skv + kDecBN - 1) / kDecBN;
    const long long W = static_cast<long long>(sms) * blocks_per_sm(d, dec_smem(a.D), kDecThreads, a.D == 128 ? 168 : 96);
    // Cost model in key tiles: waves x (tiles per piece + ~3 tiles of prologue/epilogue/combine).
    // At least 2 key tiles per piece (round 1: 4): the small caches (B = 1, Skv = 4096: 8 KV
    // heads x 64 key tiles) may then spread over every SM.
    const int smax = std::max(1, std::min(64, nkv / 2));
    long long best_cost = LLONG_MAX;
    for (int s = 1; s <= smax; ++s) {
      const long long waves = (pl.tiles * s + W - 1) / W;
      const long long cost = waves * ((nkv + s - 1) / s + 3);
      const size_t need = s > 1 ? static_cast<size_t>(pl.tiles) * s * kDecRows * (a.D + 1) * 4 : 0;
      if (need > ws_avail) break;
      if (cost < best_cost) { best_cost = cost; pl.splits = s; pl.ws_bytes = need; }
    }
    return pl;
  }
  pl.small = a.Sq <= 64;
  const int BM = pl.small ? 64 : 128;
  pl.nqt = (a.Sq + BM - 1) / BM;
  pl.tiles = static_cast<long long>(pl.nqt) * a.B * a.Hq;
  pl.full_blocks = static_cast<int>(pl.tiles);
  const int threads = 128;
  const long long W = static_cast<long long>(sms) *
                      blocks_per_sm(d, prefill_smem(a.D, pl.small), threads, prefill_regs(a.D, pl.small));
  const long long tail = pl.tiles % W;
  const int nkv = (a.Skv + 63) / 64;
  if (tail > 0 && 2 * tail <= W && (!a.causal || tail == pl.tiles)) {
    const int s = static_cast<int>(std::min<long long>({W / tail, nkv / 2, 64}));
    const size_t need = static_cast<size_t>(tail) * s * BM * (a.D + 1) * 4;
    if (s >= 2 && need <= ws_avail) {
      pl.full_blocks = static_cast<int>(pl.tiles - tail);
      pl.splits = s;
      pl.ws_bytes = need;
    }
  }
  return pl;
}

template <int D, int STAGES>
void run_decode(const AttentionArgs& a, const Plan& pl, cudaStream_t st) {
  using C = DecCfg<D, STAGES>;
  attention_smem_optin(reinterpret_cast<const void*>(decode_kernel<D, STAGES>), C::SMEM);
  DecParams p{};
  p.Q = a.Q; p.K = a.K; p.V = a.V; p.O = a.O;
  p.B = a.B; p.Hq = a.Hq; p.Hkv = a.Hkv; p.Sq = a.Sq; p.Skv = a.Skv; p.group = a.Hq / a.Hkv;
  p.causal = a.causal ? 1 : 0;
  p.sl2 = attention_scale_log2(a);
  p.R = pl.R; p.mtiles = pl.mtiles; p.splits = pl.splits;
  const long long pieces = pl.tiles * pl.splits;
  if (pl.splits > 1) {
    p.ws_o = static_cast<float*>(a.workspace);
    p.ws_lse = p.ws_o + pieces * kDecRows * D;
  }
  decode_kernel<D, STAGES><<<static_cast<unsigned>(pieces), kDecThreads, C::SMEM, st>>>(p);
  KL_CHECK_LAUNCH();
  if (pl.splits > 1) {
    DecodeMap map{a.O, a.Hq, a.Hkv, a.Sq, a.Hq / a.Hkv, pl.R, pl.mtiles, D};
    flash::launch_combine<D>(p.ws_o, p.ws_lse, kDecRows, pl.splits, pl.tiles * kDecRows, map,
                             device_info().cc() >= 90, st);
  }
}

template <class C>
void run_prefill(const AttentionArgs& a, const Plan& pl, cudaStream_t st) {
  constexpr int D = C::D;
  attention_smem_optin(reinterpret_cast<const void*>(flash::flash_mma_kernel<C>), C::SMEM);
  flash::Params p{};
  p.Q = a.Q; p.K = a.K; p.V = a.V; p.O = a.O;
  p.B = a.B; p.Hq = a.Hq; p.Hkv = a.Hkv; p.Sq = a.Sq; p.Skv = a.Skv; p.group = a.Hq / a.Hkv;
  p.causal = a.causal ? 1 : 0;
  p.sl2 = attention_scale_log2(a);
  p.nqt = pl.nqt;
  p.full_blocks = pl.full_blocks;
  p.splits = pl.splits;
  const long long tail = pl.tiles - pl.full_blocks;
  if (tail > 0) {
    p.ws_o = static_cast<float*>(a.workspace);
    p.ws_lse = p.ws_o + tail * pl.splits * C::BM * D;
  }
  const long long blocks = pl.full_blocks + tail * pl.splits;
  flash::flash_mma_kernel<C><<<static_cast<unsigned>(blocks), C::THREADS, C::SMEM, st>>>(p);
  KL_CHECK_LAUNCH();
  if (tail > 0) {
    TailMap map{a.O, a.B, a.Hq, a.Sq, pl.nqt, C::BM, pl.full_blocks, D};
    flash::launch_combine<D>(p.ws_o, p.ws_lse, C::BM, pl.splits, tail * C::BM, map,
                             device_info().cc() >= 90, st);
  }
}

}  // namespace

std::string attn03_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_common_supports(a, d);
  if (!why.empty()) return why;
  const Plan pl = make_plan(a, d, 0);
  const int smem = pl.decode ? dec_smem(a.D) : prefill_smem(a.D, pl.small);
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  if (pl.tiles > INT_MAX / 64) return "too many tiles for a 1-D grid";
  return "";
}

size_t attn03_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d) {
  return make_plan(a, d, SIZE_MAX).ws_bytes;
}

void attn03_launch(const AttentionArgs& a, cudaStream_t s) {
  const DeviceInfo& d = device_info();
  // A missing, short or misaligned (float4 stores) workspace means: run unsplit.
  const size_t ws = a.workspace && aligned(a.workspace, 16) ? a.workspace_bytes : 0;
  const Plan pl = make_plan(a, d, ws);
  if (pl.decode) {
    if (a.D == 64) run_decode<64, kDecodeStages>(a, pl, s);
    else run_decode<128, kDecodeStages>(a, pl, s);
  } else if (pl.small) {
    if (a.D == 64) run_prefill<PSmall<64>>(a, pl, s);
    else run_prefill<PSmall<128>>(a, pl, s);
  } else {
    if (a.D == 64) run_prefill<PBig<64>>(a, pl, s);
    else run_prefill<PBig<128>>(a, pl, s);
  }
}

}  // namespace kl
