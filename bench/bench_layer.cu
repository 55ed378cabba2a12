// bench/bench_layer.cu — one Llama decoder layer (kl::layer): prefill and decode steps at Llama-3-8B
// dimensions by default, every rung and the entry point, validated against the GPU fp32 reference
// (kernels/layer/reference.h).
//
// Ops: "prefill" (S > 1: B sequences of S tokens at positions L - S .. L - 1, the default positions,
// against cache rows [0, L)) and "decode" (S = 1: one token per sequence at position L - 1 against
// the whole cache of L rows). Per shape: random weights (bench/layer_inputs.h), x in [-1, 1), caches
// whose rows hold random earlier K/V, a zeroed workspace; the reference runs once on its own copy of
// the caches; each row then poisons y, launches, compares y in full with the reference (a launch
// rewrites the same cache rows with the same values, so every launch sees the same caches) and
// times. Decode rows also time a CUDA graph of launches, whose y is compared after one more replay.
// The weights are not rotated (one set, read once per launch; a shape whose bytes fit 3x the L2 is
// marked l2_resident). FLOPs: layer_flops (the five GEMMs and the attention); bytes: layer_bytes
// (every weight, the cache rows [0, L), x and y once). A shape whose host buffers would not fit is
// refused before anything is allocated; one whose device buffers do not fit in the free memory is
// skipped with a message (no row) before its buffers are allocated, and the run goes on.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/layer_inputs.h"
#include "kernels/layer/reference.h"
#include "kl/layer.h"

namespace {
using namespace kl;
using namespace kl::bench;

const std::vector<std::string> kDims = {"B", "S", "L", "hidden", "Hq", "Hkv", "D", "mlp"};
const std::map<std::string, long long> kDefaults = {{"B", 1},   {"L", kLSameAsS}, {"hidden", 4096},
                                                    {"Hq", 32}, {"Hkv", 8},      {"D", 128},
                                                    {"mlp", 14336}};
// Llama-3-8B: prefills of 4096 and 8192 tokens (one sequence, and four of 2048), decode steps of 1,
// 16 and 64 sequences against caches of 4096 and 32768 rows.
const std::vector<std::string> kDefaultShapes = {
    "B=1,S=4096",       "B=1,S=8192",       "B=4,S=2048",        "B=1,S=1,L=4096",    "B=16,S=1,L=4096",
    "B=64,S=1,L=4096",  "B=1,S=1,L=32768",  "B=16,S=1,L=32768",  "B=64,S=1,L=32768"};
const std::vector<std::string> kQuickShapes = {"B=1,S=1024", "B=16,S=1,L=4096"};

// The layer tests' tolerance (tests/layer_test_util.h: a rounding moved by one ulp twice on the way
// to an element) and the relative-L2 gate.
const Tolerance kTol{1.0 / 32, 1.0 / 64, 1e-2};

LayerDims dims_of(const Shape& sh) {
  LayerDims m;
  m.hidden = static_cast<int>(sh["hidden"]);
  m.Hq = static_cast<int>(sh["Hq"]);
  m.Hkv = static_cast<int>(sh["Hkv"]);
  m.D = static_cast<int>(sh["D"]);
  m.mlp = static_cast<int>(sh["mlp"]);
  return m;
}
LayerArgs shape_args(const Shape& sh) {
  LayerArgs a;
  a.dims = dims_of(sh);
  a.B = static_cast<int>(sh["B"]);
  a.S = static_cast<int>(sh["S"]);
  a.L = static_cast<int>(sh["L"]);
  a.kv_len = a.L;
  a.mode = a.S == 1 ? LayerMode::decode : LayerMode::prefill;
  return a;
}
double weight_elems(const Shape& sh) {
  const double h = sh["hidden"];
  return h * ((sh["Hq"] + 2.0 * sh["Hkv"]) * sh["D"] + sh["Hq"] * sh["D"] + 3.0 * sh["mlp"] + 2);
}

void run_shape(const Shape& sh, const Options& o, bool all, const std::vector<const Rung<LayerArgs>*>& rungs,
               bool want_auto, Reporter& rep, const DeviceInfo& dev, cudaStream_t stream) {
  LayerArgs base = shape_args(sh);
  const bool decode = base.mode == LayerMode::decode;
  const long long T = static_cast<long long>(base.B) * base.S;
  const size_t n_x = static_cast<size_t>(T) * base.dims.hidden;
  const size_t n_cache = static_cast<size_t>(base.B) * base.dims.Hkv * base.L * base.dims.D;
  const uint64_t seed = run_seed(o);

  LayerWeightsOnDevice W(base.dims, seed, stream);
  DeviceBuffer x(2 * n_x), y(2 * n_x), y_ref(2 * n_x), kc(2 * n_cache), vc(2 * n_cache), kc_ref(2 * n_cache),
      vc_ref(2 * n_cache), pos(decode ? 4 * static_cast<size_t>(base.B) : 0);
  fill_uniform(x.ptr, n_x, DType::bf16, seed ^ 0x1234567ULL, -1.f, 1.f, stream);
  fill_uniform(kc.ptr, n_cache, DType::bf16, seed ^ 0x2345678ULL, -1.f, 1.f, stream);
  fill_uniform(vc.ptr, n_cache, DType::bf16, seed ^ 0x3456789ULL, -1.f, 1.f, stream);
  KL_CHECK(cudaMemcpyAsync(kc_ref.ptr, kc.ptr, 2 * n_cache, cudaMemcpyDeviceToDevice, stream));
  KL_CHECK(cudaMemcpyAsync(vc_ref.ptr, vc.ptr, 2 * n_cache, cudaMemcpyDeviceToDevice, stream));
  const std::vector<int> positions(decode ? base.B : 0, base.L - 1);
  if (decode)
    KL_CHECK(cudaMemcpyAsync(pos.ptr, positions.data(), 4 * positions.size(), cudaMemcpyHostToDevice, stream));
  base.x = x.as<__nv_bfloat16>();
  base.y = y.as<__nv_bfloat16>();
  base.w = W.w;
  base.k_cache = kc.as<__nv_bfloat16>();
  base.v_cache = vc.as<__nv_bfloat16>();
  base.pos = decode ? pos.as<int>() : nullptr;
  DeviceBuffer ws(layer_workspace_bytes(base, dev)), ws_ref(layer_reference_workspace_bytes(base));
  KL_CHECK(cudaMemsetAsync(ws.ptr, 0, ws.bytes, stream));  // once: the families' flags
  base.workspace = ws.ptr;
  base.workspace_bytes = ws.bytes;

  // The reference, once, on its own caches.
  LayerArgs ref = base;
  ref.y = y_ref.as<__nv_bfloat16>();
  ref.k_cache = kc_ref.as<__nv_bfloat16>();
  ref.v_cache = vc_ref.as<__nv_bfloat16>();
  ref.workspace = ws_ref.ptr;
  ref.workspace_bytes = ws_ref.bytes;
  layer_reference(ref, stream);
  KL_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> yr = download_as_float(y_ref.ptr, n_x, DType::bf16);
  const std::vector<double> want(yr.begin(), yr.end());

  const double flops = layer_flops(base), bytes = layer_bytes(base);
  const bool l2res = is_l2_resident(static_cast<size_t>(bytes), 1, dev);
  const std::string op = decode ? "decode" : "prefill";
  auto poison_out = [&] { poison(y.ptr, y.bytes, stream); };
  auto compare_out = [&] {
    KL_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> got = download_as_float(y.ptr, n_x, DType::bf16);
    return compare(got.data(), want.data(), n_x, kTol);
  };
  auto run_one = [&](const Rung<LayerArgs>* rung, bool is_auto) {
    Row r = problem_row("layer", op, "bf16", sh, flops, bytes, l2res, 1, seed, kTol);
    r.notes["workspace_bytes"] = std::to_string(ws.bytes);
    const std::string label = op + " " + sh.str();
    const Rung<LayerArgs>* use =
        label_row(r, rep, rung, is_auto, is_auto ? layer_pick(base, dev) : nullptr, base, dev, label);
    if (!use) return;
    auto launch = [&](int) {
      if (is_auto) layer(base, stream);
      else use->launch(base, stream);
    };
    r.notes["validated_against"] = "gpu_fp32_reference (y)";
    // The checked output is the third call's with these arguments: rung 01 replays its graph from
    // the third repeat on, so what its timed launches run is what is validated.
    auto check_on = [&](int i) {
      for (int k = 0; k < 2; ++k) launch(i);
      poison_out();
      single_launch_ms([&] { launch(i); }, stream);
      return compare_out();
    };
    if (!validate_copies(r, rep, 1, check_on, "differs from the GPU fp32 reference")) return;
    Options c = iters_for_budget(o, [&] { launch(0); }, stream, 1.0, !all, &r);
    const GraphCheck graph_check{poison_out, compare_out};
    r.t = time_launches(launch, c, stream, decode, &graph_check);
    emit_timed(rep, r, "differs from the GPU fp32 reference");
  };
  run_rows(rungs, want_auto, [&] { return layer_pick(base, dev); }, run_one);

  // Where a rung's time goes: its launch as steps, each between two events inside the sequence, one
  // row per step (op "<op>_step", variant = the step's index, notes "of" = the rung): rung 00's
  // (layer_entry_points_steps) and, where it runs, the top rung's (layer_fused_residual_steps). The
  // steps' inputs are the layer's own (the rungs ran on them above, validated).
  auto breakdown = [&](int number, std::vector<layer_detail::LayerStep> (*steps_of)(const LayerArgs&)) {
    const auto it = std::find_if(rungs.begin(), rungs.end(), [&](const Rung<LayerArgs>* r) { return r->number == number; });
    if (it == rungs.end() || !(*it)->supports(base, dev).empty()) return;
    const std::string of = (number < 10 ? "0" : "") + std::to_string(number) + " " + (*it)->name;
    const std::vector<layer_detail::LayerStep> steps = steps_of(base);
    std::vector<std::function<void()>> runs;
    for (const auto& st : steps) runs.push_back([&st, stream] { st.run(stream); });
    const std::vector<Timing> ts = time_steps(runs, o, stream);
    for (size_t j = 0; j < steps.size(); ++j) {
      Row r = problem_row("layer", op + "_step", "bf16", sh, 0, 0, l2res, 1, seed, kTol);
      r.variant = static_cast<int>(j);
      r.variant_name = steps[j].name;
      r.change = "step " + std::to_string(j) + " of rung " + of + "'s launch, timed inside the sequence";
      r.t = ts[j];
      r.notes["of"] = of;
      rep.emit(r);
    }
  };
  breakdown(0, layer_detail::layer_entry_points_steps);
  breakdown(3, layer_detail::layer_fused_residual_steps);
}

int run(int argc, char** argv) {
  Options o = parse_cli(argc, argv, "bench_layer",
                        "BxSxLxhiddenxHqxHkvxDxmlp or B=..,S=..,L=..,hidden=..,Hq=..,Hkv=..,D=..,mlp=.. (S = 1: "
                        "decode, else prefill; Llama-3-8B dims, B=1 and L=S by default)");
  if (o.list) {
    print_rungs(layer_rungs(), "layer rungs (one Llama decoder layer, bf16, fp32 math)");
    return 0;
  }
  for (DType t : o.dtypes) KL_REQUIRE(t == DType::bf16, "bench_layer: only --dtype bf16");
  if (o.quick) o.iters = std::min(o.iters, 20);
  bool want_auto = false;
  const auto rungs = select_rungs(layer_rungs(), o.variant, &want_auto);
  const bool all = variant_lists_all(o.variant);

  std::vector<Shape> parsed;
  for (const auto& s : o.shapes.empty() ? (o.quick ? kQuickShapes : kDefaultShapes) : o.shapes) {
    const Shape r = parse_shape_with_cache(s, kDims, kDefaults);
    for (const char* k : {"B", "S", "L", "hidden", "Hq", "Hkv", "mlp"})
      KL_REQUIRE(r[k] >= 1 && r[k] <= 0x7fffffffLL, "bench_layer: " << k << " must be in 1..2^31-1 (shape " << s << ")");
    KL_REQUIRE(r["D"] == 64 || r["D"] == 128, "bench_layer: D must be 64 or 128 (shape " << s << ")");
    KL_REQUIRE(r["Hq"] % r["Hkv"] == 0, "bench_layer: Hkv must divide Hq (shape " << s << ")");
    KL_REQUIRE(r["hidden"] % 8 == 0 && r["mlp"] % 8 == 0,
               "bench_layer: hidden and mlp must be multiples of 8 (shape " << s << ")");
    KL_REQUIRE(r["S"] <= r["L"], "bench_layer: S must be <= L (shape " << s << ")");
    KL_REQUIRE(r["Hq"] + 2 * r["Hkv"] <= (1 << 20), "bench_layer: Hq + 2 Hkv must be at most 2^20 (shape " << s << ")");
    const double T = double(r["B"]) * r["S"];
    const double widest = std::max({double(r["hidden"]), double(r["mlp"]), double(r["Hq"] + 2 * r["Hkv"]) * r["D"]});
    KL_REQUIRE(T * widest <= double(1LL << 34), "bench_layer: an activation of more than 2^34 elements (shape " << s << ")");
    KL_REQUIRE(weight_elems(r) <= double(1LL << 34), "bench_layer: more than 2^34 weight elements (shape " << s << ")");
    KL_REQUIRE(double(r["B"]) * r["Hkv"] * r["L"] * r["D"] <= double(1LL << 34),
               "bench_layer: a cache of more than 2^34 elements (shape " << s << ")");
    parsed.push_back(r);
  }
  // Host: the reference y as doubles and one download as floats (12 bytes per element of y).
  for (const Shape& sh : parsed)
    require_host_memory("bench_layer shape " + sh.str(), 12.0 * sh["B"] * sh["S"] * sh["hidden"]);
  const DeviceInfo& dev = device_info();
  print_banner(dev);
  Reporter rep(o, dev);
  Stream stream;
  for (const Shape& sh : parsed) {
    // Checked against the free memory just before the shape allocates (the previous shape's
    // buffers are freed by then): a shape that does not fit is skipped, the others still run.
    const LayerArgs a = shape_args(sh);
    const double cache = 2.0 * sh["B"] * sh["Hkv"] * sh["L"] * sh["D"];
    try {
      require_device_memory("bench_layer shape " + sh.str(),
                            2.0 * weight_elems(sh) + 6.0 * sh["B"] * sh["S"] * sh["hidden"] + 4 * cache +
                                double(layer_workspace_bytes(a, dev)) + double(layer_reference_workspace_bytes(a)));
    } catch (const BadArgument& e) {
      rep.skip(std::string(a.mode == LayerMode::decode ? "decode " : "prefill ") + sh.str(), e.what());
      continue;
    }
    run_shape(sh, o, all, rungs, want_auto, rep, dev, stream);
  }
  return rep.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
