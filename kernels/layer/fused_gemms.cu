// kernels/layer/fused_gemms.cu — the layer's two GEMMs with fused epilogues, each by one of two
// gemm_bf16 kernels:
//   gate_up_swiglu (rung 02)  act = silu(A Wgate^T) * (A Wup^T): the tile's W rows are two weights'
//                             strips, the epilogue writes SwiGLU of the two products;
//   down_residual (rung 03)   y = r + bf16(A Wdown^T): the epilogue adds the residual stream.
// The kernels:
//   M <= 64 (decode)  rung 15's whole-K kernel (gemm_bf16/whole_k.cuh: GateUpSwiglu, WithResidual),
//                     a strip of output columns per CTA over the whole K: the narrowest multiple
//                     of 16 columns (from 32) with which one CTA per SM covers N in one wave (N =
//                     14336: 112 columns of each weight, 224 W rows a stage, 128 CTAs; N = 4096:
//                     32 columns, 128 CTAs), else 128 columns in waves;
//   M > 64 (prefill)  rung 12's persistent 128 x 256 tile kernel (gemm_bf16/tma_store_gemm.cuh:
//                     GateUpSwigluC, 128 rows of each weight per stage and 128 x 128 outputs a
//                     tile; ResidualC, 128 x 256 outputs a tile).
// Both round the GEMM products to bf16 before the epilogue's operation, as the unfused chain's
// stored g, u and down tensors are, so the fused outputs equal the chain's up to the GEMMs' own
// accumulation order.
#include <string>
#include <tuple>

#include "gemm_bf16/tma_store_gemm.cuh"
#include "gemm_bf16/whole_k.cuh"
#include "kernels/layer/layer_internal.h"

namespace kl::layer_detail {
namespace {

namespace hg = hopper_gemm;

// The whole-K plan for set SET: strips of `cols` output columns (gate/up: of each weight), the
// deepest ring with which the grid is resident at once.
template <hg::KernelSet SET>
hg::WholeKConfig whole_k_plan(int M, int N) {
  static hg::PlanCache<std::tuple<int, int, int>, hg::WholeKConfig> cache;
  const int mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  return cache.get(std::make_tuple(device_info().id, mp, N), [&] {
    constexpr bool gate_up = SET == hg::KernelSet::kGateUp;
    const int cols = hg::one_wave_strip(N, 1, 16);
    return hg::one_wave_cfg<SET>(
        [&](int cps) { return hg::make_cfg(M, N, gate_up ? 2 * cols : cols, 1, cps, 2, false, gate_up); });
  });
}

// What both fused GEMMs require of the product's operands: the kernel M selects takes them.
std::string fused_gemm_supports(const GemmBf16Args& g, const DeviceInfo& d) {
  if (!g.A || !g.W || !g.C) return "null pointer";
  if (g.M < 1) return "the fused GEMM takes M >= 1 rows";
  return g.M <= 64 ? hg::whole_k_supports(g, d) : hg::tma_store::tma_store_gemm_supports<hg::FourStages>(g, d);
}

GemmBf16Args gate_args(const GateUpArgs& a) { return layer_gemm_args(a.A, a.w_gate, a.act, a.M, a.N, a.K); }
GemmBf16Args down_args(const DownResidualArgs& a) { return layer_gemm_args(a.A, a.w, a.y, a.M, a.N, a.K); }

}  // namespace

std::string gate_up_swiglu_supports(const GateUpArgs& a, const DeviceInfo& d) {
  if (!a.w_up) return "null pointer";
  std::string why = fused_gemm_supports(gate_args(a), d);
  if (!why.empty()) return why;
  if (!aligned(a.w_up, 16)) return "Wup must be 16-byte aligned";
  return "";
}

void gate_up_swiglu_launch(const GateUpArgs& a, cudaStream_t s) {
  if (a.M <= 64)
    hg::launch_cfg<hg::KernelSet::kGateUp>(gate_args(a), whole_k_plan<hg::KernelSet::kGateUp>(a.M, a.N), s, a.w_up);
  else
    hg::tma_store::tma_store_gemm_launch<hg::FourStages, hg::tma_store::GateUpSwigluC>(gate_args(a), s, a.w_up);
}

std::string down_residual_supports(const DownResidualArgs& a, const DeviceInfo& d) {
  if (!a.r) return "null pointer";
  std::string why = fused_gemm_supports(down_args(a), d);
  if (!why.empty()) return why;
  if (!aligned(a.r, 4)) return "the residual must be 4-byte aligned (bf16 pairs)";
  // In place (r == y) each element is read before it is written, by the thread that writes it.
  const double bytes = 2.0 * a.M * a.N;
  if (static_cast<const void*>(a.r) != static_cast<const void*>(a.y) && overlap(span(a.r, bytes), span(a.y, bytes)))
    return "the residual overlaps the output (only r == y, in place, is allowed)";
  return "";
}

void down_residual_launch(const DownResidualArgs& a, cudaStream_t s) {
  if (a.M <= 64)
    hg::launch_cfg<hg::KernelSet::kResidual>(down_args(a), whole_k_plan<hg::KernelSet::kResidual>(a.M, a.N), s,
                                             nullptr, a.r);
  else
    hg::tma_store::tma_store_gemm_launch<hg::FourStages, hg::tma_store::ResidualC>(down_args(a), s, nullptr, a.r);
}

}  // namespace kl::layer_detail
