// add00 thread_per_row — the naive residual-add + RMSNorm: one thread owns a row.
//
// Parent: none (the baseline of the fused ladder).
// Change: the first pass computes s = round(r + x) (rounded to the storage type: exactly what is
//   stored and used), writes s back to r and sums the squares; the second pass re-reads r, writes y.
// Why: the simplest correct fused kernel, the reference point for the fused rungs.
// Limits: as rmsnorm rung 00 (uncoalesced, few blocks). Any shape and alignment.
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {
constexpr int kThreads = 256;

template <DType D>
__global__ void add_rmsnorm_thread_per_row_kernel(typename Elem<D>::T* __restrict__ r,
                                          const typename Elem<D>::T* __restrict__ x,
                                          const typename Elem<D>::T* __restrict__ w,
                                          typename Elem<D>::T* __restrict__ y, int rows, int cols,
                                          float eps) {
  using E = Elem<D>;
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  auto* rr = r + row * cols;
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  float ss = 0.0f;
  for (int j0 = 0; j0 < cols; j0 += 256) {  // two-level sum, as rmsnorm rung 00
    float part = 0.0f;
    const int j1 = min(cols, j0 + 256);
    for (int j = j0; j < j1; ++j) {
      const float v = E::round(E::load(rr, j) + E::load(xr, j));
      E::store(rr, j, v);
      part += ss_term(v);
    }
    ss += part;
  }
  const float inv = rms_inv(ss, cols, eps);
  for (int j = 0; j < cols; ++j) E::store(yr, j, E::load(rr, j) * inv * E::load(w, j));
}

template <DType D>
void launch_t(const AddRmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const unsigned blocks = static_cast<unsigned>((a.rows + kThreads - 1) / kThreads);
  add_rmsnorm_thread_per_row_kernel<D><<<blocks, kThreads, 0, s>>>(
      static_cast<T*>(a.r), static_cast<const T*>(a.x), static_cast<const T*>(a.w),
      static_cast<T*>(a.y), a.rows, a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string add_rmsnorm_thread_per_row_supports(const AddRmsnormArgs& a, const DeviceInfo&) {
  return check_args(a);
}
void add_rmsnorm_thread_per_row_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
