// 02 fused_gate_up — rung 01 with the MLP's gate GEMM, up GEMM and SwiGLU as one kernel.
//
// Parent: 01 graph.
// Change: the three become one whole-K kernel (gate_up_swiglu.cu): each CTA streams the same strip
//   of columns of Wgate and of Wup through one TMA ring, consumer warpgroup 0 multiplies the gate
//   strip and warpgroup 1 the up strip, and the epilogue writes silu(g) * u, so the g and u tensors
//   are never written or read. The other steps and the graph replay are rung 01's.
// Why: in a decode step the gate and up GEMMs are two short weight streams, each with its own ramp
//   and tail, followed by a launch of an elementwise kernel; one stream twice as long has one ramp
//   and one tail, and nothing after it but the down GEMM.
// Limits: at most 64 tokens (B x S; the kernel's activation box), sm_90a; a longer prefill is
//   refused (rung 00 runs prefill). A stage holds two strips, so the ring is about half as many
//   stages deep as rung 15's at the same columns.
#include <string>
#include <vector>

#include "kernels/layer/layer_internal.h"

namespace kl::layer_detail {

std::string layer_fused_gate_up_supports(const LayerArgs& a, const DeviceInfo& d) {
  std::string why = layer_graph_supports(a, d);
  if (!why.empty()) return why;
  why = layer_gate_up_supports(a, d);
  return why.empty() ? "" : "gate_up_swiglu: " + why;
}

std::vector<LayerStep> layer_fused_gate_up_steps(const LayerArgs& a) {
  return layer_steps(a, MlpSteps::fused_gate_up);
}

namespace {
void run_steps(const LayerArgs& a, cudaStream_t s) {
  for (const LayerStep& step : layer_fused_gate_up_steps(a)) step.run(s);
}
}  // namespace

void layer_fused_gate_up_launch(const LayerArgs& a, cudaStream_t s) { layer_graph_run(a, s, 2, run_steps); }

}  // namespace kl::layer_detail
