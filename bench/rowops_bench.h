// bench/rowops_bench.h — the driver shared by bench_swiglu and bench_softmax (elementwise / row ops
// over rows x cols with 1 or 2 inputs and one output of the same storage type).
//
// Per shape and dtype: rotation copies of the inputs (fresh uniform values, never zeros), the CPU
// double reference on the downloaded (storage-rounded) inputs, then a cudaMemcpy D2D row moving
// the same byte count (bytes/2 read + bytes/2 written; it compares nothing: validated false), every
// selected rung (supports()? poison y, launch on input copy 0 and on the last rotated copy,
// download, full comparison each time, time; with --graph, y after one more replay of the timed
// graph is compared too) and the "auto" row. A shape whose host or device buffers would not fit is
// refused before anything is allocated. Rows whose single launch is slow
// have their iterations capped to about `budget` seconds (notes.iters_capped) unless the --variant
// list lacks "all" (the harness's variant_lists_all / iters_for_budget).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/harness.h"
#include "common/parallel.h"
#include "common/vec.cuh"

namespace kl::bench::rowops {

// ---- DRAM roof probes (rows "roof_read" / "roof_write", only with --roof): the op's input bytes
// read alone, and its output bytes written alone, each as a one-shot grid of one 16-byte vector per
// thread (the fastest SwiGLU layout). They bound what any kernel with the op's traffic can do and
// show the read/write mix effect (the copy roof, 1 read : 1 write, is not the roof of a 2 : 1 op).
static __global__ void __launch_bounds__(256)
    roof_read_kernel(const uint4* __restrict__ p, long long nvec, unsigned* sink) {
  const long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (i < nvec) {
    const uint4 v = ld16<Ld::nc_noalloc>(p + i);
    const unsigned h = v.x ^ v.y ^ v.z ^ v.w;
    if (h == 0x9e3779b9u) *sink = h;  // (almost) never taken; keeps the load live
  }
}
static __global__ void __launch_bounds__(256) roof_write_kernel(uint4* __restrict__ p, long long nvec) {
  const long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (i < nvec)  // a non-constant pattern (no chance of a compressed or elided write)
    st16<St::normal>(p + i, make_uint4(static_cast<unsigned>(i), static_cast<unsigned>(i >> 32),
                                       ~static_cast<unsigned>(i), 0x5bd1e995u));
}



struct DefaultShape {
  std::string shape;
  std::vector<DType> dtypes;
};

template <class Args>
struct Spec {
  std::string family, op, shape_help;
  int n_inputs = 1;                                  // 1 (softmax) or 2 (swiglu)
  std::vector<std::pair<float, float>> ranges;       // uniform [lo, hi) per input
  std::vector<DefaultShape> shapes, quick_shapes;
  const std::vector<Rung<Args>>* rungs = nullptr;
  std::function<Args(const void* const* in, void* out, int rows, int cols, DType t)> make;
  std::function<void(const Args&, cudaStream_t)> entry;
  std::function<const Rung<Args>*(const Args&, const DeviceInfo&)> pick;
  // Reference over rows [r0, r1): inputs (floats, full tensors), output doubles (full tensor).
  std::function<void(const std::vector<const float*>& in, double* ref, long long r0, long long r1,
                     long long cols)>
      reference;
  std::function<double(long long, long long)> flops;
  std::function<double(long long, long long, DType)> bytes;
  int slow_rung_max = -1;          // rungs <= this get the short time budget
  bool roof_flag = false;          // offer --roof (read-only / write-only DRAM probe rows)
  std::string list_title;
};

template <class Args>
int run(int argc, char** argv, const Spec<Args>& sp) {
  std::vector<ExtraFlag> flags;
  if (sp.roof_flag)
    flags.push_back({"roof", false,
                     "also time the op's input bytes read alone and its output bytes written "
                     "alone (rows roof_read / roof_write)"});
  Options o = parse_cli(argc, argv, "bench_" + sp.family, sp.shape_help, flags);
  const bool roof = o.extra.count("roof") > 0;
  if (o.list) {
    print_rungs(*sp.rungs, sp.list_title);
    return 0;
  }
  if (o.quick) o.iters = std::min(o.iters, 20);
  bool want_auto = false;
  auto rungs = select_rungs(*sp.rungs, o.variant, &want_auto);
  const bool all = variant_lists_all(o.variant);
  std::vector<std::pair<Shape, std::vector<DType>>> work;
  if (o.shapes.empty()) {
    for (const auto& d : o.quick ? sp.quick_shapes : sp.shapes)
      work.push_back({parse_shape(d.shape, {"rows", "cols"}), o.dtypes.empty() ? d.dtypes : o.dtypes});
  } else {
    for (const auto& s : o.shapes)
      work.push_back({parse_shape(s, {"rows", "cols"}),
                      o.dtypes.empty() ? std::vector<DType>{DType::f32, DType::bf16} : o.dtypes});
  }
  for (const auto& w : work) {
    KL_REQUIRE(w.first["rows"] >= 1 && w.first["rows"] <= 0x7fffffffLL && w.first["cols"] >= 1 &&
                   w.first["cols"] <= 0x7fffffffLL,
               "bench_" << sp.family << ": rows and cols must be in 1..2^31-1 (" << w.first.str()
                        << ")");
    KL_REQUIRE(w.first["rows"] * w.first["cols"] <= (1LL << 34),
               "bench_" << sp.family << ": shape too large (" << w.first.str()
                        << "): rows * cols must be at most 2^34");
  }
  // Device bytes of one (shape, dtype) with one input copy: the inputs, y, the copy row's target.
  auto device_need = [&](const Shape& sh, DType t) {
    const double n = double(sh["rows"]) * double(sh["cols"]), tensor = n * dtype_size(t);
    const double tslot = std::ceil(tensor / 256) * 256;
    return tslot * sp.n_inputs + tensor + sp.bytes(sh["rows"], sh["cols"], t) / 2;
  };
  // Host peak: the inputs as floats and the double reference (8 bytes an element), then the
  // reference and one downloaded output (floats and their bf16 staging).
  const double host_per_elem = std::max(4.0 * sp.n_inputs + 8.0, 14.0);
  for (const auto& w : work)
    require_host_memory("bench_" + sp.family + " shape " + w.first.str(),
                        host_per_elem * double(w.first["rows"]) * double(w.first["cols"]));

  const DeviceInfo& dev = device_info();
  for (const auto& w : work)
    for (DType t : w.second)
      require_device_memory("bench_" + sp.family + " shape " + w.first.str() + " " + dtype_name(t),
                            device_need(w.first, t));
  print_banner(dev);
  Reporter rep(o, dev);
  cudaStream_t stream;
  KL_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  for (const auto& w : work) {
    const Shape& sh = w.first;
    const int rows = static_cast<int>(sh["rows"]), cols = static_cast<int>(sh["cols"]);
    const size_t n = size_t(rows) * cols;
    for (DType t : w.second) {
      const size_t tensor = n * dtype_size(t);
      // Inputs of one copy lie together: [in0 | in1], each slot padded to 256 bytes (aligned).
      const size_t tslot = (tensor + 255) / 256 * 256;
      const size_t set_bytes = tslot * sp.n_inputs;
      const double op_bytes = sp.bytes(rows, cols, t);
      const int copies = rotation_copies(set_bytes, dev, o.no_rotate,
                                         tensor + static_cast<size_t>(op_bytes / 2));
      const bool l2res = is_l2_resident(set_bytes, copies, dev);
      const uint64_t seed = run_seed(o);
      DeviceBuffer sets(set_bytes * copies);
      // The 256-byte padding between the tensors of a set is read by the copy row: zero it once.
      KL_CHECK(cudaMemsetAsync(sets.ptr, 0, set_bytes, stream));
      for (int k = 0; k < sp.n_inputs; ++k)
        fill_uniform(static_cast<char*>(sets.ptr) + k * tslot, n, t,
                     seed + 0x9e3779b97f4a7c15ULL * k, sp.ranges[k].first, sp.ranges[k].second,
                     stream);
      KL_CHECK(cudaStreamSynchronize(stream));
      replicate(sets.ptr, set_bytes, copies);  // ends with a device synchronize
      DeviceBuffer out(tensor);
      const double bytes = op_bytes, flops = sp.flops(rows, cols);
      // bytes/2 <= set_bytes: swiglu 1.5 tensors of 2, softmax 1 of 1.
      DeviceBuffer copy_dst(static_cast<size_t>(bytes / 2));

      // CPU double reference on the rounded inputs the GPU sees.
      std::vector<std::vector<float>> hin;
      std::vector<const float*> hp;
      for (int k = 0; k < sp.n_inputs; ++k)
        hin.push_back(download_as_float(static_cast<char*>(sets.ptr) + k * tslot, n, t));
      for (auto& v : hin) hp.push_back(v.data());
      std::vector<double> ref(n);
      parallel_for(rows, [&](long long r0, long long r1) { sp.reference(hp, ref.data(), r0, r1, cols); });
      hin.clear();
      const Tolerance tol = default_tolerance(t);

      auto args_for = [&](int i) {
        const void* p[2] = {nullptr, nullptr};
        for (int k = 0; k < sp.n_inputs; ++k)
          p[k] = static_cast<const char*>(sets.ptr) + size_t(i % copies) * set_bytes + k * tslot;
        return sp.make(p, out.ptr, rows, cols, t);
      };
      auto base_row = [&]() {
        return problem_row(sp.family, sp.op, dtype_name(t), sh, flops, bytes, l2res, copies, seed, tol);
      };

      // ---- reference row: cudaMemcpy D2D moving the same bytes (bytes/2 read, bytes/2 written).
      {
        Row r = base_row();
        label_copy_row(r, "cudaMemcpy", "cudaMemcpyAsync D2D of bytes/2 (same DRAM traffic as the op)");
        const size_t cb = copy_dst.bytes;
        auto one = [&](int i) {  // source rotates over the input copies like the op's reads
          const char* src = static_cast<const char*>(sets.ptr) + size_t(i % copies) * set_bytes;
          KL_CHECK(cudaMemcpyAsync(copy_dst.ptr, src, cb, cudaMemcpyDeviceToDevice, stream));
        };
        r.t = time_launches(one, o, stream);
        rep.emit(r);
      }

      // ---- roof probes (--roof): read the input set alone, write the output alone.
      if (roof) {
        DeviceBuffer sink(sizeof(unsigned));
        for (int w = 0; w < 2; ++w) {
          Row r = base_row();
          r.impl = w == 0 ? "roof_read" : "roof_write";
          r.variant = -1;
          r.variant_name = r.impl;
          const long long nvec = static_cast<long long>(w == 0 ? tslot * sp.n_inputs : tensor) / 16;
          r.change = w == 0 ? "one-shot 16-byte loads of the op's inputs only (no writes)"
                            : "one-shot 16-byte stores of the op's output only (no reads)";
          r.bytes = 16.0 * nvec;
          r.flops = 0;
          r.validated = false;  // a probe: nothing compared
          r.notes["validated_against"] = "none (probe)";
          const unsigned blocks = static_cast<unsigned>(std::max(1LL, (nvec + 255) / 256));
          auto one = [&](int i) {
            if (w == 0)
              roof_read_kernel<<<blocks, 256, 0, stream>>>(
                  reinterpret_cast<const uint4*>(static_cast<const char*>(sets.ptr) +
                                                 size_t(i % copies) * set_bytes),
                  nvec, sink.as<unsigned>());
            else
              roof_write_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4*>(out.ptr), nvec);
            KL_CHECK_LAUNCH();
          };
          r.t = time_launches(one, o, stream);
          rep.emit(r);
        }
      }

      auto run_one = [&](const Rung<Args>* rung, bool is_auto) {
        Row r = base_row();
        const Args a0 = args_for(0);
        const std::string label = sp.op + " " + dtype_name(t) + " " + sh.str();
        const Rung<Args>* use = label_row(r, rep, rung, is_auto, is_auto ? sp.pick(a0, dev) : nullptr, a0, dev, label);
        if (!use) return;
        auto launch = [&](int i) {
          const Args a = args_for(i);
          if (is_auto) sp.entry(a, stream);
          else use->launch(a, stream);
        };
        auto compare_y = [&]() {
          std::vector<float> got = download_as_float(out.ptr, n, t);
          return compare(got.data(), ref.data(), n, tol);
        };
        r.notes["validated_against"] = "cpu_double";
        auto check_on = [&](int i) {  // the validation launches
          poison(out.ptr, tensor, stream);
          single_launch_ms([&] { launch(i); }, stream);
          return compare_y();
        };
        if (!validate_copies(r, rep, copies, check_on, "differs from the CPU double reference")) return;
        const bool slow = !is_auto && rung->number <= sp.slow_rung_max;
        Options c = iters_for_budget(o, [&] { launch(0); }, stream, slow ? 0.3 : 1.0, !all, &r);
        const GraphCheck graph_check{[&] { poison(out.ptr, tensor, stream); }, compare_y};
        r.t = time_launches(launch, c, stream, false, &graph_check);
        emit_timed(rep, r, "differs from the CPU double reference");
      };
      run_rows(rungs, want_auto, [&] { return sp.pick(args_for(0), dev); }, run_one);
    }
  }
  KL_CHECK(cudaStreamDestroy(stream));
  return rep.finish();
}

}  // namespace kl::bench::rowops
