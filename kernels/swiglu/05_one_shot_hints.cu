// 05 one_shot_hints — rung 01's layout with rung 03's cache hints.
//
// Parent: 01 vec128.
// Change: one 16-byte vector of g and of u per thread in a one-shot grid of 256-thread blocks (no
//   unrolling, no loop), g and u read with ld.global.nc.L1::no_allocate, y with st.global.cs.
// Why: at this op's 2-read-1-write mix DRAM, not the SM, sets the time, and the one-shot layout of
//   rung 01 is the fastest (short-lived blocks with one vector each spread independent requests
//   over the channels, well past the bandwidth x latency product); the hints were neutral on
//   rung 02's layout. This is also torch.compile's Triton layout.
// Limits: ties rung 01: both sit at the DRAM rate of this traffic mix.
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_one_shot_hints_kernel(const typename Elem<D>::T* __restrict__ g,
                     const typename Elem<D>::T* __restrict__ u, typename Elem<D>::T* __restrict__ y,
                     long long n) {
  const long long nvec = n / Elem<D>::kVec;
  // g and u are never written during the kernel (y may not alias them): the nc path is legal.
  swiglu_vectors<D, 1, Ld::nc_noalloc, St::stream>(
      g, u, y, static_cast<long long>(blockIdx.x) * kThreads, nvec);
  swiglu_tail<D>(g, u, y, n);
}

template <DType D>
void launch_t(const SwigluArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const long long n = numel(a);
  if (n == 0) return;
  const long long nvec = n / Elem<D>::kVec;
  const long long blocks = std::max(1LL, (nvec + kThreads - 1) / kThreads);  // >= 1 for the tail
  swiglu_one_shot_hints_kernel<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string swiglu_one_shot_hints_supports(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void swiglu_one_shot_hints_launch(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
