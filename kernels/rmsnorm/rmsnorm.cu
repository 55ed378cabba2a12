// kernels/rmsnorm/rmsnorm.cu — the two rung tables (written once, here), argument checks, and the
// entry points rmsnorm() / add_rmsnorm() that launch the picked rung for the shape.
#include "kl/rmsnorm.h"

#include "rmsnorm_internal.h"

namespace kl {
namespace rmsnorm_detail {

namespace {
template <class A>
std::string check_common(const A& a) {
  if (a.dtype != DType::f32 && a.dtype != DType::bf16) return "dtype must be f32 or bf16";
  if (a.rows <= 0 || a.cols <= 0) return "rows and cols must be positive";
  // Row counts and in-row column loops (c += block) stay inside int.
  if (a.rows > 0x7fffffff - 8192 || a.cols > 0x7fffffff - 8192)
    return "rows and cols must be at most 2^31 - 8193";
  if (!a.x || !a.w || !a.y) return "null pointer";
  const size_t es = dtype_size(a.dtype);
  if (!aligned(a.x, es) || !aligned(a.w, es) || !aligned(a.y, es))
    return "x, w and y must be aligned to the element size";
  if (!(a.eps >= 0.0f)) return "eps must be >= 0";
  return "";
}
int vec_elems(DType t) { return static_cast<int>(16 / dtype_size(t)); }
}  // namespace

std::string check_args(const RmsnormArgs& a) { return check_common(a); }
std::string check_args(const AddRmsnormArgs& a) {
  std::string why = check_common(a);
  if (why.empty() && !a.r) why = "null pointer (r)";
  if (why.empty() && !aligned(a.r, dtype_size(a.dtype)))
    why = "r must be aligned to the element size";
  return why;
}
bool vec_ok(const RmsnormArgs& a) {
  return a.cols % vec_elems(a.dtype) == 0 && aligned(a.x, 16) && aligned(a.w, 16) &&
         aligned(a.y, 16);
}
bool vec_ok(const AddRmsnormArgs& a) {
  return a.cols % vec_elems(a.dtype) == 0 && aligned(a.x, 16) && aligned(a.w, 16) &&
         aligned(a.y, 16) && aligned(a.r, 16);
}

}  // namespace rmsnorm_detail

using namespace rmsnorm_detail;

const std::vector<Rung<RmsnormArgs>>& rmsnorm_rungs() {
  static const std::vector<Rung<RmsnormArgs>> t = {
      {0, "thread_per_row", "naive: one thread per row, two scalar passes",
       rmsnorm_thread_per_row_supports, rmsnorm_thread_per_row_launch},
      {1, "warp_per_row", "a warp per row, coalesced loads, shuffle reduction",
       rmsnorm_warp_per_row_supports, rmsnorm_warp_per_row_launch, /*parent=*/0},
      {2, "vec128", "128-bit loads and stores (needs cols % (16/elem) == 0, aligned)",
       rmsnorm_vec128_supports, rmsnorm_vec128_launch, /*parent=*/1},
      {3, "block_per_row", "a block per row for wide rows, block reduction", rmsnorm_block_per_row_supports,
       rmsnorm_block_per_row_launch, /*parent=*/2},
      {4, "row_in_registers",
       "row held in registers by a group of 32..1024 threads sized from cols: DRAM read once",
       rmsnorm_row_in_registers_supports, rmsnorm_row_in_registers_launch, /*parent=*/3},
      {5, "cluster_row",
       "few or very long rows split over a thread-block cluster, DSMEM reduction",
       rmsnorm_cluster_row_supports, rmsnorm_cluster_row_launch, /*parent=*/4},
      {6, "prefetch_next_row",
       "persistent groups load their next row while reducing and storing this one (many rows)",
       rmsnorm_prefetch_next_row_supports, rmsnorm_prefetch_next_row_launch, /*parent=*/4},
      {7, "bulk_pipeline",
       "rows brought into a ring of shared-memory stages by cp.async.bulk: S rows in flight per block",
       rmsnorm_bulk_pipeline_supports, rmsnorm_bulk_pipeline_launch, /*parent=*/4},
      {8, "plain_loads",
       "rung 05 with x read by plain ld.global instead of the read-only non-allocating path",
       rmsnorm_plain_loads_supports, rmsnorm_plain_loads_launch, /*parent=*/5},
      {9, "pdl",
       "rung 08 launched programmatic-dependent: each block releases the next grid, then waits for the last",
       rmsnorm_pdl_supports, rmsnorm_pdl_launch, /*parent=*/8},
  };
  return t;
}

const std::vector<Rung<AddRmsnormArgs>>& add_rmsnorm_rungs() {
  static const std::vector<Rung<AddRmsnormArgs>> t = {
      {0, "thread_per_row", "naive: one thread per row, r += x then a second pass for y",
       add_rmsnorm_thread_per_row_supports, add_rmsnorm_thread_per_row_launch},
      {1, "block_per_row", "a block per row, coalesced loads, block reduction (r re-read)",
       add_rmsnorm_block_per_row_supports, add_rmsnorm_block_per_row_launch, /*parent=*/0},
      {2, "row_in_registers",
       "r + x held in registers by a group sized from cols: r, x read once, 128-bit accesses",
       add_rmsnorm_row_in_registers_supports, add_rmsnorm_row_in_registers_launch, /*parent=*/1},
      {3, "cluster_row",
       "few or very long rows split over a thread-block cluster, DSMEM reduction",
       add_rmsnorm_cluster_row_supports, add_rmsnorm_cluster_row_launch, /*parent=*/2},
      {4, "bulk_pipeline",
       "r and x rows brought into a ring of shared-memory stages by cp.async.bulk (fused 02's one pass)",
       add_rmsnorm_bulk_pipeline_supports, add_rmsnorm_bulk_pipeline_launch, /*parent=*/2},
      {5, "plain_loads",
       "fused 03 with x read by plain ld.global instead of the read-only non-allocating path",
       add_rmsnorm_plain_loads_supports, add_rmsnorm_plain_loads_launch, /*parent=*/3},
      {6, "pdl",
       "fused 05 launched programmatic-dependent: each block releases the next grid, then waits for the last",
       add_rmsnorm_pdl_supports, add_rmsnorm_pdl_launch, /*parent=*/5},
  };
  return t;
}

// The pick: the highest-numbered supported rung, except for unaligned bf16 rows when there are at
// least 16 rows per SM: there the register rungs' scalar path (2-byte accesses, at most 16 values
// per thread in flight) is slower than rung 01's warp per row and fused 01's block per row (rows
// 01 and 09, fused 01 and 06, of both committed runs at 4096 x 4099 bf16, 31 rows per SM). The
// bound of 16 rows per SM is a chosen one: below it one warp or block per row leaves SMs short of
// rows, where the register rungs can split a row over a cluster.
namespace {
template <class Args>
const Rung<Args>* pick_for(const std::vector<Rung<Args>>& table, const Args& a, const DeviceInfo& d) {
  if (a.dtype == DType::bf16 && !vec_ok(a) && a.rows >= 16LL * d.sms) {
    const Rung<Args>* one = find_rung(table, "1");
    if (one && one->supports(a, d).empty()) return one;
  }
  return best_supported(table, a, d);
}
}  // namespace

const Rung<RmsnormArgs>* rmsnorm_pick(const RmsnormArgs& a, const DeviceInfo& d) {
  return pick_for(rmsnorm_rungs(), a, d);
}
const Rung<AddRmsnormArgs>* add_rmsnorm_pick(const AddRmsnormArgs& a, const DeviceInfo& d) {
  return pick_for(add_rmsnorm_rungs(), a, d);
}

namespace {
// The pick depends only on (device, rows, cols, dtype, vec_ok): remember the last one per thread so
// a loop of launches on one shape skips the supports() walk (host time between short kernels).
template <class Args>
struct PickMemo {
  int dev = -1, rows = 0, cols = 0;
  DType t = DType::f32;
  bool vec = false;
  const Rung<Args>* rung = nullptr;
};
template <class Args, class PickFn>
const Rung<Args>* memo_pick(const Args& a, PickFn pick) {
  static thread_local PickMemo<Args> m;
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  const bool vec = vec_ok(a);
  if (m.rung && m.dev == dev && m.rows == a.rows && m.cols == a.cols && m.t == a.dtype &&
      m.vec == vec)
    return m.rung;
  const Rung<Args>* r = pick(a, device_info());
  m = PickMemo<Args>{dev, a.rows, a.cols, a.dtype, vec, r};
  return r;
}
}  // namespace

void rmsnorm(const RmsnormArgs& a, cudaStream_t s) {
  const std::string why = check_args(a);
  KL_REQUIRE(why.empty(), "rmsnorm: " << why);
  const auto* r = memo_pick(a, rmsnorm_pick);
  KL_REQUIRE(r, "rmsnorm: no rung supports rows=" << a.rows << " cols=" << a.cols);
  r->launch(a, s);
}
void add_rmsnorm(const AddRmsnormArgs& a, cudaStream_t s) {
  const std::string why = check_args(a);
  KL_REQUIRE(why.empty(), "add_rmsnorm: " << why);
  const auto* r = memo_pick(a, add_rmsnorm_pick);
  KL_REQUIRE(r, "add_rmsnorm: no rung supports rows=" << a.rows << " cols=" << a.cols);
  r->launch(a, s);
}

double rmsnorm_bytes(const RmsnormArgs& a) {
  const double n = static_cast<double>(a.rows) * a.cols, es = dtype_size(a.dtype);
  return (2.0 * n + a.cols) * es;  // x read, y written, w read once
}
double add_rmsnorm_bytes(const AddRmsnormArgs& a) {
  const double n = static_cast<double>(a.rows) * a.cols, es = dtype_size(a.dtype);
  return (4.0 * n + a.cols) * es;  // x, r read; r, y written; w read once
}
double rmsnorm_flops(const RmsnormArgs& a) { return 4.0 * a.rows * static_cast<double>(a.cols); }
double add_rmsnorm_flops(const AddRmsnormArgs& a) {
  return 5.0 * a.rows * static_cast<double>(a.cols);
}

}  // namespace kl
