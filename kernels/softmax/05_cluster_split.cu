// 05 cluster_split — a row split across a thread-block cluster.
//
// Parent: 03 row_in_regs.
// Change: K = 2..8 CTAs (one cluster) share a row, each holding a contiguous slice in registers as
//   rung 03 holds a row; the CTAs exchange slice max and slice sum through DSMEM with two cluster
//   barriers. K is the smallest power of two whose slice fits, doubled while rows x K < SMs and
//   slices stay >= 1024 elements; offered only when K >= 2.
// Why: very long rows (16 x 131072) do not fit one block, and fewer rows than SMs (64 x 8192) leave
//   SMs idle; the row is still read once and exp computed once.
// Limits: slower than rung 03 where a row fits one block, so auto takes it only for rows too long
//   for rung 03. Needs clusters (cc >= 9.0).
#include "common/rowops.cuh"
#include "softmax_impl.cuh"

namespace kl::softmax_detail {
namespace {

constexpr int kMaxThreads = kMaxGroup;  // 1024
constexpr int kMaxCluster = 8;          // portable cluster size limit
constexpr int kMinSlice = 1024;         // do not split rows below this many elements per CTA

template <DType D, int N, int VEC>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_cluster_split_kernel(const typename Elem<D>::T* __restrict__ x, typename Elem<D>::T* __restrict__ y,
                    int cols, int slice, int k) {
  __shared__ float red[group_reduce_smem_floats(kMaxThreads)];  // block reductions
  __shared__ float part[2];  // this CTA's slice max [0] and slice sum [1], read by the cluster
  const uint32_t rank = cluster_ctarank();           // == blockIdx.x % k (1-D clusters)
  const long long row = blockIdx.x / k;
  const int start = static_cast<int>(rank) * slice;
  const int len = max(0, min(cols - start, slice));  // last slice may be short (or empty)
  const long long off = row * cols + start;
  RowRegs<D, N, VEC> r;
  r.template load<Ld::normal>(x + off, len, threadIdx.x, blockDim.x);
  const float m_local = block_reduce(r.max(), MaxOp{}, red);
  if (threadIdx.x == 0) part[0] = m_local;
  cluster_sync();  // every CTA's part[0] written and visible
  float m = neg_inf();
  for (int q = 0; q < k; ++q) m = fmaxf(m, dsmem_ld_f32(&part[0], q));
  const float s_local = block_reduce(r.exp_sum(safe_shift(m)), SumOp{}, red);
  if (threadIdx.x == 0) part[1] = s_local;
  cluster_sync();  // every part[1] visible
  float s = 0.0f;
  for (int q = 0; q < k; ++q) s += dsmem_ld_f32(&part[1], q);  // same order in every CTA: same sum
  cluster_arrive();  // this CTA has finished reading its peers' shared memory
  r.template store<St::normal>(y + off, len, threadIdx.x, blockDim.x, safe_inv(s));
  cluster_wait();    // do not exit (freeing part[]) before every peer has read it
}

struct Plan {
  int k = 0;       // CTAs per row (0: rung does not apply)
  int slice = 0;   // elements per CTA (a multiple of vec)
  RegCfg c;
};

Plan plan(const SoftmaxArgs& a, const DeviceInfo& d) {
  Plan p;
  const int vec = vec_width(a);
  auto slice_for = [&](int k) {
    const long long per = (static_cast<long long>(a.cols) + k - 1) / k;
    return static_cast<int>((per + vec - 1) / vec * vec);  // keeps slices 16-byte aligned
  };
  int k = 1;
  while (k <= kMaxCluster && choose_regs(slice_for(k), vec, false).g == 0) k *= 2;
  if (k > kMaxCluster) return p;  // too long even split 8 ways
  while (k < kMaxCluster && static_cast<long long>(a.rows) * k < d.sms &&
         slice_for(2 * k) >= kMinSlice)
    k *= 2;
  if (k < 2) return p;
  p.k = k;
  p.slice = slice_for(k);
  p.c = choose_regs(p.slice, vec, false);
  return p;
}

template <DType D, int VEC>
void launch_v(const SoftmaxArgs& a, const Plan& p, cudaStream_t s) {
  using T = typename Elem<D>::T;
  dispatch_n<VEC>(p.c.n, [&](auto nc) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(a.rows) * p.k);  // rows x k CTAs, k per cluster
    cfg.blockDim = dim3(p.c.g);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = p.k;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    KL_CHECK(cudaLaunchKernelEx(&cfg, softmax_cluster_split_kernel<D, decltype(nc)::value, VEC>,
                                static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols, p.slice,
                                p.k));
    KL_CHECK_LAUNCH();
  });
}

template <DType D>
void launch_t(const SoftmaxArgs& a, cudaStream_t s) {
  if (a.rows == 0) return;
  const Plan p = plan(a, device_info());
  KL_REQUIRE(p.k >= 2, "softmax rung 05: shape not supported");
  if (p.c.vec == 1)
    launch_v<D, 1>(a, p, s);
  else
    launch_v<D, Elem<D>::kVec>(a, p, s);
}

}  // namespace

std::string softmax_cluster_split_supports(const SoftmaxArgs& a, const DeviceInfo& d) {
  std::string why = softmax_check_args(a);
  if (!why.empty()) return why;
  if (d.cc() < 90) return "thread-block clusters need sm_90+";
  if (a.rows == 0) return "no rows";
  if (static_cast<long long>(a.rows) * kMaxCluster > 0x7fffffffLL) return "too many rows for the grid";
  const Plan p = plan(a, d);
  if (p.k == 0)
    return "row fits one block and rows fill the SMs (rungs 03/04), or is longer than 8 x 32768";
  return "";
}
void softmax_cluster_split_launch(const SoftmaxArgs& a, cudaStream_t s) {
  a.dtype == DType::f32 ? launch_t<DType::f32>(a, s) : launch_t<DType::bf16>(a, s);
}

}  // namespace kl::softmax_detail
