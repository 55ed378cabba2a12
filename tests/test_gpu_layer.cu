// tests/test_gpu_layer.cu — the decoder layer: the GPU fp32 reference against a CPU double layer on
// small shapes (prefill and decode); every rung against the GPU reference at small and medium
// dimensions, prefill (fresh, with kv_len < L so the cache rows are copied out, and at the end of a
// filled cache) and decode (whole cache and kv_len < L), output y and every cache row compared;
// the workspace size against the tensors and the families' own workspaces; refusals that launch
// nothing; a decode step after a prefill reads what the prefill wrote (and
// matches the last row of a prefill of all the tokens); a decode step captured in a CUDA graph
// replays to the same bits; rung 02's fused gate/up kernel against the unfused chain and a CPU
// double computation, and its refusals; rung 03's down/residual kernel bit for bit against the same
// GEMM kernel followed by the add, against a CPU double computation, and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kl/attention.h"
#include "kl/gemm_bf16.h"
#include "kl/layer.h"
#include "kl/swiglu.h"
#include "kernels/layer/layer_internal.h"
#include "tests/gpu_test.h"
#include "tests/layer_test_util.h"

namespace {

using namespace kl;
using layer_test::Problem;
using layer_test::Shape;
using layer_test::download;
using layer_test::widen;

// The tolerance of the GPU reference against the CPU double layer: both round at the same points, so
// only an intermediate whose fp32 and double values straddle a bf16 rounding differs, by one ulp
// (at most |v| / 128); the relative-L2 gate is five times tighter than the layer's.
const bench::Tolerance kRefTol{1.0 / 64, 1.0 / 64, 2e-3};

TEST(LayerGpu, ReferenceMatchesCpuDouble) {
  KL_REQUIRE_GPU();
  const LayerDims m = layer_test::small_dims();
  uint64_t seed = 11;
  for (const Shape& sh : {layer_test::prefill(m, 1, 64, 64), layer_test::prefill(m, 2, 32, 40),
                          layer_test::decode(m, 4, 48), layer_test::decode(m, 2, 48, 40)}) {
    SCOPED_TRACE(sh.str());
    Problem p(sh, ++seed);
    const std::vector<float> x = download(p.x, p.n_x);
    std::vector<float> kc = download(p.kc, p.n_cache), vc = download(p.vc, p.n_cache);
    const layer_test::HostWeights w = layer_test::download_weights(*p.W);
    const std::vector<double> want = layer_test::cpu_layer(p.args(), w, x, p.pos, kc, vc);
    p.run_reference();
    EXPECT_TRUE(kl::test::check_close(download(p.y_ref, p.n_x), want, kRefTol, "reference y vs CPU double"));
    EXPECT_TRUE(kl::test::check_close(download(p.kc_ref, p.n_cache), widen(kc), kRefTol, "reference k cache"));
    EXPECT_TRUE(kl::test::check_close(download(p.vc_ref, p.n_cache), widen(vc), kRefTol, "reference v cache"));
  }
}

// The workspace holds every intermediate tensor and, on top, the largest of the families' own
// workspaces (the GEMMs' size needs the device: occupancy). Llama-3-8B shapes, fake pointers.
TEST(LayerGpu, WorkspaceCoversTheFamilies) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  const LayerDims m;
  for (const Shape& sh : {layer_test::prefill(m, 1, 4096, 4096), layer_test::prefill(m, 2, 300, 512),
                          layer_test::decode(m, 1, 4096), layer_test::decode(m, 16, 4096, 1000)}) {
    SCOPED_TRACE(sh.str());
    LayerArgs a;
    a.mode = sh.mode;
    a.B = sh.B;
    a.S = sh.S;
    a.L = sh.L;
    a.kv_len = sh.kv_len;
    const double T = double(a.B) * a.S, width = double(m.Hq + 2 * m.Hkv) * m.D, hqd = double(m.Hq) * m.D;
    const int kv = layer_kv_len(a);
    double tensors = 2 * T * (4.0 * m.hidden + width + 2 * hqd + (a.S > 1 ? hqd : 0) + 3.0 * m.mlp);
    if (kv < a.L) tensors += 2 * 2.0 * a.B * m.Hkv * kv * m.D;  // the cache rows copied out
    const int M = a.B * a.S;
    size_t fam = std::max({gemm_bf16_workspace_bytes(M, int(width), m.hidden, d),
                           gemm_bf16_workspace_bytes(M, m.hidden, int(hqd), d),
                           gemm_bf16_workspace_bytes(M, m.mlp, m.hidden, d),
                           gemm_bf16_workspace_bytes(M, m.hidden, m.mlp, d)});
    AttentionArgs at;
    at.B = a.B;
    at.Hq = m.Hq;
    at.Hkv = m.Hkv;
    at.Sq = a.S;
    at.Skv = kv;
    at.D = m.D;
    at.causal = true;
    fam = std::max(fam, attention_workspace_bytes(at, d));
    const size_t ws = layer_workspace_bytes(a, d);
    EXPECT_GE(double(ws), tensors + double(fam));
    EXPECT_EQ(ws % 256, 0u);
  }
}

std::vector<Shape> rung_shapes() {
  const LayerDims s = layer_test::small_dims(), md = layer_test::medium_dims();
  return {layer_test::prefill(s, 1, 64, 64),        layer_test::prefill(s, 2, 32, 40),
          layer_test::prefill(s, 3, 7, 20, 20),     layer_test::decode(s, 4, 48),
          layer_test::decode(s, 2, 48, 40),         layer_test::prefill(md, 2, 200, 256),
          layer_test::prefill(md, 1, 100, 300, 300), layer_test::decode(md, 3, 300),
          layer_test::decode(md, 16, 512)};
}

// Runs rung `r` (or the entry point) on p and compares y and both caches with the reference.
::testing::AssertionResult matches_reference(Problem& p, const std::string& what) {
  p.run_reference();
  const bench::Tolerance tol = layer_test::layer_tolerance();
  const std::vector<double> y_ref = widen(download(p.y_ref, p.n_x));
  auto r = kl::test::check_close(download(p.y, p.n_x), y_ref, tol, what + ": y");
  if (!r) return r;
  r = kl::test::check_close(download(p.kc, p.n_cache), widen(download(p.kc_ref, p.n_cache)), tol, what + ": k cache");
  if (!r) return r;
  return kl::test::check_close(download(p.vc, p.n_cache), widen(download(p.vc_ref, p.n_cache)), tol,
                               what + ": v cache");
}

TEST(LayerGpu, EveryRungMatchesReference) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  kl::test::RungCoverage cov(layer_rungs());
  uint64_t seed = 100;
  for (const auto& r : layer_rungs())
    for (const Shape& sh : rung_shapes()) {
      Problem p(sh, ++seed);
      const std::string what = "rung " + std::to_string(r.number) + " " + r.name + " " + sh.str();
      SCOPED_TRACE(what);
      const std::string why = r.supports(p.args(), d);
      if (!why.empty()) {
        cov.refused(r.number, sh.str(), why);
        ADD_FAILURE() << "refused: " << why;
        continue;
      }
      bench::poison(p.y.ptr, p.y.bytes);
      launch_checked(r, p.args(), nullptr);
      EXPECT_TRUE(matches_reference(p, what));
      cov.ran(r.number);
    }
  EXPECT_TRUE(cov.every_rung_ran());
}

TEST(LayerGpu, EntryPointMatchesReferenceInPlace) {
  KL_REQUIRE_GPU();
  // y == x: the residual stream updated in place.
  Problem p(layer_test::prefill(layer_test::small_dims(), 2, 32, 40), 7);
  KL_CHECK(cudaMemcpy(p.y.ptr, p.x.ptr, p.x.bytes, cudaMemcpyDeviceToDevice));
  LayerArgs ref = p.ref_args();
  ref.x = p.y.as<__nv_bfloat16>();  // the same input values
  layer_reference(ref, nullptr);
  LayerArgs a = p.args();
  a.x = a.y;
  layer(a, nullptr);
  EXPECT_TRUE(kl::test::check_close(download(p.y, p.n_x), widen(download(p.y_ref, p.n_x)),
                                    layer_test::layer_tolerance(), "in place y"));
}

// Every refusal throws BadArgument before anything is launched: y and the caches keep their bits.
TEST(LayerGpu, RefusalsLaunchNothing) {
  KL_REQUIRE_GPU();
  Problem p(layer_test::prefill(layer_test::small_dims(), 2, 32, 40), 3);
  bench::poison(p.y.ptr, p.y.bytes);
  KL_CHECK(cudaDeviceSynchronize());
  const std::vector<float> k0 = download(p.kc, p.n_cache), v0 = download(p.vc, p.n_cache);
  std::vector<uint16_t> y0(p.n_x);
  KL_CHECK(cudaMemcpy(y0.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
  const LayerArgs good = p.args();
  struct Case {
    const char* what;
    LayerArgs a;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto edit) {
    LayerArgs a = good;
    edit(a);
    cases.push_back({what, a});
  };
  add("null x", [](LayerArgs& a) { a.x = nullptr; });
  add("null wdown", [](LayerArgs& a) { a.w.wdown = nullptr; });
  add("null v_cache", [](LayerArgs& a) { a.v_cache = nullptr; });
  add("k_cache misaligned (the cache rows are copied in 16-byte chunks)", [](LayerArgs& a) { a.k_cache += 1; });
  add("D = 96", [](LayerArgs& a) { a.dims.D = 96; });
  add("Hkv not dividing Hq", [](LayerArgs& a) { a.dims.Hkv = 3; });
  add("hidden not a multiple of 8", [](LayerArgs& a) { a.dims.hidden = 252; });
  add("kv_len > L", [](LayerArgs& a) { a.kv_len = a.L + 1; });
  add("kv_len < S", [](LayerArgs& a) { a.kv_len = a.S - 1; });
  add("decode with S = 2", [](LayerArgs& a) { a.mode = LayerMode::decode; a.S = 2; });
  add("decode without positions", [](LayerArgs& a) { a.mode = LayerMode::decode; a.S = 1; a.pos = nullptr; });
  add("workspace one byte short", [](LayerArgs& a) { a.workspace_bytes -= 1; });
  add("workspace misaligned", [](LayerArgs& a) { a.workspace = static_cast<char*>(a.workspace) + 16; });
  add("y overlapping x", [](LayerArgs& a) { a.y = const_cast<__nv_bfloat16*>(a.x) + 8; });
  add("y in the workspace", [](LayerArgs& a) { a.y = static_cast<__nv_bfloat16*>(a.workspace); });
  add("wqkv misaligned (the GEMM refuses)", [](LayerArgs& a) { a.w.wqkv += 1; });
  add("eps negative", [](LayerArgs& a) { a.dims.eps = -1.f; });
  add("theta zero", [](LayerArgs& a) { a.dims.theta = 0.f; });
  add("B = 0", [](LayerArgs& a) { a.B = 0; });
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_THROW(layer(c.a, nullptr), BadArgument);
    EXPECT_FALSE(layer_rungs()[0].supports(c.a, device_info()).empty());
    EXPECT_EQ(layer_pick(c.a, device_info()), nullptr);
  }
  KL_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> y1(p.n_x);
  KL_CHECK(cudaMemcpy(y1.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(y0, y1) << "a refused call wrote y";
  EXPECT_EQ(k0, download(p.kc, p.n_cache)) << "a refused call wrote the k cache";
  EXPECT_EQ(v0, download(p.vc, p.n_cache)) << "a refused call wrote the v cache";
}

// Prefill S - 1 tokens per sequence into a cache of S rows (kv_len = S - 1 < L: the attention reads
// copies of the rows), then decode token S - 1 at position S - 1 against the whole cache. The decode
// output matches the reference run through the same two steps, and the last row of a prefill of all
// S tokens; with the prefill's rows overwritten it does not.
TEST(LayerGpu, DecodeAfterPrefillReadsThePrefillRows) {
  KL_REQUIRE_GPU();
  const LayerDims m = layer_test::small_dims();
  const int B = 2, S = 32, L = 32;
  Problem full(layer_test::prefill(m, B, S, L), 21);            // all S tokens at once
  Problem pre(layer_test::prefill(m, B, S - 1, L), 21);         // the same weights (same seed)
  Problem dec(layer_test::decode(m, B, L), 21, std::vector<int>(B, S - 1));
  const size_t row = 2 * static_cast<size_t>(m.hidden);
  // x of the prefill: tokens 0..S-2 of each sequence; x of the decode: token S-1.
  KL_CHECK(cudaMemcpy2D(pre.x.ptr, (S - 1) * row, full.x.ptr, S * row, (S - 1) * row, B, cudaMemcpyDeviceToDevice));
  KL_CHECK(cudaMemcpy2D(dec.x.ptr, row, static_cast<char*>(full.x.ptr) + (S - 1) * row, S * row, row, B,
                        cudaMemcpyDeviceToDevice));
  // One set of caches for both steps (pre's), and the reference's own through the same two steps.
  LayerArgs a_pre = pre.args(), a_dec = dec.args();
  a_dec.k_cache = a_pre.k_cache;
  a_dec.v_cache = a_pre.v_cache;
  layer(a_pre, nullptr);
  layer(a_dec, nullptr);
  LayerArgs r_pre = pre.ref_args(), r_dec = dec.ref_args();
  r_dec.k_cache = r_pre.k_cache;
  r_dec.v_cache = r_pre.v_cache;
  layer_reference(r_pre, nullptr);
  layer_reference(r_dec, nullptr);
  const bench::Tolerance tol = layer_test::layer_tolerance();
  const std::vector<float> y_dec = download(dec.y, dec.n_x);
  EXPECT_TRUE(kl::test::check_close(y_dec, widen(download(dec.y_ref, dec.n_x)), tol, "decode after prefill"));
  layer(full.args(), nullptr);
  const std::vector<float> y_full = download(full.y, full.n_x);
  std::vector<double> last;
  for (int b = 0; b < B; ++b)
    last.insert(last.end(), y_full.begin() + (static_cast<size_t>(b) * S + S - 1) * m.hidden,
                y_full.begin() + (static_cast<size_t>(b) * S + S) * m.hidden);
  EXPECT_TRUE(kl::test::check_close(y_dec, last, tol, "decode vs the last row of the whole prefill"));
  // Control: the same decode step on caches whose prefill rows hold other values differs.
  bench::fill_uniform(a_pre.k_cache, pre.n_cache, DType::bf16, 99, -1.f, 1.f);
  bench::fill_uniform(a_pre.v_cache, pre.n_cache, DType::bf16, 98, -1.f, 1.f);
  layer(a_dec, nullptr);
  const bench::ErrStats e = bench::compare(download(dec.y, dec.n_x).data(), last.data(), last.size(), tol);
  EXPECT_GT(e.rel_l2, 5e-2) << "the decode step did not depend on the prefill's cache rows";
}

// The graph rungs (01, and 02 and 03 with their own steps): the second call with the same arguments
// captures, the third and fourth replay the graph (counted), each to the first eager call's bits;
// other arguments between them run eagerly and are right; inside the caller's own capture the rung
// launches its steps.
TEST(LayerGpu, GraphRungReplaysRepeatedArguments) {
  KL_REQUIRE_GPU();
  ASSERT_EQ(std::string(layer_rungs().at(1).name), "graph");
  ASSERT_EQ(std::string(layer_rungs().at(2).name), "fused_gate_up");
  ASSERT_EQ(std::string(layer_rungs().at(3).name), "fused_residual");
  const LayerDims m = layer_test::small_dims();
  for (int rung : {1, 2, 3})
  for (const Shape& sh : {layer_test::decode(m, 4, 48), layer_test::prefill(m, 2, 32, 40),
                          layer_test::decode(layer_test::medium_dims(), 16, 512)}) {
    const Rung<LayerArgs>& graph = layer_rungs().at(rung);
    SCOPED_TRACE("rung " + std::to_string(rung) + " " + sh.str());
    Problem p(sh, 11);
    bench::Stream s;
    launch_checked(graph, p.args(), s);
    KL_CHECK(cudaStreamSynchronize(s));
    std::vector<uint16_t> eager(p.n_x), again(p.n_x);
    KL_CHECK(cudaMemcpy(eager.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
    long long before = 0;
    for (int call = 2; call <= 4; ++call) {
      if (call == 3) before = layer_detail::layer_graph_replays();  // the second call captured (or replayed)
      bench::poison(p.y.ptr, p.y.bytes, s);
      launch_checked(graph, p.args(), s);
      KL_CHECK(cudaStreamSynchronize(s));
      KL_CHECK(cudaMemcpy(again.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(eager, again) << "call " << call << " differs from the first";
    }
    EXPECT_EQ(layer_detail::layer_graph_replays() - before, 2) << "calls 3 and 4 were not replays";
    EXPECT_TRUE(matches_reference(p, "graph rung"));
    // Another argument set in between (y elsewhere) runs eagerly; the kept graph still replays.
    bench::DeviceBuffer y2(p.y.bytes);
    LayerArgs other = p.args();
    other.y = y2.as<__nv_bfloat16>();
    launch_checked(graph, other, s);
    KL_CHECK(cudaStreamSynchronize(s));
    std::vector<uint16_t> y_other(p.n_x);
    KL_CHECK(cudaMemcpy(y_other.data(), y2.ptr, y2.bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(eager, y_other) << "the other argument set";
    const long long mid = layer_detail::layer_graph_replays();
    bench::poison(p.y.ptr, p.y.bytes, s);
    launch_checked(graph, p.args(), s);
    KL_CHECK(cudaStreamSynchronize(s));
    EXPECT_EQ(layer_detail::layer_graph_replays() - mid, 1) << "the kept graph was not replayed";
    KL_CHECK(cudaMemcpy(again.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(eager, again) << "replay after another argument set";
    // Inside the caller's capture: the steps themselves are captured, no replay is counted.
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    const long long cap = layer_detail::layer_graph_replays();
    KL_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    launch_checked(graph, p.args(), s);
    KL_CHECK(cudaStreamEndCapture(s, &g));
    KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
    bench::poison(p.y.ptr, p.y.bytes, s);
    KL_CHECK(cudaGraphLaunch(ge, s));
    KL_CHECK(cudaStreamSynchronize(s));
    KL_CHECK(cudaMemcpy(again.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(eager, again) << "inside the caller's capture";
    EXPECT_EQ(layer_detail::layer_graph_replays(), cap);
    KL_CHECK(cudaGraphExecDestroy(ge));
    KL_CHECK(cudaGraphDestroy(g));
  }
}

// The entry point runs the top rung, 03 (the fused MLP and residual), for decode steps and prefill alike.
TEST(LayerGpu, PickTopRung) {
  KL_REQUIRE_GPU();
  const LayerDims m = layer_test::small_dims();
  Problem dec(layer_test::decode(m, 4, 48), 1), pre(layer_test::prefill(m, 2, 32, 40), 1);
  ASSERT_NE(layer_pick(dec.args(), device_info()), nullptr);
  ASSERT_NE(layer_pick(pre.args(), device_info()), nullptr);
  EXPECT_EQ(layer_pick(dec.args(), device_info())->number, 3);
  EXPECT_EQ(layer_pick(pre.args(), device_info())->number, 3);
}

// A decode step captured in a CUDA graph: after a first eager call (the families' one-time set-up),
// the captured step replays twice to the eager call's bits.
TEST(LayerGpu, DecodeStepReplaysInAGraph) {
  KL_REQUIRE_GPU();
  for (const Shape& sh : {layer_test::decode(layer_test::small_dims(), 4, 48),
                          layer_test::decode(layer_test::medium_dims(), 16, 512)}) {
    SCOPED_TRACE(sh.str());
    Problem p(sh, 5);
    bench::Stream s;
    layer(p.args(), s);
    KL_CHECK(cudaStreamSynchronize(s));
    std::vector<uint16_t> eager(p.n_x), replay(p.n_x);
    KL_CHECK(cudaMemcpy(eager.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    KL_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    layer(p.args(), s);
    KL_CHECK(cudaStreamEndCapture(s, &g));
    KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int rep = 0; rep < 2; ++rep) {
      bench::poison(p.y.ptr, p.y.bytes, s);
      KL_CHECK(cudaGraphLaunch(ge, s));
      KL_CHECK(cudaStreamSynchronize(s));
      KL_CHECK(cudaMemcpy(replay.data(), p.y.ptr, p.y.bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(eager, replay) << "replay " << rep << " differs from the eager call";
    }
    KL_CHECK(cudaGraphExecDestroy(ge));
    KL_CHECK(cudaGraphDestroy(g));
    p.run_reference();
    EXPECT_TRUE(kl::test::check_close(download(p.y, p.n_x), widen(download(p.y_ref, p.n_x)),
                                      layer_test::layer_tolerance(), "graph replay vs reference"));
  }
}

// Rung 02's fused kernel: act = silu(A Wgate^T) * (A Wup^T) against the families' chain (two
// GEMMs, SwiGLU) on the same inputs. Decode kernel: M in the activation boxes of 16, 32 and 64
// rows, odd N (a ragged last strip) and the Llama width (112-column strips, 224 W rows a stage).
// Prefill kernel (M > 64): ragged M, N and K tiles, several tiles per CTA, the Llama width. Small
// shapes also against a CPU double computation (g and u rounded to bf16, as the kernel rounds
// them). The chain rounds g and u to bf16 as the fused epilogue does, so they differ only where
// the GEMMs' accumulation orders round g or u differently.
struct GateUpCase { int M, N, K; bool cpu; };
void check_gate_up(const GateUpCase& c, uint64_t seed) {
  const DeviceInfo& d = device_info();
  const bench::Tolerance chain_tol{1.0 / 32, 1.0 / 64, 2e-3};
  SCOPED_TRACE("M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K));
  const size_t nA = size_t(c.M) * c.K, nW = size_t(c.N) * c.K, nY = size_t(c.M) * c.N;
  bench::DeviceBuffer A(2 * nA), Wg(2 * nW), Wu(2 * nW), g(2 * nY), u(2 * nY), want(2 * nY), got(2 * nY),
      ws(std::max<size_t>(gemm_bf16_workspace_bytes(c.M, c.N, c.K, d), 256));
  KL_CHECK(cudaMemset(ws.ptr, 0, ws.bytes));
  // The chain's g and u zeroed first: compute-sanitizer's initcheck reports swiglu's reads of them
  // as uninitialized when a GEMM rung with a TMA-store epilogue wrote them.
  KL_CHECK(cudaMemset(g.ptr, 0, g.bytes));
  KL_CHECK(cudaMemset(u.ptr, 0, u.bytes));
  // Inputs scaled so that g spans silu's curve: |g| up to a few units whatever K.
  const float w = 2.0f / static_cast<float>(std::sqrt(double(c.K)));
  bench::fill_uniform(A.ptr, nA, DType::bf16, ++seed, -1.f, 1.f);
  bench::fill_uniform(Wg.ptr, nW, DType::bf16, ++seed, -w, w);
  bench::fill_uniform(Wu.ptr, nW, DType::bf16, ++seed, -w, w);
  auto gemm = [&](const bench::DeviceBuffer& W, bench::DeviceBuffer& C) {
    GemmBf16Args a;
    a.A = A.as<__nv_bfloat16>();
    a.W = W.as<__nv_bfloat16>();
    a.C = C.as<__nv_bfloat16>();
    a.M = c.M;
    a.N = c.N;
    a.K = c.K;
    a.workspace = ws.ptr;
    a.workspace_bytes = ws.bytes;
    gemm_bf16(a, nullptr);
  };
  gemm(Wg, g);
  gemm(Wu, u);
  SwigluArgs sw;
  sw.g = g.ptr;
  sw.u = u.ptr;
  sw.y = want.ptr;
  sw.rows = c.M;
  sw.cols = c.N;
  sw.dtype = DType::bf16;
  swiglu(sw, nullptr);

  layer_detail::GateUpArgs f;
  f.A = A.as<__nv_bfloat16>();
  f.w_gate = Wg.as<__nv_bfloat16>();
  f.w_up = Wu.as<__nv_bfloat16>();
  f.act = got.as<__nv_bfloat16>();
  f.M = c.M;
  f.N = c.N;
  f.K = c.K;
  ASSERT_EQ(layer_detail::gate_up_swiglu_supports(f, d), "");
  bench::poison(got.ptr, got.bytes);
  layer_detail::gate_up_swiglu_launch(f, nullptr);
  KL_CHECK(cudaGetLastError());
  KL_CHECK(cudaDeviceSynchronize());
  const std::vector<float> y = download(got, nY);
  EXPECT_TRUE(kl::test::check_close(y, widen(download(want, nY)), chain_tol, "fused vs chain"));
  if (!c.cpu) return;
  const std::vector<float> a = download(A, nA), wg = download(Wg, nW), wu = download(Wu, nW);
  std::vector<double> ref(nY);
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      double gv = 0, uv = 0;
      for (int k = 0; k < c.K; ++k) {
        gv += double(a[size_t(i) * c.K + k]) * wg[size_t(j) * c.K + k];
        uv += double(a[size_t(i) * c.K + k]) * wu[size_t(j) * c.K + k];
      }
      // g and u as bf16 tensors would hold them (the kernel's contract), the rest in double.
      gv = layer_test::rb(gv);
      uv = layer_test::rb(uv);
      ref[size_t(i) * c.N + j] = gv / (1.0 + std::exp(-gv)) * uv;
    }
  EXPECT_TRUE(kl::test::check_close(y, ref, chain_tol, "fused vs CPU double"));
}

// Small and ragged shapes of both kernels (the sanitizer runs these).
TEST(LayerGpu, GateUpSwigluMatchesTheUnfusedChain) {
  KL_REQUIRE_GPU();
  const GateUpCase cases[] = {{1, 264, 192, true},     {3, 520, 256, true},     {16, 1000, 512, true},
                              {17, 2816, 1024, false}, {33, 2816, 1024, false}, {64, 4104, 4096, false},
                              {65, 1000, 520, true},   {129, 264, 192, true},   {300, 2824, 1024, false}};
  uint64_t seed = 900;
  for (const GateUpCase& c : cases) check_gate_up(c, seed += 3);
}

// The Llama MLP width: decode rows and prefills of several tiles per CTA.
TEST(LayerGpu, GateUpSwigluLlamaWidth) {
  KL_REQUIRE_GPU();
  const GateUpCase cases[] = {{1, 14336, 4096, false}, {16, 14336, 4096, false}, {1000, 14336, 4096, false},
                              {4096, 14336, 4096, false}};
  uint64_t seed = 950;
  for (const GateUpCase& c : cases) check_gate_up(c, seed += 3);
}

// Refusals of the fused kernel (no launch), by both of its kernels.
TEST(LayerGpu, GateUpSwigluRefusals) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  bench::DeviceBuffer buf(1 << 20);
  const auto* p = buf.as<__nv_bfloat16>();
  layer_detail::GateUpArgs ok;
  ok.A = p;
  ok.w_gate = p + 4096;
  ok.w_up = p + 8192;
  ok.act = buf.as<__nv_bfloat16>() + 12288;
  ok.M = 4;
  ok.N = 64;
  ok.K = 64;
  ASSERT_EQ(layer_detail::gate_up_swiglu_supports(ok, d), "");
  struct Case { const char* what; layer_detail::GateUpArgs a; const char* says; };
  auto with = [&](auto f) { layer_detail::GateUpArgs a = ok; f(a); return a; };
  const Case cases[] = {
      {"M = 0", with([](auto& a) { a.M = 0; }), "M >= 1"},
      {"prefill, up misaligned", with([&](auto& a) { a.M = 65; a.w_up = p + 8193; }), "16-byte"},
      {"prefill, A misaligned", with([&](auto& a) { a.M = 65; a.A = p + 1; }), "16-byte"},
      {"prefill, K % 8", with([](auto& a) { a.M = 65; a.K = 60; }), "multiples of 8"},
      {"prefill, null gate", with([](auto& a) { a.M = 65; a.w_gate = nullptr; }), "null"},
      {"null up", with([](auto& a) { a.w_up = nullptr; }), "null"},
      {"null act", with([](auto& a) { a.act = nullptr; }), "null"},
      {"up misaligned", with([&](auto& a) { a.w_up = p + 8193; }), "16-byte"},
      {"gate misaligned", with([&](auto& a) { a.w_gate = p + 4097; }), "16-byte"},
      {"K % 8", with([](auto& a) { a.K = 60; }), "multiples of 8"},
  };
  for (const Case& c : cases)
    EXPECT_NE(layer_detail::gate_up_swiglu_supports(c.a, d).find(c.says), std::string::npos) << c.what;
  layer_detail::GateUpArgs pre = ok;
  pre.M = 65;
  EXPECT_EQ(layer_detail::gate_up_swiglu_supports(pre, d), "");
}

// Rung 03's fused kernel: y = r + bf16(A W^T). Against the same GEMM kernel without the residual
// (rung 15's whole-K kernel at M <= 64 with the plan's strip, rung 12's tile kernel above) followed
// by the add on the CPU, bit for bit: the product's accumulation is the same, and the add rounds the
// bf16 product plus r once, as the residual kernel does. Small shapes also against a CPU double
// computation. Ragged strips and tiles, M in each activation box (16, 32, 64), several tiles per
// CTA, the Llama width, and in place (r == y).
struct DownCase { int M, N, K; bool cpu; };
void check_down_residual(const DownCase& c, uint64_t seed, bool in_place = false) {
  const DeviceInfo& d = device_info();
  SCOPED_TRACE("M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
               (in_place ? " in place" : ""));
  const size_t nA = size_t(c.M) * c.K, nW = size_t(c.N) * c.K, nY = size_t(c.M) * c.N;
  bench::DeviceBuffer A(2 * nA), W(2 * nW), R(2 * nY), prod(2 * nY), got(2 * nY);
  const float w = 1.0f / static_cast<float>(std::sqrt(double(c.K)));
  bench::fill_uniform(A.ptr, nA, DType::bf16, ++seed, -1.f, 1.f);
  bench::fill_uniform(W.ptr, nW, DType::bf16, ++seed, -w, w);
  bench::fill_uniform(R.ptr, nY, DType::bf16, ++seed, -2.f, 2.f);
  GemmBf16Args g;
  g.A = A.as<__nv_bfloat16>();
  g.W = W.as<__nv_bfloat16>();
  g.C = prod.as<__nv_bfloat16>();
  g.M = c.M;
  g.N = c.N;
  g.K = c.K;
  const auto* same = find_rung(gemm_bf16_rungs(), c.M <= 64 ? "15" : "12");
  ASSERT_NE(same, nullptr);
  ASSERT_EQ(same->supports(g, d), "");
  same->launch(g, nullptr);
  layer_detail::DownResidualArgs f;
  f.A = A.as<__nv_bfloat16>();
  f.w = W.as<__nv_bfloat16>();
  f.r = R.as<__nv_bfloat16>();
  f.y = got.as<__nv_bfloat16>();
  f.M = c.M;
  f.N = c.N;
  f.K = c.K;
  const std::vector<float> r = download(R, nY);
  if (in_place) {
    KL_CHECK(cudaMemcpy(got.ptr, R.ptr, R.bytes, cudaMemcpyDeviceToDevice));
    f.r = f.y;
  } else {
    bench::poison(got.ptr, got.bytes);
  }
  ASSERT_EQ(layer_detail::down_residual_supports(f, d), "");
  layer_detail::down_residual_launch(f, nullptr);
  KL_CHECK(cudaGetLastError());
  KL_CHECK(cudaDeviceSynchronize());
  const std::vector<float> y = download(got, nY), p = download(prod, nY);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < nY; ++i) {
    const float want = layer_test::rb(double(p[i]) + double(r[i]));
    if (!(y[i] == want) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << "differs from the GEMM plus the add at " << bad << " elements, first y[" << first / c.N
                     << "][" << first % c.N << "] = " << y[first] << ", want "
                     << layer_test::rb(double(p[first]) + double(r[first]));
  if (!c.cpu) return;
  const std::vector<float> a = download(A, nA), wv = download(W, nW);
  std::vector<double> ref(nY);
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      double acc = 0;
      for (int k = 0; k < c.K; ++k) acc += double(a[size_t(i) * c.K + k]) * wv[size_t(j) * c.K + k];
      ref[size_t(i) * c.N + j] = r[size_t(i) * c.N + j] + layer_test::rb(acc);  // the product as dn held it
    }
  EXPECT_TRUE(kl::test::check_close(y, ref, {1.0 / 64, 1.0 / 64, 2e-3}, "fused vs CPU double"));
}

// Small and ragged shapes of both kernels (the sanitizer runs these).
TEST(LayerGpu, DownResidualMatchesGemmPlusAdd) {
  KL_REQUIRE_GPU();
  const DownCase cases[] = {{1, 264, 192, true},    {3, 520, 256, true},    {16, 1000, 512, true},
                            {17, 2824, 1024, false}, {40, 4104, 1024, false}, {64, 4096, 2048, false},
                            {65, 1000, 520, true},  {129, 264, 192, true},  {300, 2824, 1024, false},
                            {2100, 4424, 64, false}};
  uint64_t seed = 1200;
  for (const DownCase& c : cases) check_down_residual(c, seed += 4);
  check_down_residual({5, 264, 192, true}, seed += 4, true);
  check_down_residual({200, 264, 192, true}, seed += 4, true);
}

// The Llama down projection: decode rows and prefills of several tiles per CTA.
TEST(LayerGpu, DownResidualLlamaWidth) {
  KL_REQUIRE_GPU();
  const DownCase cases[] = {{1, 4096, 14336, false}, {64, 4096, 14336, false}, {4096, 4096, 14336, false}};
  uint64_t seed = 1300;
  for (const DownCase& c : cases) check_down_residual(c, seed += 4);
}

// Refusals of the fused kernel (no launch), by both of its kernels.
TEST(LayerGpu, DownResidualRefusals) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  bench::DeviceBuffer buf(1 << 20);
  const auto* p = buf.as<__nv_bfloat16>();
  layer_detail::DownResidualArgs ok;
  ok.A = p;
  ok.w = p + 4096;
  ok.r = p + 8192;
  ok.y = buf.as<__nv_bfloat16>() + 12288;
  ok.M = 4;
  ok.N = 64;
  ok.K = 64;
  ASSERT_EQ(layer_detail::down_residual_supports(ok, d), "");
  struct Case { const char* what; layer_detail::DownResidualArgs a; const char* says; };
  auto with = [&](auto f) { layer_detail::DownResidualArgs a = ok; f(a); return a; };
  const Case cases[] = {
      {"M = 0", with([](auto& a) { a.M = 0; }), "M >= 1"},
      {"null residual", with([](auto& a) { a.r = nullptr; }), "null"},
      {"null y", with([](auto& a) { a.y = nullptr; }), "null"},
      {"null W", with([](auto& a) { a.w = nullptr; }), "null"},
      {"residual 2-byte aligned", with([&](auto& a) { a.r = p + 8193; }), "4-byte"},
      {"residual overlaps y", with([&](auto& a) { a.r = a.y + 8; }), "overlaps"},
      {"W misaligned", with([&](auto& a) { a.w = p + 4097; }), "16-byte"},
      {"K % 8", with([](auto& a) { a.K = 60; }), "multiples of 8"},
      {"prefill, A misaligned", with([&](auto& a) { a.M = 65; a.A = p + 1; }), "16-byte"},
      {"prefill, residual overlaps y", with([&](auto& a) { a.M = 65; a.r = a.y - 8; }), "overlaps"},
      {"prefill, N % 8", with([](auto& a) { a.M = 65; a.N = 60; }), "multiples of 8"},
  };
  for (const Case& c : cases)
    EXPECT_NE(layer_detail::down_residual_supports(c.a, d).find(c.says), std::string::npos) << c.what;
  layer_detail::DownResidualArgs in_place = ok;
  in_place.r = in_place.y;
  EXPECT_EQ(layer_detail::down_residual_supports(in_place, d), "");
  in_place.M = 65;
  EXPECT_EQ(layer_detail::down_residual_supports(in_place, d), "");
}

}  // namespace
