// kernels/common/silu.cuh — SwiGLU's element math, shared by the swiglu family and the decoder
// layer's fused gate/up epilogue, and the bf16 rounding of an fp32 value that feeds it.
#pragma once
#include <cuda_bf16.h>

namespace kl {

// silu(g) * u in fp32. __expf(-g) overflows to +inf below g ~ -88 and __fdividef then returns 0:
// the correct limit (g * sigmoid(g) -> -0). Approximate exp/div are ~2 ulp: far inside tolerance.
__device__ __forceinline__ float silu_mul(float g, float u) { return __fdividef(g, 1.0f + __expf(-g)) * u; }

// v rounded to bf16 (nearest even) and back: the value a bf16 tensor would hold.
__device__ __forceinline__ float bf16_round(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

}  // namespace kl
