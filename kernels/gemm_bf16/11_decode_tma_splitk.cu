// 11 decode_tma_splitk — the M <= 64 stream over W, fed by TMA into a deep shared-memory ring,
// balanced over every SM by a K split inside a thread-block cluster, reduced through DSMEM.
//
// Parent: 10 decode_stream.
// Change: a producer warp issues one TMA per stage (W box 16T rows x 64 k + activation box MP x 64
//   k) into a 104 KB (2 CTAs/SM) or 208 KB (1 CTA/SM) ring; M <= 16 runs mma.sync from the
//   swizzled ring, M > 16 wgmma m64nMPk16 (W slab as A, activations as B; every warpgroup issues
//   kSlabs slabs unconditionally so ptxas does not serialize them). The host plan picks T, S (K split
//   = cluster size) and the ring so the grid runs in one wave; S partials are parked in the ring
//   and summed in rank order through DSMEM. PDL: W boxes go out before griddepcontrol.wait.
// Why: 10's register buffer keeps too few bytes in flight and N = 11008 runs in several waves.
// Limits: the K split pays a tail after the mainloop (park, cluster barrier, DSMEM reduction,
//   stores) that dominates at M = 32 / 64 (rung 15 removes the split). No workspace, no atomics:
//   graph-capturable and bitwise stable. Proxy: TMA writes complete on the full mbarrier; the ring
//   is reused for partials only after every full barrier was waited on and a consumer barrier.
#include <algorithm>
#include <cstdint>
#include <tuple>

#include "common/mma.cuh"
#include "common/pdl.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int CWARPS = 8;                  // consumer warps
constexpr int THREADS = (CWARPS + 1) * 32; // + 1 producer warp = 288
constexpr int MIN_T = 4, MAX_T = 2 * CWARPS;  // m16 tiles per CTA: 64..256 W rows (TMA box <= 256)
constexpr int MAX_STAGES = 24;
constexpr int MAX_S = 8;                   // cluster size (portable limit)
// Ring bytes per CTA, two modes: RING_2 lets TWO CTAs share an SM (2 x (~113 KB + 1 KB
// reserved) <= 228 KB), so with programmatic dependent launch the next GEMM's CTAs stream their
// first W boxes while this one runs; RING_1 gives one CTA the whole SM: twice the W bytes in flight.
constexpr int RING_2 = 104 * 1024;
constexpr int RING_1 = 208 * 1024;
constexpr int HEAD = 1024;                 // mbarriers (<= 2 x 16 x 8 B) ahead of the ring
constexpr int SLACK_MAX = 6 * 1024;        // wgmma junk-row overshoot past the last stage (see the kernel)
constexpr int SMEM_OPTIN = 224 * 1024;     // attribute + occupancy-query size (1 CTA/SM)
constexpr int MAX_MP = 64;
static_assert(MAX_T * 16 <= 256, "W box rows must fit one TMA box");
static_assert(MIN_T * 16 * 128 % 1024 == 0, "W box stays 1024-aligned (swizzle atoms)");
static_assert(1024 + HEAD + RING_1 + SLACK_MAX <= SMEM_OPTIN, "1-CTA ring fits the opt-in");
static_assert(2 * (1024 + HEAD + RING_2 + SLACK_MAX + 1024) <= 228 * 1024, "2 CTAs/SM fit");
static_assert(2 * MAX_STAGES * 8 <= HEAD, "barriers fit the head");

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
// One k16 step of a 64-row W slab (A) against the MP-row activation box (B): m64nMPk16.
template <int WN>
__device__ __forceinline__ void wg_step(float (&d)[WN / 2], uint64_t dw, uint64_t da) {
  if constexpr (WN == 32) wgmma_ss_m64n32k16(d, dw, da, 1);
  else wgmma_ss_m64n64k16(d, dw, da, 1);
}
#endif

// The kernel's compile-time configuration, one named struct per path:
//   kActTiles  activation n8 tiles (MP = 8 kActTiles rows in the activation box; TMA zero-fills
//              rows >= M);
//   kWgmmaN    0: mma.sync path (M <= 16); 32 / 64: wgmma path (M in 17..32 / 33..64, N = MP):
//              W slabs of 64 rows as A, the activation box as B (m64nNk16);
//   kSlabs     wgmma path: slabs per consumer warpgroup (both warpgroups always issue kSlabs slabs:
//              uniform, no divergent wgmma); 0: one slab, its k16 steps split over the warpgroups.
// T (m16 W tiles per CTA) and the ring depth are runtime.
template <int kRows>  // M <= kRows (8 or 16)
struct MmaSyncRows {
  static constexpr int kActTiles = kRows / 8, kWgmmaN = 0, kSlabs = 1;
};
template <int kN>  // T <= 4: one slab
struct WgmmaSplitSlab {
  static constexpr int kActTiles = kN / 8, kWgmmaN = kN, kSlabs = 0;
};
template <int kN, int kSlabsPerWarpgroup>
struct WgmmaSlabs {
  static constexpr int kActTiles = kN / 8, kWgmmaN = kN, kSlabs = kSlabsPerWarpgroup;
};

template <class Config>
__global__ void __launch_bounds__(THREADS, 2)
    gemm_bf16_decode_tma_splitk_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                                       __nv_bfloat16* __restrict__ C, int M, int N, int K, int T, int stages, int pfx, int wpre) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int MT = Config::kActTiles, WN = Config::kWgmmaN, NSL = Config::kSlabs;
  constexpr bool WG = WN > 0;
  constexpr int MP = MT * 8;              // activation rows in the box (TMA zero-fills past M)
  constexpr int LDR = MP + 4;             // partial row pitch (floats): 16-byte rows, skewed banks
  static_assert(MP <= MAX_MP, "M <= 64");
  static_assert(!WG || WN == MP, "wgmma N = activation box rows");
  static_assert(WG || NSL == 1, "NSL only matters on the wgmma path");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);  // [stages] in the 1 KB head
  uint64_t* empty = full + stages;
  uint8_t* ring = smem + HEAD;            // 1024-aligned stages: [W box R x 128 B][act box MP x 128 B]
  const int R = T * 16;                   // W rows (= output columns) of this CTA
  const int W_BYTES = R * 128;            // R rows x 64 k x 2 B (a multiple of 2 KB)
  const int STAGE = W_BYTES + MP * 128;   // + MP rows x 64 k x 2 B
  float* part = reinterpret_cast<float*>(ring);  // [R][LDR], reuses the ring after the mainloop

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int S = (int)cluster_size_11(), rank = (int)cluster_ctarank();
  const int rb = blockIdx.x / S;          // strip index; the S CTAs of a cluster share it
  const int n0 = rb * R;
  const int KB = ceil_div(K, kBK);
  const int kb0 = (int)((long long)rank * KB / S), kb1 = (int)((long long)(rank + 1) * KB / S);
  // consumer warps that release slots: mma path one per m16 tile (<= 8); wgmma path all 8
  const int active = WG ? CWARPS : (T < CWARPS ? T : CWARPS);

  // Let the next kernel in the stream (if launched with programmatic serialization) place its
  // CTAs as soon as SM room frees up; it waits for our completion before touching its A and C.
  pdl_trigger();
  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    mbar_ring_init(full, empty, stages, active);
  }
  __syncthreads();

  const int g = lane / 4, c = lane % 4;
  if (warp == CWARPS) {
    // ---- producer: one thread walks this CTA's k range through the ring. W (weights: never
    // written by a kernel) is requested before griddepcontrol.wait, so with programmatic dependent
    // launch the first `pre` (<= wpre) W boxes stream while the previous kernel is still finishing; the
    // activation boxes (possibly produced by that kernel) only after the wait. With pfx > 0 the
    // W boxes of the next pfx k-blocks past the ring are also requested into L2 (no smem), so
    // (stages + pfx) W boxes are in flight from DRAM while the ring holds `stages`.
    if (lane == 0) {
      const int nk = kb1 - kb0;
      // At most `wpre` W boxes go out before the wait and their activation boxes; the rest of the
      // ring follows box by box (W, then its activation box). Requesting the whole ring's W first
      // (WPRE_ALL, the default) queues MBs of W over the grid ahead of the first activation box,
      // which delays the first stage at M = 64; the narrow-N plan takes
      // wpre = 2 (faster single launches, slightly slower back to back, where the PDL overlap has
      // fewer W boxes to stream early).
      const int pre = min(nk, min(stages, wpre));
      for (int j = stages; j < nk && j < stages + pfx; ++j) tma_prefetch_l2_2d(&tmW, (kb0 + j) * kBK, n0);
      if (nk == 0) pdl_wait();
      for (int it = 0; it < nk; ++it) {
        const int s = it % stages, r = it / stages;
        mbar_wait(&empty[s], (r & 1) ^ 1);  // fresh barrier: parity 1 passes at once
        mbar_arrive_expect_tx(&full[s], STAGE);
        uint8_t* st = ring + s * STAGE;
        tma_load_2d(st, &tmW, &full[s], (kb0 + it) * kBK, n0);
        if (pfx > 0 && it >= pre && it + pfx < nk) tma_prefetch_l2_2d(&tmW, (kb0 + it + pfx) * kBK, n0);
        if (it >= pre) tma_load_2d(st + W_BYTES, &tmA, &full[s], (kb0 + it) * kBK, 0);
        if (it == pre - 1) {
          pdl_wait();
          for (int j = 0; j < pre; ++j)
            tma_load_2d(ring + j * STAGE + W_BYTES, &tmA, &full[j], (kb0 + j) * kBK, 0);
        }
      }
    }
    __syncwarp();
  } else if constexpr (WG) {
    // ---- wgmma consumers: warpgroup q (0, 1) owns 64-row slabs q, q + 2, ... (NSL of them).
    // slabs = ceil(T / 4); a slab index past the last one re-reads slab 0 into an accumulator that
    // is dropped (keeps every wgmma unconditional). The last real slab may extend past the R rows
    // of the W box: those rows read the activation box after it (or, for MP = 32 and T % 4 == 1,
    // up to 2 KB of the next stage / the slack past the ring): junk rows of the accumulator, never
    // stored. Per stage and slab: 4 x m64nMPk16, both operands K-major 128B-swizzled boxes exactly
    // as TMA wrote them.
    // NSL = 0 (T <= 4: one slab): both warpgroups take the slab, warpgroup q the k16 steps 2q and
    // 2q + 1 of every stage, into its own accumulator; the two are summed in the park below.
    constexpr bool KH = NSL == 0;
    constexpr int NS = KH ? 1 : NSL;
    const int q = warp / 4, wq = warp % 4;
    const int slabs = (T + 3) / 4;
    float wacc[NS][WN / 2];
#pragma unroll
    for (int i = 0; i < NS; ++i)
#pragma unroll
      for (int e = 0; e < WN / 2; ++e) wacc[i][e] = 0.f;
    uint32_t slab_off[NS];
#pragma unroll
    for (int i = 0; i < NS; ++i) slab_off[i] = KH ? 0 : (q + 2 * i < slabs ? q + 2 * i : 0) * 64 * 128;
    int s = 0;
    uint32_t ph = 0;
    for (int kb = kb0; kb < kb1; ++kb) {
      mbar_wait(&full[s], ph);
      uint8_t* sW = ring + s * STAGE;
      const uint64_t da = make_smem_desc_sw128(sW + W_BYTES);
      wgmma_fence();
      constexpr int K0 = KH ? 2 : 0, NK = KH ? 2 : kBK / 16;  // k16 steps per warpgroup
      const int k0 = K0 * q;  // (0 unless KH)
#pragma unroll
      for (int i = 0; i < NS; ++i) {
        const uint64_t dw = make_smem_desc_sw128(sW + slab_off[i]);
#pragma unroll
        for (int kk = 0; kk < NK; ++kk) wg_step<WN>(wacc[i], dw + 2 * (k0 + kk), da + 2 * (k0 + kk));
      }
      wgmma_commit();
      // One group stays in flight: once the previous stage's group completes, its slot is
      // released; this stage's wgmmas overlap the next stage's wait (draining every stage with
      // wait_group 0 is slower at M = 64).
      wgmma_wait<1>();
      if (kb > kb0 && lane == 0) mbar_arrive(&empty[s == 0 ? stages - 1 : s - 1]);
      if (++s == stages) s = 0, ph ^= 1;
    }
    wgmma_wait<0>();  // (the last stage needs no release: the producer is done)
    // Named barrier of the 8 consumer warps: every full barrier has been waited (all TMA writes
    // landed) and every wgmma read of the ring is complete before any warp parks into it.
    named_barrier_sync(1, CWARPS * 32);
    // park: thread (wq, lane) holds d[4j + 0/1] at slab row 16 wq + g, activation rows
    // 8j + 2c + 0/1; d[4j + 2/3] at slab row + 8.
    if constexpr (KH) {
      // warpgroup 0 stores its half of the k steps, then warpgroup 1 adds its half (fixed order)
      const int row = wq * 16 + g;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (q == h) {
#pragma unroll
          for (int j = 0; j < WN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int rr = row + (e >= 2 ? 8 : 0);
              float* d = &part[rr * LDR + 8 * j + 2 * c + (e & 1)];
              if (rr < R) *d = h == 0 ? wacc[0][4 * j + e] : *d + wacc[0][4 * j + e];
            }
        }
        if (h == 0) named_barrier_sync(1, CWARPS * 32);
      }
    } else {
#pragma unroll
      for (int i = 0; i < NS; ++i) {
        const int slab = q + 2 * i;
        if (slab >= slabs) continue;
        const int row = slab * 64 + wq * 16 + g;
#pragma unroll
        for (int j = 0; j < WN / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int rr = row + (e >= 2 ? 8 : 0);
            if (rr < R) part[rr * LDR + 8 * j + 2 * c + (e & 1)] = wacc[i][4 * j + e];
          }
      }
    }
  } else {
    // ---- mma.sync consumers: warp w owns m16 tiles w and w + 8 (when < T).
    float acc[2][MT][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < MT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const bool two = warp + CWARPS < T;  // warp-uniform
    if (warp < active) {
      int s = 0;
      uint32_t ph = 0;
      for (int kb = kb0; kb < kb1; ++kb) {
        mbar_wait(&full[s], ph);
        const uint8_t* sW = ring + s * STAGE;
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
    // Consumer warps only (the producer never touches the ring again): all TMA writes landed
    // (active warps waited every full barrier) and all ld.shared of the ring done.
    named_barrier_sync(1, CWARPS * 32);
    // park: acc[tt][nt][e] = W row (tile*16 + g (+8 for e >= 2)), activation row nt*8 + 2c + (e & 1).
    if (warp < active) {
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
  }
  pdl_wait();  // C may be read/written by the previous kernel: touch it only after it is done
  cluster_sync();  // all S partials written and visible cluster-wide

  // ---- rank r reduces rows [r0, r1) of the strip over ranks 0..S-1 in that fixed order. The S
  // remote loads of an element are issued back to back (independent), then summed in rank order.
  // (Issuing every load of up to 8 / S elements before summing any is slower at M = 64, so the
  // loop stays element by element.)
  const int per = ceil_div(R, S);
  const int r0 = rank * per, r1 = min(R, r0 + per);
  const int rows = r1 - r0;
  if (rows > 0) {
    for (int idx = tid; idx < rows * (MP / 4); idx += THREADS) {
      const int r = r0 + idx % rows, m4 = idx / rows;  // consecutive threads: consecutive n
      const int n = n0 + r;
      if (n >= N) continue;
      float4 v[MAX_S];
#pragma unroll
      for (int q = 0; q < MAX_S; ++q)
        if (q < S) v[q] = dsmem_ld_f32x4(part + r * LDR + 4 * m4, (uint32_t)q);
      float4 sum = v[0];
#pragma unroll
      for (int q = 1; q < MAX_S; ++q)
        if (q < S) sum.x += v[q].x, sum.y += v[q].y, sum.z += v[q].z, sum.w += v[q].w;
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

// Clusters of S CTAs the device runs at once with `smem` bytes of dynamic shared memory per CTA
// (kl::resident_clusters, cached): GPCs with SM counts not divisible by S leave SMs idle, so at
// SMEM_OPTIN (1 CTA/SM) this can be < #SMs / S (H200: clusters of 4 and 8 do not cover 128 SMs).
int active_clusters(int S, int smem = SMEM_OPTIN) {
  const void* fn = reinterpret_cast<const void*>(&gemm_bf16_decode_tma_splitk_kernel<WgmmaSlabs<64, 2>>);
  opt_in_smem(fn, SMEM_OPTIN);
  return resident_clusters(fn, S, THREADS, smem);
}

constexpr int WPRE_ALL = 1 << 20;  // wpre: the whole ring's W before griddepcontrol.wait
struct SplitKPlan {
  int wn = 0;      // 0: mma.sync; 32 / 64: wgmma m64nWN
  int mt = 1;      // activation n8 tiles in the box (MP = 8 mt)
  int nsl = 1;     // wgmma slabs per consumer warpgroup (0: one slab, k steps split)
  int T = 4, S = 1, stages = 2;
  int ring_mode = 2;  // CTAs per SM the ring is sized for (2: RING_2, 1: RING_1)
  int pfx = 0;        // W boxes prefetched into L2 beyond the ring (k-blocks)
  int wpre = WPRE_ALL;  // W boxes requested before griddepcontrol.wait (capped by the ring)
  size_t smem = 0;
  int grid = 1;
};

// Everything but (T, S, ring mode) follows from the shape; stages fill the ring budget.
SplitKPlan make_cfg(int M, int N, int K, int T, int S, int ring_mode, int pfx = 0, int wpre = WPRE_ALL) {
  (void)K;
  SplitKPlan c;
  c.pfx = std::max(0, pfx);
  c.wpre = std::max(1, wpre);
  c.wn = M <= 16 ? 0 : M <= 32 ? 32 : 64;
  c.mt = c.wn ? c.wn / 8 : (M <= 8 ? 1 : 2);
  c.T = std::min(std::max(T, MIN_T), MAX_T);
  c.S = std::min(std::max(S, 1), MAX_S);
  c.ring_mode = ring_mode == 1 ? 1 : 2;
  const int slabs = (c.T + 3) / 4;
  c.nsl = c.wn ? (slabs == 1 ? 0 : (slabs + 1) / 2) : 1;  // 0: one slab, k steps split (KH)
  const int MP = c.mt * 8;
  const int stage = c.T * 16 * 128 + MP * 128;
  const int budget = c.ring_mode == 1 ? RING_1 : RING_2;
  c.stages = std::max(2, std::min(budget / stage, MAX_STAGES));
  size_t ring = size_t(c.stages) * stage;
  const size_t part = size_t(c.T) * 16 * (MP + 4) * sizeof(float);
  if (part > ring) ring = part;  // (only with forced tiny rings)
  // wgmma reads whole 64-row slabs: the last stage's last slab may run past the ring's end.
  const int over = c.wn ? slabs * 64 * 128 - stage : 0;
  c.smem = 1024 + HEAD + ring + size_t(over > 0 ? over : 0);
  c.grid = ceil_div(ceil_div(N, 16), c.T) * c.S;
  return c;
}

// Fallback cost model (microseconds) for shapes the rules in choose_uncached() do not fit
// (N > ~16.9 K). NOT calibrated: the sweep contradicted its in-flight term on the default
// shapes (the 208 KB ring loses where it means two waves; the L2 prefetch loses everywhere), which
// is why the rules come first. A CTA's time is its own W bytes at the rate its ring sustains — at
// most `inflight / LAT` (Little's law) and at most 1.1x its fair share of the chip's bandwidth —
// plus its activation boxes (L2) and its share of the DSMEM reduction; the launch is done when the
// slowest CTA is and when all W has streamed. Only one-wave grids are considered.
constexpr double BW = 4.3e6;     // bytes/us: the chip's W stream (about the copy roof)
constexpr double LAT = 2.0;      // us: loaded DRAM latency the ring must cover
constexpr double L2BW = 9.0e6;   // bytes/us: activation boxes from L2, whole chip
constexpr double DSM = 60e3;     // bytes/us per SM: DSMEM reduction reads
double cost11(const SplitKPlan& c, int M, int N, int K) {
  (void)M;
  const int P = device_info().sms;
  const int KB = ceil_div(K, kBK);
  const int MP = c.mt * 8;
  const double kbl = ceil_div(KB, c.S);                   // k-blocks of the busiest CTA
  const double w_cta = kbl * c.T * 16 * 128.0;
  const double a_cta = kbl * MP * 128.0;
  const double inflight = double(c.stages) * c.T * 16 * 128;
  const double rate = std::min(1.1 * BW / P, inflight / LAT);
  const double t_cta = w_cta / rate + a_cta / (L2BW / P) * 0.5 +
                       (c.S > 1 ? c.T * 16.0 * MP * 4 / DSM : 0.0);
  const double t_all = 2.0 * N * double(K) / BW;
  return std::max(t_cta, t_all);
}

// Whether the grid runs as ONE wave with at most one CTA per SM: clusters of S CTAs must all be
// co-resident (1-CTA/SM rings: at SMEM_OPTIN; 2-CTA/SM rings: at their own size).
bool one_wave(const SplitKPlan& c) {
  if (c.grid > device_info().sms) return false;
  const int smem = c.ring_mode == 1 ? SMEM_OPTIN : static_cast<int>(c.smem);
  return c.grid <= active_clusters(c.S, smem) * c.S;
}

// The plan. First rules fitted to a sweep of every (T, S, ring) on the decode shapes, each taking
// the smallest T >= t0 of its (S, ring) that runs in one wave:
//  * M <= 16 (mma.sync): S = 4 on 2-CTA/SM rings, T >= 12 (N = 4096: 88 CTAs of 192 rows; against
//    T = 8 (128 CTAs): better single launches everywhere, back to back mixed; T = 8 on 1-CTA/SM
//    rings is two waves: clusters of 4 at 215 KB do not cover 128 SMs); else S = 2 on 1-CTA/SM
//    rings, T >= 11 (N = 11008: 126 CTAs);
//  * M > 16 (wgmma): S = 2 on 1-CTA/SM rings, T >= 8 (N = 4096: 64 CTAs of 128 rows, each half
//    of K; fewer, fatter CTAs beat T = 6 (86 CTAs) and the 128-CTA plans; N = 11008: T = 11,
//    126 CTAs).
// Then (shapes no rule fits, e.g. N > 16.9 K) the cost model over every (T, S, ring) in one wave.
// The rules are fitted to N in {4096, 11008}, K in {4096, 11008}: other shapes get a correct but
// untuned plan (e.g. N = 2048 at M <= 16: 44 CTAs).
SplitKPlan choose_uncached(int M, int N, int K) {
  struct Rule { int S, mode, t0, t1, wpre; };
  // M > 16 only, first: where 64-row strips x 2 K halves fit one wave (N <= ~8.4 K), T = 4 (one
  // slab, k steps split over the two warpgroups), S = 2, 1-CTA/SM rings, two W boxes before the
  // PDL wait: faster than T = 8 single and back to back at K = 4096 and 11008. The same cut at
  // M <= 16 (mma.sync path) is not consistently faster, so M <= 16 keeps the rules below. Then
  // the general rules (N = 11008 keeps T = 11, S = 2: 126 CTAs).
  const Rule small_m[] = {{4, 2, 12, MAX_T, WPRE_ALL}, {2, 1, 11, MAX_T, WPRE_ALL}};
  const Rule large_m[] = {{2, 1, 4, 4, 2}, {2, 1, 8, MAX_T, WPRE_ALL}};
  const Rule* rules = M <= 16 ? small_m : large_m;
  const int nrules = 2;
  for (int r = 0; r < nrules; ++r)
    for (int T = rules[r].t0; T <= rules[r].t1; ++T) {
      const SplitKPlan c = make_cfg(M, N, K, T, rules[r].S, rules[r].mode, 0, rules[r].wpre);
      if (c.T == T && c.stages >= 3 && one_wave(c)) return c;
    }
  SplitKPlan best;
  double best_cost = 1e300;
  bool found = false;
  for (int mode : {2, 1})
    for (int S : {1, 2, 3, 4, 6, 8})
      for (int T = MIN_T; T <= MAX_T; ++T) {
        const SplitKPlan c = make_cfg(M, N, K, T, S, mode);
        if (c.T != T || c.stages < 3 || !one_wave(c)) continue;
        const double cost = cost11(c, M, N, K) * (1.0 + 0.002 * S);
        if (cost < best_cost) best_cost = cost, best = c, found = true;
      }
  if (!found) best = make_cfg(M, N, K, 8, 1, 1);  // N too large for one wave: stream waves
  return best;
}

// The plan per (device, M, N, K), computed once: later launches make no search and no CUDA call.
SplitKPlan choose(int M, int N, int K) {
  static PlanCache<std::tuple<int, int, int, int>, SplitKPlan> cache;
  return cache.get(std::make_tuple(device_info().id, M, N, K), [&] { return choose_uncached(M, N, K); });
}

template <class Config>
void launch_config(const GemmBf16Args& a, const SplitKPlan& cf, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, Config::kActTiles * 8);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, cf.T * 16);
  opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_decode_tma_splitk_kernel<Config>), SMEM_OPTIN);
  // Programmatic dependent launch: this grid may start while the previous kernel in the stream
  // finishes (the kernel waits with griddepcontrol.wait before touching A or C). Only on a created
  // stream: the legacy default stream keeps its implicit synchronization. Clusters of S CTAs
  // (the attribute is set for S = 1 too, as before the launch helper).
  pdl_launch_cluster(gemm_bf16_decode_tma_splitk_kernel<Config>, dim3(cf.grid), dim3(THREADS), cf.smem, s, pdl_stream(s),
                     cf.S, tA, tW, a.C, a.M, a.N, a.K, cf.T, cf.stages, cf.pfx, cf.wpre);
}

void launch_cfg(const GemmBf16Args& a, const SplitKPlan& cf, cudaStream_t s) {
  if (cf.wn == 64)
    cf.nsl == 0   ? launch_config<WgmmaSplitSlab<64>>(a, cf, s)
    : cf.nsl == 1 ? launch_config<WgmmaSlabs<64, 1>>(a, cf, s)
                  : launch_config<WgmmaSlabs<64, 2>>(a, cf, s);
  else if (cf.wn == 32)
    cf.nsl == 0   ? launch_config<WgmmaSplitSlab<32>>(a, cf, s)
    : cf.nsl == 1 ? launch_config<WgmmaSlabs<32, 1>>(a, cf, s)
                  : launch_config<WgmmaSlabs<32, 2>>(a, cf, s);
  else if (cf.mt == 1)
    launch_config<MmaSyncRows<8>>(a, cf, s);
  else
    launch_config<MmaSyncRows<16>>(a, cf, s);
}

std::string describe(const SplitKPlan& cf) {
  return std::string(cf.wn ? (cf.wn == 32 ? "wgmma-n32" : "wgmma-n64") : "mma.sync") +
         " T=" + std::to_string(cf.T) + " S=" + std::to_string(cf.S) +
         " ring=" + std::to_string(cf.ring_mode) + "/SM stages=" + std::to_string(cf.stages) +
         " pfx=" + std::to_string(cf.pfx) + " wpre=" + std::to_string(std::min(cf.wpre, cf.stages)) +
         " grid=" + std::to_string(cf.grid) +
         " smem=" + std::to_string(cf.smem);
}

}  // namespace

std::string gemm_bf16_decode_tma_splitk_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = gemm_bf16_check_args(a);
  if (why.empty()) why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.M > MAX_MP) return "decode rung takes 1 <= M <= 64";
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16) || !aligned(a.C, 2))
    return "A and W must be 16-byte aligned";
  if (d.smem_optin < SMEM_OPTIN) return "needs " + std::to_string(SMEM_OPTIN) + " B of shared memory";
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}

void gemm_bf16_decode_tma_splitk_launch(const GemmBf16Args& a, cudaStream_t s) { launch_cfg(a, choose(a.M, a.N, a.K), s); }

void gemm_bf16_decode_tma_splitk_launch_forced(const GemmBf16Args& a, int T, int S, int ring_mode, int pfx, cudaStream_t s) {
  launch_cfg(a, make_cfg(a.M, a.N, a.K, T, S, ring_mode, pfx), s);
}

// The configuration the launcher would use, for tests and the doc.
std::string gemm_bf16_decode_tma_splitk_describe(int M, int N, int K) { return describe(choose(M, N, K)); }
int gemm_bf16_decode_tma_splitk_grid(int M, int N, int K) { return choose(M, N, K).grid; }
int gemm_bf16_decode_tma_splitk_grid_forced(int M, int N, int K, int T, int S, int ring_mode) {
  return make_cfg(M, N, K, T, S, ring_mode).grid;
}

}  // namespace hopper_gemm
}  // namespace kl
