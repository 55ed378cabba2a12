// kernels/softmax/softmax.cu — THE table of softmax rungs (number, name, the one change), the entry
// point, argument checks and the CPU reference. Rung code lives in NN_*.cu.
#include "kl/softmax.h"
#include "softmax_impl.cuh"

#include <cmath>
#include <limits>

namespace kl {

const std::vector<Rung<SoftmaxArgs>>& softmax_rungs() {
  using namespace softmax_detail;
  static const std::vector<Rung<SoftmaxArgs>> table = {
      {0, "three_pass", "thread per row: max, sum, write (three reads)", softmax_three_pass_supports, softmax_three_pass_launch},
      {1, "warp_online", "warp per row, online (max, sum) pass + write pass", softmax_warp_online_supports,
       softmax_warp_online_launch, /*parent=*/0},
      {2, "block_row", "block per row with 16-byte loads", softmax_block_row_supports, softmax_block_row_launch, /*parent=*/1},
      {3, "row_in_regs", "row held in registers by 32..1024 threads: one read, exp once",
       softmax_row_in_regs_supports, softmax_row_in_regs_launch, /*parent=*/2},
      {4, "rows_per_block", "short rows: 2-8 rows (groups of 32..128) per 256-thread block",
       softmax_rows_per_block_supports, softmax_rows_per_block_launch, /*parent=*/3},
      {5, "cluster_split", "row split over a 2..8-CTA cluster, DSMEM max/sum exchange",
       softmax_cluster_split_supports, softmax_cluster_split_launch, /*parent=*/3},
      {6, "prefetch_next_row", "persistent blocks; next row's loads issued before this row's math",
       softmax_prefetch_next_row_supports, softmax_prefetch_next_row_launch, /*parent=*/3},
      {7, "one_reduction", "rows in registers (03/04 layouts), one online (max, sum) reduction",
       softmax_one_reduction_supports, softmax_one_reduction_launch, /*parent=*/4},
      {8, "five_blocks", "8192-wide bf16 rows: compile-time 256-thread group, <= 48 regs (5 blocks/SM)",
       softmax_five_blocks_supports, softmax_five_blocks_launch, /*parent=*/7},
      {9, "stream_hints", "rungs 07/08 with ld.global.nc.L1::no_allocate x and st.global.cs y",
       softmax_stream_hints_supports, softmax_stream_hints_launch, /*parent=*/8},
  };
  return table;
}

std::string softmax_check_args(const SoftmaxArgs& a) {
  if (a.dtype != DType::f32 && a.dtype != DType::bf16) return "dtype must be f32 or bf16";
  if (a.rows < 0 || a.cols < 1) return "need rows >= 0 and cols >= 1";
  // Row counts and in-row column loops (c += block) stay inside int.
  if (a.rows > 0x7fffffff - 8192 || a.cols > 0x7fffffff - 8192)
    return "rows and cols must be at most 2^31 - 8193";
  if (a.rows > 0 && (!a.x || !a.y)) return "null pointer";
  if (a.rows > 0 && (!aligned(a.x, dtype_size(a.dtype)) || !aligned(a.y, dtype_size(a.dtype))))
    return "x and y must be aligned to the element size";
  if (a.rows > 0 && a.x == a.y) return "in-place (x == y) is not supported";
  return "";
}

// The pick is an explicit preference order from the committed measurements (docs/softmax.md), not
// "highest number": rung 08 is the fastest on 16384 x 8192 bf16 and takes only that row class;
// rung 09 (07's layout with streaming hints) elsewhere: equal to 07 on the DRAM shapes, ahead of it
// where x and y fit in L2 (4096 x 1024 bf16). Rung 06 (persistent + prefetch) is slower than
// 03/04 on every DRAM shape and rung 05 (clusters) slower than 03 wherever 03 fits (1 x 8192,
// 64 x 8192), so 05 is picked only for rows too long for one block (16 x 131072) and 06 never.
const std::vector<int>& softmax_pick_order() {
  static const std::vector<int> order = {8, 9, 7, 4, 3, 5, 6, 2, 1, 0};
  return order;
}

// Where rung 03 leads 07 and 09, so the pick tries it first: rows on the scalar path (not 16-byte
// vectors: 4096 x 4099, both dtypes), and f32 rows of 1024 to 2048 elements (4096 x 1024), where
// 03's one-warp block per row runs ahead of 07's and 09's packed groups.
namespace {
bool row_in_regs_first(const SoftmaxArgs& a) {
  return !softmax_detail::vec_ok(a) || (a.dtype == DType::f32 && a.cols >= 1024 && a.cols <= 2048);
}
}  // namespace

const Rung<SoftmaxArgs>* softmax_pick(const SoftmaxArgs& a, const DeviceInfo& d) {
  auto supported = [&](int n) -> const Rung<SoftmaxArgs>* {
    for (const auto& r : softmax_rungs())
      if (r.number == n && r.supports(a, d).empty()) return &r;
    return nullptr;
  };
  if (row_in_regs_first(a))
    if (const Rung<SoftmaxArgs>* r = supported(3)) return r;
  for (int n : softmax_pick_order())
    if (const Rung<SoftmaxArgs>* r = supported(n)) return r;
  return nullptr;
}

void softmax(const SoftmaxArgs& a, cudaStream_t stream) {
  const std::string why = softmax_check_args(a);
  KL_REQUIRE(why.empty(), "softmax: " << why);
  const Rung<SoftmaxArgs>* r = softmax_pick(a, device_info());
  KL_REQUIRE(r, "softmax: no rung supports rows=" << a.rows << " cols=" << a.cols);
  r->launch(a, stream);
}

void softmax_reference(const float* x, double* y, long long rows, long long cols) {
  const double ninf = -std::numeric_limits<double>::infinity();
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double* yr = y + r * cols;
    double m = ninf;
    for (long long j = 0; j < cols; ++j) m = std::max(m, static_cast<double>(xr[j]));
    if (m == ninf) {  // all -inf: the documented result is all zeros
      for (long long j = 0; j < cols; ++j) yr[j] = 0.0;
      continue;
    }
    double s = 0.0;
    for (long long j = 0; j < cols; ++j) s += std::exp(static_cast<double>(xr[j]) - m);
    for (long long j = 0; j < cols; ++j) yr[j] = std::exp(static_cast<double>(xr[j]) - m) / s;
  }
}

}  // namespace kl
