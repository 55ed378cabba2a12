// kernels/common/parallel.h — the one host-side parallel loop (CPU references, validation of
// 100M-element outputs). Header-only, no CUDA.
#pragma once
#include <algorithm>
#include <functional>
#include <thread>
#include <vector>

namespace kl {

// Runs f(begin, end) over [0, n) in up to min(32, hardware_concurrency()) contiguous chunks, one
// thread each, and joins them. Chunk c covers [c * per, (c + 1) * per), so a caller that keeps one
// partial result per chunk and merges them in chunk order gets the same answer on every run.
// Below `serial_below` items the loop runs on the calling thread (thread start-up would cost more
// than the work).
inline int parallel_chunks(long long n, long long serial_below = 1LL << 18) {
  if (n < serial_below) return 1;
  const unsigned hw = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::min<long long>(hw, n));
}

inline void parallel_for(long long n, const std::function<void(long long, long long)>& f,
                         long long serial_below = 1LL << 18) {
  const int t = parallel_chunks(n, serial_below);
  if (t <= 1) {
    if (n > 0) f(0, n);
    return;
  }
  const long long per = (n + t - 1) / t;
  std::vector<std::thread> ts;
  for (int i = 0; i < t; ++i) {
    const long long b = i * per, e = std::min(n, b + per);
    if (b < e) ts.emplace_back(f, b, e);
  }
  for (auto& th : ts) th.join();
}

}  // namespace kl
