// 18 pingpong — rung 12 with ping-pong consumers: each consumer warpgroup computes whole 128x128
// tiles of its own, and the two take turns on the tensor cores, so one's epilogue runs under the
// other's mainloop.
//
// Parent: 12 four_stages.
// Change: the CTA's tiles (grouped order, persistent grid) go to consumers 0, 1, 0, ... in turn;
//   the producer loads their k-blocks in that order into a 6-deep ring of 32 KB stages, each stage
//   read and released by one consumer (empty[s] counts 4 warps). An ordered pair of named barriers
//   (pingpong_gemm.cuh: wait_turn / pass_turn) lets a consumer start a mainloop only after the
//   other has issued its previous tile's last wgmma; the epilogue (four 64x64 TMA-store passes)
//   follows outside the turn.
// Why: in 12 both consumers reach the epilogue of their shared tile together and the tensor cores
//   idle through it; here the other consumer's mainloop covers it.
// Limits: 128x128 tiles move 64 FLOP per byte of L2 -> smem fill (12: 85); a CTA with one tile
//   leaves a consumer idle. Picked for small prefill shapes only (gemm_bf16.cu). Code:
//   pingpong_gemm.cuh.
#include "common/pdl.cuh"
#include "gemm_bf16/pingpong_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

using namespace pingpong;

__global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_pingpong_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                              const __grid_constant__ CUtensorMap tmC, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 consumers][2 boxes][64 rows][128 B]
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + 2 * C_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
  const int tiles = tiles_m * tiles_n;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    tma_prefetch_desc(&tmC);
    mbar_ring_init(full, empty, STAGES, WARPS_PER_CONSUMER);
  }
  __syncthreads();
  pdl_trigger();  // as rung 12: the next grid may launch; nothing global before pdl_wait
  pdl_wait();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      // The CTA's tiles in order: the consumers' turns take them in the same order.
      int it = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        grouped_tile<GROUP>(t, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < num_k; ++kb, ++it) {
          const int s = it % STAGES, r = it / STAGES;
          mbar_wait(&empty[s], (r & 1) ^ 1);
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
          tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, tm * BM);
          tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, tn * BN);
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1, t128 = tid % 128, lane = tid % 32;
    uint8_t* myC = sC + c * C_BYTES;
    float acc[2][64];
    // Consumer c takes the CTA's tiles j = c, c + 2, ...: tile blockIdx.x + j * gridDim.x, whose
    // k-blocks sit at ring positions j * num_k ...
    for (int j = c; (int)blockIdx.x + j * (int)gridDim.x < tiles; j += 2) {
      int tm, tn;
      grouped_tile<GROUP>(blockIdx.x + j * gridDim.x, tiles_m, tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[0][i] = acc[1][i] = 0.f;
      if (j > 0) wait_turn(c);
      pingpong_mainloop(acc, sA, sB, full, empty, num_k, j * num_k, lane);
      if ((int)blockIdx.x + (j + 1) * (int)gridDim.x < tiles) pass_turn(c);
      pingpong_drain(empty, (j + 1) * num_k - 1, lane);
      pingpong_store_epilogue(acc, myC, &tmC, M, N, tm * BM, tn * BN, kEpilogueBar + c, t128);
    }
    // smem must outlive the last stores' reads of it (the kernel's completion covers their writes)
    if (t128 == 0) tma_store_wait_read<0>();
  }
#endif
}

}  // namespace

std::string gemm_bf16_pingpong_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_gemm_supports(a, d, smem_bytes());
}

void gemm_bf16_pingpong_launch(const GemmBf16Args& a, cudaStream_t s) {
  constexpr size_t SMEM = smem_bytes();
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN);
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_pingpong_kernel), SMEM);
  const int tiles = ceil_div(a.M, BM) * ceil_div(a.N, BN);
  const int grid = tiles < device_info().sms ? tiles : device_info().sms;
  pdl_launch(gemm_bf16_pingpong_kernel, dim3(grid), dim3(THREADS), SMEM, s, pdl_stream(s),
             tA, tW, tC, a.M, a.N, a.K);
}

}  // namespace hopper_gemm
}  // namespace kl
