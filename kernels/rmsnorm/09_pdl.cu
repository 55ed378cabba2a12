// 09 pdl — rung 08 launched programmatic-dependent.
//
// Parent: 08 plain_loads.
// Change: on a created stream the launch carries the programmatic-stream-serialization attribute;
//   every block first releases the next grid (griddepcontrol.launch_dependents), then waits for the
//   previous grid (griddepcontrol.wait) before its first load. Same kernel, shape and registers.
// Why: between two GEMMs of a decode step (the layer) the norm is a few microseconds of launch and
//   drain; launched this way it is resident before the GEMM before it ends, and the GEMM after it
//   starts and streams its weights (which no kernel writes) while the norm waits and runs.
// Limits: alone, back to back, it gains at most a launch's latency; the next grid's early blocks
//   hold SM slots while they wait. On the legacy or per-thread default stream it is rung 08.
#include "common/pdl.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {

std::string rmsnorm_pdl_supports(const RmsnormArgs& a, const DeviceInfo& d) { return rmsnorm_plain_loads_supports(a, d); }

void rmsnorm_pdl_launch(const RmsnormArgs& a, cudaStream_t s) { rmsnorm_plain_loads_run(a, s, pdl_stream(s)); }

}  // namespace kl::rmsnorm_detail
