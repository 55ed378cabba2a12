// 03 row_in_regs — the row in registers: one block of g threads owns a row.
//
// Parent: 02 block_row.
// Change: g = 32..1024 (a multiple of 32, sized so no thread holds more than 32 elements); every
//   thread issues all N of its loads at once (thread t: chunks t, t+g, ... of VEC elements, N a
//   compile-time power of two so the arrays stay in registers), then max -> block reduction -> exp
//   ONCE in place -> sum -> block reduction -> scale and store from registers.
// Why: one DRAM read + one write (the minimum) and one exp per element; up to 64 (bf16) / 128 (f32)
//   bytes in flight per thread.
// Limits: rows longer than 1024 x 32 elements do not fit (rung 05 or 02 takes them); 16 elements
//   per thread on the scalar path for unaligned rows (32 scalars spill at 64 registers).
#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kMaxThreads = kMaxGroup;  // 1024

template <DType D, int N, int VEC>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_row_in_regs_kernel(const typename Elem<D>::T* __restrict__ x, typename Elem<D>::T* __restrict__ y,
                     int cols) {
  __shared__ float red[group_reduce_smem_floats(kMaxThreads)];  // one partial per warp
  const long long off = static_cast<long long>(blockIdx.x) * cols;
  RowRegs<D, N, VEC> r;
  r.template load<Ld::normal>(x + off, cols, threadIdx.x, blockDim.x);
  const float m = block_reduce(r.max(), MaxOp{}, red);
  const float s = block_reduce(r.exp_sum(safe_shift(m)), SumOp{}, red);  // all -inf row: s = 0
  r.template store<St::normal>(y + off, cols, threadIdx.x, blockDim.x, safe_inv(s));
}

template <DType D, int VEC>
void launch_v(const SoftmaxArgs& a, const RegCfg& c, cudaStream_t s) {
  using T = typename Elem<D>::T;
  dispatch_n<VEC>(c.n, [&](auto nc) {
    softmax_row_in_regs_kernel<D, decltype(nc)::value, VEC><<<a.rows, c.g, 0, s>>>(
        static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
    KL_CHECK_LAUNCH();
  });
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  if (a.rows == 0) return;
  const RegCfg c = choose_regs(a.cols, vec_width(a), /*pow2_group=*/false);
  if (c.vec == 1)
    launch_v<D, 1>(a, c, s);
  else
    launch_v<D, Elem<D>::kVec>(a, c, s);
}

}  // namespace

std::string softmax_row_in_regs_supports(const SoftmaxArgs& a, const DeviceInfo&) {
  std::string why = softmax_check_args(a);
  if (!why.empty()) return why;
  if (choose_regs(a.cols, vec_width(a), false).g == 0)
    return "row of " + std::to_string(a.cols) + " does not fit 1024 threads x 32 (16 unaligned) elements";
  return "";
}
void softmax_row_in_regs_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
