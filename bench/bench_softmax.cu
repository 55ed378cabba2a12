// bench/bench_softmax.cu — the row-softmax ladder against a same-run cudaMemcpy D2D of the same
// bytes. Bytes = read x + write y. The driver is bench/rowops_bench.h.
#include "bench/rowops_bench.h"
#include "kl/softmax.h"

int main(int argc, char** argv) {
  using namespace kl;
  using namespace kl::bench;
  const std::vector<DType> both = {DType::f32, DType::bf16}, bf = {DType::bf16}, f = {DType::f32};
  rowops::Spec<SoftmaxArgs> sp;
  sp.family = "softmax";
  sp.op = "softmax";
  sp.shape_help = "ROWSxCOLS or rows=..,cols=.. (softmax over each row of cols)";
  sp.list_title = "softmax rungs (row softmax, fp32 math; an all -inf row gives zeros)";
  sp.n_inputs = 1;
  sp.ranges = {{-10.f, 10.f}};  // exp spans ~9 decades within a row
  sp.shapes = {
      {"16384x8192", bf},   // the torch anchor shape, 512 MB of traffic
      {"4096x16384", f},
      {"65536x4096", bf},
      {"4096x1024", both},  // small: L2-resident when not rotated
      {"4096x4099", both},  // cols not a multiple of 8: unaligned rows, scalar paths
      {"1x8192", both},     // a single row
      {"64x8192", both},    // fewer rows than SMs
      {"16x131072", both},  // very long rows (clusters)
  };
  sp.quick_shapes = {{"4096x1024", both}, {"4096x4099", bf}, {"16x131072", bf}};
  sp.rungs = &softmax_rungs();
  sp.make = [](const void* const* in, void* out, int rows, int cols, DType t) {
    SoftmaxArgs a;
    a.x = in[0];
    a.y = out;
    a.rows = rows;
    a.cols = cols;
    a.dtype = t;
    return a;
  };
  sp.entry = [](const SoftmaxArgs& a, cudaStream_t s) { softmax(a, s); };
  sp.pick = [](const SoftmaxArgs& a, const DeviceInfo& d) { return softmax_pick(a, d); };
  sp.reference = [](const std::vector<const float*>& in, double* ref, long long r0, long long r1,
                    long long cols) { softmax_reference(in[0] + r0 * cols, ref + r0 * cols, r1 - r0, cols); };
  sp.flops = [](long long r, long long c) { return softmax_flops(r, c); };
  sp.bytes = [](long long r, long long c, DType t) { return softmax_bytes(r, c, t); };
  sp.slow_rung_max = 1;  // the thread-per-row and warp-per-row rungs
  sp.roof_flag = true;
  return guarded_main([&] { return rowops::run(argc, argv, sp); });
}
