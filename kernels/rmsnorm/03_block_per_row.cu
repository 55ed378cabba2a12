// 03 block_per_row — rung 02 with a whole block per row.
//
// Parent: 02 vec128.
// Change: a block of 64..1024 threads per row (about 8 chunks per thread per pass); the partial sums
//   meet in a block reduction (warp shuffles, then the warps' partials through shared memory).
// Why: a warp per row walks many chunks in sequence for wide rows (8192 bf16: 4 chunks, 131072:
//   64) with a grid of rows/8 blocks; a block per row puts more loads in flight per row and makes
//   the grid `rows` blocks.
// Limits: still two passes (the second read from L2 when the row is still there). Same alignment
//   requirement as rung 02.
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(1024)
    rmsnorm_block_per_row_kernel(const typename Elem<D>::T* __restrict__ x,
                         const typename Elem<D>::T* __restrict__ w,
                         typename Elem<D>::T* __restrict__ y, int cols, float eps) {
  using E = Elem<D>;
  constexpr int K = E::kVec;
  __shared__ float red[32];  // one partial per warp
  const long long row = blockIdx.x;
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  const int step = blockDim.x * K;
  float ss = 0.0f;
  for (int c = threadIdx.x * K; c < cols; c += step) {
    float f[K];
    load_vec<D>(xr + c, f);
#pragma unroll
    for (int j = 0; j < K; ++j) ss += ss_term(f[j]);
  }
  ss = block_reduce(ss, SumOp{}, red);  // every thread calls it (no early exit above)
  const float inv = rms_inv(ss, cols, eps);
  for (int c = threadIdx.x * K; c < cols; c += step) {
    float f[K], wv[K];
    load_vec<D>(xr + c, f);
    load_vec<D>(w + c, wv);
#pragma unroll
    for (int j = 0; j < K; ++j) f[j] = f[j] * inv * wv[j];
    store_vec<D>(yr + c, f);
  }
}

// About 8 chunks per thread, a power of two in [64, 1024].
int threads_for(int cols, int K) {
  const int chunks = (cols + K - 1) / K;
  int t = 64;
  while (t < 1024 && t * 8 < chunks) t *= 2;
  return t;
}

template <DType D>
void launch_t(const RmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const int threads = threads_for(a.cols, Elem<D>::kVec);
  rmsnorm_block_per_row_kernel<D><<<static_cast<unsigned>(a.rows), threads, 0, s>>>(
      static_cast<const T*>(a.x), static_cast<const T*>(a.w), static_cast<T*>(a.y), a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string rmsnorm_block_per_row_supports(const RmsnormArgs& a, const DeviceInfo&) {
  std::string why = check_args(a);
  if (why.empty() && !vec_ok(a))
    why = "needs cols % " + std::to_string(16 / dtype_size(a.dtype)) +
          " == 0 and 16-byte-aligned x, w, y";
  return why;
}
void rmsnorm_block_per_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
