// Rung 08 — plain_loads: rung 05 (= rung 04 where one block holds a row) with x read by plain
// ld.global.v4 instead of ld.global.nc.L1::no_allocate.v4 (LDG.E.128 instead of
// LDG.E.NA.128.CONSTANT in the SASS). Nothing else changes: same kernel (row_regs.cu), same launch
// shape, same registers (60 for bf16 V=4: 4 blocks of 256 threads per SM).
//
// Why: the same-run figures of the two register-resident row kernels differ by 4% on the same
// shape, occupancy and bytes: softmax rung 03 (plain ld.global loads, no weight vector) 0.1337 ms
// on 16384x8192 bf16 (results/h200/dev/batch/rowops/softmax.jsonl), rmsnorm rung 04 (read-only
// non-allocating loads) 0.1387 ms (results/h200/dev/batch/rmsnorm/dram_bf16.jsonl). The read-only path
// is the one difference in how the bytes are requested; this rung measures it (the other one,
// the w loads after the reduction, is unchanged). Round-2 request for the A/B (KL_RMSNORM_LDN)
// was cut by the batch's time limit, so the final run is this rung's first measurement.
// Applies to the aligned path (unaligned rows already use plain scalar loads); x is never written
// by the kernel, so both forms are correct. Supports exactly what rung 05 supports.
// Measured (H200, final run of 14647d0, results/h200/dev/final-14647d0/rmsnorm.jsonl, bf16, 1980 MHz): 16384x8192
// 4004 GB/s (0.97x the same-run cudaMemcpy 4138), 65536x4096 4122 (0.99x of 4149); the best rung
// on both large shapes. Odd widths stay weak: 4096x4099 1160 GB/s (copy 3331).
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string plain_loads_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  return cluster_row_supports(a, d);
}

void plain_loads_launch(const RmsnormArgs& a, cudaStream_t s) {
  const int sms = device_info().sms;
  const int me = max_elems(a.dtype, false, vec_ok(a));
  const int C = pick_cluster(a.dtype, a.rows, a.cols, me, sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, me, C, sms);
  RowRegsParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps,
                  cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  p.ld_normal = 1;  // the one change
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
