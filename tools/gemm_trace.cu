// tools/gemm_trace.cu — where the time of gemm_bf16 rung 11's decode GEMM goes: an in-kernel timeline
// (the K11_MARK points of kernels/gemm_bf16/11_decode_tma_splitk.cu) of every CTA of a launch.
//
// Per shape: bench_gemm_bf16's inputs (GemmInputs, bench/gemm_inputs.h), copies rotated over more
// than 3x the L2 (W comes from DRAM), 20 warm-up launches of rung 11 (its own plan, or a forced
// T,S,ring), then 10 launches, each isolated (a synchronize before it), with the trace cleared before
// it and a cudaEvent pair around it. Marks are relative to the launch's earliest e0, reduced over the
// CTAs to min / median / max; the table prints the median of each over the 10 launches (us).
//   e0 entry (barriers initialized)   e1 first stage landed (consumer)   e2 mainloop done
//   e3 partial parked in smem         e4 first cluster barrier passed     e5 own rows reduced + stored
//   e6 exit (second cluster barrier)  e7 producer's last TMA issued
//
// Build (trace builds only; the default build has no trace code):
//   cmake -S . -B build-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
//         -DKL_DEC_TRACE=ON
//   ninja -C build-trace gemm_trace
// Run:
//   build-trace/gemm_trace                          # the decode shapes M = 1 / 64 at 4096x4096
//   build-trace/gemm_trace 64x4096x4096 T=4,S=2,ring=1 1x11008x4096
// A "T=..,S=..,ring=.." argument forces rung 11's configuration for the shapes after it.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/gemm_inputs.h"
#include "bench/harness.h"
#include "kernels/gemm_bf16/gemm_bf16.h"
#include "kernels/gemm_bf16/hopper_gemm.cuh"
#include "tools/trace_table.h"

#ifndef KL_DEC_TRACE
#error "tools/gemm_trace.cu needs a trace build: configure with -DKL_DEC_TRACE=ON"
#endif

namespace {

using namespace kl;
using namespace kl::bench;
using namespace kl::trace;

constexpr int kWarmup = 20, kLaunches = 10, kMarks = 8;
const char* const kMarkNames[kMarks] = {"e0 entry",         "e1 first stage landed", "e2 mainloop done",
                                        "e3 partial parked", "e4 cluster barrier 1",  "e5 rows reduced+stored",
                                        "e6 exit",          "e7 producer last TMA"};
const TraceLayout kLayout = {"gemm_trace", kMarks, hopper_gemm::kGemm11TraceSlots, kMarkNames};
static_assert(kMarks < hopper_gemm::kGemm11TraceSlots && kMarks <= kTraceMaxMarks, "marks and the tag fit a row");

struct Forced { int T = 0, S = 0, ring = 0; };  // T = 0: rung 11's own plan

void trace_shape(const Shape& sh, const Forced& f, const Rung<GemmBf16Args>& r11, const DeviceInfo& dev,
                 cudaStream_t stream) {
  const int M = static_cast<int>(sh["M"]), N = static_cast<int>(sh["N"]), K = static_cast<int>(sh["K"]);
  const size_t set_bytes = 2 * (size_t(M) * K + size_t(N) * K);
  const int copies = rotation_copies(set_bytes, dev, false);
  const GemmInputs in(M, N, K, copies, 0x5eed, dev, stream);
  DeviceBuffer dC(2 * size_t(M) * N);
  auto args_for = [&](int i) { return in.args(i, dC.as<__nv_bfloat16>()); };
  const std::string why = r11.supports(args_for(0), dev);
  KL_REQUIRE(why.empty(), "gemm_trace: rung 11 does not run " << sh.str() << ": " << why);
  auto launch = [&](const GemmBf16Args& a) {
    if (f.T > 0) hopper_gemm::launch_11_forced(a, f.T, f.S, f.ring, 0, stream);
    else r11.launch(a, stream);
  };
  const int grid = f.T > 0 ? hopper_gemm::grid_11_forced(M, N, K, f.T, f.S, f.ring) : hopper_gemm::grid_11(M, N, K);
  const int traced = std::min(grid, hopper_gemm::kGemm11TraceBlocks);

  for (int i = 0; i < kWarmup; ++i) launch(args_for(i));
  KL_CHECK_LAUNCH();
  std::vector<unsigned long long> first;
  const std::vector<LaunchStats> runs =
      traced_launches(kLayout, kLaunches, traced, stream, [&](int j) { launch(args_for(kWarmup + j)); },
                      hopper_gemm::gemm11_trace_clear, hopper_gemm::gemm11_trace_dump, first);

  std::printf("%s  rung 11 %s\n", sh.str().c_str(),
              f.T > 0 ? ("forced T=" + std::to_string(f.T) + " S=" + std::to_string(f.S) + " ring=" +
                         std::to_string(f.ring) + "/SM")
                            .c_str()
                      : hopper_gemm::describe_11(M, N, K).c_str());
  std::printf("  grid %d CTAs (%d SMs)%s; W %.1f MB, %d input copies rotated (L2 %.0f MB); %d warm-up + %d traced "
              "launches\n",
              grid, dev.sms, traced < grid ? " (the first ones traced)" : "", 2e-6 * N * double(K), copies,
              1e-6 * dev.l2_bytes, kWarmup, kLaunches);
  print_table(kLayout, runs);
  print_raw(kLayout, first, traced, [](unsigned long long t) {
    char s[64];
    std::snprintf(s, sizeof s, "block %llu rank %llu", t & 0xffffff, t >> 24);
    return std::string(s);
  });
  std::printf("\n");
}

int run(int argc, char** argv) {
  const std::vector<std::string> dims = {"M", "N", "K"};
  std::vector<std::pair<Shape, Forced>> todo;
  Forced f;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "-h" || s == "--help") {
      std::printf("usage: gemm_trace [MxNxK | T=..,S=..,ring=.. ...]\n  default: 1x4096x4096 64x4096x4096\n");
      return 0;
    }
    if (s.rfind("T=", 0) == 0) {  // bad flags: exit 2 before any CUDA call
      KL_REQUIRE(std::sscanf(s.c_str(), "T=%d,S=%d,ring=%d", &f.T, &f.S, &f.ring) == 3 && f.T >= 4 &&
                     f.T <= 16 && f.S >= 1 && f.S <= 8 && (f.ring == 1 || f.ring == 2),
                 "gemm_trace: '" << s << "': expected T=4..16,S=1..8,ring=1|2");
      continue;
    }
    todo.push_back({parse_shape(s, dims, {}), f});
  }
  if (todo.empty())
    for (const char* s : {"1x4096x4096", "64x4096x4096"}) todo.push_back({parse_shape(s, dims, {}), f});
  for (const auto& t : todo)
    KL_REQUIRE(t.first["M"] >= 1 && t.first["M"] <= 64, "gemm_trace: " << t.first.str() << ": rung 11 takes M <= 64");

  const Rung<GemmBf16Args>* r11 = find_rung(gemm_bf16_rungs(), "11");
  KL_REQUIRE(r11, "gemm_trace: no rung 11 in gemm_bf16_rungs()");
  const DeviceInfo& dev = device_info();
  print_banner(dev);
  Stream stream;
  ramp_clocks();
  std::printf("gemm_trace: rung %02d (%s) timeline, %%globaltimer marks of consumer thread 0 (e7: the producer) "
              "per CTA\n\n", r11->number, r11->name);
  for (const auto& t : todo) trace_shape(t.first, t.second, *r11, dev, stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
