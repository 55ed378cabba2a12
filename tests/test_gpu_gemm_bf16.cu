// tests/test_gpu_gemm_bf16.cu — the bf16 GEMM ladder, part 1 (rungs 00-04), rung 17 (part 1's tile
// fed by TMA) and the entry point.
//
// Every rung of the ladder on small shapes with ragged tails against a CPU double product of the
// same bf16 inputs (element bound and relative-L2 gate), each rung on at least one shape; part 1's
// Stream-K bitwise identical across repeated launches (also replayed from a CUDA graph, also with
// the workspace reused across shapes); rung 17's tiles on ragged shapes, bitwise equal to rung 03's
// and to themselves (also from a graph); refusals with a reason; the entry point on odd shapes.
// Messages name the rung, the shape and the worst element.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kl/gemm_bf16.h"
#include "kernels/gemm_bf16/gemm_bf16_rungs.h"
#include "kl/dtype.h"
#include "tests/gemm_bf16_test_util.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;
using bf16 = __nv_bfloat16;

struct Shape3 {
  int M, N, K;
};
std::string str(const Shape3& s) {
  return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

// Host inputs (bf16 bits), the device copies, and the CPU double product.
struct Problem {
  Shape3 s;
  std::vector<uint16_t> hA, hW;
  bf16 *A = nullptr, *W = nullptr, *C = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = 0;
  mutable std::vector<double> full_ref;  // the whole product, once a full check needs it
  explicit Problem(Shape3 sh, uint64_t seed = 1) : s(sh) {
    std::mt19937_64 rng(seed * 7919 + sh.M * 131 + sh.N * 17 + sh.K);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    hA.resize(size_t(s.M) * s.K);
    hW.resize(size_t(s.N) * s.K);
    for (auto& v : hA) v = float_to_bf16_bits(u(rng));
    for (auto& v : hW) v = float_to_bf16_bits(u(rng));
    EXPECT_EQ(cudaMalloc(&A, 2 * hA.size()), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&W, 2 * hW.size()), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&C, 2 * size_t(s.M) * s.N), cudaSuccess);
    cudaMemcpy(A, hA.data(), 2 * hA.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(W, hW.data(), 2 * hW.size(), cudaMemcpyHostToDevice);
    ws_bytes = gemm_bf16_workspace_bytes(s.M, s.N, s.K, device_info());
    if (ws_bytes) {
      EXPECT_EQ(cudaMalloc(&ws, ws_bytes), cudaSuccess);
      cudaMemset(ws, 0, ws_bytes);  // once, at allocation; never between launches
    }
  }
  ~Problem() {
    cudaFree(A);
    cudaFree(W);
    cudaFree(C);
    if (ws) cudaFree(ws);
  }
  GemmBf16Args args() const {
    GemmBf16Args a;
    a.A = A;
    a.W = W;
    a.C = C;
    a.M = s.M;
    a.N = s.N;
    a.K = s.K;
    a.workspace = ws;
    a.workspace_bytes = ws_bytes;
    return a;
  }
  double ref(int i, int j) const {
    double acc = 0;
    const uint16_t* a = hA.data() + size_t(i) * s.K;
    const uint16_t* w = hW.data() + size_t(j) * s.K;
    for (int k = 0; k < s.K; ++k) acc += double(bf16_bits_to_float(a[k])) * bf16_bits_to_float(w[k]);
    return acc;
  }
  void poison() { cudaMemset(C, 0xFF, 2 * size_t(s.M) * s.N); }
  std::vector<uint16_t> download() const {
    std::vector<uint16_t> h(size_t(s.M) * s.N);
    cudaMemcpy(h.data(), C, 2 * h.size(), cudaMemcpyDeviceToHost);
    return h;
  }
  // One bf16 rounding of the output (2^-9 relative) plus fp32 accumulation slack; with the
  // relative-L2 gate of bf16 outputs.
  static bench::Tolerance part1_tolerance() { return {2e-3, 1e-2, kl::test::kBf16RelL2}; }
  // Checks every element (or `samples` random ones when > 0, the two corners first) with
  // kl::test::check_close: "" or the verdict, naming the worst element.
  std::string check(int samples = 0, const bench::Tolerance& tol = part1_tolerance()) const {
    std::vector<uint16_t> h = download();
    std::mt19937 rng(5);
    const size_t n = samples > 0 ? size_t(samples) : h.size();
    std::vector<size_t> at(n);
    std::vector<float> got(n);
    std::vector<double> want(n);
    if (samples <= 0 && full_ref.empty()) {  // every entry: computed once per problem
      full_ref.resize(h.size());
      for (size_t e = 0; e < h.size(); ++e) full_ref[e] = ref(static_cast<int>(e / s.N), static_cast<int>(e % s.N));
    }
    for (size_t t = 0; t < n; ++t) {
      at[t] = samples > 0 ? (t < 2 ? (t == 0 ? 0 : h.size() - 1) : rng() % h.size()) : t;
      got[t] = bf16_bits_to_float(h[at[t]]);
      want[t] = samples > 0 ? ref(static_cast<int>(at[t] / s.N), static_cast<int>(at[t] % s.N)) : full_ref[t];
    }
    const ::testing::AssertionResult ok = kl::test::check_close(
        got, want, tol, str(s) + (samples > 0 ? " (" + std::to_string(n) + " sampled)" : ""),
        [&](size_t t) { return "C[" + std::to_string(at[t] / s.N) + "," + std::to_string(at[t] % s.N) + "]"; });
    return ok ? "" : ok.message();
  }
};

const std::vector<Shape3> kShapes = {
    {64, 64, 64},   {128, 256, 64}, {200, 136, 72},  {1, 136, 72},  {16, 256, 128},
    {33, 200, 520}, {1, 64, 4096},  {300, 520, 1024}, {640, 512, 256}, {96, 1024, 2048}};

const std::vector<Rung<GemmBf16Args>>& table() { return gemm_bf16_rungs(); }

// On a card without sm_90a the entry point must take the best portable rung of each shape class.
// We cannot time an sm_120 card, so the picks are made for a faked RTX 5090 description (sm_120,
// 170 SMs, 99 KB of shared memory per block; the plans' occupancy queries still run on this GPU),
// and "best" is the portable rungs' order in the committed H200 rows (results/h200/gemm_bf16.jsonl):
// 04 (Stream-K) leads the narrow decode shapes and the one-wave prefill, 03 the wide decode shapes
// up to M = 32 and the larger prefill shapes.
TEST(GemmBf16, PicksOnSm120TakeTheBestPortableRung) {
  KL_REQUIRE_GPU();
  DeviceInfo d = device_info();
  d.name = "fake RTX 5090";
  d.cc_major = 12;
  d.cc_minor = 0;
  d.sms = 170;
  d.l2_bytes = 96ll << 20;
  d.smem_optin = 101376;
  d.smem_per_sm = 102400;
  struct Case { int M, N, K, want; const char* cls; };
  const Case cases[] = {
      {1, 4096, 4096, 4, "decode, narrow, M <= 8"},   {16, 4096, 4096, 4, "decode, narrow, M <= 16"},
      {32, 4096, 4096, 4, "decode, narrow, M <= 32"}, {64, 4096, 11008, 4, "decode, narrow, M <= 64"},
      {1, 11008, 4096, 3, "decode, wide, M <= 16"},   {32, 11008, 4096, 3, "decode, wide, M <= 32"},
      {64, 11008, 4096, 4, "decode, wide, M <= 64"},  {1024, 1024, 1024, 17, "one wave"},
      {4096, 4096, 4096, 17, "prefill"},              {4096, 11008, 4096, 17, "prefill"},
  };
  for (const Case& c : cases) {
    GemmBf16Args a;
    a.A = reinterpret_cast<const __nv_bfloat16*>(uintptr_t(1) << 20);  // never dereferenced
    a.W = reinterpret_cast<const __nv_bfloat16*>(uintptr_t(2) << 20);
    a.C = reinterpret_cast<__nv_bfloat16*>(uintptr_t(3) << 20);
    a.M = c.M, a.N = c.N, a.K = c.K;
    a.workspace_bytes = gemm_bf16_workspace_bytes(c.M, c.N, c.K, d);
    a.workspace = a.workspace_bytes ? reinterpret_cast<void*>(uintptr_t(4) << 20) : nullptr;
    const Rung<GemmBf16Args>* r = gemm_bf16_pick(a, d);
    ASSERT_NE(r, nullptr) << c.cls;
    EXPECT_EQ(r->number, c.want) << c.M << "x" << c.N << "x" << c.K << " (" << c.cls << ") picked "
                                 << r->number << " " << r->name;
    for (int hopper : {5, 8, 11, 12, 15, 16, 18, 19, 20, 21})
      EXPECT_NE(table()[hopper].supports(a, d).find("sm_90a"), std::string::npos) << hopper;
  }
}

TEST(GemmBf16, TableListsPart1InOrder) {
  const auto& t = table();
  ASSERT_GE(t.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(t[i].number, i);
    EXPECT_NE(std::strlen(t[i].name), 0u);
    EXPECT_NE(std::strlen(t[i].change), 0u);
  }
}

// Every rung of the ladder on every shape it takes; each rung must take at least one. Part-1 rungs: only rung 00 may refuse (it needs
// multiples of 16), checked with the part-1 bound; the Hopper rungs (sm_90a), which may refuse a
// shape outside their domain (decode rungs: M <= 64), with the bound of their own tests
// (kl::test::GemmProblem::tolerance()).
TEST(GemmBf16, EveryRungMatchesCpu) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  kl::test::RungCoverage cov(table());
  for (const Shape3& sh : kShapes) {
    Problem p(sh);
    const size_t n = size_t(sh.M) * sh.N;
    for (const auto& rung : table()) {
      const int r = rung.number;
      const std::string why = rung.supports(p.args(), d);
      if (!why.empty()) {
        EXPECT_TRUE(r == 0 || r >= 5) << "rung " << r << " refused " << str(sh) << ": " << why;
        cov.refused(r, str(sh), why);
        continue;
      }
      p.poison();
      ASSERT_NO_THROW(launch_checked(rung, p.args(), nullptr)) << "rung " << r << " " << str(sh);
      kl::test::sync_or_die("rung " + std::to_string(r) + " (" + rung.name + ") at " + str(sh));
      const bench::Tolerance tol =
          r <= 4 ? Problem::part1_tolerance() : kl::test::GemmProblem::tolerance_for(sh.K);
      EXPECT_EQ(p.check(n > 200000 ? 20000 : 0, tol), "") << "rung " << r << " (" << rung.name << ")";
      cov.ran(r);
    }
  }
  EXPECT_TRUE(cov.every_rung_ran());
}

// The 128x256 tile (Tile::L: one CTA per SM, so its interior tiles copy through InteriorCopies,
// mma_sync_tile.cuh) forced for rung 03 and for rung 04 with Stream-K off and on, where the last
// k-step is partial: K = 1000 (16 k-steps, the last 40 deep) and K = 200 (the 4th k-step, the
// first one issued inside the loop, 8 deep); 2200 x 2104 and 1000 x 1016 mix interior and edge tiles.
TEST(GemmBf16, Part1InteriorCopiesPartialK) {
  KL_REQUIRE_GPU();
  using gemm_bf16_detail::Tile;
  for (const Shape3& sh : std::vector<Shape3>{{2048, 2048, 1000}, {2200, 2104, 1000}, {1000, 1016, 200}}) {
    Problem p(sh, 5);
    p.poison();
    ASSERT_NO_THROW(gemm_bf16_detail::gemm_bf16_mma_sync_swizzle_launch_tile(Tile::L, p.args(), nullptr)) << str(sh);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "rung 03 " << str(sh);
    EXPECT_EQ(p.check(4000), "") << "rung 03, tile L on " << str(sh);
    for (int sk : {-1, +1}) {
      ASSERT_EQ(gemm_bf16_detail::gemm_bf16_stream_k_supports_tile(Tile::L, sk, p.args(), device_info()), "") << str(sh);
      p.poison();
      ASSERT_NO_THROW(gemm_bf16_detail::gemm_bf16_stream_k_launch_tile(Tile::L, sk, p.args(), nullptr)) << str(sh);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "rung 04 sk=" << sk << " " << str(sh);
      EXPECT_EQ(p.check(4000), "") << "rung 04 (sk " << sk << "), tile L on " << str(sh);
    }
  }
}

// Shapes where Stream-K splits tiles (fixup chains of several CTAs) and mixes in whole tiles.
const std::vector<Shape3> kSplitShapes = {
    {16, 4096, 4096}, {64, 4096, 1024}, {512, 512, 4096}, {2048, 2048, 512}, {1000, 1016, 1024},
    {4096, 4096, 128}};  // the last: data-parallel waves plus a Stream-K part on 132 SMs

TEST(GemmBf16, StreamKBitwiseDeterministic) {
  KL_REQUIRE_GPU();
  const auto& sk = table()[4];
  for (const Shape3& sh : kSplitShapes) {
    Problem p(sh, 3);
    ASSERT_EQ(sk.supports(p.args(), device_info()), "") << str(sh);
    p.poison();
    launch_checked(sk, p.args(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << str(sh);
    const std::vector<uint16_t> first = p.download();
    EXPECT_EQ(p.check(2000), "") << "stream_k on " << str(sh);
    for (int rep = 0; rep < 4; ++rep) {
      p.poison();
      launch_checked(sk, p.args(), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint16_t> again = p.download();
      size_t diff = 0;
      for (size_t e = 0; e < again.size(); ++e) diff += again[e] != first[e];
      EXPECT_EQ(diff, 0u) << "stream_k " << str(sh) << " launch " << rep + 2 << " differs in "
                          << diff << " elements";
    }
  }
}

TEST(GemmBf16, StreamKWorkspaceReusedAcrossShapes) {
  KL_REQUIRE_GPU();
  const auto& sk = table()[4];
  // One workspace, large enough for all, shared by shapes with different schedules.
  size_t need = 0;
  for (const Shape3& sh : kSplitShapes)
    need = std::max(need, gemm_bf16_workspace_bytes(sh.M, sh.N, sh.K, device_info()));
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, need), cudaSuccess);
  cudaMemset(ws, 0, need);
  for (int round = 0; round < 2; ++round)
    for (const Shape3& sh : kSplitShapes) {
      Problem p(sh, 4);
      GemmBf16Args a = p.args();
      a.workspace = ws;
      a.workspace_bytes = need;
      p.poison();
      launch_checked(sk, a, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(p.check(1000), "") << "stream_k, shared workspace, " << str(sh) << " round " << round;
    }
  cudaFree(ws);
}

// Launches `rung` directly, then captures one launch of it in a CUDA graph and replays the graph
// `reps` times: every replay must reproduce the direct launch's C bit for bit.
::testing::AssertionResult graph_replays_match_direct(const Rung<GemmBf16Args>& rung, Problem& p, int reps) {
  launch_checked(rung, p.args(), nullptr);
  kl::test::sync_or_die(std::string("rung ") + rung.name + ", direct launch");
  const std::vector<uint16_t> direct = p.download();
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return ::testing::AssertionFailure() << "cudaStreamCreateWithFlags failed";
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  ::testing::AssertionResult r = ::testing::AssertionSuccess();
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) {
    r = ::testing::AssertionFailure() << "cudaStreamBeginCapture failed";
  } else {
    rung.launch(p.args(), s);
    if (cudaStreamEndCapture(s, &g) != cudaSuccess || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess)
      r = ::testing::AssertionFailure() << "graph capture / instantiation failed";
  }
  for (int rep = 0; r && rep < reps; ++rep) {
    p.poison();
    if (cudaGraphLaunch(ge, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess)
      r = ::testing::AssertionFailure() << "graph replay " << rep << " failed";
    else if (p.download() != direct)
      r = ::testing::AssertionFailure() << "graph replay " << rep << " differs from the direct launch";
  }
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return r;
}

TEST(GemmBf16, StreamKGraphReplayMatchesDirect) {
  KL_REQUIRE_GPU();
  Problem p({16, 4096, 4096}, 6);
  // A graph of ONE launch replayed several times: the same epoch every replay. The owners'
  // flag resets must still make every replay wait for its own partials.
  EXPECT_TRUE(graph_replays_match_direct(table()[4], p, 5)) << "stream_k";
}

// Every CTA tile rungs 03 and 04 can choose (the per-shape choice only reaches a few of them on
// small shapes), forced: rung 03's kernel, rung 04 data-parallel only, and rung 04 with the
// Stream-K part forced on — the latter bitwise identical on a second launch. A tile that does not
// fit the device (sm_120's 99 KB of shared memory) throws BadArgument and is skipped.
TEST(GemmBf16, EveryTileForcedMatchesCpu) {
  KL_REQUIRE_GPU();
  using gemm_bf16_detail::Tile;
  using gemm_bf16_detail::tile_name;
  const std::vector<Shape3> shapes = {{200, 136, 72}, {300, 520, 1024}, {1000, 1016, 1024}};
  for (const Shape3& sh : shapes) {
    Problem p(sh, 9);
    const int samples = sh.M * sh.N > 100000 ? 1500 : 0;
    for (int ti = 0; ti < static_cast<int>(Tile::kCount); ++ti) {
      const Tile t = static_cast<Tile>(ti);
      const std::string what = std::string(tile_name(t)) + " on " + str(sh);
      p.poison();
      try {
        gemm_bf16_detail::gemm_bf16_mma_sync_swizzle_launch_tile(t, p.args(), nullptr);
      } catch (const BadArgument& e) {
        continue;  // does not fit this device
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "rung 03 " << what;
      EXPECT_EQ(p.check(samples), "") << "rung 03, tile " << what;
      for (int sk : {-1, +1}) {
        if (!gemm_bf16_detail::gemm_bf16_stream_k_supports_tile(t, sk, p.args(), device_info()).empty())
          continue;  // decode-only or Hopper-only tiles the plan does not instantiate
        p.poison();
        ASSERT_NO_THROW(gemm_bf16_detail::gemm_bf16_stream_k_launch_tile(t, sk, p.args(), nullptr)) << what;
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "rung 04 sk=" << sk << " " << what;
        const std::vector<uint16_t> first = p.download();
        EXPECT_EQ(p.check(samples), "") << "rung 04 (sk " << sk << "), tile " << what;
        if (sk > 0) {
          p.poison();
          gemm_bf16_detail::gemm_bf16_stream_k_launch_tile(t, sk, p.args(), nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          EXPECT_TRUE(p.download() == first) << "rung 04 Stream-K not bitwise repeatable, " << what;
        }
      }
    }
  }
}

// Rung 17 (rung 03's tiles fed by TMA on a full/empty mbarrier ring), every tile forced, on shapes
// with M, N and K tails: K = 8 (one box, 56 of its 64 columns zero-filled), K = 72 and 520 (a last
// box 8 deep), K = 200; M = 1 and 17 (most of the A box zero-filled), N = 136 (a W box mostly past
// N). Each launch is checked against the CPU product and must equal rung 03 with the same tile bit
// for bit (the same fragments and mma in the same order; only how a stage reaches shared memory
// differs), and a second launch must equal the first. One shape is also replayed from a CUDA graph.
// The refusals (K, N not multiples of 8, misaligned pointers) hold on a TMA card.
TEST(GemmBf16, TmaMmaSyncEveryTileRaggedDeterministicGraph) {
  KL_REQUIRE_GPU();
  using gemm_bf16_detail::Tile;
  using gemm_bf16_detail::tile_name;
  const DeviceInfo& d = device_info();
  const auto& r17 = table()[17];
  ASSERT_EQ(r17.number, 17);
  if (d.cc() < 90) GTEST_SKIP() << "rung 17 needs TMA (sm_90+): " << r17.supports(Problem({64, 64, 64}).args(), d);
  const std::vector<Shape3> shapes = {{1, 136, 72},    {17, 200, 520},  {129, 264, 8},
                                      {200, 136, 72},  {300, 520, 1000}, {1000, 1016, 200}};
  for (const Shape3& sh : shapes) {
    Problem p(sh, 17);
    ASSERT_EQ(r17.supports(p.args(), d), "") << str(sh);
    const int samples = sh.M * sh.N > 100000 ? 3000 : 0;
    for (int ti = 0; ti < static_cast<int>(Tile::kCount); ++ti) {
      const Tile t = static_cast<Tile>(ti);
      const std::string what = std::string(tile_name(t)) + " on " + str(sh);
      p.poison();
      try {
        gemm_bf16_detail::gemm_bf16_tma_mma_sync_launch_tile(t, p.args(), nullptr);
      } catch (const BadArgument& e) {
        // Only a tile too large for this card is skipped (sm_120: the 128x256 tile); any other
        // refusal (a tensor map the driver rejects) fails.
        EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos)
            << "rung 17, tile " << what << ": " << e.what();
        continue;
      }
      kl::test::sync_or_die("rung 17, tile " + what);
      const std::vector<uint16_t> first = p.download();
      EXPECT_EQ(p.check(samples), "") << "rung 17, tile " << what;
      p.poison();
      gemm_bf16_detail::gemm_bf16_tma_mma_sync_launch_tile(t, p.args(), nullptr);
      kl::test::sync_or_die("rung 17, tile " + what + ", second launch");
      EXPECT_TRUE(p.download() == first) << "rung 17 not bitwise repeatable, tile " << what;
      p.poison();
      gemm_bf16_detail::gemm_bf16_mma_sync_swizzle_launch_tile(t, p.args(), nullptr);
      kl::test::sync_or_die("rung 03, tile " + what);
      EXPECT_TRUE(p.download() == first) << "rung 17 differs from rung 03 with the same tile, " << what;
    }
    // The rung's own tile choice.
    p.poison();
    ASSERT_NO_THROW(launch_checked(r17, p.args(), nullptr)) << str(sh);
    kl::test::sync_or_die("rung 17 at " + str(sh));
    EXPECT_EQ(p.check(samples), "") << "rung 17 on " << str(sh);
  }

  Problem p({300, 520, 1000}, 18);
  // Tensor maps are encoded on the host and passed by value: the launch captures like any other.
  EXPECT_TRUE(graph_replays_match_direct(r17, p, 3)) << "rung 17";

  GemmBf16Args bad_k = p.args(), bad_n = p.args(), bad_a = p.args(), bad_w = p.args();
  bad_k.K = 996;  // a multiple of 4, not of 8: a 1992-byte row stride TMA cannot take
  bad_n.N = 516;
  bad_a.A = p.A + 4;  // 8-byte offset
  bad_w.W = p.W + 1;
  EXPECT_NE(r17.supports(bad_k, d).find("multiple of 8"), std::string::npos);
  EXPECT_NE(r17.supports(bad_n, d).find("multiple of 8"), std::string::npos);
  EXPECT_NE(r17.supports(bad_a, d).find("aligned"), std::string::npos);
  EXPECT_NE(r17.supports(bad_w, d).find("aligned"), std::string::npos);
  EXPECT_THROW(launch_checked(r17, bad_k, nullptr), BadArgument);
}

TEST(GemmBf16, RefusesUnsupportedWithReason) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  Problem p({64, 64, 64});
  GemmBf16Args bad_k = p.args();
  bad_k.K = 60;  // not a multiple of 8
  GemmBf16Args bad_n = p.args();
  bad_n.N = 60;
  GemmBf16Args misaligned = p.args();
  misaligned.A = p.A + 1;  // 2-byte offset
  GemmBf16Args no_ws = p.args();
  no_ws.workspace = nullptr;
  no_ws.workspace_bytes = 0;
  for (int r = 0; r <= 4; ++r) {
    const auto& rung = table()[r];
    EXPECT_NE(rung.supports(bad_k, d).find("multiple"), std::string::npos) << "rung " << r;
    EXPECT_NE(rung.supports(bad_n, d).find("multiple"), std::string::npos) << "rung " << r;
    EXPECT_NE(rung.supports(misaligned, d).find("aligned"), std::string::npos) << "rung " << r;
    EXPECT_THROW(launch_checked(rung, bad_k, nullptr), BadArgument) << "rung " << r;
  }
  EXPECT_NE(table()[4].supports(no_ws, d).find("workspace"), std::string::npos);
  EXPECT_THROW(gemm_bf16(bad_k, nullptr), BadArgument);
  EXPECT_THROW(gemm_bf16(misaligned, nullptr), BadArgument);
  try {
    gemm_bf16(bad_k, nullptr);
  } catch (const BadArgument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 8"), std::string::npos) << e.what();
  }
  // Without a workspace the entry point still computes (falls back to a rung that needs none).
  p.poison();
  ASSERT_NO_THROW(gemm_bf16(no_ws, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(p.check(), "");
}

// The pick follows the measured per-class lists: never the cluster multicast rungs (09, 13: slower on every measured shape), always a rung that supports the shape.
TEST(GemmBf16, PickSkipsSlowRungs) {
  KL_REQUIRE_GPU();
  const std::vector<Shape3> shapes = {{1, 4096, 4096},   {16, 11008, 4096}, {64, 11008, 4096},
                                      {32, 4096, 11008}, {1000, 1000, 1024}, {2048, 2048, 2048},
                                      {4096, 4096, 4096}, {4097, 1016, 520}};
  for (const Shape3& sh : shapes) {
    GemmBf16Args a;
    // supports() and the pick only look at the pointers' alignment; nothing is launched.
    a.A = a.W = reinterpret_cast<const bf16*>(uintptr_t(256));
    a.C = reinterpret_cast<bf16*>(uintptr_t(256));
    a.M = sh.M, a.N = sh.N, a.K = sh.K;
    const Rung<GemmBf16Args>* r = gemm_bf16_pick(a, device_info());
    ASSERT_NE(r, nullptr) << str(sh);
    EXPECT_NE(r->number, 9) << str(sh);
    EXPECT_NE(r->number, 13) << str(sh);
    EXPECT_EQ(r->supports(a, device_info()), "") << str(sh);
  }
}

TEST(GemmBf16, EntryPointOddShapes) {
  KL_REQUIRE_GPU();
  const std::vector<Shape3> odd = {{1000, 1000, 1024}, {4097, 1016, 520}, {1, 8, 8},
                                   {7, 24, 16},        {65, 4104, 136},   {129, 264, 8}};
  for (const Shape3& sh : odd) {
    Problem p(sh, 2);
    const Rung<GemmBf16Args>* r = gemm_bf16_pick(p.args(), device_info());
    ASSERT_NE(r, nullptr) << str(sh);
    p.poison();
    ASSERT_NO_THROW(gemm_bf16(p.args(), nullptr)) << str(sh);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << str(sh);
    const size_t n = size_t(sh.M) * sh.N;
    EXPECT_EQ(p.check(n > 300000 ? 3000 : 0), "") << "auto (rung " << r->number << ") on " << str(sh);
  }
}

}  // namespace
