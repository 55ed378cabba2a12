// include/kl/dtype.h — the storage types a family can take, and host-side bf16 conversion.
//
// Storage is fp32 or bf16; math is always fp32 (docs/design.md). The host conversions round to nearest
// even exactly as __float2bfloat16_rn does, so CPU references see the same rounded inputs.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace kl {

enum class DType { f32, bf16 };

inline const char* dtype_name(DType t) { return t == DType::f32 ? "f32" : "bf16"; }
inline size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }
// Parses "f32"/"fp32"/"float32" and "bf16"/"bfloat16"; returns false on anything else.
inline bool parse_dtype(const std::string& s, DType* out) {
  if (s == "f32" || s == "fp32" || s == "float32") { *out = DType::f32; return true; }
  if (s == "bf16" || s == "bfloat16") { *out = DType::bf16; return true; }
  return false;
}

inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return 0x7fc0;  // keep NaN a NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}
inline float round_to_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

}  // namespace kl
