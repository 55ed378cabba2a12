// add04 bulk_pipeline — fused rung 02's one DRAM pass with r and x brought into a ring of S
// shared-memory stages per persistent block by cp.async.bulk (as rmsnorm rung 07).
//
// Parent: add02 row_in_registers.
// Change: S - 1 rows (r and x) per block are in flight while the block adds, reduces and stores the
//   oldest one. Pass 1 writes r = round(r + x) and sums its squares; pass 2 recomputes round(r + x)
//   from the stage (the same bits) and writes y.
// Why: fused 02 keeps its in-flight bytes in registers (r and x live together: 4 blocks of 256
//   threads per SM, and only during the load phase).
// Limits: aligned rows, cc >= 9.0, three stages of (r, x) in shared memory (rows up to ~37 KB each:
//   18K bf16 / 9K f32 columns; 4096x16384 f32 stays on fused 02/03), >= 4 x SMs rows. Never picked
//   by `auto` (fused 05 covers its domain). Kernel: bulk_rows.cu.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_rmsnorm_bulk_pipeline_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "cp.async.bulk needs compute capability >= 9.0";
  if (!vec_ok(a))
    return "needs cols % " + std::to_string(16 / dtype_size(a.dtype)) +
           " == 0 and 16-byte-aligned r, x, w, y";
  if (a.rows < 4LL * d.sms) return "fewer than 4 x SMs rows: fused 03 splits rows over clusters";
  return bulk_config(a.dtype, /*fused=*/true, a.rows, a.cols, d).why;
}

void add_rmsnorm_bulk_pipeline_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  const BulkConfig cfg = bulk_config(a.dtype, true, a.rows, a.cols, device_info());
  const BulkParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps, cfg.stages};
  launch_bulk_rows(p, cfg, a.dtype, /*fused=*/true, s);
}

}  // namespace kl::rmsnorm_detail
