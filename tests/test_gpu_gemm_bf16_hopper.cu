// tests/test_gpu_gemm_bf16_hopper.cu — the sm_90a GEMM rungs (05-09) and the decode rung (10)
// against a CPU double product on the same bf16 inputs; shapes from one tile up, every one also
// ragged (M, N, K not multiples of any tile); the building blocks in isolation (TMA 128B swizzle,
// one wgmma) so a failure says WHICH layer is wrong; determinism; refusals.
// On a non-Hopper GPU the Hopper tests skip with the reason supports() gives.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <cstdint>
#include <map>
#include <tuple>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kl/check.h"
#include "kl/dtype.h"
#include "kernels/common/hopper.cuh"
#include "kernels/common/tma.h"
#include "kl/gemm_bf16.h"
#include "kernels/gemm_bf16/hopper_gemm.cuh"
#include "tests/gemm_bf16_test_util.h"
#include "tests/gpu_test.h"

namespace {

using kl::GemmBf16Args;

using Problem = kl::test::GemmProblem;
using kl::test::sync_or_die;


std::vector<float> as_floats(const std::vector<uint16_t>& bf16) {
  std::vector<float> f(bf16.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = kl::bf16_bits_to_float(bf16[i]);
  return f;
}

const kl::Rung<GemmBf16Args>* rung(int number) {
  for (const auto& r : kl::gemm_bf16_rungs())
    if (r.number == number) return &r;
  return nullptr;
}

// Runs rung `num` on a fresh problem; "" = pass, "SKIP: why" = unsupported here, else the failure.
std::string run_rung(int num, int M, int N, int K, uint64_t seed = 1) {
  const auto* r = rung(num);
  if (!r) return "rung " + std::to_string(num) + " missing from gemm_bf16_rungs()";
  Problem p(M, N, K, seed);
  std::string why = r->supports(p.args(), kl::device_info());
  if (!why.empty()) return "SKIP: " + why;
  p.poison();
  r->launch(p.args(), 0);
  sync_or_die("rung " + std::to_string(num) + " (" + r->name + ") at " + std::to_string(M) + "x" +
              std::to_string(N) + "x" + std::to_string(K));
  std::string err = p.check(p.result());
  return err.empty() ? "" : "rung " + std::to_string(num) + " (" + r->name + ") " + err;
}

// A rung's refusal (`why` non-empty) skips the test only on a device that cannot run the sm_90a
// rungs at all; on sm_90a every shape of these tests lies in the rung's domain, so there a refusal
// fails the test (a rung that refused every shape would otherwise pass unseen).
#define KL_SKIP_UNLESS_SM90A(why)                                                    \
  do {                                                                               \
    const std::string kl_refused_ = (why);                                           \
    if (!kl_refused_.empty()) {                                                      \
      if (!kl::require_sm90a(kl::device_info()).empty()) GTEST_SKIP() << kl_refused_; \
      FAIL() << "refused on an sm_90a device: " << kl_refused_;                      \
    }                                                                                \
  } while (0)

bool hopper_here(std::string* why) {
  *why = kl::require_sm90a(kl::device_info());
  return why->empty();
}

// ---------------------------------------------------------------- building blocks
// TMA: one 128-row x 64-col box of 16-bit ids (id = row*64 + col) loaded with 128B swizzle must land
// with 16-byte chunk c of row r at chunk c ^ (r % 8): the layout the wgmma descriptors and the
// stmatrix epilogue assume.
__global__ void tma_box_kernel(const __grid_constant__ CUtensorMap tm, uint16_t* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ alignas(1024) uint16_t tile[128 * 64];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    kl::mbar_init(&bar, 1);
    kl::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    kl::mbar_arrive_expect_tx(&bar, sizeof(tile));
    kl::tma_load_2d(tile, &tm, &bar, 0, 0);
  }
  kl::mbar_wait(&bar, 0);
  for (int i = threadIdx.x; i < 128 * 64; i += blockDim.x) out[i] = tile[i];
#endif
}

TEST(GemmBf16Hopper, TmaSwizzle128Layout) {
  KL_REQUIRE_GPU();
  std::string why;
  if (!hopper_here(&why)) GTEST_SKIP() << why;
  std::vector<uint16_t> ids(128 * 64);
  for (int i = 0; i < 128 * 64; ++i) ids[i] = uint16_t(i);
  uint16_t *dIn, *dOut;
  KL_CHECK(cudaMalloc(&dIn, ids.size() * 2));
  KL_CHECK(cudaMalloc(&dOut, ids.size() * 2));
  KL_CHECK(cudaMemcpy(dIn, ids.data(), ids.size() * 2, cudaMemcpyHostToDevice));
  CUtensorMap tm = kl::make_tensor_map_bf16_2d(dIn, 128, 64, 64, 128, 64, CU_TENSOR_MAP_SWIZZLE_128B);
  tma_box_kernel<<<1, 128>>>(tm, dOut);
  KL_CHECK_LAUNCH();
  sync_or_die("TMA box test kernel");
  std::vector<uint16_t> out(ids.size());
  KL_CHECK(cudaMemcpy(out.data(), dOut, out.size() * 2, cudaMemcpyDeviceToHost));
  cudaFree(dIn);
  cudaFree(dOut);
  int bad = 0;
  std::ostringstream s;
  for (int r = 0; r < 128; ++r)
    for (int c = 0; c < 64; ++c) {
      const int at = r * 64 + (((c / 8) ^ (r % 8)) * 8) + c % 8;
      if (out[at] != r * 64 + c && bad++ < 5)
        s << " smem[" << at << "] = " << out[at] << ", expected id " << r * 64 + c << ";";
    }
  EXPECT_EQ(bad, 0) << "TMA 128B swizzle layout differs from chunk ^ (row % 8):" << s.str();
}

// ---------------------------------------------------------------- the rungs, smallest first
// 05: 128x128 tile. 06-09: 128x256 tile (08-09 TMA-store 64x64 boxes; 09 runs 2-CTA clusters:
// odd tile counts leave the second CTA of the last pair with an all-out-of-bounds tile; 20 and 21
// pair tiles along N, so an odd N-tile count does: 200x264 at 64-column tiles, 2126x2264 at 256).
class HopperRung : public ::testing::TestWithParam<int> {};

struct Dims {
  int M, N, K;
  const char* what;
};
// Smallest first: the first failing line says which layer broke (one tile and one k-block =
// descriptors/swizzle/accumulator layout; few k-blocks = barrier phases; many = ring wrap-around;
// ragged = OOB fill and bounded/clipped epilogue; more tiles than SMs = persistent scheduling).
const Dims kHopperShapes[] = {
    {64, 256, 16, "one tile, K = 16: only the first k16 step has data (descriptor base, SBO, swizzle)"},
    {64, 256, 64, "one tile, one k-block (adds the +32 B k16 advance inside the swizzle atom)"},
    {128, 256, 128, "full 128x256 tile, two k-blocks"},
    {256, 512, 1024, "4 tiles, 16 k-blocks: the stage ring wraps"},
    {200, 264, 72, "ragged M, N, K (K tail of 8)"},
    {130, 136, 200, "ragged, K = 3 blocks + 8"},
    {1, 8, 8, "M = 1, N = K = 8: box far larger than the tensor"},
    {17, 40, 24, "small odd"},
    {2126, 2264, 136, "153 tiles of 128x256 > #SMs: persistent CTAs take several tiles"},
};

TEST_P(HopperRung, ShapesSmallestFirst) {
  KL_REQUIRE_GPU();
  for (const Dims& d : kHopperShapes) {
    std::string e = run_rung(GetParam(), d.M, d.N, d.K);
    if (e.rfind("SKIP: ", 0) == 0) KL_SKIP_UNLESS_SM90A(e.substr(6));
    EXPECT_TRUE(e.empty()) << "[" << d.what << "] " << e;
  }
}

INSTANTIATE_TEST_SUITE_P(Rungs, HopperRung, ::testing::Values(5, 6, 7, 8, 9, 12, 13, 16, 18, 19, 20, 21),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return (i.param < 10 ? "rung0" : "rung") + std::to_string(i.param);
                         });

// ---------------------------------------------------------------- decode rung (10)
TEST(GemmBf16Hopper, DecodeRungShapes) {
  KL_REQUIRE_GPU();
  const Dims cases[] = {{1, 32, 32, "one strip, one chunk"},
                        {1, 264, 72, "N tail, K tail"},
                        {7, 264, 72, "M < 8"},
                        {8, 40, 1000, "K not a multiple of 32"},
                        {17, 1032, 520, "3 activation tiles"},
                        {33, 96, 4104, "long K, 5 tiles"},
                        {64, 264, 264, "M = 64, 8 tiles"},
                        {64, 1024, 1024, "M = 64, 32 strips"},
                        {1, 4096, 1024, "M = 1, 128 strips"}};
  for (const Dims& d : cases) {
    std::string e = run_rung(10, d.M, d.N, d.K);
    if (e.rfind("SKIP: ", 0) == 0) KL_SKIP_UNLESS_SM90A(e.substr(6));
    EXPECT_TRUE(e.empty()) << "[" << d.what << "] " << e;
  }
}

// Rung 11 (TMA ring + cluster split-K): shapes that exercise every (T, S) branch: one tile, tiles
// past N, k ranges shorter than S, empty k ranges (K < 64 S), M not a multiple of 8, the
// real decode shapes' configurations at smaller K.
TEST(GemmBf16Hopper, DecodeSplitKRungShapes) {
  KL_REQUIRE_GPU();
  const Dims cases[] = {{1, 8, 8, "M = 1, N = K = 8: boxes far larger than the tensors"},
                        {1, 264, 72, "N tail, K tail"},
                        {7, 264, 72, "M < 8"},
                        {8, 40, 1000, "K not a multiple of 64"},
                        {16, 1032, 520, "M = 16: the largest mma.sync case"},
                        {17, 1032, 520, "M = 17: the smallest wgmma case"},
                        {33, 96, 4104, "long K, few rows: deep split"},
                        {64, 264, 264, "M = 64"},
                        {64, 1024, 1024, "M = 64, several strips"},
                        {1, 4096, 1024, "M = 1, N = 4096"},
                        {5, 11008, 512, "N = 11008 rows"},
                        {64, 4096, 2048, "M = 64, N = 4096"},
                        {40, 2056, 4096, "ragged N, long K"}};
  for (const Dims& d : cases) {
    std::string e = run_rung(11, d.M, d.N, d.K);
    if (e.rfind("SKIP: ", 0) == 0) KL_SKIP_UNLESS_SM90A(e.substr(6));
    EXPECT_TRUE(e.empty()) << "[" << d.what << "] (" << kl::hopper_gemm::gemm_bf16_decode_tma_splitk_describe(d.M, d.N, d.K)
                           << ") " << e;
  }
  // The configurations of the bench's decode shapes (for the doc; no check).
  for (int M : {1, 16, 32, 64})
    for (auto nk : {std::pair<int, int>{4096, 4096}, {11008, 4096}, {4096, 11008}})
      std::printf("[rung11 cfg] M=%d N=%d K=%d: %s\n", M, nk.first, nk.second,
                  kl::hopper_gemm::gemm_bf16_decode_tma_splitk_describe(M, nk.first, nk.second).c_str());
}

// Rung 11 with (T, S, ring mode) forced: every path (mma.sync M <= 16, wgmma n32 M <= 32, wgmma
// n64 M <= 64), T not a multiple of 4 (the last wgmma slab runs past the W box: junk rows that must
// never reach C, including MP = 32 with T % 4 == 1, which reads past the stage), K splits 1..8
// including 3 and 6 (uneven k ranges, empty ones when K < 64 S), T = 4 on the wgmma paths (one
// slab, its k steps split between the two warpgroups and summed in the park), 1- and 2-CTA/SM rings (2 stages
// at T = 16, M = 64), L2 prefetch past the ring (pfx) on and off. Ragged M in 1..64, N and K multiples of 8 but not of any tile.
TEST(GemmBf16Hopper, DecodeSplitKForcedConfigs) {
  KL_REQUIRE_GPU();
  struct Cfg { int T, S, mode, pfx; };
  const Cfg cfgs[] = {{4, 1, 2, 0},  {5, 3, 1, 0},  {8, 4, 2, 0},  {9, 2, 1, 2},
                      {11, 2, 1, 0}, {12, 6, 1, 0}, {13, 8, 2, 0}, {16, 8, 1, 0},
                      {16, 3, 2, 1}, {6, 2, 1, 0},  {16, 8, 2, 0}, {7, 1, 1, 5},
                      {4, 2, 1, 0},  {4, 3, 1, 1}};
  const Dims shapes[] = {{1, 1032, 520, "M = 1"},          {13, 264, 1000, "M = 13, mma.sync"},
                         {16, 1448, 72, "M = 16, K < 64 S"}, {17, 1032, 1000, "M = 17, wgmma n32"},
                         {32, 264, 2056, "M = 32"},         {33, 1448, 520, "M = 33, wgmma n64"},
                         {47, 264, 1000, "M = 47"},         {64, 1032, 2056, "M = 64"}};
  const auto& d = kl::device_info();
  for (const Dims& sh : shapes) {
    Problem p(sh.M, sh.N, sh.K, 5);
    const auto* r = rung(11);
    ASSERT_NE(r, nullptr);
    KL_SKIP_UNLESS_SM90A(r->supports(p.args(), d));
    for (const Cfg& c : cfgs) {
      p.poison();
      kl::hopper_gemm::gemm_bf16_decode_tma_splitk_launch_forced(p.args(), c.T, c.S, c.mode, c.pfx, 0);
      const std::string what = "rung 11 forced T=" + std::to_string(c.T) + " S=" +
                               std::to_string(c.S) + " ring=" + std::to_string(c.mode) + " pfx=" +
                               std::to_string(c.pfx) + " at " +
                               std::to_string(sh.M) + "x" + std::to_string(sh.N) + "x" +
                               std::to_string(sh.K);
      sync_or_die(what);
      const std::string e = p.check(p.result());
      EXPECT_TRUE(e.empty()) << "[" << sh.what << "] " << what << ": " << e;
    }
  }
}

// Bitwise repeatability of the cluster reduction at the deepest splits (fixed rank order).
TEST(GemmBf16Hopper, DecodeSplitKForcedDeterministic) {
  KL_REQUIRE_GPU();
  for (int M : {5, 20, 64}) {
    Problem p(M, 1032, 4104, 9);
    KL_SKIP_UNLESS_SM90A(rung(11)->supports(p.args(), kl::device_info()));
    for (int T : {13, 4})  // T = 4: the two warpgroups' k halves summed in a fixed order
      for (int S : {3, 6, 8}) {
        const std::string at = "T=" + std::to_string(T) + " S=" + std::to_string(S);
        p.poison();
        kl::hopper_gemm::gemm_bf16_decode_tma_splitk_launch_forced(p.args(), T, S, 1, 2, 0);
        sync_or_die("determinism 1, " + at);
        const auto c1 = p.result();
        p.poison();
        kl::hopper_gemm::gemm_bf16_decode_tma_splitk_launch_forced(p.args(), T, S, 1, 2, 0);
        sync_or_die("determinism 2, " + at);
        EXPECT_EQ(c1, p.result()) << "rung 11 M=" << M << " " << at << " not bitwise reproducible";
        EXPECT_TRUE(p.check(c1).empty()) << "M=" << M << " " << at << ": " << p.check(c1);
      }
  }
}

// Rung 15 (activations as the wgmma A operand, 32-row W strips over the whole K, four
// producer lanes): one strip, ragged strips (N not a multiple of 32 or 64), every activation box
// size (M <= 16 / 32 / 64), K not a multiple of 64, one k-block (warpgroup 1 has nothing: its zero
// block is still added), long K (the ring wraps many times), the bench's N = 11008 shapes (three
// CTAs per SM, 8-stage rings). Then the variants on a subset: 2-CTA multicast pairs
// (odd strip counts leave the last cluster's rank 1 without columns; M <= 8 leaves rank 1's half
// wholly past M) and one producer lane.
TEST(GemmBf16Hopper, DecodeNoSplitRungShapes) {
  KL_REQUIRE_GPU();
  const Dims cases[] = {{1, 8, 8, "M = 1, N = K = 8: one strip, boxes far larger than the tensors"},
                        {1, 264, 72, "9 strips, K tail"},
                        {7, 264, 72, "M < 8"},
                        {9, 40, 1000, "M = 9"},
                        {8, 40, 1000, "M = 8"},
                        {16, 1032, 520, "M = 16: the largest 16-row box"},
                        {17, 1032, 520, "M = 17: 32-row box"},
                        {33, 96, 4104, "M = 33: 64-row box, long K"},
                        {64, 264, 264, "M = 64"},
                        {64, 1024, 1024, "M = 64, 32 strips"},
                        {1, 4096, 1024, "M = 1, N = 4096"},
                        {5, 11008, 512, "N = 11008: 344 strips, three CTAs per SM"},
                        {1, 11008, 4096, "M = 1, N = 11008, K = 4096: 3 CTAs per SM, the ring wraps 8 times"},
                        {16, 11008, 4104, "M = 16, N = 11008, K = 4104"},
                        {64, 4096, 2048, "M = 64, N = 4096"},
                        {40, 2056, 4096, "ragged N (65 strips), long K"},
                        {20, 32000, 136, "1000 strips: more CTAs than one wave holds"}};
  for (const Dims& d : cases) {
    std::string e = run_rung(15, d.M, d.N, d.K);
    if (e.rfind("SKIP: ", 0) == 0) KL_SKIP_UNLESS_SM90A(e.substr(6));
    EXPECT_TRUE(e.empty()) << "[" << d.what << "] (" << kl::hopper_gemm::gemm_bf16_decode_no_split_describe(d.M, d.N) << ") " << e;
  }
  const Dims variant_cases[] = {{1, 264, 72, "9 strips (odd)"}, {8, 40, 1000, "M = 8"},
                                {9, 40, 1000, "M = 9"}, {33, 1032, 4104, "M = 33, long K"},
                                {64, 2056, 520, "M = 64, 65 / 33 strips"}};
  const char* names[] = {"", "multicast pairs", "one producer lane", "ring cut to a multiple of 4"};
  for (int v = 1; v <= 3; ++v)
    for (const Dims& d : variant_cases) {
      Problem p(d.M, d.N, d.K, 3);
      p.poison();
      kl::hopper_gemm::gemm_bf16_decode_no_split_launch_variant(p.args(), v, 0);
      sync_or_die(std::string("rung 15 variant ") + names[v] + " at " + d.what);
      const std::string e = p.check(p.result());
      EXPECT_TRUE(e.empty()) << "[" << d.what << "] rung 15, " << names[v] << ": " << e;
    }
  for (int M : {1, 16, 32, 64})
    for (int N : {4096, 11008})
      std::printf("[rung15 cfg] M=%d N=%d: %s\n", M, N, kl::hopper_gemm::gemm_bf16_decode_no_split_describe(M, N).c_str());
}

// Rung 15 with its strip width and cluster forced (32-128 W rows per CTA,
// clusters of 1, 2 or 4 neighbouring strips multicasting the activation box, or pairs splitting M
// and multicasting W): correct on ragged shapes (strip counts not a multiple of the cluster leave
// spare CTAs; M at or below a part's rows leaves parts wholly past M unloaded; M <= 16 with
// clusters of 4 takes a 32-row box; split-M halves wholly past M or N load clamped boxes) and
// bitwise equal to the plan's launch (the same k-blocks on the same warpgroups, in the same order,
// whatever the strip width).
TEST(GemmBf16Hopper, DecodeNoSplitStrips) {
  KL_REQUIRE_GPU();
  const Dims shapes[] = {{1, 264, 72, "9 x 32 columns, K tail"}, {8, 40, 1000, "M = 8"},
                         {9, 200, 1000, "M = 9"}, {17, 520, 1000, "M = 17"},
                         {33, 1032, 4104, "M = 33, long K"}, {64, 2056, 520, "M = 64, ragged N"},
                         {64, 11008, 1024, "M = 64, N = 11008"},
                         {40, 8, 200, "N = 8: a split-M W half wholly past N"}};
  for (const Dims& d : shapes) {
    Problem p(d.M, d.N, d.K, 9);
    KL_SKIP_UNLESS_SM90A(rung(15)->supports(p.args(), kl::device_info()));
    p.poison();
    kl::hopper_gemm::gemm_bf16_decode_no_split_launch(p.args(), 0);
    sync_or_die(std::string("rung 15 at ") + d.what);
    const auto base = p.result();
    ASSERT_TRUE(p.check(base).empty()) << "[" << d.what << "] rung 15: " << p.check(base);
    for (int bn : {32, 64, 96, 128})
      for (int cl : {1, 2, 4, 0}) {  // 0: split-M pairs
        p.poison();
        kl::hopper_gemm::gemm_bf16_decode_no_split_launch_strip(p.args(), bn, cl ? cl : 2, cl == 0, 0);
        const std::string what = "rung 15 BN=" + std::to_string(bn) +
                                 (cl ? " CL=" + std::to_string(cl) : std::string(" split-M pairs")) +
                                 " at " + d.what;
        sync_or_die(what);
        const auto c = p.result();
        EXPECT_TRUE(p.check(c).empty()) << what << ": " << p.check(c);
        EXPECT_EQ(base, c) << what << ": not bitwise equal to the plan's launch";
      }
    for (int bn : {80, 88, 104, 112}) {  // widths cut into n64 / n32 / n24 / n16 pieces
      p.poison();
      kl::hopper_gemm::gemm_bf16_decode_no_split_launch_strip(p.args(), bn, 1, false, 0);
      const std::string what = "rung 15 BN=" + std::to_string(bn) + " at " + d.what;
      sync_or_die(what);
      const auto c = p.result();
      EXPECT_TRUE(p.check(c).empty()) << what << ": " << p.check(c);
      EXPECT_EQ(base, c) << what << ": not bitwise equal to the plan's launch";
    }
  }
}

// Rung 16 (rung 15's kernel over 64-row tiles of M): M not a multiple of 64 (the last tile's box
// zero-filled past M, its rows bounded), one tile, tiles that fit one wave with strips of 32-128
// rows, more tiles than one wave (two CTAs per SM, waves), K tails, the bench's small shapes; and
// the pairs variant bitwise equal to it.
TEST(GemmBf16Hopper, SmallTilesShapes) {
  KL_REQUIRE_GPU();
  const Dims cases[] = {{1, 264, 72, "one 64-row tile, M = 1"},
                        {65, 264, 520, "M = 65: a second tile of one row"},
                        {130, 1032, 1000, "3 tiles x 33 strips of 32 rows, K tail"},
                        {1000, 1000, 1024, "16 tiles x 8 strips of 128 rows"},
                        {300, 2056, 4104, "5 tiles, 80-row strips (26 x 5 = 130 CTAs: n64 + n16), long K"},
                        {4097, 1016, 520, "65 tiles x 8 strips: several waves"},
                        {200, 8200, 136, "wide N, few tiles"}};
  for (const Dims& d : cases) {
    std::string e = run_rung(16, d.M, d.N, d.K);
    if (e.rfind("SKIP: ", 0) == 0) KL_SKIP_UNLESS_SM90A(e.substr(6));
    EXPECT_TRUE(e.empty()) << "[" << d.what << "] (" << kl::hopper_gemm::gemm_bf16_small_tiles_describe(d.M, d.N) << ") " << e;
    // Pairs of CTAs on one strip and two tiles, W multicast: the same bits (an odd tile
    // count leaves the last pair's second CTA wholly past M).
    Problem p(d.M, d.N, d.K, 4);
    p.poison();
    kl::hopper_gemm::gemm_bf16_small_tiles_launch(p.args(), 0);
    sync_or_die(std::string("rung 16 at ") + d.what);
    const auto base = p.result();
    p.poison();
    kl::hopper_gemm::gemm_bf16_small_tiles_launch_pairs(p.args(), 0);
    sync_or_die(std::string("rung 16 pairs at ") + d.what);
    const auto c = p.result();
    EXPECT_TRUE(p.check(c).empty()) << "[" << d.what << "] rung 16 pairs: " << p.check(c);
    EXPECT_EQ(base, c) << "[" << d.what << "] rung 16 pairs: not bitwise equal to rung 16";
  }
  for (auto [M, N] : {std::pair<int, int>{1024, 1024}, {1000, 1000}, {4097, 1016}, {2048, 2048}})
    std::printf("[rung16 cfg] M=%d N=%d: %s\n", M, N, kl::hopper_gemm::gemm_bf16_small_tiles_describe(M, N).c_str());
}

// Rung 15 with its ring forced to 1-4 CTAs per SM (the 4-stage minimum wraps every 4 k-blocks,
// both warpgroups each holding a slot) and 1, 2 or every W box before the PDL wait; bitwise equal
// across plans (the same k-block split between the warpgroups whatever the ring) and correct.
TEST(GemmBf16Hopper, DecodeNoSplitForcedRings) {
  KL_REQUIRE_GPU();
  const Dims shapes[] = {{1, 1032, 520, "M = 1"}, {16, 264, 4104, "M = 16, long K"},
                         {17, 1448, 1000, "M = 17"}, {47, 264, 2056, "M = 47"},
                         {64, 1032, 4104, "M = 64, long K"}};
  const std::pair<int, int> plans[] = {{1, 1}, {1, 1 << 20}, {2, 2}, {3, 2}, {4, 2}, {4, 1 << 20}};
  for (const Dims& sh : shapes) {
    Problem p(sh.M, sh.N, sh.K, 5);
    KL_SKIP_UNLESS_SM90A(rung(15)->supports(p.args(), kl::device_info()));
    std::vector<uint16_t> first;
    for (auto [cps, wpre] : plans) {
      p.poison();
      kl::hopper_gemm::gemm_bf16_decode_no_split_launch_forced(p.args(), cps, wpre, 0);
      const std::string what = "rung 15 forced cps=" + std::to_string(cps) + " wpre=" +
                               std::to_string(wpre) + " at " + std::to_string(sh.M) + "x" +
                               std::to_string(sh.N) + "x" + std::to_string(sh.K);
      sync_or_die(what);
      const auto c = p.result();
      EXPECT_TRUE(p.check(c).empty()) << "[" << sh.what << "] " << what << ": " << p.check(c);
      if (first.empty()) first = c;
      else EXPECT_EQ(first, c) << "[" << sh.what << "] " << what << " differs from cps=1";
    }
  }
}

// A decode rung under programmatic dependent launch on a created stream: GEMM 2 (16x264x4096)
// consumes GEMM 1's output (16x4096x4096: long enough for GEMM 2's grid to launch
// early) as its activations, launched right behind it; both outputs poisoned (NaN) before each of
// 3 repetitions. The rung may load W before griddepcontrol.wait, the activations only after.
// GEMM 2 is checked against a CPU double product of what GEMM 1 produced.
void chained_pdl_check(int num, uint64_t seed) {
  const auto* r = rung(num);
  ASSERT_NE(r, nullptr);
  Problem p1(16, 4096, 4096, seed);
  Problem p2(16, 264, 4096, seed + 1);
  KL_SKIP_UNLESS_SM90A(r->supports(p1.args(), kl::device_info()));
  cudaStream_t st;
  KL_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  GemmBf16Args a1 = p1.args(), a2 = p2.args();
  a2.A = a1.C;  // GEMM 2 consumes GEMM 1's output
  for (int rep = 0; rep < 3; ++rep) {
    KL_CHECK(cudaMemsetAsync(p1.dC, 0xFF, size_t(16) * 4096 * 2, st));
    KL_CHECK(cudaMemsetAsync(p2.dC, 0xFF, size_t(16) * 264 * 2, st));
    r->launch(a1, st);
    r->launch(a2, st);
    KL_CHECK(cudaStreamSynchronize(st));
    const auto c1 = p1.result();
    EXPECT_TRUE(p1.check(c1).empty()) << "rung " << num << ", GEMM 1: " << p1.check(c1);
    const std::vector<uint16_t> c2 = p2.result();
    std::vector<double> ref(size_t(16) * 264);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 264; ++n) {
        double acc = 0;
        for (int k = 0; k < 4096; ++k)
          acc += double(kl::bf16_bits_to_float(c1[size_t(m) * 4096 + k])) *
                 double(kl::bf16_bits_to_float(p2.W[size_t(n) * 4096 + k]));
        ref[size_t(m) * 264 + n] = acc;
      }
    EXPECT_TRUE(kl::test::check_close(as_floats(c2), ref, {0.5, 1e-2, kl::test::kBf16RelL2},
                                      "rung " + std::to_string(num) + ", GEMM 2 (rep " +
                                          std::to_string(rep) + ")"))
        << "GEMM 2 read GEMM 1's output too early?";
  }
  cudaStreamDestroy(st);
}

TEST(GemmBf16Hopper, DecodeNoSplitChainedPDL) {
  KL_REQUIRE_GPU();
  chained_pdl_check(15, 31);
}

// Rung 16 under programmatic dependent launch with GEMM 1's output as GEMM 2's W (and as its A):
// rung 16 reads nothing before griddepcontrol.wait, so at M > 64 W may come from the previous
// kernel (the stream contract in gemm_bf16.h). GEMM 1: 256x4096x1024 (128 CTAs, long enough for
// GEMM 2 to launch under it); GEMM 2: A = rows 0..127 of C1, W = rows 128..255 of C1 (K = 4096),
// i.e. C2 = C1a x C1b^T, checked against a CPU double product of what GEMM 1 wrote. Outputs
// poisoned (NaN) before each of 3 repetitions.
TEST(GemmBf16Hopper, SmallTilesChainedPDL) {
  KL_REQUIRE_GPU();
  const auto* r = rung(16);
  ASSERT_NE(r, nullptr);
  Problem p1(256, 4096, 1024, 41);
  Problem p2(128, 128, 4096, 42);
  KL_SKIP_UNLESS_SM90A(r->supports(p1.args(), kl::device_info()));
  cudaStream_t st;
  KL_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  GemmBf16Args a1 = p1.args(), a2 = p2.args();
  a2.A = a1.C;               // rows 0..127 of C1
  a2.W = a1.C + 128 * 4096;  // rows 128..255 of C1
  for (int rep = 0; rep < 3; ++rep) {
    KL_CHECK(cudaMemsetAsync(p1.dC, 0xFF, size_t(256) * 4096 * 2, st));
    KL_CHECK(cudaMemsetAsync(p2.dC, 0xFF, size_t(128) * 128 * 2, st));
    r->launch(a1, st);
    r->launch(a2, st);
    KL_CHECK(cudaStreamSynchronize(st));
    const auto c1 = p1.result();
    EXPECT_TRUE(p1.check(c1).empty()) << "rung 16, GEMM 1: " << p1.check(c1);
    const std::vector<uint16_t> c2 = p2.result();
    std::vector<double> ref(size_t(128) * 128);
    for (int m = 0; m < 128; ++m)
      for (int n = 0; n < 128; ++n) {
        double acc = 0;
        for (int k = 0; k < 4096; ++k)
          acc += double(kl::bf16_bits_to_float(c1[size_t(m) * 4096 + k])) *
                 double(kl::bf16_bits_to_float(c1[size_t(128 + n) * 4096 + k]));
        ref[size_t(m) * 128 + n] = acc;
      }
    // |C2| ~ 6e3: an absolute slack of 10 on top of the relative bound.
    EXPECT_TRUE(kl::test::check_close(as_floats(c2), ref, {10.0, 1e-2, kl::test::kBf16RelL2},
                                      "rung 16, GEMM 2 (rep " + std::to_string(rep) + ")"))
        << "GEMM 2 read GEMM 1's output too early?";
  }
  cudaStreamDestroy(st);
}

TEST(GemmBf16Hopper, DecodeSplitKChainedPDL) {
  KL_REQUIRE_GPU();
  chained_pdl_check(11, 21);
}

// Rung 12 (and 18, 19, which launch the same way) under programmatic dependent launch (the bench's
// created stream): GEMM 2 reads GEMM 1's output as its A, launched right behind it without a sync;
// every thread of the rung waits for the previous grid before touching global memory, so GEMM 2
// must see all of GEMM 1's C (poisoned to NaN before each repetition; GEMM 2's CTAs can start on
// the SMs GEMM 1 leaves free). Sampled rows (every 37th and the last) against a CPU double product
// of the bf16 inputs.
void chained_pdl_tma_store(int num) {
  std::string why;
  if (!hopper_here(&why)) GTEST_SKIP() << why;
  const auto* r = rung(num);
  ASSERT_NE(r, nullptr);
  const int M = 2048, N1 = 2048, K1 = 1024, N2 = 264;
  Problem p1(M, N1, K1, 31);  // 128 tiles of 128x256 (rung 18: 256 of 128x128, 19: 512 of 128x64)
  Problem p2(M, N2, N1, 32);
  ASSERT_EQ(r->supports(p1.args(), kl::device_info()), "");
  cudaStream_t st;
  KL_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  GemmBf16Args a1 = p1.args(), a2 = p2.args();
  a2.A = a1.C;
  std::vector<int> rows;
  for (int m = 0; m < M; m += 37) rows.push_back(m);
  rows.push_back(M - 1);
  for (int rep = 0; rep < 3; ++rep) {
    KL_CHECK(cudaMemsetAsync(p1.dC, 0xFF, size_t(M) * N1 * 2, st));
    KL_CHECK(cudaMemsetAsync(p2.dC, 0xFF, size_t(M) * N2 * 2, st));
    r->launch(a1, st);
    r->launch(a2, st);
    KL_CHECK(cudaStreamSynchronize(st));
    const auto c1 = p1.result(), c2 = p2.result();
    std::vector<float> got1, got2;
    std::vector<double> ref1, ref2;
    for (int m : rows) {
      for (int n = 0; n < N1; ++n) {
        double acc = 0;
        for (int k = 0; k < K1; ++k)
          acc += double(kl::bf16_bits_to_float(p1.A[size_t(m) * K1 + k])) *
                 double(kl::bf16_bits_to_float(p1.W[size_t(n) * K1 + k]));
        got1.push_back(kl::bf16_bits_to_float(c1[size_t(m) * N1 + n]));
        ref1.push_back(acc);
      }
      for (int n = 0; n < N2; ++n) {
        double acc = 0;
        for (int k = 0; k < N1; ++k)
          acc += double(kl::bf16_bits_to_float(c1[size_t(m) * N1 + k])) *
                 double(kl::bf16_bits_to_float(p2.W[size_t(n) * N1 + k]));
        got2.push_back(kl::bf16_bits_to_float(c2[size_t(m) * N2 + n]));
        ref2.push_back(acc);
      }
    }
    const std::string at =
        " on the sampled rows (rung " + std::to_string(num) + ", rep " + std::to_string(rep) + ")";
    auto where = [&](int n_cols) {
      return [&rows, n_cols](size_t i) {
        return "C[" + std::to_string(rows[i / n_cols]) + "][" + std::to_string(i % n_cols) + "]";
      };
    };
    EXPECT_TRUE(kl::test::check_close(got1, ref1, {0.1, 1e-2, kl::test::kBf16RelL2}, "GEMM 1" + at,
                                      where(N1)));
    EXPECT_TRUE(kl::test::check_close(got2, ref2, {0.5, 1e-2, kl::test::kBf16RelL2}, "GEMM 2" + at,
                                      where(N2)))
        << "GEMM 2 read GEMM 1's output too early?";
  }
  cudaStreamDestroy(st);
}

TEST(GemmBf16Hopper, ChainedPDLRung12) {
  KL_REQUIRE_GPU();
  chained_pdl_tma_store(12);
}

TEST(GemmBf16Hopper, ChainedPDLRung18) {
  KL_REQUIRE_GPU();
  chained_pdl_tma_store(18);
}

TEST(GemmBf16Hopper, ChainedPDLRung19) {
  KL_REQUIRE_GPU();
  chained_pdl_tma_store(19);
}

TEST(GemmBf16Hopper, ChainedPDLClusterRungs) {
  KL_REQUIRE_GPU();
  for (int num : {13, 20}) chained_pdl_tma_store(num);
}

__global__ void empty_kernel_11() {}

// What an empty launch costs here (the floor under every decode figure): single launches timed
// one by one with events (the harness's single-launch method), and back-to-back in a CUDA graph.
TEST(GemmBf16Hopper, EmptyLaunchCost) {
  KL_REQUIRE_GPU();
  cudaStream_t st;
  KL_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  KL_CHECK(cudaEventCreate(&e0));
  KL_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 100; ++i) empty_kernel_11<<<132, 288, 0, st>>>();
  KL_CHECK(cudaStreamSynchronize(st));
  float single = 0.f;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    KL_CHECK(cudaEventRecord(e0, st));
    empty_kernel_11<<<132, 288, 0, st>>>();
    KL_CHECK(cudaEventRecord(e1, st));
    KL_CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    KL_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    single += ms;
  }
  cudaGraph_t g;
  cudaGraphExec_t ge;
  KL_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; ++i) empty_kernel_11<<<132, 288, 0, st>>>();
  KL_CHECK(cudaStreamEndCapture(st, &g));
  KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
  KL_CHECK(cudaGraphLaunch(ge, st));
  KL_CHECK(cudaStreamSynchronize(st));
  KL_CHECK(cudaEventRecord(e0, st));
  KL_CHECK(cudaGraphLaunch(ge, st));
  KL_CHECK(cudaEventRecord(e1, st));
  KL_CHECK(cudaEventSynchronize(e1));
  float gms = 0.f;
  KL_CHECK(cudaEventElapsedTime(&gms, e0, e1));
  std::printf("[empty launch] 132x288 empty kernel: single (event pair) %.2f us, graph back-to-back "
              "%.2f us per launch\n", 1000.f * single / n, 1000.f * gms / n);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(st);
}

// ---------------------------------------------------------------- determinism, refusals
TEST(GemmBf16Hopper, Deterministic) {
  KL_REQUIRE_GPU();
  for (int num : {9, 10, 11, 13, 15, 16, 18, 19, 20}) {
    const auto* r = rung(num);
    ASSERT_NE(r, nullptr);
    Problem p(num >= 10 && num != 16 && num < 18 ? 33 : 300, 520, 1000, 7);
    if (!r->supports(p.args(), kl::device_info()).empty()) continue;
    r->launch(p.args(), 0);
    sync_or_die("determinism run 1 of rung " + std::to_string(num));
    auto c1 = p.result();
    p.poison();
    r->launch(p.args(), 0);
    sync_or_die("determinism run 2 of rung " + std::to_string(num));
    EXPECT_EQ(c1, p.result()) << "rung " << num << " not bitwise reproducible";
  }
}

// Rung 12's epilogue (four 64-column passes through two boxes used in turn) and rung 08's (one
// 64 x 256 pass) stage and store the same accumulators (same tiles, same k order), so they give
// the same bits, and both are correct: on one-tile CTAs with empty passes (200x264: the second N tile's passes 1-3
// store nothing), on CTAs with two tiles (2126x2264: 153 tiles on the H200's 132 SMs), and on CTAs
// with two or three one-k-block tiles whose last N tile has empty passes and whose last M tile's
// second warpgroup block lies wholly past M (2100x4424: 2100 % 128 = 52, 4424 % 256 = 72): every
// case where a wrong wait_group.read count would let a store still be reading a box.
TEST(GemmBf16Hopper, EpiloguePassesMatch) {
  KL_REQUIRE_GPU();
  std::string why;
  if (!hopper_here(&why)) GTEST_SKIP() << why;
  struct S3 { int M, N, K; const char* what; };
  for (const S3 s : {S3{200, 264, 72, "one tile per CTA, ragged"},
                     S3{2126, 2264, 136, "153 tiles: 21 CTAs take two"},
                     S3{2100, 4424, 64, "306 tiles, one k-block each, empty passes and blocks"}}) {
    Problem p(s.M, s.N, s.K, 11);
    ASSERT_EQ(kl::hopper_gemm::gemm_bf16_four_stages_supports(p.args(), kl::device_info()), "") << s.what;
    p.poison();
    kl::hopper_gemm::gemm_bf16_four_stages_launch(p.args(), 0);
    sync_or_die(std::string("rung 12 at ") + s.what);
    const auto c12 = p.result();
    EXPECT_EQ(p.check(c12), "") << "rung 12, " << s.what;
    ASSERT_EQ(kl::hopper_gemm::gemm_bf16_tma_store_epilogue_supports(p.args(), kl::device_info()), "") << s.what;
    p.poison();
    kl::hopper_gemm::gemm_bf16_tma_store_epilogue_launch(p.args(), 0);
    sync_or_die(std::string("rung 08 at ") + s.what);
    EXPECT_EQ(c12, p.result()) << "rung 08's one-pass epilogue differs from rung 12's, " << s.what;
  }
}

// Rung 18 (ping-pong consumers, 128x128 tiles): CTAs whose two consumers take several tiles each,
// so the turn passes back and forth many times and the ring's positions shift from tile to tile.
// One k-block per tile (the turn changes after every k-block; ragged M and N: empty store passes,
// a last M tile 52 rows deep), a K tail over four k-blocks (4 does not divide the 6-deep ring), and
// M = 1 (one tile row, every A box almost all zero fill); first a single tile (consumer 1 idle).
// Every entry against the double product, and a second launch bitwise equal to the first.
TEST(GemmBf16Hopper, PingpongManyTilesPerConsumer) {
  KL_REQUIRE_GPU();
  const auto* r = rung(18);
  ASSERT_NE(r, nullptr);
  for (const Dims s : {Dims{128, 128, 520, "one tile, 9 k-blocks: the ring wraps inside it"},
                       Dims{2100, 4424, 64, "595 tiles, one k-block each, ragged M and N"},
                       Dims{1100, 8200, 200, "585 tiles, K = 3 blocks + 8"},
                       Dims{1, 65600, 72, "M = 1: 513 tiles in one row, K tail"}}) {
    Problem p(s.M, s.N, s.K, 13);
    KL_SKIP_UNLESS_SM90A(r->supports(p.args(), kl::device_info()));
    p.poison();
    r->launch(p.args(), 0);
    sync_or_die(std::string("rung 18 at ") + s.what);
    const auto c1 = p.result();
    EXPECT_EQ(p.check(c1), "") << "rung 18, " << s.what;
    p.poison();
    r->launch(p.args(), 0);
    sync_or_die(std::string("rung 18 (second launch) at ") + s.what);
    EXPECT_EQ(c1, p.result()) << "rung 18 not bitwise reproducible, " << s.what;
  }
}

TEST(GemmBf16Hopper, Refusals) {
  KL_REQUIRE_GPU();
  const auto& d = kl::device_info();
  Problem p(64, 64, 64, 3);
  for (int num : {5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 18, 19, 20}) {
    const auto* r = rung(num);
    ASSERT_NE(r, nullptr) << "rung " << num;
    GemmBf16Args a = p.args();
    a.N = 60;  // not a multiple of 8
    EXPECT_FALSE(r->supports(a, d).empty()) << "rung " << num << " accepted N=60";
    a = p.args();
    a.K = 60;
    EXPECT_FALSE(r->supports(a, d).empty()) << "rung " << num << " accepted K=60";
    a = p.args();
    a.A = reinterpret_cast<const __nv_bfloat16*>(p.dA) + 1;  // 2-byte offset
    EXPECT_FALSE(r->supports(a, d).empty()) << "rung " << num << " accepted misaligned A";
    if (num >= 5 && num != 10 && !d.is_hopper())
      EXPECT_NE(r->supports(p.args(), d).find("sm_90a"), std::string::npos);
  }
  GemmBf16Args a = p.args();
  a.M = 65;
  EXPECT_FALSE(rung(10)->supports(a, d).empty()) << "decode rung accepted M=65";
  EXPECT_FALSE(rung(11)->supports(a, d).empty()) << "decode rung 11 accepted M=65";
  EXPECT_FALSE(rung(15)->supports(a, d).empty()) << "decode rung 15 accepted M=65";
  a = p.args();
  a.C = reinterpret_cast<__nv_bfloat16*>(reinterpret_cast<char*>(p.dC) + 2);  // bf16 pairs need 4 B
  EXPECT_FALSE(rung(15)->supports(a, d).empty()) << "decode rung 15 accepted a 2-byte aligned C";
  EXPECT_FALSE(rung(16)->supports(a, d).empty()) << "rung 16 accepted a 2-byte aligned C";
  a = p.args();
  a.K = 12;
  EXPECT_THROW(kl::gemm_bf16(a, 0), kl::BadArgument);  // entry point refuses, no launch
  a = p.args();
  a.N = 20;
  EXPECT_THROW(kl::gemm_bf16(a, 0), kl::BadArgument);
}

// The entry point on shapes each path owns (decode, Hopper ragged): it must compute them.
TEST(GemmBf16Hopper, EntryPointPicksAndComputes) {
  KL_REQUIRE_GPU();
  // One shape per decode class of the pick (M <= 8, 8 < M <= 16, 16 < M <= 32, M > 32; N >= 8192
  // with M <= 16, 16 < M <= 32 and M > 32), ragged, plus a one-wave shape (rung 19) and a Hopper
  // prefill shape.
  for (auto s : {Dims{5, 264, 72, "decode"}, Dims{12, 264, 520, "decode, 8 < M <= 16"},
                 Dims{20, 1032, 520, "decode, 16 < M <= 32"}, Dims{40, 264, 1000, "decode, M > 32"},
                 Dims{9, 8200, 136, "decode, wide N"}, Dims{20, 8200, 136, "decode, wide N, 16 < M <= 32"},
                 Dims{33, 8200, 136, "decode, wide N, M > 32"},
                 Dims{200, 264, 72, "one wave of 128x64 tiles"},
                 Dims{2126, 2264, 136, "hopper, more tiles than one wave"}}) {
    Problem p(s.M, s.N, s.K, 11);
    GemmBf16Args a = p.args();
    size_t wsb = kl::gemm_bf16_workspace_bytes(a.M, a.N, a.K, kl::device_info());
    void* dws = nullptr;
    if (wsb) KL_CHECK(cudaMalloc(&dws, wsb));
    a.workspace = dws, a.workspace_bytes = wsb;
    const auto* picked = kl::gemm_bf16_pick(a, kl::device_info());
    ASSERT_NE(picked, nullptr);
    // On the H200 the decode classes rung 15 leads (N < 8192, or M > 16) must get it.
    std::string why;
    if (hopper_here(&why) && s.M <= 64 && (s.N < 8192 || s.M > 16))
      EXPECT_EQ(picked->number, 15) << "[" << s.what << "] auto picked rung " << picked->number;
    // ... and M > 64 shapes whose 128 x 64 tiles fit one CTA per SM must get rung 19, others not.
    if (hopper_here(&why) && s.M > 64) {
      const bool one_wave = static_cast<long long>((s.M + 127) / 128) * ((s.N + 63) / 64) <= kl::device_info().sms;
      EXPECT_EQ(picked->number == 19, one_wave) << "[" << s.what << "] auto picked rung " << picked->number;
    }
    p.poison();
    kl::gemm_bf16(a, 0);
    sync_or_die("gemm_bf16 entry point (picked rung " + std::to_string(picked->number) + ")");
    std::string e = p.check(p.result());
    EXPECT_TRUE(e.empty()) << "[" << s.what << "] auto picked rung " << picked->number << ": " << e;
    if (dws) cudaFree(dws);
  }
}

}  // namespace
