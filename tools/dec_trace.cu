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
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_internal.h"

#ifndef KL_DEC_TRACE
#error "tools/dec_trace.cu needs a trace build: configure with -DKL_DEC_TRACE=ON"
#endif

namespace {

using namespace kl;
using namespace kl::bench;

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

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One launch reduced over its blocks (us after the launch's earliest e0; NaN: no block reached it).
struct LaunchStats {
  double event_us = 0, span_us = 0;
  int n[kMarks] = {};
  double lo[kMarks], mid[kMarks], hi[kMarks];
  unsigned long long step_ns = 0;  // smallest gap between two distinct marks (the timer's granularity, at most)
};

unsigned long long earliest_e0(const std::vector<unsigned long long>& tr, int nblocks) {
  unsigned long long t0 = std::numeric_limits<unsigned long long>::max();
  for (int b = 0; b < nblocks; ++b)
    if (tr[size_t(b) * kDecTraceSlots] != 0) t0 = std::min(t0, tr[size_t(b) * kDecTraceSlots]);
  KL_REQUIRE(t0 != std::numeric_limits<unsigned long long>::max(), "dec_trace: no block recorded e0 (not a trace build?)");
  return t0;
}

LaunchStats reduce_launch(const std::vector<unsigned long long>& tr, int nblocks, float event_ms) {
  LaunchStats s;
  s.event_us = 1e3 * event_ms;
  const unsigned long long t0 = earliest_e0(tr, nblocks);
  unsigned long long last = t0;
  std::vector<unsigned long long> all;
  for (int e = 0; e < kMarks; ++e) {
    std::vector<double> v;
    for (int b = 0; b < nblocks; ++b) {
      const unsigned long long t = tr[size_t(b) * kDecTraceSlots + e];
      if (t == 0) continue;  // not reached (e5 unsplit, e6 non-merging blocks)
      v.push_back(1e-3 * static_cast<double>(t - t0));
      last = std::max(last, t);
      all.push_back(t);
    }
    s.n[e] = static_cast<int>(v.size());
    s.lo[e] = v.empty() ? std::numeric_limits<double>::quiet_NaN() : *std::min_element(v.begin(), v.end());
    s.hi[e] = v.empty() ? std::numeric_limits<double>::quiet_NaN() : *std::max_element(v.begin(), v.end());
    s.mid[e] = median(v);
  }
  s.span_us = 1e-3 * static_cast<double>(last - t0);
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i)
    if (all[i] != all[i - 1] && (s.step_ns == 0 || all[i] - all[i - 1] < s.step_ns)) s.step_ns = all[i] - all[i - 1];
  return s;
}

// Median over launches of one per-launch figure (NaNs, i.e. launches where no block reached it, skipped).
template <class F>
double over_launches(const std::vector<LaunchStats>& runs, F f) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (!std::isnan(f(r))) v.push_back(f(r));
  return median(v);
}

void print_raw(const std::vector<unsigned long long>& tr, int nblocks) {
  const unsigned long long t0 = earliest_e0(tr, nblocks);
  std::printf("  first timed launch, raw marks of blocks 0-3 (ns after its earliest e0 = %%globaltimer %llu; "
              "- = not reached):\n    block", t0);
  for (int e = 0; e < kMarks; ++e) std::printf("  %7s%d", "e", e);
  std::printf("  tag\n");
  for (int b = 0; b < std::min(nblocks, 4); ++b) {
    const unsigned long long* row = &tr[size_t(b) * kDecTraceSlots];
    std::printf("    %5d", b);
    for (int e = 0; e < kMarks; ++e) {
      if (row[e] == 0) std::printf("  %8s", "-");
      else std::printf("  %8lld", static_cast<long long>(row[e] - t0));  // signed: catches a mark before e0
    }
    std::printf("  0x%08llx (block %llu%s)\n", row[7], row[7] & (kMergedBit - 1),
                row[7] & kMergedBit ? ", merged" : "");
  }
}

// The table of one shape: per mark, the medians over launches of its min / median / max over
// blocks; then the event time and the in-kernel span.
void print_table(const std::vector<LaunchStats>& runs) {
  std::printf("  %-28s %6s %8s %8s %8s   (us after the launch's earliest e0; medians over launches)\n", "mark",
              "blocks", "min", "median", "max");
  for (int e = 0; e < kMarks; ++e) {
    const double n = over_launches(runs, [&](const LaunchStats& r) { return double(r.n[e]); });
    std::printf("  %-28s %6.0f", kMarkNames[e], n);
    for (double v : {over_launches(runs, [&](const LaunchStats& r) { return r.lo[e]; }),
                     over_launches(runs, [&](const LaunchStats& r) { return r.mid[e]; }),
                     over_launches(runs, [&](const LaunchStats& r) { return r.hi[e]; })}) {
      if (std::isnan(v)) std::printf(" %8s", "-");  // no block reached it (e5, e6 of an unsplit grid)
      else std::printf(" %8.2f", v);
    }
    std::printf("\n");
  }
  const auto ev = [](const LaunchStats& r) { return r.event_us; };
  double ev_lo = runs[0].event_us, ev_hi = runs[0].event_us;
  unsigned long long step = 0;
  for (const auto& r : runs) {
    ev_lo = std::min(ev_lo, r.event_us);
    ev_hi = std::max(ev_hi, r.event_us);
    if (r.step_ns && (!step || r.step_ns < step)) step = r.step_ns;
  }
  std::printf("  %-28s %6s %8.2f %8.2f %8.2f   (cudaEvent pair around the launch; min / median / max)\n",
              "launch (event time)", "", ev_lo, over_launches(runs, ev), ev_hi);
  std::printf("  %-28s %6s %8s %8.2f   (earliest e0 -> last mark of any block)\n", "in-kernel span", "", "",
              over_launches(runs, [](const LaunchStats& r) { return r.span_us; }));
  std::printf("  smallest step between distinct marks: %llu ns (the timer's granularity is at most this)\n", step);
}

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
  cudaEvent_t beg, end;
  KL_CHECK(cudaEventCreate(&beg));
  KL_CHECK(cudaEventCreate(&end));
  std::vector<LaunchStats> runs;
  std::vector<unsigned long long> tr, first;
  for (int j = 0; j < kLaunches; ++j) {
    const AttentionArgs a = args_for(kWarmup + j);
    attn03_trace_clear(stream);
    KL_CHECK(cudaEventRecord(beg, stream));
    r3.launch(a, stream);  // not launch_checked: supports() ran above, so only the launcher's host work is timed
    KL_CHECK(cudaEventRecord(end, stream));
    KL_CHECK(cudaEventSynchronize(end));
    float ms = 0.f;
    KL_CHECK(cudaEventElapsedTime(&ms, beg, end));
    attn03_trace_dump(tr, traced);
    runs.push_back(reduce_launch(tr, traced, ms));
    if (j == 0) first = tr;
  }
  KL_CHECK(cudaEventDestroy(beg));
  KL_CHECK(cudaEventDestroy(end));

  std::printf("%s\n", sh.str().c_str());
  std::printf("  grid %lld blocks = %lld tiles x %d splits (%d SMs)%s; K+V %.1f MB, %d input copies rotated (%.0f MB, "
              "L2 %.0f MB); %d warm-up + %d traced launches\n",
              blocks, g.tiles, g.splits, dev.sms, traced < blocks ? " (the first ones traced)" : "", 4e-6 * in.nKV, copies,
              1e-6 * set_bytes * copies, 1e-6 * dev.l2_bytes, kWarmup, kLaunches);
  print_table(runs);
  print_raw(first, traced);
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
