// 09 decode_split_kv — (sm_90a) the decode step on the Hopper machinery: TMA + mbarrier ring, GQA
// heads packed, split KV merged in the kernel.
//
// Parent: 03 flash_split_kv (its decode path; the math is shared through decode_split.cuh).
// Change: K and V of each 64-key tile arrive by TMA (64-column SWIZZLE_128B panels) into a 6-deep
//   ring (192 KB, one CTA per SM at D = 128) fed by one producer thread; consumers wait on `full`
//   and release on `empty` mbarriers (one arrival per warp): no block-wide barrier per tile, no
//   issue slots spent on copies. The G query heads of a KV head (Sq <= 16) are the 16 rows of one
//   mma.sync m16 tile (a 64-row wgmma tile would have 1-8 live rows). Pieces merge as in rung 03.
// Why: a decode step is a pure K/V stream plus a fixed cost; a small piece has all its bytes
//   requested by the CTA's first instructions.
// Limits: the same fixed cost as rung 03 on small caches, and a lower stream rate than 03's
//   cp.async ring on large ones (not diagnosed: each 256-byte row is split over two TMA boxes, and
//   one producer re-arms a slot only after all 4 consumer warps released it). Not the pick.
#include <algorithm>
#include <climits>

#include "attention/decode_split.cuh"
#include "attention/hopper_rungs.h"
#include "kl/device.h"
#include "common/hopper.cuh"
#include "common/tma.h"

namespace kl {
namespace {

template <int D>
struct DecodeTile {
  static constexpr int STAGES = D == 128 ? 6 : 10;         // 192 KB / 160 KB of K/V in flight per SM
  static constexpr int PANELS = D / 64;                    // 64-column (128-byte) swizzle panels
  static constexpr int KV_BYTES = dec::kBN * D * 2;        // one K (or V) tile
  static constexpr int PANEL_BYTES = dec::kBN * 128;       // one 64-row x 64-column panel
  static constexpr int STAGE_BYTES = 2 * KV_BYTES;         // K then V
  static constexpr int Q_OFF = STAGES * STAGE_BYTES;       // Qs [16][D] bf16
  static constexpr int BAR_OFF = Q_OFF + dec::kRows * D * 2;
  static constexpr int SMEM = BAR_OFF + 2 * STAGES * 8 + 1024;  // + 1024: alignment slack
  static constexpr int THREADS = dec::kThreads + 32;       // 4 consumer warps + 1 producer warp
  static_assert(PANELS * 64 == D && KV_BYTES == PANELS * PANEL_BYTES, "a K/V tile is D/64 panels");
  static_assert(KV_BYTES % 1024 == 0 && PANEL_BYTES % 1024 == 0, "TMA swizzle tiles 1024-byte aligned");
  static_assert(dec::MergeSmem<D>::BYTES <= Q_OFF, "the merge buffers fit in the drained stages");
  static_assert(BAR_OFF % 8 == 0, "mbarriers 8-byte aligned");
};

struct DecodeParams {
  CUtensorMap tmK, tmV;  // {D, Skv, B*Hkv}, box {64, 64, 1}, SWIZZLE_128B
  dec::Params p;
};

template <int D>
__global__ void __launch_bounds__(DecodeTile<D>::THREADS, 1)
    attention_decode_split_kv_kernel(const __grid_constant__ DecodeParams P) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = DecodeTile<D>;
  const dec::Params& p = P.p;
  extern __shared__ uint8_t smem_raw[];
  // SWIZZLE_128B destinations need 1024-byte alignment (the swizzle pattern is address based).
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __nv_bfloat16* Qs = reinterpret_cast<__nv_bfloat16*>(smem + C::Q_OFF);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + C::BAR_OFF);  // TMA bytes of stage s landed
  uint64_t* empty = full + C::STAGES;                               // 4 consumer warps done with s
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const dec::Work w = dec::work_of(p, blockIdx.x);
  const int n_tiles = (p.Skv + dec::kBN - 1) / dec::kBN;
  const int n_begin = static_cast<int>(static_cast<long long>(n_tiles) * w.split / p.splits);
  const int n = static_cast<int>(static_cast<long long>(n_tiles) * (w.split + 1) / p.splits) - n_begin;

  if (tid == 0) {
    mbar_ring_init(full, empty, C::STAGES, dec::kWarps);  // one arrival per consumer warp
  }
  __syncthreads();
  // Programmatic dependent launch: Q, K, V may be written by the previous kernel in the stream.
  pdl_wait();
  pdl_trigger();

  if (warp == dec::kWarps) {
    // ---- producer: one thread streams the piece's K/V tiles through the ring
    if (lane == 0) {
      tma_prefetch_desc(&P.tmK);
      tma_prefetch_desc(&P.tmV);
      for (int i = 0; i < n; ++i) {
        const int s = i % C::STAGES;
        mbar_wait(&empty[s], ((i / C::STAGES) & 1) ^ 1);  // first trip: returns at once (fresh barrier)
        uint8_t* dst = smem + s * C::STAGE_BYTES;
        const int key0 = (n_begin + i) * dec::kBN;  // rows past Skv are zero-filled (and masked)
        mbar_arrive_expect_tx(&full[s], C::STAGE_BYTES);
#pragma unroll
        for (int pn = 0; pn < C::PANELS; ++pn)
          tma_load_3d(dst + pn * C::PANEL_BYTES, &P.tmK, &full[s], pn * 64, key0, w.bk);
#pragma unroll
        for (int pn = 0; pn < C::PANELS; ++pn)
          tma_load_3d(dst + C::KV_BYTES + pn * C::PANEL_BYTES, &P.tmV, &full[s], pn * 64, key0, w.bk);
      }
    }
    return;  // the consumers synchronize among themselves (named barrier 1) from here on
  }

  // ---- consumers: 4 warps x 16 keys of every tile
  dec::load_q_async<D>(p, w, Qs, tid);
  cp_async_wait<0>();
  dec::consumer_sync();
  uint32_t qf[D / 16][4];
  dec::q_frags<D>(Qs, qf, lane);
  const int g = lane >> 2;
  const int pr0 = w.mt * dec::kRows + g, pr1 = pr0 + 8;
  const int i0 = pr0 % p.Sq, i1 = pr1 % p.Sq;

  dec::WarpState<D> st;
  st.init();
  for (int i = 0; i < n; ++i) {
    const int s = i % C::STAGES;
    mbar_wait(&full[s], (i / C::STAGES) & 1);
    const __nv_bfloat16* Ks = reinterpret_cast<const __nv_bfloat16*>(smem + s * C::STAGE_BYTES);
    dec::tile_step<D, true>(p, st, qf, Ks, Ks + C::KV_BYTES / 2, n_begin + i, i0, i1, warp, lane);
    __syncwarp();  // every lane's ldmatrix of this stage has completed
    if (lane == 0) mbar_arrive(&empty[s]);
  }
  dec::consumer_sync();  // all tiles consumed (so all TMA writes landed): the stages are free
  dec::finish<D>(p, w, st, smem, tid);
#endif
}

dec::Plan plan09(const AttentionArgs& a, const DeviceInfo& d, size_t ws_avail) {
  return dec::make_plan(a, std::max(1, d.sms), ws_avail);  // one CTA per SM (shared memory)
}

template <int D>
void run09(const AttentionArgs& a, cudaStream_t s) {
  using C = DecodeTile<D>;
  const DeviceInfo& d = device_info();
  // A missing, short or misaligned workspace means: run unsplit.
  const size_t ws = a.workspace && aligned(a.workspace, 16) ? a.workspace_bytes : 0;
  const dec::Plan pl = plan09(a, d, ws);
  DecodeParams P{};
  P.p = dec::make_params(a, pl);
  const uint64_t dims[3] = {uint64_t(D), uint64_t(a.Skv), uint64_t(a.B) * a.Hkv};
  const uint64_t strides[2] = {uint64_t(D) * 2, uint64_t(a.Skv) * D * 2};
  const uint32_t box[3] = {64, uint32_t(dec::kBN), 1};
  P.tmK = make_tensor_map(a.K, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
  P.tmV = make_tensor_map(a.V, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
  attention_smem_optin(reinterpret_cast<const void*>(attention_decode_split_kv_kernel<D>), C::SMEM);
  dec::launch(attention_decode_split_kv_kernel<D>, static_cast<unsigned>(pl.tiles * pl.splits), C::THREADS,
              C::SMEM, s, P);
}

}  // namespace

std::string attention_decode_split_kv_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_args_supports(a, d);
  if (!why.empty()) return why;
  why = require_sm90a(d);
  if (!why.empty()) return why;
  const char* no_tma = nullptr;
  if (!tma_available(&no_tma)) return std::string("needs TMA: ") + (no_tma ? no_tma : "unavailable");
  if (!attention_is_decode(a)) return "decode rung: needs Sq <= 16 (prefill goes to rungs 04-08)";
  const int smem = a.D == 64 ? DecodeTile<64>::SMEM : DecodeTile<128>::SMEM;
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  const dec::Plan pl = plan09(a, d, 0);
  if (pl.tiles > INT_MAX / dec::kMaxSplits) return "too many tiles for a 1-D grid";
  return "";
}

size_t attention_decode_split_kv_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d) {
  if (!attention_is_decode(a)) return 0;
  return plan09(a, d, SIZE_MAX).ws_bytes;
}

void attention_decode_split_kv_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) run09<64>(a, s);
  else run09<128>(a, s);
}

}  // namespace kl
