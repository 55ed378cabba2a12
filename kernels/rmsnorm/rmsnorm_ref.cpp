// kernels/rmsnorm/rmsnorm_ref.cpp — CPU references; see rmsnorm_ref.h.
#include "rmsnorm_ref.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/parallel.h"

namespace kl {
namespace {

// Runs f(row0, row1) over [0, rows) on the host's cores (serial when under ~1M elements).
void parallel_rows(int rows, long long cols, const std::function<void(int, int)>& f) {
  const bool small = static_cast<long long>(rows) * cols < (1LL << 20);
  parallel_for(rows, [&](long long r0, long long r1) { f(static_cast<int>(r0), static_cast<int>(r1)); },
               small ? rows + 1LL : 2LL);
}

void norm_rows(const float* x, const float* w, float* y, int r0, int r1, int cols, float eps) {
  for (int i = r0; i < r1; ++i) {
    const float* xr = x + static_cast<long long>(i) * cols;
    float* yr = y + static_cast<long long>(i) * cols;
    double ss = 0.0;
    for (int j = 0; j < cols; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const double inv = 1.0 / std::sqrt(ss / cols + static_cast<double>(eps));
    for (int j = 0; j < cols; ++j) yr[j] = static_cast<float>(xr[j] * inv * w[j]);
  }
}

}  // namespace

void rmsnorm_ref(const float* x, const float* w, float* y, int rows, int cols, float eps) {
  parallel_rows(rows, cols, [&](int r0, int r1) { norm_rows(x, w, y, r0, r1, cols, eps); });
}

void add_rmsnorm_ref(const float* r, const float* x, const float* w, float* r_out, float* y,
                     int rows, int cols, float eps, DType t) {
  parallel_rows(rows, cols, [&](int r0, int r1) {
    const long long b = static_cast<long long>(r0) * cols, e = static_cast<long long>(r1) * cols;
    for (long long k = b; k < e; ++k) {
      const float s = r[k] + x[k];  // fp32 add, as the GPU does
      r_out[k] = t == DType::bf16 ? round_to_bf16(s) : s;
    }
    norm_rows(r_out, w, y, r0, r1, cols, eps);
  });
}

}  // namespace kl
