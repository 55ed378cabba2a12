// kernels/common/silu.cuh — SwiGLU's element math, shared by the swiglu family and the decoder
// layer's fused gate/up epilogue.
#pragma once
#include <cuda_runtime.h>

namespace kl {

// silu(g) * u in fp32. __expf(-g) overflows to +inf below g ~ -88 and __fdividef then returns 0:
// the correct limit (g * sigmoid(g) -> -0). Approximate exp/div are ~2 ulp: far inside tolerance.
__device__ __forceinline__ float silu_mul(float g, float u) { return __fdividef(g, 1.0f + __expf(-g)) * u; }

}  // namespace kl
