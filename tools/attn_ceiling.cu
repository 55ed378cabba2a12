// tools/attn_ceiling.cu — what attention rung 02's kernel (kernels/attention/flash_mma.cuh) can reach
// at best on this card: the same kernel with its softmax taken out, then with its K/V ring taken out
// too. The ceilings bound what any kernel of this structure can reach on prefill (mma.sync for both
// products, P in registers, 4 warps x 32 rows, 64-key tiles).
//
// Rows (JSON lines through the bench harness, family "attention_probe", op "prefill"):
//   0 02_full          flash_mma_kernel exactly as rung 02 launches it (flash::CfgBig<D, HM>;
//                      tiles head-major when non-causal, heaviest first when causal: flash::tile_of)
//   1 nosoftmax        the same with the NoSoftmax piece below for flash::OnlineSoftmax: P = bf16(S),
//                      no row max, exp2, sum, mask or O rescale; the products, the cp.async ring
//                      and its barriers stay
//   3 products         also the ResidentStage piece for flash::CpAsyncRing: every KV step reads the
//                      resident stage 0 with ldmatrix: the two products and their shared-memory
//                      operand stream alone
//   4 full_qtile_major / full_head_major
//                      rung 02's kernel in the other tile order; real attention: its O must equal
//                      02_full's bit for bit (checked here; a mismatch fails the row)
// The probes 1 and 3 do not compute attention (not validated); 02_full is rung 02 and is validated
// by the tests and the bench, not here. FLOPs are counted as bench_attention counts them (4 B H D x
// visible pairs), so the TFLOP/s compare with its rows and with scripts/torch_baseline.py's.
//
//   build/attn_ceiling [--out FILE] [--iters N] [--shape B=1,H=32,S=4096,D=128,causal=0 ...]
//   (default shapes: B=1, H=32, D=128, S in {4096, 8192}, causal 0 and 1)
#include <cuda_bf16.h>

#include <cstdio>
#include <string>
#include <vector>

#include "attention/attention_internal.h"
#include "attention/flash_mma.cuh"
#include "bench/harness.h"

namespace {

using namespace kl;
using namespace kl::bench;

// The pieces that leave a part of rung 02's kernel out (flash_mma.cuh): no softmax (P = bf16(S), no
// row max, exp2, sum, mask, O rescale or 1 / l), and no K/V ring (every KV step reads the resident
// stage 0: no copies, no barriers in the loop).
struct NoSoftmax {
  static constexpr bool present = false;
};
struct ResidentStage {
  static constexpr bool present = false;
};

// Rung 02's kernel with the given pieces, in the rung's tile order (head-major when non-causal,
// flash::tile_of) or, with OTHER, the other one.
template <class Softmax, class Ring, bool OTHER = false>
void launch_d(const AttentionArgs& a, cudaStream_t s) {
  using flash::CfgBig;
  using flash::launch_whole_tiles;
  const bool hm = OTHER ? a.causal : !a.causal;
  if (a.D == 64)
    hm ? launch_whole_tiles<CfgBig<64, true>, Softmax, Ring>(a, s)
       : launch_whole_tiles<CfgBig<64, false>, Softmax, Ring>(a, s);
  else
    hm ? launch_whole_tiles<CfgBig<128, true>, Softmax, Ring>(a, s)
       : launch_whole_tiles<CfgBig<128, false>, Softmax, Ring>(a, s);
}
using flash::CpAsyncRing;
using flash::OnlineSoftmax;

int run(int argc, char** argv) {
  Options o = parse_cli(argc, argv, "attn_ceiling", "B=..,H=..,S=..,D=..,causal=0|1 (Sq = Skv = S, Hq = Hkv = H)");
  const std::vector<std::string> dims = {"B", "H", "S", "D", "causal"};
  std::vector<std::string> shapes = o.shapes;
  if (shapes.empty())
    for (const char* s : {"4096", "8192"})
      for (const char* c : {"0", "1"})
        shapes.push_back(std::string("B=1,H=32,S=") + s + ",D=128,causal=" + c);
  // Every shape checked before the device is touched.
  for (const std::string& str : shapes) {
    const Shape sh = parse_shape(str, dims);
    const long long B = sh["B"], H = sh["H"], S = sh["S"], D = sh["D"], causal = sh["causal"];
    KL_REQUIRE(B >= 1 && H >= 1 && S >= 1 && (D == 64 || D == 128) && (causal == 0 || causal == 1),
               "attn_ceiling: shape " << str << ": B, H, S >= 1, D 64 or 128, causal 0 or 1");
    KL_REQUIRE(B * H <= 65535 && S <= (1 << 24) && B * H * S * D <= (1LL << 31),
               "attn_ceiling: shape " << str << ": B * H <= 65535, S <= 2^24, B * H * S * D <= 2^31");
  }
  const DeviceInfo& dev = device_info();
  KL_REQUIRE(dev.cc_major * 10 + dev.cc_minor >= 80, "attn_ceiling: needs compute capability 8.0+");
  print_banner(dev);
  Reporter rep(o, dev);
  Stream stream;
  for (const std::string& str : shapes) {
    const Shape sh = parse_shape(str, dims);
    const long long B = sh["B"], H = sh["H"], S = sh["S"], D = sh["D"], causal = sh["causal"];
    const size_t n = static_cast<size_t>(B * H * S * D);
    DeviceBuffer q(2 * n), k(2 * n), v(2 * n), out(2 * n);
    const uint64_t seed = run_seed(o);
    fill_uniform(q.ptr, n, DType::bf16, seed, -1.f, 1.f, stream);
    fill_uniform(k.ptr, n, DType::bf16, seed + 1, -1.f, 1.f, stream);
    fill_uniform(v.ptr, n, DType::bf16, seed + 2, -1.f, 1.f, stream);
    AttentionArgs a{};
    a.Q = q.as<__nv_bfloat16>(); a.K = k.as<__nv_bfloat16>(); a.V = v.as<__nv_bfloat16>();
    a.O = out.as<__nv_bfloat16>();
    a.B = static_cast<int>(B); a.Hq = a.Hkv = static_cast<int>(H);
    a.Sq = a.Skv = static_cast<int>(S); a.D = static_cast<int>(D); a.causal = causal != 0;
    a.scale = 0.f;  // 1/sqrt(D)
    const std::string why = attention_flash_mma_sync_supports(a, dev);
    if (!why.empty()) {
      rep.skip("attn_ceiling " + str, why);
      continue;
    }
    const double pairs = causal ? S * (S + 1) / 2.0 : double(S) * S;
    const double flops = 4.0 * B * H * D * pairs;
    auto row = [&](int probe, const char* name, const char* what, auto fn) {
      Row r;
      r.family = "attention_probe";
      r.op = "prefill";
      r.impl = "kl";
      r.variant = probe;
      r.variant_name = name;
      r.change = what;
      r.dtype = "bf16";
      r.shape = sh;
      r.flops = flops;
      r.bytes = 2.0 * 4 * n;
      r.seed = seed;
      r.validated = false;
      r.t = time_launches([&](int) { fn(a, stream.s); }, o, stream);
      rep.emit(r);
    };
    row(0, "02_full", "rung 02's kernel as it launches", launch_d<OnlineSoftmax, CpAsyncRing>);
    std::vector<uint16_t> o_ref(n), o_other(n);
    KL_CHECK(cudaStreamSynchronize(stream));
    KL_CHECK(cudaMemcpy(o_ref.data(), out.ptr, 2 * n, cudaMemcpyDeviceToHost));
    row(1, "nosoftmax", "P = bf16(S): no max, exp2, sum, mask or rescale; ring and barriers kept", launch_d<NoSoftmax, CpAsyncRing>);
    row(3, "products", "no softmax, no ring: both products on the resident stage 0", launch_d<NoSoftmax, ResidentStage>);
    // The other tile order must reorder whole tiles only: O bit for bit the same.
    poison(out.ptr, 2 * n, stream);
    launch_d<OnlineSoftmax, CpAsyncRing, true>(a, stream);
    KL_CHECK(cudaStreamSynchronize(stream));
    KL_CHECK(cudaMemcpy(o_other.data(), out.ptr, 2 * n, cudaMemcpyDeviceToHost));
    const char* other = causal ? "full_head_major" : "full_qtile_major";
    if (o_other != o_ref) {
      Row r;
      r.family = "attention_probe"; r.op = "prefill"; r.impl = "kl"; r.variant = 4; r.variant_name = other;
      r.dtype = "bf16"; r.shape = sh;
      rep.fail(r, "the other tile order changed O (it must only reorder whole tiles)");
    } else {
      row(4, other, "rung 02's kernel in the other tile order (O equal to 02_full's, checked)", launch_d<OnlineSoftmax, CpAsyncRing, true>);
    }
  }
  return rep.finish();
}

}  // namespace

int main(int argc, char** argv) { return guarded_main([&] { return run(argc, argv); }); }
