// 01 coalesced — coalesced indexing.
//
// Parent: 00 naive.
// Change: threadIdx.x walks N instead of M. A warp reads 32 consecutive floats of a row of B (one
//   128-byte line), one broadcast float of A, and writes 32 consecutive floats of C.
// Why: same arithmetic and number of loads, but every warp access is one line instead of 32.
// Limits: still two global loads per FMA, no reuse. Any M, N, K (bounds-checked).
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int kTile = 32;  // 32x32 threads, one C element each

__global__ void __launch_bounds__(kTile* kTile)
    sgemm_coalesced_kernel(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K) {
  const int n = blockIdx.x * kTile + threadIdx.x;  // lanes -> consecutive columns
  const int m = blockIdx.y * kTile + threadIdx.y;
  if (m >= M || n >= N) return;
  const float* a = A + static_cast<size_t>(m) * K;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc = fmaf(a[k], B[static_cast<size_t>(k) * N + n], acc);
  C[static_cast<size_t>(m) * N + n] = acc;
}
}  // namespace

std::string sgemm_coalesced_supports(const SgemmArgs& a, const DeviceInfo&) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  return check_grid(a, kTile, kTile);
}

void sgemm_coalesced_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 block(kTile, kTile);
  dim3 grid(static_cast<unsigned>(ceil_div(a.N, kTile)), static_cast<unsigned>(ceil_div(a.M, kTile)));
  sgemm_coalesced_kernel<<<grid, block, 0, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
