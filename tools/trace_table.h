// tools/trace_table.h — the host side shared by the in-kernel timeline tools (tools/dec_trace.cu,
// tools/gemm_trace.cu): each traced block writes `marks` %globaltimer words (ns; 0 = not reached)
// and one tag word into a row of `slots` words; a launch is reduced to min / median / max over its
// blocks of each mark relative to the launch's earliest e0, and a table prints the medians of those
// over the launches.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/common/check.h"

namespace kl {
namespace trace {

constexpr int kTraceMaxMarks = 8;

struct TraceLayout {
  const char* tool;           // for messages
  int marks;                  // e0 .. e(marks-1); slot `marks` is the tag
  int slots;                  // words per block row (> marks)
  const char* const* names;   // one per mark
};

inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One launch reduced over its blocks (us after the launch's earliest e0; NaN: no block reached it).
struct LaunchStats {
  double event_us = 0, span_us = 0;
  int n[kTraceMaxMarks] = {};
  double lo[kTraceMaxMarks], mid[kTraceMaxMarks], hi[kTraceMaxMarks];
  unsigned long long step_ns = 0;  // smallest gap between two distinct marks (the timer's granularity, at most)
};

inline unsigned long long earliest_e0(const TraceLayout& L, const std::vector<unsigned long long>& tr, int nblocks) {
  unsigned long long t0 = std::numeric_limits<unsigned long long>::max();
  for (int b = 0; b < nblocks; ++b)
    if (tr[size_t(b) * L.slots] != 0) t0 = std::min(t0, tr[size_t(b) * L.slots]);
  KL_REQUIRE(t0 != std::numeric_limits<unsigned long long>::max(), L.tool << ": no block recorded e0 (not a trace build?)");
  return t0;
}

inline LaunchStats reduce_launch(const TraceLayout& L, const std::vector<unsigned long long>& tr, int nblocks,
                                 float event_ms) {
  LaunchStats s;
  s.event_us = 1e3 * event_ms;
  const unsigned long long t0 = earliest_e0(L, tr, nblocks);
  unsigned long long last = t0;
  std::vector<unsigned long long> all;
  for (int e = 0; e < L.marks; ++e) {
    std::vector<double> v;
    for (int b = 0; b < nblocks; ++b) {
      const unsigned long long t = tr[size_t(b) * L.slots + e];
      if (t == 0) continue;  // not reached by this block
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

// `tag(row)`: how the tool describes a block's tag word (slot L.marks).
template <class Tag>
void print_raw(const TraceLayout& L, const std::vector<unsigned long long>& tr, int nblocks, Tag tag) {
  const unsigned long long t0 = earliest_e0(L, tr, nblocks);
  std::printf("  first timed launch, raw marks of blocks 0-3 (ns after its earliest e0 = %%globaltimer %llu; "
              "- = not reached):\n    block", t0);
  for (int e = 0; e < L.marks; ++e) std::printf("  %7s%d", "e", e);
  std::printf("  tag\n");
  for (int b = 0; b < std::min(nblocks, 4); ++b) {
    const unsigned long long* row = &tr[size_t(b) * L.slots];
    std::printf("    %5d", b);
    for (int e = 0; e < L.marks; ++e) {
      if (row[e] == 0) std::printf("  %8s", "-");
      else std::printf("  %8lld", static_cast<long long>(row[e] - t0));  // signed: catches a mark before e0
    }
    std::printf("  %s\n", tag(row[L.marks]).c_str());
  }
}

// The table of one shape: per mark, the medians over launches of its min / median / max over
// blocks; then the event time and the in-kernel span.
inline void print_table(const TraceLayout& L, const std::vector<LaunchStats>& runs) {
  std::printf("  %-28s %6s %8s %8s %8s   (us after the launch's earliest e0; medians over launches)\n", "mark",
              "blocks", "min", "median", "max");
  for (int e = 0; e < L.marks; ++e) {
    const double n = over_launches(runs, [&](const LaunchStats& r) { return double(r.n[e]); });
    std::printf("  %-28s %6.0f", L.names[e], n);
    for (double v : {over_launches(runs, [&](const LaunchStats& r) { return r.lo[e]; }),
                     over_launches(runs, [&](const LaunchStats& r) { return r.mid[e]; }),
                     over_launches(runs, [&](const LaunchStats& r) { return r.hi[e]; })}) {
      if (std::isnan(v)) std::printf(" %8s", "-");  // no block reached it
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

// `launches` isolated, traced launches: for each j, clear() the trace, synchronize, then a cudaEvent
// pair around launch(j), dump(tr) after it, and the launch reduced to LaunchStats. `first` gets the
// first launch's raw trace (print_raw).
template <class Launch, class Clear, class Dump>
std::vector<LaunchStats> traced_launches(const TraceLayout& L, int launches, int traced, cudaStream_t stream,
                                         Launch launch, Clear clear, Dump dump,
                                         std::vector<unsigned long long>& first) {
  cudaEvent_t beg, end;
  KL_CHECK(cudaEventCreate(&beg));
  KL_CHECK(cudaEventCreate(&end));
  std::vector<LaunchStats> runs;
  std::vector<unsigned long long> tr;
  for (int j = 0; j < launches; ++j) {
    clear(stream);
    KL_CHECK(cudaStreamSynchronize(stream));
    KL_CHECK(cudaEventRecord(beg, stream));
    launch(j);
    KL_CHECK(cudaEventRecord(end, stream));
    KL_CHECK(cudaEventSynchronize(end));
    KL_CHECK(cudaGetLastError());
    float ms = 0.f;
    KL_CHECK(cudaEventElapsedTime(&ms, beg, end));
    dump(tr, traced);
    runs.push_back(reduce_launch(L, tr, traced, ms));
    if (j == 0) first = tr;
  }
  KL_CHECK(cudaEventDestroy(beg));
  KL_CHECK(cudaEventDestroy(end));
  return runs;
}

}  // namespace trace
}  // namespace kl
