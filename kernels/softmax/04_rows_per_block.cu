// 04 rows_per_block — several rows per block for short rows.
//
// Parent: 03 row_in_regs.
// Change: the group that owns a row is G = 32, 64 or 128 threads (compile-time) and a 256-thread
//   block carries 256 / G rows; one-warp groups reduce with shuffles only (no barrier).
// Why: rung 03 makes the block the group, so a 1024-wide bf16 row gets a 32-thread block; the SM's
//   32-blocks limit then caps residency at half the SM and every row pays a block launch.
// Limits: only rows whose group is <= 128 threads (<= 4096 elements); wider rows are rung 03.
#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxG = 128;  // beyond this the block holds one row (rung 03)

template <DType D, int G, int N, int VEC>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_per_block_kernel(const typename Elem<D>::T* __restrict__ x,
                           typename Elem<D>::T* __restrict__ y, int rows, int cols) {
  static_assert(kThreads % G == 0 && G % 32 == 0 && G <= kMaxG, "groups tile the block");
  constexpr int kRows = kThreads / G;  // rows per block
  __shared__ float red[group_reduce_smem_floats(kThreads)];
  const long long row = static_cast<long long>(blockIdx.x) * kRows + threadIdx.x / G;
  const int t = threadIdx.x % G;                 // thread index in its group
  const bool live = row < rows;                  // last block: groups past the end idle
  const int len = live ? cols : 0;               // an idle group loads nothing (all -inf)
  const long long off = live ? row * cols : 0;
  RowRegs<D, N, VEC> r;
  r.template load<Ld::normal>(x + off, len, t, G);
  // Every thread calls the reductions (they contain barriers when G > 32).
  const float m = group_max<G>(r.max(), red);
  const float s = group_sum<G>(r.exp_sum(safe_shift(m)), red);
  r.template store<St::normal>(y + off, len, t, G, safe_inv(s));
}

template <DType D, int VEC>
void launch_v(const SoftmaxArgs& a, const RegCfg& c, cudaStream_t s) {
  using T = typename Elem<D>::T;
  auto go = [&](auto gc) {
    constexpr int G = decltype(gc)::value;
    const unsigned blocks = static_cast<unsigned>((a.rows + kThreads / G - 1) / (kThreads / G));
    dispatch_n<VEC>(c.n, [&](auto nc) {
      softmax_rows_per_block_kernel<D, G, decltype(nc)::value, VEC><<<blocks, kThreads, 0, s>>>(
          static_cast<const T*>(a.x), static_cast<T*>(a.y), a.rows, a.cols);
      KL_CHECK_LAUNCH();
    });
  };
  switch (c.g) {
    case 32: go(std::integral_constant<int, 32>{}); break;
    case 64: go(std::integral_constant<int, 64>{}); break;
    case 128: go(std::integral_constant<int, 128>{}); break;
    default: KL_REQUIRE(false, "softmax rung 04: internal: g = " << c.g);
  }
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  if (a.rows == 0) return;
  const RegCfg c = choose_regs(a.cols, vec_width(a), /*pow2_group=*/true);
  if (c.vec == 1)
    launch_v<D, 1>(a, c, s);
  else
    launch_v<D, Elem<D>::kVec>(a, c, s);
}

}  // namespace

std::string softmax_rows_per_block_supports(const SoftmaxArgs& a, const DeviceInfo&) {
  std::string why = softmax_check_args(a);
  if (!why.empty()) return why;
  const RegCfg c = choose_regs(a.cols, vec_width(a), true);
  if (c.g == 0 || c.g > kMaxG)
    return "row needs a group of more than " + std::to_string(kMaxG) +
           " threads (one row per block: rung 03)";
  return "";
}
void softmax_rows_per_block_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
