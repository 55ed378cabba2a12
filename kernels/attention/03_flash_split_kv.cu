// 03 flash_split_kv — a schedule on top of rung 02's kernel: split tails, small-query tiles and a
// one-kernel split-KV decode step.
//
// Parent: 02 flash_mma_sync.
// Change: how the work is cut, not the inner loop. Prefill: when the last wave is at most half a
//   wave (non-causal, or the whole problem is that tail), each tail tile's KV range is cut into
//   pieces that run on the idle SMs and are merged in split order by a combine kernel; Sq <= 64
//   uses a 64-row tile. Decode (Sq <= 16): the G query heads of a KV head and their queries are
//   packed into one 16-row tile, the 4 warps take 16 keys each of every 64-key tile, and the KV
//   range is split to fill the card; each piece stores its fp32 partial and log-sum-exp and raises
//   an epoch flag, and the tile's last piece merges in split order (decode_split.cuh). A 4-stage
//   cp.async ring fills entirely in the prologue; on sm_90 the step is a PDL launch.
// Why: a tail wave leaves SMs idle, and decode must stream each KV head from DRAM once per packed
//   tile in one kernel. Without a large enough workspace the rung still runs, unsplit.
// Limits: decode is a DRAM stream plus a fixed cost per step (launch, first round trip, merge)
//   that small caches cannot amortize; causal prefill is not split.
#include <algorithm>
#include <climits>

#include "attention/attention_internal.h"
#include "attention/combine.cuh"
#include "attention/decode_split.cuh"
#include "attention/flash_mma.cuh"

namespace kl {
namespace {

// ------------------------------------------------------------------ decode kernel
// The packed-GQA split-KV decode step (decode_split.cuh): 4 warps x 16 keys of every 64-key tile,
// K/V through a STAGES-deep cp.async ring, pieces merged in the kernel by the last piece of a tile.
template <int D, int STAGES>
struct DecCfg {
  static_assert(STAGES >= 2, "the ring refills one stage per tile");
  static constexpr int CH = D / 8;
  static constexpr int KV_ELEMS = dec::kBN * D;
  static constexpr int SMEM = (dec::kRows * D + STAGES * 2 * KV_ELEMS) * 2;
  static_assert(dec::MergeSmem<D>::BYTES <= STAGES * 2 * KV_ELEMS * 2,
                "the merge buffers fit in the (drained) K/V stages");
  static_assert((dec::kBN * CH) % dec::kThreads == 0, "K/V copy loops divide evenly");
};

template <int D, int STAGES>
__global__ void __launch_bounds__(dec::kThreads) attention_flash_split_kv_decode_kernel(dec::Params p) {
  using C = DecCfg<D, STAGES>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);  // [16][D]
  __nv_bfloat16* KVs = Qs + dec::kRows * D;                         // stages: K [64][D], V [64][D]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2;
  const dec::Work w = dec::work_of(p, blockIdx.x);
  const long long kvh = static_cast<long long>(w.bk) * p.Skv * D;
  const __nv_bfloat16* Kg = p.K + kvh;
  const __nv_bfloat16* Vg = p.V + kvh;

  // Programmatic dependent launch (sm_90; no-ops below): Q, K and V may be written by the kernel
  // before us in the stream, so nothing is read before the wait; the trigger lets the next step's
  // launch queue its blocks behind ours (its own wait orders it after our completion).
  pdl_wait();
  pdl_trigger();
  dec::load_q_async<D>(p, w, Qs, tid);

  const int n_tiles = (p.Skv + dec::kBN - 1) / dec::kBN;
  const int n_begin = static_cast<int>(static_cast<long long>(n_tiles) * w.split / p.splits);
  const int n_end = static_cast<int>(static_cast<long long>(n_tiles) * (w.split + 1) / p.splits);
  auto load_kv = [&](int n, int st) {
    __nv_bfloat16* ks = KVs + st * 2 * C::KV_ELEMS;
    const int valid = min(dec::kBN, p.Skv - n * dec::kBN);
    flash::load_rows_async<dec::kBN, D, dec::kThreads>(ks, Kg + static_cast<long long>(n) * dec::kBN * D, valid, tid);
    flash::load_rows_async<dec::kBN, D, dec::kThreads>(ks + C::KV_ELEMS, Vg + static_cast<long long>(n) * dec::kBN * D,
                                                      valid, tid);
  };
  // Every stage is filled before the first wait: filling STAGES - 1 and requesting the STAGES-th
  // tile only after the first had landed would cost a second DRAM round trip for a piece of
  // STAGES tiles, the size the plan gives the small caches. Groups: Q, then one per stage.
#pragma unroll
  for (int st = 0; st < STAGES; ++st) {
    if (n_begin + st < n_end) load_kv(n_begin + st, st);
    cp_async_commit();
  }
  cp_async_wait<STAGES>();  // Q landed (the K/V groups may still be in flight)
  __syncthreads();

  uint32_t qf[D / 16][4];  // every warp holds the same 16 packed rows
  dec::q_frags<D>(Qs, qf, lane);
  // Query index of this thread's two rows (for the causal mask).
  const int pr0 = w.mt * dec::kRows + g, pr1 = pr0 + 8;
  const int i0 = pr0 % p.Sq, i1 = pr1 % p.Sq;

  dec::WarpState<D> st;
  st.init();
  for (int n = n_begin; n < n_end; ++n) {
    const int it = n - n_begin;
    // Tile `it` is cp.async group 1 + it: groups are Q, the STAGES prologue tiles, then one per
    // iteration it >= 1 (tile it - 1 + STAGES, or empty). Before iteration 0, 1 + STAGES groups
    // are committed and STAGES - 1 may stay pending; before iteration it >= 1, STAGES + it are
    // committed and STAGES - 2 may.
    if (it == 0) cp_async_wait<STAGES - 1>();
    else cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile it visible to every warp; every warp is done with tile it - 1
    if (it >= 1) {
      const int nn = n - 1 + STAGES;  // refill the stage of tile it - 1
      if (nn < n_end) load_kv(nn, (it - 1) % STAGES);
      cp_async_commit();
    }
    const __nv_bfloat16* Ks = KVs + (it % STAGES) * 2 * C::KV_ELEMS;
    dec::tile_step<D, false>(p, st, qf, Ks, Ks + C::KV_ELEMS, n, i0, i1, warp, lane);
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the stages: reuse them for the merge
  dec::finish<D>(p, w, st, reinterpret_cast<unsigned char*>(KVs), tid);
}

// Output row of a split prefill tail tile.
struct TailMap {
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

// ------------------------------------------------------------------ the plan
struct Plan {
  bool decode = false;
  dec::Plan d;          // decode: tiles, packed rows, splits
  bool small = false;   // prefill tile: 64 rows (4 warps x 16) instead of 128 (4 warps x 32)
  int nqt = 0;
  long long tiles = 0;  // prefill: query tiles; decode: B * Hkv * mtiles
  int full_blocks = 0;  // prefill: whole tiles
  int splits = 1;       // pieces per split tile
  size_t ws_bytes = 0;  // workspace this plan needs
};

// Prefill tiles: rung 02's 128-row tile (4 warps x 2 m-tiles), and a 64-row tile (4 warps x 1
// m-tile, Q in registers) for Sq <= 64; both 2 blocks/SM.
// HM: flash::tile_of's order, head-major for non-causal launches (their K/V stay in L2).
template <int D, bool HM = false>
using PBig = flash::CfgBig<D, HM>;
template <int D, bool HM = false>
struct Rows64Tile : flash::Rows128Tile<D, HM> {
  static constexpr int m_tiles_per_warp = 1;
  static constexpr int stages = 3;
};
template <int D, bool HM = false>
using PSmall = flash::Cfg<Rows64Tile<D, HM>>;

int prefill_smem(int D, bool small) {
  if (D == 64) return small ? PSmall<64>::SMEM : PBig<64>::SMEM;
  return small ? PSmall<128>::SMEM : PBig<128>::SMEM;
}
// Registers per thread of those kernels (ptxas -v, sm_90a), for the resident-block count.
int prefill_regs(int D, bool small) { return small ? (D == 64 ? 168 : 232) : (D == 64 ? 240 : 255); }
// Decode ring depth: 4 stages (all 4 key tiles in flight from the prologue, 1 block/SM at D = 128).
// Against 3 stages at 2 blocks/SM, 4 stages are faster on every decode shape.
constexpr int kDecodeStages = 4;
int dec_smem(int D) { return D == 64 ? DecCfg<64, kDecodeStages>::SMEM : DecCfg<128, kDecodeStages>::SMEM; }

int blocks_per_sm(const DeviceInfo& d, int smem, int threads, int regs_per_thread) {
  const long long by_smem = d.smem_per_sm / (smem + 1024);
  const long long by_regs = 65536 / (static_cast<long long>(threads) * regs_per_thread);
  return static_cast<int>(std::max(1LL, std::min({by_smem, by_regs, 2048LL / threads})));
}

// `ws_avail`: bytes of workspace the caller gives (SIZE_MAX when sizing it).
Plan make_plan(const AttentionArgs& a, const DeviceInfo& d, size_t ws_avail) {
  Plan pl;
  const int sms = std::max(1, d.sms);
  if (attention_is_decode(a)) {
    // One block per SM at D = 128 (4 stages, 135 KB); the split count comes from the cost model
    // of decode_split.cuh (>= 2 key tiles a piece, merge cost counted, workspace permitting).
    pl.decode = true;
    const long long W = static_cast<long long>(sms) *
                        blocks_per_sm(d, dec_smem(a.D), dec::kThreads, a.D == 128 ? 168 : 113);
    pl.d = dec::make_plan(a, W, ws_avail);
    pl.tiles = pl.d.tiles;
    pl.splits = pl.d.splits;
    pl.ws_bytes = pl.d.ws_bytes;
    return pl;
  }
  pl.small = a.Sq <= 64;
  const int BM = pl.small ? 64 : 128;
  pl.nqt = (a.Sq + BM - 1) / BM;
  pl.tiles = static_cast<long long>(pl.nqt) * a.B * a.Hq;
  pl.full_blocks = static_cast<int>(pl.tiles);
  const int threads = 128;
  const long long W = static_cast<long long>(sms) *
                      blocks_per_sm(d, prefill_smem(a.D, pl.small), threads, prefill_regs(a.D, pl.small));
  const long long tail = pl.tiles % W;
  const int nkv = (a.Skv + 63) / 64;
  if (tail > 0 && 2 * tail <= W && (!a.causal || tail == pl.tiles)) {
    const int s = static_cast<int>(std::min<long long>({W / tail, nkv / 2, 64}));
    // The partials go after the decode flags' area, which a workspace shared by prefill and decode
    // calls keeps for the decode pieces' flags (zeroed once, left zero by every launch).
    const size_t need = dec::kFlagBytes + static_cast<size_t>(tail) * s * BM * (a.D + 1) * 4;
    if (s >= 2 && need <= ws_avail) {
      pl.full_blocks = static_cast<int>(pl.tiles - tail);
      pl.splits = s;
      pl.ws_bytes = need;
    }
  }
  return pl;
}

template <int D, int STAGES>
void run_decode(const AttentionArgs& a, const Plan& pl, cudaStream_t st) {
  using C = DecCfg<D, STAGES>;
  attention_smem_optin(reinterpret_cast<const void*>(attention_flash_split_kv_decode_kernel<D, STAGES>),
                       C::SMEM);
  dec::Params p = dec::make_params(a, pl.d);
  dec::launch(attention_flash_split_kv_decode_kernel<D, STAGES>,
              static_cast<unsigned>(pl.d.tiles * pl.d.splits), dec::kThreads, C::SMEM, st, p);
}

template <class C>
void run_prefill(const AttentionArgs& a, const Plan& pl, cudaStream_t st) {
  constexpr int D = C::D;
  flash::Params p = flash::problem_params<C>(a);  // p.nqt == pl.nqt (same BM)
  p.full_blocks = pl.full_blocks;
  p.splits = pl.splits;
  const long long tail = pl.tiles - pl.full_blocks;
  if (tail > 0) {
    p.ws_o = reinterpret_cast<float*>(static_cast<char*>(a.workspace) + dec::kFlagBytes);
    p.ws_lse = p.ws_o + tail * pl.splits * C::BM * D;
  }
  const long long blocks = pl.full_blocks + tail * pl.splits;
  flash::flash_mma_kernel<C><<<static_cast<unsigned>(blocks), C::THREADS, C::SMEM, st>>>(p);
  KL_CHECK_LAUNCH();
  if (tail > 0) {
    TailMap map{a.O, a.B, a.Hq, a.Sq, pl.nqt, C::BM, pl.full_blocks, D, C::HEAD_MAJOR};
    flash::launch_combine<D>(p.ws_o, p.ws_lse, C::BM, pl.splits, tail * C::BM, map,
                             device_info().cc() >= 90, st);
  }
}

}  // namespace

std::string attention_flash_split_kv_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_args_supports(a, d);
  if (!why.empty()) return why;
  const Plan pl = make_plan(a, d, 0);
  const int smem = pl.decode ? dec_smem(a.D) : prefill_smem(a.D, pl.small);
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  if (pl.tiles > INT_MAX / 64) return "too many tiles for a 1-D grid";
  return "";
}

size_t attention_flash_split_kv_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d) {
  return make_plan(a, d, SIZE_MAX).ws_bytes;
}

void attention_flash_split_kv_launch(const AttentionArgs& a, cudaStream_t s) {
  const DeviceInfo& d = device_info();
  // A missing, short or misaligned (float4 stores) workspace means: run unsplit.
  const size_t ws = a.workspace && aligned(a.workspace, 16) ? a.workspace_bytes : 0;
  const Plan pl = make_plan(a, d, ws);
  if (pl.decode) {
    if (a.D == 64) run_decode<64, kDecodeStages>(a, pl, s);
    else run_decode<128, kDecodeStages>(a, pl, s);
  } else if (pl.small) {
    if (a.D == 64) a.causal ? run_prefill<PSmall<64>>(a, pl, s) : run_prefill<PSmall<64, true>>(a, pl, s);
    else a.causal ? run_prefill<PSmall<128>>(a, pl, s) : run_prefill<PSmall<128, true>>(a, pl, s);
  } else {
    if (a.D == 64) a.causal ? run_prefill<PBig<64>>(a, pl, s) : run_prefill<PBig<64, true>>(a, pl, s);
    else a.causal ? run_prefill<PBig<128>>(a, pl, s) : run_prefill<PBig<128, true>>(a, pl, s);
  }
}

}  // namespace kl
