// 05 cluster_row — rung 04 with a row split over a thread-block cluster of C = 1, 2, 4 or 8 blocks.
//
// Parent: 04 row_in_registers.
// Change: each block holds a 1/C slice of the row in registers; the blocks add their partial sums
//   through distributed shared memory (one float per row and block, one cluster barrier, every
//   thread reads the C partials in rank order, a second barrier before exit). C doubles while the
//   grid covers fewer than 2 x SMs blocks or blocks have 1024 threads, as long as each block keeps
//   >= 8192 columns; with many rows, or few rows under 16384 columns, C = 1 and this is rung 04.
// Why: rung 04 cannot hold rows longer than 32768 columns, leaves most SMs idle on few long rows,
//   and a 1024-thread group is one block per SM with nothing to hide its reduction bubble.
// Limits: needs clusters (cc >= 9.0). Kernel: row_regs.cu.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string rmsnorm_cluster_row_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "thread-block clusters need compute capability >= 9.0";
  if (pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), d.sms) == 0)
    return "row too long for a cluster of 8 blocks x 1024 threads";
  return "";
}

void rmsnorm_cluster_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  const int sms = device_info().sms;
  const int C = pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), C, sms);
  const RowRegsParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
