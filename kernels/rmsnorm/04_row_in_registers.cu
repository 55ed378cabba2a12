// Rung 04 — row_in_registers: the row is read from DRAM once. A group of G threads (32..1024, the
// smallest power of two that keeps <= 32 elements per thread) loads its whole row into registers
// (float v[V][K], V chunks of one 16-byte vector each, V a template parameter so the array stays in
// registers), reduces the squares (warp shuffles + one shared-memory exchange between the group's
// warps), then scales what it already holds and writes y. Rungs 01-03 read each row twice; the
// second read hit L2 but still cost L2 bandwidth and a dependent round trip per chunk. Short rows
// pack several groups into a 256-thread block (fewer rows per block when rows are few).
//
// Rows up to 32768 columns (1024 threads x 32 elements). Unaligned rows (cols % K != 0 or
// misaligned pointers) use the same slices with scalar accesses, warp-interleaved (each warp access
// is 32 consecutive columns; round 2), at most 16 elements per thread (fp32 registers; 16384
// columns). Kernel: row_regs.cu.
// Measured (H200, round-1 run 2026-11-29, results/h200/dev/round1/rmsnorm.jsonl; % of the 4224 GB/s bench_peak copy):
//   16384x8192 bf16 0.1396 ms (3845 GB/s, 91.0%; same-run cudaMemcpy 0.1288 ms); 4096x16384 f32
//   0.1407 ms (90.4%); 65536x4096 bf16 0.2703 ms (94.1%). 1.32x rung 03 on 16384x8192.
//   Round-2 batch (results/h200/dev/batch/rmsnorm/*.jsonl, 20 launches): 16384x8192 bf16 0.1387 ms (91.6%),
//   4096x16384 f32 0.1416; unaligned 4096x4099 with the warp-interleaved scalar layout: f32 0.0556
//   ms (round 1, chunk layout: 0.0908; rung 01: 0.0617), bf16 0.0568 (round 1 0.0904; rung 01
//   0.0386 is still faster: 16 two-byte values per thread at 2 blocks of 512 per SM = 32 KB/SM
//   in flight).
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
