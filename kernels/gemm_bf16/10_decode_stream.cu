// 10 decode_stream — for M <= 64 the GEMM is a stream over W: each CTA owns a strip of 32 W rows
// and the whole K, and keeps W loads in flight from registers.
//
// Parent: 03 mma_sync_swizzle (its small-M tiles); the first rung of the M <= 64 branch.
// Change: W rows go straight from DRAM to registers with 16-byte ld.global.nc.L1::no_allocate, no
//   shared staging, feeding mma.sync m16n8k16 with W as the 16-row A operand and the activations as
//   the n8 B operand (C^T = W A^T: M pads to 8, not 64). The k index is permuted identically for
//   both operands, so one 32-wide k chunk = two mmas from three 16-byte loads, no shuffles. 8 warps
//   split K; batch i+1's loads are issued before batch i's mmas; partial sums are reduced across
//   warps in shared memory in a fixed order (deterministic).
// Why: at M <= 64 a 128-row tile wastes most of every MMA and the problem is memory-bound (2*M
//   FLOPs per W byte): what matters is how close W streams to the copy bandwidth.
// Limits: only a register double buffer of W in flight per SM; activations are re-read from L2 by
//   every CTA; N = 11008 needs several waves. Runs on any sm_80+.
#include "common/mma.cuh"
#include "common/vec.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int WARPS = 8, THREADS = WARPS * 32;
constexpr int RB = 2;             // m16 tiles of W rows per CTA
constexpr int ROWS = 16 * RB;     // 32 W rows (= output columns) per CTA
constexpr int KCHUNK = 32;        // k per warp step: 4 threads x 8 bf16 (16 B)
constexpr int MAX_M = 64;

// Per MT (activation n8 tiles): chunks per batch U and resident CTAs per SM. Small M: few
// registers, so 3 (MT <= 2) or 2 (MT <= 4) CTAs per SM keep more bytes in flight and let all
// N/32 CTAs of an 11008-row W be resident at once (no partial last wave); large M needs the
// registers (acc 64 + 2 x U x 16 W regs + 32 activation regs) and takes 1 CTA per SM.
template <int MT>
__host__ __device__ constexpr int unroll_for() { return MT <= 4 ? 1 : 2; }
template <int MT>
__host__ __device__ constexpr int ctas_per_sm() { return MT <= 2 ? 3 : (MT <= 4 ? 2 : 1); }
template <int MT>
constexpr size_t red_smem() { return size_t(WARPS) * ROWS * (MT * 8 + 1) * sizeof(float); }

// MT = ceil(M / 8): number of n8 activation tiles.
template <int MT>
__global__ void __launch_bounds__(THREADS, ctas_per_sm<MT>())
    gemm_bf16_decode_stream_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ W,
                                   __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  constexpr int U = unroll_for<MT>();
  constexpr int LD = MT * 8 + 1;  // +1 float pad: reduction reads by consecutive rows hit banks once
  extern __shared__ float red[];  // [WARPS][ROWS][LD]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int n0 = blockIdx.x * ROWS;

  float acc[RB][MT][4];
#pragma unroll
  for (int i = 0; i < RB; ++i)
#pragma unroll
    for (int j = 0; j < MT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // Row pointers (nullptr when past N / M: those fragments stay zero).
  const __nv_bfloat16* wrow[RB][2];
#pragma unroll
  for (int rb = 0; rb < RB; ++rb)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + rb * 16 + g + 8 * h;
      wrow[rb][h] = n < N ? W + (size_t)n * K : nullptr;
    }
  const __nv_bfloat16* arow[MT];
#pragma unroll
  for (int nt = 0; nt < MT; ++nt) {
    const int m = nt * 8 + g;
    arow[nt] = m < M ? A + (size_t)m * K : nullptr;
  }

  const int nchunks = (K + KCHUNK - 1) / KCHUNK;
  constexpr int STEP = WARPS * U;  // chunks per batch over the whole CTA
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // One batch = U chunks of this warp: the W bytes in flight. Loads are asm volatile (as are the
  // mmas), so source order is issue order: the next batch is issued BEFORE the current one is
  // multiplied (register double buffer), keeping W loads in flight through the math.
  auto load_batch = [&](int q0, uint4 (&wv)[U][RB][2]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = (q0 + u * WARPS) * KCHUNK + 8 * c;  // K % 8 == 0: segment fully in or out
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          wv[u][rb][h] = (wrow[rb][h] && k < K) ? ld16<Ld::nc_noalloc>(wrow[rb][h] + k) : zero;
    }
  };
  auto compute_batch = [&](int q0, const uint4 (&wv)[U][RB][2]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = (q0 + u * WARPS) * KCHUNK + 8 * c;
      uint4 xv[MT];
#pragma unroll
      for (int nt = 0; nt < MT; ++nt)  // activations: L2/L1 hits, shared by every CTA
        xv[nt] = (arow[nt] && k < K) ? ld16<Ld::normal>(arow[nt] + k) : zero;
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        const uint32_t a0[4] = {wv[u][rb][0].x, wv[u][rb][1].x, wv[u][rb][0].y, wv[u][rb][1].y};
        const uint32_t a1[4] = {wv[u][rb][0].z, wv[u][rb][1].z, wv[u][rb][0].w, wv[u][rb][1].w};
#pragma unroll
        for (int nt = 0; nt < MT; ++nt) {
          const uint32_t b0[2] = {xv[nt].x, xv[nt].y};
          const uint32_t b1[2] = {xv[nt].z, xv[nt].w};
          mma_bf16_16816(acc[rb][nt], a0, b0);
          mma_bf16_16816(acc[rb][nt], a1, b1);
        }
      }
    }
  };
  uint4 wa[U][RB][2], wb[U][RB][2];  // ping-pong register buffers
  int q0 = warp;
  if (q0 < nchunks) load_batch(q0, wa);
  for (; q0 < nchunks; q0 += 2 * STEP) {
    const int q1 = q0 + STEP;
    if (q1 < nchunks) load_batch(q1, wb);
    compute_batch(q0, wa);
    if (q1 >= nchunks) break;
    if (q1 + STEP < nchunks) load_batch(q1 + STEP, wa);
    compute_batch(q1, wb);
  }

  // acc[rb][nt][e]: W row rb*16 + g (+8 for e >= 2), activation row nt*8 + 2c + (e & 1).
  float* mine = red + (size_t)warp * ROWS * LD;
#pragma unroll
  for (int rb = 0; rb < RB; ++rb)
#pragma unroll
    for (int nt = 0; nt < MT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        mine[(rb * 16 + g + (e >= 2 ? 8 : 0)) * LD + nt * 8 + 2 * c + (e & 1)] = acc[rb][nt][e];
  __syncthreads();
  // Fixed-order sum over warps; consecutive threads take consecutive n (coalesced bf16 stores).
  for (int idx = threadIdx.x; idx < M * ROWS; idx += THREADS) {
    const int m = idx / ROWS, r = idx % ROWS, n = n0 + r;
    if (n >= N) continue;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += red[((size_t)w * ROWS + r) * LD + m];
    C[(size_t)m * N + n] = __float2bfloat16_rn(s);
  }
}

template <int MT>
void launch_mt(const GemmBf16Args& a, cudaStream_t s) {
  constexpr size_t smem = red_smem<MT>();
  if (smem > 48 * 1024) opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_decode_stream_kernel<MT>), smem);
  gemm_bf16_decode_stream_kernel<MT><<<ceil_div(a.N, ROWS), THREADS, smem, s>>>(a.A, a.W, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string gemm_bf16_decode_stream_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  const std::string why = gemm_bf16_check_args(a);
  if (!why.empty()) return why;
  if (d.cc() < 80) return "needs sm_80+ (mma.sync bf16)";
  if (a.M > MAX_M) return "decode rung takes 1 <= M <= 64";
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte row loads)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16) || !aligned(a.C, 2))
    return "A and W must be 16-byte aligned";
  if ((long long)red_smem<8>() > d.smem_optin) return "not enough shared memory";
  return "";
}

void gemm_bf16_decode_stream_launch(const GemmBf16Args& a, cudaStream_t s) {
  switch ((a.M + 7) / 8) {
    case 1: launch_mt<1>(a, s); break;
    case 2: launch_mt<2>(a, s); break;
    case 3: launch_mt<3>(a, s); break;
    case 4: launch_mt<4>(a, s); break;
    case 5: launch_mt<5>(a, s); break;
    case 6: launch_mt<6>(a, s); break;
    case 7: launch_mt<7>(a, s); break;
    default: launch_mt<8>(a, s); break;
  }
}

}  // namespace hopper_gemm
}  // namespace kl
