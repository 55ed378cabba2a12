// bench/bench_attention.cu — the attention ladder (every rung of the table, both parts), prefill and
// decode, against a CPU double reference on sampled rows.
//
// Per shape: rotation copies of Q, K, V (fresh random values in [-1, 1)), one output buffer, the
// rung-03 workspace; the reference (bench/attention_check.h) on every row of a small problem, else
// on at least one row of every (batch, query head) pair plus 64 sampled rows, computed when the
// first row needs it; then for every selected rung: supports()? poison O, launch on input copy 0
// and on the last rotated copy, compare the checked rows each time, time (launch i uses copy
// i % copies; whenever a graph is timed, O after one more replay is compared too). op is
// "attention" for prefill and "decode" for Sq <= 16. FLOPs: 4*B*Hq*D*(visible (i, j) pairs), exact
// for causal; bytes: Q, K, V, O once each (K and V once per KV head). Rungs 00 and 01 are skipped on
// large shapes unless --variant names them, and slow rows have their iterations capped (noted).
// Decode shapes also get a cudaMemcpy row moving the same bytes (the same-run copy roof; it
// compares nothing: validated false). A shape whose host or device buffers would not fit is
// refused before anything is allocated. PyTorch rows come from scripts/torch_baseline.py.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/attention_check.h"
#include "bench/harness.h"
#include "kl/attention.h"

namespace {

using namespace kl;
using namespace kl::bench;

const std::vector<std::string> kDims = {"B", "Hq", "Hkv", "Sq", "Skv", "D", "causal"};
// Hkv and Skv left out: the same as Hq and Sq (-1 marks "left out": a given value is never negative).
constexpr long long kSameAsQ = -1;
const std::map<std::string, long long> kDefaults = {
    {"B", 1}, {"Hkv", kSameAsQ}, {"Skv", kSameAsQ}, {"D", 128}, {"causal", 0}};

std::vector<std::string> default_shapes(bool quick) {
  std::vector<std::string> v;
  auto add = [&](int B, int Hq, int Hkv, int Sq, int Skv, int D, int c) {
    v.push_back("B=" + std::to_string(B) + ",Hq=" + std::to_string(Hq) + ",Hkv=" + std::to_string(Hkv) +
                ",Sq=" + std::to_string(Sq) + ",Skv=" + std::to_string(Skv) + ",D=" + std::to_string(D) +
                ",causal=" + std::to_string(c));
  };
  if (quick) {
    add(8, 32, 32, 1024, 1024, 128, 1);
    add(1, 32, 32, 4096, 4096, 128, 0);
    add(2, 12, 4, 1000, 1234, 64, 1);
    add(1, 32, 8, 1, 32768, 128, 1);
    return v;
  }
  for (int D : {128, 64})
    for (int c : {1, 0}) {
      add(16, 32, 32, 512, 512, D, c);
      add(8, 32, 32, 1024, 1024, D, c);
      for (int S : {4096, 8192, 16384}) add(1, 32, 32, S, S, D, c);
    }
  for (int c : {1, 0}) add(1, 32, 8, 4096, 4096, 128, c);  // GQA 32/8
  add(2, 12, 4, 1000, 1234, 64, 1);                          // ragged, Sq < Skv, GQA
  for (int Skv : {4096, 32768, 131072})
    for (int B : {1, 8})
      for (int Hkv : {8, 32}) add(B, 32, Hkv, 1, Skv, 128, 1);  // decode
  return v;
}



int run(int argc, char** argv) {
  Options o = parse_cli(argc, argv, "bench_attention",
                        "BxHqxHkvxSqxSkvxDxcausal or B=..,Hq=..,Hkv=..,Sq=..,Skv=..,D=..,causal=0|1 "
                        "(Hkv, Skv default to Hq, Sq; B=1, D=128, causal=0)");
  if (o.list) {
    print_rungs(attention_rungs(), "attention rungs (bf16 O = softmax(Q K^T / sqrt(D)) V)");
    return 0;
  }
  for (DType t : o.dtypes)
    KL_REQUIRE(t == DType::bf16, "bench_attention: only --dtype bf16 (Q, K, V, O are bf16)");
  if (o.quick) o.iters = std::min(o.iters, 20);
  bool want_auto = false;
  auto rungs = select_rungs(attention_rungs(), o.variant, &want_auto);
  const bool all = variant_lists_all(o.variant);
  const std::vector<std::string> shapes = o.shapes.empty() ? default_shapes(o.quick) : o.shapes;

  std::vector<Shape> parsed;
  for (const auto& s : shapes) {
    Shape sh = parse_shape(s, kDims, kDefaults);
    Shape r;
    for (const auto& d : sh.dims) {
      long long v = d.second;
      if (d.first == "Hkv" && v == kSameAsQ) v = sh["Hq"];
      if (d.first == "Skv" && v == kSameAsQ) v = sh["Sq"];
      r.dims.emplace_back(d.first, v);
    }
    KL_REQUIRE(r["D"] == 64 || r["D"] == 128, "bench_attention: D must be 64 or 128 (shape " << s << ")");
    KL_REQUIRE(r["causal"] == 0 || r["causal"] == 1, "bench_attention: causal must be 0 or 1 (shape " << s << ")");
    for (const char* k : {"B", "Hq", "Hkv", "Sq", "Skv"})
      KL_REQUIRE(r[k] >= 1 && r[k] <= 0x7fffffffLL,
                 "bench_attention: " << k << " must be in 1..2^31-1 (shape " << s << ")");
    KL_REQUIRE(r["Hq"] % r["Hkv"] == 0, "bench_attention: Hq must be a multiple of Hkv (shape " << s << ")");
    KL_REQUIRE(r["Sq"] <= r["Skv"], "bench_attention: Sq must be <= Skv (shape " << s << ")");
    parsed.push_back(r);
  }
  constexpr int kSampleRows = 64;
  // Host: the reference's K/V chunk and rows. Device: one copy of Q, K, V, then O, the workspace, the
  // gathered rows and (decode) the copy row's target.
  for (const Shape& sh : parsed)
    require_host_memory("bench_attention shape " + sh.str(),
                        attention_check_host_bytes(attention_shape(sh), kSampleRows));

  const DeviceInfo& dev = device_info();
  for (const Shape& sh : parsed) {
    const AttentionArgs a = attention_shape(sh);
    const double q = 2.0 * a.B * a.Hq * a.Sq * a.D, kv = 2.0 * a.B * a.Hkv * a.Skv * a.D;
    const double ws = static_cast<double>(attention_workspace_bytes(a, dev));
    const double gather = attention_checked_rows(a, kSampleRows, 4096) * (8.0 + 2.0 * a.D);
    const double copy_dst = a.Sq <= 16 ? kv : 0;  // the decode copy row's target
    require_device_memory("bench_attention shape " + sh.str(), 2 * q + 2 * kv + ws + gather + copy_dst);
  }
  print_banner(dev);
  Reporter rep(o, dev);
  Stream stream;

  for (const Shape& sh : parsed) {
    const AttentionArgs shape = attention_shape(sh);
    const size_t nQ = attention_q_elems(shape);
    const size_t nKV = attention_kv_elems(shape);
    const size_t set_bytes = 2 * (nQ + 2 * nKV);
    const size_t ws_bytes = attention_workspace_bytes(shape, dev);
    const bool decode = shape.Sq <= 16;
    const int copies = rotation_copies(set_bytes, dev, o.no_rotate, 2 * nQ + ws_bytes + (decode ? 2 * nKV : 0));
    const bool l2res = is_l2_resident(set_bytes + 2 * nQ, copies, dev);
    const uint64_t seed = run_seed(o);
    const AttentionInputs in(shape, copies, seed, stream);
    auto args_for = [&](int i) { return in.args(i); };
    const AttentionArgs a0 = args_for(0);
    // The reference, computed when the first row needs it (not for a shape no rung runs).
    std::unique_ptr<AttentionCheck> check_ptr;
    auto check = [&]() -> const AttentionCheck& {
      if (!check_ptr) check_ptr = std::make_unique<AttentionCheck>(attention_reference_sampled(a0, kSampleRows, seed));
      return *check_ptr;
    };
    const double flops = attention_flops(shape);
    // Work a rung that computes whole 64-row query tiles really does (rung 01 on decode shapes).
    const double tile_work = 4.0 * shape.B * shape.Hq * ((shape.Sq + 63) / 64 * 64.0) * shape.Skv * shape.D;

    auto run_one = [&](const Rung<AttentionArgs>* rung, bool is_auto) {
      Row r = problem_row("attention", decode ? "decode" : "attention", "bf16", sh, flops, attention_bytes(shape),
                          l2res, copies, seed);
      if (ws_bytes) r.notes["workspace_bytes"] = std::to_string(ws_bytes);
      const Rung<AttentionArgs>* use =
          label_row(r, rep, rung, is_auto, is_auto ? attention_pick(a0, dev) : nullptr, a0, dev, sh.str());
      if (!use) return;
      if (!is_auto) {
        const std::string what = "rung " + std::to_string(rung->number) + " " + sh.str();
        // Rungs 00/01 are slow on the long decode caches and on big prefill: in the default run
        // they are shown where a launch stays short.
        const bool too_slow = (rung->number == 0 && (flops > 1e11 || (decode && shape.Skv > 4096))) ||
                              (rung->number == 1 && (tile_work > 2e12 || (decode && shape.Skv > 4096)));
        if (all && too_slow) {
          rep.skip(what, "too slow for the default run; name it with --variant");
          return;
        }
      }
      const AttentionCheck& chk = check();
      r.tol = chk.tol;
      r.notes["validated_against"] = chk.all_rows ? "cpu_double_all_rows"
                                                  : "cpu_double_" + std::to_string(chk.rows.size()) + "_rows";
      auto launch = [&](int i) {
        AttentionArgs a = args_for(i);
        if (is_auto) attention(a, stream);
        else launch_checked(*use, a, stream);
      };
      std::string where;
      auto compare_o = [&]() {
        const ErrStats e = attention_check_output(a0, chk);
        where = attention_where(a0, chk, e.worst);
        return e;
      };
      auto check_on = [&](int i) {  // the validation launches
        poison(in.dO.ptr, 2 * nQ, stream);
        single_launch_ms([&] { launch(i); }, stream);
        return compare_o();
      };
      if (!validate_copies(r, rep, copies, check_on, "differs from the CPU double reference")) {
        std::fprintf(stderr, "  (worst element at %s)\n", where.c_str());
        return;
      }
      // The top rungs get a fuller budget; the slow ones just enough for a stable median.
      const bool top = is_auto || use->number >= 2;
      Options c = iters_for_budget(o, [&] { launch(0); }, stream, top ? 0.5 : 0.25, !all, &r);
      // Decode steps are a few microseconds: the per-launch event time includes host launch cost
      // whenever the host cannot run ahead, so decode rows also report the back-to-back rate of a
      // CUDA graph of launches (graph_ms); its output after one more replay is checked too.
      const GraphCheck graph_check{[&] { poison(in.dO.ptr, 2 * nQ, stream); }, compare_o};
      r.t = time_launches(launch, c, stream, decode, &graph_check);
      if (r.t.graph_checked && !r.t.graph_err.ok) std::fprintf(stderr, "  (worst element at %s)\n", where.c_str());
      emit_timed(rep, r, "differs from the CPU double reference");
    };
    run_rows(rungs, want_auto, [&] { return attention_pick(a0, dev); }, run_one);

    // Decode: the same-run copy roof for this byte count. cudaMemcpy of K (one copy of nKV
    // elements) into a scratch buffer moves 2 * nKV * 2 bytes (read + write), the bytes a decode
    // step reads from K and V.
    if (decode) {
      DeviceBuffer dst(2 * nKV);
      Row r = problem_row("attention", "decode", "bf16", sh, 0, 4.0 * nKV, l2res, copies, seed);
      label_copy_row(r, "copy_kv_bytes", "cudaMemcpyAsync device to device of |K| bytes (read + write = |K| + |V|)");
      auto copy = [&](int i) {
        KL_CHECK(cudaMemcpyAsync(dst.ptr, in.dK.as<__nv_bfloat16>() + size_t(i % copies) * nKV, 2 * nKV,
                                 cudaMemcpyDeviceToDevice, stream));
      };
      Options c = iters_for_budget(o, [&] { copy(0); }, stream, 1.0, false, &r);
      r.t = time_launches(copy, c, stream, true);
      rep.emit(r);
    }
  }
  return rep.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
