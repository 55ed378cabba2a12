// add01 block_per_row — a block per row.
//
// Parent: add00 thread_per_row.
// Change: a block of 64..1024 threads per row (~32 elements per thread per pass); thread t handles
//   columns t, t+T, ...; the partial sums meet in a block reduction; the grid has `rows` blocks.
// Why: every load instruction of a warp is 32 consecutive elements (coalesced).
// Limits: still two passes (the second re-reads the r the first one wrote, mostly from L2); scalar
//   accesses, so any shape and alignment: the fallback for rows too long for the register rungs.
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(1024)
    add_rmsnorm_block_per_row_kernel(typename Elem<D>::T* __restrict__ r,
                             const typename Elem<D>::T* __restrict__ x,
                             const typename Elem<D>::T* __restrict__ w,
                             typename Elem<D>::T* __restrict__ y, int cols, float eps) {
  using E = Elem<D>;
  __shared__ float red[32];
  const long long row = blockIdx.x;
  auto* rr = r + row * cols;
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = E::round(E::load(rr, j) + E::load(xr, j));
    E::store(rr, j, v);
    ss += ss_term(v);
  }
  ss = block_reduce(ss, SumOp{}, red);
  const float inv = rms_inv(ss, cols, eps);
  // Each thread re-reads only the elements it wrote itself: no cross-thread ordering needed.
  for (int j = threadIdx.x; j < cols; j += blockDim.x)
    E::store(yr, j, E::load(rr, j) * inv * E::load(w, j));
}

int threads_for(int cols) {
  int t = 64;
  while (t < 1024 && t * 32 < cols) t *= 2;
  return t;
}

template <DType D>
void launch_t(const AddRmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  add_rmsnorm_block_per_row_kernel<D><<<static_cast<unsigned>(a.rows), threads_for(a.cols), 0, s>>>(
      static_cast<T*>(a.r), static_cast<const T*>(a.x), static_cast<const T*>(a.w),
      static_cast<T*>(a.y), a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string add_rmsnorm_block_per_row_supports(const AddRmsnormArgs& a, const DeviceInfo&) {
  return check_args(a);
}
void add_rmsnorm_block_per_row_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
