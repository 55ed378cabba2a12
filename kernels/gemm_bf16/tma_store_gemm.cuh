// kernels/gemm_bf16/tma_store_gemm.cuh — family-private: the persistent warp-specialized kernel of
// rungs 08 (ThreeStages: 3 stages, one 64 x 256 epilogue pass), 12 (FourStages: 4 stages, four
// 64 x 64 passes) and 19 (NarrowTiles: 128 x 64 tiles, 8 stages, one 64 x 64 pass); the
// configurations are in hopper_gemm.cuh.
// The rung files say what each configuration changes; this is the code they share.
//
// One CTA per SM (grid = min(tiles, #SMs)), 128 x BN x 64 tiles (BN = Ring::kBN) in grouped order,
// 384 threads: warpgroup 0 is the producer (one thread issues the TMA loads of A and W into a
// STAGES-deep full/empty mbarrier ring, setmaxnreg 40), warpgroups 1-2 the consumers (m64nBNk16
// wgmma from the 128B-swizzled stages, setmaxnreg 232, each releases a stage one k-block late because
// wgmma_wait<1> keeps the previous group in flight), then the TMA-store epilogue
// (hopper_gemm.cuh: tma_store_epilogue). PDL: the grid waits for the previous one after its
// prologue and launches programmatic-dependent, so back to back the next GEMM's launch and prologue
// run under this one's tail.
// The same kernel serves the decoder layer's fused MLP (GateUpSwigluC below, BN = 256): each tile's
// 256 W rows are 128 of Wgate over 128 of Wup, and the epilogue writes silu(gate) * up; and its down
// projection (ResidualC): the epilogue adds the residual stream before the store.
#pragma once
#include "common/vec.cuh"
#include "common/pdl.cuh"
#include "common/silu.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace tma_store {

constexpr int BM = 128, BK = kBK, THREADS = 384, GROUP = 8;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
template <class Ring>
constexpr int b_bytes() { return Ring::kBN * BK * 2; }  // 32 KB (BN = 256), 8 KB (64)
template <class Ring>
constexpr int stage_bytes() { return A_BYTES + b_bytes<Ring>(); }
static_assert(BM == 2 * 64, "two m64 consumers");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp");

// What a tile's BN accumulator columns are and what its epilogue writes.
template <int BN>
struct PlainC {  // rungs 08, 12, 19: BN rows of W, BN columns of C = A W^T
  static constexpr bool kGateUp = false, kResidual = false;
  static constexpr int kOutCols = BN;
};
// The layer's MLP: columns n0 .. n0 + 127 of two weights, W = Wgate (rows 0-127 of the stage) and
// W2 = Wup (rows 128-255), out = silu(gate) * up, both rounded to bf16 first as the separate GEMMs'
// outputs are: 128 columns of out. A thread's accumulator registers 4j + e (j < 16) and 4(j + 16)
// + e hold the gate and up values of the same output element (m64n256's n8 chunks j and j + 16).
struct GateUpSwigluC {
  static constexpr bool kGateUp = true, kResidual = false;
  static constexpr int kOutCols = 128;
};
// The layer's down projection: C = R + bf16(A W^T), R [M, N] added in the epilogue
// (hopper_gemm.cuh: add_residual_bounded) before the TMA store; every thread has waited for the
// previous grid before it reads R.
struct ResidualC {
  static constexpr bool kGateUp = false, kResidual = true;
  static constexpr int kOutCols = 256;
};

// Staging per consumer warpgroup (hopper_gemm.cuh: epilogue_boxes).
// Ring: ThreeStages, FourStages or NarrowTiles (hopper_gemm.cuh).
template <class Ring>
constexpr int c_bytes() { return epilogue_boxes<Ring::kEpiloguePasses, Ring::kBN>() * kCSub; }
template <class Ring>
constexpr size_t smem_bytes() {
  return 1024 + Ring::kStages * stage_bytes<Ring>() + 2 * c_bytes<Ring>() + 2 * Ring::kStages * 8;
}

// tmW2: GateUpSwigluC's second weight (otherwise unused); R: ResidualC's residual (otherwise null).
template <class Ring, class Out = PlainC<Ring::kBN>>
__global__ void __launch_bounds__(THREADS, 1)
    tma_store_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                          const __grid_constant__ CUtensorMap tmW2, const __grid_constant__ CUtensorMap tmC,
                          const __nv_bfloat16* __restrict__ R, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int STAGES = Ring::kStages, PASSES = Ring::kEpiloguePasses, BN = Ring::kBN;
  constexpr int B_BYTES = b_bytes<Ring>(), STAGE_BYTES = stage_bytes<Ring>();
  constexpr int C_BYTES = c_bytes<Ring>();
  static_assert(!Out::kGateUp || BN == 256, "gate/up: 128 rows of each weight per stage");
  static_assert(Out::kOutCols == (Out::kGateUp ? BN / 2 : BN), "output columns per tile");
  static_assert(!Out::kGateUp || C_BYTES >= 2 * kCSub, "gate/up's two-pass epilogue uses two staging boxes");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 warpgroups][epilogue_boxes boxes][64 rows][128 B]
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + 2 * C_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  constexpr int OUT_COLS = Out::kOutCols;
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, OUT_COLS);
  const int tiles = tiles_m * tiles_n;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    if (Out::kGateUp) tma_prefetch_desc(&tmW2);
    tma_prefetch_desc(&tmC);
    mbar_ring_init(full, empty, STAGES, CONSUMER_WARPS);
  }
  __syncthreads();
  // Programmatic dependent launch: the next grid of the stream may start its CTAs (launch, this
  // prologue) on SMs as ours leave; every thread waits for the previous grid (which may produce A
  // or W, or read C) to complete before any global access.
  pdl_trigger();
  pdl_wait();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        grouped_tile<GROUP>(t, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < num_k; ++kb, ++it) {
          const int s = it % STAGES, r = it / STAGES;
          mbar_wait(&empty[s], (r & 1) ^ 1);
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
          tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, tm * BM);
          if constexpr (Out::kGateUp) {
            tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, tn * OUT_COLS);
            tma_load_2d(sB + s * B_BYTES + B_BYTES / 2, &tmW2, &full[s], kb * BK, tn * OUT_COLS);
          } else {
            tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, tn * BN);
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1, t128 = tid % 128, lane = tid % 32;
    uint8_t* myC = sC + cw * C_BYTES;
    float acc[BN / 2];
    int it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      grouped_tile<GROUP>(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      consume_k_blocks<STAGES, A_BYTES, B_BYTES, BN>(acc, sA, sB, full, empty, num_k, it, cw, lane,
                                                     [](uint64_t* bar) { mbar_arrive(bar); });
      if constexpr (Out::kGateUp) {
        using Bf16 = Elem<DType::bf16>;
#pragma unroll
        for (int i = 0; i < BN / 4; ++i) acc[i] = silu_mul(Bf16::round(acc[i]), Bf16::round(acc[i + BN / 4]));
        tma_store_epilogue<2, OUT_COLS>(reinterpret_cast<const float(&)[OUT_COLS / 2]>(acc), myC, &tmC, M, N,
                                        tm * BM + cw * 64, tn * OUT_COLS, cw, t128);
      } else {
        if constexpr (Out::kResidual) add_residual_bounded<BN>(acc, R, M, N, tm * BM + cw * 64, tn * BN, t128);
        tma_store_epilogue<PASSES, BN>(acc, myC, &tmC, M, N, tm * BM + cw * 64, tn * BN, cw, t128);
      }
    }
    // smem must outlive the last stores' reads of it (the kernel's completion covers their writes)
    if (t128 == 0) tma_store_wait_read<0>();
  }
#endif
}

template <class Ring>
std::string tma_store_gemm_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  static_assert(smem_bytes<Ring>() <= 227 * 1024, "fits the sm_90 opt-in limit");
  return tma_gemm_supports(a, d, smem_bytes<Ring>());
}

// Out = GateUpSwigluC: a.W is Wgate, w2 Wup (both [N, K]), a.C the [M, N] output. Out = ResidualC:
// r the [M, N] residual.
template <class Ring, class Out = PlainC<Ring::kBN>>
void tma_store_gemm_launch(const GemmBf16Args& a, cudaStream_t s, const __nv_bfloat16* w2 = nullptr,
                           const __nv_bfloat16* r = nullptr) {
  constexpr size_t SMEM = smem_bytes<Ring>();
  KL_REQUIRE(Out::kGateUp == (w2 != nullptr), "tma_store_gemm: a second weight exactly for gate/up");
  KL_REQUIRE(Out::kResidual == (r != nullptr), "tma_store_gemm: a residual exactly for ResidualC");
  constexpr int w_rows = Out::kGateUp ? Ring::kBN / 2 : Ring::kBN;
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, w_rows);
  const CUtensorMap tW2 = Out::kGateUp ? map_operand(w2, a.N, a.K, w_rows) : tW;
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  auto* kernel = &tma_store_gemm_kernel<Ring, Out>;
  opt_in_smem(reinterpret_cast<const void*>(kernel), SMEM);
  const int tiles = ceil_div(a.M, BM) * ceil_div(a.N, Out::kOutCols);
  const int grid = tiles < device_info().sms ? tiles : device_info().sms;
  pdl_launch(kernel, dim3(grid), dim3(THREADS), SMEM, s, pdl_stream(s), tA, tW, tW2, tC, r, a.M, a.N, a.K);
}

}  // namespace tma_store
}  // namespace hopper_gemm
}  // namespace kl
