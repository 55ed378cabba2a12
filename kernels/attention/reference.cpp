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

std::vector<AttentionRowId> attention_sample_rows(const AttentionArgs& a, int n, uint64_t seed,
                                                  int max_kv_heads) {
  std::vector<AttentionRowId> rows;
  const long long total = static_cast<long long>(a.B) * a.Hq * a.Sq;
  if (total <= n) {
    for (int b = 0; b < a.B; ++b)
      for (int h = 0; h < a.Hq; ++h)
        for (int i = 0; i < a.Sq; ++i) rows.push_back({b, h, i});
    return rows;
  }
  uint64_t x = seed ? seed : 0x9E3779B97F4A7C15ULL;
  auto next = [&x]() {  // splitmix64
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  const int G = a.Hq / a.Hkv;
  const long long kv_heads = static_cast<long long>(a.B) * a.Hkv;
  // Enough heads that n distinct rows exist (decode: G * Sq rows per KV head).
  const long long per_head = static_cast<long long>(G) * a.Sq;
  const long long want_heads =
      std::min<long long>(kv_heads, std::max<long long>(max_kv_heads, (n + per_head - 1) / per_head));
  std::vector<long long> heads;  // chosen (b * Hkv + hkv)
  heads.push_back(0);
  while (static_cast<long long>(heads.size()) < want_heads) {
    long long h = static_cast<long long>(next() % kv_heads);
    if (std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
  }
  std::set<std::tuple<int, int, int>> seen;
  auto add = [&](int b, int h, int i) {
    if (seen.insert({b, h, i}).second) rows.push_back({b, h, i});
  };
  add(0, 0, a.Sq - 1);
  add(0, 0, 0);
  for (int tries = 0; static_cast<int>(rows.size()) < n && tries < 64 * n; ++tries) {
    const long long kh = heads[next() % heads.size()];
    const int b = static_cast<int>(kh / a.Hkv), hkv = static_cast<int>(kh % a.Hkv);
    const int h = hkv * G + static_cast<int>(next() % G);
    add(b, h, static_cast<int>(next() % a.Sq));
  }
  return rows;
}

}  // namespace kl
