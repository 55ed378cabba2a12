// bench/bench_sgemm.cu — the fp32 GEMM ladder against cuBLAS SGEMM (TF32 off), same run.
//
// Per shape: rotation copies of A and B (fresh random values in [-1, 1)), cuBLAS into Cref, cuBLAS
// itself checked against a CPU double product on 256 sampled (i, j) (a failure skips the shape's
// rows: nothing is validated against a rejected reference), then every selected rung: supports()?
// poison C, launch on input copy 0 and on the last rotated copy, compare all of C with Cref each
// time, time (with --graph, C after one more replay of the timed graph is compared too). A shape
// whose host or device buffers would not fit is refused before anything is allocated (exit 2).
// Slow rungs (00-02) are skipped
// above 4096^3 worth of FLOPs unless --variant names them, and every row's iterations are capped
// so it takes about a second (noted as iters_capped) unless the --variant list lacks "all" (then
// every row, cuBLAS's too, gets --iters). --ref-last times the cuBLAS row after the rungs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "bench/cublas_ref.h"
#include "bench/harness.h"
#include "kl/sgemm.h"

namespace {

using namespace kl;
using namespace kl::bench;

const std::vector<std::string> kDims = {"M", "N", "K"};
const std::vector<std::string> kDefaultShapes = {
    "1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192",
    "4096x11008x4096", "4096x4096x11008", "1000x1000x1000", "4097x1023x515"};
const std::vector<std::string> kQuickShapes = {"1024x1024x1024", "1000x1000x1000",
                                               "4096x4096x4096"};

// fp32 GEMM of two different summation orders: the error grows with K (inputs in [-1, 1): partial
// sums ~ sqrt(K)/sqrt(3), rounding ~ eps * K/3 per element). A wrong element is off by O(sqrt(K)).
Tolerance gemm_tolerance(int K) {
  Tolerance t;
  t.abs = 1e-5 + 2e-6 * K;
  t.rel = 1e-4;
  t.rel_l2 = 5e-5;
  return t;
}



int run(int argc, char** argv) {
  const std::vector<ExtraFlag> extra = {kRefLastFlag};
  Options o = parse_cli(argc, argv, "bench_sgemm",
                        "MxNxK or M=..,N=..,K=.. (row-major C[M,N] = A[M,K] * B[K,N])", extra);
  const bool ref_last = o.extra.count(kRefLastFlag.name) > 0;
  if (o.list) {
    print_rungs(sgemm_rungs(), "sgemm rungs (fp32 C = A * B, row-major)");
    return 0;
  }
  for (DType t : o.dtypes)
    KL_REQUIRE(t == DType::f32, "bench_sgemm: only --dtype f32 (this is the fp32 GEMM family)");
  if (o.quick) o.iters = std::min(o.iters, 20);
  bool want_auto = false;
  auto rungs = select_rungs(sgemm_rungs(), o.variant, &want_auto);
  const bool all = variant_lists_all(o.variant);
  std::vector<std::string> shapes = o.shapes.empty() ? (o.quick ? kQuickShapes : kDefaultShapes)
                                                      : o.shapes;
  std::vector<Shape> parsed;
  for (const auto& s : shapes) {
    Shape sh = parse_shape(s, kDims);
    for (const auto& d : sh.dims)
      KL_REQUIRE(d.second > 0 && d.second <= 0x7fffffffLL,
                 "bench_sgemm: " << d.first << " must be in 1..2^31-1 (shape " << s << ")");
    parsed.push_back(sh);
  }
  // Element counts as doubles (no overflow before the memory checks refuse a shape).
  auto counts = [](const Shape& sh) {
    const double M = double(sh["M"]), N = double(sh["N"]), K = double(sh["K"]);
    return std::array<double, 3>{M * K, K * N, M * N};  // A, B, C
  };
  // Host: Cref and one downloaded output, or Cref and A, B for the sampled CPU product.
  for (const Shape& sh : parsed) {
    const auto n = counts(sh);
    require_host_memory("bench_sgemm shape " + sh.str(), 4.0 * n[2] + 4.0 * std::max(n[0] + n[1], n[2]));
  }

  const DeviceInfo& dev = device_info();
  // Device: one copy of A and B, C and Cref.
  for (const Shape& sh : parsed) {
    const auto n = counts(sh);
    require_device_memory("bench_sgemm shape " + sh.str(), 4.0 * (n[0] + n[1]) + 8.0 * n[2]);
  }
  print_banner(dev);
  Reporter rep(o, dev);
  cudaStream_t stream;
  KL_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  for (const Shape& sh : parsed) {
    const int M = static_cast<int>(sh["M"]), N = static_cast<int>(sh["N"]),
              K = static_cast<int>(sh["K"]);
    const size_t nA = size_t(M) * K, nB = size_t(K) * N, nC = size_t(M) * N;
    const size_t set_bytes = 4 * (nA + nB);
    const int copies = rotation_copies(set_bytes, dev, o.no_rotate, 8 * nC);
    const bool l2res = is_l2_resident(set_bytes, copies, dev);
    const uint64_t seed = run_seed(o);
    DeviceBuffer dA(4 * nA * copies), dB(4 * nB * copies), dC(4 * nC), dRef(4 * nC);
    fill_uniform(dA.ptr, nA, DType::f32, seed, -1.f, 1.f, stream);
    fill_uniform(dB.ptr, nB, DType::f32, seed ^ 0x9e3779b97f4a7c15ULL, -1.f, 1.f, stream);
    KL_CHECK(cudaStreamSynchronize(stream));
    replicate(dA.ptr, 4 * nA, copies);
    replicate(dB.ptr, 4 * nB, copies);
    auto args_for = [&](int i, float* c) {
      SgemmArgs a;
      a.A = dA.as<float>() + size_t(i % copies) * nA;
      a.B = dB.as<float>() + size_t(i % copies) * nB;
      a.C = c;
      a.M = M;
      a.N = N;
      a.K = K;
      return a;
    };
    const Tolerance tol = gemm_tolerance(K);
    const double flops = 2.0 * M * N * K;
    const double bytes = 4.0 * (double(nA) + nB + nC);
    auto base_row = [&]() { return problem_row("sgemm", "sgemm", "f32", sh, flops, bytes, l2res, copies, seed, tol); };

    // ---- reference: cuBLAS, checked against a CPU double product on 256 sampled entries.
    poison(dRef.ptr, 4 * nC, stream);
    cublas_sgemm(dA.as<float>(), dB.as<float>(), dRef.as<float>(), M, N, K, stream);
    KL_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> ref = download_as_float(dRef.ptr, nC, DType::f32);
    Row ref_row;
    {
      std::vector<float> hA = download_as_float(dA.ptr, nA, DType::f32);
      std::vector<float> hB = download_as_float(dB.ptr, nB, DType::f32);
      std::vector<size_t> idx;
      std::vector<double> want;
      for (const auto& e : sample_entries(M, N, 256, seed)) {  // corners, then random entries
        const int i = e.first, j = e.second;
        idx.push_back(size_t(i) * N + j);
        want.push_back(sgemm_reference_at(hA.data(), hB.data(), M, N, K, i, j));
      }
      ref_row = base_row();
      ref_row.impl = "cublas";
      ref_row.variant = -1;
      ref_row.variant_name = "cublas_sgemm";
      ref_row.change = "cuBLAS SGEMM, pedantic math (TF32 off)";
      ref_row.err = compare_at(ref.data(), want.data(), idx, tol);
      ref_row.validated = true;
      ref_row.notes["validated_against"] = "cpu_double_256_samples";
    }
    if (!ref_row.err.ok) {  // no trustworthy reference: no row of this shape is validated or timed
      rep.fail(ref_row, "cuBLAS disagrees with the CPU double product on sampled entries; the shape's rungs are skipped");
      continue;
    }
    // C (after a launch that wrote it) against Cref.
    auto compare_c = [&]() {
      std::vector<float> got = download_as_float(dC.ptr, nC, DType::f32);
      return compare(got.data(), ref.data(), nC, tol);
    };
    const GraphCheck graph_check{[&] { poison(dC.ptr, 4 * nC, stream); }, compare_c};
    // The timed reference row (always: every ratio is same-run), before the rungs or, with
    // --ref-last, after them (the card is hotter for whichever runs later). cuBLAS on the last
    // rotated copy (and after a graph replay) must reproduce Cref.
    auto time_ref = [&]() {
      Row r = ref_row;
      auto one = [&](int i) {
        SgemmArgs a = args_for(i, dC.as<float>());
        cublas_sgemm(a.A, a.B, a.C, M, N, K, stream);
      };
      if (copies > 1) {
        poison(dC.ptr, 4 * nC, stream);
        single_launch_ms([&] { one(copies - 1); }, stream);
        const ErrStats e = compare_c();
        r.notes["validated_copies"] = "0," + std::to_string(copies - 1);
        if (!e.ok) {
          r.err = e;
          rep.fail(r, "cuBLAS on the last rotated copy differs from cuBLAS on copy 0");
          return;
        }
      }
      Options c = iters_for_budget(o, [&] { one(0); }, stream, 0.6, !all, &r);
      r.t = time_launches(one, c, stream, false, &graph_check);
      emit_timed(rep, r, "cuBLAS differs from its own output on copy 0");
    };
    if (!ref_last) time_ref();

    // ---- rungs and the entry point.
    auto run_one = [&](const Rung<SgemmArgs>* rung, bool is_auto) {
      Row r = base_row();
      SgemmArgs a0 = args_for(0, dC.as<float>());
      const Rung<SgemmArgs>* use = label_row(r, rep, rung, is_auto, is_auto ? sgemm_pick(a0, dev) : nullptr, a0, dev, sh.str());
      if (!use) return;
      if (!is_auto) {
        const bool named = !all;  // --variant named this rung explicitly
        if (rung->number <= 2 && flops > 2.0 * 4096.0 * 4096.0 * 4096.0 && !named) {
          rep.skip("rung " + std::to_string(rung->number) + " " + sh.str(),
                   "too slow for the default run; use --variant");
          return;
        }
      }
      auto launch = [&](int i) {
        SgemmArgs a = args_for(i, dC.as<float>());
        if (is_auto) sgemm(a, stream);
        else use->launch(a, stream);
      };
      r.notes["validated_against"] = "cublas";
      auto check_on = [&](int i) {  // the validation launches
        poison(dC.ptr, 4 * nC, stream);
        single_launch_ms([&] { launch(i); }, stream);
        return compare_c();
      };
      if (!validate_copies(r, rep, copies, check_on, "differs from cuBLAS SGEMM")) return;
      const bool top = is_auto || rung->number >= 7;
      Options c = iters_for_budget(o, [&] { launch(0); }, stream, top ? 0.6 : 0.25, !all, &r);
      r.t = time_launches(launch, c, stream, false, &graph_check);
      emit_timed(rep, r, "differs from cuBLAS SGEMM");
    };
    run_rows(rungs, want_auto, [&] { return sgemm_pick(args_for(0, dC.as<float>()), dev); }, run_one);
    if (ref_last) time_ref();
  }
  KL_CHECK(cudaStreamDestroy(stream));
  return rep.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return kl::bench::guarded_main([&] { return run(argc, argv); });
}
