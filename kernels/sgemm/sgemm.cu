// kernels/sgemm/sgemm.cu — the sgemm rung table (written once, here) and the entry point.
#include <sstream>

#include "sgemm.h"
#include "sgemm_internal.h"

namespace kl {

using namespace sgemm_detail;

const std::vector<Rung<SgemmArgs>>& sgemm_rungs() {
  static const std::vector<Rung<SgemmArgs>> table = {
      {0, "naive", "one thread per C element, lanes walk M (uncoalesced A and C)", supports_00,
       launch_00},
      {1, "coalesced", "lanes walk N: B loads and C stores coalesced, A broadcast", supports_01,
       launch_01},
      {2, "smem_tiling", "32x32 tiles of A and B staged through shared memory", supports_02,
       launch_02},
      {3, "regblock_1d", "64x64 tile, 8 outputs per thread along M (1D register blocking)",
       supports_03, launch_03},
      {4, "regblock_2d", "128x128 tile, 8x8 outputs per thread (2D register blocking)",
       supports_04, launch_04},
      {5, "vectorized", "float4 global loads, A transposed in shared memory, LDS.128 fragments",
       supports_05, launch_05},
      {6, "warp_tiling", "32x64 warp tiles, strided 4-wide fragments: broadcast, no bank conflicts",
       supports_06, launch_06},
      {7, "prefetch_swizzle",
       "register-prefetch double buffering, XOR swizzle on the A^T stores, 2 blocks/SM",
       supports_07, launch_07},
      {8, "tile256x128",
       "256x128 tile, 16x8 micro-tiles (0.75 B/FMA), fragment double buffering, any M,N,K",
       supports_08, launch_08},
      {9, "bk16_cpasync",
       "16-deep k-tiles (half the barriers and per-tile overhead), B by cp.async",
       supports_09, launch_09},
  };
  return table;
}

std::string sgemm_check_args(const SgemmArgs& a) {
  std::ostringstream s;
  if (a.M <= 0 || a.N <= 0 || a.K <= 0) {
    s << "M, N, K must be > 0 (got " << a.M << "x" << a.N << "x" << a.K << ")";
    return s.str();
  }
  if (!a.A || !a.B || !a.C) return "A, B and C must be non-null";
  return "";
}

const Rung<SgemmArgs>* sgemm_pick(const SgemmArgs& a, const DeviceInfo& d) {
  const auto& t = sgemm_rungs();
  // The highest supported rung: 09 when K % 4 == N % 4 == 0 and the pointers are 16-byte aligned,
  // else 08 (any shape, any alignment).
  const Rung<SgemmArgs>* best = best_supported(t, a, d);
  // The 256x128 rungs leave SMs idle when the grid is under one wave (1024^3 is 32 tiles on 132
  // SMs); rung 07's 128x128 tile at 2 blocks/SM spreads the same work over 4x the blocks.
  if (best && best->number >= 8) {
    const long long tiles256 = ceil_div(a.M, 256) * ceil_div(a.N, 128);
    const Rung<SgemmArgs>* r07 = find_rung(t, std::string("7"));
    if (tiles256 < d.sms && r07 && r07->supports(a, d).empty()) best = r07;
  }
  return best;
}

void sgemm(const SgemmArgs& a, cudaStream_t stream) {
  std::string why = sgemm_check_args(a);
  KL_REQUIRE(why.empty(), "sgemm: " << why);
  const Rung<SgemmArgs>* r = sgemm_pick(a, device_info());
  KL_REQUIRE(r, "sgemm: no rung supports " << a.M << "x" << a.N << "x" << a.K);
  r->launch(a, stream);
}

}  // namespace kl
