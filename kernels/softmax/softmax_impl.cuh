// kernels/softmax/softmax_impl.cuh — device code shared by the softmax rungs (family-private).
//
//   safe_shift(m)            the value to subtract: m, or 0 when m = -inf (all-(-inf) so far), so
//                            exp(-inf - shift) = 0 instead of exp(NaN).
//   fast_exp(d)              exp(d) for d <= 0 via ex2 (MUFU) on d * log2(e); d = -inf -> 0.
//   Online / warp_merge      the (max, sum-of-exp) pair of an online softmax and its merge.
//   RowRegs<D, N, VEC>       a slice of a row held in registers by a group of threads: thread t of
//                            a group of `gsize` holds N chunks of VEC elements, chunk k being
//                            elements [(t + k*gsize)*VEC, +VEC) of the slice (so each warp
//                            instruction touches 32*VEC contiguous elements). Masked elements hold
//                            -inf, which every later step maps to 0 and never stores.
//   choose_regs()            group size and N for a slice length (host).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "kl/softmax.h"

namespace kl::softmax_detail {

constexpr int kMaxElemsPerThread = 32;
constexpr int kMaxGroup = 1024;
// Chunks a thread may hold: 32 elements in 16-byte vectors; 16 on the scalar path, where every
// element carries its own address and 32 spill at the 64-register cap of a 1024-thread block.
__host__ __device__ constexpr int max_chunks(int vec) {
  return vec == 1 ? 16 : kMaxElemsPerThread / vec;
}

constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

__device__ __forceinline__ float safe_shift(float m) { return m == neg_inf() ? 0.0f : m; }

// exp(d) for d = x - shift <= 0 (or -inf). Subtract first, then scale: x * log2e - m * log2e
// would overflow for |x| near FLT_MAX. exp2f compiles to MUFU.EX2 (~2 ulp) with denormal fix-up.
__device__ __forceinline__ float fast_exp(float d) { return exp2f(d * kLog2e); }

// (max, sum of exp(x - max)) over the elements seen so far.
struct Online {
  float m, s;
  __device__ __forceinline__ Online() : m(neg_inf()), s(0.0f) {}
  // One more element. x > m: rescale the old sum to the new max (exp(-inf) = 0 covers m = -inf).
  __device__ __forceinline__ void add(float x) {
    if (x > m) {
      s = s * fast_exp(m - x) + 1.0f;
      m = x;
    } else {
      s += fast_exp(x - safe_shift(m));  // x = m = -inf: exp(-inf - 0) = 0, not exp(NaN)
    }
  }
  // Merge another pair (from another lane or thread).
  __device__ __forceinline__ void merge(float m2, float s2) {
    const float M = fmaxf(m, m2), sh = safe_shift(M);
    s = s * fast_exp(m - sh) + s2 * fast_exp(m2 - sh);
    m = M;
  }
};

// Butterfly merge of Online pairs over a full warp: every lane gets the warp's pair.
__device__ __forceinline__ Online warp_merge(Online o) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, o.m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, o.s, off);
    o.merge(m2, s2);
  }
  return o;
}

// 1 / sum, or 0 for an empty sum (all -inf row): the documented all-zeros result.
__device__ __forceinline__ float safe_inv(float s) { return s > 0.0f ? 1.0f / s : 0.0f; }

// ---------------------------------------------------------------- a row slice in registers
template <DType D, int N, int VEC>
struct RowRegs {
  using T = typename Elem<D>::T;
  static_assert(VEC == 1 || VEC == Elem<D>::kVec, "VEC: scalar or one 16-byte vector");
  static_assert(N >= 1 && N <= max_chunks(VEC), "at most 32 (vector) / 16 (scalar) per thread");
  float v[N][VEC];

  // The payload of a thread's N loads before unpacking: 16-byte vectors, or widened scalars.
  using Raw = std::conditional_t<VEC == 1, float, uint4>;

  // Issues all N loads (independent: N * VEC * sizeof(T) bytes in flight per thread) without
  // waiting for any. p = slice start (16-byte aligned when VEC > 1), len = slice length (a multiple
  // of VEC when VEC > 1), t = thread index in the group, g = group size. Masked chunks are untouched.
  template <Ld L>
  static __device__ __forceinline__ void issue(const T* __restrict__ p, int len, int t, int g,
                                               Raw (&raw)[N]) {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int i = (t + k * g) * VEC;
      if (i < len) {
        if constexpr (VEC == 1) {
          raw[k] = Elem<D>::load(p, i);
        } else {
          raw[k] = ld16<L>(p + i);
        }
      }
    }
  }
  // Raw payloads -> v (first use of the loaded registers: this is where the thread waits).
  // Masked chunks become -inf, which every later step maps to 0 and never stores.
  __device__ __forceinline__ void unpack(const Raw (&raw)[N], int len, int t, int g) {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int i = (t + k * g) * VEC;
      if (i < len) {
        if constexpr (VEC == 1) {
          v[k][0] = raw[k];
        } else {
          Elem<D>::unpack(raw[k], v[k]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[k][j] = neg_inf();
      }
    }
  }
  template <Ld L>
  __device__ __forceinline__ void load(const T* __restrict__ p, int len, int t, int g) {
    if constexpr (VEC == 1) {  // straight into v (keeps the scalar path spill-free at 64 regs)
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const int i = t + k * g;
        v[k][0] = i < len ? Elem<D>::load(p, i) : neg_inf();
      }
    } else {
      Raw raw[N];
      issue<L>(p, len, t, g, raw);
      unpack(raw, len, t, g);
    }
  }
  __device__ __forceinline__ float max() const {
    float m = neg_inf();
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int j = 0; j < VEC; ++j) m = fmaxf(m, v[k][j]);
    return m;
  }
  // v <- exp(v - shift) in place (the only exp of each element); returns the thread's sum.
  __device__ __forceinline__ float exp_sum(float shift) {
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        v[k][j] = fast_exp(v[k][j] - shift);  // masked -inf -> 0
        s += v[k][j];
      }
    return s;
  }
  // y = v * inv for the valid elements.
  template <St S>
  __device__ __forceinline__ void store(T* __restrict__ p, int len, int t, int g, float inv) {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int i = (t + k * g) * VEC;
      if (i < len) {
        float o[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) o[j] = v[k][j] * inv;
        if constexpr (VEC == 1) {
          Elem<D>::store(p, i, o[0]);
        } else {
          st16<S>(p + i, Elem<D>::pack(o));
        }
      }
    }
  }
};

// ---------------------------------------------------------------- host side
// Rows can use 16-byte vectors: both pointers aligned and every row start aligned.
inline bool vec_ok(const SoftmaxArgs& a) {
  const int kv = a.dtype == DType::f32 ? 4 : 8;
  return aligned(a.x, 16) && aligned(a.y, 16) && a.cols % kv == 0;
}
inline int vec_width(const SoftmaxArgs& a) {
  return vec_ok(a) ? (a.dtype == DType::f32 ? 4 : 8) : 1;
}

struct RegCfg {
  int g = 0;    // threads per group (multiple of 32, <= 1024)
  int n = 0;    // chunks per thread (power of two, n * vec <= 32)
  int vec = 1;  // elements per chunk
};
// Fewest threads that hold `len` elements at <= max_chunks(vec) chunks per thread:
// g = 32 * ceil(threads / 32), n = the smallest power of two with g * n chunks >= the slice; when
// one warp is already enough, one warp with the smallest power-of-two n that covers the slice. pow2_group rounds g up to a power of two (for the
// several-rows-per-block rung, whose groups must tile a block). g = 0 if the slice is too long.
inline RegCfg choose_regs(long long len, int vec, bool pow2_group) {
  RegCfg c;
  c.vec = vec;
  const int nmax = max_chunks(vec);
  const long long chunks = (len + vec - 1) / vec;
  const long long threads = (chunks + nmax - 1) / nmax;
  if (threads <= 32) {
    c.g = 32;
    c.n = 1;
    while (32LL * c.n < chunks) c.n *= 2;
    return c;
  }
  long long g = (threads + 31) / 32 * 32;
  if (pow2_group) {
    long long p = 32;
    while (p < g) p *= 2;
    g = p;
  }
  if (g > kMaxGroup) return c;  // g = 0: does not fit
  c.g = static_cast<int>(g);
  c.n = 1;
  while (static_cast<long long>(c.g) * c.n < chunks) c.n *= 2;
  return c;
}

// Calls f(std::integral_constant<int, N>{}) for the runtime n (a power of two), only for
// N <= max_chunks(VEC) (others are never instantiated).
template <int VEC, class F>
void dispatch_n(int n, F&& f) {
  auto go = [&](auto nc) {
    if constexpr (decltype(nc)::value <= max_chunks(VEC)) f(nc);
  };
  switch (n) {
    case 1: go(std::integral_constant<int, 1>{}); break;
    case 2: go(std::integral_constant<int, 2>{}); break;
    case 4: go(std::integral_constant<int, 4>{}); break;
    case 8: go(std::integral_constant<int, 8>{}); break;
    case 16: go(std::integral_constant<int, 16>{}); break;
    default: KL_REQUIRE(false, "softmax: internal: n = " << n);
  }
}

}  // namespace kl::softmax_detail
