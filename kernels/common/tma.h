// kernels/common/tma.h — host-side TMA tensor-map creation (CUtensorMap for cp.async.bulk.tensor).
//
// cuTensorMapEncodeTiled is a driver API function. We never link libcuda: the entry point is fetched
// once through cudaGetDriverEntryPointByVersion(..., 12000, ...) and cached. <cuda.h> is included
// for the types only. Encoding is a pure host computation (cheap, no GPU work, no allocation), so a
// launcher may build its maps on every call and stay graph-capturable: the 128-byte map travels in
// the kernel's parameter block (a __grid_constant__ const CUtensorMap parameter).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kl {

// Encodes a tiled tensor map of the tensor at `base` (16-byte aligned). `rank` 1..5; dims[i] in elements, innermost first; strides[i] is the
// byte stride of dimension i+1 (rank-1 entries, each a multiple of 16); box[i] the box size in
// elements (each <= 256; with a swizzle, box[0] * element size must be <= the swizzle span).
// Out-of-bounds elements read as zero (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE); stores clip.
// Throws kl::CudaError if the driver lacks the entry point, kl::BadArgument if encoding fails.
CUtensorMap make_tensor_map(const void* base, CUtensorMapDataType dtype, int rank,
                            const uint64_t* dims,
                            const uint64_t* strides_bytes, const uint32_t* box,
                            CUtensorMapSwizzle swizzle,
                            CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

// A row-major bf16 matrix [rows, cols] (row stride `ld` elements) seen as 2D boxes of
// box_rows x box_cols elements (cols innermost).
CUtensorMap make_tensor_map_bf16_2d(const void* base, uint64_t rows, uint64_t cols, uint64_t ld,
                                    uint32_t box_rows, uint32_t box_cols,
                                    CUtensorMapSwizzle swizzle);

// True if the driver exposes cuTensorMapEncodeTiled (12.0+); "" or the reason via the out param.
bool tma_available(const char** why = nullptr);

}  // namespace kl
