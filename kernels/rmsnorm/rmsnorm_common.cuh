// kernels/rmsnorm/rmsnorm_common.cuh — device pieces every rmsnorm rung shares.
//
// The sum of squares is accumulated on x * 2^-32 (exact: a power of two) so that it cannot
// overflow fp32 for |x| up to ~7.9e28 / sqrt(cols); rms_inv() undoes the scale. See rmsnorm.h.
#pragma once
#include <cuda_runtime.h>

namespace kl::rmsnorm_detail {

constexpr float kSsScale = 2.3283064365386963e-10f;  // 2^-32, exact in fp32

// Square of the pre-scaled value, added to the running sum.
__device__ __forceinline__ float ss_term(float v) {
  const float s = v * kSsScale;
  return s * s;
}

// The factor y = x * rms_inv(...) * w uses: 1 / sqrt(ss_true / cols + eps) where ss = ss_true * 2^-64.
//   1/sqrt(ss_true/cols + eps) = 2^-32 / sqrt(ss/cols + eps * 2^-64); every intermediate stays normal
//   for eps >= ~1e-12 or rms >= ~5e-10 and finite for any finite input.
__device__ __forceinline__ float rms_inv(float ss, int cols, float eps) {
  return kSsScale * rsqrtf(ss / static_cast<float>(cols) + eps * (kSsScale * kSsScale));
}

}  // namespace kl::rmsnorm_detail
