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
// the KV length, short (Skv < 2048, between the measured 1024 and 4096) or long. Since the
// uniform-datapath change (Part 2 log item 13: the persistent rungs 08/10 lost their per-tile
// R2UR/64-bit descriptor arithmetic), the lists come from results/h200/dev/attn_uniform/pick_6.jsonl
// and pick_a.jsonl (every default shape, rungs 6,7,8,10,auto and the reverse order, one process
// each; H200, us, first / second run; rows early in a process run cooler and faster, so a rung is
// compared with the rows that ran in the same position):
// - causal, every length and D: 08 first. D=128 S=512 / 1024 / 4096: 08 122.3 / 160.2 / 210.9 <
//   10 233.1 (S=4096) < 07 130.1 / 174.8 / 240.2, 06 131.6 / 175.6 / 237.7 (second run within 1%);
//   S=8192 at 1965 MHz 06 802.6 (first row of its process) ~ 08 807.1 (second row of its process);
//   S=16384 08 3279.9 / 3268.6 < 06 3386.3 / 3323.5, 07. D=64: S=4096 08 166.9 / 167.8 < 07, 06
//   193.5-199.4; S=8192 08 598.8 / 603.4 < 06 638.3 / 639.1 (all at 1965 MHz; before the change 06
//   led here, so causal D = 64 with Skv > 4096 went to 06); S=16384 08 2352.1 / 2353.0 ~ 06 2344.9 /
//   2357.5. GQA 32/8 S=4096: 08 210.0 / 209.2 < 06, 07 238.5-245.8. (Rung 10's D = 64 kernel is 08's
//   configuration: 10 and 08 are within 1% at D = 64, except S=16384 causal, where 10 ran first
//   in its process: 2257.5 against 08's 2353.0.)
// - non-causal short: D=128 S=512 / 1024: 08 162.6-163.1 / 235.5-236.7 < 06, 07 166.9-188.9 /
//   243.2-244.5 < 10 179.9-199.2 / 260.4-261.9; D=64 08 ~ 10 107.5-110.0 / 176.8-177.6 < 07 122.7 /
//   192.7 < 06.
// - non-causal long: 06 first at both D (08 came within 0.3-2% at S = 4096 where it ran early in its
//   process, and 7% behind at S = 8192): D=128 S=4096 06 381.7 (first) vs 08 382.8 (second) and 07 384.5 (second); GQA 32/8
//   06 375.9 (first) vs 08 382.7 (second); S=8192 06 1449.0 (first) < 08 1546.7 (second); D=64
//   S=4096 06 301.2-302.2 ~ 10, 08 301.9-304.5; S=8192 06 1128.2 / 1145.6 < 10 1165.4 / 1157.8 < 07,
//   08; S=16384 06 4496.1 / 4576.5 < 07 4656.1 / 4661.2 < 10, 08.
// (Before, from results/h200/dev/attn_softmax/pick_*.jsonl: the same lists except causal D = 64 with
// Skv > 4096 -> 06, which led there by 3-9% while 08 paid the per-tile R2UR arithmetic.)
// Decode (Sq <= 16): rung 03, then 09. Both are single-kernel split-KV steps since request adec r2
// (results/h200/dev/batch2/adec/dec_r2.jsonl); 03 was as fast or faster in event time on every
// decode shape measured (B=1,Hkv=8,Skv=4096 13.2 vs 13.2 us; 2-7% faster on the >= 134 MB caches:
// its cp.async stream runs at ~4.25 TB/s, 09's TMA ring at ~4.0); 09 is 0.4 us faster only in
// graph time at B=1,Hkv=8,Skv=4096. The first supported rung of the list wins, so a GPU without
// sm_90a falls through to the mma.sync rungs.
namespace {
constexpr int kPrefillShortKv = 2048;   // Skv below this: "short" prefill class
const int kPrefillCausalShort[] = {8, 7, 10, 6, 5, 4, 3, 2, 1, 0};
const int kPrefillCausalLong[] = {8, 10, 7, 6, 5, 4, 3, 2, 1, 0};
const int kPrefillNonCausalShort[] = {8, 7, 10, 6, 5, 4, 3, 2, 1, 0};
const int kPrefillNonCausalLong[] = {6, 7, 8, 10, 5, 4, 3, 2, 1, 0};
const int kPrefillNonCausalLongD64[] = {6, 7, 5, 8, 10, 4, 3, 2, 1, 0};
const int kDecodeOrder[] = {3, 9};
static_assert(sizeof kPrefillCausalShort == 10 * sizeof(int) && sizeof kPrefillCausalLong == 10 * sizeof(int) &&
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
    order = kPrefillCausalLong;
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
