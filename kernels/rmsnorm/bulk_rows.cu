// kernels/rmsnorm/bulk_rows.cu — the bulk-copy row pipeline shared by rmsnorm rung 07
// (bulk_pipeline) and fused add_rmsnorm rung 04 (bulk_pipeline).
//
// Layout. A persistent grid (blocks-per-SM x SMs blocks, at most `rows`) of kThreads threads; block
// b owns rows b, b + grid, b + 2*grid, ... (its "local rows" k = 0, 1, ...). Shared memory holds S
// stages, each one whole row in storage form (fused op: the r row, then the x row):
//
//   smem = [stage 0 | stage 1 | ... | stage S-1],  stage = cols * es bytes (x 2 for the fused op)
//
// One thread issues `cp.async.bulk` global -> shared copies (the TMA engine, no registers, no
// per-thread address arithmetic) that complete on one mbarrier per stage; S rows per block are in
// flight while the block computes on the oldest. Local row k lives in stage k % S and its barrier
// phase has parity (k / S) & 1.
//
// Per row: wait for the stage's barrier; pass 1 reads the stage (16-byte ld.shared, thread t takes
// chunks t, t + kThreads, ...) and sums the squares (fused: s = round(r + x), s written to r in
// global at once, the squares of s summed); one block barrier exchanges the 8 warp partials
// (double-buffered by k parity, so one barrier per row suffices); right after that barrier thread 0
// refills the stage the PREVIOUS row used (every thread finished reading it before the barrier)
// with local row k - 1 + S; pass 2 re-reads the stage, scales by rms_inv * w (w: 16-byte loads,
// L1/L2-resident) and writes y.
//
// DRAM sees each input byte once (the stage is read twice, from shared memory); the bytes in flight
// per SM are (S - 1) rows x blocks per SM, bounded by shared memory instead of registers.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {

constexpr int kThreads = 256;            // 8 warps per block
constexpr int kWarps = kThreads / 32;
static_assert(kBulkMaxStages <= 32, "one mbarrier per stage in static shared memory");

// ---- sm_90+ bulk copy / mbarrier wrappers (cp.async.bulk and mbarrier transaction counts are
// sm_90 features, not sm_90a: sm_120 has them too). One PTX instruction each.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bar_init_fence() {  // init visible to the async proxy
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Arrive (the barrier's one arrival) and expect `bytes` of transactions in this phase.
__device__ __forceinline__ void bar_arrive_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {  // try_wait suspends in hardware for a while between polls
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.b32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");  // the stage's contents change under the compiler: reload after this
  } while (!done);
}
// `bytes` (multiple of 16, both addresses 16-byte aligned) global -> this CTA's shared memory,
// completing as transactions on `bar`.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
#endif

template <DType D, bool kFused>
__global__ void __launch_bounds__(kThreads) bulk_rows_kernel(BulkParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using E = Elem<D>;
  using T = typename E::T;
  constexpr int K = E::kVec;
  extern __shared__ __align__(128) unsigned char stages[];
  __shared__ uint64_t bars[kBulkMaxStages];
  __shared__ float red[2][kWarps];  // warp partials, double-buffered by row parity

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int S = p.stages, nchunks = p.cols / K;  // cols % K == 0 (supports)
  const uint32_t row_bytes = static_cast<uint32_t>(p.cols) * sizeof(T);
  const uint32_t stage_bytes = kFused ? 2 * row_bytes : row_bytes;
  const long long grid = gridDim.x;
  // Local rows of this block (blockIdx.x < rows: the grid is at most `rows` blocks).
  const int n_local =
      static_cast<int>((static_cast<long long>(p.rows) - 1 - blockIdx.x) / grid + 1);
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  T* y = static_cast<T*>(p.y);
  T* r = static_cast<T*>(p.r);

  // Thread 0: issue local row k into stage k % S (one arrival + the stage's transaction bytes).
  auto issue = [&](int k) {
    const int s = k % S;
    const long long row = blockIdx.x + k * grid;
    unsigned char* st = stages + static_cast<size_t>(s) * stage_bytes;
    bar_arrive_tx(&bars[s], stage_bytes);
    if constexpr (kFused) {
      bulk_g2s(st, r + row * p.cols, row_bytes, &bars[s]);
      bulk_g2s(st + row_bytes, x + row * p.cols, row_bytes, &bars[s]);
    } else {
      bulk_g2s(st, x + row * p.cols, row_bytes, &bars[s]);
    }
  };

  if (tid == 0) {
    for (int s = 0; s < S; ++s) bar_init(&bars[s]);
    bar_init_fence();
  }
  __syncthreads();  // barriers initialised before anyone waits on them
  if (tid == 0)
    for (int k = 0; k < S && k < n_local; ++k) issue(k);

  for (int k = 0; k < n_local; ++k) {
    const int s = k % S;
    const long long row = blockIdx.x + k * grid;
    const long long base = row * p.cols;
    bar_wait(&bars[s], static_cast<uint32_t>((k / S) & 1));
    const uint4* st = reinterpret_cast<const uint4*>(stages + static_cast<size_t>(s) * stage_bytes);
    const uint4* sx = kFused ? st + nchunks : st;  // fused: r chunks first, then x chunks

    // The row's values as stored: plain x, fused round(r + x) (what r becomes).
    auto value = [&](int c) -> uint4 {
      if constexpr (kFused) {
        float a[K], b[K];
        E::unpack(st[c], a);
        E::unpack(sx[c], b);
#pragma unroll
        for (int j = 0; j < K; ++j) a[j] += b[j];
        return E::pack(a);  // rounded to storage
      } else {
        return sx[c];
      }
    };

    // Pass 1: sum of squares (fused: also write r = round(r + x)).
    float ss = 0.0f;
#pragma unroll 4
    for (int c = tid; c < nchunks; c += kThreads) {
      const uint4 v = value(c);
      if constexpr (kFused) st16(r + base + static_cast<long long>(c) * K, v);
      float f[K];
      E::unpack(v, f);
#pragma unroll
      for (int j = 0; j < K; ++j) ss += ss_term(f[j]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (lane == 0) red[k & 1][warp] = ss;
    __syncthreads();  // (1) partials visible; (2) every thread finished row k - 1 (its stage is free)
    float tot = red[k & 1][0];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) tot += red[k & 1][i];  // same order in every thread
    // red[k & 1] is written again at row k + 2, after row k + 1's barrier: everyone has read it.
    if (tid == 0 && k >= 1 && k - 1 + S < n_local) issue(k - 1 + S);  // refill row k - 1's stage
    const float inv = rms_inv(tot, p.cols, p.eps);

    // Pass 2: y = value * inv * w, in batches of 4 chunks (the batch's w loads issued together).
    for (int c0 = tid; c0 < nchunks; c0 += 4 * kThreads) {
      uint4 wr[4];
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int c = c0 + b * kThreads;
        if (c < nchunks) wr[b] = ld16<Ld::normal>(w + static_cast<long long>(c) * K);
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int c = c0 + b * kThreads;
        if (c < nchunks) {
          float f[K], wv[K];
          E::unpack(value(c), f);
          E::unpack(wr[b], wv);
#pragma unroll
          for (int j = 0; j < K; ++j) f[j] = f[j] * inv * wv[j];
          st16(y + base + static_cast<long long>(c) * K, E::pack(f));
        }
      }
    }
    // No proxy fence before the refill of this stage (issued by thread 0 after the next row's
    // barrier): the stage is only READ by the generic proxy, every value read was consumed before
    // this thread reached that barrier, and the barrier orders the reads before the copy (as a
    // CUTLASS TMA pipeline's consumer release: an arrive, no fence). A
    // fence.proxy.async.shared::cta here would compile to MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S, and
    // that MEMBAR waits for this thread's y stores every row.
  }
#else
  __trap();  // supports() requires cc >= 9.0
#endif
}

template <DType D, bool F>
void launch_t(const BulkParams& p, const BulkConfig& cfg, cudaStream_t s) {
  auto* k = bulk_rows_kernel<D, F>;
  // The dynamic shared-memory opt-in, raised once per kernel to the largest size seen.
  static std::atomic<long long> set_to{0};
  if (cfg.smem > set_to.load(std::memory_order_relaxed)) {
    KL_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(cfg.smem)));
    KL_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  static_cast<int>(cudaSharedmemCarveoutMaxShared)));
    set_to.store(cfg.smem, std::memory_order_relaxed);
  }
  // Resident blocks per SM at this shared-memory size (cached per size): a persistent grid larger
  // than what is resident would run its last blocks as a second wave.
  const int occ = resident_blocks_per_sm(reinterpret_cast<const void*>(k), kThreads,
                                         static_cast<size_t>(cfg.smem));
  KL_REQUIRE(occ >= 1, "bulk_rows: no block fits with " << cfg.smem << " bytes of shared memory");
  long long blocks = cfg.blocks;
  const long long resident = static_cast<long long>(occ) * device_info().sms;
  if (blocks > resident) blocks = resident;
  k<<<static_cast<unsigned>(blocks), kThreads, static_cast<size_t>(cfg.smem), s>>>(p);
  KL_CHECK_LAUNCH();
}

}  // namespace

BulkConfig bulk_config(DType t, bool fused, int rows, int cols, const DeviceInfo& d) {
  BulkConfig c;
  const long long row_bytes = static_cast<long long>(cols) * dtype_size(t);
  const long long stage = fused ? 2 * row_bytes : row_bytes;
  // Blocks per SM b and stages S: b = 2 if each block then gets >= 3 stages (two rows in flight
  // while it computes on one), else b = 1; S as many as shared memory takes, up to
  // kBulkMaxStages (in a sweep on 16384x8192 bf16, b = 2 beat b = 4 and b = 1). Per block:
  // an equal share of the SM's shared memory less 1 KB the system reserves per block and 1 KB of
  // static shared memory (barriers, partials), capped by the per-block opt-in limit.
  for (int b : {2, 1}) {
    long long budget = d.smem_per_sm / b - 2048;
    if (budget > d.smem_optin) budget = d.smem_optin;
    long long S = stage > 0 ? budget / stage : 0;
    if (S > kBulkMaxStages) S = kBulkMaxStages;
    if (S >= 3) {
      c.blocks_per_sm = b;
      c.stages = static_cast<int>(S);
      c.smem = S * stage;
      break;
    }
  }
  if (c.stages == 0) {
    c.why = "a row (" + std::to_string(stage) + " bytes per stage) leaves fewer than 3 stages in " +
            std::to_string(d.smem_optin) + " bytes of shared memory";
    return c;
  }
  const long long want = static_cast<long long>(c.blocks_per_sm) * d.sms;
  c.blocks = rows < want ? rows : want;
  return c;
}

void launch_bulk_rows(const BulkParams& p, const BulkConfig& cfg, DType t, bool fused,
                      cudaStream_t s) {
  KL_REQUIRE(cfg.why.empty(), "bulk_rows: " << cfg.why);
  if (t == DType::f32) {
    if (fused) launch_t<DType::f32, true>(p, cfg, s);
    else launch_t<DType::f32, false>(p, cfg, s);
  } else {
    if (fused) launch_t<DType::bf16, true>(p, cfg, s);
    else launch_t<DType::bf16, false>(p, cfg, s);
  }
}

}  // namespace kl::rmsnorm_detail
