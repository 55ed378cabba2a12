// 06 prefetch_next_row — a persistent row loop with the next row prefetched.
//
// Parent: 03 row_in_regs.
// Change: the grid is one resident wave (from the occupancy API); each block walks rows blockIdx.x,
//   +gridDim.x, ... and issues the loads of its next row into a second register set before reducing
//   and storing the current one. Blocks capped at 512 threads (__launch_bounds__(512)).
// Why: in rung 03 a block's loads are in flight only during its first phase, and the grid ends in
//   a partial wave.
// Limits: slower than rungs 03/04 on every DRAM shape: two rows of registers per thread halve the
//   resident rows per SM, and a resident row is what keeps loads in flight. A negative result;
//   never picked by auto. Offered for 16-byte-aligned rows whose block is 128..512 threads
//   (4K..16K elements) with at least 2 rows per SM.
#include <algorithm>

#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kMaxThreads = 512;
// From 128 threads (4096-element rows, which rung 04 also takes, so the bench measures both);
// shorter rows are rung 04's: a block of < 128 threads is too small to own a row.
constexpr int kMinThreads = 128;

template <DType D, int N, int VEC>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_prefetch_next_row_kernel(const typename Elem<D>::T* __restrict__ x, typename Elem<D>::T* __restrict__ y,
                     int rows, int cols) {
  using R = RowRegs<D, N, VEC>;
  __shared__ float red[group_reduce_smem_floats(kMaxThreads)];
  const int t = threadIdx.x, g = blockDim.x;
  long long r = blockIdx.x;  // grid <= rows: every block has a first row
  R cur;
  cur.template load<Ld::normal>(x + r * cols, cols, t, g);
  for (; r < rows; r += gridDim.x) {
    const long long rn = r + gridDim.x;
    const int len_n = rn < rows ? cols : 0;        // no next row: issue nothing
    typename R::Raw nxt[N];
    R::template issue<Ld::normal>(x + (rn < rows ? rn : r) * cols, len_n, t, g, nxt);
    // Row r, exactly as rung 03, while row rn streams in.
    const float m = block_reduce(cur.max(), MaxOp{}, red);
    const float s = block_reduce(cur.exp_sum(safe_shift(m)), SumOp{}, red);
    cur.template store<St::normal>(y + r * cols, cols, t, g, safe_inv(s));
    cur.unpack(nxt, len_n, t, g);  // becomes row rn (all -inf when there is none: unused)
  }
}

// Resident blocks per SM for this instantiation at `threads` (cached by the common helper, so a
// launch is only the kernel: capturable); at least 1.
template <DType D, int N, int VEC>
int resident_blocks(int threads) {
  return std::max(1, resident_blocks_per_sm(reinterpret_cast<const void*>(softmax_prefetch_next_row_kernel<D, N, VEC>),
                                            threads, 0));
}

template <DType D, int VEC>
void launch_v(const SoftmaxArgs& a, const RegCfg& c, cudaStream_t s) {
  using T = typename Elem<D>::T;
  dispatch_n<VEC>(c.n, [&](auto nc) {
    constexpr int N = decltype(nc)::value;
    const long long wave =
        static_cast<long long>(device_info().sms) * resident_blocks<D, N, VEC>(c.g);
    const unsigned grid = static_cast<unsigned>(std::min<long long>(wave, a.rows));
    softmax_prefetch_next_row_kernel<D, N, VEC><<<grid, c.g, 0, s>>>(static_cast<const T*>(a.x),
                                                     static_cast<T*>(a.y), a.rows, a.cols);
    KL_CHECK_LAUNCH();
  });
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  if (a.rows == 0) return;
  const RegCfg c = choose_regs(a.cols, Elem<D>::kVec, /*pow2_group=*/false);
  launch_v<D, Elem<D>::kVec>(a, c, s);  // vector rows only (softmax_prefetch_next_row_supports)
}

}  // namespace

std::string softmax_prefetch_next_row_supports(const SoftmaxArgs& a, const DeviceInfo& d) {
  std::string why = softmax_check_args(a);
  if (!why.empty()) return why;
  if (!vec_ok(a)) return "needs 16-byte-aligned rows (the scalar path spills two rows of registers)";
  const RegCfg c = choose_regs(a.cols, vec_width(a), false);
  if (c.g < kMinThreads || c.g > kMaxThreads)
    return "row needs " + std::to_string(c.g) + " threads; this rung takes " +
           std::to_string(kMinThreads) + ".." + std::to_string(kMaxThreads) + " (0 = too long)";
  if (a.rows < 2LL * d.sms) return "fewer than 2 rows per SM: nothing to prefetch";
  return "";
}
void softmax_prefetch_next_row_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
