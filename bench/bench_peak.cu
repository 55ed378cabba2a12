// bench/bench_peak.cu — the card's ceilings, measured rather than quoted.
//
// What it shows: the roofs every percentage in results/ is computed against.
//   mma_sync_bf16  a loop of mma.sync.m16n8k16 (bf16 in, fp32 accumulate) on register-resident
//                  operands, 8 independent accumulator chains per warp, 16 warps per SM
//   mma_sync_64x64_regs / _ldsm / _ldsm_bar / _pipe_l2
//                  what the mma.sync GEMM rungs' warp tile can reach at best: 8 warps per SM (2 per
//                  sub-core, as rungs 03/04 run), each the 64x64 warp tile of their 128x256 CTA
//                  (32 mma per 16-wide k slice, 128 accumulators); _regs with the fragments fixed
//                  in registers, _ldsm running the rungs' own stage loop (stage_mma: ldmatrix from
//                  the swizzled stage, fragments double-buffered) on one resident stage, with no
//                  copies and no barriers in the loop, _ldsm_bar adding the rungs' barrier per
//                  stage, _pipe_l2 the rungs' whole k-loop (mainloop) with every copy an L2 hit
//   fp32_ffma_16x8_lds
//                  what sgemm rung 15's thread tile can reach at best: its own kernel
//                  (sgemm_ak_kernel, kernels/sgemm/ak.cuh) in the loop-only form, one 256-thread
//                  block per SM as the rung runs, every 64-deep k-tile the rung's FFMA loop (16x8
//                  micro-tile, LDS.128 fragments, unrolled by 8) on one resident stage, with no
//                  copies, waits or barriers
//   wgmma_bf16     (sm_90a) a loop of wgmma m64n256k16 with both operands in shared memory,
//                  two warpgroups per SM (kernels/common/hopper.cuh)
//   fp32_fma       8 independent FMA chains per thread, 2048 threads per SM
//   copy_memcpy    cudaMemcpy device-to-device of 1 GiB, counting bytes read + written
//   copy_kernel    a grid-stride copy with 16-byte loads, 4 in flight per thread
//   read_stream, read_ldg_chunks, read_tma_bulk, read_tma_bulk_interleaved
//                  reads of N bytes, XOR-folded (each checked against the host's fold of the same
//                  bytes), at every K + V size of bench_attention's default decode shapes (or at the
//                  --shape sizes), rotated past the L2: a grid-stride loop of 16-byte loads, 8 per
//                  round per thread; CTAs reading contiguous chunks with 16-byte no-allocate loads, 8
//                  in flight per thread; (sm_90+) 1-D bulk copies into a shared-memory ring, one
//                  producer lane per CTA, in decode-piece or interleaved chunk order; bytes = bytes
//                  read
//   read_floor     at each size, a copy of the fastest of those rows (notes.best_of names it): the
//                  read-only DRAM rate a decode step (bf16 GEMM, attention) of that many bytes can
//                  reach at best, the floor report.py gives decode rows
//   launch_empty   a kernel that does nothing, one 128-thread block per SM: what a launch costs by
//                  itself, timed as every row is (median of launches each between its own event pair)
//                  and back to back in a CUDA graph (graph_ms); the intercept of every small row
// Each compute loop also reads %globaltimer and clock64 on one SM at its start and end, so the
// JSON row carries the SM clock the loop actually ran at (clock_mhz), beside the NVML sample.
// Run: build/bench_peak [--out results/h200/peak.jsonl] [--iters N]
//                       [--quick: 10 iterations, 64 MiB copies, the two smallest read sizes]
//      build/bench_peak --shape bytes=16777216 [--shape ...]   the read rows at those sizes + launch_empty
#include <cuda_bf16.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "bench/harness.h"
#include "common/hopper.cuh"
#include "common/mma.cuh"
#include "common/vec.cuh"
#include "gemm_bf16/mma_sync_tile.cuh"
#include "sgemm/ak.cuh"

using namespace kl;
using namespace kl::bench;

namespace {

struct ClockProbe {
  unsigned long long t0, t1, c0, c1;  // globaltimer ns, clock64 cycles
};
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void probe_begin(ClockProbe* p) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    p->t0 = globaltimer();
    p->c0 = clock64();
  }
}
__device__ __forceinline__ void probe_end(ClockProbe* p) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    p->t1 = globaltimer();
    p->c1 = clock64();
  }
}

constexpr int kMmaChains = 8;
// mma.sync peak: each warp keeps kMmaChains independent accumulators so the tensor pipe always has
// an mma whose inputs are ready; operands never leave registers, so nothing but the pipe limits.
__global__ void __launch_bounds__(512) mma_peak_kernel(int iters, float* sink, ClockProbe* probe) {
  probe_begin(probe);
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = pack_bf16x2(0.001f * (threadIdx.x + i), 0.002f);
  for (int i = 0; i < 2; ++i) b[i] = pack_bf16x2(0.003f, 0.001f * (threadIdx.x - i));
  float acc[kMmaChains][4] = {};
#pragma unroll 4
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) mma_bf16_16816(acc[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (s == 1234.5f) *sink = s;  // keeps the loop; practically never true
  __syncthreads();
  probe_end(probe);
}

// The mma.sync GEMM rungs' warp tile on its own (rungs 03/04, tile L: 128x256 CTA, 8 warps of
// 64x64). kMode 0: the fragments are loaded once and every mma reads registers (the HMMA issue of 2
// warps per sub-core with 32 independent accumulators); 1: each iteration is stage_mma on one
// resident stage (what the rungs' k-loop does per stage, minus the cp.async copies, the wait and the
// barrier); 2: the same with the rungs' __syncthreads per stage.
using CeilCfg = gemm_bf16_detail::CfgL;
// Every accumulator feeds a sum the compiler cannot drop, or the mma that write them are dead code.
__device__ __forceinline__ void keep_acc(const float (&acc)[CeilCfg::MI][CeilCfg::NI][4], float* sink) {
  float s = 0;
#pragma unroll
  for (int mi = 0; mi < CeilCfg::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < CeilCfg::NI; ++ni)
      s += (acc[mi][ni][0] + acc[mi][ni][1]) + (acc[mi][ni][2] + acc[mi][ni][3]);
  if (s == 1234.5f) *sink = s;  // practically never true
}
template <int kMode>
__global__ void __launch_bounds__(CeilCfg::THREADS, 1)
    mma_tile_ceiling_kernel(int iters, float* sink, ClockProbe* probe) {
  extern __shared__ __align__(128) char stage[];  // one stage: A [128][64] + W [256][64] bf16
  auto* e = reinterpret_cast<__nv_bfloat16*>(stage);
  for (int i = threadIdx.x; i < CeilCfg::STAGE_BYTES / 2; i += blockDim.x)
    e[i] = __float2bfloat16(0.01f * (i % 7) - 0.03f);
  __syncthreads();
  probe_begin(probe);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warp_m = warp % CeilCfg::WARPS_M, warp_n = warp / CeilCfg::WARPS_M;
  float acc[CeilCfg::MI][CeilCfg::NI][4];
  gemm_bf16_detail::zero_acc<CeilCfg>(acc);
  uint32_t a[2][CeilCfg::MI][4], b[2][CeilCfg::NI][2];
  if constexpr (kMode >= 1) {
    for (int it = 0; it < iters; ++it) {
      if (kMode == 2) __syncthreads();
      gemm_bf16_detail::stage_mma<CeilCfg>(stage, warp_m, warp_n, lane, a, b, acc);
    }
  } else {
    gemm_bf16_detail::load_frags<CeilCfg>(stage, 0, warp_m, warp_n, lane, a[0], b[0]);
    gemm_bf16_detail::load_frags<CeilCfg>(stage, 1, warp_m, warp_n, lane, a[1], b[1]);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int kk = 0; kk < CeilCfg::BK / 16; ++kk)
        gemm_bf16_detail::slice_mma<CeilCfg>(a[kk & 1], b[kk & 1], acc);
    }
  }
  keep_acc(acc, sink);
  __syncthreads();
  probe_end(probe);
}

// The rungs' whole k-loop (gemm_bf16_detail::mainloop: 4-stage cp.async ring, wait, barrier, copies,
// stage_mma) for one 128x256 tile per CTA, every CTA reading the same A [128 x K] and W [256 x K],
// so after the first touch every copy hits L2: the pipeline's cost without DRAM.
// kMode 1 (probe only, results meaningless): per stage, the copies of the next k-step (the rungs'
// interior-tile copies, InteriorCopies) go into a second slot that is never read, with the rungs'
// wait, while stage_mma reads slot 0: the copies' cost without the barrier.
template <int kMode>
__global__ void __launch_bounds__(CeilCfg::THREADS, 1)
    mma_pipe_probe_kernel(const __nv_bfloat16* A, const __nv_bfloat16* W, int K, float* sink) {
  extern __shared__ __align__(128) char ring[];
  float acc[CeilCfg::MI][CeilCfg::NI][4];
  gemm_bf16_detail::zero_acc<CeilCfg>(acc);
  if constexpr (kMode == 0) {
    gemm_bf16_detail::mainloop<CeilCfg>(ring, A, W, CeilCfg::BM, CeilCfg::BN, K, 0, 0, 0,
                                        K / CeilCfg::BK, acc);
  } else {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warp_m = warp % CeilCfg::WARPS_M, warp_n = warp / CeilCfg::WARPS_M;
    uint32_t a[2][CeilCfg::MI][4], b[2][CeilCfg::NI][2];
    const gemm_bf16_detail::InteriorCopies<CeilCfg> ic(A, W, K, 0, 0, threadIdx.x);
    const uint32_t ring0 = smem_u32(ring);
    ic.issue(ring0, 0, K);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    // kMode 2: every CTA copies its own 4 k-steps (blockIdx.x * 4 + it % 4; K = 256 x CTAs), so
    // no two SMs read the same L2 lines.
    // 512 stage_mma per CTA, as the whole-loop row runs (the last iteration's copy reads past K
    // in mode 1: zero-filled, nothing read).
    const int iters = kMode == 2 ? 512 : K / CeilCfg::BK;
    for (int kt = 1; kt <= iters; ++kt) {
      const int src_kt = kMode == 2 ? blockIdx.x * 4 + (kt & 3) : kt;
      ic.issue(ring0 + CeilCfg::STAGE_BYTES, src_kt, K);
      cp_async_commit();
      cp_async_wait<CeilCfg::STAGES - 2>();
      gemm_bf16_detail::stage_mma<CeilCfg>(ring, warp_m, warp_n, lane, a, b, acc);
    }
    cp_async_wait<0>();
  }
  keep_acc(acc, sink);
}

constexpr int kFmaChains = 8;
__global__ void __launch_bounds__(256) fma_peak_kernel(int iters, float* sink, ClockProbe* probe) {
  probe_begin(probe);
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = threadIdx.x * 1e-4f + c;
  const float m = 0.99999f, k = 1e-6f;
  // Unrolled 16 deep: with 8 FMAs per trip the loop counter and branch would otherwise take a
  // sizeable share of the issue slots.
#pragma unroll 16
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], m, k);  // independent chains
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) s += x[c];
  if (s == 1234.5f) *sink = s;
  __syncthreads();
  probe_end(probe);
}

// 16-byte loads, 4 independent loads in flight per thread before the first store.
__global__ void copy16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v0 = src[i], v1 = src[i + stride], v2 = src[i + 2 * stride], v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// The XOR of `acc` over the warp goes to out[global warp index] (lane 0 stores it): a read
// kernel's whole fold is the XOR of the entries its warps wrote.
__device__ __forceinline__ void store_warp_fold(uint4 acc, uint4* __restrict__ out) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    acc.x ^= __shfl_xor_sync(0xffffffffu, acc.x, o);
    acc.y ^= __shfl_xor_sync(0xffffffffu, acc.y, o);
    acc.z ^= __shfl_xor_sync(0xffffffffu, acc.z, o);
    acc.w ^= __shfl_xor_sync(0xffffffffu, acc.w, o);
  }
  if ((threadIdx.x & 31) == 0) out[(blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32] = acc;
}
__device__ __forceinline__ void xor_into(uint4& acc, const uint4& v) {
  acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
}

// 16-byte loads, 8 per round per thread (ptxas issues them as two groups of 4: 128 KB in flight per
// SM at 2048 threads), folded by XOR (no load can be dropped: every word reaches the result); each
// warp's fold goes to out[global warp index]. The last, partial round is predicated, not a scalar
// tail loop: with fewer than 8 elements per thread (a few tens of MB over 132 x 8 x 256 threads) a
// scalar loop would wait for each load before issuing the next, and the floors at those sizes would
// come out too slow.
__global__ void read16_kernel(const uint4* __restrict__ src, size_t n, uint4* __restrict__ out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i < n; i += 8 * stride) {
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)  // 8 independent loads first
      v[j] = i + j * stride < n ? src[i + j * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < 8; ++j) xor_into(acc, v[j]);
  }
  store_warp_fold(acc, out);
}

// The read floor's other kernels. Each reads n 16-byte elements from src and folds them by XOR,
// as read16_kernel does, but moves the bytes the way the decode kernels do: a CTA reads whole
// contiguous chunks (a decode step's K/V tiles are contiguous runs of keys) and never keeps a line
// in L1.
//
// read_ldg_chunks: 256 threads per CTA, as many CTAs per SM as fit, a persistent loop over chunks of
// kChunkElems elements (chunk c goes to CTA c mod grid). In a chunk, thread t loads elements
// t + 256 j, j < kReadUnroll, with ld.global.nc.L1::no_allocate, all of them before the first XOR;
// only the last, partial chunk is predicated.
constexpr int kReadThreads = 256, kReadUnroll = 8;
constexpr int kChunkElems = kReadThreads * kReadUnroll;
__global__ void __launch_bounds__(kReadThreads) read_chunks_kernel(const uint4* __restrict__ src, size_t n,
                                                                   uint4* __restrict__ out) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  const size_t chunks = (n + kChunkElems - 1) / kChunkElems;
  for (size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const uint4* p = src + c * kChunkElems + threadIdx.x;
    uint4 v[kReadUnroll];
    if ((c + 1) * kChunkElems <= n) {
#pragma unroll
      for (int j = 0; j < kReadUnroll; ++j) v[j] = ld16<Ld::nc_noalloc>(p + j * kReadThreads);
    } else {
      const size_t left = n - c * kChunkElems - threadIdx.x;  // > 0 or wrapped: compared as signed
#pragma unroll
      for (int j = 0; j < kReadUnroll; ++j)
        v[j] = static_cast<long long>(left) > j * kReadThreads ? ld16<Ld::nc_noalloc>(p + j * kReadThreads)
                                                              : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < kReadUnroll; ++j) xor_into(acc, v[j]);
  }
  store_warp_fold(acc, out);
}

// read_tma_bulk / read_tma_bulk_interleaved (sm_90+): the TMA unit moves the bytes, as in the
// attention's Hopper decode path. One CTA per SM; one producer lane issues 1-D bulk copies
// (cp.async.bulk, kBulkBytes each: one 64-key K or V tile at D = 128) into a ring of `stages` slots
// of shared memory, each slot with a `full` mbarrier (the copy's bytes landed) and an `empty` one
// (each of the kBulkWarps consumer warps arrives once it has folded the slot). Chunk order: with
// `pieces` CTA b takes the contiguous run of chunks [b C / grid, (b + 1) C / grid), as a split-KV
// decode piece does; otherwise chunk c goes to CTA c mod grid.
constexpr int kBulkBytes = 16384, kBulkWarps = 4;
constexpr int kBulkThreads = 32 * (kBulkWarps + 1);
constexpr int kBulkMaxStages = 12;
int bulk_smem(int stages) { return stages * kBulkBytes + 2 * stages * 8; }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void bulk_load(void* smem_dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   hp_smem_u32(smem_dst)),
               "l"(src), "r"(bytes), "r"(hp_smem_u32(bar))
               : "memory");
}
#endif
__global__ void __launch_bounds__(kBulkThreads, 1)
    read_bulk_kernel(const uint4* __restrict__ src, size_t n, int stages, int pieces, uint4* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char slots[];  // stages x kBulkBytes, then the mbarriers
  uint64_t* full = reinterpret_cast<uint64_t*>(slots + static_cast<size_t>(stages) * kBulkBytes);
  uint64_t* empty = full + stages;
  const size_t bytes = n * 16, chunks = (bytes + kBulkBytes - 1) / kBulkBytes;
  size_t first, step, count;  // this CTA's chunks: first + k * step, k < count
  if (pieces) {
    first = chunks * blockIdx.x / gridDim.x;
    count = chunks * (blockIdx.x + 1) / gridDim.x - first;
    step = 1;
  } else {
    first = blockIdx.x;
    step = gridDim.x;
    count = first < chunks ? (chunks - first + step - 1) / step : 0;
  }
  if (threadIdx.x == 0) mbar_ring_init(full, empty, stages, kBulkWarps);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  auto chunk_bytes = [&](size_t c) {
    return static_cast<uint32_t>(bytes - c * kBulkBytes < kBulkBytes ? bytes - c * kBulkBytes : kBulkBytes);
  };
  if (warp == kBulkWarps) {
    if (lane == 0) {
      for (size_t k = 0; k < count; ++k) {
        const int s = static_cast<int>(k % stages);
        const uint32_t round = static_cast<uint32_t>(k / stages);
        mbar_wait(&empty[s], (round & 1) ^ 1);  // first round: returns at once (fresh barrier)
        const size_t c = first + k * step;
        const uint32_t len = chunk_bytes(c);
        mbar_arrive_expect_tx(&full[s], len);
        bulk_load(slots + static_cast<size_t>(s) * kBulkBytes, reinterpret_cast<const char*>(src) + c * kBulkBytes,
                  len, &full[s]);
      }
    }
    return;  // the producer warp's fold entry stays as the host cleared it
  }
  uint4 acc = make_uint4(0, 0, 0, 0);
  constexpr int kPerThread = kBulkBytes / 16 / (32 * kBulkWarps);
  for (size_t k = 0; k < count; ++k) {
    const int s = static_cast<int>(k % stages);
    mbar_wait(&full[s], static_cast<uint32_t>(k / stages) & 1);
    const uint4* slot = reinterpret_cast<const uint4*>(slots + static_cast<size_t>(s) * kBulkBytes);
    const uint32_t elems = chunk_bytes(first + k * step) / 16;
    if (elems == kBulkBytes / 16) {
      uint4 v[kPerThread];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) v[j] = slot[threadIdx.x + j * 32 * kBulkWarps];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) xor_into(acc, v[j]);
    } else {
      for (uint32_t i = threadIdx.x; i < elems; i += 32 * kBulkWarps) xor_into(acc, slot[i]);
    }
    __syncwarp();  // every lane of the warp has read the slot
    if (lane == 0) mbar_arrive(&empty[s]);
  }
  store_warp_fold(acc, out);
#endif
}

__global__ void empty_kernel() {}

// wgmma peak: m64n256k16, A and B both read from shared memory through 128-byte-swizzle K-major
// descriptors (the layout the GEMM rungs use). The values are whatever the fill wrote: only the
// rate matters here. 16 wgmma per commit group; two warpgroups per SM so one's wait hides in the
// other's issue.
constexpr int kWgmmaPerGroup = 16;
__global__ void __launch_bounds__(256, 1) wgmma_peak_kernel(int iters, float* sink, ClockProbe* probe) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) __nv_bfloat16 smA[64 * 64];   // 8 KB: 64 rows x 128 B
  __shared__ __align__(1024) __nv_bfloat16 smB[256 * 64];  // 32 KB: 256 rows x 128 B
  for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) smA[i] = __float2bfloat16(0.01f * (i % 7));
  for (int i = threadIdx.x; i < 256 * 64; i += blockDim.x) smB[i] = __float2bfloat16(0.01f * (i % 5));
  fence_proxy_async_smem();  // generic-proxy stores must be visible to the async proxy (wgmma)
  __syncthreads();
  probe_begin(probe);
  const uint64_t da = make_smem_desc_sw128(smA);
  const uint64_t db = make_smem_desc_sw128(smB);
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kWgmmaPerGroup; ++k) wgmma_ss_m64n256k16(acc, da, db, 1);
    wgmma_commit();
    wgmma_wait<0>();
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += acc[i];
  if (s == 1234.5f) *sink = s;
  __syncthreads();
  probe_end(probe);
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) *sink = -1.f;  // never launched: supports() refuses
#endif
}

double probe_mhz(ClockProbe* d_probe) {
  ClockProbe p{};
  KL_CHECK(cudaMemcpy(&p, d_probe, sizeof p, cudaMemcpyDeviceToHost));
  if (p.t1 <= p.t0) return std::nan("");
  return static_cast<double>(p.c1 - p.c0) / static_cast<double>(p.t1 - p.t0) * 1e3;
}

// The read floor's sizes when no --shape is given: the K + V bytes of bench_attention's default
// decode shapes (B x Hkv x Skv x 512 at D = 128), so every decode row has a floor at its own size;
// --quick (a smoke run, the sanitizer's) keeps the two smallest.
const std::vector<size_t> kReadSizes = {size_t(1) << 24, size_t(1) << 26, size_t(1) << 27, size_t(1) << 29,
                                        size_t(1) << 30, size_t(1) << 31, size_t(1) << 32, size_t(1) << 34};
constexpr size_t kReadSizesQuick = 2;
// Timing budget of one read row (iters_for_budget): the largest sizes get fewer launches.
constexpr double kReadRowSeconds = 0.15;

// XOR fold of 32-bit words, word i into lane i mod 4 (what the read kernels compute).
using Fold = std::array<uint32_t, 4>;
// The host's folds of the first sizes[k] bytes at `dev` for every k (ascending, multiples of 16), in
// one pass over the largest through a pinned staging buffer.
std::vector<Fold> host_prefix_folds(const void* dev, const std::vector<size_t>& sizes) {
  const size_t stage = size_t(64) << 20;
  void* h = nullptr;
  KL_CHECK(cudaMallocHost(&h, stage));
  std::unique_ptr<void, cudaError_t (*)(void*)> keep(h, cudaFreeHost);
  std::vector<Fold> out;
  uint64_t f[2] = {0, 0};  // words 0-1 and 2-3 of every 16 bytes
  size_t pos = 0;
  for (size_t end : sizes) {
    while (pos < end) {
      const size_t len = std::min(stage, end - pos);
      KL_CHECK(cudaMemcpy(h, static_cast<const char*>(dev) + pos, len, cudaMemcpyDeviceToHost));
      const uint64_t* w = static_cast<const uint64_t*>(h);
      for (size_t i = 0; i < len / 8; i += 2) f[0] ^= w[i], f[1] ^= w[i + 1];
      pos += len;
    }
    out.push_back({static_cast<uint32_t>(f[0]), static_cast<uint32_t>(f[0] >> 32), static_cast<uint32_t>(f[1]),
                   static_cast<uint32_t>(f[1] >> 32)});
  }
  return out;
}

// One kernel of the read floor: its row name, grid, and launch over n 16-byte elements.
struct ReadKernel {
  const char* op;
  int blocks, threads;
  std::function<void(const uint4* src, size_t n, uint4* folds, cudaStream_t s)> launch;
};

Row peak_row(const char* op, const char* impl, const char* dtype, Shape shape) {
  Row r;
  r.family = "peak";
  r.op = op;
  r.impl = impl;
  r.variant = -1;
  r.variant_name = op;
  r.dtype = dtype;
  r.shape = std::move(shape);
  r.validated = false;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  return guarded_main([&] {
    Options o = parse_cli(argc, argv, "bench_peak", "bytes=N: only the read rows and read_floor over N bytes (rotated past the L2) and launch_empty");
    if (o.list) {
      std::printf("bench_peak: mma_sync_bf16, mma_sync_64x64_regs, mma_sync_64x64_ldsm, mma_sync_64x64_ldsm_bar, "
                  "mma_sync_64x64_pipe_l2, wgmma_bf16 (sm_90a), "
                  "fp32_fma, fp32_ffma_16x8_lds, copy_memcpy, copy_kernel, read_stream, read_ldg_chunks, "
                  "read_tma_bulk, read_tma_bulk_interleaved (sm_90), read_floor, launch_empty\n");
      return 0;
    }
    if (o.variant != "all" || !o.dtypes.empty())
      throw BadArgument("bench_peak takes no --variant or --dtype");
    // --shape bytes=N, checked before the device is touched.
    std::vector<size_t> read_sizes;
    for (const std::string& str : o.shapes) {
      const long long n = parse_shape(str, {"bytes"})["bytes"];
      KL_REQUIRE(n >= 16 && n % 16 == 0 && n <= (1LL << 34),
                 "bench_peak --shape bytes=N: N in 16..2^34, a multiple of 16 (got " << str << ")");
      read_sizes.push_back(static_cast<size_t>(n));
    }
    const DeviceInfo& d = device_info();
    print_banner(d);
    Reporter rep(o, d);
    Stream s;
    Options po = o;
    if (o.quick) po.iters = std::min(o.iters, 10);
    // An empty launch: single (event pair per launch, as every row) and back to back (graph).
    auto emit_empty_launch = [&] {
      Row r = peak_row("launch_empty", "kl", "f32", Shape{{{"blocks", d.sms}, {"threads", 128}}});
      r.t = time_launches([&](int) {
        empty_kernel<<<d.sms, 128, 0, s>>>();
        KL_CHECK_LAUNCH();
      }, po, s, /*force_graph=*/true);
      rep.emit(r);
    };
    // The read kernels: read_stream (grid-stride), read_ldg_chunks (as many 256-thread CTAs per SM
    // as fit), and on sm_90+ the bulk-copy ring in both chunk orders (one CTA per SM, as many
    // kBulkBytes slots as the shared memory holds, at most kBulkMaxStages).
    std::vector<ReadKernel> readers;
    readers.push_back({"read_stream", d.sms * 8, 256, [](const uint4* p, size_t n, uint4* f, cudaStream_t st) {
                         read16_kernel<<<device_info().sms * 8, 256, 0, st>>>(p, n, f);
                       }});
    int chunk_ctas = 0;
    KL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&chunk_ctas, read_chunks_kernel, kReadThreads, 0));
    chunk_ctas = std::max(1, chunk_ctas) * d.sms;
    readers.push_back({"read_ldg_chunks", chunk_ctas, kReadThreads,
                       [chunk_ctas](const uint4* p, size_t n, uint4* f, cudaStream_t st) {
                         read_chunks_kernel<<<chunk_ctas, kReadThreads, 0, st>>>(p, n, f);
                       }});
    int stages = kBulkMaxStages;
    while (stages > 1 && bulk_smem(stages) > d.smem_optin) --stages;
    const char* bulk_ops[2] = {"read_tma_bulk", "read_tma_bulk_interleaved"};
    if (d.cc() < 90 || stages < 2) {
      for (const char* op : bulk_ops)
        rep.skip(op, d.cc() < 90 ? "needs sm_90 (cp.async.bulk)" : "needs two ring slots of shared memory");
    } else {
      KL_CHECK(cudaFuncSetAttribute(read_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bulk_smem(stages)));
      for (int pieces : {1, 0})
        readers.push_back({bulk_ops[1 - pieces], d.sms, kBulkThreads,
                           [stages, pieces](const uint4* p, size_t n, uint4* f, cudaStream_t st) {
                             read_bulk_kernel<<<device_info().sms, kBulkThreads, bulk_smem(stages), st>>>(
                                 p, n, stages, pieces, f);
                           }});
    }
    // Every read kernel over `bytes` bytes at each of `copies` consecutive buffers from `base` (launch
    // i reads buffer i % copies): a launch over buffer 0 whose fold must equal `want` (the host's
    // fold of those bytes), then timed singly and back to back (graph); then read_floor, a copy of
    // the fastest of them (notes.best_of names it).
    auto read_rows = [&](size_t bytes, const void* base, int copies, const Fold& want) {
      Row best;
      for (const ReadKernel& k : readers) {
        const int warps = k.blocks * k.threads / 32;
        DeviceBuffer folds(static_cast<size_t>(warps) * 16);
        auto launch = [&](int i) {
          k.launch(reinterpret_cast<const uint4*>(static_cast<const char*>(base) + bytes * (i % copies)), bytes / 16,
                   folds.as<uint4>(), s);
          KL_CHECK_LAUNCH();
        };
        Row r = peak_row(k.op, "kl", "f32", Shape{{{"bytes", static_cast<long long>(bytes)}}});
        r.bytes = static_cast<double>(bytes);
        r.copies = copies;
        r.l2_resident = is_l2_resident(bytes, copies, d);
        r.notes["grid"] = std::to_string(k.blocks) + "x" + std::to_string(k.threads);
        KL_CHECK(cudaMemsetAsync(folds.ptr, 0, folds.bytes, s));
        launch(0);
        KL_CHECK(cudaStreamSynchronize(s));
        std::vector<uint32_t> hf(static_cast<size_t>(warps) * 4);
        KL_CHECK(cudaMemcpy(hf.data(), folds.ptr, hf.size() * 4, cudaMemcpyDeviceToHost));
        Fold got{};
        for (size_t i = 0; i < hf.size(); ++i) got[i & 3] ^= hf[i];
        r.validated = true;
        r.tol = Tolerance{0, 0, 0};
        r.err.n = 4;
        for (int j = 0; j < 4; ++j) r.err.bad += want[j] != got[j];
        r.err.ok = r.err.bad == 0;
        if (!r.err.ok) {
          rep.fail(r, "read kernel's XOR fold differs from the host's fold of the same bytes");
          continue;
        }
        // The budget only cuts: a run of a few launches (the sanitizers') keeps its count.
        const Options c = po.iters > 5 ? iters_for_budget(po, [&] { launch(0); }, s, kReadRowSeconds, false, &r) : po;
        r.t = time_launches(launch, c, s, /*force_graph=*/true);
        rep.emit(r);
        if (best.op.empty() || r.t.median_ms < best.t.median_ms) best = r;
      }
      if (best.op.empty()) return;
      best.notes["best_of"] = best.op;
      best.op = best.variant_name = "read_floor";
      rep.emit(best);
    };
    // The read floor at each of `sizes`, rotated past the L2 as a decode bench's inputs are; a size
    // whose rotation does not fit in device memory is skipped with a line saying so. One buffer
    // holds every size's rotation (size k reads its prefix), filled once and folded on the host once.
    auto read_floor_rows = [&](std::vector<size_t> sizes) {
      std::sort(sizes.begin(), sizes.end());
      sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
      size_t free_b = 0, total_b = 0;
      KL_CHECK(cudaMemGetInfo(&free_b, &total_b));
      const size_t reserve = size_t(1) << 30;  // the CUDA context, the fold buffers, the graphs
      const size_t avail = free_b > reserve ? free_b - reserve : 0;
      std::vector<size_t> fit;
      std::vector<int> copies;
      size_t buf = 0;
      for (size_t b : sizes) {
        const int c = rotation_copies(b, d, o.no_rotate);
        if (b * c > avail) {
          rep.skip("read_floor bytes=" + std::to_string(b),
                   "needs " + std::to_string(b * c) + " bytes of device memory, " + std::to_string(avail) +
                       " free (less a reserve)");
          continue;
        }
        fit.push_back(b);
        copies.push_back(c);
        buf = std::max(buf, b * c);
      }
      if (fit.empty()) return;
      DeviceBuffer a(buf);
      fill_uniform(a.ptr, buf / 4, DType::f32, run_seed(o), -1.f, 1.f, s);
      KL_CHECK(cudaStreamSynchronize(s));
      const std::vector<Fold> want = host_prefix_folds(a.ptr, fit);
      for (size_t k = 0; k < fit.size(); ++k) read_rows(fit[k], a.ptr, copies[k], want[k]);
    };
    if (!read_sizes.empty()) {
      // --shape bytes=N: only the read floor over N bytes (rotated over enough buffers that every
      // launch reads DRAM, the decode benches' rule) and launch_empty: the floor of a decode step
      // that must read N bytes, in the harness's single and graph timing.
      read_floor_rows(read_sizes);
      emit_empty_launch();
      return rep.finish();
    }
    DeviceBuffer sink(sizeof(float)), probe(sizeof(ClockProbe));

    auto compute_row = [&](const char* op, const char* dtype, int blocks, int threads, int iters,
                           double flops_per_launch, auto kernel, int smem = 0) {
      auto launch = [&](int) {
        kernel<<<blocks, threads, smem, s>>>(iters, sink.as<float>(), probe.as<ClockProbe>());
        KL_CHECK_LAUNCH();
      };
      Row r = peak_row(op, "kl", dtype, Shape{{{"blocks", blocks}, {"threads", threads}, {"iters", iters}}});
      r.t = time_launches(launch, po, s);
      r.flops = flops_per_launch;
      double mhz = probe_mhz(probe.as<ClockProbe>());
      r.notes["nvml_sm_mhz"] = std::isfinite(r.t.clock_mhz) ? std::to_string(r.t.clock_mhz) : "n/a";
      r.t.clock_mhz = mhz;
      rep.emit(r);
    };
    // A row of kernels without the clock probe (clock_mhz is NVML's, also kept in notes).
    auto timed_row = [&](Row r, double flops, auto launch) {
      r.t = time_launches(launch, po, s);
      r.flops = flops;
      r.notes["nvml_sm_mhz"] = std::isfinite(r.t.clock_mhz) ? std::to_string(r.t.clock_mhz) : "n/a";
      rep.emit(r);
    };

    {  // mma.sync: 16 warps per SM (4 per sub-core), 8 chains each.
      const int blocks = d.sms, threads = 512, iters = 4096;
      double flops = 2.0 * 16 * 8 * 16 * kMmaChains * iters * (threads / 32) * blocks;
      compute_row("mma_sync_bf16", "bf16", blocks, threads, iters, flops, mma_peak_kernel);
    }
    {  // The mma.sync rungs' warp tile: one 128x256 CTA per SM, 64-deep stage per iteration.
      using C = gemm_bf16_detail::CfgL;
      static_assert(C::STAGE_BYTES <= 48 * 1024, "one stage fits the default dynamic smem limit");
      const int blocks = d.sms, iters = 2048;
      const double flops = 2.0 * C::BM * C::BN * C::BK * iters * blocks;
      auto row = [&](auto kernel, const char* name) {
        KL_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::STAGE_BYTES));
        compute_row(name, "bf16", blocks, C::THREADS, iters, flops, kernel, C::STAGE_BYTES);
      };
      row(mma_tile_ceiling_kernel<0>, "mma_sync_64x64_regs");
      row(mma_tile_ceiling_kernel<1>, "mma_sync_64x64_ldsm");
      row(mma_tile_ceiling_kernel<2>, "mma_sync_64x64_ldsm_bar");
      // The whole k-loop with L2-resident operands: A 8 MB + W 16 MB at K = 32768.
      // (The distinct-lines probe needs 4 k-steps per CTA: Kbuf >= 256 x CTAs; 26 MB at 132.)
      // The ring is 192 KB: cards with less shared memory per block (sm_120: 99 KB) skip these.
      const bool probes = std::getenv("KL_PEAK_PROBES") != nullptr;
      if (C::SMEM > d.smem_optin) {
        const std::string why =
            "needs " + std::to_string(C::SMEM) + " bytes of shared memory per block (the rungs' 4-stage ring)";
        rep.skip("mma_sync_64x64_pipe_l2", why);
        if (probes) {
          rep.skip("probe_mma_copies_no_barrier", why);
          rep.skip("probe_mma_copies_no_barrier_distinct", why);
        }
      } else {
        const int Kdef = C::BK * 512, Kbuf = std::max(Kdef, 4 * C::BK * blocks);
        DeviceBuffer a(static_cast<size_t>(C::BM) * Kbuf * 2), w(static_cast<size_t>(C::BN) * Kbuf * 2);
        fill_uniform(a.ptr, static_cast<size_t>(C::BM) * Kbuf, DType::bf16, run_seed(o), -1.f, 1.f, s);
        fill_uniform(w.ptr, static_cast<size_t>(C::BN) * Kbuf, DType::bf16, run_seed(o) + 1, -1.f, 1.f, s);
        auto pipe_row = [&](auto kernel, const char* name, int K) {
          KL_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
          // 512 k-steps per CTA in every mode
          timed_row(peak_row(name, "kl", "bf16", Shape{{{"blocks", blocks}, {"threads", C::THREADS}, {"K", K}}}),
                    2.0 * C::BM * C::BN * (C::BK * 512.0) * blocks, [&](int) {
                      kernel<<<blocks, C::THREADS, C::SMEM, s>>>(a.as<__nv_bfloat16>(),
                                                                 w.as<__nv_bfloat16>(), K, sink.as<float>());
                      KL_CHECK_LAUNCH();
                    });
        };
        pipe_row(mma_pipe_probe_kernel<0>, "mma_sync_64x64_pipe_l2", Kdef);
        if (probes) {
          pipe_row(mma_pipe_probe_kernel<1>, "probe_mma_copies_no_barrier", Kdef);
          pipe_row(mma_pipe_probe_kernel<2>, "probe_mma_copies_no_barrier_distinct", Kbuf);
        }
      }
    }
    {
      std::string why = require_sm90a(d);
      if (!why.empty()) {
        rep.skip("wgmma_bf16", why);
      } else {
        const int blocks = d.sms, threads = 256, iters = 1024;
        double flops = 2.0 * 64 * 256 * 16 * kWgmmaPerGroup * iters * (threads / 128) * blocks;
        compute_row("wgmma_bf16", "bf16", blocks, threads, iters, flops, wgmma_peak_kernel);
      }
    }
    {  // FMA: 2048 threads per SM, 8 chains each.
      const int blocks = d.sms * 8, threads = 256, iters = 8192;
      double flops = 2.0 * kFmaChains * iters * threads * static_cast<double>(blocks);
      compute_row("fp32_fma", "f32", blocks, threads, iters, flops, fma_peak_kernel);
    }
    {  // sgemm rung 15's kernel in its loop-only form: one 256x128 block per SM (M = 256 x SMs,
       // N = 128), K = 64 x iters, every k-tile the FFMA loop on one resident stage.
      namespace ak = sgemm_detail::ak;
      using Rung15 = ak::Bk64TwoStage;
      auto* kernel = ak::sgemm_ak_kernel<Rung15, /*kLoopOnly=*/true>;
      const int smem = ak::AkCfg<Rung15>::kSmemBytes, iters = 512;
      const int M = 256 * d.sms, N = 128, K = Rung15::kBK * iters;
      if (smem > d.smem_optin) {
        rep.skip("fp32_ffma_16x8_lds", "needs " + std::to_string(smem) +
                                           " bytes of shared memory per block (rung 15's ring)");
      } else {
        KL_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        DeviceBuffer c(static_cast<size_t>(M) * N * 4);
        timed_row(peak_row("fp32_ffma_16x8_lds", "kl", "f32",
                           Shape{{{"blocks", d.sms}, {"threads", ak::AkCfg<Rung15>::kThreads}, {"iters", iters}}}),
                  2.0 * M * N * static_cast<double>(K), [&](int) {
                    // A and B are never dereferenced in this form (no copies; only addresses are
                    // formed from them); C gets the sums.
                    kernel<<<d.sms, ak::AkCfg<Rung15>::kThreads, smem, s>>>(c.as<float>(), c.as<float>(),
                                                                            c.as<float>(), M, N, K);
                    KL_CHECK_LAUNCH();
                  });
      }
    }
    {  // Copies: 1 GiB each way, far past the L2 (--quick, a smoke run and the sanitizer's: 64 MiB).
      const size_t bytes = o.quick ? size_t(1) << 26 : size_t(1) << 30;
      DeviceBuffer a(bytes), b(bytes);
      fill_uniform(a.ptr, bytes / 4, DType::f32, run_seed(o), -1.f, 1.f, s);
      Options co = po;
      co.iters = std::min(po.iters, 30);
      Shape sh{{{"bytes", static_cast<long long>(bytes)}}};
      Row r = peak_row("copy_memcpy", "cudaMemcpy", "f32", sh);
      r.t = time_launches([&](int) { KL_CHECK(cudaMemcpyAsync(b.ptr, a.ptr, bytes, cudaMemcpyDeviceToDevice, s)); }, co, s);
      r.bytes = 2.0 * bytes;
      rep.emit(r);
      Row k = peak_row("copy_kernel", "kl", "f32", sh);
      const int blocks = d.sms * 8;
      k.t = time_launches([&](int) {
        copy16_kernel<<<blocks, 256, 0, s>>>(a.as<uint4>(), b.as<uint4>(), bytes / 16);
        KL_CHECK_LAUNCH();
      }, co, s);
      k.bytes = 2.0 * bytes;
      // The copy is checked: a wrong copy kernel must not become the roof.
      std::vector<float> src = download_as_float(a.ptr, 1 << 20, DType::f32);
      std::vector<float> dst = download_as_float(b.ptr, 1 << 20, DType::f32);
      k.validated = true;
      k.tol = Tolerance{0, 0, 0};
      k.err = compare(dst.data(), src.data(), src.size(), k.tol);
      if (!k.err.ok) {
        rep.fail(k, "copy kernel output differs from its input");
      } else {
        rep.emit(k);
      }
    }
    read_floor_rows(o.quick ? std::vector<size_t>(kReadSizes.begin(), kReadSizes.begin() + kReadSizesQuick)
                            : kReadSizes);
    emit_empty_launch();
    return rep.finish();
  });
}
