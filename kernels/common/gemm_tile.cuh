// kernels/common/gemm_tile.cuh — tile-addressing helpers shared by the GEMM ladders:
//   * swz128_chunk(): the 128-byte XOR swizzle (16-byte chunk c of row r lives at chunk c ^ (r & 7))
//     — the same pattern TMA's CU_TENSOR_MAP_SWIZZLE_128B applies, so a hand-swizzled cp.async
//     tile and a TMA tile are read by the same ldmatrix addresses.
//   * grouped_tile(): grouped raster order — consecutive tile indices walk down a strip of `group`
//     tile rows before moving right, so the tiles in flight share A rows and W columns in L2.
#pragma once
#include <cstdint>

namespace kl {

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a tile whose rows are 128 bytes.
// Eight consecutive rows at the same logical chunk land in eight distinct chunks: the 8 addresses
// of one ldmatrix 8x8 matrix (or one row of cp.async stores) cover all 32 banks once.
__host__ __device__ __forceinline__ uint32_t swz128_offset(int row, int chunk) {
  return static_cast<uint32_t>(row) * 128u + static_cast<uint32_t>((chunk ^ (row & 7)) << 4);
}

// Tile coordinates of linear tile `t` in a tiles_m x tiles_n grid under grouped raster order:
// groups of `group` tile rows; inside a group, tiles go down the column first. The last group may
// be shorter. Returns (tm, tn).
__host__ __device__ __forceinline__ void grouped_tile(int t, int tiles_m, int tiles_n, int group,
                                                      int& tm, int& tn) {
  const int per_group = group * tiles_n;        // tiles in one full group of rows
  const int g = t / per_group;                  // which group
  const int first_m = g * group;                // its first tile row
  const int rows = (tiles_m - first_m) < group ? (tiles_m - first_m) : group;  // short last group
  const int in = t - g * per_group;             // index inside the group
  tm = first_m + in % rows;
  tn = in / rows;
}

}  // namespace kl
