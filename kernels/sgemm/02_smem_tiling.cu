// 02 smem_tiling — shared-memory tiling.
//
// Parent: 01 coalesced.
// Change: the block stages a 32x32 tile of A and of B in shared memory, then every thread runs 32
//   FMAs out of shared memory.
// Why: each global element is loaded once per block instead of once per thread (32x less traffic).
// Limits: one LDS per FMA for B (As[ty][k] is a warp broadcast), so shared memory sets the pace
//   (4 B/FMA). Any M, N, K: out-of-range tile elements load as zero, stores are guarded.
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int kTile = 32;  // BM = BN = BK = 32; 32x32 threads, one C element each

__global__ void __launch_bounds__(kTile* kTile)
    sgemm_smem_tiling_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[kTile][kTile];  // [m][k]
  __shared__ float Bs[kTile][kTile];  // [k][n]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int n = blockIdx.x * kTile + tx;
  const int m = blockIdx.y * kTile + ty;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    // Lanes read consecutive k of one A row and consecutive n of one B row: both coalesced.
    As[ty][tx] = (m < M && k0 + tx < K) ? A[static_cast<size_t>(m) * K + k0 + tx] : 0.f;
    Bs[ty][tx] = (k0 + ty < K && n < N) ? B[static_cast<size_t>(k0 + ty) * N + n] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);  // As: broadcast
    __syncthreads();  // before the next tile overwrites As/Bs
  }
  if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = acc;
}
}  // namespace

std::string sgemm_smem_tiling_supports(const SgemmArgs& a, const DeviceInfo&) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  return check_grid(a, kTile, kTile);
}

void sgemm_smem_tiling_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 block(kTile, kTile);
  dim3 grid(static_cast<unsigned>(ceil_div(a.N, kTile)), static_cast<unsigned>(ceil_div(a.M, kTile)));
  sgemm_smem_tiling_kernel<<<grid, block, 0, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
