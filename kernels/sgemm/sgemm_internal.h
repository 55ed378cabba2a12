// kernels/sgemm/sgemm_internal.h — family-private declarations shared by sgemm.cu and the rungs:
// each rung file defines its supports() and launch(); sgemm.cu puts them in the one table.
#pragma once
#include <sstream>
#include <string>

#include "sgemm.h"

namespace kl::sgemm_detail {

#define KL_SGEMM_DECLARE_RUNG(NN)                                                  \
  std::string supports_##NN(const SgemmArgs& a, const DeviceInfo& d);              \
  void launch_##NN(const SgemmArgs& a, cudaStream_t s);
KL_SGEMM_DECLARE_RUNG(00)
KL_SGEMM_DECLARE_RUNG(01)
KL_SGEMM_DECLARE_RUNG(02)
KL_SGEMM_DECLARE_RUNG(03)
KL_SGEMM_DECLARE_RUNG(04)
KL_SGEMM_DECLARE_RUNG(05)
KL_SGEMM_DECLARE_RUNG(06)
KL_SGEMM_DECLARE_RUNG(07)
KL_SGEMM_DECLARE_RUNG(08)
KL_SGEMM_DECLARE_RUNG(09)
KL_SGEMM_DECLARE_RUNG(10)
KL_SGEMM_DECLARE_RUNG(11)
KL_SGEMM_DECLARE_RUNG(12)
KL_SGEMM_DECLARE_RUNG(13)
KL_SGEMM_DECLARE_RUNG(14)
KL_SGEMM_DECLARE_RUNG(15)
#undef KL_SGEMM_DECLARE_RUNG
// Experiment rows 90+ (only with KL_SGEMM_EXP=1 in the environment; never in the default table):
// rungs 14/15's kernel with other (k-tile depth, stages, k-step unroll) settings (14_ak_bk32.cu).
void append_ak_experiments(std::vector<Rung<SgemmArgs>>& t);

inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The grid limits every rung shares: x tiles the N dimension (up to 2^31-1 blocks), y tiles M
// (at most 65535 blocks).
inline std::string check_grid(const SgemmArgs& a, int bm, int bn) {
  std::ostringstream s;
  if (ceil_div(a.M, bm) > 65535) {
    s << "M=" << a.M << " needs more than 65535 row tiles of " << bm;
    return s.str();
  }
  (void)bn;
  return "";
}

// The divisibility a fixed-tile rung (no tail handling) needs, plus 16-byte alignment of every
// pointer when it moves float4s. "" if the shape fits.
inline std::string require_tiles(const SgemmArgs& a, int bm, int bn, int bk, bool vec4) {
  std::string why = sgemm_check_args(a);
  if (!why.empty()) return why;
  std::ostringstream s;
  if (a.M % bm || a.N % bn || a.K % bk) {
    s << "needs M % " << bm << " == 0, N % " << bn << " == 0, K % " << bk << " == 0 (got "
      << a.M << "x" << a.N << "x" << a.K << "; no tail handling before rung 08)";
    return s.str();
  }
  if (vec4 && (!aligned(a.A, 16) || !aligned(a.B, 16) || !aligned(a.C, 16)))
    return "needs 16-byte aligned A, B and C (float4 loads and stores)";
  return check_grid(a, bm, bn);
}

}  // namespace kl::sgemm_detail
