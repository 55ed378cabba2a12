// 01 warp_online — a warp per row with an online softmax.
//
// Parent: 00 three_pass.
// Change: each lane walks the row with stride 32 keeping a running (max, sum of exp(x - max)) pair;
//   the 32 pairs merge in a shuffle butterfly; a second pass writes exp(x - max) / sum.
// Why: a warp load covers 32 consecutive elements (DRAM sees each line once), and the online pair
//   folds max and sum into one pass: the row is read twice instead of three times.
// Limits: scalar loads; exp computed twice per element; the second read mostly from L2.
#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kThreads = 256;             // 8 warps = 8 rows per block
constexpr int kRowsPerBlock = kThreads / 32;

template <DType D>
__global__ void __launch_bounds__(kThreads)
    softmax_warp_online_kernel(const typename Elem<D>::T* __restrict__ x,
                        typename Elem<D>::T* __restrict__ y, int rows, int cols) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warp leaves together: no shuffle is left half-populated
  const typename Elem<D>::T* xr = x + row * cols;
  typename Elem<D>::T* yr = y + row * cols;
  Online o;
  for (int j = lane; j < cols; j += 32) o.add(Elem<D>::load(xr, j));
  o = warp_merge(o);
  const float sh = safe_shift(o.m), inv = safe_inv(o.s);  // all -inf row: shift 0, inv 0
  for (int j = lane; j < cols; j += 32) Elem<D>::store(yr, j, fast_exp(Elem<D>::load(xr, j) - sh) * inv);
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  if (a.rows == 0) return;
  const unsigned blocks = static_cast<unsigned>((a.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  softmax_warp_online_kernel<D><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a.x),
                                                     static_cast<T*>(a.y), a.rows, a.cols);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string softmax_warp_online_supports(const SoftmaxArgs& a, const DeviceInfo&) { return softmax_check_args(a); }
void softmax_warp_online_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
