// bench/harness.cpp — host-only parts of the harness: CLI, shapes, validation, reporter.
// (GPU parts are in harness_gpu.cu, the JSON writer in json.cpp.) Everything here is covered by
// tests/test_cpu_harness.cpp and runs without a GPU.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

#include "bench/harness.h"
#include "common/parallel.h"

namespace kl::bench {

// ---------------------------------------------------------------- CLI
std::string usage_text(const std::string& prog, const std::string& shape_help,
                       const std::vector<ExtraFlag>& extra) {
  std::ostringstream s;
  s << "usage: " << prog << " [flags]\n"
    << "  --shape S        problem shape (repeatable, or ';'-separated); " << shape_help << "\n"
    << "  --variant V      rung number or name, 'all' (default), 'auto'; comma list allowed\n"
    << "  --dtype T        f32 | bf16 (comma list allowed); default: the family's shape defaults\n"
    << "  --iters N        timed launches per row (default 100)\n"
    << "  --warmup N       untimed launches before timing (default 10)\n"
    << "  --out FILE       append JSON lines to FILE (default: stdout)\n"
    << "  --list           print the rungs and what each changes, then exit\n"
    << "  --no-rotate      one input copy (small shapes then run from L2: rows say l2_resident)\n"
    << "  --graph          also time back-to-back launches captured in a CUDA graph\n"
    << "  --quick          a few small shapes, fewer iterations (smoke test)\n"
    << "  --seed N         input seed (default: from the clock, fresh every run)\n";
  for (const auto& f : extra)
    s << "  --" << f.name << (f.takes_value ? " V" : "") << std::string(f.name.size() < 13 ? 13 - f.name.size() - (f.takes_value ? 2 : 0) : 1, ' ')
      << f.help << "\n";
  s << "  --help           this text\n";
  return s.str();
}

bool variant_lists_all(const std::string& spec) {
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = spec.find(',', start);
    if (spec.compare(start, comma == std::string::npos ? std::string::npos : comma - start, "all") == 0)
      return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

static long long parse_int(const std::string& flag, const std::string& v, long long lo, long long hi) {
  if (v.empty()) throw BadArgument(flag + ": missing value");
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') throw BadArgument(flag + ": '" + v + "' is not an integer");
  if (x < lo || x > hi)
    throw BadArgument(flag + ": " + v + " out of range [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return x;
}

double parse_number(const std::string& flag, const std::string& v) {
  if (v.empty()) throw BadArgument(flag + ": missing value");
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  // strtod also reads "inf", "nan" and hex floats: only finite values count, and nothing may follow.
  if (end == v.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(x))
    throw BadArgument(flag + ": '" + v + "' is not a finite number");
  return x;
}

static std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

Options parse_cli_or_throw(int argc, const char* const* argv, const std::vector<ExtraFlag>& extra) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string val;
    bool has_inline = false;
    if (a.rfind("--", 0) != 0) throw BadArgument("unexpected argument '" + a + "'");
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      val = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_inline = true;
    }
    auto value = [&](void) -> std::string {
      if (has_inline) return val;
      if (i + 1 >= argc) throw BadArgument(a + ": missing value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (has_inline) throw BadArgument(a + " takes no value");
    };
    if (a == "--shape") {
      std::string v = value();
      if (v.empty()) throw BadArgument("--shape: empty");
      for (auto& s : split(v, ';'))
        if (!s.empty()) o.shapes.push_back(s);
    } else if (a == "--variant") {
      o.variant = value();
      if (o.variant.empty()) throw BadArgument("--variant: empty");
    } else if (a == "--dtype") {
      for (auto& t : split(value(), ',')) {
        DType d;
        if (!parse_dtype(t, &d)) throw BadArgument("--dtype: unknown type '" + t + "' (f32 or bf16)");
        o.dtypes.push_back(d);
      }
    } else if (a == "--iters") {
      o.iters = static_cast<int>(parse_int(a, value(), 1, 1000000));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_int(a, value(), 0, 1000000));
    } else if (a == "--out") {
      o.out = value();
      if (o.out.empty()) throw BadArgument("--out: empty file name");
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(a, value(), 1, (1LL << 62)));
    } else if (a == "--list") {
      no_value();
      o.list = true;
    } else if (a == "--no-rotate") {
      no_value();
      o.no_rotate = true;
    } else if (a == "--graph") {
      no_value();
      o.graph = true;
    } else if (a == "--quick") {
      no_value();
      o.quick = true;
    } else if (a == "--help" || a == "-h") {
      throw BadArgument("--help");
    } else {
      bool found = false;
      for (const auto& f : extra) {
        if (a == "--" + f.name) {
          found = true;
          if (f.takes_value) {
            o.extra[f.name] = value();
          } else {
            no_value();
            o.extra[f.name] = "1";
          }
        }
      }
      if (!found) throw BadArgument("unknown flag '" + a + "'");
    }
  }
  return o;
}

Options parse_cli(int argc, char** argv, const std::string& prog, const std::string& shape_help,
                  const std::vector<ExtraFlag>& extra) {
  try {
    return parse_cli_or_throw(argc, argv, extra);
  } catch (const BadArgument& e) {
    if (std::string(e.what()) == "--help") {
      std::cout << usage_text(prog, shape_help, extra);
      std::exit(0);
    }
    std::cerr << prog << ": " << e.what() << "\n" << usage_text(prog, shape_help, extra);
    std::exit(2);
  }
}

// ---------------------------------------------------------------- shapes
long long Shape::operator[](const std::string& k) const {
  for (const auto& d : dims)
    if (d.first == k) return d.second;
  throw BadArgument("shape has no dimension '" + k + "'");
}
bool Shape::has(const std::string& k) const {
  for (const auto& d : dims)
    if (d.first == k) return true;
  return false;
}
std::string Shape::str() const {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].first + "=" + std::to_string(dims[i].second);
  }
  return s;
}

Shape parse_shape(const std::string& s, const std::vector<std::string>& names,
                  const std::map<std::string, long long>& defaults) {
  std::map<std::string, long long> got;
  auto bad = [&](const std::string& why) {
    std::string expect;
    for (size_t i = 0; i < names.size(); ++i) expect += (i ? "x" : "") + names[i];
    return BadArgument("--shape '" + s + "': " + why + " (expected " + expect + " or name=value,...)");
  };
  if (s.find('=') != std::string::npos) {
    for (auto& kv : split(s, ',')) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos) throw bad("'" + kv + "' is not name=value");
      std::string k = kv.substr(0, eq);
      if (std::find(names.begin(), names.end(), k) == names.end()) throw bad("unknown dimension '" + k + "'");
      if (got.count(k)) throw bad("dimension '" + k + "' given twice");
      try {
        got[k] = parse_int(k, kv.substr(eq + 1), 0, (1LL << 40));
      } catch (const BadArgument& e) {
        throw bad(e.what());
      }
    }
  } else {
    auto parts = split(s, 'x');
    if (parts.size() > names.size()) throw bad("too many dimensions");
    for (size_t i = 0; i < parts.size(); ++i) {
      try {
        got[names[i]] = parse_int(names[i], parts[i], 0, (1LL << 40));
      } catch (const BadArgument& e) {
        throw bad(e.what());
      }
    }
  }
  Shape out;
  for (const auto& n : names) {
    auto it = got.find(n);
    if (it != got.end()) {
      out.dims.emplace_back(n, it->second);
    } else {
      auto d = defaults.find(n);
      if (d == defaults.end()) throw bad("missing dimension '" + n + "'");
      out.dims.emplace_back(n, d->second);
    }
  }
  return out;
}

// ---------------------------------------------------------------- validation
Tolerance default_tolerance(DType out) {
  if (out == DType::f32) return Tolerance{1e-5, 1e-4, 1e-5};
  // bf16 output: 8 bits of mantissa, so one rounding is up to 2^-8 relative; allow two.
  return Tolerance{1e-3, 1.6e-2, 8e-3};
}

// One chunk's statistics: sums and the worst element, merged across chunks in chunk order (so the
// result, including which element is "worst" on ties, is the same on every run).
struct ChunkStats {
  ErrStats e;
  double num = 0, den = 0, worst_excess = -1e300;
};

template <class R>
static ChunkStats compare_chunk(const float* got, const R* ref, size_t b, size_t end, const Tolerance& tol,
                                const std::vector<size_t>* idx) {
  ChunkStats c;
  ErrStats& e = c.e;
  for (size_t i = b; i < end; ++i) {
    double g = got[i], r = static_cast<double>(ref[i]);
    size_t where = idx ? (*idx)[i] : i;
    if (!std::isfinite(r) || !std::isfinite(g)) {
      // Specials must match exactly (same NaN-ness, same infinity); anything else is a failure.
      bool match = (std::isnan(r) && std::isnan(g)) || (std::isinf(r) && g == r);
      if (!match) {
        ++e.nonfinite;
        ++e.bad;
        if (c.worst_excess < 1e300) {
          c.worst_excess = 1e300;
          e.worst = where;
          e.worst_got = g;
          e.worst_ref = r;
        }
      }
      continue;
    }
    double d = std::fabs(g - r);
    double rel = d / std::max(std::fabs(r), 1e-30);
    e.max_abs = std::max(e.max_abs, d);
    if (std::fabs(r) > tol.abs) e.max_rel = std::max(e.max_rel, rel);
    c.num += d * d;
    c.den += r * r;
    double limit = tol.abs + tol.rel * std::fabs(r);
    double excess = d - limit;
    if (excess > 0) ++e.bad;
    if (excess > c.worst_excess) {
      c.worst_excess = excess;
      e.worst = where;
      e.worst_got = g;
      e.worst_ref = r;
    }
  }
  return c;
}

template <class R>
static ErrStats compare_impl(const float* got, const R* ref, size_t n, const Tolerance& tol,
                             const std::vector<size_t>* idx) {
  // Split across the host's cores: on one core the comparison of a large output was the largest
  // share of a row-op bench's wall time.
  const int t = parallel_chunks(static_cast<long long>(n));
  const size_t per = (n + t - 1) / std::max(t, 1);
  std::vector<ChunkStats> parts(static_cast<size_t>(t));
  parallel_for(static_cast<long long>(t), [&](long long c0, long long c1) {
    for (long long c = c0; c < c1; ++c) {
      const size_t b = static_cast<size_t>(c) * per, e = std::min(n, b + per);
      if (b < e) parts[static_cast<size_t>(c)] = compare_chunk(got, ref, b, e, tol, idx);
    }
  }, 2);
  ErrStats e;
  e.n = n;
  double num = 0, den = 0, worst_excess = -1e300;
  for (const ChunkStats& c : parts) {
    e.max_abs = std::max(e.max_abs, c.e.max_abs);
    e.max_rel = std::max(e.max_rel, c.e.max_rel);
    e.nonfinite += c.e.nonfinite;
    e.bad += c.e.bad;
    num += c.num;
    den += c.den;
    if (c.worst_excess > worst_excess) {  // strict: the earliest chunk wins a tie, as serially
      worst_excess = c.worst_excess;
      e.worst = c.e.worst;
      e.worst_got = c.e.worst_got;
      e.worst_ref = c.e.worst_ref;
    }
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  // The L2 gate is relative to ||ref||: a reference whose RMS is within the absolute tolerance of
  // zero (one element of 4e-40, say, which the kernel may flush to 0) has no scale to be relative
  // to, and the element check alone decides.
  const bool l2_applies = den > tol.abs * tol.abs * static_cast<double>(n);
  e.ok = n > 0 && e.bad == 0 && e.nonfinite == 0 && (!l2_applies || e.rel_l2 <= tol.rel_l2);
  return e;
}

ErrStats compare(const float* got, const double* ref, size_t n, const Tolerance& tol) {
  return compare_impl(got, ref, n, tol, nullptr);
}
ErrStats compare(const float* got, const float* ref, size_t n, const Tolerance& tol) {
  return compare_impl(got, ref, n, tol, nullptr);
}
ErrStats compare_at(const float* got, const double* ref_at_idx, const std::vector<size_t>& idx,
                    const Tolerance& tol) {
  // `got` is indexed by position in the full output; gather first.
  std::vector<float> g(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) g[i] = got[idx[i]];
  return compare_impl(g.data(), ref_at_idx, idx.size(), tol, &idx);
}

std::vector<std::pair<int, int>> sample_entries(int M, int N, int count, uint64_t seed) {
  std::vector<std::pair<int, int>> v;
  if (M <= 0 || N <= 0 || count <= 0) return v;
  if (static_cast<long long>(M) * N <= count) {  // every entry, corners first
    v.emplace_back(0, 0);
    if (M * N > 1) v.emplace_back(M - 1, N - 1);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        if (!(i == 0 && j == 0) && !(i == M - 1 && j == N - 1)) v.emplace_back(i, j);
    return v;
  }
  std::mt19937_64 rng(seed);
  std::set<std::pair<int, int>> seen;
  auto add = [&](int i, int j) {
    if (seen.insert({i, j}).second) v.emplace_back(i, j);
  };
  add(0, 0);
  add(M - 1, N - 1);
  while (static_cast<int>(v.size()) < count)  // M x N > count: distinct draws always exist
    add(static_cast<int>(rng() % M), static_cast<int>(rng() % N));
  return v;
}

uint64_t run_seed(const Options& o) {
  if (o.seed) return o.seed;
  static uint64_t s = static_cast<uint64_t>(
      std::chrono::high_resolution_clock::now().time_since_epoch().count());
  s = s * 6364136223846793005ULL + 1442695040888963407ULL;  // a new seed per call
  return (s >> 1) | 1;
}

// ---------------------------------------------------------------- memory
double host_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  long long kb = 0;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return static_cast<double>(kb) * 1024.0;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<double>(pages) * static_cast<double>(page);
  return std::numeric_limits<double>::infinity();  // unknown: refuse nothing
}

static std::string gib(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f bytes (%.2f GiB)", bytes, bytes / double(1ull << 30));
  return b;
}

void require_host_memory(const std::string& what, double need_bytes) {
  const double avail = host_available_bytes();
  if (need_bytes > avail)
    throw BadArgument(what + ": needs " + gib(need_bytes) + " of host memory for its reference and "
                      "downloads; " + gib(avail) + " available");
}

// ---------------------------------------------------------------- validation helpers
bool validate_copies(Row& r, Reporter& rep, int copies, const std::function<ErrStats(int)>& check,
                     const std::string& what) {
  r.validated = true;
  r.err = check(0);
  r.notes["validated_copies"] = "0";
  if (!r.err.ok) {
    rep.fail(r, what + " (input copy 0)");
    return false;
  }
  if (copies > 1) {
    const ErrStats e = check(copies - 1);
    r.notes["validated_copies"] = "0," + std::to_string(copies - 1);
    if (!e.ok) {
      r.err = e;
      rep.fail(r, what + " (input copy " + std::to_string(copies - 1) + ", the last rotated copy)");
      return false;
    }
  }
  return true;
}

void emit_timed(Reporter& rep, Row r, const std::string& what) {
  if (r.t.graph_checked) {
    if (!r.t.graph_err.ok) {
      r.err = r.t.graph_err;
      rep.fail(r, what + " (output after one replay of the timed CUDA graph)");
      return;
    }
    r.notes["graph_validated"] = "1";
  }
  rep.emit(r);
}

// ---------------------------------------------------------------- reporter
Reporter::Reporter(const Options& o, const DeviceInfo& d) : o_(o), d_(d), ri_(run_info()) {
  if (!o_.out.empty()) {
    f_ = std::fopen(o_.out.c_str(), "a");
    if (!f_) throw BadArgument("--out: cannot open '" + o_.out + "' for appending");
  }
}
Reporter::~Reporter() {
  if (!finished_) finish();
  if (f_) std::fclose(f_);
}

static std::string fmt_rate(const Row& r) {
  char b[64];
  if (r.flops > 0 && r.t.median_ms > 0)
    std::snprintf(b, sizeof b, "%9.1f TFLOP/s", r.flops / r.t.median_ms / 1e9);
  else if (r.bytes > 0 && r.t.median_ms > 0)
    std::snprintf(b, sizeof b, "%9.1f GB/s   ", r.bytes / r.t.median_ms / 1e6);
  else
    std::snprintf(b, sizeof b, "%17s", "");
  return b;
}
static std::string row_label(const Row& r) {
  char b[96];
  if (r.variant >= 0)
    std::snprintf(b, sizeof b, "%s %02d %s", r.impl.c_str(), r.variant, r.variant_name.c_str());
  else
    std::snprintf(b, sizeof b, "%s %s", r.impl.c_str(), r.variant_name.c_str());
  return b;
}

void Reporter::emit(const Row& r) {
  std::string line = row_to_json(r, d_, ri_);
  if (f_) {
    std::fprintf(f_, "%s\n", line.c_str());
    std::fflush(f_);
  } else {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  rows_.push_back(r);
  std::fprintf(stderr, "  [%s %s] %-34s %-40s %10.4f ms %s%s\n", r.op.c_str(), r.dtype.c_str(),
               row_label(r).c_str(), r.shape.str().c_str(), r.t.median_ms, fmt_rate(r).c_str(),
               r.l2_resident ? "  (L2-resident)" : "");
}

void Reporter::fail(const Row& r, const std::string& detail) {
  failed_ = true;
  std::fprintf(stderr,
               "FAILED validation: %s %s %s shape %s: worst element [%zu] got %.8g ref %.8g; "
               "max_abs %.3g max_rel %.3g rel_l2 %.3g (tol abs %.1e rel %.1e l2 %.1e); "
               "%zu bad, %zu non-finite of %zu%s%s\n",
               r.op.c_str(), r.dtype.c_str(), row_label(r).c_str(), r.shape.str().c_str(),
               r.err.worst, r.err.worst_got, r.err.worst_ref, r.err.max_abs, r.err.max_rel,
               r.err.rel_l2, r.tol.abs, r.tol.rel, r.tol.rel_l2, r.err.bad, r.err.nonfinite,
               r.err.n, detail.empty() ? "" : "; ", detail.c_str());
}

void Reporter::skip(const std::string& what, const std::string& why) {
  std::fprintf(stderr, "  skip %s: %s\n", what.c_str(), why.c_str());
}

int Reporter::finish() {
  if (finished_) return exit_code();
  finished_ = true;
  if (!rows_.empty()) {
    std::fprintf(stderr, "\n%-12s %-5s %-34s %-44s %10s %10s %17s\n", "op", "dtype", "impl/rung",
                 "shape", "median ms", "min ms", "rate");
    for (const auto& r : rows_)
      std::fprintf(stderr, "%-12s %-5s %-34s %-44s %10.4f %10.4f %s%s\n", r.op.c_str(),
                   r.dtype.c_str(), row_label(r).c_str(), r.shape.str().c_str(), r.t.median_ms,
                   r.t.min_ms, fmt_rate(r).c_str(), r.l2_resident ? " L2" : "");
  }
  if (failed_) std::fprintf(stderr, "\nSOME VALIDATIONS FAILED (see FAILED lines above)\n");
  return exit_code();
}

int guarded_main(const std::function<int()>& body) {
  try {
    return body();
  } catch (const BadArgument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace kl::bench
