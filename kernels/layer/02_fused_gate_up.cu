// 02 fused_gate_up — rung 01 with the MLP's gate GEMM, up GEMM and SwiGLU as one kernel.
//
// Parent: 01 graph.
// Change: the three become one kernel (fused_gemms.cu) that reads both weights and writes
//   silu(g) * u, so the g and u tensors are never written or read. Decode (up to 64 tokens): the
//   whole-K kernel, each CTA streaming the same strip of Wgate and Wup, consumer warpgroup 0 on the
//   gate strip and 1 on the up strip. Prefill: the persistent 128 x 256 tile kernel with 128 rows of
//   each weight per stage, 128 x 128 outputs per tile. The other steps and the graph replay are 01's.
// Why: in a decode step gate and up are two short weight streams, each with its own ramp and tail,
//   then an elementwise launch; one stream twice as long has one ramp and one tail. In prefill the
//   two GEMMs' waves become one (fewer partial waves) and the two [T, mlp] tensors' round trip and
//   the SwiGLU kernel go.
// Limits: sm_90a. At decode a stage holds two strips, so the ring is about half as deep as rung
//   15's at the same columns; at prefill the tile kernel is rung 12's, its epilogue not hidden
//   under the next tile's math.
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
