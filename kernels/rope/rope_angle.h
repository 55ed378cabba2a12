// kernels/rope/rope_angle.h — the rotation angle of one (position, pair) as a fraction of a turn,
// shared by the kernels and the CPU tests (host and device code; family-private).
//
// RopeFreqs: for each pair index i < D/2 the turns per position v_i = theta^(-2i/D) / (2 pi),
// computed in double on the host and passed to a kernel as a parameter (no allocation) as two floats,
// hi = fl(v_i) and lo = fl(v_i - hi).
// rope_turn(pos, f): the angle pos * v_i reduced to about [-0.8, 0.8] turns. With p = float(pos)
// (exact for |pos| <= 2^24), ph = p * hi rounded and e = fma(p, hi, -ph) its exact remainder,
// ph - rint(ph) is exact and p * v_i = ph + e + p * lo (+ p * (v_i - hi - lo), below 2^-26 turns), so
// the result is within about 2^-24 turns (2^-21.4 radians) of the true angle modulo one turn; the
// kernels then take sincospif(2 * turn). An fp32 product pos * inv_freq would be off by up to
// pos * 2^-24 radians instead (0.008 at position 2^17).
#pragma once
#include <cuda_runtime.h>  // float2

#include <cmath>

#ifdef __CUDACC__
#define KL_ROPE_HD __host__ __device__
#else
#define KL_ROPE_HD
#endif

namespace kl::rope_detail {

constexpr int kMaxPairs = 64;  // D / 2 for D = 128

struct RopeFreqs {
  float2 turns[kMaxPairs];  // (hi, lo) turns per position of pair i; pairs >= D / 2 unused
};

// The table for (theta, D), in double on the host.
inline RopeFreqs rope_freqs(float theta, int D) {
  RopeFreqs f{};
  const double two_pi = 6.283185307179586476925286766559;
  for (int i = 0; i < D / 2 && i < kMaxPairs; ++i) {
    const double v = std::pow(static_cast<double>(theta), -2.0 * i / D) / two_pi;
    const float hi = static_cast<float>(v);
    f.turns[i] = make_float2(hi, static_cast<float>(v - hi));
  }
  return f;
}

// p * hi rounded once to fp32, never fused with a later add (the remainder below needs the rounded
// product itself).
KL_ROPE_HD inline float rope_mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// pos * (hi + lo) turns, reduced modulo one turn (see the file header).
KL_ROPE_HD inline float rope_turn(int pos, float2 f) {
  const float p = static_cast<float>(pos);
  const float ph = rope_mul_rn(p, f.x);
  const float e = fmaf(p, f.x, -ph);  // exact: p * hi = ph + e
  return (ph - rintf(ph)) + fmaf(p, f.y, e);
}

}  // namespace kl::rope_detail
