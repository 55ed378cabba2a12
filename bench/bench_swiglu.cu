// bench/bench_swiglu.cu — the SwiGLU ladder (y = silu(g) * u) against a same-run cudaMemcpy D2D of
// the same bytes. Bytes = read g, u + write y. The driver is bench/rowops_bench.h.
#include "bench/rowops_bench.h"
#include "kl/swiglu.h"

int main(int argc, char** argv) {
  using namespace kl;
  using namespace kl::bench;
  const std::vector<DType> both = {DType::f32, DType::bf16}, bf = {DType::bf16}, f = {DType::f32};
  rowops::Spec<SwigluArgs> sp;
  sp.family = "swiglu";
  sp.op = "swiglu";
  sp.shape_help = "ROWSxCOLS or rows=..,cols=.. (y = silu(g) * u over rows x cols)";
  sp.list_title = "swiglu rungs (y = silu(g) * u, fp32 math)";
  sp.n_inputs = 2;
  sp.ranges = {{-6.f, 6.f}, {-2.f, 2.f}};  // g spans silu's curved part and both tails
  sp.shapes = {
      {"16384x11008", bf},  // Llama-7B MLP width, 1 GB of traffic
      {"8192x14336", bf},   // Llama-3-8B MLP width
      {"4096x14336", f},
      {"16384x8192", bf},   // the torch anchor shape
      {"4096x1024", both},  // small: L2-resident when not rotated
      {"4096x11007", both}, // odd cols (flat stream: the tail is the last few elements)
      {"1x8192", both},     // a single row
  };
  sp.quick_shapes = {{"4096x1024", both}, {"4096x11007", bf}, {"1x8192", f}};
  sp.rungs = &swiglu_rungs();
  sp.make = [](const void* const* in, void* out, int rows, int cols, DType t) {
    SwigluArgs a;
    a.g = in[0];
    a.u = in[1];
    a.y = out;
    a.rows = rows;
    a.cols = cols;
    a.dtype = t;
    return a;
  };
  sp.entry = [](const SwigluArgs& a, cudaStream_t s) { swiglu(a, s); };
  sp.pick = [](const SwigluArgs& a, const DeviceInfo& d) { return swiglu_pick(a, d); };
  sp.reference = [](const std::vector<const float*>& in, double* ref, long long r0, long long r1,
                    long long cols) {
    swiglu_reference(in[0] + r0 * cols, in[1] + r0 * cols, ref + r0 * cols,
                     static_cast<size_t>((r1 - r0) * cols));
  };
  sp.flops = [](long long r, long long c) { return swiglu_flops(r, c); };
  sp.bytes = [](long long r, long long c, DType t) { return swiglu_bytes(r, c, t); };
  sp.slow_rung_max = 0;
  sp.roof_flag = true;
  return guarded_main([&] { return rowops::run(argc, argv, sp); });
}
