// 06 prefetch_next_row — rung 04's register-resident row in persistent groups that issue the loads
// of their NEXT row before reducing and storing the current one.
//
// Parent: 04 row_in_registers.
// Change: the grid is sized to what is resident (occupancy x SMs), each group strides over rows,
//   and row k+1's 16-byte loads are in flight (a second register buffer) while row k is reduced and
//   written.
// Why: in rung 04 a block's reduction and stores have no loads in flight, and with 1024-thread
//   groups (one block per SM) that bubble is the SM's bubble.
// Limits: slower than 04: the same registers (4 blocks of 256 threads per SM) put no more bytes in
//   flight, only earlier; the w loads are waited on one chunk at a time; the persistent grid leaves
//   a tail. Aligned rows only, at most 32 bf16 or 16 f32 elements per thread per buffer, at least
//   2 x SMs groups. A negative result: `auto` never picks it (its domain lies inside rung 07's).
#include <algorithm>

#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {
constexpr int kMaxThreads = 1024;
// Elements per thread per buffer: 64 bytes of registers (16) per buffer in both dtypes.
constexpr int elems_per_thread(DType t) { return t == DType::bf16 ? 32 : 16; }

template <DType D, int V>
__global__ void __launch_bounds__(kMaxThreads)
    rmsnorm_prefetch_next_row_kernel(const typename Elem<D>::T* __restrict__ x,
                    const typename Elem<D>::T* __restrict__ w, typename Elem<D>::T* __restrict__ y,
                    int rows, int cols, float eps, int G, int R) {
  using E = Elem<D>;
  using T = typename E::T;
  constexpr int K = E::kVec;
  static_assert(V * K <= elems_per_thread(D), "two buffers of V chunks must fit 64 registers");
  __shared__ float red[kMaxThreads / 32];
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
  const long long stride = static_cast<long long>(gridDim.x) * R;  // rows per grid sweep
  bool have[V];  // the column mask is the same for every row
#pragma unroll
  for (int i = 0; i < V; ++i) have[i] = (i * G + lane) * K < cols;

  uint4 cur[V], nxt[V];
  long long row = static_cast<long long>(blockIdx.x) * R + g;
#pragma unroll
  for (int i = 0; i < V; ++i)
    cur[i] = row < rows && have[i] ? ld16<Ld::nc_noalloc>(x + row * cols + (i * G + lane) * K)
                                   : make_uint4(0, 0, 0, 0);
  // Loop control from the block's first row: every group of the block runs the same number of
  // iterations (the reduction has barriers); groups past the last row idle through them.
  for (long long first = static_cast<long long>(blockIdx.x) * R; first < rows;
       first += stride, row += stride) {
    const long long nrow = row + stride;
#pragma unroll
    for (int i = 0; i < V; ++i)  // next row: in flight across everything below
      nxt[i] = nrow < rows && have[i] ? ld16<Ld::nc_noalloc>(x + nrow * cols + (i * G + lane) * K)
                                      : make_uint4(0, 0, 0, 0);
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float f[K];
      E::unpack(cur[i], f);
#pragma unroll
      for (int j = 0; j < K; ++j) ss += ss_term(f[j]);
    }
    ss = group_reduce_rt(ss, SumOp{}, red, G);
    if (row < rows) {
      const float inv = rms_inv(ss, cols, eps);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (!have[i]) continue;
        const int c = (i * G + lane) * K;
        float f[K], wv[K];
        E::unpack(cur[i], f);
        E::unpack(ld16<Ld::normal>(w + c), wv);  // w: L1/L2-resident after the first row
#pragma unroll
        for (int j = 0; j < K; ++j) f[j] = f[j] * inv * wv[j];
        st16(y + row * cols + c, E::pack(f));
      }
    }
#pragma unroll
    for (int i = 0; i < V; ++i) cur[i] = nxt[i];
  }
}

template <DType D, int V>
void launch_v(const RmsnormArgs& a, const RowRegsConfig& cfg, cudaStream_t s) {
  using T = typename Elem<D>::T;
  const int threads = cfg.group * cfg.rows_per_block;
  // Resident blocks per SM for this block size, cached by the common helper: a runtime query per
  // launch would stall the launch stream of short kernels.
  const int occ =
      std::max(1, resident_blocks_per_sm(reinterpret_cast<const void*>(rmsnorm_prefetch_next_row_kernel<D, V>), threads, 0));
  const long long want = (static_cast<long long>(a.rows) + cfg.rows_per_block - 1) /
                         cfg.rows_per_block;
  const long long resident = static_cast<long long>(occ) * device_info().sms;
  const unsigned blocks = static_cast<unsigned>(want < resident ? want : resident);
  rmsnorm_prefetch_next_row_kernel<D, V><<<blocks, threads, 0, s>>>(static_cast<const T*>(a.x),
                                                   static_cast<const T*>(a.w),
                                                   static_cast<T*>(a.y), a.rows, a.cols, a.eps,
                                                   cfg.group, cfg.rows_per_block);
  KL_CHECK_LAUNCH();
}

template <DType D>
void dispatch(const RmsnormArgs& a, const RowRegsConfig& cfg, cudaStream_t s) {
  constexpr int kVmax = elems_per_thread(D) / Elem<D>::kVec;  // 4 in both dtypes
  static_assert(kVmax == 4, "the switch below covers V = 1..4");
  switch (cfg.vecs) {
    case 1: return launch_v<D, 1>(a, cfg, s);
    case 2: return launch_v<D, 2>(a, cfg, s);
    case 3: return launch_v<D, 3>(a, cfg, s);
    case 4: return launch_v<D, 4>(a, cfg, s);
    default: KL_REQUIRE(false, "prefetch_next_row: " << cfg.vecs << " chunks per thread");
  }
}
}  // namespace

std::string rmsnorm_prefetch_next_row_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (!vec_ok(a))
    return "needs cols % " + std::to_string(16 / dtype_size(a.dtype)) +
           " == 0 and 16-byte-aligned x, w, y";
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, elems_per_thread(a.dtype), 1, d.sms);
  if (!cfg.why.empty()) return cfg.why + " (two row buffers)";
  if ((static_cast<long long>(a.rows) + cfg.rows_per_block - 1) / cfg.rows_per_block < 2LL * d.sms)
    return "fewer than 2 x SMs row groups: rung 05 splits the rows over clusters";
  // Slower than rung 04 on every DRAM shape; with this bound its domain lies inside rung 07's, so
  // `auto` never picks it.
  if (a.rows < 4LL * d.sms) return "fewer than 4 x SMs rows (kept in the ladder, never picked)";
  return "";
}

void rmsnorm_prefetch_next_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  const RowRegsConfig cfg =
      row_regs_config(a.dtype, a.rows, a.cols, elems_per_thread(a.dtype), 1, device_info().sms);
  if (a.dtype == DType::f32) dispatch<DType::f32>(a, cfg, s);
  else dispatch<DType::bf16>(a, cfg, s);
}

}  // namespace kl::rmsnorm_detail
