// tests/test_gpu_attention_decode.cu — the split-KV decode rungs (03's decode path, 09 on sm_90a)
// and the entry point on decode shapes: ragged caches (Skv not a multiple of the 64-key tile), GQA
// packing (1 to 16 packed rows, several 16-row tiles), B > 1, D = 64 and 128, with and without a
// workspace; bitwise determinism over repeated launches that never clear the workspace (flags
// reset themselves), across a different shape sharing the workspace, and in a replayed CUDA graph.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench/attention_check.h"
#include "bench/harness.h"
#include "kl/attention.h"
#include "tests/attention_test_util.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;
using namespace kl::bench;

using Case = kl::test::AttnCase;

const std::vector<Case> kCases = {
    {1, 32, 8, 1, 4096, 128, true},   // the bench's small cache: 8 tiles x 16 pieces of 4 key tiles
    {3, 32, 8, 1, 1000, 128, true},   // B > 1, ragged last key tile (1000 = 15 x 64 + 40)
    {2, 16, 2, 1, 4100, 128, true},   // GQA 8:1, 4 keys in the last tile
    {1, 8, 8, 1, 8191, 128, false},   // MHA: one live row per tile, many pieces, ragged
    {1, 32, 2, 2, 777, 128, true},    // 16 heads x Sq 2 = 32 packed rows: two 16-row tiles, causal
    {2, 4, 1, 16, 300, 64, true},     // Sq = 16 causal, D = 64: 64 packed rows, 4 tiles
    {1, 2, 1, 1, 1, 128, false},      // one key
    {1, 4, 4, 1, 33000, 64, true},    // long D = 64 cache: the 64-split cap
};

using Problem = kl::test::AttnProblem;

Problem make_problem(const Case& c, uint64_t seed) { return kl::test::make_attn_problem(c, seed); }

size_t ws_size(const Case& c) { return attention_workspace_bytes(c.shape(), device_info()); }

// The decode rungs to check: 03 and 09 (where supported), then the entry point (-1).
const std::vector<int> kRungs = {3, 9, -1};

void launch(int rung, const AttentionArgs& a, cudaStream_t s) {
  if (rung < 0) attention(a, s);
  else launch_checked(*find_rung(attention_rungs(), std::to_string(rung)), a, s);
}
std::string name(int rung) { return rung < 0 ? std::string("auto") : "rung " + std::to_string(rung); }
bool supported(int rung, const AttentionArgs& a) {
  return rung < 0 || find_rung(attention_rungs(), std::to_string(rung))->supports(a, device_info()).empty();
}

std::vector<uint16_t> download(const Problem& p) {
  std::vector<uint16_t> h(p.nQ);
  KL_CHECK(cudaMemcpy(h.data(), p.o.ptr, 2 * p.nQ, cudaMemcpyDeviceToHost));
  return h;
}

TEST(AttentionDecode, RungsMatchReference) {
  KL_REQUIRE_GPU();
  uint64_t seed = 777;
  kl::test::RungCoverage cov(attention_rungs(), {3, 9});
  for (const Case& c : kCases) {
    Problem p = make_problem(c, seed++);
    const size_t wsb = ws_size(c);
    DeviceBuffer ws(std::max<size_t>(wsb, 256));
    const AttentionCheck chk = attention_reference_sampled(p.args(nullptr, 0), 0, 1, 1LL << 40);  // all rows
    for (int rung : kRungs) {
      for (bool with_ws : {true, false}) {
        const AttentionArgs a = with_ws ? p.args(ws.ptr, wsb) : p.args(nullptr, 0);
        if (!supported(rung, a)) {
          const std::string why = find_rung(attention_rungs(), std::to_string(rung))->supports(a, device_info());
          std::printf("  [skip] %s on %s: %s\n", name(rung).c_str(), c.str().c_str(), why.c_str());
          cov.refused(rung, c.str(), why);
          continue;
        }
        if (rung >= 0) cov.ran(rung);
        // Garbage flags and partials (a fresh workspace is not cleared either).
        if (with_ws) KL_CHECK(cudaMemset(ws.ptr, 0xff, ws.bytes));
        poison(p.o.ptr, 2 * p.nQ);
        launch(rung, a, 0);
        KL_CHECK(cudaDeviceSynchronize());
        EXPECT_TRUE(kl::test::attention_verdict(
            attention_check_output(a, chk), a, chk,
            name(rung) + " on " + c.str() + (with_ws ? "" : " (no workspace: unsplit)")));
      }
    }
  }
  EXPECT_TRUE(cov.every_rung_ran());
}

// Repeated launches on one workspace that is never cleared: every launch gives the same bits
// (the merging piece lowers its tile's flags), also after another shape used the same workspace
// and when one captured launch is replayed by a CUDA graph (same epoch every replay).
TEST(AttentionDecode, DeterministicWithoutClearingWorkspace) {
  KL_REQUIRE_GPU();
  const Case c1 = {1, 32, 8, 1, 4100, 128, true};
  const Case c2 = {2, 16, 2, 1, 1000, 128, true};
  Problem p1 = make_problem(c1, 4242), p2 = make_problem(c2, 4343);
  const size_t wsb = std::max(ws_size(c1), ws_size(c2));
  DeviceBuffer ws(std::max<size_t>(wsb, 256));
  KL_CHECK(cudaMemset(ws.ptr, 0xff, ws.bytes));  // once: garbage, never cleared again
  const AttentionArgs a1 = p1.args(ws.ptr, wsb), a2 = p2.args(ws.ptr, wsb);
  const AttentionCheck chk1 = attention_reference_sampled(a1, 0, 1, 1LL << 40);
  Stream st;
  for (int rung : kRungs) {
    if (!supported(rung, a1)) continue;
    poison(p1.o.ptr, 2 * p1.nQ);
    launch(rung, a1, st);
    KL_CHECK(cudaStreamSynchronize(st));
    EXPECT_TRUE(kl::test::attention_verdict(attention_check_output(a1, chk1), a1, chk1,
                                            name(rung) + " on " + c1.str()));
    const std::vector<uint16_t> first = download(p1);
    auto expect_same = [&](const std::string& when) {
      const std::vector<uint16_t> again = download(p1);
      size_t diff = 0;
      for (size_t i = 0; i < first.size(); ++i) diff += first[i] != again[i];
      EXPECT_EQ(diff, 0u) << name(rung) << " on " << c1.str() << ": " << when << " differs from the first launch in "
                          << diff << " of " << first.size() << " elements";
    };
    for (int run = 1; run <= 4; ++run) {
      poison(p1.o.ptr, 2 * p1.nQ, st);
      launch(rung, a1, st);
      KL_CHECK(cudaStreamSynchronize(st));
      expect_same("launch " + std::to_string(run));
    }
    // Back to back without a host sync in between (the next launch may start as this one drains).
    for (int run = 0; run < 3; ++run) launch(rung, a1, st);
    KL_CHECK(cudaStreamSynchronize(st));
    expect_same("3 back-to-back launches");
    if (supported(rung, a2)) {
      launch(rung, a2, st);  // another shape on the same workspace
      launch(rung, a1, st);
      KL_CHECK(cudaStreamSynchronize(st));
      expect_same("a launch after another shape used the workspace");
    }
    // One launch captured once, replayed three times (the same epoch each replay).
    cudaGraph_t g;
    cudaGraphExec_t ge;
    KL_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    launch(rung, a1, st);
    KL_CHECK(cudaStreamEndCapture(st, &g));
    KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int rep = 0; rep < 3; ++rep) {
      poison(p1.o.ptr, 2 * p1.nQ, st);
      KL_CHECK(cudaGraphLaunch(ge, st));
      KL_CHECK(cudaStreamSynchronize(st));
      expect_same("graph replay " + std::to_string(rep));
    }
    KL_CHECK(cudaGraphExecDestroy(ge));
    KL_CHECK(cudaGraphDestroy(g));
  }
}

// The entry point picks a decode rung for Sq <= 16 and names it.
TEST(AttentionDecode, EntryPointPicksADecodeRung) {
  KL_REQUIRE_GPU();
  AttentionArgs a;
  alignas(16) static __nv_bfloat16 dummy[8];
  a.Q = a.K = a.V = dummy;
  a.O = dummy;
  a.B = 1, a.Hq = 32, a.Hkv = 8, a.Sq = 1, a.Skv = 4096, a.D = 128, a.causal = true;
  const Rung<AttentionArgs>* r = attention_pick(a, device_info());
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->number == 3 || r->number == 9) << "picked rung " << r->number;
}

}  // namespace
