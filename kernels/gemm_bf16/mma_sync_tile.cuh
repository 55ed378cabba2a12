// kernels/gemm_bf16/mma_sync_tile.cuh — the CTA tile of rungs 03 and 04 (shared, not a rung).
//
// One CTA computes a BM x BN tile of C = A * W^T over a range of k-steps of BK = 64:
//   * shared memory: STAGES x { A tile [BM][64] bf16, W tile [BN][64] bf16 }, each row exactly 128
//     bytes, 16-byte chunk c of row r stored at chunk c ^ (r & 7) (swz128_offset): conflict-free for
//     both the cp.async stores and the ldmatrix reads, with no padding bytes;
//   * global -> shared with 16-byte cp.async.cg; rows past M / N and chunks past K are zero-filled
//     (src-size 0), so any M works, and N, K need only be multiples of 8 (one chunk);
//   * a STAGES-deep pipeline: STAGES-1 k-steps in flight while the tensor cores work on one;
//   * per warp a WM x WN sub-tile of mma.sync.m16n8k16 (MI x NI instructions per 16-wide k slice),
//     fragments loaded with ldmatrix.x4 and double-buffered across the four k slices of a stage;
//   * epilogue: fp32 accumulators -> bf16 pairs stored straight from registers (4 bytes a lane).
// The rungs pick a tile per call (03: wave model; 04: wave + Stream-K model).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "kl/check.h"
#include "common/cp_async4.cuh"
#include "common/gemm_tile.cuh"
#include "common/mma.cuh"
#include "kl/gemm_bf16.h"
#include "gemm_bf16/gemm_bf16_rungs.h"

namespace kl::gemm_bf16_detail {

constexpr int kBK = 64;  // k-step: 64 bf16 = one 128-byte swizzled row per tile row

// A tile shape (the structs at the end of this file) names BM x BN (the CTA tile), WARPS_M x
// WARPS_N (the warp grid), STAGES (pipeline depth) and MIN_BLOCKS (__launch_bounds__' CTAs per
// SM); MmaCfg<Shape> adds what follows from them.
template <class Shape>
struct MmaCfg {
  static constexpr int BM = Shape::BM, BN = Shape::BN, BK = kBK;
  static constexpr int WARPS_M = Shape::WARPS_M, WARPS_N = Shape::WARPS_N;
  static constexpr int STAGES = Shape::STAGES, MIN_BLOCKS = Shape::MIN_BLOCKS;
  static constexpr int WARPS = WARPS_M * WARPS_N, THREADS = WARPS * 32;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp sub-tile
  static constexpr int MI = WM / 16, NI = WN / 8;             // m16n8 mma tiles per warp
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128;  // one stage: [BM][64], [BN][64]
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int SMEM = STAGES * STAGE_BYTES;
  static constexpr int A_CHUNKS = BM * 8 / THREADS, B_CHUNKS = BN * 8 / THREADS;  // per thread
  static constexpr int ACC = MI * NI * 4;  // fp32 accumulators per thread
  static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0,
                "warp sub-tile must be a multiple of 16x16 (ldmatrix.x4 loads 16 rows)");
  static_assert((BM * 8) % THREADS == 0 && (BN * 8) % THREADS == 0,
                "every thread copies the same number of 16-byte chunks per stage");
  static_assert(NI % 2 == 0, "B fragments are loaded two n8 tiles per ldmatrix.x4");
  static_assert(STAGES >= 3, "three or more stages");
  static_assert(ACC % 4 == 0, "partials move as float4");
};

using bf16 = __nv_bfloat16;

// Copies k-step `kt` of the A and W tiles into one pipeline stage (no wait, no commit): this
// thread's A_CHUNKS + B_CHUNKS 16-byte chunks.
template <class Cfg>
__device__ __forceinline__ void load_stage(char* stage, const bf16* __restrict__ A,
                                           const bf16* __restrict__ W, int M, int N, int K, int m0,
                                           int n0, int kt, int tid) {
  char* sA = stage;
  char* sB = stage + Cfg::A_BYTES;
  const int k0 = kt * Cfg::BK;
#pragma unroll
  for (int i = 0; i < Cfg::A_CHUNKS; ++i) {
    const int idx = tid + i * Cfg::THREADS;
    const int r = idx >> 3, c = idx & 7;  // tile row, 16-byte chunk (8 bf16 of k)
    const int gr = m0 + r, gk = k0 + c * 8;
    const bool p = gr < M && gk < K;  // K % 8 == 0: a chunk is wholly inside or outside
    // A predicated-off copy reads nothing, but keep the address valid anyway.
    const bf16* src = p ? A + static_cast<size_t>(gr) * K + gk : A;
    cp_async_16(sA + swz128_offset(r, c), src, p);
  }
#pragma unroll
  for (int i = 0; i < Cfg::B_CHUNKS; ++i) {
    const int idx = tid + i * Cfg::THREADS;
    const int r = idx >> 3, c = idx & 7;
    const int gn = n0 + r, gk = k0 + c * 8;
    const bool p = gn < N && gk < K;
    const bf16* src = p ? W + static_cast<size_t>(gn) * K + gk : W;
    cp_async_16(sB + swz128_offset(r, c), src, p);
  }
}

// The copies of an interior tile (m0 + BM <= M, n0 + BN <= N): every row of both operands exists,
// so no row predicates and no fallback pointers. Thread t copies chunk c = t % 8 of rows
// t / 8 + i * RP (RP = THREADS / 8 rows per pass; i < A_CHUNKS for A, < B_CHUNKS for W): the rows
// of one thread are RP apart, so the source of chunk i is one base + i * RP * K, and since RP is a
// multiple of 8 every one of its rows has the same swizzle: destination i is one base + i * RP *
// 128 bytes. Per k-step a copy is then an address add and the LDGSTS (load_stage spends ~15
// instructions per copy on row tests, fallback pointers and 64-bit products: ~200 of the 382
// instructions of a 128x256 k-step, 128 of which are the mma).
template <class Cfg>
struct InteriorCopies {
  static constexpr int RP = Cfg::THREADS / 8;
  static_assert(RP % 8 == 0, "a thread's rows share one swizzle");
  const bf16* a;   // A row m0 + t/8, chunk c, k-step 0
  const bf16* w;   // W row n0 + t/8, same
  uint32_t step;   // elements between a thread's consecutive rows, RP * K (the caller checks
                   // that max(BM, BN) * K < 2^31, so i * step never wraps)
  uint32_t dst;    // swz128_offset(t / 8, c): the same inside the A part and the W part of a stage
  int kc;          // c * 8: this thread's k offset inside a k-step
  __device__ __forceinline__ InteriorCopies(const bf16* A, const bf16* W, int K, int m0, int n0,
                                            int tid) {
    const int r = tid >> 3, c = tid & 7;
    kc = c * 8;
    a = A + static_cast<size_t>(m0 + r) * K + kc;
    w = W + static_cast<size_t>(n0 + r) * K + kc;
    step = static_cast<uint32_t>(RP) * static_cast<uint32_t>(K);
    dst = swz128_offset(r, c);
  }
  // k-step kt into `stage` (32-bit shared address). K % 8 == 0, so a chunk is in or out whole:
  // chunks past K (only in a partial last k-step) are zero-filled.
  __device__ __forceinline__ void issue(uint32_t stage, int kt, int K) const {
    const int k0 = kt * Cfg::BK;
    const bf16* as = a + k0;
    const bf16* ws = w + k0;
    if (k0 + Cfg::BK <= K) {  // warp-uniform: every chunk of the k-step exists
#pragma unroll
      for (int i = 0; i < Cfg::A_CHUNKS; ++i) cp_async_16_u32(stage + dst + i * RP * 128, as + i * step);
#pragma unroll
      for (int i = 0; i < Cfg::B_CHUNKS; ++i)
        cp_async_16_u32(stage + Cfg::A_BYTES + dst + i * RP * 128, ws + i * step);
    } else {
      const bool in = k0 + kc < K;
#pragma unroll
      for (int i = 0; i < Cfg::A_CHUNKS; ++i)
        cp_async_16_u32(stage + dst + i * RP * 128, in ? as + i * step : a, in);
#pragma unroll
      for (int i = 0; i < Cfg::B_CHUNKS; ++i)
        cp_async_16_u32(stage + Cfg::A_BYTES + dst + i * RP * 128, in ? ws + i * step : w, in);
    }
  }
};

// Fragments of one 16-wide k slice `kk` (0..3) of a stage for this warp.
template <class Cfg>
__device__ __forceinline__ void load_frags(const char* stage, int kk, int warp_m, int warp_n,
                                           int lane, uint32_t (&a)[Cfg::MI][4],
                                           uint32_t (&b)[Cfg::NI][2]) {
  const char* sA = stage;
  const char* sB = stage + Cfg::A_BYTES;
#pragma unroll
  for (int mi = 0; mi < Cfg::MI; ++mi) {
    // x4 over a 16x16 A block: lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows
    // at k 8-15 -> a[0..3] = (rows 0-7,k lo), (rows 8-15,k lo), (rows 0-7,k hi), (rows 8-15,k hi).
    const int row = warp_m * Cfg::WM + mi * 16 + (lane & 15);
    const int chunk = kk * 2 + (lane >> 4);
    ldmatrix_x4(a[mi][0], a[mi][1], a[mi][2], a[mi][3], sA + swz128_offset(row, chunk));
  }
#pragma unroll
  for (int nj = 0; nj < Cfg::NI / 2; ++nj) {
    // x4 over 16 W rows (n) x 16 k: matrix q = lane / 8 is (n half q/2, k half q%2), so
    // regs = (n 0-7,k lo), (n 0-7,k hi), (n 8-15,k lo), (n 8-15,k hi) = b[2nj][0..1], b[2nj+1][0..1].
    // W rows are k-contiguous, i.e. B = W^T column-major: exactly the .col operand, no .trans.
    const int n = warp_n * Cfg::WN + nj * 16 + ((lane >> 4) << 3) + (lane & 7);
    const int chunk = kk * 2 + ((lane >> 3) & 1);
    ldmatrix_x4(b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1],
                sB + swz128_offset(n, chunk));
  }
}

// The 32 (MI x NI) mma of one 16-wide k slice for this warp, serpentine over ni so consecutive
// mmas share an operand register set.
template <class Cfg>
__device__ __forceinline__ void slice_mma(const uint32_t (&a)[Cfg::MI][4], const uint32_t (&b)[Cfg::NI][2],
                                          float (&acc)[Cfg::MI][Cfg::NI][4]) {
#pragma unroll
  for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < Cfg::NI; ++ni) {
      const int nn = (mi & 1) ? (Cfg::NI - 1 - ni) : ni;
      mma_bf16_16816(acc[mi][nn], a[mi], b[nn]);
    }
}

// The tensor-core work of one landed stage for this warp: the four 16-wide k slices, fragments of
// slice kk+1 loaded (ldmatrix) while slice kk's mma run (registers double-buffered). Also the
// inner loop of bench_peak's mma_sync_64x64_ldsm ceiling, which runs it on a resident stage with no
// copies and no barriers.
template <class Cfg>
__device__ __forceinline__ void stage_mma(const char* st, int warp_m, int warp_n, int lane,
                                          uint32_t (&a)[2][Cfg::MI][4], uint32_t (&b)[2][Cfg::NI][2],
                                          float (&acc)[Cfg::MI][Cfg::NI][4]) {
  load_frags<Cfg>(st, 0, warp_m, warp_n, lane, a[0], b[0]);
#pragma unroll
  for (int kk = 0; kk < Cfg::BK / 16; ++kk) {
    if (kk + 1 < Cfg::BK / 16)
      load_frags<Cfg>(st, kk + 1, warp_m, warp_n, lane, a[(kk + 1) & 1], b[(kk + 1) & 1]);
    slice_mma<Cfg>(a[kk & 1], b[kk & 1], acc);
  }
}

// acc += A[m0:m0+BM, kt0*64 : kt1*64] * W[n0:n0+BN, same]^T. Leaves shared memory free (all
// copies landed, all reads done) so the caller may start another range or reuse it.
template <class Cfg>
__device__ __forceinline__ void mainloop(char* smem, const bf16* __restrict__ A,
                                         const bf16* __restrict__ W, int M, int N, int K, int m0,
                                         int n0, int kt0, int kt1,
                                         float (&acc)[Cfg::MI][Cfg::NI][4]) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
  const int nk = kt1 - kt0;
  // Prologue: STAGES-1 k-steps in flight. Always commit (possibly empty groups) so the group count
  // per iteration is fixed and wait_group<STAGES-2> always means "k-step i has landed".
#pragma unroll
  for (int s = 0; s < Cfg::STAGES - 1; ++s) {
    if (s < nk) load_stage<Cfg>(smem + s * Cfg::STAGE_BYTES, A, W, M, N, K, m0, n0, kt0 + s, tid);
    cp_async_commit();
  }
  uint32_t a[2][Cfg::MI][4], b[2][Cfg::NI][2];
  // Interior tiles (almost all of a large GEMM) copy through InteriorCopies; edge tiles keep
  // load_stage's per-row tests and zero fill. Only tiles with 8 warps per SM (255 registers a
  // thread): the 2-3 CTA/SM and 16-warp tiles run at <= 128 registers, where the plan's registers
  // spill (CfgM: 128 bytes).
  constexpr bool kLean = Cfg::THREADS * Cfg::MIN_BLOCKS <= 256;
  const bool interior = kLean && m0 + Cfg::BM <= M && n0 + Cfg::BN <= N &&
                        static_cast<long long>(Cfg::BM > Cfg::BN ? Cfg::BM : Cfg::BN) * K < (1LL << 31);
  const InteriorCopies<Cfg> ic(A, W, K, interior ? m0 : 0, interior ? n0 : 0, tid);
  const uint32_t smem0 = smem_u32(smem);
  for (int i = 0; i < nk; ++i) {
    cp_async_wait<Cfg::STAGES - 2>();  // this thread's copies of k-step i are done
    __syncthreads();  // ... and everyone's; also: everyone finished reading step i-1's slot
    // Refill the slot that k-step i-1 used (free since the barrier) with k-step i+STAGES-1.
    const int nxt = i + Cfg::STAGES - 1;
    if (nxt < nk) {
      if (interior)  // false at compile time when !kLean
        ic.issue(smem0 + (nxt % Cfg::STAGES) * Cfg::STAGE_BYTES, kt0 + nxt, K);
      else
        load_stage<Cfg>(smem + (nxt % Cfg::STAGES) * Cfg::STAGE_BYTES, A, W, M, N, K, m0, n0,
                        kt0 + nxt, tid);
    }
    cp_async_commit();
    stage_mma<Cfg>(smem + (i % Cfg::STAGES) * Cfg::STAGE_BYTES, warp_m, warp_n, lane, a, b, acc);
  }
  cp_async_wait<0>();  // only empty groups can remain, but make it explicit
  __syncthreads();
}

template <class Cfg>
__device__ __forceinline__ void zero_acc(float (&acc)[Cfg::MI][Cfg::NI][4]) {
#pragma unroll
  for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < Cfg::NI; ++ni)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[mi][ni][j] = 0.f;
}

// Writes the tile as bf16 pairs straight from the accumulators. m16n8 layout: lane holds
// (row g, cols 2t..2t+1) in acc[0..1] and (row g+8, same cols) in acc[2..3], g = lane/4, t = lane%4.
template <class Cfg>
__device__ __forceinline__ void epilogue_bf16(const float (&acc)[Cfg::MI][Cfg::NI][4],
                                              bf16* __restrict__ C, int M, int N, int m0,
                                              int n0) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
#pragma unroll
  for (int mi = 0; mi < Cfg::MI; ++mi) {
    const int r0 = m0 + warp_m * Cfg::WM + mi * 16 + (lane >> 2);
#pragma unroll
    for (int ni = 0; ni < Cfg::NI; ++ni) {
      const int col = n0 + warp_n * Cfg::WN + ni * 8 + (lane & 3) * 2;
      if (col >= N) continue;  // N % 8 == 0: a pair is wholly inside or outside
      if (r0 < M)
        *reinterpret_cast<uint32_t*>(C + static_cast<size_t>(r0) * N + col) =
            pack_bf16x2(acc[mi][ni][0], acc[mi][ni][1]);
      if (r0 + 8 < M)
        *reinterpret_cast<uint32_t*>(C + static_cast<size_t>(r0 + 8) * N + col) =
            pack_bf16x2(acc[mi][ni][2], acc[mi][ni][3]);
    }
  }
}

// ---- the tile shapes (BM x BN x 64)
// 128x256, 8 warps 2x4 of 64x64, 4 stages x 48 KB = 192 KB: 1 CTA/SM, 0.5 B of smem per FLOP/2.
struct Tile128x256 {
  static constexpr int BM = 128, BN = 256, WARPS_M = 2, WARPS_N = 4, STAGES = 4, MIN_BLOCKS = 1;
};
// 128x128, 8 warps 2x4 of 64x32, 3 stages x 32 KB = 96 KB: 2 CTAs/SM on Hopper (<= 128 regs).
struct Tile128x128 {
  static constexpr int BM = 128, BN = 128, WARPS_M = 2, WARPS_N = 4, STAGES = 3, MIN_BLOCKS = 2;
};
// 64x128, 8 warps 2x4 of 32x32, 4 stages x 24 KB = 96 KB: 2 CTAs/SM.
struct Tile64x128 {
  static constexpr int BM = 64, BN = 128, WARPS_M = 2, WARPS_N = 4, STAGES = 4, MIN_BLOCKS = 2;
};
// 64x64, 4 warps 2x2 of 32x32, 4 stages x 16 KB = 64 KB: 3 CTAs/SM.
struct Tile64x64 {
  static constexpr int BM = 64, BN = 64, WARPS_M = 2, WARPS_N = 2, STAGES = 4, MIN_BLOCKS = 3;
};
// Decode: 16x64 and 32x64, 4 warps 1x4 of 16x16 / 32x16, 6 stages (a memory stream: deep pipe).
struct Tile16x64 {
  static constexpr int BM = 16, BN = 64, WARPS_M = 1, WARPS_N = 4, STAGES = 6, MIN_BLOCKS = 3;
};
struct Tile32x64 {
  static constexpr int BM = 32, BN = 64, WARPS_M = 1, WARPS_N = 4, STAGES = 6, MIN_BLOCKS = 3;
};
// The configurations of the Tile values (gemm_bf16_rungs.h) the rungs choose from.
using CfgL = MmaCfg<Tile128x256>;
using CfgM = MmaCfg<Tile128x128>;
using CfgS = MmaCfg<Tile64x128>;
using CfgT = MmaCfg<Tile64x64>;
using CfgD16 = MmaCfg<Tile16x64>;
using CfgD32 = MmaCfg<Tile32x64>;

// Relative throughput of each prefill tile when the SM is full (1.0 = the best tile), the factor
// the wave models of rungs 03 and 04 divide by: each tile's throughput over L's with rung 03 forced
// to that tile at 8192^3 (15.5 waves of 128x256). S and T (not run at 8192^3) are estimates.
// Decode tiles are chosen by M alone and never compared.
inline double tile_efficiency(Tile t) {
  switch (t) {
    case Tile::L: return 1.00;
    case Tile::M: return 0.901;
    case Tile::S: return 0.75;
    case Tile::T: return 0.55;
    default: return 0.50;
  }
}
// The tiles the wave models choose from for M > 64, best first.
constexpr Tile kPrefillTiles[] = {Tile::L, Tile::M, Tile::S, Tile::T};

// Decode shapes take the fixed tile for their M; the rest the prefill tile of lowest modelled time
// (`model(tile)`: the rung's own wave model, INFINITY for a tile that does not fit).
template <class Model>
Tile choose_tile(int M, Model model) {
  if (M <= 16) return Tile::D16;
  if (M <= 32) return Tile::D32;
  if (M <= 64) return Tile::T;
  Tile best = kPrefillTiles[0];
  double bt = INFINITY;
  for (Tile t : kPrefillTiles) {
    const double m = model(t);
    if (m < bt) best = t, bt = m;
  }
  return best;
}

// Host side: resident CTAs per SM for kernel `fn` with Cfg's block and smem (0 if it cannot run,
// e.g. the smem exceeds the card's opt-in limit). Sets the >48 KB opt-in attribute once.
template <class Cfg>
int ctas_per_sm(const void* fn, const DeviceInfo& d) {
  if (Cfg::SMEM > d.smem_optin) return 0;
  return occupancy(fn, Cfg::THREADS, Cfg::SMEM, d);
}

}  // namespace kl::gemm_bf16_detail
