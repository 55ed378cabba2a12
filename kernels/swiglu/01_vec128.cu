// 01 vec128 — 128-bit vectorized loads and stores.
//
// Parent: 00 scalar.
// Change: each thread loads one 16-byte vector of g and of u (4 f32 or 8 bf16), computes kVec
//   outputs and writes one 16-byte vector; the < kVec elements past the last whole vector are a
//   scalar tail done by block 0.
// Why: a 16-byte LDG moves 4-8x the bytes per instruction, every warp instruction covers 512
//   contiguous bytes, and a thread has 32 bytes in flight instead of 4-8.
// Limits: needs 16-byte-aligned g, u, y (any cols: the op is a flat stream).
#include "common/pdl.cuh"
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_vec128_kernel(const typename Elem<D>::T* __restrict__ g, const typename Elem<D>::T* __restrict__ u,
               typename Elem<D>::T* __restrict__ y, long long n, bool pdl) {
  if (pdl) {  // rung 06: the next grid may start now; g and u are read after their producer ends
    pdl_trigger();
    pdl_wait();
  }
  const long long nvec = n / Elem<D>::kVec;
  swiglu_vectors<D, 1, Ld::normal, St::normal>(g, u, y, static_cast<long long>(blockIdx.x) * kThreads,
                                               nvec);
  swiglu_tail<D>(g, u, y, n);
}

template <DType D>
void launch_t(const SwigluArgs& a, cudaStream_t s, bool pdl) {
  using T = typename Elem<D>::T;
  const long long n = numel(a);
  if (n == 0) return;
  const long long nvec = n / Elem<D>::kVec;
  const long long blocks = std::max(1LL, (nvec + kThreads - 1) / kThreads);  // >= 1 for the tail
  pdl_launch(swiglu_vec128_kernel<D>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, s, pdl,
             static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n, pdl);
}

}  // namespace

void swiglu_vec128_run(const SwigluArgs& a, cudaStream_t s, bool pdl) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s, pdl) : launch_t<DType::bf16>(a, s, pdl);
}

std::string swiglu_vec128_supports(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void swiglu_vec128_launch(const SwigluArgs& a, cudaStream_t s) { swiglu_vec128_run(a, s, false); }

}  // namespace kl::swiglu_detail
