// 06 pdl — rung 01 launched programmatic-dependent.
//
// Parent: 01 vec128.
// Change: on a created stream the launch carries the programmatic-stream-serialization attribute;
//   every block first releases the next grid (griddepcontrol.launch_dependents), then waits for the
//   previous grid (griddepcontrol.wait) before its first load. Same kernel, grid and loads.
// Why: in a decode step (the layer) SwiGLU sits between the up and the down GEMM: launched this way
//   it is resident before the up GEMM ends, and the down GEMM starts and streams its weights while
//   SwiGLU waits and runs. Parent 01, not 05: rung 05's read-only (nc) loads require g and u to stay
//   unwritten for the kernel's whole life, and a grid that starts early outlives their writer's end.
// Limits: alone, back to back, it gains at most a launch's latency; the next grid's early blocks
//   hold SM slots while they wait. On the legacy or per-thread default stream it is rung 01.
#include "common/pdl.cuh"
#include "swiglu_impl.cuh"

namespace kl::swiglu_detail {

std::string swiglu_pdl_supports(const SwigluArgs& a, const DeviceInfo&) { return vector_supports(a); }
void swiglu_pdl_launch(const SwigluArgs& a, cudaStream_t s) { swiglu_vec128_run(a, s, pdl_stream(s)); }

}  // namespace kl::swiglu_detail
