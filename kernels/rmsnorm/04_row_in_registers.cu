// Rung 04 — row_in_registers: the row is read from DRAM once. A group of G threads (32..1024, the
// smallest power of two that keeps <= 32 elements per thread) loads its whole row into registers
// (float v[V][K], V chunks of one 16-byte vector each, V a template parameter so the array stays in
// registers), reduces the squares (warp shuffles + one shared-memory exchange between the group's
// warps), then scales what it already holds and writes y. Rungs 01-03 read each row twice; the
// second read hit L2 but still cost L2 bandwidth and a dependent round trip per chunk. Short rows
// pack several groups into a 256-thread block (fewer rows per block when rows are few).
//
// Rows up to 32768 columns (1024 threads x 32 elements). Unaligned rows (cols % K != 0 or
// misaligned pointers) use the same layout with scalar accesses and at most 16 elements per thread
// (fp32 registers; 16384 columns). Kernel: row_regs.cu.
// Measured (H200): pending
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string row_in_registers_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  return row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), 1, d.sms).why;
}

void row_in_registers_launch(const RmsnormArgs& a, cudaStream_t s) {
  const RowRegsConfig cfg =
      row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), 1, device_info().sms);
  const RowRegsParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
