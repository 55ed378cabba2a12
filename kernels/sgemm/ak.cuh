// kernels/sgemm/ak.cuh — family-private: the kernel of rungs 13, 14, 15 and 17 (A kept
// k-contiguous in shared memory, A fragments read 4 k at a time, 64 x 64 warp tiles). Rung 13's
// header says how it works. A rung names its configuration (Bk16ThreeStage, Bk32ThreeStage,
// Bk64TwoStage, AnyShapeTwoBlocks below: kBK the k-tile depth, kStages the ring stages, kKUnroll
// the unroll of the loop over a tile's 4-deep k-steps, kBM the block tile's rows, kBlocksPerSm,
// Copies how a stage is filled). kLoopOnly is the form bench_peak's fp32_ffma_16x8_lds ceiling runs
// (rung 15's loop alone, no faster than the whole rung: the gap to cuBLAS is inside the FFMA loop;
// docs/sgemm.md). The loop stays inside this kernel: moved into a function of its own, ptxas
// allocates the rungs' registers differently.
#pragma once
#include <type_traits>

#include "common/cp_async4.cuh"
#include "sgemm_internal.h"

namespace kl::sgemm_detail::ak {

constexpr int BN = 128;                               // BM x 128 tiles: (BM / 64) x 2 warps
constexpr int WM = 64, WN = 64;
constexpr int kWarpsN = BN / WN;                      // 2
constexpr int TM = 16, TN = 8;
constexpr int kGroupRaster = 8;
static_assert(WM == 4 * TM && WN == 8 * TN, "warp tile");

// How a stage reaches shared memory.
//  Quads16: 16-byte cp.async of A's row quads and B's column quads (K % 4 == N % 4 == 0, aligned).
//  Floats4: one float per cp.async, each predicated on its own row and column, so any M, N, K and
//    alignment: a warp instruction copies 128 contiguous bytes of one row of A (BK = 32: the
//    row's k-tile) or of B (columns lane + 32e), into the same shared layout as Quads16.
struct Quads16 {};
struct Floats4 {};

// The configurations (kKUnroll = kBK / 4 unrolls the k-step loop fully). Rungs 13-15: a 256 x 128
// tile, one block of 8 warps per SM.
struct OneBlock256 {
  static constexpr int kBM = 256, kBlocksPerSm = 1;
  using Copies = Quads16;
};
struct Bk16ThreeStage : OneBlock256 {  // rung 13
  static constexpr int kBK = 16, kStages = 3, kKUnroll = 4;
};
struct Bk32ThreeStage : OneBlock256 {  // rung 14: 32-deep k-tiles
  static constexpr int kBK = 32, kStages = 3, kKUnroll = 8;
};
struct Bk64TwoStage : OneBlock256 {  // rung 15: a 2-deep ring of 64-deep k-tiles, unrolled by 8
  static constexpr int kBK = 64, kStages = 2, kKUnroll = 8;
};
// Rung 17: rung 14's ring on a 128 x 128 tile of 4 warps, two blocks per SM, and Floats4 copies;
// the k-step loop unrolled by 4 (fully unrolled, ptxas spills beside the copies' registers).
struct AnyShapeTwoBlocks {
  static constexpr int kBM = 128, kBlocksPerSm = 2;
  static constexpr int kBK = 32, kStages = 3, kKUnroll = 4;
  using Copies = Floats4;
};

// What a configuration C implies.
template <class C>
struct AkCfg {
  static constexpr int BM = C::kBM, BK = C::kBK, S = C::kStages;
  static constexpr int kThreads = (BM / WM) * kWarpsN * 32;   // 256 or 128
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kBlocksPerSm = C::kBlocksPerSm;
  static constexpr bool kFloats4 = std::is_same_v<typename C::Copies, Floats4>;
  static constexpr int kQuads = BK / 4;                       // 16-byte quads per A row
  static constexpr int kRowsPerPass = kThreads / kQuads;      // rows one pass of copies covers
  static constexpr int kLoadsA = BM * kQuads / kThreads;      // BK = 16: 4
  static constexpr int kLoadsB = BK * BN / 4 / kThreads;      // BK = 16: 2
  static constexpr int kStageFloats = BM * BK + BK * BN;
  static constexpr int kSmemBytes = S * kStageFloats * 4;     // BK = 16: 72 KB
  // Floats4: warp w copies A rows w + kWarps l (l < BM / kWarps) and B rows w + kWarps l
  // (l < BK / kWarps), one float per lane and instruction (4 instructions per B row).
  static constexpr int kRowsA4 = BM / kWarps, kRowsB4 = BK / kWarps;
  static_assert(!kFloats4 || (BK == 32 && BM % kWarps == 0 && BK % kWarps == 0),
                "Floats4: a warp instruction is one 32-float row of an A tile");
  // The swizzle XORs the low 2 bits of the quad index with (row >> 2) & 3: the 4 rows a warp
  // reads (m0 + 4 tm) get 4 distinct quads; every row starts at bank 0 (BK % 32 == 0 or 16).
  static_assert(kQuads >= 4 && (kQuads & (kQuads - 1)) == 0, "quads per row: 4, 8, ...");
  static_assert(kRowsPerPass % 16 == 0, "(row >> 2) & 3 is the same for every pass of a thread");
  static_assert(kLoadsA * kThreads == BM * kQuads && kLoadsB * kThreads * 4 == BK * BN, "slots");
};

// kLoopOnly (bench_peak's fp32_ffma_16x8_lds ceiling only): no copies, no waits, no barriers; every
// k-tile runs the FFMA loop below on ring slot 0, filled once with small values. The rest of the
// kernel is the same tokens, so the rungs' instantiations (kLoopOnly = false) compile as before.
template <class Config, bool kLoopOnly = false>
__global__ void __launch_bounds__(AkCfg<Config>::kThreads, AkCfg<Config>::kBlocksPerSm)
    sgemm_ak_kernel(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K) {
  using Cf = AkCfg<Config>;
  constexpr int BM = Cf::BM, BK = Config::kBK, S = Config::kStages, KQU = Config::kKUnroll;
  constexpr int kThreads = Cf::kThreads;
  constexpr int kQuads = Cf::kQuads, kLoadsA = Cf::kLoadsA, kLoadsB = Cf::kLoadsB;
  constexpr int kStageFloats = Cf::kStageFloats, kRows = Cf::kRowsPerPass;
  extern __shared__ __align__(16) float smem[];  // S x { As[BM][BK] (quad-swizzled), Bs[BK][BN] }

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = kGroupRaster * tiles_n;
  const int group = blockIdx.x / per_group;
  const int first_m = group * kGroupRaster;
  const int group_m = min(tiles_m - first_m, kGroupRaster);
  const int in_group = blockIdx.x % per_group;
  const int bm = (first_m + in_group % group_m) * BM;
  const int bn = (in_group / group_m) * BN;

  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int wm0 = (warp / kWarpsN) * WM, wn0 = (warp % kWarpsN) * WN;
  const int tm = lane / 8, tn = lane % 8;

  // A copies: slot l -> row t/kQuads + kRows l, quad t % kQuads (BK = 16: 4 lanes copy the 64
  // contiguous bytes of a row).
  const int a_q = t % kQuads, a_row0 = t / kQuads;
  const int a_sw = (a_row0 >> 2) & 3;  // (row >> 2) & 3 is the same for every slot
  const uint32_t a_dst = static_cast<uint32_t>((a_row0 * BK + ((a_q ^ a_sw) * 4)) * 4);
  uint32_t a_rows_in = 0;
#pragma unroll
  for (int l = 0; l < kLoadsA; ++l)
    if (bm + a_row0 + kRows * l < M) a_rows_in |= 1u << l;
  const float* a_src = A + static_cast<size_t>(a_rows_in & 1 ? bm + a_row0 : bm) * K + a_q * 4;
  const size_t a_slot_step = static_cast<size_t>(kRows) * K;
  // B copies: slot l -> tile row t/32 + kBRows l, columns (t%32)*4..+3 (a 128-float row is 32 quads).
  constexpr int kBRows = kThreads / 32;
  const int b_col = (t % 32) * 4, b_row0 = t / 32;
  const bool b_n_in = bn + b_col < N;
  const uint32_t b_dst = static_cast<uint32_t>((BM * BK + b_row0 * BN + b_col) * 4);
  const float* b_src = B + static_cast<size_t>(b_row0) * N + bn + b_col;

  // Floats4 copies (unused by Quads16): A row warp + kWarps l of the tile, its k = lane; B row
  // warp + kWarps l, columns lane + 32e. a4_dst[c]: row `warp`'s lane slot with quad swizzle c.
  static_assert(!Cf::kFloats4 || (Cf::kWarps == 4 && Cf::kRowsA4 % 4 == 0),
                "Floats4: the swizzle steps with l (4 warps)");
  uint32_t a4_dst[4];
#pragma unroll
  for (int c = 0; c < 4; ++c)
    a4_dst[c] = static_cast<uint32_t>((warp * BK + (((lane / 4) ^ c) * 4) + lane % 4) * 4);
  uint32_t a4_rows_in = 0;  // bit l: row warp + kWarps l inside M
#pragma unroll
  for (int l = 0; l < Cf::kRowsA4; ++l)
    if (bm + warp + Cf::kWarps * l < M) a4_rows_in |= 1u << l;
  const size_t a4_step = static_cast<size_t>(Cf::kWarps) * K;
  uint32_t b4_cols_in = 0;  // bit e: column lane + 32e inside N
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (bn + lane + 32 * e < N) b4_cols_in |= 1u << e;
  const size_t b4_step = static_cast<size_t>(Cf::kWarps) * N;
  const uint32_t b4_dst = static_cast<uint32_t>((BM * BK + warp * BN + lane) * 4);

  const uint32_t smem0 = smem_u32(smem);
  auto issue = [&](int stage, int k0) {
    const uint32_t base = smem0 + static_cast<uint32_t>(stage * kStageFloats * 4);
    if constexpr (Cf::kFloats4) {  // lane = k of an A row, column lane + 32e of a B row
      // Row warp + 4 l (4 warps): its quad swizzle (row >> 2) & 3 is l & 3.
      const bool a_k_in = k0 + lane < K;
      const float* pa = A + static_cast<size_t>(bm + warp) * K + k0 + lane;
      uint32_t dst = base;
#pragma unroll 1
      for (int l0 = 0; l0 < Cf::kRowsA4; l0 += 4) {  // 4 rows per pass: the 4 swizzles
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = a_k_in && ((a4_rows_in >> (l0 + j)) & 1);
          cp_async_4(dst + a4_dst[j] + static_cast<uint32_t>(j * Cf::kWarps * BK * 4),
                     in ? pa : A, in);
          pa += a4_step;
        }
        dst += static_cast<uint32_t>(4 * Cf::kWarps * BK * 4);
      }
      const float* pb = B + static_cast<size_t>(k0 + warp) * N + bn + lane;
#pragma unroll 1
      for (int l = 0; l < Cf::kRowsB4; ++l) {
        const bool k_in = k0 + warp + Cf::kWarps * l < K;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = k_in && ((b4_cols_in >> e) & 1);
          cp_async_4(base + b4_dst + static_cast<uint32_t>((l * Cf::kWarps * BN + 32 * e) * 4),
                     in ? pb + 32 * e : B, in);
        }
        pb += b4_step;
      }
    } else {
      const bool k_in = k0 + a_q * 4 < K;  // K % 4 == 0: a quad is all in or all out
#pragma unroll
      for (int l = 0; l < kLoadsA; ++l) {
        const bool in = k_in && ((a_rows_in >> l) & 1);
        cp_async_16_u32(base + a_dst + static_cast<uint32_t>(kRows * l * BK * 4),
                        in ? a_src + l * a_slot_step + k0 : A, in);
      }
#pragma unroll
      for (int l = 0; l < kLoadsB; ++l) {
        const bool in = b_n_in && k0 + b_row0 + kBRows * l < K;
        cp_async_16_u32(base + b_dst + static_cast<uint32_t>(kBRows * l * BN * 4),
                        in ? b_src + static_cast<size_t>(k0 + kBRows * l) * N : B, in);
      }
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const int nk = (K + BK - 1) / BK;
  if constexpr (kLoopOnly) {
    for (int i = t; i < kStageFloats; i += kThreads) smem[i] = 0.001f * (i % 13);
    __syncthreads();
  }
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if constexpr (kLoopOnly) break;
    if (s < nk) issue(s, s * BK);
    cp_async_commit();
  }
  int st = 0, st_issue = S - 1;
  for (int kt = 0; kt < nk; ++kt) {
    if constexpr (!kLoopOnly) {
      cp_async_wait<S - 2>();  // tile kt landed (this thread's copies) ...
      __syncthreads();         // ... everyone's, and every warp is done with tile kt-1's stage
      if (kt + S - 1 < nk) issue(st_issue, (kt + S - 1) * BK);
      cp_async_commit();
    }
    const float* As = smem + st * kStageFloats;
    const float* Bs = As + BM * BK;
#pragma unroll(KQU)
    for (int kq = 0; kq < kQuads; ++kq) {
      float rb[4][TN];  // B fragments of k = 4 kq .. 4 kq + 3
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int g = 0; g < TN / 4; ++g)
          *reinterpret_cast<float4*>(&rb[k][g * 4]) =
              *reinterpret_cast<const float4*>(&Bs[(kq * 4 + k) * BN + wn0 + g * 32 + tn * 4]);
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        // Row wm0 + (i/4)*16 + tm*4 + i%4: its swizzle (row >> 2) & 3 is tm.
        const int row = wm0 + (i / 4) * 16 + tm * 4 + i % 4;
        const float4 a4 = *reinterpret_cast<const float4*>(&As[row * BK + ((kq ^ tm) * 4)]);
        const float av[4] = {a4.x, a4.y, a4.z, a4.w};
#pragma unroll
        for (int k = 0; k < 4; ++k)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[k], rb[k][j], acc[i][j]);
      }
    }
    if constexpr (kLoopOnly) continue;
    st = st + 1 == S ? 0 : st + 1;
    st_issue = st_issue + 1 == S ? 0 : st_issue + 1;
  }
  cp_async_wait<0>();

  // float4 stores; Floats4 stores one float at a time unless N % 4 == 0 and C is 16-byte aligned.
  const bool vec_c = !Cf::kFloats4 || ((N & 3) == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + wm0 + (i / 4) * 16 + tm * 4 + i % 4;
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const int col = bn + wn0 + h * 32 + tn * 4;
      if (col >= N) continue;
      if (vec_c) {
        *reinterpret_cast<float4*>(crow + col) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (col + e < N) crow[col + e] = acc[i][h * 4 + e];
      }
    }
  }
}

// "" when sgemm_ak_kernel<C> takes the shape: a grid that fits, the ring within the device's shared
// memory (Floats4: any M, N, K > 0 and any float pointers).
template <class C>
std::string any_shape_supports(const SgemmArgs& a, const DeviceInfo& d) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (ceil_div(a.M, AkCfg<C>::BM) * ceil_div(a.N, BN) > 0x7fffffffLL)
    return "grid exceeds 2^31-1 blocks";
  if (d.smem_optin > 0 && AkCfg<C>::kSmemBytes > d.smem_optin)
    return "needs more shared memory per block than the device allows";
  return "";
}

// "" when a Quads16 configuration takes the shape: 16-byte rows of A, B and C at 16-byte aligned
// addresses, and what any_shape_supports asks.
template <class C>
std::string aligned_abc_supports(const SgemmArgs& a, const DeviceInfo& d) {
  static_assert(!AkCfg<C>::kFloats4, "Floats4 configurations take any shape");
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (a.K % 4 || a.N % 4)
    return "needs K % 4 == 0 and N % 4 == 0 (16-byte cp.async rows; rung 08 takes any shape)";
  if (!aligned(a.A, 16) || !aligned(a.B, 16) || !aligned(a.C, 16))
    return "needs 16-byte aligned A, B and C (cp.async / float4; rung 08 takes any pointer)";
  return any_shape_supports<C>(a, d);
}

template <class C>
void sgemm_ak_launch(const SgemmArgs& a, cudaStream_t s) {
  constexpr int smem = AkCfg<C>::kSmemBytes;
  static const bool opted = [] {
    KL_CHECK(cudaFuncSetAttribute(sgemm_ak_kernel<C>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    if (AkCfg<C>::kBlocksPerSm > 1)  // the largest carveout, so that the blocks fit side by side
      KL_CHECK(cudaFuncSetAttribute(sgemm_ak_kernel<C>,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    static_cast<int>(cudaSharedmemCarveoutMaxShared)));
    return true;
  }();
  (void)opted;
  const unsigned blocks = static_cast<unsigned>(ceil_div(a.M, AkCfg<C>::BM) * ceil_div(a.N, BN));
  sgemm_ak_kernel<C><<<blocks, AkCfg<C>::kThreads, smem, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}
}  // namespace kl::sgemm_detail::ak
