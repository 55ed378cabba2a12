// kernels/swiglu/swiglu.cu — THE table of SwiGLU rungs (number, name, the one change), the entry
// point, argument checks and the CPU reference. Rung code lives in NN_*.cu.
#include "kl/swiglu.h"

#include <cmath>
#include <cstdint>

namespace kl {

const std::vector<Rung<SwigluArgs>>& swiglu_rungs() {
  using namespace swiglu_detail;
  static const std::vector<Rung<SwigluArgs>> table = {
      {0, "scalar", "one thread per element, scalar loads", swiglu_scalar_supports, swiglu_scalar_launch},
      {1, "vec128", "16-byte vector loads/stores, one vector per thread", swiglu_vec128_supports, swiglu_vec128_launch, /*parent=*/0},
      {2, "unroll4", "4 vectors per thread, all loads issued before the math", swiglu_unroll4_supports,
       swiglu_unroll4_launch, /*parent=*/1},
      {3, "stream_hints", "ld.global.nc.L1::no_allocate inputs, st.global.cs output", swiglu_stream_hints_supports,
       swiglu_stream_hints_launch, /*parent=*/2},
      {4, "grid_stride", "persistent grid of one resident wave (SMs x occupancy), grid-stride loop",
       swiglu_grid_stride_supports, swiglu_grid_stride_launch, /*parent=*/3},
      {5, "one_shot_hints", "rung 01 (one vector per thread, one-shot grid) with rung 03's hints",
       swiglu_one_shot_hints_supports, swiglu_one_shot_hints_launch, /*parent=*/1},
      {6, "pdl", "rung 01 launched programmatic-dependent: each block releases the next grid, then waits for the last",
       swiglu_pdl_supports, swiglu_pdl_launch, /*parent=*/1},
  };
  return table;
}

std::string swiglu_check_args(const SwigluArgs& a) {
  if (a.dtype != DType::f32 && a.dtype != DType::bf16) return "dtype must be f32 or bf16";
  if (a.rows < 0 || a.cols < 1) return "need rows >= 0 and cols >= 1";
  if (a.rows > 0 && (!a.g || !a.u || !a.y)) return "null pointer";
  const size_t es = dtype_size(a.dtype);
  if (a.rows > 0 && (!aligned(a.g, es) || !aligned(a.u, es) || !aligned(a.y, es)))
    return "g, u and y must be aligned to the element size";
  // In place is refused: rungs 03-04 read g and u through the non-coherent (read-only) path.
  if (a.rows > 0 && (a.y == a.g || a.y == a.u)) return "y must not alias g or u";
  if (static_cast<long long>(a.rows) * a.cols > (1LL << 38)) return "more than 2^38 elements";
  return "";
}

// An explicit preference order from the H200 measurements (docs/swiglu.md), not "highest
// number": rung 04 (persistent grid-stride) is slower than rung 01 on every DRAM shape, rungs
// 02-03 slightly slower than 01, and rung 05 ties rung 01; rung 06 is rung 01 that lets the next
// grid start while it runs (a gain between kernels, none alone). Misaligned pointers: only rung 00
// supports them.
const std::vector<int>& swiglu_pick_order() {
  static const std::vector<int> order = {6, 5, 1, 2, 3, 4, 0};
  return order;
}

const Rung<SwigluArgs>* swiglu_pick(const SwigluArgs& a, const DeviceInfo& d) {
  for (int n : swiglu_pick_order())
    for (const auto& r : swiglu_rungs())
      if (r.number == n && r.supports(a, d).empty()) return &r;
  return nullptr;
}

void swiglu(const SwigluArgs& a, cudaStream_t stream) {
  const std::string why = swiglu_check_args(a);
  KL_REQUIRE(why.empty(), "swiglu: " << why);
  const Rung<SwigluArgs>* r = swiglu_pick(a, device_info());
  KL_REQUIRE(r, "swiglu: no rung supports rows=" << a.rows << " cols=" << a.cols);
  r->launch(a, stream);
}

void swiglu_reference(const float* g, const float* u, double* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double gd = g[i];
    y[i] = gd / (1.0 + std::exp(-gd)) * static_cast<double>(u[i]);
  }
}

}  // namespace kl
