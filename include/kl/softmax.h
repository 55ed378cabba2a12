// include/kl/softmax.h — the row-softmax family: arguments, rung table, entry point, CPU
// reference.
//
// y[r, :] = exp(x[r, :] - max_r) / sum(exp(x[r, :] - max_r)) over rows x cols (contiguous,
// row-major), fp32 or bf16 storage, fp32 math.
// Special values (every rung, and the reference):
//   * -inf entries contribute exp(-inf) = 0 and produce 0; large finite values (up to FLT_MAX) are
//     safe because the row max is subtracted before exp.
//   * A row that is ALL -inf produces ALL ZEROS (no max to subtract, an empty sum; we define the
//     distribution of an empty support as 0 rather than NaN = 0/0). torch gives NaN here.
//   * +inf or NaN anywhere in a row makes that row NaN (as torch).
// Bytes moved (minimum): read x, write y = 2 * rows * cols * sizeof(storage). FLOPs counted: 5 per
// element (max, sub, exp, add, mul).
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kl/dtype.h"
#include "kl/registry.h"

namespace kl {

struct SoftmaxArgs {
  const void* x = nullptr;  // [rows, cols] input, storage `dtype`
  void* y = nullptr;        // [rows, cols] output, storage `dtype` (must not alias x)
  int rows = 0, cols = 0;
  DType dtype = DType::f32;
};

// Every rung, in ladder order. The table is written once, in softmax.cu.
const std::vector<Rung<SoftmaxArgs>>& softmax_rungs();

// The entry point: picks the best supported rung for the shape and launches it. Every shape with
// rows >= 0, cols >= 1 and non-null pointers is computed (rungs 00-02 take anything); bad arguments
// throw kl::BadArgument before any launch.
void softmax(const SoftmaxArgs& args, cudaStream_t stream);
// The rung softmax() would launch (the bench's "auto" row), or nullptr: the first supported rung
// of softmax_pick_order() (the measured best first; see softmax.cu), with rung 03 tried first on
// rows that are not 16-byte vectors and on f32 rows of 1024 to 2048 elements.
const Rung<SoftmaxArgs>* softmax_pick(const SoftmaxArgs& args, const DeviceInfo& d);
const std::vector<int>& softmax_pick_order();

// Checks shared by every rung's supports(): "" or what is wrong with the arguments themselves.
std::string softmax_check_args(const SoftmaxArgs& a);

// CPU double reference on the (already storage-rounded) inputs, row by row, with the special-value
// rules above.
void softmax_reference(const float* x, double* y, long long rows, long long cols);
inline double softmax_bytes(long long rows, long long cols, DType t) {
  return 2.0 * static_cast<double>(rows) * cols * dtype_size(t);
}
inline double softmax_flops(long long rows, long long cols) {
  return 5.0 * static_cast<double>(rows) * cols;
}

// The rungs' own functions (one per file NN_*.cu; only softmax.cu lists them).
namespace softmax_detail {
#define KL_SOFTMAX_RUNG(name)                                                    \
  std::string softmax_##name##_supports(const SoftmaxArgs& a, const DeviceInfo& d);  \
  void softmax_##name##_launch(const SoftmaxArgs& a, cudaStream_t s);
KL_SOFTMAX_RUNG(three_pass)
KL_SOFTMAX_RUNG(warp_online)
KL_SOFTMAX_RUNG(block_row)
KL_SOFTMAX_RUNG(row_in_regs)
KL_SOFTMAX_RUNG(rows_per_block)
KL_SOFTMAX_RUNG(cluster_split)
KL_SOFTMAX_RUNG(prefetch_next_row)
KL_SOFTMAX_RUNG(one_reduction)
KL_SOFTMAX_RUNG(five_blocks)
KL_SOFTMAX_RUNG(stream_hints)
#undef KL_SOFTMAX_RUNG
}  // namespace softmax_detail

}  // namespace kl
