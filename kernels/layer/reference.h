// kernels/layer/reference.h — the decoder layer's GPU fp32 reference (bench and tests).
//
// The same layer as kl::layer (include/kl/layer.h: both modes, the positions and their default,
// kv_len, the caches) computed by plain kernels: a shared-memory-tiled fp32 GEMM, RMSNorm with one
// block per row, RoPE with the angle and its sine and cosine in double, attention with one warp per
// query row (two passes: the row's max, then exp and the weighted sum of V, all fp32), SwiGLU and
// the residual adds in fp32. Each intermediate the layer stores in bf16 (h, qkv, q, the cache rows,
// o, o Wo^T, r, h2, gate, up, swiglu, down, y) is rounded to bf16 here too, so the two differ only
// by the order of fp32 sums, the attention's bf16 P and the angle's last bits.
// Writes a.y and the cache rows of the positions; a.workspace must hold
// layer_reference_workspace_bytes(a) bytes. Checks nothing (the caller passes arguments kl::layer
// takes); launches only, never synchronizes.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "kl/layer.h"

namespace kl {

size_t layer_reference_workspace_bytes(const LayerArgs& shape_only);
void layer_reference(const LayerArgs& a, cudaStream_t stream);

}  // namespace kl
