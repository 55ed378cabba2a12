// kernels/gemm_bf16/gemm_bf16_rungs.h — internal: the part-1 rungs' supports/launch functions (the
// table in gemm_bf16.cu lists them) and helpers shared by the rung files. Not a public header.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "kl/gemm_bf16.h"

namespace kl::gemm_bf16_detail {

std::string gemm_bf16_wmma_global_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_wmma_global_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_smem_tile_padded_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_smem_tile_padded_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_cp_async_pipeline_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_cp_async_pipeline_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_mma_sync_swizzle_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_mma_sync_swizzle_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_stream_k_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_stream_k_launch(const GemmBf16Args& a, cudaStream_t s);

// The CTA tiles of rungs 03 and 04 (mma_sync_tile.cuh has their shapes). The rungs choose one per
// call; tests force each one through the *_tile entry points.
enum class Tile { L, M, S, T, D16, D32, kCount };
const char* tile_name(Tile t);
void gemm_bf16_mma_sync_swizzle_launch_tile(Tile t, const GemmBf16Args& a, cudaStream_t s);
// Rung 04 with a forced tile; sk = +1 forces the Stream-K part on (whenever the tiles do not fill
// whole waves), -1 off (data-parallel only), 0 lets the model decide, as the rung does. Supports:
// "" or why not (the tile does not fit the device, workspace too small).
std::string gemm_bf16_stream_k_supports_tile(Tile t, int sk, const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_stream_k_launch_tile(Tile t, int sk, const GemmBf16Args& a, cudaStream_t s);
// Rung 17 (rung 03's tiles fed by TMA, sm_90+; appended to the table by hopper_rungs.cu), and with
// a forced tile (throws BadArgument if the tile does not fit the device).
std::string gemm_bf16_tma_mma_sync_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_tma_mma_sync_launch(const GemmBf16Args& a, cudaStream_t s);
void gemm_bf16_tma_mma_sync_launch_tile(Tile t, const GemmBf16Args& a, cudaStream_t s);

// Shape / pointer checks every part-1 rung shares: M, N, K > 0; N and K multiples of 8 (one
// 16-byte chunk); A, W, C 16-byte aligned. "" = fine, else the reason.
std::string shape_alignment_supports(const GemmBf16Args& a);

// Resident CTAs per SM of kernel `fn` at (threads, dynamic smem); sets the >48 KB opt-in
// attribute first. Cached per (fn, device): after the first call it makes no CUDA API calls, so
// launches stay capturable in a CUDA graph.
int occupancy(const void* fn, int threads, int smem_bytes, const DeviceInfo& d);

// Workspace rung 04 (Stream-K) needs for this shape: flags + one fp32 partial tile per CTA.
size_t streamk_workspace_bytes(int M, int N, int K, const DeviceInfo& d);

}  // namespace kl::gemm_bf16_detail
