// 07 bulk_pipeline — the row travels DRAM -> shared memory by cp.async.bulk (TMA) into a ring of S
// whole-row stages per persistent block.
//
// Parent: 04 row_in_registers.
// Change: one thread per block keeps S rows requested ahead (S - 1 in flight while the block
//   computes on one); 2 blocks per SM (1 for rows > ~37 KB) x 3-16 stages. The block reads each
//   stage twice from shared memory (sum of squares, then scale + store), DRAM once.
// Why: rung 04 holds its in-flight bytes in registers (at most 64 KB per SM, and only during a
//   block's load phase); here 96-200 KB per SM are in flight all the time at no register cost, and
//   the reduction and stores of row k overlap the loads of rows k+1 .. k+S-1.
// Limits: aligned rows (cp.async.bulk moves multiples of 16 bytes), cc >= 9.0, at least 3 stages of
//   one row in shared memory (rows up to ~75 KB: 37K bf16 / 18K f32 columns), many rows (>= 4 x
//   SMs). Slower than 04 where measured: `auto` never picks it (rung 08 covers its domain).
//   Kernel: bulk_rows.cu.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string rmsnorm_bulk_pipeline_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "cp.async.bulk needs compute capability >= 9.0";
  if (!vec_ok(a))
    return "needs cols % " + std::to_string(16 / dtype_size(a.dtype)) +
           " == 0 and 16-byte-aligned x, w, y";
  if (a.rows < 4LL * d.sms) return "fewer than 4 x SMs rows: rung 05 splits rows over clusters";
  return bulk_config(a.dtype, /*fused=*/false, a.rows, a.cols, d).why;
}

void rmsnorm_bulk_pipeline_launch(const RmsnormArgs& a, cudaStream_t s) {
  const BulkConfig cfg = bulk_config(a.dtype, false, a.rows, a.cols, device_info());
  const BulkParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps, cfg.stages};
  launch_bulk_rows(p, cfg, a.dtype, /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
