// kernels/attention/reference.cpp — CPU double attention reference (see reference.h).
#include "attention/reference.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace kl {

int attention_visible_keys(int i, int Sq, int Skv, bool causal) {
  return causal ? std::min(Skv, i + (Skv - Sq) + 1) : Skv;
}

double attention_scale(const AttentionArgs& a) {
  return a.scale > 0.f ? static_cast<double>(a.scale) : 1.0 / std::sqrt(static_cast<double>(a.D));
}

void attention_reference_row(const float* q, const float* K, const float* V, int visible, int D,
                             double scale, double* out) {
  std::vector<double> s(std::max(visible, 0));
  double mx = -INFINITY;
  for (int j = 0; j < visible; ++j) {
    double dot = 0;
    const float* k = K + static_cast<size_t>(j) * D;
    for (int d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * k[d];
    s[j] = dot * scale;
    mx = std::max(mx, s[j]);
  }
  for (int d = 0; d < D; ++d) out[d] = 0;
  double sum = 0;
  for (int j = 0; j < visible; ++j) {
    const double p = std::exp(s[j] - mx);
    sum += p;
    const float* v = V + static_cast<size_t>(j) * D;
    for (int d = 0; d < D; ++d) out[d] += p * v[d];
  }
  if (sum > 0)
    for (int d = 0; d < D; ++d) out[d] /= sum;
}

std::vector<double> attention_reference(const std::vector<float>& Q, const std::vector<float>& K,
                                        const std::vector<float>& V, const AttentionArgs& a) {
  const int D = a.D, G = a.Hq / a.Hkv;
  std::vector<double> O(static_cast<size_t>(a.B) * a.Hq * a.Sq * D);
  const double scale = attention_scale(a);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.Hq; ++h) {
      const size_t kvo = (static_cast<size_t>(b) * a.Hkv + h / G) * a.Skv * D;
      for (int i = 0; i < a.Sq; ++i) {
        const size_t row = (static_cast<size_t>(b) * a.Hq + h) * a.Sq + i;
        attention_reference_row(&Q[row * D], &K[kvo], &V[kvo],
                                attention_visible_keys(i, a.Sq, a.Skv, a.causal), D, scale,
                                &O[row * D]);
      }
    }
  return O;
}

}  // namespace kl
