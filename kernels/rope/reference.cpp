// kernels/rope/reference.cpp — the RoPE CPU reference in double (include/kl/rope.h).
#include <cmath>
#include <vector>

#include "kl/rope.h"

namespace kl {

void rope_reference(const float* qkv, const int* pos, long long t0, long long t1, int Hq, int Hkv,
                    int D, float theta, double* q, double* k) {
  const int half = D / 2;
  const long long row = static_cast<long long>(Hq + 2 * Hkv) * D;
  std::vector<double> inv_freq(half), c(half), s(half);
  for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(static_cast<double>(theta), -2.0 * i / D);
  for (long long t = t0; t < t1; ++t) {
    for (int i = 0; i < half; ++i) {
      const double angle = static_cast<double>(pos[t]) * inv_freq[i];
      c[i] = std::cos(angle);
      s[i] = std::sin(angle);
    }
    for (int h = 0; h < Hq + Hkv; ++h) {
      const float* x = qkv + t * row + static_cast<long long>(h) * D;
      double* y = h < Hq ? q + (t * Hq + h) * D : k + (t * Hkv + (h - Hq)) * D;
      for (int i = 0; i < half; ++i) {
        const double a = x[i], b = x[i + half];
        y[i] = a * c[i] - b * s[i];
        y[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace kl
