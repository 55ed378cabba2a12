// kernels/attention/02_flash_mma_sync.cu — rung 02: tensor-core flash attention with mma.sync.
//
// Change from rung 01: the two products move to the tensor cores (mma.sync.m16n8k16, bf16 in,
// fp32 accumulate) and everything else is rearranged around their fragment layouts
// (flash_mma.cuh has the kernel and the layout reasoning):
//   * a 128-row Q tile, 8 warps x 16 rows; each warp's Q fragments are loaded once with ldmatrix and
//     stay in registers for the whole KV loop;
//   * S = Q K^T with K read by plain ldmatrix (K rows are the B operand's columns), O += P V with V
//     read by ldmatrix.trans; P is packed to bf16 straight from the S accumulators into the A
//     layout of the next mma, so it never touches shared memory;
//   * the row max / sum live on the accumulator fragments (register loop + 2 quad shuffles), exp2
//     with scale*log2(e) folded into one ffma per score;
//   * K and V stream through a 3-stage cp.async pipeline into XOR-swizzled shared memory (no
//     padding, conflict-free ldmatrix), one __syncthreads per 64-key tile;
//   * causal: key tiles past the tile's diagonal are never loaded, only the diagonal tiles pay
//     for the mask; the heaviest query tiles are launched first.
// What limits it: per warp, every K and V element read by ldmatrix feeds 16 query rows, so shared
// memory bandwidth and the softmax between the two products (no overlap: both warps of a
// scheduler wait on the same barrier) keep the tensor pipe below its mma.sync peak.
// Measured (H200): pending
#include "attention/attention_internal.h"
#include "attention/flash_mma.cuh"

namespace kl {
namespace {

template <int D>
using Cfg02 = flash::Cfg<D, 8, 64, 3>;

template <class C>
void run_flash(const AttentionArgs& a, cudaStream_t s) {
  KL_CHECK(cudaFuncSetAttribute(flash::flash_mma_kernel<C>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
  flash::Params p{};
  p.Q = a.Q; p.K = a.K; p.V = a.V; p.O = a.O;
  p.B = a.B; p.Hq = a.Hq; p.Hkv = a.Hkv; p.Sq = a.Sq; p.Skv = a.Skv; p.group = a.Hq / a.Hkv;
  p.causal = a.causal ? 1 : 0;
  p.sl2 = attention_scale_log2(a);
  p.nqt = (a.Sq + C::BM - 1) / C::BM;
  const long long tiles = static_cast<long long>(p.nqt) * a.B * a.Hq;
  p.full_blocks = static_cast<int>(tiles);  // every tile whole: no split, no workspace
  p.splits = 1;
  flash::flash_mma_kernel<C><<<static_cast<unsigned>(tiles), C::THREADS, C::SMEM, s>>>(p);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string attn02_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_common_supports(a, d);
  if (!why.empty()) return why;
  const int smem = a.D == 64 ? Cfg02<64>::SMEM : Cfg02<128>::SMEM;
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  const long long tiles = static_cast<long long>((a.Sq + 127) / 128) * a.B * a.Hq;
  if (tiles > 2147483647LL) return "too many query tiles for a 1-D grid";
  return "";
}

void attn02_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) run_flash<Cfg02<64>>(a, s);
  else run_flash<Cfg02<128>>(a, s);
}

}  // namespace kl
