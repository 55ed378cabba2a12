// Fused rung 02 — row_in_registers: the register-resident design of rmsnorm rung 04 for the fused
// op. Each thread loads its r and x chunks (128-bit accesses), writes s = round(r + x) back to r at
// once and keeps s in registers, so r and x are read from DRAM once and nothing is re-read: the
// minimum traffic (read x, r, w; write r, y). r and x chunks are live together while the loads are
// in flight, so at most 32 bf16 (packed: 2 x 16 registers) or 16 f32 elements per thread: rows up
// to 32768 bf16 / 16384 f32 columns. Unaligned rows use scalar accesses, warp-interleaved (16
// elements per thread). Kernel: row_regs.cu.
// Measured (H200, round-1 run 2026-11-29, results/h200/dev/round1/rmsnorm.jsonl; % of the 4224 GB/s bench_peak copy):
//   16384x8192 bf16 0.2727 ms (3937 GB/s, 93.2%; same-bytes cudaMemcpy 0.2570, torch.compile 0.2622);
//   4096x16384 f32 0.2735 ms (92.9%; torch.compile 0.2805); 65536x4096 bf16 0.5290 ms (96.1%;
//   torch.compile 0.5033). Round-2 batch (results/h200/dev/batch/rmsnorm/*.jsonl): 16384x8192 bf16 0.2722 ms
//   (93.4%), 4096x16384 f32 0.2734; unaligned 4096x4099 f32 0.0957 ms with the warp-interleaved
//   scalar layout (round 1: 0.1688; fused 01: 0.1320).
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_row_in_registers_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  std::string why = check_args(a);
  if (!why.empty()) return why;
  return row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), 1, d.sms).why;
}

void add_row_in_registers_launch(const AddRmsnormArgs& a, cudaStream_t s) {
  const RowRegsConfig cfg =
      row_regs_config(a.dtype, a.rows, a.cols, max_elems(a.dtype, true, vec_ok(a)), 1, device_info().sms);
  const RowRegsParams p{a.x, a.w, a.y, a.r, a.rows, a.cols, a.eps,
                        cfg.group, cfg.rows_per_block, cfg.cluster, cfg.slice};
  launch_row_regs(p, cfg, a.dtype, vec_ok(a), /*fused=*/true, s);
}

}  // namespace kl::rmsnorm_detail
