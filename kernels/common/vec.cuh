// kernels/common/vec.cuh — storage-type traits and 16-byte vector loads/stores for the
// memory-bound row/elementwise kernels (rmsnorm, swiglu, softmax).
//
//   Elem<D>            D = DType::f32 or DType::bf16: storage type T, kVec = elements per 16 bytes
//                      (4 or 8), scalar load(p, i) / store(p, i, f) with fp32 math, and
//                      unpack(uint4 -> float[kVec]) / pack(float[kVec] -> uint4).
//   ld16<L>(p)         one 16-byte global load (128-bit LDG) with a cache hint L:
//                        Ld::normal        ld.global.v4.u32
//                        Ld::nc_noalloc    ld.global.nc.L1::no_allocate.v4.u32 — read-only path,
//                                          don't keep the line in L1 (a streamed input read once).
//                                          ONLY for data nothing writes during the kernel (not an
//                                          in/out buffer such as the fused residual).
//                        Ld::stream        ld.global.cs.v4.u32 — evict-first ("streaming") in L1/L2.
//   st16<S>(p, v)      one 16-byte global store: St::normal (st.global.v4.u32) or St::stream
//                      (st.global.cs.v4.u32: evict-first, the written line is not expected again).
//   load_vec<D, L>(p, f)   16 bytes at p -> float f[kVec];   store_vec<D, S>(p, f): the reverse.
//
// Every 16-byte access needs a 16-byte-aligned address: callers check kl::aligned() and cols % kVec
// in supports() (or fall back to scalar code). One kernel template over DType D serves f32 and bf16:
//   template <DType D> __global__ void k(const typename Elem<D>::T* x, ...)
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kl/dtype.h"

namespace kl {

template <DType D>
struct Elem;

template <>
struct Elem<DType::f32> {
  using T = float;
  static constexpr int kVec = 4;  // floats per 16 bytes
  static __device__ __forceinline__ float load(const T* p, long long i) { return p[i]; }
  static __device__ __forceinline__ void store(T* p, long long i, float f) { p[i] = f; }
  static __device__ __forceinline__ float round(float f) { return f; }  // storage rounding
  static __device__ __forceinline__ void unpack(const uint4& v, float (&f)[kVec]) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
  }
  static __device__ __forceinline__ uint4 pack(const float (&f)[kVec]) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                      __float_as_uint(f[3]));
  }
};

template <>
struct Elem<DType::bf16> {
  using T = __nv_bfloat16;
  static constexpr int kVec = 8;  // bf16 per 16 bytes
  static __device__ __forceinline__ float load(const T* p, long long i) {
    return __bfloat162float(p[i]);
  }
  static __device__ __forceinline__ void store(T* p, long long i, float f) {
    p[i] = __float2bfloat16_rn(f);  // round to nearest even, as kl::round_to_bf16 on the host
  }
  static __device__ __forceinline__ float round(float f) {
    return __bfloat162float(__float2bfloat16_rn(f));
  }
  // A bf16 is the top half of an fp32: widening is a shift / mask, exact.
  static __device__ __forceinline__ void unpack(const uint4& v, float (&f)[kVec]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);              // low half = lower address element
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);  // high half
    }
  }
  static __device__ __forceinline__ uint4 pack(const float (&f)[kVec]) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);  // .x = low half
      w[i] = *reinterpret_cast<uint32_t*>(&h);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

enum class Ld { normal, nc_noalloc, stream };
enum class St { normal, stream };

template <Ld L = Ld::normal>
__device__ __forceinline__ uint4 ld16(const void* p) {
  uint4 v;
  if constexpr (L == Ld::normal) {
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else if constexpr (L == Ld::nc_noalloc) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else {
    asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  }
  return v;
}

// Stores: non-volatile asm with a "memory" clobber (as CUDA's own __stcs), loads: volatile asm with
// no clobber (as __ldg). So the compiler keeps loads in program order relative to stores: issue all
// the loads you want in flight before the first store.
template <St S = St::normal>
__device__ __forceinline__ void st16(void* p, const uint4& v) {
  if constexpr (S == St::normal) {
    asm("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
        : "memory");
  } else {
    asm("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
        "r"(v.w)
        : "memory");
  }
}

// 16 bytes of storage at p (16-byte aligned) -> kVec floats.
template <DType D, Ld L = Ld::normal>
__device__ __forceinline__ void load_vec(const typename Elem<D>::T* p, float (&f)[Elem<D>::kVec]) {
  Elem<D>::unpack(ld16<L>(p), f);
}
// kVec floats -> 16 bytes of storage at p (rounded to the storage type).
template <DType D, St S = St::normal>
__device__ __forceinline__ void store_vec(typename Elem<D>::T* p, const float (&f)[Elem<D>::kVec]) {
  st16<S>(p, Elem<D>::pack(f));
}

}  // namespace kl
