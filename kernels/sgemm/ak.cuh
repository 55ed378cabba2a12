// kernels/sgemm/ak.cuh — family-private: the kernel of rungs 13, 14 and 15 (A kept k-contiguous in
// shared memory, 16-byte cp.async for both operands, A fragments read 4 k at a time). Rung 13's
// header says how it works. A rung names its configuration (Bk16ThreeStage, Bk32ThreeStage,
// Bk64TwoStage below: kBK the k-tile depth, kStages the ring stages, kKUnroll the unroll of the
// loop over a tile's 4-deep k-steps). kLoopOnly is the form bench_peak's fp32_ffma_16x8_lds
// ceiling runs (rung 15's loop alone, no faster than the whole rung: the gap to cuBLAS is inside
// the FFMA loop; docs/sgemm.md). The loop stays inside this kernel: moved into a function of its
// own, ptxas allocates the rungs' registers differently.
#pragma once
#include "common/cp_async4.cuh"
#include "sgemm_internal.h"

namespace kl::sgemm_detail::ak {

constexpr int BM = 256, BN = 128;                     // 4 x 2 warps of 64 x 64
constexpr int WM = 64, WN = 64;
constexpr int kWarpsN = BN / WN;                      // 2
constexpr int TM = 16, TN = 8;
constexpr int kGroupRaster = 8;
static_assert(WM == 4 * TM && WN == 8 * TN, "warp tile");

// The configurations of rungs 13-15 (kKUnroll = kBK / 4: the k-step loop fully unrolled).
struct Bk16ThreeStage {  // rung 13
  static constexpr int kBK = 16, kStages = 3, kKUnroll = 4;
};
struct Bk32ThreeStage {  // rung 14: 32-deep k-tiles
  static constexpr int kBK = 32, kStages = 3, kKUnroll = 8;
};
struct Bk64TwoStage {  // rung 15: a 2-deep ring of 64-deep k-tiles, the k-step loop unrolled by 8
  static constexpr int kBK = 64, kStages = 2, kKUnroll = 8;
};

// What a configuration C implies. One block of 8 warps per SM.
template <class C>
struct AkCfg {
  static constexpr int BK = C::kBK, S = C::kStages;
  static constexpr int kThreads = (BM / WM) * kWarpsN * 32;   // 256
  static constexpr int kBlocksPerSm = 1;
  static constexpr int kQuads = BK / 4;                       // 16-byte quads per A row
  static constexpr int kRowsPerPass = kThreads / kQuads;      // rows one pass of copies covers
  static constexpr int kLoadsA = BM * kQuads / kThreads;      // BK = 16: 4
  static constexpr int kLoadsB = BK * BN / 4 / kThreads;      // BK = 16: 2
  static constexpr int kStageFloats = BM * BK + BK * BN;
  static constexpr int kSmemBytes = S * kStageFloats * 4;     // BK = 16: 72 KB
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
  constexpr int BK = Config::kBK, S = Config::kStages, KQU = Config::kKUnroll;
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

  const uint32_t smem0 = smem_u32(smem);
  auto issue = [&](int stage, int k0) {
    const uint32_t base = smem0 + static_cast<uint32_t>(stage * kStageFloats * 4);
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

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + wm0 + (i / 4) * 16 + tm * 4 + i % 4;
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const int col = bn + wn0 + h * 32 + tn * 4;
      if (col < N)
        *reinterpret_cast<float4*>(crow + col) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
  }
}

// "" when sgemm_ak_kernel<C> takes the shape: 16-byte rows of A, B and C at 16-byte aligned
// addresses, a grid that fits, the ring within the device's shared memory.
template <class C>
std::string aligned_abc_supports(const SgemmArgs& a, const DeviceInfo& d) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (a.K % 4 || a.N % 4)
    return "needs K % 4 == 0 and N % 4 == 0 (16-byte cp.async rows; rung 08 takes any shape)";
  if (!aligned(a.A, 16) || !aligned(a.B, 16) || !aligned(a.C, 16))
    return "needs 16-byte aligned A, B and C (cp.async / float4; rung 08 takes any pointer)";
  if (ceil_div(a.M, BM) * ceil_div(a.N, BN) > 0x7fffffffLL) return "grid exceeds 2^31-1 blocks";
  if (d.smem_optin > 0 && AkCfg<C>::kSmemBytes > d.smem_optin)
    return "needs more shared memory per block than the device allows";
  return "";
}

template <class C>
void sgemm_ak_launch(const SgemmArgs& a, cudaStream_t s) {
  constexpr int smem = AkCfg<C>::kSmemBytes;
  static const bool opted = [] {
    KL_CHECK(cudaFuncSetAttribute(sgemm_ak_kernel<C>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  }();
  (void)opted;
  const unsigned blocks = static_cast<unsigned>(ceil_div(a.M, BM) * ceil_div(a.N, BN));
  sgemm_ak_kernel<C><<<blocks, AkCfg<C>::kThreads, smem, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}
}  // namespace kl::sgemm_detail::ak
