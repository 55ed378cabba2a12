// bench/bench_rmsnorm.cu — the RMSNorm ladder (op "rmsnorm") and the fused residual-add + RMSNorm
// ladder (op "add_rmsnorm"), against a same-run cudaMemcpy D2D.
//
// Per shape, dtype and op: rotation copies of the inputs (x, and r for the fused op; fresh uniform
// values, never zeros), a CPU double reference on the storage-rounded inputs, a cudaMemcpy row
// moving the op's bytes less the weight (x for rmsnorm, x and r for add_rmsnorm, each read and
// written: 2 and 4 tensors of traffic, the same as the op; it compares nothing: validated false),
// then every selected rung (supports()? restore r, poison the outputs, launch on input copy 0 and
// on the last rotated copy, download, full comparison of y (and r) each time, time) and the "auto"
// row. Bytes: rmsnorm reads x and w and writes y (2 tensors + w); add_rmsnorm reads x, r, w and
// writes r, y (4 tensors + w). The fused op accumulates into r on every timed launch (values stay
// small: |r| grows by at most 2 per launch); so with --graph only rmsnorm's y is compared after
// one more replay of the timed graph (add_rmsnorm rows note graph_validated "no"). A shape whose
// host or device buffers would not fit is refused before anything is allocated.
//
// Flags: the harness's, plus --op rmsnorm|add_rmsnorm|both (default both) and --eps E (1e-6; a
// finite number >= 0 that a float holds).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kl/rmsnorm.h"
#include "kernels/rmsnorm/rmsnorm_ref.h"

namespace {
using namespace kl;
using namespace kl::bench;

struct DefShape {
  const char* shape;
  std::vector<DType> dtypes;
};

const std::vector<DType> kBf = {DType::bf16}, kF = {DType::f32}, kBoth = {DType::f32, DType::bf16};
// Headline DRAM shapes first, then L2-sized and awkward ones.
const std::vector<DefShape> kDefaultShapes = {
    {"16384x8192", kBf},   // 256 MB in, 256 MB out: a DRAM figure for certain
    {"4096x16384", kF},    // 256 MB in
    {"65536x4096", kBf},   // many short rows
    {"4096x1024", kBf},    // 8 MB: L2-sized (rotated unless --no-rotate)
    {"4096x4099", kBoth},  // cols not a multiple of 8 (nor 4): unaligned rows
    {"1x8192", kBf},       // a single row
    {"64x8192", kBf},      // fewer rows than SMs
    {"64x131072", kBf},    // very long rows
    {"16x131072", kF},     // very long rows, few of them
};
const std::vector<DefShape> kQuickShapes = {
    {"4096x1024", kBoth}, {"4096x4099", kBf}, {"64x8192", kBf}, {"16x131072", kF}};

constexpr float kXLo = -2.f, kXHi = 2.f;   // x and r
constexpr float kWLo = 0.25f, kWHi = 2.f;  // w: positive scales like a trained norm weight

Row base_row(const std::string& op, DType t, const Shape& sh, double flops, double bytes,
             bool l2res, int copies, uint64_t seed, const Tolerance& tol) {
  return problem_row("rmsnorm", op, dtype_name(t), sh, flops, bytes, l2res, copies, seed, tol);
}

// One (shape, dtype) for one op. Fused = add_rmsnorm. Generic over the two Args types through the
// small lambdas at the bottom.
template <class Args>
void run_case(bool fused, const Shape& sh, DType t, float eps, const Options& o, bool all,
              const std::vector<const Rung<Args>*>& rungs, bool want_auto, Reporter& rep,
              const DeviceInfo& dev, cudaStream_t stream,
              Args (*make)(void* x, void* r, void* w, void* y, int rows, int cols, float eps,
                           DType t),
              const Rung<Args>* (*pick)(const Args&, const DeviceInfo&),
              void (*entry)(const Args&, cudaStream_t), double (*bytes_of)(const Args&),
              double (*flops_of)(const Args&)) {
  const std::string op = fused ? "add_rmsnorm" : "rmsnorm";
  const int rows = static_cast<int>(sh["rows"]), cols = static_cast<int>(sh["cols"]);
  const size_t n = size_t(rows) * cols, es = dtype_size(t), tensor = n * es;
  const size_t tslot = (tensor + 255) / 256 * 256;  // 256-byte aligned slots
  const int n_in = fused ? 2 : 1;                    // x (| r) per rotation set
  const size_t set_bytes = tslot * n_in;
  const size_t other_bytes = cols * es + tensor + (fused ? tensor + set_bytes : 0);  // w, y, r0, copy
  const int copies = rotation_copies(set_bytes, dev, o.no_rotate, other_bytes);
  const bool l2res = is_l2_resident(set_bytes, copies, dev);
  const uint64_t seed = run_seed(o);

  DeviceBuffer sets(set_bytes * copies), wbuf(cols * es), ybuf(tensor), r0buf(fused ? tensor : 0);
  // The 256-byte padding between x and r in a set is read by the copy row: zero it once.
  KL_CHECK(cudaMemsetAsync(sets.ptr, 0, set_bytes, stream));
  fill_uniform(sets.ptr, n, t, seed, kXLo, kXHi, stream);
  if (fused)
    fill_uniform(static_cast<char*>(sets.ptr) + tslot, n, t, seed ^ 0x5bd1e995u, kXLo, kXHi,
                 stream);
  fill_uniform(wbuf.ptr, cols, t, seed + 77, kWLo, kWHi, stream);
  KL_CHECK(cudaStreamSynchronize(stream));
  replicate(sets.ptr, set_bytes, copies);
  char* r_slot0 = static_cast<char*>(sets.ptr) + tslot;
  if (fused) KL_CHECK(cudaMemcpy(r0buf.ptr, r_slot0, tensor, cudaMemcpyDeviceToDevice));

  // CPU reference on the values the GPU sees.
  std::vector<float> hx = download_as_float(sets.ptr, n, t), hw = download_as_float(wbuf.ptr, cols, t);
  std::vector<float> yref(n), rref;
  if (fused) {
    std::vector<float> hr = download_as_float(r_slot0, n, t);
    rref.resize(n);
    add_rmsnorm_ref(hr.data(), hx.data(), hw.data(), rref.data(), yref.data(), rows, cols, eps, t);
  } else {
    rmsnorm_ref(hx.data(), hw.data(), yref.data(), rows, cols, eps);
  }
  hx.clear();
  hx.shrink_to_fit();
  const Tolerance tol = default_tolerance(t);

  auto args_for = [&](int i) {
    char* set = static_cast<char*>(sets.ptr) + size_t(i % copies) * set_bytes;
    return make(set, fused ? set + tslot : nullptr, wbuf.ptr, ybuf.ptr, rows, cols, eps, t);
  };
  const Args a0 = args_for(0);
  const double bytes = bytes_of(a0), flops = flops_of(a0);

  // ---- cudaMemcpy moving the op's bytes (less the [cols] weight): rmsnorm copies x (one tensor
  // read + written), add_rmsnorm copies the x|r set (two tensors read + written); source rotating.
  {
    const size_t cb = fused ? set_bytes : tensor;  // set_bytes = 2 x (tensor padded to 256 B)
    DeviceBuffer copy_dst(fused ? cb : 0);
    void* dst = fused ? copy_dst.ptr : ybuf.ptr;
    Row r = base_row(op, t, sh, 0, 2.0 * cb, l2res, copies, seed, tol);
    label_copy_row(r, "cudaMemcpy", fused ? "cudaMemcpyAsync D2D of the x|r tensors (bytes = read + write)"
                                          : "cudaMemcpyAsync D2D of the x tensor (bytes = read + write)");
    auto one = [&](int i) {
      const char* src = static_cast<const char*>(sets.ptr) + size_t(i % copies) * set_bytes;
      KL_CHECK(cudaMemcpyAsync(dst, src, cb, cudaMemcpyDeviceToDevice, stream));
    };
    r.t = time_launches(one, o, stream);
    rep.emit(r);
  }

  auto run_one = [&](const Rung<Args>* rung, bool is_auto) {
    Row r = base_row(op, t, sh, flops, bytes, l2res, copies, seed, tol);
    const std::string label = op + " " + dtype_name(t) + " " + sh.str();
    const Rung<Args>* use = label_row(r, rep, rung, is_auto, is_auto ? pick(a0, dev) : nullptr, a0, dev, label);
    if (!use) return;
    auto launch = [&](int i) {
      const Args a = args_for(i);
      if (is_auto) entry(a, stream);
      else use->launch(a, stream);
    };
    auto compare_y = [&]() {
      std::vector<float> got = download_as_float(ybuf.ptr, n, t);
      return compare(got.data(), yref.data(), n, tol);
    };
    std::string which = "y";
    auto check_on = [&](int i) {  // the validation launches: r of copy i restored first
      char* r_slot = static_cast<char*>(sets.ptr) + size_t(i % copies) * set_bytes + tslot;
      if (fused) KL_CHECK(cudaMemcpyAsync(r_slot, r0buf.ptr, tensor, cudaMemcpyDeviceToDevice, stream));
      poison(ybuf.ptr, tensor, stream);
      single_launch_ms([&] { launch(i); }, stream);
      which = "y";
      ErrStats e = compare_y();
      if (!e.ok || !fused) return e;
      const std::vector<float> got = download_as_float(r_slot, n, t);
      const ErrStats er = compare(got.data(), rref.data(), n, tol);
      r.notes["r_max_abs"] = std::to_string(er.max_abs);
      if (er.ok) return e;
      which = "r (= r + x)";
      return er;
    };
    r.notes["validated_against"] = "cpu_double";
    if (!validate_copies(r, rep, copies, check_on, "differs from the CPU double reference")) {
      std::fprintf(stderr, "  (the output that differs: %s)\n", which.c_str());
      return;
    }
    const bool slow = !is_auto && rung->number == 0;  // the thread-per-row rungs
    Options c = iters_for_budget(o, [&] { launch(0); }, stream, slow ? 0.3 : 1.0, !all, &r);
    // rmsnorm: y after one more graph replay. add_rmsnorm: r has moved on by then (it accumulates
    // on every launch), so its output has no reference to compare with.
    const GraphCheck graph_check{[&] { poison(ybuf.ptr, tensor, stream); }, compare_y};
    r.t = time_launches(launch, c, stream, false, fused ? nullptr : &graph_check);
    if (fused && o.graph) r.notes["graph_validated"] = "no";
    emit_timed(rep, r, "differs from the CPU double reference");
  };
  run_rows(rungs, want_auto, [&] { return pick(a0, dev); }, run_one);
}

RmsnormArgs make_plain(void* x, void*, void* w, void* y, int rows, int cols, float eps, DType t) {
  RmsnormArgs a;
  a.x = x;
  a.w = w;
  a.y = y;
  a.rows = rows;
  a.cols = cols;
  a.eps = eps;
  a.dtype = t;
  return a;
}
AddRmsnormArgs make_fused(void* x, void* r, void* w, void* y, int rows, int cols, float eps,
                          DType t) {
  AddRmsnormArgs a;
  a.r = r;
  a.x = x;
  a.w = w;
  a.y = y;
  a.rows = rows;
  a.cols = cols;
  a.eps = eps;
  a.dtype = t;
  return a;
}

int run(int argc, char** argv) {
  const std::vector<ExtraFlag> extra = {
      {"op", true, "rmsnorm | add_rmsnorm | both (default both)"},
      {"eps", true, "epsilon (default 1e-6)"}};
  Options o = parse_cli(argc, argv, "bench_rmsnorm",
                        "ROWSxCOLS or rows=..,cols=.. (RMSNorm over each row of cols)", extra);
  if (o.list) {
    print_rungs(rmsnorm_rungs(), "rmsnorm rungs (y = x / sqrt(mean(x^2) + eps) * w, fp32 math)");
    print_rungs(add_rmsnorm_rungs(),
                "add_rmsnorm rungs (r += x; y = rmsnorm(r) * w, writing r and y)");
    return 0;
  }
  std::string opflag = o.extra.count("op") ? o.extra.at("op") : "both";
  KL_REQUIRE(opflag == "rmsnorm" || opflag == "add_rmsnorm" || opflag == "both",
             "--op must be rmsnorm, add_rmsnorm or both (got '" << opflag << "')");
  float eps = 1e-6f;
  if (o.extra.count("eps")) {
    const double e = parse_number("--eps", o.extra.at("eps"));
    KL_REQUIRE(e >= 0.0 && e <= std::numeric_limits<float>::max() && (e == 0.0 || e >= std::numeric_limits<float>::denorm_min()),
               "--eps must be a number >= 0 that a float holds (got '" << o.extra.at("eps") << "')");
    eps = static_cast<float>(e);
  }
  if (o.quick) o.iters = std::min(o.iters, 20);
  const bool all = variant_lists_all(o.variant);
  // --variant is resolved against each selected table. With --op both, a rung only one table has
  // (e.g. "5" or "vec128") runs that op alone; a name neither table has is an error (exit 2).
  bool auto_p = false, auto_f = false, do_p = opflag != "add_rmsnorm", do_f = opflag != "rmsnorm";
  std::vector<const Rung<RmsnormArgs>*> rp;
  std::vector<const Rung<AddRmsnormArgs>*> rf;
  std::string err_p, err_f;
  if (do_p) {
    try {
      rp = select_rungs(rmsnorm_rungs(), o.variant, &auto_p);
    } catch (const BadArgument& e) {
      err_p = e.what();
    }
  }
  if (do_f) {
    try {
      rf = select_rungs(add_rmsnorm_rungs(), o.variant, &auto_f);
    } catch (const BadArgument& e) {
      err_f = e.what();
    }
  }
  if (opflag == "both" && err_p.empty() != err_f.empty()) {
    std::fprintf(stderr, "note: --variant %s: %s; running the other op only\n", o.variant.c_str(),
                 (err_p.empty() ? "add_rmsnorm " + err_f : "rmsnorm " + err_p).c_str());
    if (!err_p.empty()) do_p = false;
    if (!err_f.empty()) do_f = false;
  } else {
    KL_REQUIRE(err_p.empty(), err_p);
    KL_REQUIRE(err_f.empty(), err_f);
  }

  std::vector<std::pair<Shape, std::vector<DType>>> work;
  if (o.shapes.empty()) {
    for (const auto& d : o.quick ? kQuickShapes : kDefaultShapes)
      work.push_back({parse_shape(d.shape, {"rows", "cols"}), o.dtypes.empty() ? d.dtypes : o.dtypes});
  } else {
    for (const auto& s : o.shapes)
      work.push_back({parse_shape(s, {"rows", "cols"}), o.dtypes.empty() ? kBoth : o.dtypes});
  }
  for (const auto& w : work)
    KL_REQUIRE(w.first["rows"] >= 1 && w.first["rows"] <= 0x7fffffffLL && w.first["cols"] >= 1 &&
                   w.first["cols"] <= 0x7fffffffLL && w.first["rows"] * w.first["cols"] <= (1LL << 33),
               "bench_rmsnorm: rows, cols must be in 1..2^31-1 and rows*cols <= 2^33 ("
                   << w.first.str() << ")");
  // Host peak per element: rmsnorm x and y as floats (and a bf16 staging); add_rmsnorm x, r, y and
  // r's reference as floats (and a staging). Device: one input copy, w, y (and r0 and the copy
  // row's target for add_rmsnorm).
  const double host_per_elem = do_f ? 18.0 : 10.0;
  for (const auto& w : work)
    require_host_memory("bench_rmsnorm shape " + w.first.str(),
                        host_per_elem * double(w.first["rows"]) * double(w.first["cols"]));

  const DeviceInfo& dev = device_info();
  for (const auto& w : work)
    for (DType t : w.second) {
      const double rows = double(w.first["rows"]), cols = double(w.first["cols"]);
      const double es = dtype_size(t), tslot = std::ceil(rows * cols * es / 256) * 256;
      const double need = (do_f ? 6 : 2) * tslot + cols * es;
      require_device_memory("bench_rmsnorm shape " + w.first.str() + " " + dtype_name(t), need);
    }
  print_banner(dev);
  Reporter rep(o, dev);
  cudaStream_t stream;
  KL_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const auto& w : work)
    for (DType t : w.second) {
      if (do_p)
        run_case<RmsnormArgs>(false, w.first, t, eps, o, all, rp, auto_p, rep, dev, stream,
                              make_plain, rmsnorm_pick, rmsnorm, rmsnorm_bytes, rmsnorm_flops);
      if (do_f)
        run_case<AddRmsnormArgs>(true, w.first, t, eps, o, all, rf, auto_f, rep, dev, stream,
                                 make_fused, add_rmsnorm_pick, add_rmsnorm, add_rmsnorm_bytes,
                                 add_rmsnorm_flops);
    }
  KL_CHECK(cudaStreamDestroy(stream));
  return rep.finish();
}
}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
