// add03 cluster_row — fused rung 02 with the row split over a thread-block cluster.
//
// Parent: add02 row_in_registers.
// Change: C = 1, 2, 4 or 8 blocks per row add their partial sums through distributed shared memory
//   (as rmsnorm rung 05); otherwise C = 1 and this is fused rung 02.
// Why: rows longer than fused 02 holds (up to 131072 and beyond with 8 blocks) and shapes with
//   fewer rows than SMs.
// Limits: cc >= 9.0. 1024-thread blocks are not split in two (slower than C = 1 on 4096x16384 f32),
//   so pick_cluster keeps C = 1 there. Kernel: row_regs.cu.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_rmsnorm_cluster_row_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "thread-block clusters need compute capability >= 9.0";
  if (pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), d.sms) == 0)
    return "row too long for a cluster of 8 blocks x 1024 threads";
  return "";
}

void add_rmsnorm_cluster_row_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  const int sms = device_info().sms;
  const int C = pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), C, sms);
  const RowRegsParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/true, s);
}

}  // namespace kl::rmsnorm_detail
