// tools/dec_trace.cu — where the fixed cost of rung 03's split-KV decode step goes: an in-kernel
// timeline (kernels/attention/dec_trace.cuh) of every block of the launch, from %globaltimer marks
// written by consumer thread 0 of each block.
//
// Per shape: bench_attention's inputs (AttentionInputs, bench/attention_check.h), copies rotated over
// more than 3x the L2 (rotation_copies(), so K and V come from DRAM), 20 warm-up launches of rung 03 (from the registry), then 10 launches,
// each with the trace cleared before it, a cudaEvent pair around it and the trace read back after
// it. For each launch every mark is taken relative to the earliest e0 of the launch, then reduced
// over blocks to min / median / max (e6 over the merging blocks only); the table prints the median
// of each of those over the 10 launches, in microseconds, plus the event time of the launch (which
// also holds the launch latency and the host's submission gap: launches are isolated here, each
// after a synchronize). Below the table: the first timed launch's raw marks of blocks 0-3.
//   e0 after pdl_wait             e1 first K/V tile landed      e2 KV loop done
//   e3 the 4 warps' O, m, l in smem (the merge reads them next)
//   e4 partial (or O) stored (+ fence and barrier on the pieces that do not merge)
//   e5 flag released (pieces that do not merge) / the other pieces' flags acquired (the merger)
//   e6 the block's merge of the pieces done (merging blocks only)
//
// Build (the trace is compiled in only with the option; the default build has no trace code):
//   cmake -S . -B build-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
//         -DKL_DEC_TRACE=ON
//   ninja -C build-trace dec_trace
// Run:
//   build-trace/dec_trace                                  # the three default shapes
//   build-trace/dec_trace B=8,Hkv=32 Skv=131072            # two shapes; omitted dims default to
//                                                          # B=1,Hq=32,Hkv=8,Sq=1,Skv=4096,D=128,causal=1
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench/attention_check.h"
#include "bench/harness.h"
#include "tools/trace_table.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_internal.h"

#ifndef KL_DEC_TRACE
#error "tools/dec_trace.cu needs a trace build: configure with -DKL_DEC_TRACE=ON"
#endif

namespace {

using namespace kl;
using namespace kl::bench;
using namespace kl::trace;

const std::vector<std::string> kDims = {"B", "Hq", "Hkv", "Sq", "Skv", "D", "causal"};
const std::map<std::string, long long> kDefaults = {{"B", 1},    {"Hq", 32}, {"Hkv", 8},    {"Sq", 1},
                                                    {"Skv", 4096}, {"D", 128}, {"causal", 1}};
const std::vector<std::string> kDefaultShapes = {"B=1,Hq=32,Hkv=8,Skv=4096", "B=1,Hq=32,Hkv=32,Skv=4096",
                                                 "B=1,Hq=32,Hkv=8,Skv=32768"};
constexpr int kWarmup = 20, kLaunches = 10;
constexpr int kMarks = 7;  // e0-e6; slot 7 is the block tag
const char* const kMarkNames[kMarks] = {
    "e0 after pdl_wait",          "e1 first K/V tile landed", "e2 KV loop done",
    "e3 warps' O/m/l in smem",    "e4 partial/O stored",        "e5 flag out / flags in",
    "e6 merge done (mergers)"};
constexpr unsigned long long kMergedBit = 1ull << 31;
const TraceLayout kLayout = {"dec_trace", kMarks, kDecTraceSlots, kMarkNames};
static_assert(kMarks < kDecTraceSlots && kMarks <= kTraceMaxMarks, "marks and the tag fit a row");

void trace_shape(const Shape& sh, const Rung<AttentionArgs>& r3, const DeviceInfo& dev, cudaStream_t stream) {
  const AttentionArgs shape = attention_shape(sh);
  const size_t set_bytes = 2 * (attention_q_elems(shape) + 2 * attention_kv_elems(shape));
  const int copies = rotation_copies(set_bytes, dev, false);
  const AttentionInputs in(shape, copies, 0x5eed, stream);
  auto args_for = [&](int i) { return in.args(i); };
  const std::string why = r3.supports(args_for(0), dev);
  KL_REQUIRE(why.empty(), "dec_trace: rung 03 does not run " << sh.str() << ": " << why);
  const Attn03DecodeGrid g = attn03_decode_grid(args_for(0));
  const long long blocks = g.tiles * g.splits;
  const int traced = static_cast<int>(std::min<long long>(blocks, kDecTraceBlocks));

  for (int i = 0; i < kWarmup; ++i) r3.launch(args_for(i), stream);
  std::vector<unsigned long long> first;
  // r3.launch, not launch_checked: supports() ran above, so only the launcher's host work is timed
  const std::vector<LaunchStats> runs =
      traced_launches(kLayout, kLaunches, traced, stream, [&](int j) { r3.launch(args_for(kWarmup + j), stream); },
                      attn03_trace_clear, attn03_trace_dump, first);

  std::printf("%s\n", sh.str().c_str());
  std::printf("  grid %lld blocks = %lld tiles x %d splits (%d SMs)%s; K+V %.1f MB, %d input copies rotated (%.0f MB, "
              "L2 %.0f MB); %d warm-up + %d traced launches\n",
              blocks, g.tiles, g.splits, dev.sms, traced < blocks ? " (the first ones traced)" : "", 4e-6 * in.nKV, copies,
              1e-6 * set_bytes * copies, 1e-6 * dev.l2_bytes, kWarmup, kLaunches);
  print_table(kLayout, runs);
  print_raw(kLayout, first, traced, [](unsigned long long t) {
    char s[64];
    std::snprintf(s, sizeof s, "0x%08llx (block %llu%s)", t, t & (kMergedBit - 1), t & kMergedBit ? ", merged" : "");
    return std::string(s);
  });
  std::printf("\n");
}

int run(int argc, char** argv) {
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "-h" || s == "--help") {
      std::printf("usage: dec_trace [SHAPE ...]\n  SHAPE: B=..,Hq=..,Hkv=..,Sq=..,Skv=..,D=..,causal=.. (omitted dims: "
                  "B=1,Hq=32,Hkv=8,Sq=1,Skv=4096,D=128,causal=1)\n  default: %s ; %s ; %s\n",
                  kDefaultShapes[0].c_str(), kDefaultShapes[1].c_str(), kDefaultShapes[2].c_str());
      return 0;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) shapes = kDefaultShapes;
  std::vector<Shape> parsed;
  for (const auto& s : shapes) {  // bad shapes: exit 2 before any CUDA call
    parsed.push_back(parse_shape(s, kDims, kDefaults));
    KL_REQUIRE(attention_is_decode(attention_shape(parsed.back())),
               "dec_trace: " << s << " is not a decode shape (Sq must be <= 16)");
  }

  const Rung<AttentionArgs>* r3 = find_rung(attention_rungs(), "3");
  KL_REQUIRE(r3, "dec_trace: no rung 3 in attention_rungs()");
  const DeviceInfo& dev = device_info();
  print_banner(dev);
  Stream stream;
  ramp_clocks();
  std::printf("dec_trace: rung %02d (%s) decode timeline, %%globaltimer marks of consumer thread 0 per block\n\n",
              r3->number, r3->name);
  for (const Shape& sh : parsed) trace_shape(sh, *r3, dev, stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
