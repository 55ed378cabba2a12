// 00 naive — one thread per C element, K-loop straight from global memory.
//
// Parent: none (the baseline of the ladder).
// Change: block of 32x32 threads; threadIdx.x walks M, so the 32 lanes of a warp read 32 different
//   rows of A (stride K*4 bytes: one 32-byte sector per lane per load) and write 32 rows of C; B is
//   the same address across the warp (broadcast).
// Why: the simplest correct kernel, the reference point for every later rung.
// Limits: every FMA costs two global loads; only L1/L2 keep it from being hopeless. Any M, N, K
//   (bounds-checked).
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int kTile = 32;  // 32x32 threads, one C element each

__global__ void __launch_bounds__(kTile* kTile)
    sgemm_naive_kernel(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int M, int N, int K) {
  // Deliberately the "wrong" mapping: consecutive lanes -> consecutive rows m.
  const int m = blockIdx.x * kTile + threadIdx.x;
  const int n = blockIdx.y * kTile + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k)
    acc = fmaf(A[static_cast<size_t>(m) * K + k], B[static_cast<size_t>(k) * N + n], acc);
  C[static_cast<size_t>(m) * N + n] = acc;
}
}  // namespace

std::string sgemm_naive_supports(const SgemmArgs& a, const DeviceInfo&) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  if (ceil_div(a.N, kTile) > 65535) return "N needs more than 65535 column tiles of 32";
  return "";
}

void sgemm_naive_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 block(kTile, kTile);
  dim3 grid(static_cast<unsigned>(ceil_div(a.M, kTile)), static_cast<unsigned>(ceil_div(a.N, kTile)));
  sgemm_naive_kernel<<<grid, block, 0, s>>>(a.A, a.B, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
