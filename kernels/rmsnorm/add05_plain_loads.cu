// add05 plain_loads — fused rung 03 with x read by plain ld.global.v4.
//
// Parent: add03 cluster_row (= fused 02 where one block holds a row).
// Change: x by plain ld.global.v4 instead of ld.global.nc.L1::no_allocate.v4 (r was already a plain
//   load: it is written). Same kernel (row_regs.cu), launch shape and registers.
// Why: rmsnorm rung 08's change for the fused op (see there).
// Limits: odd widths (e.g. 4096x4099) stay weak.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_rmsnorm_plain_loads_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  return add_rmsnorm_cluster_row_supports(a, d);
}

void add_rmsnorm_plain_loads_run(const AddRmsnormArgs& a, cudaStream_t s, bool pdl) {
  const int sms = device_info().sms;
  const int me = max_elems(a.dtype, true, vec_ok(a));
  const int C = pick_cluster(a.dtype, a.rows, a.cols, me, sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, me, C, sms);
  RowRegsParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps,
                  cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  p.x_load = XLoad::plain;  // the one change
  p.pdl = pdl;
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/true, s);
}

void add_rmsnorm_plain_loads_launch(const AddRmsnormArgs& a, cudaStream_t s) { add_rmsnorm_plain_loads_run(a, s, false); }

}  // namespace kl::rmsnorm_detail
