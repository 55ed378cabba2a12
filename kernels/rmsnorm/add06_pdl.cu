// add06 pdl — fused rung 05 launched programmatic-dependent.
//
// Parent: add05 plain_loads.
// Change: rmsnorm rung 09's change for the fused op: on a created stream the launch is
//   programmatic-dependent; each block releases the next grid, then waits for the previous one
//   before its first load of r or x. Same kernel, shape and registers.
// Why: in the layer the fused op sits between the O projection and the gate GEMM (see rung 09).
// Limits: rung 09's.
#include "common/pdl.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string add_rmsnorm_pdl_supports(const AddRmsnormArgs& a, const DeviceInfo& d) {
  return add_rmsnorm_plain_loads_supports(a, d);
}

void add_rmsnorm_pdl_launch(const AddRmsnormArgs& a, cudaStream_t s) { add_rmsnorm_plain_loads_run(a, s, pdl_stream(s)); }

}  // namespace kl::rmsnorm_detail
