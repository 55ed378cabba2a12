// 09 stream_hints — streaming cache hints on rungs 07/08.
//
// Parent: 08 five_blocks (08's layout where it applies, else 07's).
// Change: x read with ld.global.nc.L1::no_allocate (read-only path, not kept in L1), y written with
//   st.global.cs (evict-first in L2).
// Why: every byte is touched once; L1 allocation of x costs tag/fill work for lines never re-read,
//   and normal-priority y lines compete in L2 with x lines still to be read.
// Limits: neutral at the DRAM roof (as on SwiGLU); a few percent ahead of 07 where x and y fit in
//   L2, so the pick takes it wherever 07 would run. x must not be written during the kernel: y may
//   not alias x (softmax_check_args refuses in-place).
#include "fused_impl.cuh"

namespace kl::softmax_detail {

// Rung 08's choice with streaming hints on x's loads and y's stores.
struct StreamHints : FiveBlocks {
  static constexpr Ld load = Ld::nc_noalloc;
  static constexpr St store = St::stream;
};

std::string softmax_stream_hints_supports(const SoftmaxArgs& a, const DeviceInfo&) { return fused_supports(a); }
void softmax_stream_hints_launch(const SoftmaxArgs& a, cudaStream_t s) {
  launch_fused<StreamHints>(a, s);
}

}  // namespace kl::softmax_detail
