// 09 bk16_cpasync — a 16-deep k-tile (BK = 16), B streamed by cp.async.
//
// Parent: 08 tile256x128.
// Change: each k-tile is 16 deep instead of 8; B (no transpose needed) goes global -> shared by
//   16-byte cp.async (zero-fill past N and K) and only A passes through registers (4 float4 per
//   thread). The A^T swizzle widens: m ^ (8 * (k/4 % 4)) spreads a warp's four k-quads over four
//   8-bank groups.
// Why: per-tile costs (barrier, global loads, A stores, address and predicate arithmetic) are paid
//   once per 2048 FMAs per thread instead of 1024; the doubled prefetch would not fit in registers
//   next to 128 accumulators and 48 fragment registers.
// Limits: A still takes the register hop; 2 stages x 16 x (256 + 128) floats = 48 KB (static
//   limit). Needs K % 4 == 0, N % 4 == 0, 16-byte aligned A, B, C (rung 08 takes the rest).
#include "common/mma.cuh"
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 256, BN = 128, BK = 16;
constexpr int WM = 64, WN = 64;                       // warp tile
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;   // 4 x 2
constexpr int kThreads = kWarpsM * kWarpsN * 32;      // 256
constexpr int TM = 16, TN = 8;                        // per thread: 4 x 2 groups of 4x4
constexpr int kGroupsM = TM / 4, kGroupsN = TN / 4;   // 4, 2
constexpr int kLoadsA = BM * BK / 4 / kThreads;       // float4 slots of A per thread per tile: 4
constexpr int kLoadsB = BK * BN / 4 / kThreads;       // cp.async slots of B per thread: 2
constexpr int kQuadsK = BK / 4;                       // lanes per A row: 4
constexpr int kGroupRaster = 8;
static_assert(WM == 4 * TM && WN == 8 * TN, "lanes cover a warp tile");
static_assert(kLoadsA * kThreads * 4 == BM * BK && kLoadsB * kThreads * 4 == BK * BN,
              "whole float4 slots per thread");
static_assert(32 / kQuadsK == 8 && WM % 32 == 0,
              "swizzle: a warp stores 8 rows x 4 k-quads; XOR 8*(k/4) stays inside a warp tile");
static_assert(2 * BK * (BM + BN) * 4 <= 48 * 1024, "static shared memory limit");
static_assert(BK % 2 == 0, "fragment buffer parity: k = 0 of every tile uses buffer 0");

// A^T swizzle: column m of As row k is stored at m ^ swz(k); four k-quads -> four 8-bank groups.
__device__ __forceinline__ int swz(int k) { return ((k >> 2) & 3) << 3; }

__global__ void __launch_bounds__(kThreads, 1)
    sgemm_bk16_cpasync_kernel(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[2][BK][BM];  // [stage][k][m ^ swz(k)]   32 KB
  __shared__ __align__(16) float Bs[2][BK][BN];  // [stage][k][n]            16 KB

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

  // A slots: f = t + l*256 -> tile row f/4, k columns (f%4)*4..+3 (4 lanes read 64 B of a row).
  // Slots l and l+1 are 64 rows apart and share the k-quad, so one k offset and one swizzle serve
  // all four; only the row (pointer, in-range flag, column) differs.
  const int a_k = (t % kQuadsK) * 4;
  const int a_sw = swz(a_k);
  const int a_row0 = t / kQuadsK;  // slot l's row is a_row0 + 64 * l
  int a_col[kLoadsA];
  bool a_in[kLoadsA];
#pragma unroll
  for (int l = 0; l < kLoadsA; ++l) {
    const int row = a_row0 + l * (kThreads / kQuadsK);
    a_col[l] = row ^ a_sw;
    a_in[l] = bm + row < M;
  }
  // One base pointer and a row stride instead of four 64-bit pointers (registers are the limit).
  const float* a_base = A + static_cast<size_t>(bm + a_row0) * K + a_k;
  const size_t a_slot_stride = static_cast<size_t>(kThreads / kQuadsK) * K;
  // B slots: f = t + l*256 -> tile row f/32, columns (f%32)*4..+3: a warp copies 512 contiguous B.
  const int b_col = (t % 32) * 4;
  const bool b_n_in = bn + b_col < N;  // N % 4 == 0: a slot is all in or all out
  int b_row[kLoadsB];
#pragma unroll
  for (int l = 0; l < kLoadsB; ++l) b_row[l] = (t + l * kThreads) / 32;

  float4 pa[kLoadsA];
  auto load_a = [&](int k0) {
    const bool k_in = k0 + a_k < K;  // K % 4 == 0: the quad is all in or all out
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l)
      pa[l] = (k_in && a_in[l])
                  ? __ldg(reinterpret_cast<const float4*>(a_base + l * a_slot_stride + k0))
                  : make_float4(0.f, 0.f, 0.f, 0.f);
  };
  auto store_a = [&](int st) {
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l) {
      As[st][a_k + 0][a_col[l]] = pa[l].x;  // the transpose, swizzled: conflict-free
      As[st][a_k + 1][a_col[l]] = pa[l].y;
      As[st][a_k + 2][a_col[l]] = pa[l].z;
      As[st][a_k + 3][a_col[l]] = pa[l].w;
    }
  };
  auto copy_b = [&](int st, int k0) {  // zero-fill past K or N; the source is then not read
#pragma unroll
    for (int l = 0; l < kLoadsB; ++l) {
      const bool in = b_n_in && k0 + b_row[l] < K;
      const float* src = in ? B + static_cast<size_t>(k0 + b_row[l]) * N + bn + b_col : B;
      cp_async_16(&Bs[st][b_row[l]][b_col], src, in);
    }
    cp_async_commit();
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
  copy_b(0, 0);
  load_a(0);
  store_a(0);
  cp_async_wait<0>();
  __syncthreads();
  load_frags(0, 0, 0);
  for (int kt = 0; kt < nk; ++kt) {
    const int st = kt & 1;
    const bool more = kt + 1 < nk;
    if (more) {
      // Stage st^1 was last read before the previous barrier (see the hand-over below).
      copy_b(st ^ 1, (kt + 1) * BK);
      load_a((kt + 1) * BK);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        load_frags(st, k + 1, (k + 1) & 1);
      } else if (more) {
        // Hand-over before the last k-step (as in rung 08): A^T stores, this thread's cp.async
        // group done, barrier (all threads' copies visible), then the next tile's k = 0
        // fragments load under k = 15's FMAs.
        store_a(st ^ 1);
        cp_async_wait<0>();
        __syncthreads();
        load_frags(st ^ 1, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[k & 1][i], rb[k & 1][j], acc[i][j]);
    }
  }

  // Epilogue (N % 4 == 0, C 16-byte aligned): float4 stores, guarded by row and column slot.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + wm0 + (i / 4) * 16 + tm * 4 + i % 4;
    if (row >= M) continue;
    float* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
    for (int h = 0; h < kGroupsN; ++h) {
      const int col = bn + wn0 + h * 32 + tn * 4;
      if (col < N)
        *reinterpret_cast<float4*>(crow + col) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
  }
}
}  // namespace

std::string sgemm_bk16_cpasync_supports(const SgemmArgs& a, const DeviceInfo&) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (a.K % 4 || a.N % 4) return "needs K % 4 == 0 and N % 4 == 0 (16-byte cp.async rows; rung 08 takes any shape)";
  if (!aligned(a.A, 16) || !aligned(a.B, 16) || !aligned(a.C, 16))
    return "needs 16-byte aligned A, B and C (cp.async / float4; rung 08 takes any pointer)";
  if (ceil_div(a.M, BM) * ceil_div(a.N, BN) > 0x7fffffffLL) return "grid exceeds 2^31-1 blocks";
  return "";
}

void sgemm_bk16_cpasync_launch(const SgemmArgs& a, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(ceil_div(a.M, BM) * ceil_div(a.N, BN));
  sgemm_bk16_cpasync_kernel<<<blocks, kThreads, 0, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
