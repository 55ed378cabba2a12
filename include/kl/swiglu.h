// include/kl/swiglu.h — the SwiGLU family: arguments, rung table, entry point, CPU reference.
//
// y = silu(g) * u = g / (1 + exp(-g)) * u, elementwise over rows x cols (contiguous, row-major, so
// the op is a flat stream of n = rows * cols elements). fp32 or bf16 storage, fp32 math.
// Bytes moved (minimum): read g and u, write y = 3 * n * sizeof(storage). FLOPs counted: 5 per
// element (neg, exp, add, div, mul; exp counted as one).
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kl/dtype.h"
#include "kl/registry.h"

namespace kl {

struct SwigluArgs {
  const void* g = nullptr;  // [rows, cols] gate, storage `dtype`
  const void* u = nullptr;  // [rows, cols] up projection, storage `dtype`
  void* y = nullptr;        // [rows, cols] output, storage `dtype` (may alias neither input)
  int rows = 0, cols = 0;
  DType dtype = DType::f32;
};

// Every rung, in ladder order. The table is written once, in swiglu.cu.
const std::vector<Rung<SwigluArgs>>& swiglu_rungs();

// The entry point: picks the best supported rung for the shape and launches it. Every shape with
// rows >= 0, cols >= 1 and non-null pointers is computed (rung 00 takes anything); bad arguments
// throw kl::BadArgument before any launch.
void swiglu(const SwigluArgs& args, cudaStream_t stream);
// The rung swiglu() would launch (the bench's "auto" row), or nullptr if none supports `args`:
// the first supported rung of swiglu_pick_order() (the measured best first; see swiglu.cu).
const Rung<SwigluArgs>* swiglu_pick(const SwigluArgs& args, const DeviceInfo& d);
const std::vector<int>& swiglu_pick_order();

// Checks shared by every rung's supports(): "" or what is wrong with the arguments themselves.
std::string swiglu_check_args(const SwigluArgs& a);

// CPU double reference on the (already storage-rounded) inputs: y[i] = g / (1 + exp(-g)) * u.
void swiglu_reference(const float* g, const float* u, double* y, size_t n);
inline double swiglu_bytes(long long rows, long long cols, DType t) {
  return 3.0 * static_cast<double>(rows) * cols * dtype_size(t);
}
inline double swiglu_flops(long long rows, long long cols) {
  return 5.0 * static_cast<double>(rows) * cols;
}

// The rungs' own functions (defined one per file NN_*.cu; only swiglu.cu lists them).
namespace swiglu_detail {
#define KL_SWIGLU_RUNG(name)                                                   \
  std::string swiglu_##name##_supports(const SwigluArgs& a, const DeviceInfo& d);  \
  void swiglu_##name##_launch(const SwigluArgs& a, cudaStream_t s);
KL_SWIGLU_RUNG(scalar)
KL_SWIGLU_RUNG(vec128)
KL_SWIGLU_RUNG(unroll4)
KL_SWIGLU_RUNG(stream_hints)
KL_SWIGLU_RUNG(grid_stride)
KL_SWIGLU_RUNG(one_shot_hints)
KL_SWIGLU_RUNG(pdl)
#undef KL_SWIGLU_RUNG
}  // namespace swiglu_detail

}  // namespace kl
