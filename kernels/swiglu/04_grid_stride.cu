// 04 grid_stride — a persistent grid-stride loop over rung 03's body.
//
// Parent: 03 stream_hints.
// Change: the grid is exactly one resident wave (from the occupancy API) and each block loops over
//   chunks of kThreads * K vectors, chunk c going to block c % grid.
// Why: a one-shot grid pays block launch/retire per chunk and ends with a partial wave; a resident
//   grid launches once and walks the stream in a dense moving window.
// Limits: slower than rung 03 on the H200: a negative result, never picked by auto. On small shapes
//   (fewer chunks than slots) it degenerates to rung 03.
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {
namespace {

constexpr int kK = 4;  // vectors per thread per chunk, as rungs 02-03

template <DType D>
__global__ void __launch_bounds__(kThreads)
    swiglu_grid_stride_kernel(const typename Elem<D>::T* __restrict__ g,
                      const typename Elem<D>::T* __restrict__ u,
                      typename Elem<D>::T* __restrict__ y, long long n) {
  const long long nvec = n / Elem<D>::kVec;
  const long long chunk = static_cast<long long>(kThreads) * kK;  // vectors per block-iteration
  for (long long base = blockIdx.x * chunk; base < nvec; base += gridDim.x * chunk)
    swiglu_vectors<D, kK, Ld::nc_noalloc, St::stream>(g, u, y, base, nvec);
  swiglu_tail<D>(g, u, y, n);
}

// Resident blocks per SM for this kernel (cached by the common helper; capturable), at least 1.
template <DType D>
int blocks_per_sm() {
  return std::max(resident_blocks_per_sm(reinterpret_cast<const void*>(swiglu_grid_stride_kernel<D>), kThreads, 0), 1);
}

template <DType D>
void launch_t(const SwigluArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const long long n = numel(a);
  if (n == 0) return;
  const long long nvec = n / Elem<D>::kVec;
  const long long chunk = static_cast<long long>(kThreads) * kK;
  const long long chunks = std::max(1LL, (nvec + chunk - 1) / chunk);
  const long long wave = static_cast<long long>(device_info().sms) * blocks_per_sm<D>();
  const long long blocks = std::min(chunks, wave);  // never more blocks than chunks
  swiglu_grid_stride_kernel<D><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(a.g), static_cast<const T*>(a.u), static_cast<T*>(a.y), n);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string swiglu_grid_stride_supports(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void swiglu_grid_stride_launch(const SwigluArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::swiglu_detail
