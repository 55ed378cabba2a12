// Rung 01 — warp_per_row: a warp owns a row. Lane l reads columns l, l+32, ...: each load
// instruction of the warp covers 32 consecutive elements (coalesced), the 32 partial sums meet in a
// butterfly shuffle reduction (warp_sum), and 8 rows share a 256-thread block, so the grid has
// rows/8 blocks instead of rows/256.
//
// Still two passes over the row (the second one mostly from L2) and scalar 2- or 4-byte accesses:
// many load instructions per byte. Takes any shape and alignment.
// Measured (H200, round-1 run 2026-11-29, results/h200/dev/round1/rmsnorm.jsonl; % of the 4224 GB/s bench_peak copy):
//   16384x8192 bf16 0.2462 ms (2180 GB/s, 51.6%); 4096x16384 f32 0.2150 ms (59.1%); 65536x4096 bf16
//   0.4523 ms (56.2%). 18x rung 00. Unaligned 4096x4099: f32 0.0618 ms, bf16 0.0388 ms.
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {
constexpr int kWarps = 8;  // rows per block
constexpr int kThreads = kWarps * 32;

template <DType D>
__global__ void warp_per_row_kernel(const typename Elem<D>::T* __restrict__ x,
                                    const typename Elem<D>::T* __restrict__ w,
                                    typename Elem<D>::T* __restrict__ y, int rows, int cols,
                                    float eps) {
  using E = Elem<D>;
  const int lane = threadIdx.x & 31;
  const long long row = static_cast<long long>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warp leaves together: the shuffles below stay full-warp
  const auto* xr = x + row * cols;
  auto* yr = y + row * cols;
  float ss = 0.0f;
  for (int j = lane; j < cols; j += 32) ss += ss_term(E::load(xr, j));
  ss = warp_sum(ss);
  const float inv = rms_inv(ss, cols, eps);
  for (int j = lane; j < cols; j += 32) E::store(yr, j, E::load(xr, j) * inv * E::load(w, j));
}

template <DType D>
void launch_t(const RmsnormArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const unsigned blocks = static_cast<unsigned>((a.rows + kWarps - 1) / kWarps);
  warp_per_row_kernel<D><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a.x),
                                                     static_cast<const T*>(a.w),
                                                     static_cast<T*>(a.y), a.rows, a.cols, a.eps);
  KL_CHECK_LAUNCH();
}
}  // namespace

std::string warp_per_row_supports(const RmsnormArgs& a, const DeviceInfo&) {
  return check_args(a);
}
void warp_per_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  if (a.dtype == DType::f32) launch_t<DType::f32>(a, s);
  else launch_t<DType::bf16>(a, s);
}

}  // namespace kl::rmsnorm_detail
