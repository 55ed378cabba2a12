// Rung 01 — 128-bit vectorized: each thread loads one 16-byte vector of g and of u (4 f32 or 8
// bf16), computes kVec outputs and writes one 16-byte vector.
//
// Why: rung 00 spends a load instruction per 2-4 bytes. A 16-byte LDG moves 4-8x the bytes per
// instruction, every warp instruction covers 512 contiguous bytes (4 full 128-byte lines), and a
// thread has 32 bytes in flight instead of 4-8. The < kVec elements past the last whole vector
// are a scalar tail done by block 0. Needs 16-byte-aligned g, u, y (any cols: the op is a flat
// stream).
// Measured (H200, round-1 run 2026-11-29, results/h200/dev/round1/swiglu.jsonl):
//   0.2505 ms = 4320 GB/s on 16384x11008 bf16 — 2.10x rung 00, 103% of the same-bytes
//   cudaMemcpy, = torch.compile (0.2501 ms)
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_vec(const typename Elem<D>::T* __restrict__ g, const typename Elem<D>::T* __restrict__ u,
               typename Elem<D>::T* __restrict__ y, long long n) {
  const long long nvec = n / Elem<D>::kVec;
  swiglu_vectors<D, 1, Ld::normal, St::normal>(g, u, y, static_cast<long long>(blockIdx.x) * kThreads,
                                               nvec);
  swiglu_tail<D>(g, u, y, n);
}

template <DType D>
void launch_t(const SwigluArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const long long n = numel(a);
  if (n == 0) return;
  const long long nvec = n / Elem<D>::kVec;
  const long long blocks = std::max(1LL, (nvec + kThreads - 1) / kThreads);  // >= 1 for the tail
  swiglu_vec<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string supports_01(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void launch_01(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
