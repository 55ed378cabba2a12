// Rung 05 — rung 01's layout with rung 03's cache hints: one 16-byte vector of g and of u per
// thread in a one-shot grid of 256-thread blocks (no unrolling, no loop), g and u read with
// ld.global.nc.L1::no_allocate, y written with st.global.cs (evict-first).
//
// Why: round 1 on the H200 ranked the layouts 01 (one vector per thread, one-shot) < 02 (four per
// thread, +0.8%) < 04 (persistent grid-stride, +9%): at this op's 2-read-1-write mix the DRAM, not
// the SM, sets the time, and short-lived blocks with one vector each keep the most independent
// requests spread across the channels (256 threads x 8 blocks x 32 B = 64 KB in flight per SM,
// ~8.5 MB on the GPU — well past the ~3.4 MB bandwidth x latency product). The hints were
// neutral on rung 02's layout (+0.2%); this rung measures them on the fastest layout, which is
// also what torch.compile's Triton kernel is (one 16-byte group per thread, one-shot grid).
// Measured (H200, round-2 batch 2026-11-29, results/h200/dev/batch/rowops/swiglu.jsonl and sweep_*.jsonl,
//   20 launches): 8192x14336 bf16 0.1648 ms = 4276 GB/s vs rung 01 0.1649 (same run), the
//   same-bytes cudaMemcpy 0.1684 ms and torch.compile (round 1) 0.1648: a tie — all three sit at
//   the DRAM rate of this traffic mix (read-only probe 4452 GB/s, write-only 4357 GB/s; reading
//   2/3 and writing 1/3 of the bytes at those rates alone takes 0.1594 ms, 97% of this rung).
//   4096x8192 bf16: 0.0496 ms vs rung 01 0.0505. Block size / vectors per thread swept at
//   4096x8192 (experiment, removed): 128 threads 0.0504, 1024 threads 0.0504, 256 threads 0.0496.
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_vec_hints(const typename Elem<D>::T* __restrict__ g,
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
  swiglu_vec_hints<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string supports_05(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void launch_05(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
