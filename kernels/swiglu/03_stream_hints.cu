// 03 stream_hints — streaming cache hints on rung 02.
//
// Parent: 02 unroll4.
// Change: g and u read through ld.global.nc.L1::no_allocate (read-only path, no L1 allocation), y
//   written with st.global.cs (evict-first).
// Why: every byte is touched exactly once: input lines in L1 only evict other warps' in-flight
//   lines, and evict-first output lets L2 drain it to DRAM first.
// Limits: the hints buy nothing measurable on this layout.
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

constexpr int kK = 4;  // vectors per thread, as rung 02

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_stream_hints_kernel(const typename Elem<D>::T* __restrict__ g,
                 const typename Elem<D>::T* __restrict__ u, typename Elem<D>::T* __restrict__ y,
                 long long n) {
  const long long nvec = n / Elem<D>::kVec;
  // g and u are never written during the kernel (y may not alias them): the nc path is legal.
  swiglu_vectors<D, kK, Ld::nc_noalloc, St::stream>(
      g, u, y, static_cast<long long>(blockIdx.x) * kThreads * kK, nvec);
  swiglu_tail<D>(g, u, y, n);
}

template <DType D>
void launch_t(const SwigluArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const long long n = numel(a);
  if (n == 0) return;
  const long long nvec = n / Elem<D>::kVec;
  const long long per_block = static_cast<long long>(kThreads) * kK;
  const long long blocks = std::max(1LL, (nvec + per_block - 1) / per_block);
  swiglu_stream_hints_kernel<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string swiglu_stream_hints_supports(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void swiglu_stream_hints_launch(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
