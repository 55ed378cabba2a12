// 11 tma_mma_sync — rung 03's mma.sync prefill tile fed by TMA boxes through a ring of mbarriers.
//
// Parent: 03 flash_split_kv (its tiles, tail-split schedule and combine; its decode step as is).
// Change: how Q, K and V reach shared memory (tma_mma.cuh). Thread 0 issues Q and the first tiles
//   as 3-D TMA boxes (64 columns x rows of one head, 128-byte swizzle) that complete on mbarriers;
//   each warp waits on the stage's full barrier, runs rung 03's ldmatrix + mma.sync + online
//   softmax, fences (proxy.async) and counts itself done with the stage; the last of the four
//   refills it with the tile STAGES ahead. No block-wide barrier and no copy addressing in the KV
//   loop, and no producer warp (its registers would cost the second block per SM).
// Why: TMA + mbarriers exist on every TMA card (sm_90 and sm_120, which has no wgmma), and let
//   warps drift apart by up to a stage instead of meeting at a barrier every key tile.
// Limits: a refill is issued only when the slowest warp is done with the stage, one tile of math
//   ahead of its use with the D = 128 ring 2 deep (sm_120's shared memory). Decode shapes
//   (Sq <= 16) run rung 03's cp.async step (rung 09 is its TMA version).
#include <algorithm>
#include <climits>

#include "attention/attention_internal.h"
#include "attention/combine.cuh"
#include "attention/decode_split.cuh"
#include "attention/tma_mma.cuh"
#include "common/tma.h"

namespace kl {
namespace {

template <int D, bool HM = false>
using TBig = flash::TmaCfg<flash::TmaTile<D, 2, HM>>;
template <int D, bool HM = false>
using TSmall = flash::TmaCfg<flash::TmaTile<D, 1, HM>>;

int tile_smem(int D, bool small) {
  if (D == 64) return small ? TSmall<64>::SMEM : TBig<64>::SMEM;
  return small ? TSmall<128>::SMEM : TBig<128>::SMEM;
}
// Registers per thread of those kernels (ptxas -v, sm_90a), for the resident-block count.
int tile_regs(int D, bool small) { return small ? (D == 64 ? 142 : 190) : (D == 64 ? 216 : 254); }

// Output row of a split tail tile.
struct TailRows {
  __nv_bfloat16* O;
  int B, Hq, Sq, nqt, BM, full_blocks, d, head_major;
  __device__ __nv_bfloat16* operator()(int tl, int r) const {
    int qt, bh;
    flash::tile_of(full_blocks + tl, nqt, B * Hq, head_major != 0, qt, bh);
    const int i = qt * BM + r;
    if (i >= Sq) return nullptr;
    return O + (static_cast<long long>(bh) * Sq + i) * d;
  }
};

// Rung 03's prefill plan with this kernel's occupancy: Sq <= 64 takes the 64-row tile; a tail wave
// of at most half a wave (non-causal, or the whole problem) is split over the idle SMs.
struct Plan {
  bool small = false;
  int nqt = 0;
  long long tiles = 0;
  int full_blocks = 0;
  int splits = 1;
  size_t ws_bytes = 0;
};

Plan make_plan(const AttentionArgs& a, const DeviceInfo& d, size_t ws_avail) {
  Plan pl;
  pl.small = a.Sq <= 64;
  const int BM = pl.small ? 64 : 128, threads = TBig<64>::THREADS;
  pl.nqt = (a.Sq + BM - 1) / BM;
  pl.tiles = static_cast<long long>(pl.nqt) * a.B * a.Hq;
  pl.full_blocks = static_cast<int>(std::min<long long>(pl.tiles, INT_MAX));
  const long long by_smem = d.smem_per_sm / (tile_smem(a.D, pl.small) + 1024);
  const long long by_regs = 65536 / (static_cast<long long>(threads) * tile_regs(a.D, pl.small));
  const long long W = static_cast<long long>(std::max(1, d.sms)) * std::max(1LL, std::min(by_smem, by_regs));
  const long long tail = pl.tiles % W;
  const int nkv = (a.Skv + 63) / 64;
  if (tail > 0 && 2 * tail <= W && (!a.causal || tail == pl.tiles)) {
    const int s = static_cast<int>(std::min<long long>({W / tail, nkv / 2, 64}));
    const size_t need = dec::kFlagBytes + static_cast<size_t>(tail) * s * BM * (a.D + 1) * 4;
    if (s >= 2 && need <= ws_avail) {
      pl.full_blocks = static_cast<int>(pl.tiles - tail);
      pl.splits = s;
      pl.ws_bytes = need;
    }
  }
  return pl;
}

// Q [B*Hq][Sq][D], K and V [B*Hkv][Skv][D] as 3-D maps: a box is 64 columns x `rows` rows of one
// head, rows past the head's end read as zero.
CUtensorMap head_map(const __nv_bfloat16* base, int heads, int seq, int D, int rows) {
  const uint64_t dims[3] = {uint64_t(D), uint64_t(seq), uint64_t(heads)};
  const uint64_t strides[2] = {uint64_t(D) * 2, uint64_t(seq) * D * 2};
  const uint32_t box[3] = {64, uint32_t(rows), 1};
  return make_tensor_map(base, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dims, strides, box,
                         CU_TENSOR_MAP_SWIZZLE_128B);
}

template <class C>
void run_prefill(const AttentionArgs& a, const Plan& pl, cudaStream_t st) {
  constexpr int D = C::D;
  auto* kernel = flash::attention_tma_mma_sync_kernel<C>;
  attention_smem_optin(reinterpret_cast<const void*>(kernel), C::SMEM);
  flash::Params p{};
  p.Q = a.Q; p.K = a.K; p.V = a.V; p.O = a.O;
  p.B = a.B; p.Hq = a.Hq; p.Hkv = a.Hkv; p.Sq = a.Sq; p.Skv = a.Skv; p.group = a.Hq / a.Hkv;
  p.causal = a.causal ? 1 : 0;
  p.sl2 = attention_scale_log2(a);
  p.nqt = pl.nqt;
  p.full_blocks = pl.full_blocks;
  p.splits = pl.splits;
  const long long tail = pl.tiles - pl.full_blocks;
  if (tail > 0) {
    p.ws_o = reinterpret_cast<float*>(static_cast<char*>(a.workspace) + dec::kFlagBytes);
    p.ws_lse = p.ws_o + tail * pl.splits * C::BM * D;
  }
  const CUtensorMap tq = head_map(a.Q, a.B * a.Hq, a.Sq, D, C::BM);
  const CUtensorMap tk = head_map(a.K, a.B * a.Hkv, a.Skv, D, C::BN);
  const CUtensorMap tv = head_map(a.V, a.B * a.Hkv, a.Skv, D, C::BN);
  const long long blocks = pl.full_blocks + tail * pl.splits;
  kernel<<<static_cast<unsigned>(blocks), C::THREADS, C::SMEM, st>>>(p, tq, tk, tv);
  KL_CHECK_LAUNCH();
  if (tail > 0) {
    TailRows map{a.O, a.B, a.Hq, a.Sq, pl.nqt, C::BM, pl.full_blocks, D, C::HEAD_MAJOR};
    flash::launch_combine<D>(p.ws_o, p.ws_lse, C::BM, pl.splits, tail * C::BM, map, true, st);
  }
}

}  // namespace

std::string attention_tma_mma_sync_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_args_supports(a, d);
  if (!why.empty()) return why;
  if (d.cc() < 90)
    return "needs sm_90+ (TMA cp.async.bulk.tensor, mbarrier transaction counts); device is sm_" +
           std::to_string(d.cc());
  if (attention_is_decode(a)) return attention_flash_split_kv_supports(a, d);  // rung 03's decode step
  // Q/K/V rows are D * 2 = 128 or 256 bytes and the bases 16-byte aligned (checked above): the
  // strides and addresses TMA needs.
  const Plan pl = make_plan(a, d, 0);
  const int smem = tile_smem(a.D, pl.small);
  if (smem > d.smem_optin)
    return "needs " + std::to_string(smem) + " B of shared memory per block, device allows " +
           std::to_string(d.smem_optin);
  if (pl.tiles > INT_MAX / 64) return "too many tiles for a 1-D grid";
  const char* no_tma = nullptr;
  if (!tma_available(&no_tma)) return std::string("TMA unavailable: ") + (no_tma ? no_tma : "");
  return "";
}

size_t attention_tma_mma_sync_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d) {
  if (attention_is_decode(a)) return attention_flash_split_kv_workspace_bytes(a, d);
  return make_plan(a, d, SIZE_MAX).ws_bytes;
}

void attention_tma_mma_sync_launch(const AttentionArgs& a, cudaStream_t s) {
  if (attention_is_decode(a)) return attention_flash_split_kv_launch(a, s);
  // A missing, short or misaligned (float4 stores) workspace means: run unsplit.
  const size_t ws = a.workspace && aligned(a.workspace, 16) ? a.workspace_bytes : 0;
  const Plan pl = make_plan(a, device_info(), ws);
  if (pl.small) {
    if (a.D == 64) a.causal ? run_prefill<TSmall<64>>(a, pl, s) : run_prefill<TSmall<64, true>>(a, pl, s);
    else a.causal ? run_prefill<TSmall<128>>(a, pl, s) : run_prefill<TSmall<128, true>>(a, pl, s);
  } else {
    if (a.D == 64) a.causal ? run_prefill<TBig<64>>(a, pl, s) : run_prefill<TBig<64, true>>(a, pl, s);
    else a.causal ? run_prefill<TBig<128>>(a, pl, s) : run_prefill<TBig<128, true>>(a, pl, s);
  }
}

}  // namespace kl
