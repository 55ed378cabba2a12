// 01 flash_cuda_cores — flash attention on CUDA cores.
//
// Parent: 00 warp_per_row.
// Change: tiling. A block owns a 64-row Q tile and walks the visible keys in 64-key tiles staged in
//   shared memory as fp32. S = Q K^T and O += P V are register-blocked fp32 FMA loops (thread
//   (ty, tx): rows 4*ty..4*ty+3; keys tx + 8c; O columns 4*tx + 32c'); the online softmax runs on
//   the 4 x 8 score fragments with a 3-step shuffle; P goes through shared memory (transposed).
//   Q is pre-multiplied by scale*log2(e) when staged. Causal: key tiles past the tile's last
//   visible key are never loaded; query tiles are launched heaviest first.
// Why: each K/V element read from L2/DRAM is reused by 64 query rows instead of one.
// Limits: fp32 FMA issue and shared-memory loads (1 LDS per 2.7 FMA in QK^T); no tensor cores.
#include <cstdint>
#include <cuda_bf16.h>

#include "attention/attention_internal.h"
#include "common/softmax_online.cuh"

namespace kl {
namespace {

constexpr int kBM = 64;       // query rows per block
constexpr int kBN = 64;       // keys per K/V tile
constexpr int kThreads = 128; // 16 row groups (ty) x 8 column lanes (tx)
constexpr int kPtStride = kBM + 4;  // Pt row stride (floats): float4-aligned, spreads banks
static_assert(kBM == 16 * 4 && kBN == 8 * 8 && kThreads == 16 * 8, "thread tile arithmetic");

template <int D>
constexpr int flash_cuda_cores_smem_bytes() {
  // Qt [D][BM] + Kt [D][BN] + Vs [BN][D] + Pt [BN][BM+4], fp32
  return (D * kBM + D * kBN + kBN * D + kBN * kPtStride) * 4;
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_flash_cuda_cores_kernel(AttentionArgs a, float sl2, int nqt) {
  extern __shared__ __align__(16) float sm[];
  float* Qt = sm;                 // [D][BM]  Q^T, pre-scaled by sl2
  float* Kt = Qt + D * kBM;       // [D][BN]  K^T
  float* Vs = Kt + D * kBN;       // [BN][D]
  float* Pt = Vs + kBN * D;       // [BN][BM+4] P^T

  const int tid = threadIdx.x, ty = tid >> 3, tx = tid & 7;
  const int bh = blockIdx.x;                      // b * Hq + hq
  const int qt = nqt - 1 - static_cast<int>(blockIdx.y);  // heaviest (last) query tile first
  const int q0 = qt * kBM;
  const int b = bh / a.Hq, hq = bh % a.Hq, hkv = hq / (a.Hq / a.Hkv);
  const int off = a.Skv - a.Sq;  // causal diagonal offset
  const __nv_bfloat16* Qg = a.Q + (static_cast<long long>(bh) * a.Sq + q0) * D;
  const long long kvh = (static_cast<long long>(b) * a.Hkv + hkv) * a.Skv * D;
  const __nv_bfloat16* Kg = a.K + kvh;
  const __nv_bfloat16* Vg = a.V + kvh;

  // Stage Q^T (scaled). Thread -> (row r = idx % BM, chunk c = idx / BM): a warp writes 32
  // consecutive rows of one Qt line (conflict-free).
  for (int idx = tid; idx < kBM * D / 8; idx += kThreads) {
    const int r = idx % kBM, c = idx / kBM;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (q0 + r < a.Sq) raw = *reinterpret_cast<const uint4*>(Qg + static_cast<long long>(r) * D + c * 8);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float2 f = __bfloat1622float2(h[e]);
      Qt[(c * 8 + 2 * e) * kBM + r] = f.x * sl2;
      Qt[(c * 8 + 2 * e + 1) * kBM + r] = f.y * sl2;
    }
  }

  float acc[4][D / 8];
  float m[4], l[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    m[r] = neg_inf_f();
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < D / 8; ++c) acc[r][c] = 0.f;
  }

  const int kv_end = a.causal ? min(a.Skv, q0 + kBM + off) : a.Skv;  // last key any row sees + 1
  for (int kv0 = 0; kv0 < kv_end; kv0 += kBN) {
    __syncthreads();  // previous tile's Kt/Vs/Pt reads are done (and Qt is written, first time)
    for (int idx = tid; idx < kBN * D / 8; idx += kThreads) {
      // K^T: lanes over keys (conflict-free transposed stores).
      {
        const int key = idx % kBN, c = idx / kBN;
        uint4 raw = make_uint4(0, 0, 0, 0);
        if (kv0 + key < a.Skv)
          raw = *reinterpret_cast<const uint4*>(Kg + static_cast<long long>(kv0 + key) * D + c * 8);
        const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float2 f = __bfloat1622float2(h[e]);
          Kt[(c * 8 + 2 * e) * kBN + key] = f.x;
          Kt[(c * 8 + 2 * e + 1) * kBN + key] = f.y;
        }
      }
      // V row-major: lanes over 16-byte chunks of a row (coalesced reads, float4 stores).
      {
        const int key = idx / (D / 8), c = idx % (D / 8);
        uint4 raw = make_uint4(0, 0, 0, 0);  // keys past Skv are zero (their P is 0 too)
        if (kv0 + key < a.Skv)
          raw = *reinterpret_cast<const uint4*>(Vg + static_cast<long long>(kv0 + key) * D + c * 8);
        const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
        float2 f0 = __bfloat1622float2(h[0]), f1 = __bfloat1622float2(h[1]);
        float2 f2 = __bfloat1622float2(h[2]), f3 = __bfloat1622float2(h[3]);
        float4* dst = reinterpret_cast<float4*>(Vs + key * D + c * 8);
        dst[0] = make_float4(f0.x, f0.y, f1.x, f1.y);
        dst[1] = make_float4(f2.x, f2.y, f3.x, f3.y);
      }
    }
    __syncthreads();

    // S (4 rows x 8 keys per thread) = Qt^T Kt, in exp2 units.
    float s[4][8];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 8; ++c) s[r][c] = 0.f;
#pragma unroll 8
    for (int d = 0; d < D; ++d) {
      const float4 q4 = *reinterpret_cast<const float4*>(Qt + d * kBM + ty * 4);  // broadcast
      const float q[4] = {q4.x, q4.y, q4.z, q4.w};
      float k[8];
#pragma unroll
      for (int c = 0; c < 8; ++c) k[c] = Kt[d * kBN + tx + 8 * c];  // 8 lanes, 8 banks
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) s[r][c] = fmaf(q[r], k[c], s[r][c]);
    }

    // Mask (ragged keys, causal) and online softmax per row; scores already carry sl2.
    const bool need_mask = kv0 + kBN > a.Skv || (a.causal && kv0 + kBN - 1 > q0 + off);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = q0 + ty * 4 + r;
      float mx = neg_inf_f();
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int j = kv0 + tx + 8 * c;
        if (need_mask && (j >= a.Skv || (a.causal && j > i + off))) s[r][c] = neg_inf_f();
        mx = fmaxf(mx, s[r][c]);
      }
      // The 8 threads of a row group are 8 consecutive lanes: xor 1, 2, 4 stays inside it.
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      const float m_new = fmaxf(m[r], mx);
      const float o = online_row_offset(m_new, 1.f);
      const float alpha = online_rescale(m[r], o, 1.f);
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        s[r][c] = online_prob(s[r][c], o, 1.f);
        sum += s[r][c];
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      sum += __shfl_xor_sync(0xffffffffu, sum, 4);
      l[r] = fmaf(l[r], alpha, sum);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < D / 8; ++c) acc[r][c] *= alpha;
    }
    // P^T to shared memory: float4 over the 4 rows (8 lanes of a phase hit 8 distinct bank quads).
#pragma unroll
    for (int c = 0; c < 8; ++c)
      *reinterpret_cast<float4*>(Pt + (tx + 8 * c) * kPtStride + ty * 4) =
          make_float4(s[0][c], s[1][c], s[2][c], s[3][c]);
    __syncthreads();

    // O (4 rows x D/8 columns per thread) += P V.
    const int jn = min(kBN, a.Skv - kv0);
#pragma unroll 4
    for (int j = 0; j < jn; ++j) {
      const float4 p4 = *reinterpret_cast<const float4*>(Pt + j * kPtStride + ty * 4);
      const float p[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
      for (int cc = 0; cc < D / 32; ++cc) {
        const float4 v = *reinterpret_cast<const float4*>(Vs + j * D + tx * 4 + 32 * cc);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          acc[r][cc * 4 + 0] = fmaf(p[r], v.x, acc[r][cc * 4 + 0]);
          acc[r][cc * 4 + 1] = fmaf(p[r], v.y, acc[r][cc * 4 + 1]);
          acc[r][cc * 4 + 2] = fmaf(p[r], v.z, acc[r][cc * 4 + 2]);
          acc[r][cc * 4 + 3] = fmaf(p[r], v.w, acc[r][cc * 4 + 3]);
        }
      }
    }
  }

  // Epilogue: normalize and store 4 bf16 (8 bytes) per (row, column group).
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = q0 + ty * 4 + r;
    if (i >= a.Sq) continue;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    __nv_bfloat16* op = a.O + (static_cast<long long>(bh) * a.Sq + i) * D;
#pragma unroll
    for (int cc = 0; cc < D / 32; ++cc) {
      __nv_bfloat162 lo = __floats2bfloat162_rn(acc[r][cc * 4] * inv, acc[r][cc * 4 + 1] * inv);
      __nv_bfloat162 hi = __floats2bfloat162_rn(acc[r][cc * 4 + 2] * inv, acc[r][cc * 4 + 3] * inv);
      uint2 w;
      w.x = *reinterpret_cast<uint32_t*>(&lo);
      w.y = *reinterpret_cast<uint32_t*>(&hi);
      *reinterpret_cast<uint2*>(op + tx * 4 + 32 * cc) = w;
    }
  }
}

template <int D>
void run_flash_cuda_cores(const AttentionArgs& a, cudaStream_t s) {
  constexpr int smem = flash_cuda_cores_smem_bytes<D>();
  KL_CHECK(cudaFuncSetAttribute(attention_flash_cuda_cores_kernel<D>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int nqt = (a.Sq + kBM - 1) / kBM;
  dim3 grid(a.B * a.Hq, nqt);
  attention_flash_cuda_cores_kernel<D><<<grid, kThreads, smem, s>>>(a, attention_scale_log2(a), nqt);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string attention_flash_cuda_cores_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_args_supports(a, d);
  if (!why.empty()) return why;
  const int smem = a.D == 64 ? flash_cuda_cores_smem_bytes<64>() : flash_cuda_cores_smem_bytes<128>();
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  if (static_cast<long long>(a.B) * a.Hq > 2147483647LL || (a.Sq + kBM - 1) / kBM > 65535)
    return "grid too large (B*Hq or Sq/64 > 65535)";
  return "";
}

void attention_flash_cuda_cores_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) run_flash_cuda_cores<64>(a, s);
  else run_flash_cuda_cores<128>(a, s);
}

}  // namespace kl
