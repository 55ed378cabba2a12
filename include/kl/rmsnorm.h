// include/kl/rmsnorm.h — RMSNorm and fused residual-add + RMSNorm: arguments, rung tables,
// entry points.
//
//   rmsnorm:      y[i,:] = x[i,:] / sqrt(mean_j(x[i,j]^2) + eps) * w          (op "rmsnorm")
//   add_rmsnorm:  r[i,:] = r[i,:] + x[i,:]  (rounded to the storage type, then used)
//                 y[i,:] = rmsnorm(r[i,:]) * w                                  (op "add_rmsnorm")
//
// Row-major rows x cols, x / r / w / y all of one storage type (f32 or bf16), w is [cols]; all math
// in fp32. The sum of squares is accumulated as sum((x * 2^-32)^2) and undone in the final scale, so
// it does not overflow for |x| up to ~7.9e28 / sqrt(cols) (an exact power-of-two rescaling: the result
// equals the unscaled fp32 computation wherever that one is finite); rows whose rms is below ~5e-10
// lose relative precision in the sum (their squares become fp32 subnormals), which only matters with
// eps ~ 0. y must not overlap x, r or w.
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "kl/device.h"
#include "kl/dtype.h"
#include "kl/registry.h"

namespace kl {

struct RmsnormArgs {
  const void* x = nullptr;  // [rows, cols]
  const void* w = nullptr;  // [cols]
  void* y = nullptr;        // [rows, cols]
  int rows = 0, cols = 0;
  float eps = 1e-6f;
  DType dtype = DType::bf16;
};

struct AddRmsnormArgs {
  void* r = nullptr;        // [rows, cols] residual, read and written (r += x)
  const void* x = nullptr;  // [rows, cols]
  const void* w = nullptr;  // [cols]
  void* y = nullptr;        // [rows, cols]
  int rows = 0, cols = 0;
  float eps = 1e-6f;
  DType dtype = DType::bf16;
};

// The tables (number, name, change, supports, launch), written once in rmsnorm.cu.
const std::vector<Rung<RmsnormArgs>>& rmsnorm_rungs();
const std::vector<Rung<AddRmsnormArgs>>& add_rmsnorm_rungs();

// Entry points ("auto"): the best supported rung for the shape. Any valid shape and alignment is
// computed (the naive rungs take everything); invalid arguments throw kl::BadArgument.
void rmsnorm(const RmsnormArgs& a, cudaStream_t s);
void add_rmsnorm(const AddRmsnormArgs& a, cudaStream_t s);
const Rung<RmsnormArgs>* rmsnorm_pick(const RmsnormArgs& a, const DeviceInfo& d);
const Rung<AddRmsnormArgs>* add_rmsnorm_pick(const AddRmsnormArgs& a, const DeviceInfo& d);

// Minimum DRAM bytes and counted FLOPs of one launch (x, w read once, y written once; the fused op
// also reads and writes r). FLOPs: square + add, scale, weight = 4 per element (+1 for r + x).
double rmsnorm_bytes(const RmsnormArgs& a);
double add_rmsnorm_bytes(const AddRmsnormArgs& a);
double rmsnorm_flops(const RmsnormArgs& a);
double add_rmsnorm_flops(const AddRmsnormArgs& a);

}  // namespace kl
