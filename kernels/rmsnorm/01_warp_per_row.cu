// 01 warp_per_row — a warp owns a row.
//
// Parent: 00 thread_per_row.
// Change: lane l reads columns l, l+32, ...; the 32 partial sums meet in a butterfly shuffle
//   reduction (warp_sum), and 8 rows share a 256-thread block (rows/8 blocks instead of rows/256).
// Why: each load instruction of the warp covers 32 consecutive elements (coalesced).
// Limits: still two passes over the row (the second mostly from L2) and scalar 2- or 4-byte
//   accesses: many load instructions per byte. Any shape and alignment.
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {
constexpr int kWarps = 8;  // rows per block
constexpr int kThreads = kWarps * 32;

template <DType D>
__global__ void rmsnorm_warp_per_row_kernel(const typename Elem<D>::T* __restrict__ x,
                                    const typename Elem<D>::T* __restrict__ w,
                                    typename Elem<D>::T* __restrict__ y, int rows, int cols,
                                    float eps) {
  using E = Elem<D>;
  const int lane = threadIdx.x & 31;
  const long long row = static_cast<long long>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warp leaves together: the shuffles below stay full-warp
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  float ss = 0.0f;
  for (int j = lane; j < cols; j += 32) ss += ss_term(E::load(xr, j));
  ss = warp_sum(ss);
  const float inv = rms_inv(ss, cols, eps);
  for (int j = lane; j < cols; j += 32) E::store(yr, j, E::load(xr, j) * inv * E::load(w, j));
}

template <DType D>
void launch_t(const RmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const unsigned blocks = static_cast<unsigned>((a.rows + kWarps - 1) / kWarps);
  rmsnorm_warp_per_row_kernel<D><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a.x),
                                                     static_cast<const T*>(a.w),
                                                     static_cast<T*>(a.y), a.rows, a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string rmsnorm_warp_per_row_supports(const RmsnormArgs& a, const DeviceInfo&) {
  return check_args(a);
}
void rmsnorm_warp_per_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
