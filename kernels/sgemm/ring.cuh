// kernels/sgemm/ring.cuh — family-private: the cp.async ring kernel of rungs 10, 11, 12 and 16.
//
// Both operands go global -> shared by cp.async into an S-stage ring, one barrier per k-tile:
//  * A (row-major, k contiguous) is copied one float at a time (4-byte cp.async, .ca) straight
//    into the transposed, swizzled As[k][m ^ ((k & 7) << 2)] layout: the copy is the transpose.
//    A warp instruction covers 4 rows x 8 consecutive k (four full 32-byte sectors); lane
//    (r = lane/8, kk = lane%8) of warp w copies rows 4w + r + 32i, k = kk + 8h. Its 32 stores
//    hit 32 distinct banks (low bits r, bits 2..4 = w ^ kk; a row of As is a multiple of 32
//    floats). A fragment read (one k) XORs the same multiple of 4 into every lane's column, so
//    each float4 stays contiguous and aligned and a warp's distinct float4s stay in distinct banks.
//  * B (row-major, n contiguous): 16-byte cp.async, a warp copies 512 contiguous bytes of a row.
//    With kAnyB (any N, any alignment of B and C), 4-byte cp.async instead: lane l copies columns
//    l, l + 32, l + 64, l + 96 of the row (each instruction 128 contiguous bytes, 32 banks), each
//    copy predicated on its own column, and C is stored one float at a time unless N % 4 == 0 and
//    C is 16-byte aligned.
//  * Tile kt+S-1 is issued at the top of tile kt into the stage tile kt-1 used (every warp read
//    its last fragments of kt-1 before the barrier of kt-1's hand-over); the barrier sits before
//    the last k-step of each tile (as in rungs 08/09) and only waits for tile kt+1.
//  * Warps: (BM/WM) x 2, warp tile WM x 64, lanes 4 (m) x 8 (n), per thread (WM/4) x 8 outputs as
//    4x4 groups strided 16 rows / 32 columns apart (broadcast-friendly LDS.128, as rungs 06-09).
//  * Split-K (gridDim.y > 1): slice z takes a contiguous run of k-tiles and adds its partial tile
//    into C, which the launcher zeroed, with float4 atomics (float atomics where kAnyB stores C
//    one float at a time). With at most 2 slices the sum is
//    bitwise deterministic (0 + a + b == 0 + b + a in IEEE arithmetic).
// Without kAnyB: needs K % 4 == 0, N % 4 == 0 and 16-byte aligned B and C; A may have any alignment.
#pragma once
#include "common/cp_async4.cuh"
#include "sgemm_internal.h"

namespace kl::sgemm_detail::ring {

constexpr int BN = 128, WN = 64, TN = 8;
constexpr int kGroupsN = TN / 4;  // 2
constexpr int kThreads = 256;     // 8 warps (the A copy mapping assumes 8 x 4 = 32 rows per pass)
constexpr int kGroupRaster = 8;

template <int BM_, int WM_, int BK_, int S_>
struct Cfg {
  static constexpr int BM = BM_, WM = WM_, BK = BK_, S = S_;
  static constexpr int TM = WM / 4;                       // lanes: 4 along m
  static constexpr int kGroupsM = TM / 4;
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kRowIters = BM / 32;               // A passes of 32 rows
  static constexpr int kKIters = BK / 8;                  // A passes of 8 k
  static constexpr int kLoadsB = BK * BN / 4 / kThreads;  // 16-byte B copies per thread
  static constexpr int kStageFloats = BK * (BM + BN);
  static constexpr int kSmemBytes = S * kStageFloats * 4;
  static_assert(kWarpsM * kWarpsN * 32 == kThreads, "8 warps");
  static_assert(WM % 16 == 0 && TM % 4 == 0 && WN == 8 * TN, "4x4 groups cover a warp tile");
  static_assert(BM % 32 == 0 && BK % 8 == 0 && kLoadsB * kThreads * 4 == BK * BN, "copy slots");
  static_assert(S >= 2 && BK % 2 == 0, "ring depth; fragment buffer parity (k = 0 uses buffer 0)");
};

// A^T swizzle: column m of As row k is stored at m ^ swz(k) (a multiple of 4 below 32).
__device__ __forceinline__ int swz(int k) { return (k & 7) << 2; }

template <class Cf, int kMinBlocks, bool kLean, bool kAnyB>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    sgemm_ring_kernel(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K, int kt_per_slice) {
  constexpr int BM = Cf::BM, WM = Cf::WM, BK = Cf::BK, S = Cf::S, TM = Cf::TM;
  extern __shared__ __align__(16) float smem[];  // S x { As[BK][BM], Bs[BK][BN] }

  // Grouped rasterization of blockIdx.x into (tile_m, tile_n); blockIdx.y is the K slice.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = kGroupRaster * tiles_n;
  const int group = blockIdx.x / per_group;
  const int first_m = group * kGroupRaster;
  const int group_m = min(tiles_m - first_m, kGroupRaster);
  const int in_group = blockIdx.x % per_group;
  const int bm = (first_m + in_group % group_m) * BM;
  const int bn = (in_group / group_m) * BN;
  const int kt_total = (K + BK - 1) / BK;
  const int kt0 = blockIdx.y * kt_per_slice;
  const int nk = min(kt_per_slice, kt_total - kt0);  // >= 1: the launcher sizes the slices

  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int wm0 = (warp / Cf::kWarpsN) * WM, wn0 = (warp % Cf::kWarpsN) * WN;
  const int tm = lane / 8, tn = lane % 8;

  // ---- A copies.
  const int a_r = warp * 4 + lane / 8, a_kk = lane % 8;  // a_r < 32
  // Shared byte offset of (k = kk, m = a_r) in stage 0; pass i adds 32 floats, pass h adds 8
  // k-rows (swz depends on k & 7 only, so one XOR serves every h).
  const uint32_t a_dst = static_cast<uint32_t>((a_kk * BM + (a_r ^ swz(a_kk))) * 4);
  uint32_t a_rows_in = 0;  // bit i: row a_r + 32i is inside M
#pragma unroll
  for (int i = 0; i < Cf::kRowIters; ++i)
    if (bm + a_r + 32 * i < M) a_rows_in |= 1u << i;
  // Rows past M never dereference (src-size 0); clamp their base to the tile's first row.
  const float* a_src = A + static_cast<size_t>(a_rows_in & 1 ? bm + a_r : bm) * K + a_kk;
  const size_t a_row_step = static_cast<size_t>(32) * K;
  // ---- B copies: slot l -> tile row t/32 + 8l, columns (t%32)*4..+3.
  const int b_col = (t % 32) * 4, b_row0 = t / 32;
  const bool b_n_in = bn + b_col < N;  // N % 4 == 0: a slot is all in or all out
  const uint32_t b_dst = static_cast<uint32_t>((BK * BM + b_row0 * BN + b_col) * 4);
  const float* b_src = B + static_cast<size_t>(b_row0) * N + bn + b_col;

  const uint32_t smem0 = smem_u32(smem);
  // Interior tiles (every row inside M, every k inside K: a uniform branch) skip the per-copy
  // predicates and source selects; edge tiles zero-fill what lies outside.
  static_assert(!(kLean && kAnyB), "the lean path copies B 16 bytes at a time");
  const bool rows_full = bm + BM <= M;
  const float* a_src_raw = A + static_cast<size_t>(bm + a_r) * K + a_kk;  // kLean only
  auto issue = [&](int stage, int k0) {
    const uint32_t base = smem0 + static_cast<uint32_t>(stage * Cf::kStageFloats * 4);
    if (kLean && rows_full && k0 + BK <= K) {
      const float* pa = a_src_raw + k0;
#pragma unroll
      for (int h = 0; h < Cf::kKIters; ++h)
#pragma unroll
        for (int i = 0; i < Cf::kRowIters; ++i)
          cp_async_4(base + a_dst + static_cast<uint32_t>((h * 8 * BM + 32 * i) * 4),
                     pa + i * a_row_step + 8 * h);
      const float* pb = b_src + static_cast<size_t>(k0) * N;
#pragma unroll
      for (int l = 0; l < Cf::kLoadsB; ++l)
        cp_async_16_u32(base + b_dst + static_cast<uint32_t>(8 * l * BN * 4),
                        pb + static_cast<size_t>(8 * l) * N, b_n_in);
      return;
    }
#pragma unroll
    for (int h = 0; h < Cf::kKIters; ++h) {
      const bool k_in = k0 + a_kk + 8 * h < K;
#pragma unroll
      for (int i = 0; i < Cf::kRowIters; ++i) {
        const bool in = k_in && ((a_rows_in >> i) & 1);
        const float* src = in ? a_src + i * a_row_step + k0 + 8 * h : A;
        cp_async_4(base + a_dst + static_cast<uint32_t>((h * 8 * BM + 32 * i) * 4), src, in);
      }
    }
    if constexpr (kAnyB) {  // B row b_row0 + 8l: this lane's columns lane + 32e, each alone
#pragma unroll
      for (int l = 0; l < Cf::kLoadsB; ++l) {
        const int row = b_row0 + 8 * l;
        const bool k_in = k0 + row < K;
        const float* src_row = B + static_cast<size_t>(k_in ? k0 + row : 0) * N + bn;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = lane + 32 * e;
          const bool in = k_in && bn + col < N;
          cp_async_4(base + static_cast<uint32_t>((BK * BM + row * BN + col) * 4),
                     in ? src_row + col : B, in);
        }
      }
    } else {
#pragma unroll
      for (int l = 0; l < Cf::kLoadsB; ++l) {
        const bool in = b_n_in && k0 + b_row0 + 8 * l < K;
        const float* src = in ? b_src + static_cast<size_t>(k0 + 8 * l) * N : B;
        cp_async_16_u32(base + b_dst + static_cast<uint32_t>(8 * l * BN * 4), src, in);
      }
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  float ra[2][TM], rb[2][TN];  // fragment double buffer: [k & 1]
  auto load_frags = [&](int stage, int k, int buf) {
    const float* As = smem + stage * Cf::kStageFloats;
    const float* Bs = As + BK * BM;
#pragma unroll
    for (int g = 0; g < Cf::kGroupsM; ++g)
      *reinterpret_cast<float4*>(&ra[buf][g * 4]) =
          *reinterpret_cast<const float4*>(&As[k * BM + ((wm0 + g * 16 + tm * 4) ^ swz(k))]);
#pragma unroll
    for (int g = 0; g < kGroupsN; ++g)
      *reinterpret_cast<float4*>(&rb[buf][g * 4]) =
          *reinterpret_cast<const float4*>(&Bs[k * BN + wn0 + g * 32 + tn * 4]);
  };

  // Prologue: tiles 0..S-2 of the slice in flight, one commit group each (empty groups keep
  // the count uniform).
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < nk) issue(s, (kt0 + s) * BK);
    cp_async_commit();
  }
  cp_async_wait<S - 2>();  // tile 0 landed (this thread's copies) ...
  __syncthreads();         // ... and everyone's
  load_frags(0, 0, 0);
  int st = 0;            // stage of tile kt
  int st_issue = S - 1;  // stage of tile kt + S - 1 (= the stage tile kt - 1 used)
  for (int kt = 0; kt < nk; ++kt) {
    if (kt + S - 1 < nk) issue(st_issue, (kt0 + kt + S - 1) * BK);
    cp_async_commit();
    const int st_next = st + 1 == S ? 0 : st + 1;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        load_frags(st, k + 1, (k + 1) & 1);
      } else if (kt + 1 < nk) {
        // Hand-over before the last k-step: tile kt+1's group done (the S-2 younger groups may
        // still fly), barrier, then its k = 0 fragments load under k = BK-1's FMAs.
        cp_async_wait<S - 2>();
        __syncthreads();
        load_frags(st_next, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[k & 1][i], rb[k & 1][j], acc[i][j]);
    }
    st = st_next;
    st_issue = st_issue + 1 == S ? 0 : st_issue + 1;
  }
  cp_async_wait<0>();  // no copy outlives the block (only empty groups remain; be exact)

  // Epilogue: float4 stores or, split, float4 atomic adds where N % 4 == 0 and C is 16-byte
  // aligned (always, without kAnyB); one float at a time otherwise.
  const bool split = gridDim.y > 1;
  const bool vec_c = !kAnyB || ((N & 3) == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + wm0 + (i / 4) * 16 + tm * 4 + i % 4;
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
    for (int h = 0; h < kGroupsN; ++h) {
      const int col = bn + wn0 + h * 32 + tn * 4;
      if (col >= N) continue;
      if (!vec_c) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (col + e >= N) break;
          if (split)
            atomicAdd(crow + col + e, acc[i][h * 4 + e]);
          else
            crow[col + e] = acc[i][h * 4 + e];
        }
        continue;
      }
      const float4 v =
          make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      if (!split) {
        *reinterpret_cast<float4*>(crow + col) = v;
      } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float4*>(crow + col), v);  // one RED.128 (sm_90+)
#else
        atomicAdd(crow + col + 0, v.x);
        atomicAdd(crow + col + 1, v.y);
        atomicAdd(crow + col + 2, v.z);
        atomicAdd(crow + col + 3, v.w);
#endif
      }
    }
  }
}

// Number of k-tiles per slice for `slices` slices (the launcher passes the result, and the grid's
// y extent is ceil(kt_total / kt_per_slice), so no slice is empty).
inline int kt_per_slice(int K, int BK, int slices) {
  const int kt_total = (K + BK - 1) / BK;
  return (kt_total + slices - 1) / slices;
}

template <class Cf, int kMinBlocks, bool kLean = false, bool kAnyB = false>
void sgemm_ring_launch(const SgemmArgs& a, int slices, cudaStream_t s) {
  constexpr int smem = Cf::kSmemBytes;
  // The opt-in above 48 KB, once per process (the attribute belongs to the function).
  static const bool opted = [] {
    KL_CHECK(cudaFuncSetAttribute(sgemm_ring_kernel<Cf, kMinBlocks, kLean, kAnyB>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  }();
  (void)opted;
  const int per = kt_per_slice(a.K, Cf::BK, slices);
  const int kt_total = (a.K + Cf::BK - 1) / Cf::BK;
  const unsigned ys = static_cast<unsigned>((kt_total + per - 1) / per);
  if (ys > 1)  // the slices add into C
    KL_CHECK(cudaMemsetAsync(a.C, 0, sizeof(float) * static_cast<size_t>(a.M) * a.N, s));
  const dim3 grid(static_cast<unsigned>(ceil_div(a.M, Cf::BM) * ceil_div(a.N, BN)), ys);
  sgemm_ring_kernel<Cf, kMinBlocks, kLean, kAnyB>
      <<<grid, kThreads, smem, s>>>(a.A, a.B, a.C, a.M, a.N, a.K, per);
  KL_CHECK_LAUNCH();
}

// "" when sgemm_ring_kernel<Cf, ..., kAnyB = true> takes the shape: any M, N, K > 0 and any
// pointers, a grid that fits, the ring within the device's shared memory.
template <class Cf>
std::string any_shape_supports(const SgemmArgs& a, const DeviceInfo& d) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (ceil_div(a.M, Cf::BM) * ceil_div(a.N, BN) > 0x7fffffffLL) return "grid exceeds 2^31-1 blocks";
  if (d.smem_optin > 0 && Cf::kSmemBytes > d.smem_optin)
    return "needs more shared memory per block than the device allows";
  return "";
}

// "" when sgemm_ring_kernel<Cf> takes the shape: 16-byte rows of B and C at 16-byte aligned
// addresses (A may have any alignment), a grid that fits, the ring within the device's shared memory.
template <class Cf>
std::string aligned_bc_supports(const SgemmArgs& a, const DeviceInfo& d) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (a.K % 4 || a.N % 4)
    return "needs K % 4 == 0 and N % 4 == 0 (16-byte cp.async rows of B; rung 08 takes any shape)";
  if (!aligned(a.B, 16) || !aligned(a.C, 16))
    return "needs 16-byte aligned B and C (cp.async / float4; rung 08 takes any pointer)";
  return any_shape_supports<Cf>(a, d);
}

}  // namespace kl::sgemm_detail::ring
