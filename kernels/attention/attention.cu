// kernels/attention/attention.cu — the attention rung table (written once, here), the shared
// argument checks, the workspace size and the entry point.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>

#include "attention/attention.h"
#include "attention/attention_internal.h"
#include "attention/hopper_rungs.h"

namespace kl {

std::string attention_common_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::ostringstream why;
  if (d.cc() < 80) why << "needs sm_80 or newer (mma.sync bf16, cp.async); device is sm_" << d.cc();
  else if (!a.Q || !a.K || !a.V || !a.O) why << "null Q, K, V or O pointer";
  else if (a.D != 64 && a.D != 128) why << "D=" << a.D << " unsupported (D must be 64 or 128)";
  else if (a.B < 1 || a.Hq < 1 || a.Hkv < 1 || a.Sq < 1 || a.Skv < 1)
    why << "B, Hq, Hkv, Sq and Skv must be >= 1";
  else if (a.Hq % a.Hkv != 0) why << "Hq=" << a.Hq << " is not a multiple of Hkv=" << a.Hkv;
  else if (a.Sq > a.Skv) why << "Sq=" << a.Sq << " > Skv=" << a.Skv << " (queries must not outnumber keys)";
  else if (!(a.scale >= 0.f) || !std::isfinite(a.scale)) why << "scale must be finite and >= 0";
  else if (!aligned(a.Q, 16) || !aligned(a.K, 16) || !aligned(a.V, 16) || !aligned(a.O, 16))
    why << "Q, K, V and O must be 16-byte aligned (rows are read and written in 16-byte chunks)";
  else if (static_cast<long long>(a.B) * a.Hq * a.Sq > (1LL << 31) - 1 ||
           static_cast<long long>(a.B) * a.Hkv * a.Skv > (1LL << 31) - 1)
    why << "too many rows for 32-bit row indices";
  return why.str();
}

void attention_smem_optin(const void* kernel, int bytes) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;  // (kernel, device) pairs already raised
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (done.insert({kernel, dev}).second) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) done.erase({kernel, dev});
    KL_CHECK(e);
  }
}

unsigned attention_decode_epoch() {
  static std::atomic<unsigned> counter{0};
  unsigned e;
  do e = ++counter;
  while (e == 0u || e == 0xffffffffu);
  return e;
}

float attention_scale_log2(const AttentionArgs& a) {
  float s = a.scale > 0.f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.D));
  return s * 1.4426950408889634f;
}

const std::vector<Rung<AttentionArgs>>& attention_rungs() {
  static const std::vector<Rung<AttentionArgs>> table = [] {
    std::vector<Rung<AttentionArgs>> t = {
        {0, "warp_per_row", "a warp per query row, online softmax key by key", attn00_supports,
         attn00_launch},
        {1, "flash_cuda_cores",
         "flash tiling: a 64-row Q tile against 64-key K/V tiles in shared memory, fp32 FMA",
         attn01_supports, attn01_launch},
        {2, "flash_mma_sync",
         "tensor cores: mma.sync QK^T and PV, Q in registers, P repacked in registers, 3-stage "
         "cp.async, causal tiles skipped, heaviest tiles first",
         attn02_supports, attn02_launch},
        {3, "flash_split_kv",
         "schedule: tail-wave KV split with LSE combine, 16/64-row query tiles, split-KV decode "
         "with GQA heads packed into the tile",
         attn03_supports, attn03_launch},
    };
    attention_append_hopper_rungs(t);
    return t;
  }();
  return table;
}

size_t attention_workspace_bytes(const AttentionArgs& shape_only, const DeviceInfo& d) {
  // The most any rung wants: rung 03's split plan, and the Hopper decode rung's partials.
  const AttentionArgs& a = shape_only;
  if (a.D != 64 && a.D != 128) return 0;
  if (a.B < 1 || a.Hq < 1 || a.Hkv < 1 || a.Sq < 1 || a.Skv < 1 || a.Hq % a.Hkv) return 0;
  return std::max(attn03_workspace_bytes(a, d), attention_hopper_workspace_bytes(a, d));
}

// The pick is a measured preference list per shape class, not "the highest rung" (round 1 picked
// 08 everywhere while 05 was faster on every prefill shape). Prefill classes: causal or not, D, and
// the KV length, short (Skv < 2048, between the measured 1024 and 4096) or long. H200 figures, same
// run, us (final run, results/h200/dev/final-14647d0/attention.jsonl; B=16 S=512, B=8 S=1024, B=1 S>=4096, H=32):
// - causal short: D=128 S=512 / 1024: 08 128.8 / 180.6 < 07 137.8 / 188.8 < 10 142.3 / 192.3;
//   D=64 10 95.0 / 135.2 ~ 08 101.4 / 137.6 (10's D = 64 kernel is 08's config).
// - causal long: D=128 S=4096 / 8192 / 16384: 10 245.6 / 970.0 / 3760.7 < 08 256.6 / 1000.5 /
//   4043.0, 07 267.2 / 984.8 / 3823.8; GQA 32/8 S=4096 10 244.8 < 08 260.8; D=64 S=4096 / 8192
//   10 199.4 / 729.4 < 08 201.3 / 741.9 < 07 219.5 / 742.2. D=64 S=16384 (Skv > 8192): 06 2704.8
//   < 07 2734.7 < 08 2836.8 ~ 10 2837.0; again in results/h200/dev/batch2/apre/d64.jsonl: 06
//   2693.6 < 07 2740.2 < 08 2832.4 < 10 2845.5 (S=8192 there: 10 730.8 ~ 08 731.3 ~ 06 737.5).
// - non-causal short: D=128 S=512 / 1024: 10 167.0 / 271.8 < 07 172.1 / 272.9 < 08 191.0 / 281.9;
//   D=64 10 121.0 / 208.7 ~ 08 121.6 / 209.9 < 07 134.1 / 214.5.
// - non-causal long: D=128 S=4096 / 8192 / 16384: 07 443.9 / 1822.7 / 7307.3 < 06 444.9 / 1865.5 /
//   7568.1 < 10 458.2 / 1885.4 / 7822.4 < 05, 08 (GQA 32/8 S=4096: 06 443.2 ~ 07 446.8); D=64
//   S=4096 / 8192 / 16384: 06 347.8 / 1331.4 / 5295.8 ~ 07 352.0 / 1339.3 / 5280.2 < 05 < 08, 10.
//   D=128 S=4096 again, 3 interleaved rounds (results/h200/dev/batch2/apre/il4.jsonl): 07 431.2 /
//   464.8 / 466.9 < 06 443.6 / 477.0 / 480.6; none of the configs tried against 07 there (176-key
//   tiles, 3 stages, see docs/attention.md Part 2) beat it by > 2%.
// Decode (Sq <= 16): rung 03, then 09. Both are single-kernel split-KV steps since request adec r2
// (results/h200/dev/batch2/adec/dec_r2.jsonl); 03 was as fast or faster in event time on every
// decode shape measured (B=1,Hkv=8,Skv=4096 13.2 vs 13.2 us; 2-7% faster on the >= 134 MB caches:
// its cp.async stream runs at ~4.25 TB/s, 09's TMA ring at ~4.0); 09 is 0.4 us faster only in
// graph time at B=1,Hkv=8,Skv=4096. The first supported rung of the list wins, so a GPU without
// sm_90a falls through to the mma.sync rungs.
namespace {
constexpr int kPrefillShortKv = 2048;   // Skv below this: "short" prefill class
constexpr int kPrefillD64LongKv = 8192;  // causal D = 64 with Skv above this: 06 first
const int kPrefillCausalShort[] = {8, 7, 10, 6, 5, 4, 3, 2, 1, 0};
const int kPrefillCausalLong[] = {10, 8, 7, 6, 5, 4, 3, 2, 1, 0};
const int kPrefillCausalVeryLongD64[] = {6, 7, 10, 8, 5, 4, 3, 2, 1, 0};
const int kPrefillNonCausalShort[] = {10, 7, 8, 6, 5, 4, 3, 2, 1, 0};
const int kPrefillNonCausalLong[] = {7, 6, 10, 5, 8, 4, 3, 2, 1, 0};
const int kPrefillNonCausalLongD64[] = {6, 7, 5, 10, 8, 4, 3, 2, 1, 0};
const int kDecodeOrder[] = {3, 9};
static_assert(sizeof kPrefillCausalShort == 10 * sizeof(int) && sizeof kPrefillCausalLong == 10 * sizeof(int) &&
                  sizeof kPrefillCausalVeryLongD64 == 10 * sizeof(int) &&
                  sizeof kPrefillNonCausalShort == 10 * sizeof(int) &&
                  sizeof kPrefillNonCausalLong == 10 * sizeof(int) &&
                  sizeof kPrefillNonCausalLongD64 == 10 * sizeof(int) && sizeof kDecodeOrder == 2 * sizeof(int),
              "attention_pick walks 10 prefill and 2 decode entries");
}  // namespace

const Rung<AttentionArgs>* attention_pick(const AttentionArgs& args, const DeviceInfo& d) {
  const auto& table = attention_rungs();
  auto first_supported = [&](const int* order, size_t n) -> const Rung<AttentionArgs>* {
    for (size_t k = 0; k < n; ++k) {
      const Rung<AttentionArgs>* r = find_rung(table, std::to_string(order[k]));
      if (r && r->supports(args, d).empty()) return r;
    }
    return nullptr;
  };
  // Decode shapes (Sq <= 16): a kernel built for them (GQA heads packed into the tile, KV split
  // over the SMs); the prefill kernels would re-read each KV head per query head and idle most SMs.
  if (attention_is_decode(args)) {
    if (const auto* r = first_supported(kDecodeOrder, 2)) return r;
  }
  // Prefill: the measured shape class (figures above).
  const int* order = kPrefillNonCausalLong;
  if (args.Skv < kPrefillShortKv)
    order = args.causal ? kPrefillCausalShort : kPrefillNonCausalShort;
  else if (args.causal)
    order = args.D == 64 && args.Skv > kPrefillD64LongKv ? kPrefillCausalVeryLongD64 : kPrefillCausalLong;
  else if (args.D == 64)
    order = kPrefillNonCausalLongD64;
  if (const auto* r = first_supported(order, 10)) return r;
  return best_supported(table, args, d);
}

void attention(const AttentionArgs& args, cudaStream_t stream) {
  const DeviceInfo& d = device_info();
  const Rung<AttentionArgs>* r = attention_pick(args, d);
  if (!r) {
    std::string why = attention_common_supports(args, d);
    KL_REQUIRE(false, "attention: no rung supports this problem: "
                          << (why.empty() ? attn03_supports(args, d) : why));
  }
  launch_checked(*r, args, stream);
}

}  // namespace kl
