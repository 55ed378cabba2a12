// 02 block_row — a block (256 threads) per row, with 16-byte vector loads where the rows allow it.
//
// Parent: 01 warp_online.
// Change: each thread keeps an online (max, sum) pair over its elements; the block merges them with
//   two block reductions (max, then the sums rescaled to it); a second pass writes the output.
//   16-byte vectors for 16-byte-aligned x/y and cols a multiple of 4 f32 / 8 bf16, scalar otherwise.
//   Block and vectors ride together because the block only pays when each thread moves 16 bytes.
// Why: a warp per row leaves a long row (8K-128K elements) to 32 lanes with 1-2 loads in flight
//   each; wide rows now spread over all SMs even when rows are few.
// Limits: still two reads of the row and two exps per element (rung 03 removes both).
#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kThreads = 256;

template <DType D, int VEC>
__global__ void __launch_bounds__(kThreads)
    softmax_block_row_kernel(const typename Elem<D>::T* __restrict__ x, typename Elem<D>::T* __restrict__ y,
                      int cols) {
  __shared__ float red[group_reduce_smem_floats(kThreads)];  // one partial per warp
  const typename Elem<D>::T* xr = x + static_cast<long long>(blockIdx.x) * cols;
  typename Elem<D>::T* yr = y + static_cast<long long>(blockIdx.x) * cols;
  const int nchunks = cols / VEC;  // VEC divides cols on the vector path
  Online o;
  for (int c = threadIdx.x; c < nchunks; c += kThreads) {
    if constexpr (VEC == 1) {
      o.add(Elem<D>::load(xr, c));
    } else {
      float f[VEC];
      load_vec<D>(xr + c * VEC, f);
#pragma unroll
      for (int j = 0; j < VEC; ++j) o.add(f[j]);
    }
  }
  // Merge the 256 pairs: the row max first, then each thread's sum rescaled to it.
  const float M = block_reduce(o.m, MaxOp{}, red);
  const float sh = safe_shift(M);
  const float S = block_reduce(o.s * fast_exp(o.m - sh), SumOp{}, red);  // o.m = -inf -> 0
  const float inv = safe_inv(S);
  for (int c = threadIdx.x; c < nchunks; c += kThreads) {  // pass 2 (row mostly in L2 by now)
    if constexpr (VEC == 1) {
      Elem<D>::store(yr, c, fast_exp(Elem<D>::load(xr, c) - sh) * inv);
    } else {
      float f[VEC];
      load_vec<D>(xr + c * VEC, f);
#pragma unroll
      for (int j = 0; j < VEC; ++j) f[j] = fast_exp(f[j] - sh) * inv;
      store_vec<D>(yr + c * VEC, f);
    }
  }
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  if (a.rows == 0) return;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  if (vec_ok(a))
    softmax_block_row_kernel<D, Elem<D>::kVec><<<a.rows, kThreads, 0, s>>>(x, y, a.cols);
  else
    softmax_block_row_kernel<D, 1><<<a.rows, kThreads, 0, s>>>(x, y, a.cols);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string softmax_block_row_supports(const SoftmaxArgs& a, const DeviceInfo&) { return softmax_check_args(a); }
void softmax_block_row_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
