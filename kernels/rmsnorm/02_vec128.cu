// 02 vec128 — rung 01 with 128-bit accesses.
//
// Parent: 01 warp_per_row.
// Change: lane l handles 16-byte chunks l, l+32, ... (4 f32 or 8 bf16 each, one LDG.128 / STG.128).
// Why: a warp moves 512 bytes per instruction instead of 64 or 128: 4-8x fewer load/store
//   instructions for the same bytes.
// Limits: every row must start on a 16-byte boundary (cols % (16 / sizeof(elem)) == 0, x, w, y
//   16-byte aligned; supports() says so otherwise). Still two passes over the row.
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {
constexpr int kWarps = 8;  // rows per block
constexpr int kThreads = kWarps * 32;

template <DType D>
__global__ void rmsnorm_vec128_kernel(const typename Elem<D>::T* __restrict__ x,
                              const typename Elem<D>::T* __restrict__ w,
                              typename Elem<D>::T* __restrict__ y, int rows, int cols, float eps) {
  using E = Elem<D>;
  constexpr int K = E::kVec;  // elements per 16-byte chunk
  const int lane = threadIdx.x & 31;
  const long long row = static_cast<long long>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= rows) return;  // warp-uniform
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  float ss = 0.0f;
  for (int c = lane * K; c < cols; c += 32 * K) {  // cols % K == 0: chunks are whole
    float f[K];
    load_vec<D>(xr + c, f);
#pragma unroll
    for (int j = 0; j < K; ++j) ss += ss_term(f[j]);
  }
  ss = warp_sum(ss);
  const float inv = rms_inv(ss, cols, eps);
  for (int c = lane * K; c < cols; c += 32 * K) {
    float f[K], wv[K];
    load_vec<D>(xr + c, f);
    load_vec<D>(w + c, wv);
#pragma unroll
    for (int j = 0; j < K; ++j) f[j] = f[j] * inv * wv[j];
    store_vec<D>(yr + c, f);
  }
}

template <DType D>
void launch_t(const RmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const unsigned blocks = static_cast<unsigned>((a.rows + kWarps - 1) / kWarps);
  rmsnorm_vec128_kernel<D><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a.x),
                                               static_cast<const T*>(a.w), static_cast<T*>(a.y),
                                               a.rows, a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string rmsnorm_vec128_supports(const RmsnormArgs& a, const DeviceInfo&) {
  std::string why = check_args(a);
  if (why.empty() && !vec_ok(a))
    why = "needs cols % " + std::to_string(16 / dtype_size(a.dtype)) +
          " == 0 and 16-byte-aligned x, w, y";
  return why;
}
void rmsnorm_vec128_launch(const RmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
