// kernels/attention/attention.cu — the attention rung table (written once, here), the shared
// argument checks, the workspace size and the entry point.
#include <algorithm>
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
// 08 everywhere while 05 was faster on every prefill shape). H200 figures, S = 4096/8192, D = 128,
// TFLOP/s (attn2 request 1, results/h200/dev/batch/attn2/): non-causal 06 654/629 > 07 649/608 > 05 589/580
// > 08; causal 08 556/565 >= 07 523/564 > 06 508/596 > 05; D = 64 non-causal 07 400 > 05 395 > 06
// 389. Decode: rung 03 was at least as fast as rung 09 on every decode shape (round 1 and attn1
// request 1, graph and event timing). The first supported rung of the list wins, so a GPU without
// sm_90a falls through to the mma.sync rungs.
namespace {
const int kPrefillCausal[] = {8, 6, 7, 5, 4, 3, 2, 1, 0};
const int kPrefillNonCausal[] = {6, 7, 5, 8, 4, 3, 2, 1, 0};
const int kPrefillNonCausalD64[] = {7, 5, 6, 8, 4, 3, 2, 1, 0};
const int kDecodeOrder[] = {3, 9};
static_assert(sizeof kPrefillCausal == 9 * sizeof(int) && sizeof kPrefillNonCausal == 9 * sizeof(int) &&
                  sizeof kPrefillNonCausalD64 == 9 * sizeof(int) && sizeof kDecodeOrder == 2 * sizeof(int),
              "attention_pick walks 9 prefill and 2 decode entries");
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
  const int* order = args.causal ? kPrefillCausal : args.D == 64 ? kPrefillNonCausalD64 : kPrefillNonCausal;
  if (const auto* r = first_supported(order, 9)) return r;
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
