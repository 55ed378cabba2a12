// kernels/sgemm/sgemm_internal.h — family-private declarations shared by sgemm.cu and the rungs:
// each rung file defines sgemm_<rung name>_supports() and _launch(); sgemm.cu puts them in the one
// table.
#pragma once
#include <sstream>
#include <string>

#include "kl/sgemm.h"

namespace kl::sgemm_detail {

#define KL_SGEMM_DECLARE_RUNG(name)                                               \
  std::string sgemm_##name##_supports(const SgemmArgs& a, const DeviceInfo& d);    \
  void sgemm_##name##_launch(const SgemmArgs& a, cudaStream_t s);
KL_SGEMM_DECLARE_RUNG(naive)
KL_SGEMM_DECLARE_RUNG(coalesced)
KL_SGEMM_DECLARE_RUNG(smem_tiling)
KL_SGEMM_DECLARE_RUNG(regblock_1d)
KL_SGEMM_DECLARE_RUNG(regblock_2d)
KL_SGEMM_DECLARE_RUNG(vectorized)
KL_SGEMM_DECLARE_RUNG(warp_tiling)
KL_SGEMM_DECLARE_RUNG(prefetch_swizzle)
KL_SGEMM_DECLARE_RUNG(tile256x128)
KL_SGEMM_DECLARE_RUNG(bk16_cpasync)
KL_SGEMM_DECLARE_RUNG(cpasync_ring)
KL_SGEMM_DECLARE_RUNG(small_splitk)
KL_SGEMM_DECLARE_RUNG(lean_copies)
KL_SGEMM_DECLARE_RUNG(ak_layout)
KL_SGEMM_DECLARE_RUNG(ak_bk32)
KL_SGEMM_DECLARE_RUNG(bk64_two_stage)
KL_SGEMM_DECLARE_RUNG(any_shape)
KL_SGEMM_DECLARE_RUNG(ak_any_shape)
#undef KL_SGEMM_DECLARE_RUNG

inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// K slices of the 128x128 ring (rungs 11 and 16): 2 when its tiles are at most one per SM and
// each slice keeps >= 16 k-tiles, else 1.
int small_splitk_slices(const SgemmArgs& a, const DeviceInfo& d);

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
