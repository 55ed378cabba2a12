// Rung 05 — cluster_row: rung 04 with a row split over a thread-block cluster of C = 1, 2, 4 or 8
// blocks. Each block holds a 1/C slice of the row in registers; the blocks add their partial sums
// of squares through distributed shared memory (each block publishes one float per row, one cluster
// barrier, every thread reads the C partials in rank order, a second barrier before exit).
//
// What it fixes: rung 04 gives a row to one group of <= 1024 threads, so (a) rows longer than 32768
// columns do not fit at all (64x131072 fell back to the two-pass rung 03) and (b) shapes with fewer
// rows than SMs (64x8192, 1x8192) leave most SMs idle; also (c) a 1024-thread group is one block
// per SM, with nothing to hide its reduction bubble. C doubles while the grid covers fewer than
// 2 x SMs blocks or blocks have 1024 threads, as long as each block keeps >= 1024 columns; with many
// moderate rows C = 1 and this is rung 04.
// Needs clusters: cc >= 9.0 (sm_90 and sm_120 both have them). Kernel: row_regs.cu.
// Measured (H200, round-1 run 2026-11-29, results/h200/dev/round1/rmsnorm.jsonl; % of the 4224 GB/s bench_peak copy):
//   = rung 04 where C = 1 (16384x8192 bf16 0.1397 ms); 64x131072 bf16 0.0189 ms (03: 0.0208);
//   16x131072 f32 0.0114 ms (03: 0.0316); 1x8192 bf16 0.0059 ms; 64x8192 bf16 0.0059 ms (04: 0.0058).
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string cluster_row_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  if (d.cc_major < 9) return "thread-block clusters need compute capability >= 9.0";
  if (pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), d.sms) == 0)
    return "row too long for a cluster of 8 blocks x 1024 threads";
  return "";
}

void cluster_row_launch(const RmsnormArgs& a, cudaStream_t s) {
  const int sms = device_info().sms;
  const int C = pick_cluster(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), C, sms);
  const RowRegsParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
