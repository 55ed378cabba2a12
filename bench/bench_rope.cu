// bench/bench_rope.cu — the RoPE ladder on a fused QKV buffer, in both output layouts, against a
// same-run cudaMemcpy D2D of the same bytes.
//
// Ops: "rope" (the tokens layout: q and k rotated into [T, H, D]; rungs 00, 01) and "rope_kv" (the
// attention layout: q into [B, Hq, S, D], rotated k and v into caches [B, Hkv, L, D] at each token's
// position; rungs 00, 02). Per shape and op: rotation copies of qkv and the positions (qkv uniform in
// [-2, 2), sequence b's tokens at start_b + s with start_b drawn in [0, L - S]), the CPU double
// reference, a cudaMemcpy row moving the op's bytes (bytes/2 read + bytes/2 written; it compares
// nothing: validated false), then every selected rung (supports()? poison the outputs, launch on
// input copy 0 and on the last rotated copy, compare q (and k) in full and, in the attention layout,
// the cache rows of the positions, time) and the "auto" row. Decode shapes (S = 1) also time a CUDA
// graph of launches, whose output is compared after one more replay. Bytes: rope_bytes (read and
// write the q and k heads, and v in the attention layout, and read the positions); FLOPs:
// rope_flops. A shape whose host or device buffers would not fit is refused before anything is
// allocated.
//
// Flags: the harness's, plus --op rope|rope_kv|both (default both) and --theta F (default 500000;
// a finite number > 0 that a float holds).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "common/parallel.h"
#include "kl/rope.h"

namespace {
using namespace kl;
using namespace kl::bench;

const std::vector<std::string> kDims = {"B", "S", "Hq", "Hkv", "D", "L"};
const std::map<std::string, long long> kDefaults = {
    {"B", 1}, {"Hq", 32}, {"Hkv", 8}, {"D", 128}, {"L", kLSameAsS}};
// Llama-3-8B heads (32 / 8, D 128): prefill of 4096 and 16384 tokens, decode steps of 1, 16 and 64
// sequences against caches of 8192 rows.
const std::vector<std::string> kDefaultShapes = {"B=1,S=4096",         "B=1,S=16384",
                                                 "B=1,S=1,L=8192",     "B=16,S=1,L=8192",
                                                 "B=64,S=1,L=8192"};
const std::vector<std::string> kQuickShapes = {"B=1,S=4096", "B=16,S=1,L=8192"};

// The output's one rounding to bf16 (half an ulp) plus 2e-5: the tolerance of tests/test_gpu_rope.cu.
const Tolerance kTol{2e-5, 1.0 / 256, 4e-3};

long long qkv_row(const Shape& sh) { return (sh["Hq"] + 2 * sh["Hkv"]) * sh["D"]; }

void run_shape(const Shape& sh, bool do_tok, bool do_att, float theta, const Options& o, bool all,
               const std::vector<const Rung<RopeArgs>*>& rungs, bool want_auto, Reporter& rep,
               const DeviceInfo& dev, cudaStream_t stream) {
  const int B = static_cast<int>(sh["B"]), S = static_cast<int>(sh["S"]), Hq = static_cast<int>(sh["Hq"]),
            Hkv = static_cast<int>(sh["Hkv"]), D = static_cast<int>(sh["D"]), L = static_cast<int>(sh["L"]);
  const long long T = static_cast<long long>(B) * S, row = qkv_row(sh);
  const size_t n_qkv = static_cast<size_t>(T * row), n_q = static_cast<size_t>(T) * Hq * D,
               n_k = static_cast<size_t>(T) * Hkv * D, n_cache = static_cast<size_t>(B) * Hkv * L * D;
  const size_t qslot = (2 * n_qkv + 255) / 256 * 256, pslot = (4 * static_cast<size_t>(T) + 255) / 256 * 256;
  const size_t set_bytes = qslot + pslot;
  const size_t out_bytes = 2 * n_q + (do_tok ? 2 * n_k : 0) + (do_att ? 4 * n_cache : 0);
  RopeArgs shape;
  shape.B = B;
  shape.S = S;
  shape.Hq = Hq;
  shape.Hkv = Hkv;
  shape.D = D;
  shape.L = L;
  shape.theta = theta;
  shape.layout = do_att ? RopeLayout::attention : RopeLayout::tokens;
  const double max_bytes = rope_bytes(shape);  // the larger op's: the copy row's target
  const int copies = rotation_copies(set_bytes, dev, o.no_rotate, out_bytes + static_cast<size_t>(max_bytes / 2));
  const bool l2res = is_l2_resident(set_bytes, copies, dev);
  const uint64_t seed = run_seed(o);

  // Inputs: qkv and the positions of copy 0, then replicated.
  DeviceBuffer sets(set_bytes * copies);
  KL_CHECK(cudaMemsetAsync(sets.ptr, 0, set_bytes, stream));  // the padding, read by the copy row
  fill_uniform(sets.ptr, n_qkv, DType::bf16, seed, -2.f, 2.f, stream);
  std::vector<int> pos(T);
  std::mt19937_64 g(seed ^ 0x2545f4914f6cdd1dULL);
  for (int b = 0; b < B; ++b) {
    const int start = std::uniform_int_distribution<int>(0, L - S)(g);
    for (int s = 0; s < S; ++s) pos[static_cast<size_t>(b) * S + s] = start + s;
  }
  KL_CHECK(cudaMemcpyAsync(static_cast<char*>(sets.ptr) + qslot, pos.data(), 4 * pos.size(),
                           cudaMemcpyHostToDevice, stream));
  KL_CHECK(cudaStreamSynchronize(stream));
  replicate(sets.ptr, set_bytes, copies);
  DeviceBuffer q_out(2 * n_q), k_out(do_tok ? 2 * n_k : 0), k_cache(do_att ? 2 * n_cache : 0),
      v_cache(do_att ? 2 * n_cache : 0), copy_dst(static_cast<size_t>(max_bytes / 2));

  // The reference on the bf16 values the GPU sees, token-major.
  const std::vector<float> hqkv = download_as_float(sets.ptr, n_qkv, DType::bf16);
  std::vector<double> qref(n_q), kref(n_k);
  parallel_for(T, [&](long long t0, long long t1) {
    rope_reference(hqkv.data(), pos.data(), t0, t1, Hq, Hkv, D, theta, qref.data(), kref.data());
  }, 64);
  // The cache rows a launch writes: (b * Hkv + h) * L + pos[t], t-major then h, as gathered.
  std::vector<long long> rows_idx;
  if (do_att) {
    rows_idx.reserve(static_cast<size_t>(T) * Hkv);
    for (long long t = 0; t < T; ++t)
      for (int h = 0; h < Hkv; ++h) rows_idx.push_back((t / S * Hkv + h) * L + pos[t]);
  }

  for (const bool att : {false, true}) {
    if (att ? !do_att : !do_tok) continue;
    const std::string op = att ? "rope_kv" : "rope";
    RopeArgs base = shape;
    base.layout = att ? RopeLayout::attention : RopeLayout::tokens;
    const double bytes = rope_bytes(base), flops = rope_flops(base);
    auto args_for = [&](int i) {
      RopeArgs a = base;
      const char* set = static_cast<const char*>(sets.ptr) + static_cast<size_t>(i % copies) * set_bytes;
      a.qkv = set;
      a.pos = reinterpret_cast<const int*>(set + qslot);
      a.q_out = q_out.ptr;
      if (att) {
        a.k_cache = k_cache.ptr;
        a.v_cache = v_cache.ptr;
      } else {
        a.k_out = k_out.ptr;
      }
      return a;
    };
    // The reference in the order of what a check downloads: tokens [q | k]; attention
    // [q in [B, Hq, S, D] | the k rows of rows_idx | the v rows of rows_idx].
    std::vector<double> ref;
    if (!att) {
      ref = qref;
      ref.insert(ref.end(), kref.begin(), kref.end());
    } else {
      ref.resize(n_q + 2 * rows_idx.size() * D);
      for (long long t = 0; t < T; ++t)
        for (int h = 0; h < Hq; ++h)
          std::copy_n(qref.begin() + (t * Hq + h) * D, D, ref.begin() + ((t / S * Hq + h) * S + t % S) * D);
      double* kr = ref.data() + n_q;
      double* vr = kr + rows_idx.size() * D;
      for (long long t = 0; t < T; ++t)
        for (int h = 0; h < Hkv; ++h, kr += D, vr += D)
          for (int d = 0; d < D; ++d) {
            kr[d] = kref[(t * Hkv + h) * D + d];
            vr[d] = hqkv[t * row + (Hq + Hkv + h) * D + d];
          }
    }
    auto poison_out = [&] {
      poison(q_out.ptr, q_out.bytes, stream);
      if (att) {
        poison(k_cache.ptr, k_cache.bytes, stream);
        poison(v_cache.ptr, v_cache.bytes, stream);
      } else {
        poison(k_out.ptr, k_out.bytes, stream);
      }
    };
    auto compare_out = [&] {
      KL_CHECK(cudaStreamSynchronize(stream));
      std::vector<float> got = download_as_float(q_out.ptr, n_q, DType::bf16);
      if (!att) {
        const std::vector<float> k = download_as_float(k_out.ptr, n_k, DType::bf16);
        got.insert(got.end(), k.begin(), k.end());
      } else {
        for (const void* cache : {k_cache.ptr, v_cache.ptr}) {
          const std::vector<float> r = gather_rows_as_float(cache, D, rows_idx, DType::bf16);
          got.insert(got.end(), r.begin(), r.end());
        }
      }
      return compare(got.data(), ref.data(), ref.size(), kTol);
    };
    auto base_row = [&] {
      Row r = problem_row("rope", op, "bf16", sh, flops, bytes, l2res, copies, seed, kTol);
      if (theta != 500000.f) r.notes["theta"] = std::to_string(theta);
      return r;
    };

    {  // the reference row: cudaMemcpy D2D of bytes/2 (the same DRAM traffic)
      Row r = base_row();
      label_copy_row(r, "cudaMemcpy", "cudaMemcpyAsync D2D of bytes/2 (same DRAM traffic as the op)");
      const size_t cb = static_cast<size_t>(bytes / 2);
      auto one = [&](int i) {
        const char* src = static_cast<const char*>(sets.ptr) + static_cast<size_t>(i % copies) * set_bytes;
        KL_CHECK(cudaMemcpyAsync(copy_dst.ptr, src, cb, cudaMemcpyDeviceToDevice, stream));
      };
      Options c = iters_for_budget(o, [&] { one(0); }, stream, 1.0, false, &r);
      r.t = time_launches(one, c, stream, S == 1);
      rep.emit(r);
    }

    auto run_one = [&](const Rung<RopeArgs>* rung, bool is_auto) {
      Row r = base_row();
      const RopeArgs a0 = args_for(0);
      const std::string label = op + " " + sh.str();
      const Rung<RopeArgs>* use =
          label_row(r, rep, rung, is_auto, is_auto ? rope_pick(a0, dev) : nullptr, a0, dev, label);
      if (!use) return;
      auto launch = [&](int i) {
        const RopeArgs a = args_for(i);
        if (is_auto) rope(a, stream);
        else use->launch(a, stream);
      };
      r.notes["validated_against"] = att ? "cpu_double (q, and the k and v rows of the positions)" : "cpu_double";
      auto check_on = [&](int i) {
        poison_out();
        single_launch_ms([&] { launch(i); }, stream);
        return compare_out();
      };
      if (!validate_copies(r, rep, copies, check_on, "differs from the CPU double reference")) return;
      const bool slow = !is_auto && use->number == 0;
      Options c = iters_for_budget(o, [&] { launch(0); }, stream, slow ? 0.3 : 1.0, !all, &r);
      const GraphCheck graph_check{poison_out, compare_out};
      r.t = time_launches(launch, c, stream, S == 1, &graph_check);
      emit_timed(rep, r, "differs from the CPU double reference");
    };
    run_rows(rungs, want_auto, [&] { return rope_pick(args_for(0), dev); }, run_one);
  }
}

int run(int argc, char** argv) {
  const std::vector<ExtraFlag> extra = {{"op", true, "rope | rope_kv | both (default both)"},
                                        {"theta", true, "the RoPE base (default 500000)"}};
  Options o = parse_cli(argc, argv, "bench_rope",
                        "BxSxHqxHkvxDxL or B=..,S=..,Hq=..,Hkv=..,D=..,L=.. (T = B*S tokens; Hq=32, "
                        "Hkv=8, D=128, B=1 and L=S by default)",
                        extra);
  if (o.list) {
    print_rungs(rope_rungs(), "rope rungs (Llama rotate-half RoPE on a fused qkv buffer, bf16, fp32 math)");
    return 0;
  }
  for (DType t : o.dtypes) KL_REQUIRE(t == DType::bf16, "bench_rope: only --dtype bf16 (qkv is bf16)");
  const std::string opflag = o.extra.count("op") ? o.extra.at("op") : "both";
  KL_REQUIRE(opflag == "rope" || opflag == "rope_kv" || opflag == "both",
             "--op must be rope, rope_kv or both (got '" << opflag << "')");
  float theta = 500000.f;
  if (o.extra.count("theta")) {
    const double v = parse_number("--theta", o.extra.at("theta"));
    KL_REQUIRE(v > 0 && v <= 3.4e38, "--theta must be a number > 0 that a float holds (got '"
                                         << o.extra.at("theta") << "')");
    theta = static_cast<float>(v);
  }
  const bool do_tok = opflag != "rope_kv", do_att = opflag != "rope";
  if (o.quick) o.iters = std::min(o.iters, 20);
  bool want_auto = false;
  const auto rungs = select_rungs(rope_rungs(), o.variant, &want_auto);
  const bool all = variant_lists_all(o.variant);

  std::vector<Shape> parsed;
  for (const auto& s : o.shapes.empty() ? (o.quick ? kQuickShapes : kDefaultShapes) : o.shapes) {
    const Shape r = parse_shape_with_cache(s, kDims, kDefaults);
    for (const char* k : {"B", "S", "Hq", "Hkv", "L"})
      KL_REQUIRE(r[k] >= 1 && r[k] <= 0x7fffffffLL, "bench_rope: " << k << " must be in 1..2^31-1 (shape " << s << ")");
    KL_REQUIRE(r["D"] == 64 || r["D"] == 128, "bench_rope: D must be 64 or 128 (shape " << s << ")");
    KL_REQUIRE(r["S"] <= r["L"], "bench_rope: S must be <= L (shape " << s << ")");
    KL_REQUIRE(r["Hq"] + 2 * r["Hkv"] <= (1 << 20), "bench_rope: Hq + 2 Hkv must be at most 2^20 (shape " << s << ")");
    KL_REQUIRE(r["B"] * r["S"] * qkv_row(r) <= (1LL << 34),
               "bench_rope: more than 2^34 qkv elements (shape " << s << ")");
    KL_REQUIRE(!do_att || r["B"] * r["Hkv"] * r["L"] * r["D"] <= (1LL << 34),
               "bench_rope: a cache of more than 2^34 elements (shape " << s << ")");
    parsed.push_back(r);
  }
  // Host: qkv as floats, the token-major reference, the op's reference and one download as floats
  // (at most 4 + 8 + 8 + 4 + 2 bytes per qkv element), the positions and the cache row list.
  for (const Shape& sh : parsed)
    require_host_memory("bench_rope shape " + sh.str(), 26.0 * sh["B"] * sh["S"] * qkv_row(sh) + 24.0 * sh["B"] * sh["S"] * sh["Hkv"]);
  const DeviceInfo& dev = device_info();
  for (const Shape& sh : parsed) {
    const double T = double(sh["B"]) * sh["S"], qkv = 2.0 * T * qkv_row(sh);
    const double outs = 2.0 * T * (sh["Hq"] + sh["Hkv"]) * sh["D"] + (do_att ? 4.0 * sh["B"] * sh["Hkv"] * sh["L"] * sh["D"] : 0);
    require_device_memory("bench_rope shape " + sh.str(), 2 * qkv + 4 * T + outs + 8.0 * T * sh["Hkv"]);
  }
  print_banner(dev);
  Reporter rep(o, dev);
  Stream stream;
  for (const Shape& sh : parsed) run_shape(sh, do_tok, do_att, theta, o, all, rungs, want_auto, rep, dev, stream);
  return rep.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
