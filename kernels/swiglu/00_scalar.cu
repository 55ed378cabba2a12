// 00 scalar — one thread per element, one 2- or 4-byte load of g and of u, one store of y.
//
// Parent: none (the baseline of the ladder).
// Change: the direct kernel; loads are coalesced (consecutive threads, consecutive elements).
// Why: the reference point, and the entry point's fallback for any shape and alignment.
// Limits: each warp instruction moves only 64 (bf16) or 128 (f32) bytes, so the LSU issues many
//   instructions per byte and each thread has just two small loads in flight.
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_scalar_kernel(const typename Elem<D>::T* __restrict__ g,
                  const typename Elem<D>::T* __restrict__ u, typename Elem<D>::T* __restrict__ y,
                  long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) Elem<D>::store(y, i, silu_mul(Elem<D>::load(g, i), Elem<D>::load(u, i)));
}

template <DType D>
void launch_t(const SwigluArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const long long n = numel(a);
  if (n == 0) return;
  const long long blocks = (n + kThreads - 1) / kThreads;  // <= 2^31-1 for any int x int shape
  swiglu_scalar_kernel<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string swiglu_scalar_supports(const SwigluArgs& a, const DeviceInfo&) { return swiglu_check_args(a); }
void swiglu_scalar_launch(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
