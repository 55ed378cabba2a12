// tests/test_gpu_gemm_bf16_streamk14.cu — rung 14 (stream_k_tail: rung 12 + a data-parallel /
// Stream-K hybrid schedule with a deterministic workspace fixup).
//
// Every shape runs four schedules against a CPU double product of the same bf16 inputs: the
// rung's own plan; the Stream-K part forced on (so small shapes split tiles too: chains of up to ~9
// pieces per tile, ragged M/N/K tiles inside the Stream-K region, data-parallel waves mixed with
// Stream-K ranges); the one-tile variant (only the last partial wave split: with more tiles than
// SMs some CTAs have no Stream-K range); and forced off (rung 12's schedule). Bitwise determinism
// over repeated launches WITHOUT clearing the workspace (also with rung 04 and other shapes sharing
// it, also replayed from a CUDA graph, i.e. the same epoch twice); refusals with a reason. Messages
// name the schedule, the shape, the plan and the first bad entries.
// On a non-Hopper GPU the tests skip with the reason supports() gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kl/check.h"
#include "kl/dtype.h"
#include "kl/gemm_bf16.h"
#include "kernels/gemm_bf16/hopper_gemm.cuh"
#include "tests/gemm_bf16_test_util.h"
#include "tests/gpu_test.h"

namespace {

using kl::GemmBf16Args;
namespace hg = kl::hopper_gemm;

struct Dims {
  int M, N, K;
  const char* what;
};
std::string str(int M, int N, int K) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

// Every problem here is made with_workspace = true: sized by gemm_bf16_workspace_bytes, zeroed once.
using Problem = kl::test::GemmProblem;
using kl::test::sync_or_die;


const kl::Rung<GemmBf16Args>* rung14() {
  for (const auto& r : kl::gemm_bf16_rungs())
    if (r.number == 14) return &r;
  return nullptr;
}

// mode 0: the registered rung (its own plan); +1 / -1: Stream-K part forced on / off.
std::string supports(const GemmBf16Args& a, int mode) {
  return mode == 0 ? rung14()->supports(a, kl::device_info())
                   : hg::gemm_bf16_stream_k_tail_supports_forced(a, kl::device_info(), mode);
}
void launch(const GemmBf16Args& a, int mode, cudaStream_t s = 0) {
  if (mode == 0) rung14()->launch(a, s);
  else hg::gemm_bf16_stream_k_tail_launch_forced(a, s, mode);
}
const char* mode_name(int mode) {
  return mode == 0 ? "plan" : mode == 2 ? "one-tile sk forced on" : mode > 0 ? "sk forced on" : "sk off";
}
std::string plan(const Problem& p, int mode) {
  return hg::gemm_bf16_stream_k_tail_describe(p.M, p.N, p.K, kl::device_info().sms, mode);
}

bool skip_reason(std::string* why) {
  const auto* r = rung14();
  if (!r) {
    *why = "rung 14 missing from gemm_bf16_rungs()";
    return false;
  }
  *why = kl::require_sm90a(kl::device_info());
  return !why->empty();
}

// Smallest first. With the Stream-K part forced on, shapes with fewer tiles than SMs split every
// tile over several CTAs (ranges shorter than a tile: multi-peer chains), the larger ones mix
// data-parallel waves with Stream-K ranges; every one has ragged M, N or K somewhere.
const Dims kShapes[] = {
    {64, 256, 16, "one tile, one partial k-block"},
    {1, 8, 8, "M = 1, N = K = 8: boxes far larger than the tensor"},
    {17, 40, 24, "small odd"},
    {200, 264, 72, "ragged M, N, K: 4 tiles x 2 k-blocks (every tile split in two when forced)"},
    {130, 136, 200, "ragged, K = 3 blocks + 8"},
    {384, 520, 1024, "9 tiles x 16 k-blocks over 132 CTAs: ~9 pieces per tile, ragged N tile"},
    {520, 1032, 1024, "25 tiles x 16: ~6 pieces per tile, ragged M and N tiles"},
    {2126, 2264, 136, "153 tiles > SMs: all in the Stream-K part (W = 1), ranges of 3-4 units"},
    {4200, 2056, 72, "297 tiles: one data-parallel wave + 165 Stream-K tiles, ragged M, N, K"},
};

TEST(GemmBf16Rung14, ShapesAllSchedules) {
  KL_REQUIRE_GPU();
  std::string why;
  if (skip_reason(&why)) GTEST_SKIP() << why;
  ASSERT_NE(rung14(), nullptr) << why;
  for (const Dims& d : kShapes) {
    Problem p(d.M, d.N, d.K, 1000 + d.M, true);
    for (int mode : {0, +1, +2, -1}) {
      const GemmBf16Args a = p.args();
      const std::string sup = supports(a, mode);
      ASSERT_TRUE(sup.empty()) << mode_name(mode) << " " << str(d.M, d.N, d.K) << ": " << sup;
      p.poison();
      launch(a, mode);
      sync_or_die(std::string("rung 14 (") + mode_name(mode) + ") at " + str(d.M, d.N, d.K));
      EXPECT_EQ(p.check(p.result()), "")
          << "[" << d.what << "] rung 14, " << mode_name(mode) << ", plan: " << plan(p, mode);
    }
  }
}

// Repeated launches give the same bits, the workspace never cleared in between; between the
// repetitions other launches (another shape, rung 04) use the SAME workspace, so the flags they
// leave behind (all consumed, 0) and their partials must not disturb rung 14's fixup.
TEST(GemmBf16Rung14, BitwiseDeterministicWorkspaceNeverCleared) {
  KL_REQUIRE_GPU();
  std::string why;
  if (skip_reason(&why)) GTEST_SKIP() << why;
  const auto& dev = kl::device_info();
  const Dims shapes[] = {{384, 520, 1024, ""}, {4200, 2056, 72, ""}, {2126, 2264, 136, ""}};
  size_t need = 0;
  for (const Dims& d : shapes) need = std::max(need, kl::gemm_bf16_workspace_bytes(d.M, d.N, d.K, dev));
  Problem owner(shapes[0].M, shapes[0].N, shapes[0].K, 5, true, need);
  std::vector<Problem*> ps;
  for (const Dims& d : shapes) ps.push_back(new Problem(d.M, d.N, d.K, 9 + d.K, true));
  const kl::Rung<GemmBf16Args>* r04 = nullptr;
  for (const auto& r : kl::gemm_bf16_rungs())
    if (r.number == 4) r04 = &r;
  for (Problem* p : ps) {
    GemmBf16Args a = p->args();
    a.workspace = owner.ws, a.workspace_bytes = owner.ws_bytes;  // one shared workspace
    p->poison();
    launch(a, +1);
    sync_or_die("rung 14 (sk forced on) first launch at " + str(p->M, p->N, p->K));
    const std::vector<uint16_t> first = p->result();
    EXPECT_EQ(p->check(first), "") << "shared workspace, plan: " << plan(*p, +1);
    for (int rep = 0; rep < 4; ++rep) {
      // Something else in the same workspace between repetitions: rung 04, and rung 14 on
      // another shape (different ranges: different flags and slots).
      Problem* other = ps[(rep + 1) % ps.size()];
      GemmBf16Args o = other->args();
      o.workspace = owner.ws, o.workspace_bytes = owner.ws_bytes;
      if (r04 && r04->supports(o, dev).empty()) r04->launch(o, 0);
      launch(o, rep % 2 ? +1 : 0);
      p->poison();
      launch(a, +1);
      sync_or_die("rung 14 (sk forced on) repeat at " + str(p->M, p->N, p->K));
      const std::vector<uint16_t> again = p->result();
      size_t diff = 0;
      for (size_t i = 0; i < again.size(); ++i) diff += again[i] != first[i];
      EXPECT_EQ(diff, 0u) << "rung 14 " << str(p->M, p->N, p->K) << " launch " << rep + 2
                          << " differs from launch 1 in " << diff << " entries";
    }
  }
  for (Problem* p : ps) delete p;
}

// A CUDA graph replays ONE captured launch, epoch included: the owner must still wait for fresh
// partials (flags reset to 0 after use), and the result must equal a direct launch's bits.
TEST(GemmBf16Rung14, GraphReplayMatchesDirect) {
  KL_REQUIRE_GPU();
  std::string why;
  if (skip_reason(&why)) GTEST_SKIP() << why;
  Problem p(384, 520, 1024, 77, true);
  GemmBf16Args a = p.args();
  launch(a, +1);
  sync_or_die("rung 14 direct launch");
  const std::vector<uint16_t> direct = p.result();
  EXPECT_EQ(p.check(direct), "");
  cudaStream_t s;
  KL_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  KL_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  launch(a, +1, s);
  KL_CHECK(cudaStreamEndCapture(s, &g));
  KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int rep = 0; rep < 3; ++rep) {
    p.poison();
    KL_CHECK(cudaGraphLaunch(ge, s));
    KL_CHECK(cudaStreamSynchronize(s));
    EXPECT_TRUE(p.result() == direct) << "graph replay " << rep << " differs from the direct launch";
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(GemmBf16Rung14, Refusals) {
  KL_REQUIRE_GPU();
  const auto& d = kl::device_info();
  const auto* r = rung14();
  ASSERT_NE(r, nullptr);
  // Workspace 256 bytes larger than needed, so the misaligned-workspace case below is refused for
  // its alignment, not its size.
  Problem p(384, 520, 1024, 3, true, kl::hopper_gemm::gemm_bf16_stream_k_tail_workspace_bytes(384, 520, 1024, d) + 256);
  for (int mode : {0, +1, +2, -1}) {
    GemmBf16Args a = p.args();
    a.N = 60;
    EXPECT_FALSE(supports(a, mode).empty()) << mode_name(mode) << " accepted N=60";
    a = p.args();
    a.K = 60;
    EXPECT_FALSE(supports(a, mode).empty()) << mode_name(mode) << " accepted K=60";
    a = p.args();
    a.A = reinterpret_cast<const __nv_bfloat16*>(p.dA) + 1;  // 2-byte offset
    EXPECT_FALSE(supports(a, mode).empty()) << mode_name(mode) << " accepted misaligned A";
    if (!d.is_hopper())
      EXPECT_NE(supports(p.args(), mode).find("sm_90a"), std::string::npos) << supports(p.args(), mode);
  }
  if (!d.is_hopper() || !kl::require_sm90a(d).empty()) return;
  // The Stream-K schedule needs the workspace: none, one byte short, misaligned -> refused with
  // the reason; rung 12's schedule (forced off) needs none.
  GemmBf16Args a = p.args();
  a.workspace = nullptr, a.workspace_bytes = 0;
  EXPECT_NE(supports(a, +1).find("workspace"), std::string::npos) << supports(a, +1);
  EXPECT_EQ(supports(a, -1), "");
  a = p.args();
  a.workspace_bytes = kl::hopper_gemm::gemm_bf16_stream_k_tail_workspace_bytes(p.M, p.N, p.K, d) - 1;
  EXPECT_NE(supports(a, +1).find("workspace"), std::string::npos) << supports(a, +1);
  a = p.args();
  a.workspace = static_cast<char*>(p.ws) + 16;
  a.workspace_bytes = p.ws_bytes - 16;  // still >= the need: only the alignment is wrong
  EXPECT_NE(supports(a, +1).find("256-byte"), std::string::npos) << supports(a, +1);
  // A shape the plan splits (4096x11008x4096 on 132 SMs): the rung itself refuses without one
  // (supports() only reads the pointers' alignment; nothing is launched).
  GemmBf16Args big = p.args();
  big.M = 4096, big.N = 11008, big.K = 4096;
  big.workspace = nullptr, big.workspace_bytes = 0;
  EXPECT_EQ(kl::gemm_bf16_workspace_bytes(big.M, big.N, big.K, d) >=
                kl::hopper_gemm::gemm_bf16_stream_k_tail_workspace_bytes(big.M, big.N, big.K, d),
            true);
  if (hg::gemm_bf16_stream_k_tail_describe(big.M, big.N, big.K, d.sms, 0).find("hybrid") != std::string::npos)
    EXPECT_NE(r->supports(big, d).find("workspace"), std::string::npos) << r->supports(big, d);
}

// The plan for the bench's prefill shapes on this device (for the doc; no check).
TEST(GemmBf16Rung14, PlanForBenchShapes) {
  KL_REQUIRE_GPU();
  const int sms = kl::device_info().sms;
  for (auto s : {Dims{2048, 2048, 2048, ""}, Dims{4096, 4096, 4096, ""}, Dims{8192, 8192, 8192, ""},
                 Dims{4096, 11008, 4096, ""}, Dims{4096, 4096, 11008, ""}})
    std::printf("[rung14 plan, %d SMs] %s: %s\n", sms, str(s.M, s.N, s.K).c_str(),
                hg::gemm_bf16_stream_k_tail_describe(s.M, s.N, s.K, sms, 0).c_str());
}

// The shape the sanitizer runs (a small case for memcheck / racecheck): the Stream-K part forced
// on (multi-peer chains, ragged N tile) and the plan, once each.
TEST(GemmBf16Rung14, SanitizerSmall) {
  KL_REQUIRE_GPU();
  std::string why;
  if (skip_reason(&why)) GTEST_SKIP() << why;
  Problem p(384, 520, 1024, 42, true);
  for (int mode : {+1, 0}) {
    p.poison();
    launch(p.args(), mode);
    sync_or_die(std::string("rung 14 (") + mode_name(mode) + ") at 384x520x1024");
    EXPECT_EQ(p.check(p.result()), "") << mode_name(mode);
  }
}

}  // namespace
