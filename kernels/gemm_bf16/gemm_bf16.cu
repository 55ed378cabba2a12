// kernels/gemm_bf16/gemm_bf16.cu — the rung table (written once), the entry point and its pick,
// the workspace size, and helpers the part-1 rung files share.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "common/check.h"
#include "gemm_bf16/gemm_bf16.h"
#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/hopper_gemm.cuh"

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

const char* tile_name(Tile t) {
  switch (t) {
    case Tile::L: return "128x256_w64x64_s4";
    case Tile::M: return "128x128_w64x32_s3_2cta";
    case Tile::S: return "64x128_w32x32_s4_2cta";
    case Tile::T: return "64x64_w32x32_s4_3cta";
    case Tile::D16: return "16x64_s6";
    case Tile::D32: return "32x64_s6";
    case Tile::X1: return "128x256_16w64x32_s4";
    case Tile::X2: return "256x128_16w64x32_s4";
    case Tile::X4: return "128x128_4w64x64_s3_2cta";
    case Tile::X5: return "256x128_w64x64_s4";
    case Tile::X6: return "128x256_w64x64_s3";
    case Tile::X7: return "128x256_w64x64_s4_ilv";
    case Tile::X8: return "128x256_16w64x32_s4_ilv";
    default: return "?";
  }
}

// Experiment rows (only with KL_GEMM_EXP=1 in the environment; never in the default table): rung 03
// and rung 04 with each CTA tile forced, numbered 30 + tile and 50 + tile, so one bench run can
// measure every tile on the same inputs.
template <Tile T>
void launch03_tile(const GemmBf16Args& a, cudaStream_t s) { rung03_launch_tile(T, a, s); }
template <Tile T>
void launch04_tile(const GemmBf16Args& a, cudaStream_t s) { rung04_launch_tile(T, +1, a, s); }
template <Tile T>
std::string supports04_tile(const GemmBf16Args& a, const DeviceInfo& d) {
  return rung04_supports_tile(T, +1, a, d);
}
template <Tile T>
std::string supports03_tile(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = rung03_supports(a, d);
  if (why.empty() && d.smem_optin < 192 * 1024) why = "experiment tiles assume Hopper's smem";
  return why;
}
template <Tile T>
void add_exp(std::vector<Rung<GemmBf16Args>>& t) {
  static const std::string n3 = std::string("x03_") + tile_name(T),
                           n4 = std::string("x04_") + tile_name(T);
  t.push_back({30 + static_cast<int>(T), n3.c_str(), "experiment: rung 03, tile forced",
               supports03_tile<T>, launch03_tile<T>});
  if (T == Tile::L || T == Tile::M || T == Tile::X1 || T == Tile::X2 || T == Tile::X7)
    t.push_back({50 + static_cast<int>(T), n4.c_str(), "experiment: rung 04, tile forced, Stream-K part forced on",
                 supports04_tile<T>, launch04_tile<T>});
}
// Rung 14 with its Stream-K part forced on (70) / off (71) / one-tile variant (72): measures what
// the plan's model decides.
std::string supports14_on(const GemmBf16Args& a, const DeviceInfo& d) {
  return hopper_gemm::supports_14_forced(a, d, +1);
}
void launch14_on(const GemmBf16Args& a, cudaStream_t s) { hopper_gemm::launch_14_forced(a, s, +1); }
std::string supports14_off(const GemmBf16Args& a, const DeviceInfo& d) {
  return hopper_gemm::supports_14_forced(a, d, -1);
}
void launch14_off(const GemmBf16Args& a, cudaStream_t s) { hopper_gemm::launch_14_forced(a, s, -1); }
std::string supports14_one(const GemmBf16Args& a, const DeviceInfo& d) {
  return hopper_gemm::supports_14_forced(a, d, +2);
}
void launch14_one(const GemmBf16Args& a, cudaStream_t s) { hopper_gemm::launch_14_forced(a, s, +2); }
template <int V>
void launch15_variant(const GemmBf16Args& a, cudaStream_t s) { hopper_gemm::launch_15_variant(a, V, s); }
// Rung 15 with (strip rows, cluster) forced: rows 130 + 3 * (BN / 32 - 1) + log2(CL); split-M
// pairs 142 + BN / 32 - 1.
template <int BN, int CL, bool SPLITM = false>
void launch15_strip(const GemmBf16Args& a, cudaStream_t s) { hopper_gemm::launch_15_strip(a, BN, CL, SPLITM, s); }
// Widths between the multiples of 32 (no clusters): rows 146-149.
template <int BN, int ROW>
void add_exp15w(std::vector<Rung<GemmBf16Args>>& t) {
  static const std::string name = "x15_bn" + std::to_string(BN) + "_cl1";
  static const std::string what = "experiment: rung 15 with " + std::to_string(BN) + "-row W strips, no clusters";
  t.push_back({ROW, name.c_str(), what.c_str(), hopper_gemm::supports_15, launch15_strip<BN, 1>});
}
template <int BN>
void add_exp15m(std::vector<Rung<GemmBf16Args>>& t) {
  static const std::string name = "x15_bn" + std::to_string(BN) + "_m2";
  static const std::string what = "experiment: rung 15, pairs of CTAs on one " + std::to_string(BN) +
                                  "-row W strip, each taking half of M, W boxes multicast";
  t.push_back({142 + BN / 32 - 1, name.c_str(), what.c_str(), hopper_gemm::supports_15,
               launch15_strip<BN, 2, true>});
}
template <int BN, int CL>
void add_exp15(std::vector<Rung<GemmBf16Args>>& t) {
  static const std::string name = "x15_bn" + std::to_string(BN) + "_cl" + std::to_string(CL);
  static const std::string what =
      "experiment: rung 15 with " + std::to_string(BN) + "-row W strips, " +
      (CL == 1 ? std::string("no clusters")
               : "clusters of " + std::to_string(CL) + " multicasting the activation box");
  t.push_back({130 + 3 * (BN / 32 - 1) + (CL == 1 ? 0 : CL == 2 ? 1 : 2), name.c_str(), what.c_str(),
               hopper_gemm::supports_15, launch15_strip<BN, CL>});
}
void append_experiment_rungs(std::vector<Rung<GemmBf16Args>>& t) {
  add_exp<Tile::L>(t);
  add_exp<Tile::M>(t);
  add_exp<Tile::X1>(t);
  add_exp<Tile::X2>(t);
  add_exp<Tile::X4>(t);
  add_exp<Tile::X5>(t);
  add_exp<Tile::X6>(t);
  add_exp<Tile::X7>(t);
  add_exp<Tile::X8>(t);
  t.push_back({70, "x14_sk_on", "experiment: rung 14, Stream-K part forced on", supports14_on,
               launch14_on});
  t.push_back({71, "x14_sk_off", "experiment: rung 14, Stream-K part off (rung 12's schedule)",
               supports14_off, launch14_off});
  t.push_back({72, "x14_sk1_on", "experiment: rung 14, one-tile Stream-K (only the last partial wave split)",
               supports14_one, launch14_one});
  t.push_back({73, "x12_two_halves", "experiment: rung 12, epilogue in two 128-column halves",
               hopper_gemm::supports_12, hopper_gemm::launch_12_two_halves});
  t.push_back({74, "x12_no_pdl", "experiment: rung 12 without programmatic dependent launch",
               hopper_gemm::supports_12, hopper_gemm::launch_12_no_pdl});
  // 75-77: rung 15 with one of its choices undone (15_decode_no_split.cu); 78: rung 16 in pairs.
  t.push_back({75, "x15_multicast", "experiment: rung 15 in 2-CTA clusters, each loading half the activation box and multicasting it",
               hopper_gemm::supports_15, launch15_variant<1>});
  t.push_back({76, "x15_one_lane", "experiment: rung 15 with one producer thread",
               hopper_gemm::supports_15, launch15_variant<2>});
  t.push_back({77, "x15_ring4", "experiment: rung 15 with its ring cut to a multiple of 4 stages",
               hopper_gemm::supports_15, launch15_variant<3>});
  t.push_back({78, "x16_pairs", "experiment: rung 16 in clusters of two CTAs on one strip and two 64-row tiles, W multicast",
               hopper_gemm::supports_16, hopper_gemm::launch_16_pairs});
  hopper_gemm::append_experiment_rungs_11(t);  // 80+: decode rung 11 with (T, S, ring) forced
  add_exp15<32, 1>(t), add_exp15<32, 2>(t), add_exp15<32, 4>(t);
  add_exp15<64, 1>(t), add_exp15<64, 2>(t), add_exp15<64, 4>(t);
  add_exp15<96, 1>(t), add_exp15<96, 2>(t), add_exp15<96, 4>(t);
  add_exp15<128, 1>(t), add_exp15<128, 2>(t), add_exp15<128, 4>(t);
  add_exp15m<32>(t), add_exp15m<64>(t), add_exp15m<96>(t), add_exp15m<128>(t);
  add_exp15w<80, 146>(t), add_exp15w<88, 147>(t), add_exp15w<104, 148>(t), add_exp15w<112, 149>(t);
}

}  // namespace gemm_bf16_detail

const std::vector<Rung<GemmBf16Args>>& gemm_bf16_rungs() {
  using namespace gemm_bf16_detail;
  static const std::vector<Rung<GemmBf16Args>> table = [] {
    std::vector<Rung<GemmBf16Args>> t = {
        {0, "wmma_global", "WMMA fragments loaded straight from global memory", rung00_supports,
         rung00_launch},
        {1, "smem_tile_padded", "128x128x32 shared-memory tile, rows padded against bank conflicts",
         rung01_supports, rung01_launch, /*parent=*/0},
        {2, "cp_async_pipeline", "3-stage cp.async pipeline: next tiles in flight during the math",
         rung02_supports, rung02_launch, /*parent=*/1},
        {3, "mma_sync_swizzle",
         "mma.sync + ldmatrix, XOR-swizzled 4-stage tile, bf16-pair epilogue, tile per wave count",
         rung03_supports, rung03_launch, /*parent=*/2},
        {4, "stream_k",
         "Stream-K over the last wave's (tile, k-step) units + hardware-scheduled whole tiles, "
         "deterministic epoch fixup",
         rung04_supports, rung04_launch, /*parent=*/3},
    };
    gemm_bf16_append_hopper_rungs(t);
    if (const char* e = std::getenv("KL_GEMM_EXP"); e && *e == '1') append_experiment_rungs(t);
    return t;
  }();
  return table;
}

size_t gemm_bf16_workspace_bytes(int M, int N, int K, const DeviceInfo& d) {
  // Rungs 04 (part 1) and 14 (Hopper Stream-K) need scratch.
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  // One workspace serves rungs 04 and 14 (same flag region, kernels/common/streamk.cuh).
  return std::max(gemm_bf16_detail::streamk_workspace_bytes(M, N, K, d),
                  hopper_gemm::workspace_14(M, N, K, d));
}

// The entry point's choice: per shape class, the rungs in order of speed on the H200, fastest
// first (docs/gemm_bf16.md has the rows). The first rung in the
// list that supports the shape wins — Hopper rungs refuse other cards, rung 04 refuses without a
// workspace — so every list ends in part-1 rungs that run anywhere. Rungs 09 and 13 (cluster
// multicast) are in no list: slower than 08/12 on every shape.
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
  // Rung 16's 64 x 128 tiles fit one CTA per SM (M x N up to ~1 M on the H200): it leads there
  // (1024^3, 1000x1000x1024, 512x1024x1024, 128x4096x4096, 256x4096x4096; 05 is next). With more
  // tiles than one wave it falls far behind 05 / 12, so the class is one wave only.
  if (static_cast<long long>((a.M + 63) / 64) * ((a.N + 127) / 128) <= d.sms) return ShapeClass::OneWave;
  // Under ~2 M outputs (1024^2-ish) a 128x256 tile gives fewer than 32 tiles on 132 SMs: the
  // 128x128 wgmma rung 05 and rung 03's 64x128 tile are ahead of 08 there.
  if (static_cast<long long>(a.M) * a.N <= (2ll << 20)) return ShapeClass::SmallPrefill;
  // Everything larger: rung 12 (08 with a 4-deep ring) leads from 2048^3 up, then 08; part 1's
  // Stream-K hybrid (= 03's grid where it does not split) ahead of 03.
  return ShapeClass::Prefill;
}

const std::vector<int>& preference(ShapeClass c) {
  static const std::vector<int> kDecodeOne = {15, 11, 4, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecode16 = {15, 4, 11, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecode32 = {15, 11, 4, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecode64 = {15, 11, 4, 10, 3, 2, 1, 0};
  static const std::vector<int> kDecodeWide = {3, 11, 10, 4, 2, 1, 0};
  static const std::vector<int> kDecodeWide32 = {15, 3, 11, 10, 4, 2, 1, 0};
  static const std::vector<int> kDecodeWide64 = {15, 11, 4, 3, 10, 2, 1, 0};
  static const std::vector<int> kOneWave = {16, 5, 3, 12, 8, 4, 2, 1, 0};
  static const std::vector<int> kSmallPrefill = {5, 3, 12, 8, 4, 2, 1, 0};
  static const std::vector<int> kPrefill = {12, 8, 7, 6, 5, 4, 3, 2, 1, 0};
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

const Rung<GemmBf16Args>* gemm_bf16_pick(const GemmBf16Args& args, const DeviceInfo& d) {
  const auto& table = gemm_bf16_rungs();
  for (int n : preference(classify(args, d))) {
    const Rung<GemmBf16Args>* r = find_rung(table, std::to_string(n));
    if (r && r->supports(args, d).empty()) return r;
  }
  // Nothing in the list: any supported rung, experiment rows (30+) excluded.
  const Rung<GemmBf16Args>* best = nullptr;
  for (const auto& r : table)
    if (r.number < 30 && r.supports(args, d).empty() && (!best || r.number > best->number))
      best = &r;
  return best;
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
