// tests/test_cpu_harness.cpp — the harness's host side (CLI, shapes, validation, JSON) on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include <unistd.h>

#include <memory>

#include "bench/harness.h"

using namespace kl;
using namespace kl::bench;

static Options parse(std::vector<const char*> args, const std::vector<ExtraFlag>& extra = {}) {
  args.insert(args.begin(), "prog");
  return parse_cli_or_throw(static_cast<int>(args.size()), args.data(), extra);
}

TEST(Cli, Defaults) {
  Options o = parse({});
  EXPECT_EQ(o.variant, "all");
  EXPECT_EQ(o.iters, 100);
  EXPECT_FALSE(o.list);
  EXPECT_FALSE(o.graph);
  EXPECT_TRUE(o.shapes.empty());
}

TEST(Cli, AllFlags) {
  Options o = parse({"--shape", "4x8;16x32", "--shape=2x2", "--variant", "3", "--dtype", "f32,bf16",
                     "--iters", "7", "--warmup=2", "--out", "x.jsonl", "--list", "--no-rotate",
                     "--graph", "--seed", "42"});
  ASSERT_EQ(o.shapes.size(), 3u);
  EXPECT_EQ(o.shapes[1], "16x32");
  EXPECT_EQ(o.variant, "3");
  ASSERT_EQ(o.dtypes.size(), 2u);
  EXPECT_EQ(o.dtypes[1], DType::bf16);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_EQ(o.out, "x.jsonl");
  EXPECT_TRUE(o.list && o.no_rotate && o.graph);
  EXPECT_EQ(o.seed, 42u);
}

TEST(Cli, RejectsMalformed) {
  EXPECT_THROW(parse({"--bogus"}), BadArgument);
  EXPECT_THROW(parse({"--iters"}), BadArgument);
  EXPECT_THROW(parse({"--iters", "ten"}), BadArgument);
  EXPECT_THROW(parse({"--iters", "0"}), BadArgument);
  EXPECT_THROW(parse({"--iters", "5x"}), BadArgument);
  EXPECT_THROW(parse({"--dtype", "fp16"}), BadArgument);
  EXPECT_THROW(parse({"--list=yes"}), BadArgument);
  EXPECT_THROW(parse({"positional"}), BadArgument);
  EXPECT_THROW(parse({"--variant", ""}), BadArgument);
}

TEST(Cli, ExtraFlags) {
  std::vector<ExtraFlag> ex{{"causal", false, "causal mask"}, {"hkv", true, "kv heads"}};
  Options o = parse({"--causal", "--hkv", "8"}, ex);
  EXPECT_EQ(o.extra.at("causal"), "1");
  EXPECT_EQ(o.extra.at("hkv"), "8");
  EXPECT_THROW(parse({"--hkv"}, ex), BadArgument);
  EXPECT_NE(usage_text("p", "RxC", ex).find("--hkv"), std::string::npos);
}

TEST(Cli, ParseNumberIsStrict) {
  EXPECT_DOUBLE_EQ(parse_number("--eps", "1e-3"), 1e-3);
  EXPECT_DOUBLE_EQ(parse_number("--eps", "0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_number("--eps", "2.5"), 2.5);
  for (const char* bad : {"", "1e-3foo", "inf", "-inf", "nan", "1e999", "abc", " ", "1e-3 "})
    EXPECT_THROW(parse_number("--eps", bad), BadArgument) << "'" << bad << "'";
  try {
    parse_number("--eps", "1e-3foo");
  } catch (const BadArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--eps"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("1e-3foo"), std::string::npos);
  }
}

TEST(Cli, VariantListsAllIsAToken) {
  EXPECT_TRUE(variant_lists_all("all"));
  EXPECT_TRUE(variant_lists_all("3,all"));
  EXPECT_TRUE(variant_lists_all("all,auto"));
  EXPECT_FALSE(variant_lists_all("small_splitk"));  // a rung name containing "all"
  EXPECT_FALSE(variant_lists_all("12,auto"));
  EXPECT_FALSE(variant_lists_all("alls,xall"));
  EXPECT_FALSE(variant_lists_all(""));
}

TEST(Shape, PositionalNamedAndDefaults) {
  Shape s = parse_shape("16384x8192", {"rows", "cols"});
  EXPECT_EQ(s["rows"], 16384);
  EXPECT_EQ(s["cols"], 8192);
  EXPECT_EQ(s.str(), "rows=16384,cols=8192");
  Shape t = parse_shape("cols=5,rows=3", {"rows", "cols"});
  EXPECT_EQ(t.str(), "rows=3,cols=5");
  Shape u = parse_shape("B=2,Sq=1", {"B", "Sq", "D"}, {{"D", 128}});
  EXPECT_EQ(u["D"], 128);
  EXPECT_TRUE(u.has("Sq"));
  EXPECT_FALSE(u.has("M"));
  EXPECT_THROW(u["M"], BadArgument);
}

TEST(Shape, RejectsMalformed) {
  std::vector<std::string> d{"M", "N", "K"};
  EXPECT_THROW(parse_shape("4x4", d), BadArgument);          // missing K
  EXPECT_THROW(parse_shape("4x4x4x4", d), BadArgument);      // too many
  EXPECT_THROW(parse_shape("4xAx4", d), BadArgument);        // not a number
  EXPECT_THROW(parse_shape("M=4,N=4,Q=4", d), BadArgument);  // unknown dim
  EXPECT_THROW(parse_shape("M=4,M=5,N=1,K=1", d), BadArgument);
  EXPECT_THROW(parse_shape("M=-1,N=1,K=1", d), BadArgument);
  EXPECT_THROW(parse_shape("", d), BadArgument);
}

TEST(Shape, ZeroIsParsedAndLeftToTheBench) {
  // parse_shape accepts 0 (attention's causal=0); each bench refuses the dims that must be >= 1.
  EXPECT_EQ(parse_shape("0x4", {"rows", "cols"})["rows"], 0);
  EXPECT_THROW(parse_shape("4x1099511627777", {"rows", "cols"}), BadArgument);  // above 2^40
}

TEST(SampleEntries, DistinctCornersFirstAndEveryEntryOfSmallOutputs) {
  auto one = sample_entries(1, 1, 256, 7);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], std::make_pair(0, 0));
  auto small = sample_entries(3, 5, 256, 7);
  ASSERT_EQ(small.size(), 15u);
  EXPECT_EQ(small[0], std::make_pair(0, 0));
  EXPECT_EQ(small[1], std::make_pair(2, 4));
  using Set = std::set<std::pair<int, int>>;
  EXPECT_EQ(Set(small.begin(), small.end()).size(), 15u);
  auto big = sample_entries(4097, 1023, 256, 7);
  ASSERT_EQ(big.size(), 256u);
  EXPECT_EQ(big[0], std::make_pair(0, 0));
  EXPECT_EQ(big[1], std::make_pair(4096, 1022));
  EXPECT_EQ(Set(big.begin(), big.end()).size(), 256u);
  for (const auto& e : big) {
    EXPECT_TRUE(e.first >= 0 && e.first < 4097 && e.second >= 0 && e.second < 1023);
  }
  EXPECT_EQ(sample_entries(4097, 1023, 256, 7), big);  // deterministic from the seed
}

TEST(Memory, HostRefusalNamesTheShapeAndTheBytes) {
  EXPECT_GT(host_available_bytes(), 0.0);
  EXPECT_NO_THROW(require_host_memory("tiny", 1.0));
  try {
    require_host_memory("bench_x shape rows=1,cols=1", 1e30);
    ADD_FAILURE() << "1e30 bytes of host memory accepted";
  } catch (const BadArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rows=1,cols=1"), std::string::npos) << m;
    EXPECT_NE(m.find("bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("available"), std::string::npos) << m;
  }
}

TEST(Rotation, L2ResidentUnlessTheRotationExceedsThreeL2) {
  DeviceInfo d;
  d.l2_bytes = 60 << 20;
  const size_t mib = size_t(1) << 20;
  EXPECT_TRUE(is_l2_resident(mib, 1, d));           // --no-rotate on a small set
  EXPECT_TRUE(is_l2_resident(mib, 64, d));          // a capped rotation short of 3x L2
  EXPECT_TRUE(is_l2_resident(mib, 180, d));         // exactly 3x L2: not past it
  EXPECT_FALSE(is_l2_resident(mib, 181, d));        // what rotation_copies aims for
  EXPECT_FALSE(is_l2_resident(512 * mib, 1, d));    // one set far past the L2
  EXPECT_TRUE(is_l2_resident(8, kMaxRotationCopies, d));  // the 1x1x1 GEMM's capped rotation
}

// A reporter writing to a temporary file (the rows it emits), for the validation helpers.
struct TmpReporter {
  std::string path;
  Options o;
  DeviceInfo d;
  std::unique_ptr<Reporter> rep;
  TmpReporter() {
    char name[] = "/tmp/kl_harness_test_XXXXXX";
    const int fd = mkstemp(name);
    if (fd >= 0) close(fd);
    path = name;
    o.out = path;
    rep = std::make_unique<Reporter>(o, d);
  }
  ~TmpReporter() {
    rep.reset();
    std::remove(path.c_str());
  }
  size_t rows() {
    rep->finish();
    std::ifstream f(path);
    size_t n = 0;
    for (std::string line; std::getline(f, line);) n += !line.empty();
    return n;
  }
};

TEST(Validate, CopyZeroAndTheLastRotatedCopy) {
  ErrStats good, bad;
  good.ok = true;
  good.n = 4;
  bad.ok = false;
  bad.n = 4;
  bad.bad = 1;
  {
    TmpReporter t;
    Row r;
    std::vector<int> seen;
    EXPECT_TRUE(validate_copies(r, *t.rep, 5, [&](int i) { seen.push_back(i); return good; }, "x"));
    EXPECT_EQ(seen, (std::vector<int>{0, 4}));
    EXPECT_TRUE(r.validated);
    EXPECT_EQ(r.notes["validated_copies"], "0,4");
    EXPECT_EQ(t.rep->exit_code(), 0);
  }
  {
    TmpReporter t;
    Row r;
    std::vector<int> seen;
    EXPECT_TRUE(validate_copies(r, *t.rep, 1, [&](int i) { seen.push_back(i); return good; }, "x"));
    EXPECT_EQ(seen, (std::vector<int>{0}));
    EXPECT_EQ(r.notes["validated_copies"], "0");
  }
  {
    TmpReporter t;
    Row r;
    EXPECT_FALSE(validate_copies(r, *t.rep, 3, [&](int i) { return i == 0 ? good : bad; }, "x"));
    EXPECT_FALSE(r.err.ok);
    EXPECT_EQ(r.err.bad, 1u);
    EXPECT_EQ(t.rep->exit_code(), 1);
    EXPECT_EQ(t.rows(), 0u);
  }
}

TEST(Validate, GraphReplayCheckDecidesTheRow) {
  ErrStats bad;
  bad.ok = false;
  {
    TmpReporter t;
    Row r;
    r.validated = true;
    r.err.ok = true;
    emit_timed(*t.rep, r, "x");  // no graph checked: written as is
    EXPECT_EQ(t.rows(), 1u);
  }
  {
    TmpReporter t;
    Row r;
    r.validated = true;
    r.err.ok = true;
    r.t.graph_checked = true;
    r.t.graph_err.ok = true;
    emit_timed(*t.rep, r, "x");
    EXPECT_EQ(t.rows(), 1u);
    std::ifstream f(t.path);
    std::string line;
    std::getline(f, line);
    EXPECT_EQ(nlohmann::json::parse(line)["notes"]["graph_validated"], "1");
  }
  {
    TmpReporter t;
    Row r;
    r.validated = true;
    r.err.ok = true;
    r.t.graph_checked = true;
    r.t.graph_err = bad;
    emit_timed(*t.rep, r, "x");
    EXPECT_EQ(t.rows(), 0u);
    EXPECT_EQ(t.rep->exit_code(), 1);
  }
}

TEST(Compare, PassesWithinToleranceFailsOutside) {
  std::vector<double> ref{1.0, -2.0, 3.0, 0.0};
  std::vector<float> got{1.0f, -2.0f, 3.0f, 0.0f};
  Tolerance tol{1e-6, 1e-5, 1e-6};
  EXPECT_TRUE(compare(got.data(), ref.data(), 4, tol).ok);
  got[2] = 3.01f;
  ErrStats e = compare(got.data(), ref.data(), 4, tol);
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.worst, 2u);
  EXPECT_EQ(e.bad, 1u);
  EXPECT_NEAR(e.max_abs, 0.01, 1e-6);
}

// Outputs of 100M+ elements are compared on every core (bench/harness.cpp): the chunked statistics
// must equal the serial definition — counts, the worst element (the earliest on a tie), the sums.
TEST(Compare, LargeOutputsSplitAcrossThreadsMatchTheSerialDefinition) {
  const size_t n = (size_t(1) << 21) + 12345;  // not a multiple of any chunk count
  std::vector<double> ref(n);
  std::vector<float> got(n);
  for (size_t i = 0; i < n; ++i) {
    ref[i] = std::sin(0.001 * static_cast<double>(i)) + 2.0;
    got[i] = static_cast<float>(ref[i]);
  }
  Tolerance tol{1e-6, 1e-5, 1e-3};
  ErrStats ok = compare(got.data(), ref.data(), n, tol);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.n, n);
  // Two equally bad elements far apart (different chunks) and a milder one: worst = the first.
  ref[7] = ref[n - 3] = 2.0;  // exactly the same excess at both
  got[7] = got[n - 3] = 2.5f;
  got[n / 2] = static_cast<float>(ref[n / 2] + 0.25);
  got[n / 3] = std::numeric_limits<float>::quiet_NaN();
  ErrStats e = compare(got.data(), ref.data(), n, tol);
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.bad, 4u);
  EXPECT_EQ(e.nonfinite, 1u);
  EXPECT_EQ(e.worst, n / 3);  // a non-finite element outranks any finite excess
  got[n / 3] = static_cast<float>(ref[n / 3]);
  e = compare(got.data(), ref.data(), n, tol);
  EXPECT_EQ(e.bad, 3u);
  EXPECT_EQ(e.worst, 7u);
  EXPECT_NEAR(e.max_abs, 0.5, 1e-6);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  EXPECT_NEAR(e.rel_l2, std::sqrt(num / den), 1e-12);
}

TEST(Compare, NanAndInfHandling) {
  Tolerance tol{1e-3, 1e-3, 1e-3};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<double> ref{1.0, 2.0};
  std::vector<float> got{1.0f, nan};  // a poisoned, unwritten element
  ErrStats e = compare(got.data(), ref.data(), 2, tol);
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.nonfinite, 1u);
  EXPECT_EQ(e.worst, 1u);
  got[1] = inf;
  EXPECT_FALSE(compare(got.data(), ref.data(), 2, tol).ok);
  // A reference special must be matched exactly.
  std::vector<double> ref2{-INFINITY, 1.0};
  std::vector<float> got2{-inf, 1.0f};
  EXPECT_TRUE(compare(got2.data(), ref2.data(), 2, tol).ok);
  got2[0] = inf;
  EXPECT_FALSE(compare(got2.data(), ref2.data(), 2, tol).ok);
}

TEST(Compare, RelL2AndSampled) {
  std::vector<double> ref(1000, 1.0);
  std::vector<float> got(1000, 1.004f);  // every element within rel 1e-2 but rel_l2 = 4e-3
  EXPECT_TRUE(compare(got.data(), ref.data(), 1000, Tolerance{0, 1e-2, 5e-3}).ok);
  EXPECT_FALSE(compare(got.data(), ref.data(), 1000, Tolerance{0, 1e-2, 1e-3}).ok);
  std::vector<size_t> idx{3, 999};
  std::vector<double> r2{1.004, 1.004};
  ErrStats e = compare_at(got.data(), r2.data(), idx, Tolerance{1e-6, 1e-6, 1e-6});
  EXPECT_TRUE(e.ok);
  EXPECT_EQ(e.n, 2u);
}

// A reference within the absolute tolerance of zero has no scale for the L2 gate: a denormal
// flushed to 0 passes; the gate still holds wherever ref's RMS exceeds abs.
TEST(Compare, RelL2NeedsAScale) {
  const Tolerance tol{1e-5, 1e-4, 1e-5};
  std::vector<double> tiny{3.89e-40};
  std::vector<float> zero{0.f};
  EXPECT_TRUE(compare(zero.data(), tiny.data(), 1, tol).ok);
  std::vector<double> small(100, 2e-5);
  std::vector<float> off(100, 2.5e-5f);  // each within abs 1e-5, rel_l2 0.25
  EXPECT_FALSE(compare(off.data(), small.data(), 100, tol).ok);
}

TEST(Compare, EmptyNeverPasses) {
  Tolerance tol{1, 1, 1};
  EXPECT_FALSE(compare(static_cast<const float*>(nullptr), static_cast<const double*>(nullptr), 0, tol).ok);
}

TEST(Json, RowHasEveryDocumentedField) {
  DeviceInfo d;
  d.name = "Test GPU";
  d.cc_major = 9;
  d.sms = 132;
  d.l2_bytes = 60 << 20;
  d.runtime_version = 13000;
  Row r;
  r.family = "rmsnorm";
  r.op = "rmsnorm";
  r.variant = 4;
  r.variant_name = "row_in_registers";
  r.change = "x";
  r.dtype = "bf16";
  r.shape = parse_shape("16x32", {"rows", "cols"});
  r.t.median_ms = 2.0;
  r.t.min_ms = 1.5;
  r.t.max_ms = 3.0;
  r.t.iters = 100;
  r.bytes = 4e9;
  r.validated = true;
  r.err.ok = true;
  r.err.n = 512;
  r.notes["picked"] = "04";
  auto j = nlohmann::json::parse(row_to_json(r, d, RunInfo{"abc", "2026-11-29T00:00:00Z"}));
  for (const char* k : {"family", "op", "impl", "variant", "variant_name", "change", "dtype", "shape",
                        "shape_str", "median_ms", "min_ms", "max_ms", "iters", "graph_ms", "flops",
                        "bytes", "tflops", "gbps", "validated", "ok", "err", "tol", "l2_resident",
                        "copies", "seed", "clock_mhz", "device", "cuda_runtime", "driver",
                        "git_commit", "timestamp", "notes"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["shape"]["cols"], 32);
  EXPECT_EQ(j["shape_str"], "rows=16,cols=32");
  EXPECT_DOUBLE_EQ(j["gbps"].get<double>(), 2000.0);  // 4e9 B / 2 ms = 2000 GB/s
  EXPECT_TRUE(j["tflops"].is_null());
  EXPECT_TRUE(j["graph_ms"].is_null());  // NaN is not JSON: null
  EXPECT_EQ(j["device"]["cc"], "9.0");
  EXPECT_EQ(j["notes"]["picked"], "04");
  EXPECT_TRUE(j["ok"].get<bool>());
}

TEST(Json, RowsThatComparedNothingAreNotValidated) {
  DeviceInfo d;
  Row r;  // a copy or probe row: validated stays false
  auto j = nlohmann::json::parse(row_to_json(r, d, run_info()));
  EXPECT_FALSE(j["validated"].get<bool>());
  EXPECT_TRUE(j["ok"].get<bool>());
}

TEST(Json, FailedValidationIsNotOk) {
  DeviceInfo d;
  Row r;
  r.validated = true;
  r.err.ok = false;
  auto j = nlohmann::json::parse(row_to_json(r, d, run_info()));
  EXPECT_FALSE(j["ok"].get<bool>());
}

TEST(Select, RungsByNumberNameAllAuto) {
  static const std::vector<Rung<int>> table{
      {0, "naive", "first", [](const int&, const DeviceInfo&) { return std::string(); }, [](const int&, cudaStream_t) {}},
      {1, "fast", "second", [](const int& a, const DeviceInfo&) { return a > 5 ? std::string("too big") : std::string(); },
       [](const int&, cudaStream_t) {}}};
  bool want_auto = false;
  auto all = select_rungs(table, "all", &want_auto);
  EXPECT_EQ(all.size(), 2u);
  EXPECT_TRUE(want_auto);
  auto one = select_rungs(table, "fast", &want_auto);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]->number, 1);
  EXPECT_FALSE(want_auto);
  EXPECT_EQ(select_rungs(table, "0,auto", &want_auto).size(), 1u);
  EXPECT_TRUE(want_auto);
  EXPECT_THROW(select_rungs(table, "7", &want_auto), BadArgument);
  DeviceInfo d;
  EXPECT_EQ(best_supported(table, 3, d)->number, 1);
  EXPECT_EQ(best_supported(table, 9, d)->number, 0);
  EXPECT_EQ(table[1].supports(9, d), "too big");
}

TEST(Dtype, Bf16RoundTripAndRounding) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + 1.0f / 512), 1.0f);  // ties to even
  EXPECT_EQ(round_to_bf16(1.0f + 3.0f / 512), 1.0f + 4.0f / 512);
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  DType t;
  EXPECT_TRUE(parse_dtype("bfloat16", &t));
  EXPECT_EQ(t, DType::bf16);
  EXPECT_FALSE(parse_dtype("half", &t));
}
