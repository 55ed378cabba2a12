// kernels/attention/attention.cu — the attention rung table (written once, here), the shared
// argument checks, the workspace size and the entry point.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "kl/attention.h"
#include "attention/attention_internal.h"
#include "attention/hopper_rungs.h"

namespace kl {

std::string attention_args_supports(const AttentionArgs& a, const DeviceInfo& d) {
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

void attention_smem_optin(const void* kernel, int bytes, bool max_carveout) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;  // (kernel, device) pairs already raised
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (done.insert({kernel, dev}).second) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess && max_carveout)
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               int(cudaSharedmemCarveoutMaxShared));
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
        {0, "warp_per_row", "a warp per query row, online softmax key by key",
         attention_warp_per_row_supports, attention_warp_per_row_launch},
        {1, "flash_cuda_cores",
         "flash tiling: a 64-row Q tile against 64-key K/V tiles in shared memory, fp32 FMA",
         attention_flash_cuda_cores_supports, attention_flash_cuda_cores_launch, /*parent=*/0},
        {2, "flash_mma_sync",
         "tensor cores: mma.sync QK^T and PV, Q in registers, P repacked in registers, 2- or "
         "3-stage cp.async (D = 128 / 64), causal tiles skipped, heaviest tiles first",
         attention_flash_mma_sync_supports, attention_flash_mma_sync_launch, /*parent=*/1},
        {3, "flash_split_kv",
         "schedule: tail-wave KV split with LSE combine, 16/64-row query tiles, split-KV decode "
         "with GQA heads packed into the tile",
         attention_flash_split_kv_supports, attention_flash_split_kv_launch, /*parent=*/2},
    };
    attention_append_hopper_rungs(t);
    t.push_back({11, "tma_mma_sync",
                 "rung 03's mma.sync tile fed by TMA boxes (producer warp) through full/empty "
                 "mbarriers, no block barrier in the KV loop; sm_90 and sm_120",
                 attention_tma_mma_sync_supports, attention_tma_mma_sync_launch, /*parent=*/3});
    attention_append_late_hopper_rungs(t);
    return t;
  }();
  return table;
}

size_t attention_workspace_bytes(const AttentionArgs& shape_only, const DeviceInfo& d) {
  // The most any rung wants: the split plans of rungs 03 and 11, and the Hopper decode rung's partials.
  const AttentionArgs& a = shape_only;
  if (a.D != 64 && a.D != 128) return 0;
  if (a.B < 1 || a.Hq < 1 || a.Hkv < 1 || a.Sq < 1 || a.Skv < 1 || a.Hq % a.Hkv) return 0;
  return std::max({attention_flash_split_kv_workspace_bytes(a, d), attention_tma_mma_sync_workspace_bytes(a, d),
                   attention_hopper_workspace_bytes(a, d)});
}

// The pick is a preference list per shape class, fastest first on the H200, not "the highest
// rung". Prefill classes: causal or not, the KV length, short (Skv < 2048, between the measured
// 1024 and 4096) or long, and the head dim (docs/attention.md has the rows):
// - D = 64, every prefill class: 15 first (13's 64-row items, two CTAs per SM, with the O store by
//   TMA: ahead of 13 on the batched short shapes, level on the long ones), then 13 (one item's
//   first S and last P V run under the other CTA's mainloop), 12, 08, 06;
// - short, D = 128 (both masks): 14 first (12's two Q tiles, so the next item's Q loads under the
//   current item, and an O store by TMA that the warpgroup does not wait for: both matter when an
//   item has few key tiles), then 12; 13's 64-key tiles cost more than its second CTA gains there;
// - causal long, D = 128: 08 first (its per-tile descriptor arithmetic is on the uniform datapath),
//   then 12, 10, 07, 06;
// - non-causal long, D = 128: 06 first, then 07 and 08;
// - 14 right behind 12 in the other lists: on the long shapes its rows and 12's differ by less
//   than their clocks do, and those lists come from interleaved measurements; at D = 64, 13 leads
//   both on the short shapes.
// Decode (Sq <= 16): rung 03, then 09. Both are single-kernel split-KV steps; 03 is as fast or
// faster on every decode shape (its cp.async stream runs faster than 09's TMA ring on the large
// caches). The first supported rung of the list wins, so a GPU without sm_90a falls through to
// the mma.sync rungs.
namespace {
constexpr int kPrefillShortKv = 2048;   // Skv below this: "short" prefill class
// Rung 15 takes D = 64 only, so only the D = 64 list names it.
const std::vector<int> kPrefillD64 = {15, 13, 12, 14, 8, 6, 7, 10, 5, 4, 3, 2, 1, 0};
const std::vector<int> kPrefillShort = {14, 12, 13, 8, 7, 10, 6, 5, 4, 3, 2, 1, 0};
const std::vector<int> kPrefillCausalLong = {8, 12, 14, 10, 7, 6, 13, 5, 4, 3, 2, 1, 0};
const std::vector<int> kPrefillNonCausalLong = {6, 7, 8, 12, 14, 10, 13, 5, 4, 3, 2, 1, 0};
const std::vector<int> kDecodeOrder = {3, 9};
}  // namespace

const Rung<AttentionArgs>* attention_pick(const AttentionArgs& args, const DeviceInfo& d) {
  const auto& table = attention_rungs();
  auto first_supported = [&](const std::vector<int>& order) -> const Rung<AttentionArgs>* {
    for (int n : order) {
      const Rung<AttentionArgs>* r = find_rung(table, std::to_string(n));
      if (r && r->supports(args, d).empty()) return r;
    }
    return nullptr;
  };
  // Decode shapes (Sq <= 16): a kernel built for them (GQA heads packed into the tile, KV split
  // over the SMs); the prefill kernels would re-read each KV head per query head and idle most SMs.
  if (attention_is_decode(args)) {
    if (const auto* r = first_supported(kDecodeOrder)) return r;
  }
  // Prefill: the shape class (lists above).
  const std::vector<int>* order = &kPrefillNonCausalLong;
  if (args.D == 64)
    order = &kPrefillD64;
  else if (args.Skv < kPrefillShortKv)
    order = &kPrefillShort;
  else if (args.causal)
    order = &kPrefillCausalLong;
  if (const auto* r = first_supported(*order)) return r;
  return best_supported(table, args, d);
}

void attention(const AttentionArgs& args, cudaStream_t stream) {
  const DeviceInfo& d = device_info();
  const Rung<AttentionArgs>* r = attention_pick(args, d);
  if (!r) {
    std::string why = attention_args_supports(args, d);
    KL_REQUIRE(false, "attention: no rung supports this problem: "
                          << (why.empty() ? attention_flash_split_kv_supports(args, d) : why));
  }
  launch_checked(*r, args, stream);
}

}  // namespace kl
