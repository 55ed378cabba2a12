// kernels/layer/reference_gpu.cu — the decoder layer's GPU fp32 reference (reference.h): one plain
// kernel per op, every intermediate rounded to bf16 where kl::layer stores it.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "kernels/layer/layer_internal.h"
#include "kernels/layer/reference.h"
#include "kl/check.h"

namespace kl {
namespace {

using bf16 = __nv_bfloat16;
using layer_detail::layer_tokens;
using layer_detail::qkv_width;

constexpr int kTile = 16;      // GEMM tile edge (a 16 x 16 block, one output per thread)
constexpr int kNormThreads = 256;
constexpr int kWarpsPerBlock = 8;  // attention: one warp per query row
constexpr int kThreads = 256;

__device__ __forceinline__ float ld(const bf16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

// C [M, N] = A [M, K] W [N, K]^T, fp32 sums in k order per 16-wide tile, one rounding to bf16.
__global__ void layer_reference_gemm_kernel(const bf16* A, const bf16* W, bf16* C, int M, int N, int K) {
  __shared__ float as[kTile][kTile + 1], ws[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int n = blockIdx.x * kTile + tx, w_row = blockIdx.x * kTile + ty;
  for (int m0 = blockIdx.y * kTile; m0 < M; m0 += gridDim.y * kTile) {  // uniform over the block
    const int m = m0 + ty;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
      const int k = k0 + tx;
      as[ty][tx] = m < M && k < K ? ld(A, static_cast<long long>(m) * K + k) : 0.f;
      ws[ty][tx] = w_row < N && k < K ? ld(W, static_cast<long long>(w_row) * K + k) : 0.f;
      __syncthreads();
      for (int kk = 0; kk < kTile; ++kk) acc += as[ty][kk] * ws[tx][kk];
      __syncthreads();
    }
    if (m < M && n < N) C[static_cast<long long>(m) * N + n] = __float2bfloat16_rn(acc);
  }
}

// One block per row: v = x (+ add, rounded to bf16 and stored to r_out), y = v / sqrt(mean(v^2) + eps) * w.
__global__ void __launch_bounds__(kNormThreads)
    layer_reference_rmsnorm_kernel(const bf16* x, const bf16* add, bf16* r_out, const bf16* w, bf16* y,
                                   int cols, float eps) {
  __shared__ float part[kNormThreads];
  const long long base = static_cast<long long>(blockIdx.x) * cols;
  auto value = [&](int c) {
    const float v = ld(x, base + c);
    return add ? round_bf16(v + ld(add, base + c)) : v;
  };
  float ss = 0.f;
  for (int c = threadIdx.x; c < cols; c += kNormThreads) {
    const float v = value(c);
    ss += v * v;
    if (r_out) r_out[base + c] = __float2bfloat16_rn(v);
  }
  part[threadIdx.x] = ss;
  __syncthreads();
  for (int s = kNormThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.f / sqrtf(part[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += kNormThreads)
    y[base + c] = __float2bfloat16_rn(value(c) * inv * ld(w, c));
}

struct RopeRef {
  const bf16* qkv;
  const int* pos;  // nullptr: first + t mod S
  bf16* q;         // [T, Hq, D]
  bf16* k_cache;   // [B, Hkv, L, D]
  bf16* v_cache;
  int S, Hq, Hkv, D, L, first;
  double theta;
};

// One thread per (token, head of q, k or v, pair i): the angle, its sine and cosine in double.
__global__ void __launch_bounds__(kThreads) layer_reference_rope_kernel(const RopeRef p, long long n) {
  const long long e = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n) return;
  const int half = p.D / 2, heads = p.Hq + 2 * p.Hkv;
  const long long t = e / (static_cast<long long>(heads) * half);
  const int rem = static_cast<int>(e - t * heads * half), head = rem / half, i = rem - head * half;
  const int pos = p.pos ? p.pos[t] : p.first + static_cast<int>(t % p.S);
  const bf16* x = p.qkv + t * heads * p.D + static_cast<long long>(head) * p.D;
  const long long b = t / p.S;
  bf16* dst;
  if (head < p.Hq) {
    dst = p.q + (t * p.Hq + head) * p.D;
  } else {
    if (pos < 0 || pos >= p.L) return;  // no cache row for this position
    const int kvh = head < p.Hq + p.Hkv ? head - p.Hq : head - p.Hq - p.Hkv;
    bf16* cache = head < p.Hq + p.Hkv ? p.k_cache : p.v_cache;
    dst = cache + ((b * p.Hkv + kvh) * p.L + pos) * p.D;
    if (head >= p.Hq + p.Hkv) {  // v: a copy
      dst[i] = x[i];
      dst[i + half] = x[i + half];
      return;
    }
  }
  const double angle = pos * pow(p.theta, -2.0 * i / p.D);
  double sd, cd;
  sincos(angle, &sd, &cd);
  const float s = static_cast<float>(sd), c = static_cast<float>(cd);
  const float a = __bfloat162float(x[i]), bb = __bfloat162float(x[i + half]);
  dst[i] = __float2bfloat16_rn(a * c - bb * s);
  dst[i + half] = __float2bfloat16_rn(bb * c + a * s);
}

struct AttentionRef {
  const bf16* q;        // [T, Hq, D]
  const bf16* k_cache;  // [B, Hkv, L, D]
  const bf16* v_cache;
  bf16* o;              // [T, Hq * D]
  int S, Hq, Hkv, D, L, kv;
  float scale;
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp per query row (b, h, s); lane l holds elements [l * D/32, (l + 1) * D/32) of the head.
// Keys j < s + kv - S + 1 of the row's KV head; pass 1 the max score, pass 2 exp and the sums.
__global__ void __launch_bounds__(kWarpsPerBlock * 32) layer_reference_attention_kernel(const AttentionRef p,
                                                                                         long long rows) {
  const long long r = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = threadIdx.x % 32, per = p.D / 32;
  const long long bh = r / p.S;
  const int s = static_cast<int>(r - bh * p.S), h = static_cast<int>(bh % p.Hq);
  const long long b = bh / p.Hq, t = b * p.S + s;
  const int kvh = h / (p.Hq / p.Hkv), visible = s + p.kv - p.S + 1;
  const bf16* K = p.k_cache + (b * p.Hkv + kvh) * p.L * p.D + lane * per;
  const bf16* V = p.v_cache + (b * p.Hkv + kvh) * p.L * p.D + lane * per;
  float q[4] = {0.f, 0.f, 0.f, 0.f};
  for (int e = 0; e < per; ++e) q[e] = ld(p.q, (t * p.Hq + h) * p.D + lane * per + e);
  auto score = [&](int j) {
    float d = 0.f;
    for (int e = 0; e < per; ++e) d += q[e] * ld(K, static_cast<long long>(j) * p.D + e);
    return warp_sum(d) * p.scale;
  };
  float mx = -INFINITY;
  for (int j = 0; j < visible; ++j) mx = fmaxf(mx, score(j));
  float l = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int j = 0; j < visible; ++j) {
    const float w = expf(score(j) - mx);
    l += w;
    for (int e = 0; e < per; ++e) acc[e] += w * ld(V, static_cast<long long>(j) * p.D + e);
  }
  for (int e = 0; e < per; ++e)
    p.o[t * p.Hq * p.D + static_cast<long long>(h) * p.D + lane * per + e] = __float2bfloat16_rn(acc[e] / l);
}

__global__ void __launch_bounds__(kThreads)
    layer_reference_swiglu_kernel(const bf16* g, const bf16* u, bf16* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float gv = ld(g, i);
  y[i] = __float2bfloat16_rn(gv / (1.f + expf(-gv)) * ld(u, i));
}

__global__ void __launch_bounds__(kThreads)
    layer_reference_add_kernel(const bf16* a, const bf16* b, bf16* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(ld(a, i) + ld(b, i));
}

unsigned blocks_for(long long n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

void gemm(const bf16* A, const bf16* W, bf16* C, long long M, int N, int K, cudaStream_t s) {
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((N + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<long long>((M + kTile - 1) / kTile, 65535)));
  layer_reference_gemm_kernel<<<grid, block, 0, s>>>(A, W, C, static_cast<int>(M), N, K);
  KL_CHECK_LAUNCH();
}

// Byte offsets of the reference's intermediates (each 256-byte aligned).
struct RefLayout {
  size_t h, qkv, q, o, p, r, h2, g, u, act, dn, total;
};

RefLayout ref_layout(const LayerArgs& a) {
  const LayerDims& m = a.dims;
  const double T = static_cast<double>(std::max(0LL, layer_tokens(a)));
  RefLayout l{};
  size_t off = 0;
  auto take = [&](double elems) {
    const size_t at = off;
    off += (static_cast<size_t>(elems * 2) + 255) / 256 * 256;
    return at;
  };
  l.h = take(T * m.hidden);
  l.qkv = take(T * qkv_width(m));
  l.q = take(T * m.Hq * m.D);
  l.o = take(T * m.Hq * m.D);
  l.p = take(T * m.hidden);
  l.r = take(T * m.hidden);
  l.h2 = take(T * m.hidden);
  l.g = take(T * m.mlp);
  l.u = take(T * m.mlp);
  l.act = take(T * m.mlp);
  l.dn = take(T * m.hidden);
  l.total = off;
  return l;
}

}  // namespace

size_t layer_reference_workspace_bytes(const LayerArgs& shape_only) { return ref_layout(shape_only).total; }

void layer_reference(const LayerArgs& a, cudaStream_t s) {
  const LayerDims& m = a.dims;
  const RefLayout lay = ref_layout(a);
  char* ws = static_cast<char*>(a.workspace);
  auto at = [&](size_t off) { return reinterpret_cast<bf16*>(ws + off); };
  const long long T = layer_tokens(a);
  const int width = static_cast<int>(qkv_width(m)), kv = layer_kv_len(a);

  layer_reference_rmsnorm_kernel<<<static_cast<unsigned>(T), kNormThreads, 0, s>>>(
      a.x, nullptr, nullptr, a.w.attn_norm, at(lay.h), m.hidden, m.eps);
  KL_CHECK_LAUNCH();
  gemm(at(lay.h), a.w.wqkv, at(lay.qkv), T, width, m.hidden, s);

  const RopeRef rp{at(lay.qkv), a.pos, at(lay.q), a.k_cache, a.v_cache, a.S, m.Hq, m.Hkv, m.D, a.L,
                   kv - a.S, static_cast<double>(m.theta)};
  const long long pairs = T * (m.Hq + 2LL * m.Hkv) * (m.D / 2);
  layer_reference_rope_kernel<<<blocks_for(pairs, kThreads), kThreads, 0, s>>>(rp, pairs);
  KL_CHECK_LAUNCH();

  const AttentionRef ap{at(lay.q), a.k_cache, a.v_cache, at(lay.o), a.S, m.Hq, m.Hkv, m.D, a.L, kv,
                        1.f / sqrtf(static_cast<float>(m.D))};
  const long long rows = T * m.Hq;
  layer_reference_attention_kernel<<<blocks_for(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s>>>(ap, rows);
  KL_CHECK_LAUNCH();
  gemm(at(lay.o), a.w.wo, at(lay.p), T, m.hidden, m.Hq * m.D, s);

  layer_reference_rmsnorm_kernel<<<static_cast<unsigned>(T), kNormThreads, 0, s>>>(
      a.x, at(lay.p), at(lay.r), a.w.mlp_norm, at(lay.h2), m.hidden, m.eps);
  KL_CHECK_LAUNCH();
  gemm(at(lay.h2), a.w.wgate, at(lay.g), T, m.mlp, m.hidden, s);
  gemm(at(lay.h2), a.w.wup, at(lay.u), T, m.mlp, m.hidden, s);
  const long long nm = T * m.mlp, nh = T * m.hidden;
  layer_reference_swiglu_kernel<<<blocks_for(nm, kThreads), kThreads, 0, s>>>(at(lay.g), at(lay.u), at(lay.act), nm);
  KL_CHECK_LAUNCH();
  gemm(at(lay.act), a.w.wdown, at(lay.dn), T, m.hidden, m.mlp, s);
  layer_reference_add_kernel<<<blocks_for(nh, kThreads), kThreads, 0, s>>>(at(lay.r), at(lay.dn), a.y, nh);
  KL_CHECK_LAUNCH();
}

}  // namespace kl
