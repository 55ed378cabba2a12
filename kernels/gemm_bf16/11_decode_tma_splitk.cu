// Rung 11 — decode_tma_splitk: the M <= 64 stream over W, fed by TMA into a deep shared-memory
// ring, balanced over every SM by a K split inside a thread-block cluster, reduced through DSMEM.
//
// Change from rung 10 (the previous decode rung): where W's bytes come from and how the work is cut.
// Rung 10 loaded W into registers (two 16-byte batches per thread, ~32-64 KB in flight per SM at
// best, refilled only after the math of the previous batch) and gave each CTA a 32-row strip of the
// whole K: N = 4096 -> 128 CTAs, N = 11008 -> 344 CTAs = 2.6 waves of 132. Measured 19.6-24 us
// single / 16.9-21 us graph for N = K = 4096 (32 MiB of W: 1.6-2.0 TB/s, < half the copy roof).
// Here:
//  * a producer warp issues one 2D TMA per stage (W box: R = 16T rows x 64 k, 128B swizzle; plus
//    the activation box MP x 64 k) into a ring of 4-16 stages (<= 104 KB: 64-96 KB of W in
//    flight per SM), refilled as soon as the consumers release a slot (full/empty mbarriers);
//  * M <= 16: each of 8 consumer warps owns up to two m16 row tiles of the strip over the CTA's
//    whole K range (no cross-warp reduction), reading W and activations from the swizzled ring with
//    conflict-free 16-byte ld.shared and feeding mma.sync m16n8k16 with W as the 16-row operand
//    (C^T = W A^T: M pads to 8, not 64). The k order inside a 64-wide block is permuted the same
//    way for both operands: thread c of a quad takes 16-byte chunk q = 2c + step, so the 8 lanes
//    of a 128-bit phase (rows g, g+1; chunks q ^ g) hit 8 distinct 16-byte bank groups;
//    M > 16: each consumer warpgroup owns 64-row slabs and runs wgmma m64n64k16 with the W slab as
//    A and the 64-row activation box (zero-filled past M) as B, straight from the TMA layout (v1 ran
//    mma.sync at every M and was issue-bound at M = 64: 22.7 us vs cuBLAS 14.5);
//  * programmatic dependent launch (v2): every CTA signals griddepcontrol.launch_dependents at
//    entry; the producer requests the first ring-full of W (weights) before griddepcontrol.wait
//    and the activations after it; C is written after it. With <= 106 KB of smem and <= 90
//    registers two CTAs fit per SM, so back-to-back the next GEMM streams W under this one's tail;
//  * the host picks (T = m16 tiles per CTA, S = K split = cluster size in {1,2,4,8}) so that
//    ceil(N/16T) * S CTAs fill the SMs in ONE wave with equal bytes each (a cost model: DRAM bytes
//    over all SMs vs the busiest SM's W + activation bytes + DSMEM reduction);
//  * the S partial sums of a strip are reduced inside the cluster, deterministically and in one
//    launch: every CTA parks its fp32 partial [R x MP] in its own (now idle) ring, cluster barrier,
//    then rank r sums rows [r R/S, (r+1) R/S) over ranks 0..S-1 in that fixed order with 16-byte
//    DSMEM loads and writes bf16 C; a second cluster barrier keeps every CTA's smem alive until its
//    peers have read it. No workspace, no atomics, no memset: graph-capturable, bitwise stable.
// Ragged: TMA zero-fills W rows past N, activation rows past M and k past K; stores are bounded.
// Proxy rule relied on: TMA (async proxy) writes complete on the full mbarrier; consumers' ld.shared
// after mbar_wait see them. Slot reuse: consumers' arrive on empty[s] (release) orders their reads
// before the producer's next TMA into s. The partial buffer reuses the ring only after every full
// barrier has been waited on (all TMA writes landed) and a __syncthreads.
// Measured (H200, 2026-11-29, gemm2 request 1, v1 without PDL/wgmma): M=1 4096x4096 16.3 us
// single / 13.5 us graph (10: 19.5 / 16.8; cuBLAS 20.5 / 12.7); M=64 22.7 / 19.8 (cuBLAS 14.5 /
// 11.8); M=1 4096x11008: 30.5 / 27.7 (cuBLAS 29.2 / 27.0). v2 (PDL, wgmma for M > 16): request 2.
#include <map>
#include <mutex>

#include "common/mma.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int CWARPS = 8;                  // consumer warps
constexpr int THREADS = (CWARPS + 1) * 32; // + 1 producer warp = 288
constexpr int MIN_T = 4, MAX_T = 2 * CWARPS;  // m16 tiles per CTA: 64..256 W rows (TMA box <= 256)
constexpr int MAX_STAGES = 16;
// Ring bytes per CTA: small enough that TWO CTAs fit on an SM (2 x ~106 KB + 2 x 1 KB reserved
// <= 228 KB), so with programmatic dependent launch the next GEMM's CTA can start streaming its W
// on an SM whose current CTA is still in its tail. The cost model still plans ONE CTA per SM
// (active_clusters() is queried at SMEM_OPTIN, which allows one).
constexpr int RING_BUDGET = 104 * 1024;
constexpr int MIN_STAGES = 4;             // keep >= 3 stages of W loading behind the one consumed
constexpr int SMEM_OPTIN = 200 * 1024 + 2048;  // occupancy query size (1 CTA/SM) and attribute
constexpr int MAX_MP = 64;
static_assert(MAX_T * 16 <= 256, "W box rows must fit one TMA box");
static_assert(MIN_T * 16 * 128 % 1024 == 0, "W box stays 1024-aligned (swizzle atoms)");

// %cluster_nctarank: CTAs in this cluster (1 when launched without clusters).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t cluster_size_11() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return n;
}
__device__ __forceinline__ uint4 lds128(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(hp_smem_u32(p))
               : "memory");
  return v;
}
// 16 bytes at the same smem offset as p in CTA `rank` of this cluster.
__device__ __forceinline__ float4 dsmem_ld_f32x4(const float* p, uint32_t rank) {
  uint32_t remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(hp_smem_u32(p)), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}
#endif

// MT = ceil(M / 8) activation n8 tiles; T (m16 W tiles per CTA) and the ring depth are runtime.
// WG = false: mma.sync path (M <= 16: MT = 1, 2); WG = true: wgmma m64n64k16 path (M > 16, MT = 8:
// the activation box is always 64 rows, TMA zero-fills rows >= M), W as the 64-row A operand.
template <int MT, bool WG>
__global__ void __launch_bounds__(THREADS, 2)
    k11(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
        __nv_bfloat16* __restrict__ C, int M, int N, int K, int T, int stages) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int MP = MT * 8;              // activation rows in the box (TMA zero-fills past M)
  constexpr int LDR = MP + 4;             // partial row pitch (floats): 16-byte rows, skewed banks
  static_assert(MP <= MAX_MP, "M <= 64");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  const int R = T * 16;                   // W rows (= output columns) of this CTA
  const int W_BYTES = R * 128;            // R rows x 64 k x 2 B
  const int STAGE = W_BYTES + MP * 128;   // + MP rows x 64 k x 2 B
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + stages * STAGE);
  uint64_t* empty = full + stages;
  float* part = reinterpret_cast<float*>(smem);  // [R][LDR], reuses the ring after the mainloop

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int S = (int)cluster_size_11(), rank = (int)cluster_ctarank();
  const int rb = blockIdx.x / S;          // strip index; the S CTAs of a cluster share it
  const int n0 = rb * R;
  const int KB = ceil_div(K, kBK);
  const int kb0 = (int)((long long)rank * KB / S), kb1 = (int)((long long)(rank + 1) * KB / S);
  // consumer warps that own work: mma path one per m16 tile (<= 8); wgmma path 4 per 64-row slab
  const int active = WG ? (T / 4 >= 2 ? CWARPS : 4) : (T < CWARPS ? T : CWARPS);

  // Let the next kernel in the stream (if launched with programmatic serialization) place its
  // CTAs as soon as SM room frees up; it waits for our completion before touching its A and C.
  griddep_launch_dependents();
  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], active);
    }
    fence_barrier_init();
  }
  __syncthreads();

  float acc[2][MT][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < MT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
  const int g = lane / 4, c = lane % 4;
  float wacc[2][32];  // wgmma path: two m64n64 accumulators per thread (dead code when !WG)
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int e = 0; e < 32; ++e) wacc[i][e] = 0.f;
  auto sA_of = [](uint8_t* st, int wbytes) { return st + wbytes; };

  if (warp == CWARPS) {
    // ---- producer: one thread walks this CTA's k range through the ring. W (weights: never
    // written by a kernel) is requested before griddepcontrol.wait, so with programmatic dependent
    // launch the first `pre` W boxes stream while the previous kernel is still finishing; the
    // activation boxes (possibly produced by that kernel) only after the wait.
    if (lane == 0) {
      const int nk = kb1 - kb0;
      const int pre = nk < stages ? nk : stages;
      if (nk == 0) griddep_wait();
      for (int it = 0; it < nk; ++it) {
        const int s = it % stages, r = it / stages;
        mbar_wait(&empty[s], (r & 1) ^ 1);  // fresh barrier: parity 1 passes at once
        mbar_arrive_expect_tx(&full[s], STAGE);  // OOB-filled bytes count too
        uint8_t* st = smem + s * STAGE;
        tma_load_2d(st, &tmW, &full[s], (kb0 + it) * kBK, n0);
        if (it >= pre) tma_load_2d(st + W_BYTES, &tmA, &full[s], (kb0 + it) * kBK, 0);
        if (it == pre - 1) {
          griddep_wait();
          for (int j = 0; j < pre; ++j)
            tma_load_2d(smem + j * STAGE + W_BYTES, &tmA, &full[j], (kb0 + j) * kBK, 0);
        }
      }
    }
    __syncwarp();
  } else if (WG && warp < active) {
    // ---- wgmma consumers: warpgroup q owns 64-row slabs q and q + 2 of the strip (when < T/4);
    // per stage and slab: 4 x wgmma m64n64k16 (W slab = A operand, activation box = B operand,
    // both K-major 128B-swizzled boxes exactly as TMA wrote them).
    const int q = warp / 4, slabs = T / 4;
    const bool two = q + 2 < slabs;
    int s = 0;
    uint32_t ph = 0;
    for (int kb = kb0; kb < kb1; ++kb) {
      mbar_wait(&full[s], ph);
      uint8_t* sW = smem + s * STAGE;
      const uint64_t da = make_smem_desc_sw128(sA_of(sW, W_BYTES));
      wgmma_fence();
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if (i == 1 && !two) break;
        const uint64_t dw = make_smem_desc_sw128(sW + (q + 2 * i) * 64 * 128);
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) wgmma_ss_m64n64k16(wacc[i], dw + 2 * kk, da + 2 * kk, 1);
      }
      wgmma_commit();
      wgmma_wait<0>();  // the slot's operands are read: release it
      if (lane == 0) mbar_arrive(&empty[s]);
      if (++s == stages) s = 0, ph ^= 1;
    }
  } else if (!WG && warp < active) {
    // ---- consumers: warp w owns m16 tiles w and w + 8 (when < T).
    const bool two = warp + CWARPS < T;  // warp-uniform
    int s = 0;
    uint32_t ph = 0;
    for (int kb = kb0; kb < kb1; ++kb) {
      mbar_wait(&full[s], ph);
      const uint8_t* sW = smem + s * STAGE;
      const uint8_t* sA = sW + W_BYTES;
#pragma unroll
      for (int step = 0; step < 2; ++step) {
        // Logical 16-byte chunk q of the 64-k row; 128B swizzle puts it at q ^ (row & 7), and
        // every row read here has row & 7 == g.
        const int off = ((2 * c + step) ^ g) << 4;
        uint4 xv[MT];
#pragma unroll
        for (int nt = 0; nt < MT; ++nt) xv[nt] = lds128(sA + (nt * 8 + g) * 128 + off);
        uint4 wv[2][2];
#pragma unroll
        for (int tt = 0; tt < 2; ++tt) {
          if (tt == 1 && !two) break;
          const int row = (warp + tt * CWARPS) * 16 + g;
          wv[tt][0] = lds128(sW + row * 128 + off);
          wv[tt][1] = lds128(sW + (row + 8) * 128 + off);
        }
#pragma unroll
        for (int tt = 0; tt < 2; ++tt) {
          if (tt == 1 && !two) break;
          // k values v0..v7 of the chunk: v0,v1 -> slots 2c,2c+1 and v2,v3 -> 2c+8,2c+9 of mma
          // #0 (.x, .y); v4..v7 the same slots of mma #1 (.z, .w). Same map for both operands.
          const uint32_t a0[4] = {wv[tt][0].x, wv[tt][1].x, wv[tt][0].y, wv[tt][1].y};
          const uint32_t a1[4] = {wv[tt][0].z, wv[tt][1].z, wv[tt][0].w, wv[tt][1].w};
#pragma unroll
          for (int nt = 0; nt < MT; ++nt) {
            const uint32_t b0[2] = {xv[nt].x, xv[nt].y};
            const uint32_t b1[2] = {xv[nt].z, xv[nt].w};
            mma_bf16_16816(acc[tt][nt], a0, b0);
            mma_bf16_16816(acc[tt][nt], a1, b1);
          }
        }
      }
      __syncwarp();  // all lanes' reads of slot s done before lane 0 releases it
      if (lane == 0) mbar_arrive(&empty[s]);
      if (++s == stages) s = 0, ph ^= 1;
    }
  }
  __syncthreads();  // every TMA write has landed (all full barriers waited) and been read

  // ---- park the fp32 partial: acc[tt][nt][e] = W row (tile*16 + g (+8 for e >= 2)), activation
  // row nt*8 + 2c + (e & 1).
  if (WG && warp < active) {
    // m64n64 accumulator: thread (warp wq of the warpgroup, lane) holds d[4j + 0/1] at row
    // 16 wq + lane/4 (W row of the slab), cols 8j + 2(lane%4) + 0/1 (activation rows), d[4j+2/3]
    // at row + 8.
    const int q = warp / 4, wq = warp % 4, slabs = T / 4;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int slab = q + 2 * i;
      if (slab >= slabs) break;
      const int row = slab * 64 + wq * 16 + lane / 4;
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          part[(row + (e >= 2 ? 8 : 0)) * LDR + 8 * j + 2 * (lane % 4) + (e & 1)] = wacc[i][4 * j + e];
    }
  } else if (!WG && warp < active) {
#pragma unroll
    for (int tt = 0; tt < 2; ++tt) {
      const int tile = warp + tt * CWARPS;
      if (tile >= T) break;
#pragma unroll
      for (int nt = 0; nt < MT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          part[(tile * 16 + g + (e >= 2 ? 8 : 0)) * LDR + nt * 8 + 2 * c + (e & 1)] =
              acc[tt][nt][e];
    }
  }
  griddep_wait();  // C may be read/written by the previous kernel: touch it only after it is done
  cluster_sync();  // all S partials written and visible cluster-wide

  // ---- rank r reduces rows [r0, r1) of the strip over ranks 0..S-1 in that fixed order.
  const int per = ceil_div(R, S);
  const int r0 = rank * per, r1 = min(R, r0 + per);
  const int rows = r1 - r0;
  if (rows > 0) {
    for (int idx = tid; idx < rows * (MP / 4); idx += THREADS) {
      const int r = r0 + idx % rows, m4 = idx / rows;  // consecutive threads: consecutive n
      const int n = n0 + r;
      if (n >= N) continue;
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int q = 0; q < S; ++q) {
        const float4 v = dsmem_ld_f32x4(part + r * LDR + 4 * m4, (uint32_t)q);
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      }
      const float o[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int m = 4 * m4 + j;
        if (m < M) C[(size_t)m * N + n] = __float2bfloat16_rn(o[j]);
      }
    }
  }
  cluster_sync();  // peers may still be reading our partial
#endif
}

// Clusters of S CTAs (at SMEM_OPTIN bytes each: 1 CTA per SM) the device runs at once, cached per
// (device, S): GPCs with SM counts not divisible by S leave SMs idle, so this can be < #SMs / S.
int active_clusters(int S) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, int> cache;
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find({dev, S});
  if (it != cache.end()) return it->second;
  const void* fn = reinterpret_cast<const void*>(&k11<8, true>);
  opt_in_smem(fn, SMEM_OPTIN);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(S * (device_info().sms / S), 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = SMEM_OPTIN;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = S, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, k11<8, true>, &cfg) != cudaSuccess || n < 1) {
    cudaGetLastError();  // clear; assume every SM can host one CTA
    n = device_info().sms / S;
  }
  cache.emplace(std::make_pair(dev, S), n);
  return n;
}

struct Cfg11 {
  bool wg = false;
  int T = 4, S = 1, stages = 2;
  size_t smem = 0;
  int grid = 1;
};

// Cost model (units: one 2 KB m16 x 64-k W block): a wave is done when both (a) all W bytes have
// streamed at the full-chip rate (total / #SMs per SM-slot) and (b) the busiest SM has pulled its
// own W + activation boxes (assumed able to pull ~1.1x its fair DRAM share: round 1 showed 115 of
// 132 SMs lose to 126) and done its part of the DSMEM reduction. Only single-wave configurations
// with >= MIN_STAGES ring stages are considered when one exists.
Cfg11 choose(int M, int N, int K) {
  Cfg11 best;
  best.wg = M > 16;
  const int MP = best.wg ? 64 : 8 * ceil_div(M, 8);
  const int NT = ceil_div(N, 16), KB = ceil_div(K, kBK);
  const int P = device_info().sms;
  const int tstep = best.wg ? 4 : 1;  // wgmma slabs are 64 rows
  double best_cost = 1e300;
  for (int S : {1, 2, 4, 8}) {
    const int slots = active_clusters(S) * S;
    for (int T = MIN_T; T <= MAX_T; T += tstep) {
      const int stage = T * 16 * 128 + MP * 128;
      if (RING_BUDGET / stage < MIN_STAGES) continue;
      const int rbn = ceil_div(NT, T);
      const int ctas = rbn * S;
      if (ctas > slots) continue;
      const double total = double(rbn) * T * KB / P;
      const double per = ceil_div(KB, S);
      const double busiest = per * (T + MP / 16.0) / 1.1 + (S > 1 ? T * MP / 32.0 : 0.0);
      const double cost = (total > busiest ? total : busiest) * (1.0 + 0.002 * S);
      if (cost < best_cost) best_cost = cost, best.T = T, best.S = S;
    }
  }
  if (best_cost == 1e300) best.T = 8, best.S = 1;  // N too large for one wave: stream waves
  const int stage = best.T * 16 * 128 + MP * 128;
  best.stages = RING_BUDGET / stage < MAX_STAGES ? RING_BUDGET / stage : MAX_STAGES;
  size_t ring = size_t(best.stages) * stage;
  const size_t part = size_t(best.T) * 16 * (MP + 4) * sizeof(float);
  if (part > ring) ring = part;  // (never: MIN_STAGES stages always hold the partial)
  best.smem = 1024 + ring + 2 * size_t(best.stages) * 8;
  best.grid = ceil_div(NT, best.T) * best.S;
  return best;
}

template <int MT, bool WG>
void launch_mt(const GemmBf16Args& a, const Cfg11& cf, cudaStream_t s) {
  const CUtensorMap tA = make_tensor_map_bf16_2d(a.A, a.M, a.K, a.K, MT * 8, kBK,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap tW = make_tensor_map_bf16_2d(a.W, a.N, a.K, a.K, cf.T * 16, kBK,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&k11<MT, WG>), SMEM_OPTIN);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cf.grid, 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = cf.smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cf.S, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  // Programmatic dependent launch: this grid may start while the previous kernel in the stream
  // finishes (the kernel waits with griddepcontrol.wait before touching A or C).
  // Only on a created stream: the legacy default stream keeps its implicit synchronization.
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = s != nullptr && s != cudaStreamLegacy && s != cudaStreamPerThread ? 2 : 1;
  KL_CHECK(cudaLaunchKernelEx(&cfg, k11<MT, WG>, tA, tW, a.C, a.M, a.N, a.K, cf.T, cf.stages));
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string supports_11(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.M < 1 || a.M > MAX_MP) return "decode rung takes 1 <= M <= 64";
  if (a.N < 1 || a.K < 1) return "N, K must be >= 1";
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16) || !aligned(a.C, 2))
    return "A and W must be 16-byte aligned";
  if (d.smem_optin < SMEM_OPTIN) return "needs " + std::to_string(SMEM_OPTIN) + " B of shared memory";
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}

void launch_11(const GemmBf16Args& a, cudaStream_t s) {
  const Cfg11 cf = choose(a.M, a.N, a.K);
  if (cf.wg)
    launch_mt<8, true>(a, cf, s);
  else if (a.M <= 8)
    launch_mt<1, false>(a, cf, s);
  else
    launch_mt<2, false>(a, cf, s);
}

// The (T, S, stages) the launcher would use, for tests and the doc ("T=.. S=.. stages=.. grid=..").
std::string describe_11(int M, int N, int K) {
  const Cfg11 cf = choose(M, N, K);
  return std::string(cf.wg ? "wgmma" : "mma.sync") + " T=" + std::to_string(cf.T) + " S=" + std::to_string(cf.S) +
         " stages=" + std::to_string(cf.stages) + " grid=" + std::to_string(cf.grid) +
         " smem=" + std::to_string(cf.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
