// 00 three_pass — three passes, one thread per row.
//
// Parent: none (the baseline of the ladder).
// Change: pass 1 finds the row max, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum;
//   scalar loads. As written from the definition.
// Why: the simplest correct kernel, the reference point for every later rung.
// Limits: each row is read three times and exp computed twice per element; consecutive threads read
//   addresses a row apart, so a warp load touches 32 different lines. Any shape and alignment.
#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kThreads = 128;  // rows per block

template <DType D>
__global__ void __launch_bounds__(kThreads)
    softmax_three_pass_kernel(const typename Elem<D>::T* __restrict__ x, typename Elem<D>::T* __restrict__ y,
                       int rows, int cols) {
  const long long row = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (row >= rows) return;
  const typename Elem<D>::T* xr = x + row * cols;
  typename Elem<D>::T* yr = y + row * cols;
  float m = neg_inf();
  for (int j = 0; j < cols; ++j) m = fmaxf(m, Elem<D>::load(xr, j));  // pass 1: max
  const float sh = safe_shift(m);                                     // all -inf row: 0
  // Pass 2: sum. One thread adds up to 131072 terms in sequence: a plain fp32 sum drifts by
  // ~sqrt(n) * eps (1e-5 relative at 131072, the f32 rel_l2 tolerance), so it is compensated
  // (Kahan; nvcc does not reassociate without fast-math). The parallel rungs sum <= 4096 terms per
  // thread and then a tree, and need no compensation.
  float s = 0.0f, comp = 0.0f;
  for (int j = 0; j < cols; ++j) {
    const float term = fast_exp(Elem<D>::load(xr, j) - sh) - comp;
    const float t = s + term;
    comp = (t - s) - term;  // what the addition lost
    s = t;
  }
  const float inv = safe_inv(s);                                       // all -inf row: 0
  for (int j = 0; j < cols; ++j)                                       // pass 3: write
    Elem<D>::store(yr, j, fast_exp(Elem<D>::load(xr, j) - sh) * inv);
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  using T = typename Elem<D>::T;
  if (a.rows == 0) return;
  const unsigned blocks = static_cast<unsigned>((a.rows + kThreads - 1) / kThreads);
  softmax_three_pass_kernel<D><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a.x),
                                                    static_cast<T*>(a.y), a.rows, a.cols);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string softmax_three_pass_supports(const SoftmaxArgs& a, const DeviceInfo&) { return softmax_check_args(a); }
void softmax_three_pass_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
