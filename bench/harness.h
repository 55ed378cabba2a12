// bench/harness.h — the one small library every bench_<family> binary uses.
//
// What it gives a bench:
//   * parse_cli()        the common flags (--shape --variant --dtype --iters --warmup --out --list
//                        --no-rotate --graph); bad flags print usage and exit 2.
//   * print_banner()     device name, cc, SMs, clock, L2, driver, CUDA on stderr.
//   * Shape              "4096x8192" or "rows=4096,cols=8192" parsed against named dims.
//   * rotation_copies()  how many input copies make one rotation exceed 3x the L2 (capped);
//                        replicate() makes them by doubling.
//   * require_host_memory(), require_device_memory()   a shape that would not fit is refused
//                        before anything is allocated.
//   * fill_uniform(), poison(), download_as_float()   random inputs (never zeros) and NaN poison.
//   * compare()          abs / rel / normalized error, NaN/Inf detection, per-dtype tolerances;
//                        validate_copies() checks a launch on copy 0 and on the last rotated copy.
//   * time_launches()    clock ramp, warm-up, CUDA events per launch (median/min/max), optional
//                        back-to-back rate through a CUDA graph of repeated launches, whose output
//                        after one more replay is checked (GraphCheck, emit_timed()).
//   * Reporter           one JSON line per row (json.cpp), a progress line per row on stderr, the
//                        human table at the end, non-zero exit if any validation failed.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kl/check.h"
#include "kl/device.h"
#include "kl/dtype.h"
#include "kl/registry.h"

namespace kl::bench {

// ---------------------------------------------------------------- CLI
struct Options {
  std::vector<std::string> shapes;  // --shape S (repeatable, or ';'-separated); empty = defaults
  std::string variant = "all";      // --variant: number, name, "all", "auto" (comma list allowed)
  std::vector<DType> dtypes;        // --dtype f32,bf16; empty = the family's defaults
  int iters = 100;                  // --iters N: timed launches per row
  int warmup = 10;                  // --warmup N: untimed launches before timing
  std::string out;                  // --out FILE: JSON lines (append); empty = stdout
  bool list = false;                // --list: print the rungs and exit
  bool no_rotate = false;           // --no-rotate: one input copy (rows become l2_resident if small)
  bool graph = false;               // --graph: also time back-to-back launches in a CUDA graph
  bool quick = false;               // --quick: fewer iterations, smaller default shape list
  uint64_t seed = 0;                // --seed N; 0 = from the clock (fresh inputs every run)
  std::map<std::string, std::string> extra;  // family flags declared by the bench (--causal ...)
};

struct ExtraFlag {
  std::string name;   // without dashes
  bool takes_value;   // --name VALUE, else a switch
  std::string help;
};
// --ref-last of the GEMM benches: the library's reference row is timed after the rungs instead of
// before them (the card is hotter for whichever runs later; scripts/h2h.py alternates the two).
inline const ExtraFlag kRefLastFlag{"ref-last", false,
                                    "time the cuBLAS row after the rungs (default: before; scripts/h2h.py alternates)"};
// True when the --variant list holds the token "all" (exactly: rung "small_splitk" is not "all").
// A list without it names its rows: every row of the run then gets --iters (iters_for_budget).
bool variant_lists_all(const std::string& spec);

// Parses argv. On --help prints usage to stdout and exits 0; on any malformed flag or value prints
// the problem and the usage to stderr and exits 2. Throws nothing.
Options parse_cli(int argc, char** argv, const std::string& prog, const std::string& shape_help,
                  const std::vector<ExtraFlag>& extra = {});
// The same, but throws kl::BadArgument instead of exiting (what the CPU tests call).
Options parse_cli_or_throw(int argc, const char* const* argv, const std::vector<ExtraFlag>& extra = {});
std::string usage_text(const std::string& prog, const std::string& shape_help,
                       const std::vector<ExtraFlag>& extra);
// A finite number (strtod's syntax), the whole of `v`: no trailing characters, no inf or nan, no
// overflow. For a family flag such as --eps; throws BadArgument naming `flag` otherwise.
double parse_number(const std::string& flag, const std::string& v);

// ---------------------------------------------------------------- shapes
// A shape is an ordered list of named dims. parse_shape accepts positional "AxBxC" (in the order
// of `dims`) or named "a=1,b=2" (any order; dims with defaults may be omitted).
struct Shape {
  std::vector<std::pair<std::string, long long>> dims;
  long long operator[](const std::string& k) const;
  bool has(const std::string& k) const;
  std::string str() const;  // "rows=4096,cols=8192"
};
Shape parse_shape(const std::string& s, const std::vector<std::string>& dims,
                  const std::map<std::string, long long>& defaults = {});  // throws BadArgument

// The default of a KV-cache length "L" that follows the sequence length: parse_shape_with_cache()
// turns an L left at kLSameAsS into S (a given value is never negative).
constexpr long long kLSameAsS = -1;
inline Shape parse_shape_with_cache(const std::string& s, const std::vector<std::string>& dims,
                                    const std::map<std::string, long long>& defaults) {
  const Shape sh = parse_shape(s, dims, defaults);
  Shape r;
  for (const auto& d : sh.dims) r.dims.emplace_back(d.first, d.first == "L" && d.second == kLSameAsS ? sh["S"] : d.second);
  return r;
}

// ---------------------------------------------------------------- rung selection
// Resolves --variant against a family's table. "all" = every rung; "auto" is returned as the
// flag `want_auto`. Unknown names throw BadArgument (the bench turns that into exit 2).
template <class Args>
std::vector<const Rung<Args>*> select_rungs(const std::vector<Rung<Args>>& table,
                                            const std::string& spec, bool* want_auto);
// Prints the table for --list (number, parent, name, change) to stdout.
// Times one shape's rows through `run_one(rung, is_auto)`: every selected rung in ladder order, and,
// when asked for, the entry point's row right after the row of the rung `pick()` returns (last when
// that rung is not selected or nothing is picked). The entry point and the rung it launches then run
// at the same point of the shape's sequence: on a power-limited shape the card is hotter and its
// clock lower after the heaviest rungs, so an `auto` row timed last would run the same kernel slower.
template <class Args, class Pick, class RunOne>
void run_rows(const std::vector<const Rung<Args>*>& rungs, bool want_auto, Pick&& pick, RunOne&& run_one) {
  const Rung<Args>* picked = want_auto ? pick() : nullptr;
  bool auto_done = !want_auto;
  for (const Rung<Args>* r : rungs) {
    run_one(r, false);
    if (!auto_done && r == picked) {
      run_one(nullptr, true);
      auto_done = true;
    }
  }
  if (!auto_done) run_one(nullptr, true);
}

template <class Args>
void print_rungs(const std::vector<Rung<Args>>& table, const std::string& title);

// ---------------------------------------------------------------- device buffers
// Owning device allocation (cudaMalloc; freed in the destructor).
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};

// Owning non-blocking stream (graph capture needs a stream other than the legacy default).
struct Stream {
  cudaStream_t s = nullptr;
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s; }
};

// Most input copies a rotation uses: below 3x L2 / kMaxRotationCopies bytes per set the rotation
// stays short of 3x the L2 and the rows are l2_resident.
constexpr int kMaxRotationCopies = 1 << 16;
// Number of copies of a `bytes_per_set` working set so that one rotation exceeds 3x the L2: 1 with
// --no-rotate, at most kMaxRotationCopies, and no more than fit in a quarter of the free device
// memory or in what `other_bytes` (the shape's other device buffers) leave of it.
int rotation_copies(size_t bytes_per_set, const DeviceInfo& d, bool no_rotate, size_t other_bytes = 0);
// A row is l2_resident when what it rotates over (bytes_per_set x copies) does not exceed 3x the L2,
// the rotation rotation_copies() aims past: some or all of its reads may then be L2 hits, so the
// figure is not a DRAM figure (a capped rotation of a small set, or --no-rotate on a set below 3x L2).
inline bool is_l2_resident(size_t bytes_per_set, int copies, const DeviceInfo& d) {
  return static_cast<double>(bytes_per_set) * copies <= 3.0 * static_cast<double>(d.l2_bytes);
}

// ---------------------------------------------------------------- memory
// Host memory available now: MemAvailable of /proc/meminfo, else the free pages (sysconf).
double host_available_bytes();
// Throws BadArgument ("<what>: needs N bytes of host memory, M available") when `need_bytes` exceed
// what the host has available: the benches call it per shape before the device is touched.
void require_host_memory(const std::string& what, double need_bytes);
// The same against the device's free memory (cudaMemGetInfo) less a reserve for the CUDA context,
// cuBLAS and the harness's own small buffers; the benches call it per shape before allocating.
void require_device_memory(const std::string& what, double need_bytes);

// Uniform random values in [lo, hi) of type `t`, from a counter-based hash of (seed, index).
void fill_uniform(void* dev, size_t n, DType t, uint64_t seed, float lo, float hi,
                  cudaStream_t s = 0);
// Sets every byte to 0xFF: NaN in fp32 and bf16, so an unwritten output element fails validation.
void poison(void* dev, size_t bytes, cudaStream_t s = 0);
// Copies n elements of type t to the host as floats (bf16 widened exactly).
std::vector<float> download_as_float(const void* dev, size_t n, DType t);
// Copies slot 0 of `bytes` at `dst` into each of the `copies` - 1 consecutive slots after it
// (rotation sets), doubling the filled slots with every cudaMemcpy: log2(copies) copies.
void replicate(void* dst, size_t bytes, int copies);
// Rows idx[k] (each `row_elems` elements of type t, at src + idx[k] * row_elems) of a device array,
// as floats, back to back: one gather kernel and one download however many rows.
std::vector<float> gather_rows_as_float(const void* src, size_t row_elems, const std::vector<long long>& idx,
                                        DType t);
// The seed for this run: --seed if given, else from the clock.
uint64_t run_seed(const Options& o);

// ---------------------------------------------------------------- validation
struct Tolerance {
  double abs = 0, rel = 0;    // element passes if |got - ref| <= abs + rel * |ref|
  double rel_l2 = 0;          // and ||got - ref|| / ||ref|| <= rel_l2 over the whole output (where
                              // ref's RMS exceeds abs: below it the element check alone decides)
};
// Defaults by output storage type: f32 row ops 1e-5-ish, bf16 outputs one bf16 ulp-ish.
Tolerance default_tolerance(DType out);

struct ErrStats {
  size_t n = 0;               // elements compared
  double max_abs = 0, max_rel = 0, rel_l2 = 0;
  size_t worst = 0;           // index of the element furthest outside (or closest to) tolerance
  double worst_got = 0, worst_ref = 0;
  size_t nonfinite = 0;       // NaN/Inf in `got` where `ref` is finite, or mismatched specials
  size_t bad = 0;             // elements outside the tolerance
  bool ok = false;
};
// Full comparison of n elements. Specials: ref NaN/Inf must be matched exactly by got.
ErrStats compare(const float* got, const double* ref, size_t n, const Tolerance& tol);
ErrStats compare(const float* got, const float* ref, size_t n, const Tolerance& tol);
// Sampled comparison: only the listed indices (GEMM/attention against sampled references).
ErrStats compare_at(const float* got, const double* ref_at_idx, const std::vector<size_t>& idx,
                    const Tolerance& tol);
// `count` distinct entries (i, j) of an M x N output (every entry when M x N <= count) to check
// against a CPU double product: the two corners (0, 0) and (M-1, N-1) first (they sit in tail
// tiles), then uniform draws from `seed`.
std::vector<std::pair<int, int>> sample_entries(int M, int N, int count, uint64_t seed);

// ---------------------------------------------------------------- timing
struct Row;
class Reporter;
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int iters = 0;
  double graph_ms = std::numeric_limits<double>::quiet_NaN();  // per launch, back to back
  double clock_mhz = std::numeric_limits<double>::quiet_NaN();  // SM clock sampled during the run
  bool graph_checked = false;  // a GraphCheck ran after the graph's replays
  ErrStats graph_err;          // its result
};
// The output of a timed CUDA graph, checked: after the timed replays `prepare` (stream-ordered on
// the timing stream: poison the output, restore inputs an op updates in place) runs, the graph is
// replayed once more and `check` compares the output with the reference (Timing::graph_err).
struct GraphCheck {
  std::function<void()> prepare;
  std::function<ErrStats()> check;
};
// About 300 ms of FMA work so the clocks are up before the first timed launch. Runs once per
// process; later calls return immediately.
void ramp_clocks();
// Times `launch(i)` (i = launch index; use i % copies to rotate inputs). ramp_clocks(), then
// o.warmup untimed launches, then o.iters launches each between two events, in chunks of 25 queued
// behind a kernel that holds the stream while the host enqueues them (sized from the warm-up's host
// time), so the events measure device time and not the host's launch latency. With o.graph (or
// force_graph), also captures launches into a CUDA graph (o.iters of them, or fewer when they add up
// to more than ~20 ms: at least min(5, o.iters)) and reports the median of 5 replays per launch (graph_ms); `s`
// must then be a created stream (kl::bench::Stream), not the default one. With a graph and `gc`,
// the graph's output is checked after one more replay (GraphCheck).
// The SM clock is sampled through NVML (dlopen'ed; absent -> NaN) while the timed launches run.
Timing time_launches(const std::function<void(int)>& launch, const Options& o,
                     cudaStream_t s, bool force_graph = false, const GraphCheck* gc = nullptr);
// Runs `steps` in order, o.iters times (after max(1, o.warmup) untimed sequences), an event before
// the first step and after each, the sequences queued behind a hold kernel as in time_launches();
// returns each step's timing in its sequence (median, min, max; the SM clock of the whole run). A
// step's events bracket it where the previous step ended, so what they cannot show is overlap with
// its neighbours, which they prevent.
std::vector<Timing> time_steps(const std::vector<std::function<void()>>& steps, const Options& o, cudaStream_t s);
// One launch of `f` between two events, in ms (the benches' validation launch).
double single_launch_ms(const std::function<void()>& f, cudaStream_t s);
// `o` with its iterations cut so one row takes about `budget_s` seconds (at least 5 launches), unless
// `named` (the benches pass !variant_lists_all(--variant) for the rungs, auto and the GEMM
// references: a list without "all" gives every such row --iters): slow naive rungs then cost
// seconds, not minutes. A capped row says so in row->notes["iters_capped"]. The budget is sized
// from one more launch of `launch`, after the row's validation launch where the bench has one (the
// decode copy row has none): the first launch can carry one-time costs -- cuBLAS's first-call
// setup, lazy module loading -- and sizing from it would give the library's rows far fewer launches
// than ours: on a shape that heats the card, the shorter row runs cooler.
Options iters_for_budget(const Options& o, const std::function<void()>& launch, cudaStream_t s,
                         double budget_s, bool named, Row* row);

// Mean SM clock (MHz) NVML reports for the current device right now; NaN if NVML is unavailable.
double sm_clock_mhz_now();

// ---------------------------------------------------------------- results
struct Row {
  std::string family, op;           // e.g. "rmsnorm", "add_rmsnorm"
  std::string impl = "kl";          // kl, cublas, cudaMemcpy, torch, ...
  int variant = -1;                 // rung number; -1 for "auto" and for references
  std::string variant_name;         // rung name, "auto", or the reference's name
  std::string change;               // the rung's one change (from the registry)
  int parent = -1;                  // the rung it changes (from the registry); -1: none or not a rung
  std::string dtype;                // "f32", "bf16"
  Shape shape;
  Timing t;
  double flops = 0;                 // counted FLOPs of one launch
  double bytes = 0;                 // minimum DRAM bytes of one launch
  bool validated = false;           // an output was compared with a reference (false for copies)
  ErrStats err;
  Tolerance tol;
  bool l2_resident = false;
  int copies = 1;                   // input copies rotated over
  uint64_t seed = 0;
  std::map<std::string, std::string> notes;  // free-form extra fields, e.g. {"auto_picked": "04"}
};

struct RunInfo {
  std::string git_commit, timestamp;
};
RunInfo run_info();

// One JSON object for a row (field order fixed; documented in docs/results-format.md).
std::string row_to_json(const Row& r, const DeviceInfo& d, const RunInfo& ri);
// Device banner text (also printed to stderr by print_banner).
std::string banner_text(const DeviceInfo& d);
void print_banner(const DeviceInfo& d);

class Reporter {
 public:
  Reporter(const Options& o, const DeviceInfo& d);
  ~Reporter();
  // A validated, timed row: JSON line out, progress line on stderr.
  void emit(const Row& r);
  // A failed validation: prints rung, shape, worst element on stderr; never a JSON row;
  // exit_code() becomes 1.
  void fail(const Row& r, const std::string& detail = "");
  // A rung that does not support the shape: one stderr line with the reason, no row.
  void skip(const std::string& what, const std::string& why);
  // Prints the human table to stderr; returns 0, or 1 if anything failed.
  int finish();
  int exit_code() const { return failed_ ? 1 : 0; }

 private:
  const Options& o_;
  const DeviceInfo& d_;
  RunInfo ri_;
  std::vector<Row> rows_;
  std::FILE* f_ = nullptr;
  bool failed_ = false;
  bool finished_ = false;
};

// What every row of a family's bench has in common: the problem (family, op, dtype, shape), its
// counted FLOPs and minimum bytes, the input rotation and the tolerance. The caller labels the
// implementation (label_row, label_copy_row) and times it.
inline Row problem_row(const std::string& family, const std::string& op, const std::string& dtype,
                       const Shape& shape, double flops, double bytes, bool l2_resident, int copies,
                       uint64_t seed, const Tolerance& tol = Tolerance{}) {
  Row r;
  r.family = family;
  r.op = op;
  r.dtype = dtype;
  r.shape = shape;
  r.flops = flops;
  r.bytes = bytes;
  r.l2_resident = l2_resident;
  r.copies = copies;
  r.seed = seed;
  r.tol = tol;
  return r;
}

// Labels `r` as the same-run copy reference of a memory-bound op (impl "cudaMemcpy", variant -1, no
// FLOPs, nothing validated): `name` is its variant name, `change` says what it copies.
inline void label_copy_row(Row& r, const std::string& name, const std::string& change) {
  r.impl = "cudaMemcpy";
  r.variant = -1;
  r.variant_name = name;
  r.change = change;
  r.flops = 0;
  r.validated = false;  // a copy: nothing compared
  r.notes["validated_against"] = "none (copy)";
}

// Labels `r` as one rung's row or as the entry point's ("auto", variant -1, notes.picked = the rung
// `picked` that the family's pick returned), and returns the rung to launch. Returns nullptr after
// reporting the skip when the entry point has no rung for the shape or the rung's supports() refuses
// it (its reason goes to the log; no row). `what` names the shape in those lines.
template <class Args>
const Rung<Args>* label_row(Row& r, Reporter& rep, const Rung<Args>* rung, bool is_auto,
                            const Rung<Args>* picked, const Args& a, const DeviceInfo& dev,
                            const std::string& what) {
  if (is_auto) {
    r.variant = -1;
    r.variant_name = "auto";
    r.change = "the entry point: the best supported rung for the shape";
    if (!picked) {
      rep.skip("auto " + what, "no rung supports the shape");
      return nullptr;
    }
    r.notes["picked"] = (picked->number < 10 ? "0" : "") + std::to_string(picked->number);
    return picked;
  }
  r.variant = rung->number;
  r.variant_name = rung->name;
  r.change = rung->change;
  r.parent = rung->parent;
  const std::string why = rung->supports(a, dev);
  if (!why.empty()) {
    rep.skip("rung " + std::to_string(rung->number) + " " + what, why);
    return nullptr;
  }
  return rung;
}

// Validates a row's launch on input copy 0 and, when copies > 1, on the last copy: `check(i)`
// poisons the output, launches on copy i and compares. Sets r.err, r.validated and
// notes.validated_copies ("0" or "0,<last>"); a failure is reported through rep.fail (`what` and the
// copy) and returns false.
bool validate_copies(Row& r, Reporter& rep, int copies, const std::function<ErrStats(int)>& check,
                     const std::string& what);
// Emits a timed row; when its graph replay was checked, a failure goes to rep.fail instead (the
// row is not written) and a pass is noted (notes.graph_validated = "1").
void emit_timed(Reporter& rep, Row r, const std::string& what);

// Runs `body` and maps exceptions to exit codes: BadArgument -> 2 (with message), anything else
// -> 1. Benches wrap main() in it so a bad shape never becomes a crash.
int guarded_main(const std::function<int()>& body);

// ================================================================ templates
template <class Args>
std::vector<const Rung<Args>*> select_rungs(const std::vector<Rung<Args>>& table,
                                            const std::string& spec, bool* want_auto) {
  std::vector<const Rung<Args>*> out;
  *want_auto = false;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string tok = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (tok == "all") {
      for (const auto& r : table) out.push_back(&r);
      *want_auto = true;
    } else if (tok == "auto") {
      *want_auto = true;
    } else {
      const Rung<Args>* r = find_rung(table, tok);
      if (!r) throw BadArgument("--variant: no rung '" + tok + "' (see --list)");
      out.push_back(r);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

template <class Args>
void print_rungs(const std::vector<Rung<Args>>& table, const std::string& title) {
  std::printf("%s\n", title.c_str());
  std::printf("  rung parent %-24s change from the parent\n", "name");
  for (const auto& r : table) {
    const std::string parent = r.parent < 0 ? "--" : (r.parent < 10 ? "0" : "") + std::to_string(r.parent);
    std::printf("  %02d   %-6s %-24s %s\n", r.number, parent.c_str(), r.name, r.change);
  }
  std::printf("  --   %-6s %-24s %s\n", "", "auto", "the entry point: the best supported rung for the shape");
}

}  // namespace kl::bench
