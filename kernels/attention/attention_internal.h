// kernels/attention/attention_internal.h — what the attention rung files share (host side):
// the argument checks every rung starts from, the rung launchers the table in attention.cu names,
// and the split-KV plan of rung 03 (attention_workspace_bytes() sizes its workspace).
#pragma once
#include <string>

#include "attention/attention.h"

namespace kl {

// Shape/pointer/alignment/arch checks shared by every rung ("" = fine, else the reason):
// non-null 16-byte-aligned Q/K/V/O, D in {64, 128}, positive dims, Hq % Hkv == 0, Sq <= Skv,
// scale >= 0 and finite, cc >= 8.0.
std::string attention_common_supports(const AttentionArgs& a, const DeviceInfo& d);
// 1/sqrt(D) unless a.scale > 0, times log2(e): the exponent factor of the exp2 softmax.
float attention_scale_log2(const AttentionArgs& a);
// True when rung 03 treats the shape as decode (few queries against a long KV cache).
inline bool attention_is_decode(const AttentionArgs& a) { return a.Sq <= 16; }

// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) once per (kernel, device) in the process: the
// launchers call it on every launch, and on decode-sized problems (a few microseconds of GPU work)
// the repeated driver call is a visible share of the host time per launch.
void attention_smem_optin(const void* kernel, int bytes);

std::string attn00_supports(const AttentionArgs& a, const DeviceInfo& d);
void attn00_launch(const AttentionArgs& a, cudaStream_t s);
std::string attn01_supports(const AttentionArgs& a, const DeviceInfo& d);
void attn01_launch(const AttentionArgs& a, cudaStream_t s);
std::string attn02_supports(const AttentionArgs& a, const DeviceInfo& d);
void attn02_launch(const AttentionArgs& a, cudaStream_t s);
std::string attn03_supports(const AttentionArgs& a, const DeviceInfo& d);
void attn03_launch(const AttentionArgs& a, cudaStream_t s);
// Flag value (epoch) of one split decode launch (rungs 03 and 09, decode_split.cuh): a process-wide
// counter, never 0 or 0xffffffff (the values a cleared or 0xff-poisoned workspace holds).
unsigned attention_decode_epoch();
// Workspace rung 03 would use on this shape with an unlimited workspace (0 if it would not split).
size_t attn03_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d);

#ifdef KL_DEC_TRACE
// Rung 03's decode timeline (dec_trace.cuh, tools/dec_trace.cu): blocks b < kDecTraceBlocks record
// kDecTraceSlots words each (e0-e6 %globaltimer ns, then the block tag).
constexpr int kDecTraceBlocks = 8192;
constexpr int kDecTraceSlots = 8;
// Zeroes the whole trace on `s` (before a launch: a slot that stays 0 was not reached).
void attn03_trace_clear(cudaStream_t s);
// Copies blocks [0, min(nblocks, kDecTraceBlocks)) of the trace, row-major, into `out`.
void attn03_trace_dump(std::vector<unsigned long long>& out, int nblocks);
// Rung 03's decode grid for `a` as launched (its workspace included): tiles * splits blocks.
struct Attn03DecodeGrid {
  long long tiles = 0;
  int splits = 1;
};
Attn03DecodeGrid attn03_decode_grid(const AttentionArgs& a);
#endif

}  // namespace kl
