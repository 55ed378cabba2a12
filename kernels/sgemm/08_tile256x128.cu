// 08 tile256x128 — 256x128 tile with 16x8 micro-tiles, fragment double buffering, any M, N, K.
//
// Parent: 07 prefetch_swizzle.
// Change: each thread computes 16 (M) x 8 (N) outputs (64x64 warp tiles, 4 x 2 warps): 4 + 2
//   LDS.128 per k for 128 FMAs; k+1's fragments load while k's FMAs issue; one block of 256
//   threads per SM (~210 registers); tails by predication (float4 path when K % 4 == 0, N % 4 == 0
//   and A, B, C are 16-byte aligned, scalar loads otherwise); grouped rasterization (8 M-tiles down
//   before moving along N, so resident blocks share A and B slices in L2).
// Why: 0.75 shared bytes per FMA instead of 1.0, and 128 FFMA per 6 LDS per k; the 128 independent
//   FMAs give the ILP that occupancy gave rung 07.
// Limits: per-tile costs (barrier, global loads, transposing A stores) every 1024 FMAs per thread
//   (rung 09). Shared memory: 2 stages x 8 x (256 + 128) floats = 24 KB static. Any M, N, K > 0.
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 256, BN = 128, BK = 8;
constexpr int WM = 64, WN = 64;                       // warp tile
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;   // 4 x 2
constexpr int kThreads = kWarpsM * kWarpsN * 32;      // 256
constexpr int TM = 16, TN = 8;                        // per thread: 4 x 2 groups of 4x4
constexpr int kGroupsM = TM / 4, kGroupsN = TN / 4;   // 4, 2
constexpr int kLoadsA = BM * BK / 4 / kThreads;       // float4 slots of A per thread per tile: 2
constexpr int kLoadsB = BK * BN / 4 / kThreads;       // 1
constexpr int kGroupRaster = 8;                       // M-tiles per rasterization group
static_assert(WM == 4 /*tm lanes*/ * TM && WN == 8 /*tn lanes*/ * TN, "lanes cover a warp tile");
static_assert(kLoadsA * kThreads * 4 == BM * BK && kLoadsB * kThreads * 4 == BK * BN,
              "whole float4 slots per thread");
static_assert(BK == 8 && WM % 32 == 0, "swizzle: XOR 16 on m for k >= 4 stays inside a warp tile");
static_assert(2 * BK * (BM + BN) * 4 <= 48 * 1024, "static shared memory limit");

__device__ __forceinline__ int swz(int k) { return (k >> 2) << 4; }

// Loads 4 consecutive floats p[0..3] where element e exists iff e < valid (valid <= 0: none).
// kVec: row length % 4 == 0, slot offsets % 4 == 0 and the base 16-byte aligned, so valid is
// either >= 4 or <= 0 and p is 16-byte aligned.
template <bool kVec>
__device__ __forceinline__ float4 load4(const float* p, int valid) {
  if (kVec) {
    // Row length and every slot offset are multiples of 4 here, so a slot is all in or all out:
    // one predicated LDG.128, no scalar fallback.
    return valid > 0 ? __ldg(reinterpret_cast<const float4*>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  float4 v;
  v.x = valid > 0 ? __ldg(p + 0) : 0.f;
  v.y = valid > 1 ? __ldg(p + 1) : 0.f;
  v.z = valid > 2 ? __ldg(p + 2) : 0.f;
  v.w = valid > 3 ? __ldg(p + 3) : 0.f;
  return v;
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads, 1)
    sgemm_tile256x128_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[2][BK][BM];  // [stage][k][m ^ swz(k)]
  __shared__ __align__(16) float Bs[2][BK][BN];  // [stage][k][n]

  // Grouped rasterization of the 1D grid into (tile_m, tile_n).
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

  // Load slots. A: slot f = t + l*256 -> row f/2 of the tile, k columns (f%2)*4..+3 (two lanes
  // read one 32-byte sector). B: row t/32, columns (t%32)*4..+3 (a warp reads 512 contiguous B).
  int a_row[kLoadsA], a_k[kLoadsA], a_col[kLoadsA];
  const float* a_ptr[kLoadsA];
  bool a_in[kLoadsA];
#pragma unroll
  for (int l = 0; l < kLoadsA; ++l) {
    const int f = t + l * kThreads;
    a_row[l] = f / 2;
    a_k[l] = (f % 2) * 4;
    a_col[l] = a_row[l] ^ swz(a_k[l]);
    a_in[l] = bm + a_row[l] < M;
    // Rows past M never dereference: clamp the pointer to row 0 of the tile (always valid).
    a_ptr[l] = A + static_cast<size_t>(a_in[l] ? bm + a_row[l] : bm) * K + a_k[l];
  }
  const int b_row = t / 32, b_col = (t % 32) * 4;
  const int b_valid_n = N - (bn + b_col);  // columns of this float4 slot inside N
  const float* b_ptr = B + static_cast<size_t>(b_row) * N + bn + b_col;

  float4 pa[kLoadsA], pb;
  auto load_tile = [&](int k0) {
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l)
      pa[l] = load4<kVec>(a_ptr[l] + k0, a_in[l] ? K - (k0 + a_k[l]) : 0);
    const bool k_in = k0 + b_row < K;
    pb = load4<kVec>(k_in ? b_ptr + static_cast<size_t>(k0) * N : B, k_in ? b_valid_n : 0);
  };
  auto store_tile = [&](int st) {
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l) {
      As[st][a_k[l] + 0][a_col[l]] = pa[l].x;  // the transpose, swizzled: conflict-free
      As[st][a_k[l] + 1][a_col[l]] = pa[l].y;
      As[st][a_k[l] + 2][a_col[l]] = pa[l].z;
      As[st][a_k[l] + 3][a_col[l]] = pa[l].w;
    }
    *reinterpret_cast<float4*>(&Bs[st][b_row][b_col]) = pb;
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  float ra[2][TM], rb[2][TN];  // fragment double buffer: [k & 1]
  auto load_frags = [&](int st, int k, int buf) {
#pragma unroll
    for (int g = 0; g < kGroupsM; ++g)
      *reinterpret_cast<float4*>(&ra[buf][g * 4]) =
          *reinterpret_cast<const float4*>(&As[st][k][(wm0 + g * 16 + tm * 4) ^ swz(k)]);
#pragma unroll
    for (int g = 0; g < kGroupsN; ++g)
      *reinterpret_cast<float4*>(&rb[buf][g * 4]) =
          *reinterpret_cast<const float4*>(&Bs[st][k][wn0 + g * 32 + tn * 4]);
  };

  const int nk = (K + BK - 1) / BK;
  load_tile(0);
  store_tile(0);
  __syncthreads();
  load_frags(0, 0, 0);
  for (int kt = 0; kt < nk; ++kt) {
    const int st = kt & 1;
    const bool more = kt + 1 < nk;
    if (more) load_tile((kt + 1) * BK);  // in flight during the first 7/8 of the FMAs below
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        load_frags(st, k + 1, (k + 1) & 1);  // next k's fragments, this stage
      } else if (more) {
        // The tile hand-over sits before the LAST k-step, not after it: k = 7's fragments are
        // already in registers, so after the barrier the LDS of the next tile's k = 0 fragments
        // are in flight under k = 7's 128 FMAs instead of stalling every warp for an LDS latency.
        // Stage st^1 was last read (k = 1..7 fragments of tile kt-1) before the previous barrier.
        store_tile(st ^ 1);
        __syncthreads();
        load_frags(st ^ 1, 0, 0);  // BK is even: k = 0 uses buffer 0, free since k = 6
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[k & 1][i], rb[k & 1][j], acc[i][j]);
    }
  }

  // Epilogue: thread rows wm0 + g*16 + tm*4 + r, columns wn0 + h*32 + tn*4 + 0..3.
  const bool vec_c = kVec;  // kVec implies N % 4 == 0 and C 16-byte aligned
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + wm0 + (i / 4) * 16 + tm * 4 + i % 4;
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
    for (int h = 0; h < kGroupsN; ++h) {
      const int col = bn + wn0 + h * 32 + tn * 4;
      if (vec_c && col + 3 < N) {
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

bool vec_path(const SgemmArgs& a) {
  return a.K % 4 == 0 && a.N % 4 == 0 && aligned(a.A, 16) && aligned(a.B, 16) && aligned(a.C, 16);
}
}  // namespace

std::string sgemm_tile256x128_supports(const SgemmArgs& a, const DeviceInfo&) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (ceil_div(a.M, BM) * ceil_div(a.N, BN) > 0x7fffffffLL) return "grid exceeds 2^31-1 blocks";
  return "";
}

void sgemm_tile256x128_launch(const SgemmArgs& a, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(ceil_div(a.M, BM) * ceil_div(a.N, BN));
  if (vec_path(a))
    sgemm_tile256x128_kernel<true><<<blocks, kThreads, 0, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  else
    sgemm_tile256x128_kernel<false><<<blocks, kThreads, 0, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
