// Rung 15 — decode_multicast: the M <= 64 stream over W with no K split and no reduction: the
// activations are the wgmma A operand (m64), a 32-row W strip the B operand (n32), every CTA runs
// the whole K, and the two CTAs of a cluster (neighbouring strips) share the activation box by
// TMA multicast.
//
// Change from rung 11 (the previous decode rung): which operand is which, and so how the work is
// cut. Rung 11 put W in the wgmma A slot (m64: 64 W rows per slab), so N = 4096 has only 64 strips
// and it split K over a 2-CTA cluster to reach 128 CTAs; the two halves are summed through DSMEM
// after a cluster barrier: 2.2-3.0 us of tail after the mainloop at M = 32 / 64 (tools/gemm_trace,
// docs/gemm_bf16.md "The decode rung, fourth pass"), where cuBLAS (ncu:
// nvjet_sm90_tst_64x32_64x16_1x2, 128 CTAs in clusters of 2) has none. Here the activation box
// (MP = 16, 32 or 64 rows: M rounded up, zero-filled by TMA past M) is A and W is B, so a CTA owns
// 32 output columns over the whole K: N = 4096 -> 128 CTAs, C written straight from the
// accumulators. What stays from rung 11: one producer warp issuing TMA into a full/empty mbarrier
// ring, programmatic dependent launch with the first W boxes requested before
// griddepcontrol.wait, CTAs per SM (and so the ring size) chosen so the grid runs in one wave.
//  * Multicast: cluster rank r loads rows [r MP/2, (r+1) MP/2) of each activation box and
//    multicasts them into both CTAs; each CTA's full barrier expects its own W box plus the whole
//    activation box, and a slot is free only when the consumers of BOTH CTAs have released it
//    (empty[s] counts 4 consumer warps x 2 CTAs, arrivals by mapa + mbarrier.arrive as rung 09).
//    Per CTA the L2 -> SM activation bytes halve (at M = 64 and N = 4096 they would otherwise be
//    64 MB per launch against 32 MB of W).
//  * Two consumer warpgroups take alternate k-blocks (even / odd) into their own accumulators;
//    warpgroup 1 parks its 64 x 32 fp32 block in the drained ring and warpgroup 0 adds it (fixed
//    order: bitwise repeatable) and stores bf16 C. One warpgroup per stage keeps its wgmma latency
//    off the stream (each has two stages of slack: wait_group 1, then the other warpgroup's stage).
//  * Stage = [activation box MP x 128 B][W box 32 x 128 B], both 1024-aligned (swizzle atoms). The
//    m64 A descriptor reads 64 rows: with MP < 64 the rows past MP read the W box and the next
//    stage (or the slack after the ring): junk accumulator rows >= M, never stored.
//  * An odd number of strips leaves the last cluster's rank 1 without columns: it still loads
//    (its activation half feeds its peer; its W box start is clamped into the tensor) and stores
//    nothing. Activation halves wholly past M start at row M - 1 (clamped): junk rows again.
// Proxy rule relied on: TMA (async proxy) writes complete on the full mbarrier before the
// consumers' wgmma reads; a consumer warp releases a slot (remote arrive, .release.cta default)
// after wgmma.wait_group has completed the reads of it. The ring is reused for warpgroup 1's
// partial only after both warpgroups have waited on every full barrier (every TMA write, own and
// the peer's multicast, has landed) and drained their wgmmas (named barrier of the 256 consumers);
// a final cluster barrier keeps each CTA's barriers alive until its peer stops arriving on them.
// Measured: see docs/gemm_bf16.md "Rung 15".
#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "common/pdl.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BN = 32;                     // W rows (output columns) per CTA: wgmma n32
constexpr int CL = 2;                      // cluster: two neighbouring strips share the activations
constexpr int CWARPS = 8;                  // two consumer warpgroups
constexpr int THREADS = CWARPS * 32 + 32;  // + one producer warp = 288
constexpr int W_BYTES = BN * kBK * 2;      // 4 KB
constexpr int HEAD = 1024;                 // mbarriers (<= 2 x 64 x 8 B) ahead of the ring
constexpr int MAX_STAGES = 64;
constexpr int SMEM_OPTIN = 227 * 1024;
constexpr int MAX_CPS = 4;                 // CTAs per SM the plan may size the ring for
static_assert(2 * MAX_STAGES * 8 <= HEAD, "barriers fit the head");
static_assert(W_BYTES % 1024 == 0, "stages stay 1024-aligned");

// Bytes of one stage for MP activation rows, and the slack the m64 A descriptor may read past the
// last stage (64 rows from the activation box's start).
__host__ __device__ constexpr int stage_bytes(int MP) { return MP * 128 + W_BYTES; }
__host__ __device__ constexpr int slack_bytes(int MP) { return 64 * 128 > stage_bytes(MP) ? 64 * 128 - stage_bytes(MP) : 0; }

// P (probe, experiment rows 75-79 only; 0 everywhere else), bits: 1 = no multicast (no cluster:
// each CTA loads its whole activation box), 4 = one producer lane, 8 = stagger (cluster
// c starts its walk over K at k-block c * num_k / clusters), 16 = no L2 cache policies, 32 = two
// producer lanes.
template <int MP, int P = 0>
__global__ void __launch_bounds__(THREADS, 3)  // <= 72 registers: 3 CTAs per SM fit
    k15(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
        __nv_bfloat16* __restrict__ C, int M, int N, int K, int stages, int wpre) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(MP == 16 || MP == 32 || MP == 64, "activation box rows");
  constexpr bool MC = (P & 1) == 0;            // activation box multicast in a 2-CTA cluster
  constexpr int NCL = MC ? CL : 1;             // CTAs sharing a slot
  constexpr int MH = MP / NCL;                 // activation rows this CTA loads (and multicasts)
  constexpr int STAGE = stage_bytes(MP);
  static_assert((MH * 128) % 1024 == 0, "each half starts on a swizzle atom");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);  // [stages] in the head
  uint64_t* empty = full + stages;
  uint8_t* ring = smem + HEAD;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rank = MC ? static_cast<int>(cluster_ctarank()) : 0;
  const int n0 = blockIdx.x * BN;  // this CTA's first output column (>= N: the spare of a pair)
  const int num_k = ceil_div(K, kBK);

  // The next kernel of the stream may place its CTAs as ours leave (it waits for our completion
  // before reading what we write).
  pdl_trigger();
  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    mbar_ring_init(full, empty, stages, 4 * NCL);
  }
  cluster_sync();  // both CTAs' barriers initialised before any multicast or remote arrive

  if (warp == CWARPS) {
    // ---- producer: lanes 0..NL-1 each own every NL-th k-block (lane j: k-blocks j, j + NL, ...).
    // One thread walking the ring issued a stage every ~300 ns (ncu: the consumers' full-barrier
    // waits held 41% of the samples, DRAM 23% busy): each k-block is a chain of dependent steps
    // (slot arithmetic, the empty-barrier try_wait, expect_tx, two TMA issues) that one thread
    // runs in series. NL lanes of one warp run the same chain side by side, so a pass issues NL
    // stages. Slots and phases advance by addition (no division by the runtime ring depth).
    // W (weights, never written by a kernel) may be requested before griddepcontrol.wait; the
    // activations (possibly the previous kernel's output) only after: the first `pre` stages get
    // their W box, every lane waits, then their activation halves.
    constexpr int NL = (P & 4) ? 1 : (P & 32) ? 2 : 4;  // divides stages (make_cfg: a multiple of 4)
    if (lane < NL) {
      const int pre = min(num_k, min(stages, wpre));
      const int wrow = min(n0, N - 1);  // spare CTA: clamped, its products are dropped
      // Rank 1's half when M <= MP / 2 would be rows wholly past M: not loaded at all (its smem
      // rows stay junk; accumulator rows >= M are never stored). Both CTAs expect the same bytes.
      const bool two = !MC || M > MH;
      const bool mine = rank == 0 || two;
      const uint32_t bytes = W_BYTES + (MC ? (two ? 2 : 1) * MH * 128 : MP * 128);
      // Probe P & 8, stagger: cluster c walks K from k-block c * num_k / clusters (wrapping), so
      // the clusters read different activation lines at any moment (measured slower: run 2).
      const int clusters = gridDim.x / NCL, cid = blockIdx.x / NCL;
      const int k_off = (P & 8) ? static_cast<int>((long long)cid * num_k / clusters) : 0;
      auto kcol = [&](int kb) { const int k = kb + k_off; return (k < num_k ? k : k - num_k) * kBK; };
      // L2 policies: W is read once (evict first), the activations by every cluster (evict last).
      const uint64_t pol_w = (P & 16) ? 0 : l2_policy_evict_first();
      const uint64_t pol_a = (P & 16) ? 0 : l2_policy_evict_last();
      auto load_w = [&](int kb, int s) {
        uint8_t* dst = ring + s * STAGE + MP * 128;
        if constexpr ((P & 16) != 0) tma_load_2d(dst, &tmW, &full[s], kcol(kb), wrow);
        else tma_load_2d_hint(dst, &tmW, &full[s], kcol(kb), wrow, pol_w);
      };
      auto load_a = [&](int kb, int s) {
        uint8_t* dst = ring + s * STAGE + rank * MH * 128;
        if constexpr (MC) {
          if (mine) {
            if constexpr ((P & 16) != 0)
              tma_load_2d_multicast(dst, &tmA, &full[s], kcol(kb), rank * MH, uint16_t((1u << CL) - 1));
            else
              tma_load_2d_multicast_hint(dst, &tmA, &full[s], kcol(kb), rank * MH, uint16_t((1u << CL) - 1), pol_a);
          }
        } else {
          if constexpr ((P & 16) != 0) tma_load_2d(dst, &tmA, &full[s], kcol(kb), 0);
          else tma_load_2d_hint(dst, &tmA, &full[s], kcol(kb), 0, pol_a);
        }
      };
      // The first `pre` k-blocks use slots 0..pre-1 in their first round (free: no wait).
      for (int kb = lane; kb < pre; kb += NL) {
        mbar_arrive_expect_tx(&full[kb], bytes);  // own W box + the activation halves
        load_w(kb, kb);
      }
      pdl_wait();
      for (int kb = lane; kb < pre; kb += NL) load_a(kb, kb);
      int s = pre + lane;
      uint32_t ph = 0;  // round parity of slot s
      if (s >= stages) s -= stages, ph = 1;
      for (int kb = pre + lane; kb < num_k; kb += NL) {
        mbar_wait(&empty[s], ph ^ 1);  // both CTAs' consumers released slot s (round 0: at once)
        mbar_arrive_expect_tx(&full[s], bytes);
        load_w(kb, s);
        load_a(kb, s);
        s += NL;
        if (s >= stages) s -= stages, ph ^= 1;
      }
    }
    __syncwarp();
  } else {
    // ---- consumers: warpgroup q takes k-blocks q, q + 2, ... into its own accumulator; slots
    // and phases advance by addition.
    const int q = warp / 4, t128 = tid % 128;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    int s = q, prev = -1;  // prev: the slot of this warpgroup's previous k-block, released one late
    uint32_t ph = 0;
    for (int kb = q; kb < num_k; kb += 2) {
      mbar_wait(&full[s], ph);
      uint8_t* st = ring + s * STAGE;
      const uint64_t da = make_smem_desc_sw128(st);
      const uint64_t db = make_smem_desc_sw128(st + MP * 128);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) wgmma_ss_m64n32k16(acc, da + 2 * kk, db + 2 * kk, 1);
      wgmma_commit();
      wgmma_wait<1>();  // the group of `prev` has finished reading its slot
      if (prev >= 0 && lane == 0)
#pragma unroll
        for (int c = 0; c < NCL; ++c) mbar_arrive_remote(&empty[prev], c);
      prev = s;
      s += 2;
      if (s >= stages) s -= stages, ph ^= 1;
    }
    wgmma_wait<0>();
    if (prev >= 0 && lane == 0)
#pragma unroll
      for (int c = 0; c < NCL; ++c) mbar_arrive_remote(&empty[prev], c);
    // Every full barrier has been waited on by one of the two warpgroups (all TMA writes into
    // this CTA landed) and every wgmma read is complete: the ring is free for the partial.
    named_barrier_sync(1, CWARPS * 32);
    float* part = reinterpret_cast<float*>(ring) + t128 * (BN / 2);  // thread-private 64 B
    if (q == 1) {
#pragma unroll
      for (int i = 0; i < BN / 2; i += 4)
        *reinterpret_cast<float4*>(part + i) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
    }
    named_barrier_sync(1, CWARPS * 32);
    if (q == 0) {
      // Same accumulator layout in both warpgroups: thread t128 adds what thread t128 parked.
#pragma unroll
      for (int i = 0; i < BN / 2; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(part + i);
        acc[i] += v.x, acc[i + 1] += v.y, acc[i + 2] += v.z, acc[i + 3] += v.w;
      }
      store_acc_bounded<BN>(acc, C, M, N, 0, n0, t128);  // rows >= M, columns >= N skipped
    }
  }
  cluster_sync();  // the peer may still arrive on our empty barriers until it is done
#endif
}

// Clusters of CL CTAs that fit the device at once with `smem` bytes per CTA (cached).
template <int MP>
int clusters_at(size_t smem) {
  const void* fn = reinterpret_cast<const void*>(&k15<MP>);
  opt_in_smem(fn, SMEM_OPTIN);
  return resident_clusters(fn, CL, THREADS, smem);
}

struct Cfg15 {
  int mp = 64, cps = 1, stages = 2, wpre = 2, grid = CL;
  size_t smem = 0;
};

// The ring for `cps` CTAs per SM: 228 KB of shared memory per SM, 1 KB reserved per CTA, the
// 1024-byte alignment pad, the head and the slack; at most MAX_STAGES stages.
Cfg15 make_cfg(int M, int N, int cps, int wpre) {
  Cfg15 c;
  c.mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  c.cps = std::clamp(cps, 1, MAX_CPS);
  c.wpre = std::max(1, wpre);
  const int per_cta = std::min(SMEM_OPTIN, 228 * 1024 / c.cps - 1024);
  const int fixed = 1024 + HEAD + slack_bytes(c.mp);
  // A multiple of 4 (>= 4): slot s is then always filled by the same producer lane and consumed
  // by the same warpgroup, so every waiter sees the rounds of its slots in order. (With 11 stages
  // and 4 lanes, consecutive rounds of a slot went to different lanes; a lane two rounds ahead
  // passed the empty-barrier parity test of a phase two back and re-armed a full barrier still
  // pending: compute-sanitizer flagged the arrive.expect_tx, the bench died with a launch failure
  // at 1x11008x4096.) At least 4 also because a warpgroup holds its previous slot until its next
  // stage's wgmmas are issued: with the two interleaved, 3 slots can be held while the 4th loads.
  c.stages = std::clamp((per_cta - fixed) / stage_bytes(c.mp) / 4 * 4, 4, MAX_STAGES);
  c.smem = size_t(fixed) + size_t(c.stages) * stage_bytes(c.mp);
  c.grid = CL * ceil_div(ceil_div(N, BN), CL);
  return c;
}

int clusters_for(const Cfg15& c) {
  switch (c.mp) {
    case 16: return clusters_at<16>(c.smem);
    case 32: return clusters_at<32>(c.smem);
    default: return clusters_at<64>(c.smem);
  }
}

// The plan: the deepest ring (fewest CTAs per SM) with which the whole grid is resident at once.
// Two W boxes go out before the PDL wait (rung 11 v4's measured choice at M > 16).
Cfg15 choose_uncached(int M, int N) {
  for (int cps = 1; cps <= MAX_CPS; ++cps) {
    const Cfg15 c = make_cfg(M, N, cps, 2);
    if (c.grid <= CL * clusters_for(c)) return c;
  }
  return make_cfg(M, N, MAX_CPS, 2);  // N too large for one wave: waves of the 4-per-SM ring
}

Cfg15 choose(int M, int N) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, Cfg15> cache;
  const auto key = std::make_tuple(device_info().id, M <= 16 ? 16 : M <= 32 ? 32 : 64, N);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const Cfg15 c = choose_uncached(M, N);
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, c);
  return c;
}

template <int MP, int P = 0>
void launch_mp(const GemmBf16Args& a, const Cfg15& cf, cudaStream_t s) {
  constexpr bool MC = (P & 1) == 0;
  KL_REQUIRE(cf.stages % 4 == 0 && cf.stages >= 4, "rung 15: ring depth " << cf.stages << " not a multiple of 4");
  const CUtensorMap tA = make_tensor_map_bf16_2d(a.A, a.M, a.K, a.K, MC ? MP / CL : MP, kBK,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap tW = make_tensor_map_bf16_2d(a.W, a.N, a.K, a.K, BN, kBK,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&k15<MP, P>), SMEM_OPTIN);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cf.grid, 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = cf.smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (MC) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = CL, attr[n].val.clusterDim.y = 1, attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (pdl_stream(s)) attr[n++] = pdl_attribute();  // only on created streams (pdl.cuh)
  cfg.attrs = attr;
  cfg.numAttrs = n;
  KL_CHECK(cudaLaunchKernelEx(&cfg, k15<MP, P>, tA, tW, a.C, a.M, a.N, a.K, cf.stages, cf.wpre));
  KL_CHECK_LAUNCH();
}

template <int P = 0>
void launch_cfg(const GemmBf16Args& a, const Cfg15& cf, cudaStream_t s) {
  if (cf.mp == 16) launch_mp<16, P>(a, cf, s);
  else if (cf.mp == 32) launch_mp<32, P>(a, cf, s);
  else launch_mp<64, P>(a, cf, s);
}

}  // namespace

std::string supports_15(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.M < 1 || a.M > 64) return "decode rung takes 1 <= M <= 64";
  if (a.N < 1 || a.K < 1) return "N, K must be >= 1";
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16)) return "A and W must be 16-byte aligned";
  if (!aligned(a.C, 4)) return "C must be 4-byte aligned (bf16 pairs)";
  if (d.smem_optin < SMEM_OPTIN) return "needs " + std::to_string(SMEM_OPTIN) + " B of shared memory";
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}

void launch_15(const GemmBf16Args& a, cudaStream_t s) { launch_cfg(a, choose(a.M, a.N), s); }

void launch_15_forced(const GemmBf16Args& a, int cps, int wpre, cudaStream_t s) {
  launch_cfg(a, make_cfg(a.M, a.N, cps, wpre), s);
}

// Probe rows (KL_GEMM_EXP=1 only): rung 15's plan with k15's P bits.
template <int P>
void launch_15_probe(const GemmBf16Args& a, cudaStream_t s) {
  launch_cfg<P>(a, choose(a.M, a.N), s);
}
template void launch_15_probe<1>(const GemmBf16Args&, cudaStream_t);
template void launch_15_probe<4>(const GemmBf16Args&, cudaStream_t);
template void launch_15_probe<8>(const GemmBf16Args&, cudaStream_t);
template void launch_15_probe<16>(const GemmBf16Args&, cudaStream_t);
template void launch_15_probe<32>(const GemmBf16Args&, cudaStream_t);

std::string describe_15(int M, int N) {
  const Cfg15 c = choose(M, N);
  return "MP=" + std::to_string(c.mp) + " CTAs/SM=" + std::to_string(c.cps) + " stages=" +
         std::to_string(c.stages) + " wpre=" + std::to_string(c.wpre) + " grid=" +
         std::to_string(c.grid) + " smem=" + std::to_string(c.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
