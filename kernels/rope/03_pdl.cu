// 03 pdl — rung 02 launched programmatic-dependent.
//
// Parent: 02 kv_cache.
// Change: on a created stream the launch carries the programmatic-stream-serialization attribute;
//   every block first releases the next grid (griddepcontrol.launch_dependents), then waits for the
//   previous grid (griddepcontrol.wait) before it reads a position or qkv. Same kernel and grid.
// Why: in a decode step (the layer) RoPE sits between the QKV GEMM and the attention: launched this
//   way it is resident before the GEMM ends, and the attention's blocks (themselves launched
//   programmatic-dependent) are resident when it ends.
// Limits: alone, back to back, it gains at most a launch's latency; the next grid's early blocks
//   hold SM slots while they wait. On the legacy or per-thread default stream it is rung 02.
#include "common/pdl.cuh"
#include "kernels/rope/rope_impl.cuh"

namespace kl::rope_detail {

std::string rope_pdl_supports(const RopeArgs& a, const DeviceInfo& d) { return rope_kv_cache_supports(a, d); }
void rope_pdl_launch(const RopeArgs& a, cudaStream_t s) { rope_kv_cache_run(a, s, pdl_stream(s)); }

}  // namespace kl::rope_detail
