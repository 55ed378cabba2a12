// bench/json.cpp — the one JSON-lines writer (docs/results-format.md documents every field) and
// the device banner. Host-only: tested on the CPU by tests/test_cpu_harness.cpp.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/harness.h"

#ifndef KL_GIT_COMMIT
#define KL_GIT_COMMIT "unknown"
#endif

namespace kl::bench {

using ojson = nlohmann::ordered_json;

RunInfo run_info() {
  RunInfo ri;
  const char* env = std::getenv("KL_GIT_COMMIT");
  ri.git_commit = env && *env ? env : KL_GIT_COMMIT;
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  ri.timestamp = b;
  return ri;
}

// NaN/Inf are not JSON: they become null.
static ojson num(double x) { return std::isfinite(x) ? ojson(x) : ojson(nullptr); }

std::string row_to_json(const Row& r, const DeviceInfo& d, const RunInfo& ri) {
  ojson j;
  j["family"] = r.family;
  j["op"] = r.op;
  j["impl"] = r.impl;
  j["variant"] = r.variant;
  j["variant_name"] = r.variant_name;
  j["change"] = r.change;
  if (r.impl == "kl" && r.variant >= 0) j["parent"] = r.parent;
  j["dtype"] = r.dtype;
  ojson shape = ojson::object();
  for (const auto& kv : r.shape.dims) shape[kv.first] = kv.second;
  j["shape"] = shape;
  j["shape_str"] = r.shape.str();
  j["median_ms"] = num(r.t.median_ms);
  j["min_ms"] = num(r.t.min_ms);
  j["max_ms"] = num(r.t.max_ms);
  j["iters"] = r.t.iters;
  j["graph_ms"] = num(r.t.graph_ms);
  j["flops"] = r.flops;
  j["bytes"] = r.bytes;
  j["tflops"] = (r.flops > 0 && r.t.median_ms > 0) ? num(r.flops / r.t.median_ms / 1e9) : ojson(nullptr);
  j["gbps"] = (r.bytes > 0 && r.t.median_ms > 0) ? num(r.bytes / r.t.median_ms / 1e6) : ojson(nullptr);
  j["validated"] = r.validated;
  j["ok"] = r.validated ? r.err.ok : true;
  j["err"] = {{"n", r.err.n},           {"max_abs", num(r.err.max_abs)},
              {"max_rel", num(r.err.max_rel)}, {"rel_l2", num(r.err.rel_l2)},
              {"bad", r.err.bad},       {"nonfinite", r.err.nonfinite}};
  j["tol"] = {{"abs", r.tol.abs}, {"rel", r.tol.rel}, {"rel_l2", r.tol.rel_l2}};
  j["l2_resident"] = r.l2_resident;
  j["copies"] = r.copies;
  j["seed"] = r.seed;
  j["clock_mhz"] = num(r.t.clock_mhz);
  char cc[8];
  std::snprintf(cc, sizeof cc, "%d.%d", d.cc_major, d.cc_minor);
  j["device"] = {{"name", d.name},           {"cc", cc},
                 {"sms", d.sms},             {"l2_bytes", d.l2_bytes},
                 {"clock_khz", d.clock_khz}, {"mem_clock_khz", d.mem_clock_khz},
                 {"mem_bus_bits", d.mem_bus_bits}};
  j["cuda_runtime"] = d.runtime_version;
  j["driver"] = d.driver_version;
  j["git_commit"] = ri.git_commit;
  j["timestamp"] = ri.timestamp;
  ojson notes = ojson::object();
  for (const auto& kv : r.notes) notes[kv.first] = kv.second;
  j["notes"] = notes;
  return j.dump();
}

std::string banner_text(const DeviceInfo& d) {
  std::ostringstream s;
  s << "device " << d.id << ": " << d.name << "  sm_" << d.cc_major << d.cc_minor << "  " << d.sms
    << " SMs  clock " << d.clock_khz / 1000 << " MHz  L2 " << d.l2_bytes / (1024 * 1024)
    << " MiB  smem/block " << d.smem_optin / 1024 << " KiB  mem " << d.global_mem / (1 << 30)
    << " GiB  driver " << d.driver_version / 1000 << "." << (d.driver_version % 1000) / 10
    << "  CUDA runtime " << d.runtime_version / 1000 << "." << (d.runtime_version % 1000) / 10;
  return s.str();
}

void print_banner(const DeviceInfo& d) { std::fprintf(stderr, "%s\n", banner_text(d).c_str()); }

}  // namespace kl::bench
