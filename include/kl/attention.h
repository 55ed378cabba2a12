// include/kl/attention.h — fused attention: arguments, rung table, entry point.
//
// O = softmax(Q K^T * scale [+ causal mask]) V, bf16 Q/K/V/O in [B, H, S, D] (contiguous), fp32
// accumulation. D in {64, 128}. Hq query heads share Hkv key/value heads (GQA: Hkv divides Hq;
// query head h reads KV head h / (Hq / Hkv)). Sq <= Skv; with causal, query i may see keys
// j <= i + (Skv - Sq) (the diagonal aligned to the end: decode is Sq = 1 against the whole cache).
// Rungs 00-03 (part 1, sm_80+) live in NN_*.cu; the sm_90a rungs (part 2) are appended by
// attention_append_hopper_rungs() and attention_append_late_hopper_rungs(), defined in
// hopper_rungs.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <vector>

#include "kl/registry.h"

namespace kl {

struct AttentionArgs {
  const __nv_bfloat16* Q = nullptr;  // [B, Hq, Sq, D]
  const __nv_bfloat16* K = nullptr;  // [B, Hkv, Skv, D]
  const __nv_bfloat16* V = nullptr;  // [B, Hkv, Skv, D]
  __nv_bfloat16* O = nullptr;        // [B, Hq, Sq, D]
  int B = 0, Hq = 0, Hkv = 0, Sq = 0, Skv = 0, D = 0;
  bool causal = false;
  float scale = 0.f;                 // 0 means 1/sqrt(D)
  // Scratch for split-KV rungs (flags, partial O and log-sum-exp). Caller-owned and reused; zero it
  // once before its first use (the kernels leave it ready for the next launch, so it is never
  // cleared between launches); size from attention_workspace_bytes().
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

const std::vector<Rung<AttentionArgs>>& attention_rungs();
void attention_append_hopper_rungs(std::vector<Rung<AttentionArgs>>& table);
void attention_append_late_hopper_rungs(std::vector<Rung<AttentionArgs>>& table);  // after rung 11
size_t attention_workspace_bytes(const AttentionArgs& shape_only, const DeviceInfo& d);

// Entry point: best supported rung for the shape; throws kl::BadArgument on bad input.
void attention(const AttentionArgs& args, cudaStream_t stream);
const Rung<AttentionArgs>* attention_pick(const AttentionArgs& args, const DeviceInfo& d);

}  // namespace kl
