// Fused rung 05 — plain_loads: fused rung 03 (= fused 02 where one block holds a row) with x read
// by plain ld.global.v4 instead of ld.global.nc.L1::no_allocate.v4 (r was already a plain load: it
// is written). Same kernel (row_regs.cu), launch shape and registers; the A/B of rmsnorm rung 08
// for the fused op (see there for why: softmax's register rung with plain loads runs 4% faster
// than rmsnorm 04 on the same shape). First measured in the final run.
// Measured (H200, final run of 14647d0, results/h200/dev/final-14647d0/rmsnorm.jsonl, bf16, 1980 MHz): 16384x8192
// 4025 GB/s (0.97x the same-run cudaMemcpy 4140), 65536x4096 4118 (0.98x of 4219); the best fused
// rung on both. Odd widths stay weak: 4096x4099 621 GB/s (copy 3758).
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_plain_loads_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  return add_cluster_row_supports(a, d);
}

void add_plain_loads_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  const int sms = device_info().sms;
  const int me = max_elems(a.dtype, true, vec_ok(a));
  const int C = pick_cluster(a.dtype, a.rows, a.cols, me, sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, me, C, sms);
  RowRegsParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps,
                  cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  p.ld_normal = 1;  // the one change
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/true, s);
}

}  // namespace kl::rmsnorm_detail
