// 03 fused_residual — rung 02 with the down GEMM adding the residual stream in its epilogue.
//
// Parent: 02 fused_gate_up.
// Change: the down projection and the residual add become one kernel (fused_gemms.cu) writing
//   y = r + bf16(act Wdown^T): the epilogue rounds the product to bf16, as the dn tensor held it,
//   reads r at the same positions and stores the sum. Decode (up to 64 tokens): the whole-K
//   kernel; prefill: rung 12's persistent tile kernel. The other steps and the graph replay are 02's.
// Why: the [T, hidden] dn tensor is written and read back, and the residual kernel is one more
//   launch and one more ramp at the end of every layer.
// Limits: sm_90a. The residual is read by the epilogue's threads with plain loads after the
//   accumulators are final, so its latency is added to the epilogue of every tile; at prefill the
//   tile kernel's epilogue is not hidden under the next tile's math (rung 12's limit).
#include <string>
#include <vector>

#include "kernels/layer/layer_internal.h"

namespace kl::layer_detail {

std::string layer_fused_residual_supports(const LayerArgs& a, const DeviceInfo& d) {
  std::string why = layer_fused_gate_up_supports(a, d);
  if (!why.empty()) return why;
  why = layer_down_residual_supports(a, d);
  return why.empty() ? "" : "down_residual: " + why;
}

std::vector<LayerStep> layer_fused_residual_steps(const LayerArgs& a) {
  return layer_steps(a, MlpSteps::fused_residual);
}

namespace {
void run_steps(const LayerArgs& a, cudaStream_t s) {
  for (const LayerStep& step : layer_fused_residual_steps(a)) step.run(s);
}
}  // namespace

void layer_fused_residual_launch(const LayerArgs& a, cudaStream_t s) { layer_graph_run(a, s, 3, run_steps); }

}  // namespace kl::layer_detail
