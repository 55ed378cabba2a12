// kernels/softmax/fused_impl.cuh — the kernel of rungs 07-09, one_reduction_softmax_kernel (family-private): rung 03/04's row in
// registers, with the max and the sum found in ONE group reduction instead of two.
//
// Each thread takes its own slice max m_t, computes v = exp(x - m_t) in place (the only exp of each
// element) and its slice sum s_t; the group then merges the (m_t, s_t) pairs online (warp butterfly,
// then one shared-memory exchange of per-warp pairs when the group is wider than a warp) into the
// row's (M, S), and each thread stores v * exp(m_t - M) / S — one extra exp per THREAD, not per
// element. Rung 03/04 need two reductions (max, then sum of exp(x - max)): two warp butterflies and,
// for groups wider than a warp, two __syncthreads() round trips (four barriers) per row. Here: one
// butterfly of pairs and one barrier.
//
// Special values are handled as in rungs 03/04 (see softmax.h): masked or -inf elements give
// v = 0; a thread whose slice is all -inf has m_t = -inf and factor exp(-inf - M) = 0; an all -inf
// row has M = -inf, S = 0 and stores zeros (safe_shift / safe_inv).
//
// Layout (the same as rungs 03 and 04, from choose_regs):
//   G = 0          block per row: the block (blockDim.x = g, 32..1024 threads) owns one row.
//   G = 32..256    rows per block: a 256-thread block holds 256 / G rows, G threads each (G = 256
//                  only with kBound, for 16-byte bf16 rows of exactly 256 threads).
// kBound (rungs 08-09): 16-byte bf16 rows of exactly 256 threads as G = 256 with a register bound
//                  for 5 resident blocks per SM (see fused_min_blocks).
// Cache hints L / S: rungs 07-08 plain loads and stores; rung 09 streaming.
#pragma once
#include "softmax_impl.cuh"

namespace kl::softmax_detail {

constexpr int kFusedRowsThreads = 256;  // block size of the rows-per-block layout (G > 0)
constexpr int kFusedMaxG = 256;         // widest compile-time group (256: one row per block)

// Online (max, sum) pairs merged over a group of `gsize` consecutive threads (G = 0: the whole
// block, gsize = blockDim.x; otherwise gsize = G). Every thread of the group gets the same pair,
// bit for bit: the butterfly's merge is symmetric (fmaxf, products and one addition, all
// commutative) and every thread merges the per-warp partials in the same order. Contains one
// __syncthreads() when gsize > 32: call from converged code, once per smem buffer lifetime (the
// kernels below call it once per row and each block handles one row set, so no trailing barrier).
template <int G>
__device__ __forceinline__ Online group_merge(Online o, float2* smem) {
  o = warp_merge(o);
  if constexpr (G != 0 && G <= 32) return o;  // one warp per row: shuffles only, no barrier
  const int gsize = G ? G : static_cast<int>(blockDim.x);
  if (gsize <= 32) return o;  // block-uniform: every thread takes the same branch
  const int warp = threadIdx.x >> 5, gw = gsize >> 5;
  if ((threadIdx.x & 31) == 0) smem[warp] = make_float2(o.m, o.s);
  __syncthreads();
  const float2* part = smem + (warp / gw) * gw;  // this group's gw pairs
  Online r;
  r.m = part[0].x;
  r.s = part[0].y;
  for (int i = 1; i < gw; ++i) r.merge(part[i].x, part[i].y);  // same order in every thread
  return r;
}

// Blocks per SM the register budget must allow (the __launch_bounds__ minimum). kBound = false
// (rung 07): 1, ptxas chooses. kBound = true (rungs 08-09) changes one row class only: 16-byte bf16
// rows of exactly 256 threads (7.2K..8K elements, e.g. 8192), launched as the compile-time G = 256
// layout with a minimum of 5 blocks, i.e. <= 48 registers (no spills, -Xptxas -v on sm_90a) and 5
// resident rows per SM instead of 4 (unbounded, that row takes 63 registers as G = 0), faster than
// 07 on 16384 x 8192 bf16. Other classes are faster unbounded (07) or were not compared, so they
// stay as 07.
template <DType D, int VEC, bool kBound>
constexpr bool fused_bounded() {
  return kBound && D == DType::bf16 && VEC == 8;
}
template <DType D, int G, int VEC, bool kBound>
constexpr int fused_min_blocks() {
  return (G == 256 && fused_bounded<D, VEC, kBound>()) ? 5 : 1;
}

template <DType D, int G, int N, int VEC, Ld L, St S, bool kBound>
__global__ void __launch_bounds__(G ? kFusedRowsThreads : kMaxGroup,
                                  fused_min_blocks<D, G, VEC, kBound>())
    one_reduction_softmax_kernel(const typename Elem<D>::T* __restrict__ x, typename Elem<D>::T* __restrict__ y,
                  int rows, int cols) {
  static_assert(G == 0 || (G % 32 == 0 && G <= kFusedMaxG && kFusedRowsThreads % (G ? G : 1) == 0),
                "groups tile the 256-thread block");
  __shared__ float2 part[(G ? kFusedRowsThreads : kMaxGroup) / 32];  // one pair per warp
  const int gsize = G ? G : static_cast<int>(blockDim.x);
  const long long row = G ? static_cast<long long>(blockIdx.x) * (kFusedRowsThreads / (G ? G : 1)) +
                                threadIdx.x / (G ? G : 1)
                          : static_cast<long long>(blockIdx.x);
  const int t = static_cast<int>(threadIdx.x) % (G ? G : kMaxGroup);  // blockDim <= 1024 when G = 0
  const bool live = row < rows;         // last block of the rows layout: idle groups
  const int len = live ? cols : 0;      // an idle group loads nothing (all -inf), stores nothing
  const long long off = live ? row * cols : 0;
  RowRegs<D, N, VEC> r;
  r.template load<L>(x + off, len, t, gsize);
  Online o;
  o.m = r.max();                        // this thread's slice max (-inf if it holds nothing)
  o.s = r.exp_sum(safe_shift(o.m));     // v <- exp(x - m_t): the one exp per element
  const Online row_ms = group_merge<G>(o, part);  // every thread calls it (barrier inside)
  // exp(m_t - M) rescales this thread's exps to the row max; 0 when m_t = -inf.
  // 1 / S by the approximate reciprocal (MUFU.RCP, ~1 ulp): S >= 1 whenever the row has a finite
  // element (the max contributes exp(0) = 1), and the IEEE division's slow-path subroutine cost
  // a stack frame (a 4-byte spill) in the one-warp scalar instantiations.
  const float inv = row_ms.s > 0.0f ? __fdividef(1.0f, row_ms.s) : 0.0f;  // all -inf row: 0
  const float f = fast_exp(o.m - safe_shift(row_ms.m)) * inv;
  r.template store<S>(y + off, len, t, gsize, f);
}

// Launch for a row layout from fused_cfg().
template <DType D, int VEC, Ld L, St S, bool kBound>
void launch_fused_v(const SoftmaxArgs& a, const RegCfg& c, cudaStream_t s) {
  using T = typename Elem<D>::T;
  auto go = [&](auto gc) {
    constexpr int G = decltype(gc)::value;
    const unsigned blocks =
        G ? static_cast<unsigned>((a.rows + kFusedRowsThreads / G - 1) / (kFusedRowsThreads / G))
          : static_cast<unsigned>(a.rows);
    const unsigned threads = G ? kFusedRowsThreads : c.g;
    dispatch_n<VEC>(c.n, [&](auto nc) {
      one_reduction_softmax_kernel<D, G, decltype(nc)::value, VEC, L, S, kBound><<<blocks, threads, 0, s>>>(
          static_cast<const T*>(a.x), static_cast<T*>(a.y), a.rows, a.cols);
      KL_CHECK_LAUNCH();
    });
  };
  switch (c.g) {
    case 32: go(std::integral_constant<int, 32>{}); break;
    case 64: go(std::integral_constant<int, 64>{}); break;
    case 128: go(std::integral_constant<int, 128>{}); break;
    case 256:  // bounded bf16: a whole 256-thread block per row, compile-time (bound applies)
      if constexpr (fused_bounded<D, VEC, kBound>()) {
        go(std::integral_constant<int, 256>{});
        break;
      }
      [[fallthrough]];
    default: go(std::integral_constant<int, 0>{}); break;  // block per row, g = blockDim.x
  }
}

// The row layout: groups of <= 128 threads packed into 256-thread blocks (rung 04's power-of-two
// groups); wider rows one block per row of choose_regs' multiple-of-32 size (rung 03). With kBound,
// a 16-byte bf16 row of exactly 256 threads (7.2K..8K elements, e.g. 8192) is launched as the
// compile-time G = 256 layout, so the register bound of fused_min_blocks applies to it.
inline RegCfg fused_cfg(const SoftmaxArgs& a) {
  const int vec = vec_width(a);
  const RegCfg p = choose_regs(a.cols, vec, /*pow2_group=*/true);
  if (p.g != 0 && p.g <= 128) return p;
  return choose_regs(a.cols, vec, /*pow2_group=*/false);
}

// The row class rung 08 changes (see fused_min_blocks): 16-byte bf16 rows of exactly 256 threads.
inline bool fused_bounded_class(const SoftmaxArgs& a) {
  return a.dtype == DType::bf16 && vec_ok(a) && fused_cfg(a).g == 256;
}

// A rung's choice: a struct with static constexpr members
//   load, store        the cache hints of x's loads and y's stores
//   five_blocks_bound  the register bound of fused_min_blocks for the 256-thread bf16 row class
// Rung 07's choice (rungs 08 and 09 change members of their parent's):
struct OneReduction {
  static constexpr Ld load = Ld::normal;
  static constexpr St store = St::normal;
  static constexpr bool five_blocks_bound = false;
};
// Rung 08's choice: rung 07's with the register bound for 5 blocks per SM (rung 09 builds on it).
struct FiveBlocks : OneReduction {
  static constexpr bool five_blocks_bound = true;
};

template <class Config>
void launch_fused(const SoftmaxArgs& a, cudaStream_t s) {
  constexpr Ld L = Config::load;
  constexpr St S = Config::store;
  constexpr bool kBound = Config::five_blocks_bound;
  if (a.rows == 0) return;
  const RegCfg c = fused_cfg(a);
  KL_REQUIRE(c.g != 0, "softmax fused: row too long for registers");
  auto by_dtype = [&](auto dc) {
    constexpr DType D = decltype(dc)::value;
    if (c.vec == 1)
      launch_fused_v<D, 1, L, S, kBound>(a, c, s);
    else
      launch_fused_v<D, Elem<D>::kVec, L, S, kBound>(a, c, s);
  };
  if (a.dtype == DType::f32)
    by_dtype(std::integral_constant<DType, DType::f32>{});
  else
    by_dtype(std::integral_constant<DType, DType::bf16>{});
}

inline std::string fused_supports(const SoftmaxArgs& a) {
  std::string why = softmax_check_args(a);
  if (!why.empty()) return why;
  if (fused_cfg(a).g == 0)
    return "row of " + std::to_string(a.cols) +
           " does not fit 1024 threads x 32 (16 unaligned) elements";
  return "";
}

}  // namespace kl::softmax_detail
