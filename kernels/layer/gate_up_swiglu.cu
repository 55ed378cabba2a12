// kernels/layer/gate_up_swiglu.cu — the MLP's first half as one kernel (rung 02):
// act = silu(A Wgate^T) * (A Wup^T), by one of two gemm_bf16 kernels given two weights:
//   M <= 64 (decode)  rung 15's whole-K kernel (gemm_bf16/whole_k.cuh, GateUpSwiglu), each CTA
//                     streaming the same strip of both weights: the narrowest multiple of 16 output
//                     columns (from 32) with which one CTA per SM covers N in one wave (N = 14336:
//                     112 columns, 224 W rows a stage, 128 CTAs), else 128 columns in waves;
//   M > 64 (prefill)  rung 12's persistent 128 x 256 tile kernel (gemm_bf16/tma_store_gemm.cuh,
//                     GateUpSwigluC): 128 rows of Wgate over 128 of Wup per stage, so a tile is
//                     128 x 128 of act.
// The gate and up values are rounded to bf16 before silu(g) * u, as rung 01's g and u tensors are,
// so the fused output equals the unfused chain's up to the GEMMs' own accumulation order.
#include <string>
#include <tuple>

#include "gemm_bf16/tma_store_gemm.cuh"
#include "gemm_bf16/whole_k.cuh"
#include "kernels/layer/layer_internal.h"

namespace kl::layer_detail {
namespace {

namespace hg = hopper_gemm;

int strip_columns(int N) {
  const int sms = device_info().sms;
  for (int cols = 32; cols < 128; cols += 16)
    if (hg::ceil_div(N, cols) <= sms) return cols;
  return 128;
}

hg::WholeKConfig choose(int M, int N) {
  static hg::PlanCache<std::tuple<int, int, int>, hg::WholeKConfig> cache;
  const int mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  return cache.get(std::make_tuple(device_info().id, mp, N), [&] {
    const int rows = 2 * strip_columns(N);
    return hg::one_wave_cfg<hg::KernelSet::kGateUp>(
        [&](int cps) { return hg::make_cfg(M, N, rows, 1, cps, 2, false, true); });
  });
}

GemmBf16Args gate_args(const GateUpArgs& a) {
  GemmBf16Args g;
  g.A = a.A;
  g.W = a.w_gate;
  g.C = a.act;
  g.M = a.M;
  g.N = a.N;
  g.K = a.K;
  return g;
}

}  // namespace

std::string gate_up_swiglu_supports(const GateUpArgs& a, const DeviceInfo& d) {
  if (!a.A || !a.w_gate || !a.w_up || !a.act) return "null pointer";
  if (a.M < 1) return "the fused gate/up kernel takes M >= 1 rows";
  std::string why = a.M <= 64 ? hg::whole_k_supports(gate_args(a), d)
                              : hg::tma_store::tma_store_gemm_supports<hg::FourStages>(gate_args(a), d);
  if (!why.empty()) return why;
  if (!aligned(a.w_up, 16)) return "Wup must be 16-byte aligned";
  return "";
}

void gate_up_swiglu_launch(const GateUpArgs& a, cudaStream_t s) {
  if (a.M <= 64)
    hg::launch_cfg<hg::KernelSet::kGateUp>(gate_args(a), choose(a.M, a.N), s, a.w_up);
  else
    hg::tma_store::tma_store_gemm_launch<hg::FourStages, hg::tma_store::GateUpSwigluC>(gate_args(a), s, a.w_up);
}

}  // namespace kl::layer_detail
