// 08 plain_loads — rung 05 with x read by plain ld.global.v4 instead of the read-only,
// non-allocating path.
//
// Parent: 05 cluster_row (= rung 04 where one block holds a row).
// Change: x is loaded with ld.global.v4 (LDG.E.128) instead of ld.global.nc.L1::no_allocate.v4
//   (LDG.E.NA.128.CONSTANT). Same kernel (row_regs.cu), launch shape and registers (60 for bf16
//   V=4: 4 blocks of 256 threads per SM).
// Why: softmax's register-resident rung (plain loads) runs faster than rmsnorm 04 on the same shape,
//   occupancy and bytes; the read-only path is the one difference in how the bytes are requested.
// Limits: the aligned path only (unaligned rows already use plain scalar loads); x is never written
//   by the kernel, so both forms are correct. Supports exactly what rung 05 supports. Odd widths
//   (e.g. 4096x4099) stay weak.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string rmsnorm_plain_loads_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  return rmsnorm_cluster_row_supports(a, d);
}

void rmsnorm_plain_loads_run(const RmsnormArgs& a, cudaStream_t s, bool pdl) {
  const int sms = device_info().sms;
  const int me = max_elems(a.dtype, false, vec_ok(a));
  const int C = pick_cluster(a.dtype, a.rows, a.cols, me, sms);
  const RowRegsConfig cfg = row_regs_config(a.dtype, a.rows, a.cols, me, C, sms);
  RowRegsParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps,
                  cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  p.x_load = XLoad::plain;  // the one change
  p.pdl = pdl;
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/false, s);
}

void rmsnorm_plain_loads_launch(const RmsnormArgs& a, cudaStream_t s) { rmsnorm_plain_loads_run(a, s, false); }

}  // namespace kl::rmsnorm_detail
