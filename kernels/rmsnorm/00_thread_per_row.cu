// 00 thread_per_row — the naive kernel: one thread owns a whole row.
//
// Parent: none (the baseline of the ladder).
// Change: a first scalar pass sums the squares, a second pass reads the row again and writes y.
// Why: the simplest correct kernel, the reference point for every later rung.
// Limits: neighbouring threads read addresses `cols` elements apart, so every load instruction
//   touches 32 different cache lines (uncoalesced), and there are only rows/256 blocks (fewer than
//   the SMs under ~34k rows). Any shape and alignment.
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {
constexpr int kThreads = 256;

template <DType D>
__global__ void rmsnorm_thread_per_row_kernel(const typename Elem<D>::T* __restrict__ x,
                                      const typename Elem<D>::T* __restrict__ w,
                                      typename Elem<D>::T* __restrict__ y, int rows, int cols,
                                      float eps) {
  using E = Elem<D>;
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  // Two-level sum (blocks of 256 into a partial, partials into the total): a single running fp32
  // sum over 131072 terms drifts by ~u*sqrt(n), too close to the f32 tolerance.
  float ss = 0.0f;
  for (int j0 = 0; j0 < cols; j0 += 256) {
    float part = 0.0f;
    const int j1 = min(cols, j0 + 256);
    for (int j = j0; j < j1; ++j) part += ss_term(E::load(xr, j));
    ss += part;
  }
  const float inv = rms_inv(ss, cols, eps);
  for (int j = 0; j < cols; ++j) E::store(yr, j, E::load(xr, j) * inv * E::load(w, j));
}

template <DType D>
void launch_t(const RmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const unsigned blocks = static_cast<unsigned>((a.rows + kThreads - 1) / kThreads);
  rmsnorm_thread_per_row_kernel<D><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a.x),
                                                       static_cast<const T*>(a.w),
                                                       static_cast<T*>(a.y), a.rows, a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string rmsnorm_thread_per_row_supports(const RmsnormArgs& a, const DeviceInfo&) {
  return check_args(a);
}
void rmsnorm_thread_per_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
