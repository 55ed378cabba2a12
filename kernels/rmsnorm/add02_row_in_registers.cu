// add02 row_in_registers — rmsnorm rung 04's register-resident design for the fused op.
//
// Parent: add01 block_per_row.
// Change: each thread loads its r and x chunks (128-bit accesses), writes s = round(r + x) back to
//   r at once and keeps s in registers.
// Why: r and x are read from DRAM once and nothing is re-read: the minimum traffic (read x, r, w;
//   write r, y).
// Limits: r and x chunks are live together while the loads are in flight, so at most 32 bf16 or
//   16 f32 elements per thread: rows up to 32768 bf16 / 16384 f32 columns. Unaligned rows use
//   scalar accesses, warp-interleaved (16 elements per thread). Kernel: row_regs.cu.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_rmsnorm_row_in_registers_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  return row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), 1, d.sms).why;
}

void add_rmsnorm_row_in_registers_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  const RowRegsConfig cfg =
      row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), 1, device_info().sms);
  const RowRegsParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/true, s);
}

}  // namespace kl::rmsnorm_detail
