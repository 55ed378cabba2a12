// kernels/rmsnorm/rmsnorm_ref.h — CPU references (double math on the stored inputs) for the bench
// and the tests. Inputs are the values as stored (bf16 already widened exactly to float).
#pragma once
#include <vector>

#include "kl/dtype.h"

namespace kl {

// y[i,j] = x[i,j] / sqrt(mean_j x^2 + eps) * w[j] in double (the result rounded to float once).
// Multi-threaded over rows when the problem is large.
void rmsnorm_ref(const float* x, const float* w, float* y, int rows, int cols, float eps);

// The fused op: r_out[i,j] = round_storage(float(r[i,j]) + float(x[i,j])) — the fp32 sum rounded to
// the storage type t, exactly what the GPU stores — then y = rmsnorm(r_out) * w in double.
void add_rmsnorm_ref(const float* r, const float* x, const float* w, float* r_out, float* y,
                     int rows, int cols, float eps, DType t);

}  // namespace kl
