// 02 unroll4 — several vectors per thread.
//
// Parent: 01 vec128.
// Change: each thread owns K = 4 vectors (block-strided, so every warp load still covers 512
//   contiguous bytes) and issues all 8 of its 16-byte loads before the first multiply.
// Why: HBM3e needs several MB in flight to reach the roof (bandwidth x latency); the same resident
//   threads keep 4x the bytes in flight, with 4x fewer blocks to schedule.
// Limits: rung 01's bytes in flight are already enough, so it does not beat 01.
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

constexpr int kK = 4;  // vectors per thread
// One block covers kThreads * kK vectors = 16 KB of each input (bf16: 8192 elements; f32: 4096).
static_assert(kK >= 1 && kK <= 8, "K vectors of each input live in registers");

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_unroll4_kernel(const typename Elem<D>::T* __restrict__ g,
                  const typename Elem<D>::T* __restrict__ u, typename Elem<D>::T* __restrict__ y,
                  long long n) {
  const long long nvec = n / Elem<D>::kVec;
  swiglu_vectors<D, kK, Ld::normal, St::normal>(
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
  swiglu_unroll4_kernel<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string swiglu_unroll4_supports(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void swiglu_unroll4_launch(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
