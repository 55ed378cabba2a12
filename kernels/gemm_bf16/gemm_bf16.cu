// kernels/gemm_bf16/gemm_bf16.cu — the rung table (written once), the entry point and its pick,
// the workspace size, and helpers the part-1 rung files share.
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "common/check.h"
#include "gemm_bf16/gemm_bf16.h"
#include "gemm_bf16/gemm_bf16_rungs.h"

namespace kl {
namespace gemm_bf16_detail {

std::string basic_supports(const GemmBf16Args& a) {
  std::ostringstream s;
  if (a.M <= 0 || a.N <= 0 || a.K <= 0) {
    s << "M, N, K must be positive (got " << a.M << "x" << a.N << "x" << a.K << ")";
  } else if (a.N % 8 != 0 || a.K % 8 != 0) {
    s << "N and K must each be a multiple of 8 (16-byte rows for cp.async; got N=" << a.N
      << ", K=" << a.K << ")";
  } else if (!a.A || !a.W || !a.C) {
    s << "null pointer (A, W or C)";
  } else if (!aligned(a.A, 16) || !aligned(a.W, 16) || !aligned(a.C, 16)) {
    s << "A, W and C must be 16-byte aligned";
  }
  return s.str();
}

int occupancy(const void* fn, int threads, int smem_bytes, const DeviceInfo& d) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(fn, d.id);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int n = 0;
  if (smem_bytes <= d.smem_optin) {
    if (smem_bytes > 48 * 1024)
      KL_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    KL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, threads, smem_bytes));
  }
  cache.emplace(key, n);
  return n;
}

}  // namespace gemm_bf16_detail

const std::vector<Rung<GemmBf16Args>>& gemm_bf16_rungs() {
  using namespace gemm_bf16_detail;
  static const std::vector<Rung<GemmBf16Args>> table = [] {
    std::vector<Rung<GemmBf16Args>> t = {
        {0, "wmma_global", "WMMA fragments loaded straight from global memory", rung00_supports,
         rung00_launch},
        {1, "smem_tile_padded", "128x128x32 shared-memory tile, rows padded against bank conflicts",
         rung01_supports, rung01_launch},
        {2, "cp_async_pipeline", "3-stage cp.async pipeline: next tiles in flight during the math",
         rung02_supports, rung02_launch},
        {3, "mma_sync_swizzle",
         "mma.sync + ldmatrix, XOR-swizzled 4-stage tile, bf16-pair epilogue, tile per wave count",
         rung03_supports, rung03_launch},
        {4, "stream_k",
         "persistent Stream-K over (tile, k-step), grouped raster, deterministic epoch fixup",
         rung04_supports, rung04_launch},
    };
    gemm_bf16_append_hopper_rungs(t);
    return t;
  }();
  return table;
}

size_t gemm_bf16_workspace_bytes(int M, int N, int K, const DeviceInfo& d) {
  // Only rung 04 needs scratch among part 1. (Part 2 rungs report their own needs via supports().)
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  return gemm_bf16_detail::streamk_workspace_bytes(M, N, K, d);
}

const Rung<GemmBf16Args>* gemm_bf16_pick(const GemmBf16Args& args, const DeviceInfo& d) {
  const auto& table = gemm_bf16_rungs();
  // Preference per shape class, best first; the first rung that supports the shape wins, and
  // rung numbers the table does not have are passed over. Without measurements this is "highest
  // rung first" (each rung is meant to beat the one before it), with one part-1 fact built in:
  // 04 (Stream-K) is never behind 03 in the model (same CTA tile, no wave quantization, K split for
  // decode) but needs a workspace; without one, 03 computes everything 04 does.
  // The lead re-orders these lists from the measured results (docs/gemm_bf16.md).
  static const std::vector<int> kDecode = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};  // M <= 64
  static const std::vector<int> kPrefill = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  const std::vector<int>& order = args.M <= 64 ? kDecode : kPrefill;
  for (int n : order) {
    const Rung<GemmBf16Args>* r = find_rung(table, std::to_string(n));
    if (r && r->supports(args, d).empty()) return r;
  }
  return best_supported(table, args, d);  // a rung numbered past the lists
}

void gemm_bf16(const GemmBf16Args& args, cudaStream_t stream) {
  const DeviceInfo& d = device_info();
  const Rung<GemmBf16Args>* r = gemm_bf16_pick(args, d);
  if (!r) {
    // Say why: the basic reason is the most useful one (K % 8, alignment, ...).
    std::string why = gemm_bf16_detail::basic_supports(args);
    KL_REQUIRE(false, "gemm_bf16: no rung supports " << args.M << "x" << args.N << "x" << args.K
                                                     << (why.empty() ? "" : ": ") << why);
  }
  launch_checked(*r, args, stream);
}

}  // namespace kl
