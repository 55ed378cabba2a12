// kernels/attention/attention_internal.h — what the attention rung files share (host side):
// the argument checks every rung starts from, the rung launchers the table in attention.cu names,
// and the split-KV plan of rung 03 (attention_workspace_bytes() sizes its workspace).
#pragma once
#include <string>

#include "kl/attention.h"

namespace kl {

// Shape/pointer/alignment/arch checks shared by every rung ("" = fine, else the reason):
// non-null 16-byte-aligned Q/K/V/O, D in {64, 128}, positive dims, Hq % Hkv == 0, Sq <= Skv,
// scale >= 0 and finite, cc >= 8.0.
std::string attention_args_supports(const AttentionArgs& a, const DeviceInfo& d);
// 1/sqrt(D) unless a.scale > 0, times log2(e): the exponent factor of the exp2 softmax.
float attention_scale_log2(const AttentionArgs& a);
// True when rung 03 treats the shape as decode (few queries against a long KV cache).
inline bool attention_is_decode(const AttentionArgs& a) { return a.Sq <= 16; }

// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) once per (kernel, device) in the process: the
// launchers call it on every launch, and on decode-sized problems (a few microseconds of GPU work)
// the repeated driver call is a visible share of the host time per launch. `max_carveout`: also
// ask for the largest shared-memory carveout, for a kernel whose CTAs must fit more than once per
// SM (the driver's default carveout may leave room for one).
void attention_smem_optin(const void* kernel, int bytes, bool max_carveout = false);

std::string attention_warp_per_row_supports(const AttentionArgs& a, const DeviceInfo& d);
void attention_warp_per_row_launch(const AttentionArgs& a, cudaStream_t s);
std::string attention_flash_cuda_cores_supports(const AttentionArgs& a, const DeviceInfo& d);
void attention_flash_cuda_cores_launch(const AttentionArgs& a, cudaStream_t s);
std::string attention_flash_mma_sync_supports(const AttentionArgs& a, const DeviceInfo& d);
void attention_flash_mma_sync_launch(const AttentionArgs& a, cudaStream_t s);
std::string attention_flash_split_kv_supports(const AttentionArgs& a, const DeviceInfo& d);
void attention_flash_split_kv_launch(const AttentionArgs& a, cudaStream_t s);
// Flag value (epoch) of one split decode launch (rungs 03 and 09, decode_split.cuh): a process-wide
// counter, never 0 or 0xffffffff (the values a cleared or 0xff-poisoned workspace holds).
unsigned attention_decode_epoch();
// Workspace rung 03 would use on this shape with an unlimited workspace (0 if it would not split).
size_t attention_flash_split_kv_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d);
std::string attention_tma_mma_sync_supports(const AttentionArgs& a, const DeviceInfo& d);
void attention_tma_mma_sync_launch(const AttentionArgs& a, cudaStream_t s);
// Workspace rung 11 would use (its own tail-split plan; decode: rung 03's).
size_t attention_tma_mma_sync_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d);

}  // namespace kl
