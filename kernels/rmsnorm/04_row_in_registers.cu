// 04 row_in_registers — the row is read from DRAM once and held in registers.
//
// Parent: 03 block_per_row.
// Change: a group of G threads (32..1024, the smallest power of two that keeps <= 32 elements per
//   thread) loads its whole row into registers (float v[V][K], V a template parameter so the array
//   stays in registers), reduces the squares, then scales what it holds and writes y. Short rows
//   pack several groups into a 256-thread block.
// Why: rungs 01-03 read each row twice; the second read hits L2 but still costs L2 bandwidth and a
//   dependent round trip per chunk.
// Limits: rows up to 32768 columns (1024 threads x 32 elements). Unaligned rows use the same slices
//   with scalar accesses, warp-interleaved (32 consecutive columns per warp access), at most 16
//   elements per thread (16384 columns). Kernel: row_regs.cu.
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string rmsnorm_row_in_registers_supports(const RmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  return row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), 1, d.sms).why;
}

void rmsnorm_row_in_registers_launch(const RmsnormArgs& a, cudaStream_t s) {
  const RowRegsConfig cfg =
      row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, false, vec_ok(a)), 1, device_info().sms);
  const RowRegsParams p{a.x, a.w, a.y, nullptr, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/false, s);
}

}  // namespace kl::rmsnorm_detail
