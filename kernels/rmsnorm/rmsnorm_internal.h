// kernels/rmsnorm/rmsnorm_internal.h — what the rung files export to the table in rmsnorm.cu, and
// the launch configuration of the register-resident kernel (row_regs.cu) that rungs 04/05 and the
// fused rungs 02/03 share. Not part of the public interface.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "kl/rmsnorm.h"

namespace kl::rmsnorm_detail {

// "" or why the arguments are invalid for every rung (null pointers, empty shape, negative eps).
std::string check_args(const RmsnormArgs& a);
std::string check_args(const AddRmsnormArgs& a);
// True when every pointer is 16-byte aligned and cols is a multiple of the 16-byte vector width,
// so every row starts on a 16-byte boundary.
bool vec_ok(const RmsnormArgs& a);
bool vec_ok(const AddRmsnormArgs& a);

#define KL_RMSNORM_RUNG(name)                                                     \
  std::string rmsnorm_##name##_supports(const RmsnormArgs& a, const DeviceInfo& d);   \
  void rmsnorm_##name##_launch(const RmsnormArgs& a, cudaStream_t s);
#define KL_ADD_RMSNORM_RUNG(name)                                                        \
  std::string add_rmsnorm_##name##_supports(const AddRmsnormArgs& a, const DeviceInfo& d); \
  void add_rmsnorm_##name##_launch(const AddRmsnormArgs& a, cudaStream_t s);
KL_RMSNORM_RUNG(thread_per_row)
KL_RMSNORM_RUNG(warp_per_row)
KL_RMSNORM_RUNG(vec128)
KL_RMSNORM_RUNG(block_per_row)
KL_RMSNORM_RUNG(row_in_registers)
KL_RMSNORM_RUNG(cluster_row)
KL_RMSNORM_RUNG(prefetch_next_row)
KL_RMSNORM_RUNG(bulk_pipeline)
KL_RMSNORM_RUNG(plain_loads)
KL_RMSNORM_RUNG(pdl)
KL_ADD_RMSNORM_RUNG(thread_per_row)
KL_ADD_RMSNORM_RUNG(block_per_row)
KL_ADD_RMSNORM_RUNG(row_in_registers)
KL_ADD_RMSNORM_RUNG(cluster_row)
KL_ADD_RMSNORM_RUNG(bulk_pipeline)
KL_ADD_RMSNORM_RUNG(plain_loads)
KL_ADD_RMSNORM_RUNG(pdl)
#undef KL_RMSNORM_RUNG
#undef KL_ADD_RMSNORM_RUNG

// ---------------------------------------------------------------- register-resident kernel
// How the register kernel reads x on the aligned path: the read-only, non-allocating path
// (ld.global.nc.L1::no_allocate: rungs 04/05, fused 02/03) or plain ld.global (rung 08, fused 05).
enum class XLoad : int { read_only_no_allocate, plain };

// Kernel parameters (one struct: a single kernel argument).
struct RowRegsParams {
  const void* x;
  const void* w;
  void* y;
  void* r;  // fused op: the residual (in/out); nullptr for plain rmsnorm
  int rows, cols;
  float eps;
  int group;           // G: threads that share one (row, slice), 32..1024, a power of two
  int rows_per_block;  // R: groups per block; block = G * R threads (<= 1024)
  int cluster;         // C: blocks (one cluster) that split one row; 1 = no cluster
  int slice;           // columns per block slice, a multiple of the vector width; C * slice >= cols
  XLoad x_load = XLoad::read_only_no_allocate;  // (host side: picks the kernel's kXLoad)
  bool pdl = false;  // programmatic-dependent launch (rung 09, fused 06): release, then wait
};

// The launch shape for a row of `cols` split over `cluster` blocks, each thread holding at most
// `max_elems` elements (16-byte chunks of kVec elements: vecs = chunks per thread).
struct RowRegsConfig {
  std::string why;  // "" when valid
  int group = 0, rows_per_block = 0, cluster = 1, slice = 0, vecs = 0;
  long long blocks = 0;
};
RowRegsConfig row_regs_config(DType t, int rows, int cols, int max_elems, int cluster, int sms);
// Elements per thread the register kernel allows (its V * K), by storage type and path:
//   plain, aligned: 32 (bf16 kept packed: 16 registers; f32: 32 registers)
//   fused, aligned: 32 bf16 (r and x chunks packed, live together: 2 x 16 registers) / 16 f32
//   unaligned (scalar accesses, values in fp32 registers): 16
// 64 registers is the budget at 1024 threads per block; ptxas -warn-spills is clean on sm_90a.
constexpr int max_elems(DType t, bool fused, bool aligned) {
  return !aligned ? 16 : !fused ? 32 : t == DType::bf16 ? 32 : 16;
}
// Rung 05 / fused 03: the cluster size for the shape (1, 2, 4 or 8), 0 if the row is too long.
int pick_cluster(DType t, int rows, int cols, int max_elems, int sms);

// Rung 08 / fused 05's launch, programmatic-dependent when `pdl` (rung 09 / fused 06).
void rmsnorm_plain_loads_run(const RmsnormArgs& a, cudaStream_t s, bool pdl);
void add_rmsnorm_plain_loads_run(const AddRmsnormArgs& a, cudaStream_t s, bool pdl);

// Launches the kernel of row_regs.cuh; cfg from row_regs_config, aligned = vec_ok(args).
void launch_row_regs(const RowRegsParams& p, const RowRegsConfig& cfg, DType t, bool aligned,
                     bool fused, cudaStream_t s);

// ---------------------------------------------------------------- bulk-copy row pipeline
// (bulk_rows.cu: rmsnorm rung 07, fused rung 04). Persistent blocks of 256 threads; each keeps
// `stages` whole rows in shared memory, filled by cp.async.bulk on one mbarrier per stage.
constexpr int kBulkMaxStages = 16;
struct BulkParams {
  const void* x;
  const void* w;
  void* y;
  void* r;  // fused op: the residual (in/out); nullptr for plain rmsnorm
  int rows, cols;
  float eps;
  int stages;
};
struct BulkConfig {
  std::string why;  // "" when valid
  int blocks_per_sm = 0, stages = 0;
  long long smem = 0;    // dynamic shared memory per block (stages x row bytes, x 2 fused)
  long long blocks = 0;  // grid before the occupancy check in the launcher
};
// Needs vec_ok rows (16-byte row starts and cols % (16 / es) == 0) and cc >= 9.0 (checked by the
// rungs' supports()).
BulkConfig bulk_config(DType t, bool fused, int rows, int cols, const DeviceInfo& d);
void launch_bulk_rows(const BulkParams& p, const BulkConfig& cfg, DType t, bool fused,
                      cudaStream_t s);

}  // namespace kl::rmsnorm_detail
