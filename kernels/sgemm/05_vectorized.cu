// 05 vectorized — vectorized loads, A transposed in shared memory.
//
// Parent: 04 regblock_2d.
// Change: global loads and C stores move float4s (LDG.128 / STG.128), and the A tile is stored
//   transposed, As[k][m], so a thread's 8 A values for one k come in as two LDS.128 (as do its 8 B
//   values). The transpose happens on the store: a float4 of 4 consecutive k of one A row goes to
//   4 rows of As (scalar STS). Tile 128x128, BK = 8, 256 threads, 8x8 per thread.
// Why: 4 shared-load instructions per 64 FMAs instead of 16.
// Limits: the transposed stores are 2-way bank-conflicted (rung 07); a warp's 16 x 128 strip reads
//   twice the distinct shared bytes per FMA of a 32x64 tile (rung 06). Needs M % 128, N % 128,
//   K % 8 == 0 and 16-byte aligned A, B, C.
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
static_assert(BM * BK / 4 == kThreads, "one float4 of A per thread per tile");
static_assert(BK * BN / 4 == kThreads, "one float4 of B per thread per tile");
static_assert(TM % 4 == 0 && TN % 4 == 0, "fragments are float4s");

__global__ void __launch_bounds__(kThreads)
    sgemm_vectorized_kernel(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];  // [k][m]: A transposed
  __shared__ __align__(16) float Bs[BK][BN];  // [k][n]
  const int t = threadIdx.x;
  const int tr = t / (BN / TN), tc = t % (BN / TN);
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  // Load assignments: A row t/2, k columns (t%2)*4..+3; B row t/32, columns (t%32)*4..+3.
  const int a_row = t / 2, a_k = (t % 2) * 4;
  const int b_row = t / 32, b_col = (t % 32) * 4;
  const float* a = A + static_cast<size_t>(bm + a_row) * K + a_k;
  const float* b = B + static_cast<size_t>(b_row) * N + bn + b_col;
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 va = *reinterpret_cast<const float4*>(a + k0);
    As[a_k + 0][a_row] = va.x;  // the transpose: 4 k's of one row -> 4 rows of As
    As[a_k + 1][a_row] = va.y;
    As[a_k + 2][a_row] = va.z;
    As[a_k + 3][a_row] = va.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) =
        *reinterpret_cast<const float4*>(b + static_cast<size_t>(k0) * N);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; i += 4)
        *reinterpret_cast<float4*>(&ra[i]) = *reinterpret_cast<const float4*>(&As[k][tr * TM + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4)
        *reinterpret_cast<float4*>(&rb[j]) = *reinterpret_cast<const float4*>(&Bs[k][tc * TN + j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      *reinterpret_cast<float4*>(&C[static_cast<size_t>(bm + tr * TM + i) * N + bn + tc * TN + j]) =
          make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
}  // namespace

std::string sgemm_vectorized_supports(const SgemmArgs& a, const DeviceInfo&) {
  return require_tiles(a, BM, BN, BK, true);
}

void sgemm_vectorized_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_vectorized_kernel<<<grid, kThreads, 0, s>>>(a.A, a.B, a.C, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
