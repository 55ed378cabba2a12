// include/kl/registry.h — the one table of rungs per family that every tool reads.
//
// Each family header declares `const std::vector<kl::Rung<Args>>& <family>_rungs();` The bench,
// the tests, --list, the docs tables and the plot all take a rung's number, name and change from
// there (and from the JSON the bench writes): a rung's name is written in exactly one place.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kl/check.h"
#include "kl/device.h"

namespace kl {

template <class Args>
struct Rung {
  int number;          // 0 = naive; each later rung changes one thing
  const char* name;    // short identifier, e.g. "warp_per_row"
  const char* change;  // the one change from the parent rung, in a phrase
  // "" when this rung can run `args` on device `d`, otherwise why not (shape, alignment, arch).
  std::string (*supports)(const Args& args, const DeviceInfo& d);
  // Launches on `stream`. Never synchronizes, never allocates (a rung that instantiates a CUDA graph
  // once per argument set says so in its header): capturable in a CUDA graph.
  void (*launch)(const Args& args, cudaStream_t stream);
  // The rung whose code this one changes (the ladder is a tree); -1 for rung 0 and for rows that
  // are not ladder rungs.
  int parent = -1;
};

// Runs `r` after checking supports(): bad input is an exception, never a launch.
template <class Args>
void launch_checked(const Rung<Args>& r, const Args& a, cudaStream_t s) {
  std::string why = r.supports(a, device_info());
  KL_REQUIRE(why.empty(), "rung " << r.number << " (" << r.name << "): " << why);
  r.launch(a, s);
}

// The rung named by `spec` (its number or its name), or nullptr.
template <class Args>
const Rung<Args>* find_rung(const std::vector<Rung<Args>>& table, const std::string& spec) {
  for (const auto& r : table)
    if (spec == r.name || spec == std::to_string(r.number)) return &r;
  return nullptr;
}

// Default choice for an entry point: the highest-numbered rung that supports `a`.
template <class Args>
const Rung<Args>* best_supported(const std::vector<Rung<Args>>& table, const Args& a,
                                 const DeviceInfo& d) {
  const Rung<Args>* best = nullptr;
  for (const auto& r : table)
    if (r.supports(a, d).empty() && (!best || r.number > best->number)) best = &r;
  return best;
}

// Checks common to all launchers.
inline bool aligned(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

}  // namespace kl
