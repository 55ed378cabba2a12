// Fused rung 03 — cluster_row: fused rung 02 with the row split over a thread-block cluster of
// C = 1, 2, 4 or 8 blocks that add their partial sums through distributed shared memory (as rmsnorm
// rung 05). Fixes rows longer than fused 02 holds (32768 bf16 / 16384 f32 columns; up to 131072 and
// beyond with 8 blocks), shapes with fewer rows than SMs,
// and 1024-thread groups (4096x16384 f32: one block per SM; C = 2 makes two 512-thread blocks per
// SM that hide each other's reduction). Otherwise C = 1 and this is fused rung 02. Needs cc >= 9.0.
// Kernel: row_regs.cu.
// Measured (H200, round-1 run 2026-11-29, results/h200/dev/round1/rmsnorm.jsonl; % of the 4224 GB/s bench_peak copy):
//   = fused 02 where C = 1; 64x131072 bf16 0.0273 ms (01: 0.1146); 16x131072 f32 0.0204 ms.
//   4096x16384 f32 ran C = 2 in round 1: 0.2973 ms vs 0.2735 with C = 1 (fused 02) — the split of
//   1024-thread blocks was dropped from pick_cluster (C = 1 there now).
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_cluster_row_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "thread-block clusters need compute capability >= 9.0";
  if (pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), d.sms) == 0)
    return "row too long for a cluster of 8 blocks x 1024 threads";
  return "";
}

void add_cluster_row_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  const int sms = device_info().sms;
  const int C = pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), C, sms);
  const RowRegsParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/true, s);
}

}  // namespace kl::rmsnorm_detail
