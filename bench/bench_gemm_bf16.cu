// bench/bench_gemm_bf16.cu — the bf16 tensor-core GEMM ladder (every rung in the table, part 1 and
// the Hopper rungs) against cuBLAS, same run.
//
// C[M,N] = A[M,K] * W[N,K]^T (nn.Linear), bf16 in, fp32 accumulate, bf16 out. Per shape: rotation
// copies of A and W (fresh random bf16 in [-1, 1)), sized so one rotation of A+W exceeds 3x the L2
// (for decode shapes that is the weight rotation: W is almost all of it); cuBLAS with fp32 output
// into Ref, itself checked against a CPU double product on 256 sampled entries (corners included;
// a failure skips the shape's rows); then the cuBLAS bf16 row (impl "cublas", timed), every
// selected rung (supports()? poison C, launch on input copy 0 and on the last rotated copy, compare
// all of C with Ref each time, time) and the "auto" row. Decode rows (M <= 64) always report the
// back-to-back rate too (graph_ms); whenever a graph is timed, C after one more replay is compared
// too. A shape whose host or device buffers would not fit is refused before anything is allocated. Rung 00 is skipped above 4096^3 worth of FLOPs unless
// --variant names it; rows are capped to a time budget (noted as iters_capped) unless the --variant
// list lacks "all" (then every row, cuBLAS's too, gets --iters). --ref-last times the cuBLAS row
// after the rungs.
// FLOPs 2MNK; minimum DRAM bytes 2(MK + NK + MN). Tolerances: see bf16_out_tolerance and
// f32_dot_bound below (both scale with K).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/cublas_ref.h"
#include "bench/harness.h"
#include "bench/gemm_inputs.h"
#include "kl/gemm_bf16.h"

namespace {

using namespace kl;
using namespace kl::bench;
using bf16 = __nv_bfloat16;

const std::vector<std::string> kDims = {"M", "N", "K"};
const std::vector<std::string> kDefaultShapes = {
    "1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "4096x11008x4096",
    "4096x4096x11008",
    // Llama-3-8B prefill of 4096 tokens: the fused QKV, the fused gate/up and the down projection
    "4096x6144x4096", "4096x28672x4096", "4096x4096x14336",
    // decode: M tokens against the 7B projections, weights rotated past L2
    "1x4096x4096", "16x4096x4096", "32x4096x4096", "64x4096x4096", "1x11008x4096",
    "16x11008x4096", "32x11008x4096", "64x11008x4096", "1x4096x11008", "16x4096x11008",
    "32x4096x11008", "64x4096x11008",
    // odd: ragged M and N tails (N, K multiples of 8 as the family requires)
    "1000x1000x1024", "4097x1016x520"};
const std::vector<std::string> kQuickShapes = {"1024x1024x1024", "4096x4096x4096", "16x4096x4096",
                                               "1000x1000x1024"};

// bf16 output of an fp32-accumulated product vs cuBLAS's fp32-out product: one bf16 rounding
// (2^-9 relative, the rel term) plus the difference of two fp32 accumulations in different orders
// (the abs term, which only matters for entries near zero). That difference grows with K: each
// partial sum of a length-K dot product has magnitude ~sqrt(k/9) here (inputs in [-1, 1)) and each
// add errs by up to u = 2^-24 of it, and the tensor cores' fp32 accumulation truncates rather than
// rounds, so the errors do not cancel: ~u * K * sqrt(K/9) ∝ K^1.5. abs = 1e-3 up to K = 4096,
// scaled by (K/4096)^1.5 beyond (cuBLAS itself sits at a comparable distance from the exact
// product at the largest default K).
Tolerance bf16_out_tolerance(int K) {
  const double k = std::max(1.0, K / 4096.0);
  return Tolerance{1e-3 * k * std::sqrt(k), 1e-2, 5e-3};
}
// cuBLAS fp32-out vs the CPU double product, per sampled entry (i, j): the probabilistic bound of
// Higham & Mary (2019) for a length-K fp32 dot product, |err| <= lambda * sqrt(K) * u * sum_k
// |a_ik w_jk| with u = 2^-24, which holds with probability >= 1 - 2 exp(-lambda^2 / 2) per entry
// under independent rounding errors. lambda = 6: a 3e-8 chance per entry, ~1e-5 for 256 samples.
// (One abs for every entry is too tight for cuBLAS's own rounding at large K, far below this bound.
// A layout or indexing bug errs by O(|C|) ~ sqrt(K/9), 20x or more above the bound at every K
// here.) No rel_l2 gate: 256 samples say nothing about the norm.
constexpr double kLambda = 6.0, kUnitF32 = 5.9604644775390625e-8;  // 2^-24
double f32_dot_bound(int K, double sum_abs) { return kLambda * std::sqrt(double(K)) * kUnitF32 * sum_abs; }



// One bf16 row of a device matrix, widened (for the sampled CPU reference).
std::vector<double> row_as_double(const bf16* dev_row, int n) {
  std::vector<uint16_t> h(n);
  KL_CHECK(cudaMemcpy(h.data(), dev_row, 2 * size_t(n), cudaMemcpyDeviceToHost));
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = bf16_bits_to_float(h[i]);
  return out;
}

int run(int argc, char** argv) {
  const std::vector<ExtraFlag> extra = {kRefLastFlag};
  Options o = parse_cli(argc, argv, "bench_gemm_bf16",
                        "MxNxK or M=..,N=..,K=.. (C[M,N] = A[M,K] * W[N,K]^T, bf16; N, K % 8 == 0)", extra);
  const bool ref_last = o.extra.count(kRefLastFlag.name) > 0;
  if (o.list) {
    print_rungs(gemm_bf16_rungs(), "gemm_bf16 rungs (bf16 C = A * W^T, fp32 accumulate)");
    return 0;
  }
  for (DType t : o.dtypes)
    KL_REQUIRE(t == DType::bf16, "bench_gemm_bf16: only --dtype bf16 (this is the bf16 GEMM family)");
  if (o.quick) o.iters = std::min(o.iters, 20);
  bool want_auto = false;
  auto rungs = select_rungs(gemm_bf16_rungs(), o.variant, &want_auto);
  const bool all = variant_lists_all(o.variant);
  std::vector<std::string> shapes =
      o.shapes.empty() ? (o.quick ? kQuickShapes : kDefaultShapes) : o.shapes;
  std::vector<Shape> parsed;
  for (const auto& s : shapes) {
    Shape sh = parse_shape(s, kDims);
    for (const auto& d : sh.dims)
      KL_REQUIRE(d.second > 0 && d.second <= 0x7fffffffLL,
                 "bench_gemm_bf16: " << d.first << " must be in 1..2^31-1 (shape " << s << ")");
    KL_REQUIRE(sh["N"] % 8 == 0 && sh["K"] % 8 == 0,
               "bench_gemm_bf16: N and K must be multiples of 8 (shape " << s << ")");
    parsed.push_back(sh);
  }

  // Host: Ref and one downloaded bf16 output (as floats, with its bf16 staging). Device: one copy
  // of A and W, the Stream-K workspace, C and Ref. Element counts as doubles (no overflow).
  for (const Shape& sh : parsed) {
    const double nC = double(sh["M"]) * double(sh["N"]);
    require_host_memory("bench_gemm_bf16 shape " + sh.str(), 10.0 * nC);
  }
  const DeviceInfo& dev = device_info();
  for (const Shape& sh : parsed) {
    const double M = double(sh["M"]), N = double(sh["N"]), K = double(sh["K"]);
    const double ws = double(gemm_bf16_workspace_bytes(int(sh["M"]), int(sh["N"]), int(sh["K"]), dev));
    require_device_memory("bench_gemm_bf16 shape " + sh.str(), 2.0 * (M * K + N * K) + ws + 6.0 * M * N);
  }
  print_banner(dev);
  Reporter rep(o, dev);
  Stream stream;

  for (const Shape& sh : parsed) {
    const int M = static_cast<int>(sh["M"]), N = static_cast<int>(sh["N"]),
              K = static_cast<int>(sh["K"]);
    const bool decode = M <= 64;
    const size_t nA = size_t(M) * K, nW = size_t(N) * K, nC = size_t(M) * N;
    const size_t set_bytes = 2 * (nA + nW);  // decode: ~ the weight bytes
    const size_t other_bytes = gemm_bf16_workspace_bytes(M, N, K, dev) + 6 * nC;
    const int copies = rotation_copies(set_bytes, dev, o.no_rotate, other_bytes);
    const bool l2res = is_l2_resident(set_bytes, copies, dev);
    const uint64_t seed = run_seed(o);
    const GemmInputs in(M, N, K, copies, seed, dev, stream);
    const DeviceBuffer& dA = in.dA;
    const DeviceBuffer& dW = in.dW;
    DeviceBuffer dC(2 * nC), dRef(4 * nC);
    auto args_for = [&](int i, bf16* c) { return in.args(i, c); };
    const Tolerance tol = bf16_out_tolerance(K);
    const double flops = 2.0 * M * N * K;
    const double bytes = 2.0 * (double(nA) + nW + nC);
    auto base_row = [&]() { return problem_row("gemm_bf16", "gemm", "bf16", sh, flops, bytes, l2res, copies, seed, tol); };

    // ---- reference: cuBLAS fp32-out, checked against a CPU double product on 256 samples.
    poison(dRef.ptr, 4 * nC, stream);
    cublas_gemm_bf16_f32out(dA.as<bf16>(), dW.as<bf16>(), dRef.as<float>(), M, N, K, stream);
    KL_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> ref = download_as_float(dRef.ptr, nC, DType::f32);
    double ref_err_over_bound = 0;  // worst sampled |cuBLAS - exact| / bound (reported)
    {
      std::vector<size_t> idx;
      std::vector<double> want, bound;
      for (const auto& e : sample_entries(M, N, 256, seed)) {
        const int i = e.first, j = e.second;
        std::vector<double> a = row_as_double(dA.as<bf16>() + size_t(i) * K, K);
        std::vector<double> w = row_as_double(dW.as<bf16>() + size_t(j) * K, K);
        double acc = 0, sum_abs = 0;
        for (int k = 0; k < K; ++k) acc += a[k] * w[k], sum_abs += std::fabs(a[k] * w[k]);
        idx.push_back(size_t(i) * N + j);
        want.push_back(acc);
        bound.push_back(f32_dot_bound(K, sum_abs));
      }
      // Statistics from the harness (no gate: tolerance 0, rel_l2 unlimited), then the per-entry
      // bound decides.
      ErrStats e = compare_at(ref.data(), want.data(), idx, Tolerance{0, 0, 1e300});
      double worst_ratio = 0, max_bound = 0;
      e.bad = 0;
      for (size_t q = 0; q < idx.size(); ++q) {
        const double d = std::fabs(double(ref[idx[q]]) - want[q]);
        worst_ratio = std::max(worst_ratio, d / bound[q]);
        max_bound = std::max(max_bound, bound[q]);
        if (!(d <= bound[q])) ++e.bad;  // NaN counts as bad
      }
      e.ok = e.bad == 0 && e.nonfinite == 0;
      ref_err_over_bound = worst_ratio;
      if (!e.ok) {
        Row r = base_row();
        r.impl = "cublas";
        r.variant_name = "cublas_gemm_bf16_f32out";
        r.err = e;
        r.tol = Tolerance{max_bound, 0, 1e300};
        r.notes["worst_err_over_bound"] = std::to_string(worst_ratio);
        rep.fail(r, "cuBLAS fp32-out disagrees with the CPU double product on sampled entries; "
                    "the shape's rows are skipped");
        continue;  // no trustworthy reference for this shape
      }
    }

    // C (bf16, after a launch that wrote it) against Ref; the graph check poisons C first.
    auto compare_c = [&]() {
      std::vector<float> got = download_as_float(dC.ptr, nC, DType::bf16);
      return compare(got.data(), ref.data(), nC, tol);
    };
    const GraphCheck graph_check{[&] { poison(dC.ptr, 2 * nC, stream); }, compare_c};

    // ---- the timed reference row: cuBLAS bf16 out (validated against the fp32-out product too),
    // before the rungs or, with --ref-last, after them (the card is hotter for whichever runs later).
    auto time_ref = [&]() {
      Row r = base_row();
      r.impl = "cublas";
      r.variant = -1;
      r.variant_name = "cublas";
      r.change = "cublasGemmEx bf16, fp32 compute, 32 MiB workspace";
      auto one = [&](int i) {
        GemmBf16Args a = args_for(i, dC.as<bf16>());
        cublas_gemm_bf16(a.A, a.W, a.C, M, N, K, stream);
      };
      r.notes["validated_against"] = "cublas_f32out";
      r.notes["ref_err_over_bound"] = std::to_string(ref_err_over_bound);
      auto check_on = [&](int i) {  // the validation launches
        poison(dC.ptr, 2 * nC, stream);
        single_launch_ms([&] { one(i); }, stream);
        return compare_c();
      };
      if (!validate_copies(r, rep, copies, check_on, "cuBLAS bf16-out differs from its fp32-out product"))
        return;
      Options c = iters_for_budget(o, [&] { one(0); }, stream, 0.8, !all, &r);
      r.t = time_launches(one, c, stream, decode, &graph_check);
      emit_timed(rep, r, "cuBLAS bf16-out differs from its fp32-out product");
    };
    if (!ref_last) time_ref();

    // ---- rungs and the entry point.
    auto run_one = [&](const Rung<GemmBf16Args>* rung, bool is_auto) {
      Row r = base_row();
      GemmBf16Args a0 = args_for(0, dC.as<bf16>());
      const Rung<GemmBf16Args>* use = label_row(r, rep, rung, is_auto, is_auto ? gemm_bf16_pick(a0, dev) : nullptr, a0, dev, sh.str());
      if (!use) return;
      if (!is_auto) {
        const bool named = !all;  // --variant named this rung explicitly
        if (rung->number == 0 && flops > 2.0 * 4096.0 * 4096.0 * 4096.0 && !named) {
          rep.skip("rung 0 " + sh.str(),
                   "WMMA from global is too slow above 4096^3 for the default run; use --variant 0");
          return;
        }
      }
      auto launch = [&](int i) {
        GemmBf16Args a = args_for(i, dC.as<bf16>());
        if (is_auto) gemm_bf16(a, stream);
        else use->launch(a, stream);
      };
      r.notes["validated_against"] = "cublas_f32out";
      auto check_on = [&](int i) {  // the validation launches
        poison(dC.ptr, 2 * nC, stream);
        single_launch_ms([&] { launch(i); }, stream);
        return compare_c();
      };
      if (!validate_copies(r, rep, copies, check_on, "differs from the cuBLAS fp32-out product")) return;
      const bool top = is_auto || rung->number >= 3;
      Options c = iters_for_budget(o, [&] { launch(0); }, stream, top ? 0.8 : 0.3, !all, &r);
      r.t = time_launches(launch, c, stream, decode, &graph_check);
      emit_timed(rep, r, "differs from the cuBLAS fp32-out product");
    };
    run_rows(rungs, want_auto, [&] { return gemm_bf16_pick(args_for(0, dC.as<bf16>()), dev); }, run_one);
    if (ref_last) time_ref();
  }
  return rep.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
