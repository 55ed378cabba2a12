// kernels/gemm_bf16/gemm_bf16.cu — the rung table (written once), the entry point and its pick,
// the workspace size, and helpers the part-1 rung files share.
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "kl/check.h"
#include "kl/gemm_bf16.h"
#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace gemm_bf16_detail {

std::string shape_alignment_supports(const GemmBf16Args& a) {
  std::ostringstream s;
  const std::string why = gemm_bf16_check_args(a);
  if (!why.empty()) {
    s << why;
  } else if (a.N % 8 != 0 || a.K % 8 != 0) {
    s << "N and K must each be a multiple of 8 (16-byte rows for cp.async; got N=" << a.N
      << ", K=" << a.K << ")";
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

const char* tile_name(Tile t) {
  switch (t) {
    case Tile::L: return "128x256_w64x64_s4";
    case Tile::M: return "128x128_w64x32_s3_2cta";
    case Tile::S: return "64x128_w32x32_s4_2cta";
    case Tile::T: return "64x64_w32x32_s4_3cta";
    case Tile::D16: return "16x64_s6";
    case Tile::D32: return "32x64_s6";
    default: return "?";
  }
}

}  // namespace gemm_bf16_detail

const std::vector<Rung<GemmBf16Args>>& gemm_bf16_rungs() {
  using namespace gemm_bf16_detail;
  static const std::vector<Rung<GemmBf16Args>> table = [] {
    std::vector<Rung<GemmBf16Args>> t = {
        {0, "wmma_global", "WMMA fragments loaded straight from global memory", gemm_bf16_wmma_global_supports,
         gemm_bf16_wmma_global_launch},
        {1, "smem_tile_padded", "128x128x32 shared-memory tile, rows padded against bank conflicts",
         gemm_bf16_smem_tile_padded_supports, gemm_bf16_smem_tile_padded_launch, /*parent=*/0},
        {2, "cp_async_pipeline", "3-stage cp.async pipeline: next tiles in flight during the math",
         gemm_bf16_cp_async_pipeline_supports, gemm_bf16_cp_async_pipeline_launch, /*parent=*/1},
        {3, "mma_sync_swizzle",
         "mma.sync + ldmatrix, XOR-swizzled 4-stage tile, bf16-pair epilogue, tile per wave count",
         gemm_bf16_mma_sync_swizzle_supports, gemm_bf16_mma_sync_swizzle_launch, /*parent=*/2},
        {4, "stream_k",
         "Stream-K over the last wave's (tile, k-step) units + hardware-scheduled whole tiles, "
         "deterministic epoch fixup",
         gemm_bf16_stream_k_supports, gemm_bf16_stream_k_launch, /*parent=*/3},
    };
    gemm_bf16_append_hopper_rungs(t);
    return t;
  }();
  return table;
}

size_t gemm_bf16_workspace_bytes(int M, int N, int K, const DeviceInfo& d) {
  // Rungs 04 (part 1) and 14 (Hopper Stream-K) need scratch.
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  // One workspace serves rungs 04 and 14 (same flag region, kernels/common/streamk.cuh).
  return std::max(gemm_bf16_detail::streamk_workspace_bytes(M, N, K, d),
                  hopper_gemm::gemm_bf16_stream_k_tail_workspace_bytes(M, N, K, d));
}

// The entry point's choice: per shape class, the rungs in order of speed on the H200, fastest
// first (docs/gemm_bf16.md has the rows). The first rung in the
// list that supports the shape wins — Hopper rungs refuse other cards, rung 04 refuses without a
// workspace — so every list ends in part-1 rungs that run anywhere. Rungs 09, 13 and 20 (cluster
// multicast) are in no list: slower than 08/12, and 20 than 19, on every shape. Rung 19 (128x64 tiles) leads every
// shape whose tiles fit one wave; rung 18 (ping-pong consumers, 128x128 tiles) leads the small
// prefill class past that; both are behind rung 12 from 2048^3 up.
namespace {
enum class ShapeClass {
  DecodeOne, Decode16, Decode32, Decode64, DecodeWide, DecodeWide32, DecodeWide64, OneWave, SmallPrefill, Prefill
};

ShapeClass classify(const GemmBf16Args& a, const DeviceInfo& d) {
  if (a.M <= 64) {
    // Decode streams W ("narrow" N x K = 4096x4096 and 4096x11008, "wide" N >= 8192, e.g.
    // 11008x4096). Rung 15 (no K split) leads every narrow class and the wide classes at M > 16;
    // at wide M <= 16 rung 03 (a full card of 64-column strips, no fixup) stays ahead of 15 and 11.
    // Then rung 11 (K split over a cluster) and rung 04 (Stream-K), whose order differs per class:
    // 04 ahead of 11 only at narrow 8 < M <= 16.
    if (a.N >= 8192)
      return a.M <= 16 ? ShapeClass::DecodeWide : a.M <= 32 ? ShapeClass::DecodeWide32 : ShapeClass::DecodeWide64;
    if (a.M <= 8) return ShapeClass::DecodeOne;
    if (a.M <= 16) return ShapeClass::Decode16;
    return a.M <= 32 ? ShapeClass::Decode32 : ShapeClass::Decode64;
  }
  // Rung 19's 128 x 64 tiles fit one CTA per SM (M x N up to ~1 M on the H200): it leads there
  // (1024^3, 1000x1000x1024), then 18 and 16. With more tiles than one wave it falls behind 12 and
  // 18 (2048^3, 4097x1016x520), so the class is one wave only.
  if (static_cast<long long>((a.M + 127) / 128) * ((a.N + 63) / 64) <= d.sms) return ShapeClass::OneWave;
  // Under ~2 M outputs (1024^2-ish) a 128x256 tile gives fewer than 32 tiles on 132 SMs: rung 18's
  // 128x128 tiles per consumer lead (640x2048x2048), then the 128x128 wgmma rung 05 and rung 03's
  // 64x128 tile, all ahead of 08 there.
  if (static_cast<long long>(a.M) * a.N <= (2ll << 20)) return ShapeClass::SmallPrefill;
  // Everything larger: rung 12 (08 with a 4-deep ring) leads from 2048^3 up, then 08. Of the
  // portable rungs (all a card without sm_90a has), 03 leads 04 on most of these shapes.
  return ShapeClass::Prefill;
}

const std::vector<int>& preference(ShapeClass c) {
  static const std::vector<int> kDecodeOne = {15, 11, 4, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecode16 = {15, 4, 11, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecode32 = {15, 11, 4, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecode64 = {15, 11, 4, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecodeWide = {3, 11, 10, 4, 2, 1, 0};
  static const std::vector<int> kDecodeWide32 = {15, 3, 11, 10, 4, 2, 1, 0};
  static const std::vector<int> kDecodeWide64 = {15, 11, 4, 17, 3, 10, 2, 1, 0};
  // Where the sm_90a rungs refuse (sm_120), each list falls to the portable rungs (17, 04, 10, 03,
  // ...) in their measured order for the class; tests/test_gpu_gemm_bf16.cu checks it on a faked
  // sm_120. Rung 17 (03's tile fed by TMA) leads 03 and 04 on every prefill shape, not at decode.
  static const std::vector<int> kOneWave = {19, 18, 16, 5, 17, 4, 3, 12, 8, 2, 1, 0};
  static const std::vector<int> kSmallPrefill = {18, 5, 17, 3, 12, 8, 4, 2, 1, 0};
  static const std::vector<int> kPrefill = {12, 8, 7, 6, 5, 17, 3, 4, 2, 1, 0};
  switch (c) {
    case ShapeClass::DecodeOne: return kDecodeOne;
    case ShapeClass::Decode16: return kDecode16;
    case ShapeClass::Decode32: return kDecode32;
    case ShapeClass::Decode64: return kDecode64;
    case ShapeClass::DecodeWide: return kDecodeWide;
    case ShapeClass::DecodeWide32: return kDecodeWide32;
    case ShapeClass::DecodeWide64: return kDecodeWide64;
    case ShapeClass::OneWave: return kOneWave;
    case ShapeClass::SmallPrefill: return kSmallPrefill;
    default: return kPrefill;
  }
}
}  // namespace

std::string gemm_bf16_check_args(const GemmBf16Args& a) {
  std::ostringstream s;
  constexpr int kMaxDim = 0x7fffffff - 512;
  if (a.M <= 0 || a.N <= 0 || a.K <= 0 || a.M > kMaxDim || a.N > kMaxDim || a.K > kMaxDim)
    s << "M, N, K must be positive and at most 2^31 - 513 (got " << a.M << "x" << a.N << "x" << a.K << ")";
  else if (!a.A || !a.W || !a.C)
    s << "null pointer (A, W or C)";
  else if (!aligned(a.A, 2) || !aligned(a.W, 2) || !aligned(a.C, 2))
    s << "A, W and C must be 2-byte aligned (bf16 arrays)";
  return s.str();
}

const Rung<GemmBf16Args>* gemm_bf16_pick(const GemmBf16Args& args, const DeviceInfo& d) {
  if (!gemm_bf16_check_args(args).empty()) return nullptr;  // the shape classes need valid dims
  const auto& table = gemm_bf16_rungs();
  for (int n : preference(classify(args, d))) {
    const Rung<GemmBf16Args>* r = find_rung(table, std::to_string(n));
    if (r && r->supports(args, d).empty()) return r;
  }
  // Nothing in the list: the highest-numbered supported rung.
  const Rung<GemmBf16Args>* best = nullptr;
  for (const auto& r : table)
    if (r.supports(args, d).empty() && (!best || r.number > best->number))
      best = &r;
  return best;
}

void gemm_bf16(const GemmBf16Args& args, cudaStream_t stream) {
  const DeviceInfo& d = device_info();
  const Rung<GemmBf16Args>* r = gemm_bf16_pick(args, d);
  if (!r) {
    // Say why: the basic reason is the most useful one (K % 8, alignment, ...).
    std::string why = gemm_bf16_detail::shape_alignment_supports(args);
    KL_REQUIRE(false, "gemm_bf16: no rung supports " << args.M << "x" << args.N << "x" << args.K
                                                     << (why.empty() ? "" : ": ") << why);
  }
  launch_checked(*r, args, stream);
}

}  // namespace kl
