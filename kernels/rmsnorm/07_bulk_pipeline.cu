// Rung 07 — bulk_pipeline: the row travels DRAM -> shared memory by cp.async.bulk (the TMA copy
// engine) into a ring of S whole-row stages per persistent block, instead of DRAM -> registers by
// 16-byte loads.
//
// Why: rung 04 holds the bytes it has in flight in registers: 64 B per thread, 60 registers per
// thread -> 4 blocks of 256 threads per SM -> at most 64 KB per SM in flight, and only while a
// block is in its load phase; its reduction, w loads and stores leave the SM's share of DRAM idle
// unless another resident block happens to be loading (H200, 16384x8192 bf16: 0.1396 ms = 91% of
// the copy roof). Here one thread per block keeps S rows requested ahead (S - 1 rows in flight
// while the block computes on one): 2 blocks per SM (1 for rows > ~37 KB) x 3-16 stages =
// 96-200 KB per SM in flight, all the time, with no register cost; the reduction and the stores of row k overlap the loads of
// rows k+1 .. k+S-1. The block reads each stage twice from shared memory (sum of squares, then
// scale + store), DRAM once.
//
// Limits: aligned rows (16-byte row starts, cols % (16/es) == 0: cp.async.bulk moves multiples of
// 16 bytes), cc >= 9.0, at least 3 stages of one row in shared memory (rows up to ~75 KB: 37K bf16
// / 18K f32 columns), and many rows (>= 4 x SMs; fewer: rung 05 splits rows over clusters).
// Kernel: bulk_rows.cu.
// Measured (H200, round-2 batch 2026-11-29, results/h200/dev/batch/rmsnorm/{dram_bf16,dram_f32,small,
// sweep_*}.jsonl, 20 launches; WITH a per-row fence.proxy.async that compiled to MEMBAR.ALL.CTA,
// since removed — the version without it is first measured in the final run):
//   16384x8192 bf16 0.1458 ms (b=4, S=3; same-run rung 04 0.1387, cudaMemcpy 0.1286); sweep:
//   b=2, S=7 0.1404, b=1, S=6 0.1696 (hence b = 2 first now); 4096x16384 f32 0.1636 (b=1, S=3;
//   04: 0.1416); 4096x1024 bf16 0.0149 (04: 0.0078), f32 0.0170 (04: 0.0116). Slower than 04
//   everywhere: `auto` never picks it (rung 08 covers its domain).
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string bulk_pipeline_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "cp.async.bulk needs compute capability >= 9.0";
  if (!vec_ok(a))
    return "needs cols % " + std::to_string(16 / dtype_size(a.dtype)) +
           " == 0 and 16-byte-aligned x, w, y";
  if (a.rows < 4LL * d.sms) return "fewer than 4 x SMs rows: rung 05 splits rows over clusters";
  return bulk_config(a.dtype, /*fused=*/false, a.rows, a.cols, d).why;
}

void bulk_pipeline_launch(const RmsnormArgs& a, cudaStream_t s) {
  const BulkConfig cfg = bulk_config(a.dtype, false, a.rows, a.cols, device_info());
  const BulkParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps, cfg.stages};
  launch_bulk_rows(p, cfg, a.dtype, /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
