// bench/layer_inputs.h — the decoder layer's random weights, as bench_layer and the layer tests use
// them: one device allocation holding the seven tensors (each 256-byte aligned), uniform values
// scaled so the activations stay O(1): a weight of fan-in K is uniform in [-a, a) with a = sqrt(3/K)
// (unit variance in, unit variance out), wo with twice that range (the attention's share of the
// residual stream stays comparable to x's), the RMSNorm weights in [0.75, 1.25).
#pragma once
#include <cmath>
#include <cstdint>

#include "bench/harness.h"
#include "kl/layer.h"

namespace kl::bench {

struct LayerWeightsOnDevice {
  DeviceBuffer buf;
  LayerWeights w;
  size_t offsets[7] = {};  // attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown (bytes)
  size_t elems[7] = {};

  static void sizes(const LayerDims& m, size_t* elems) {
    const size_t h = static_cast<size_t>(m.hidden), mlp = static_cast<size_t>(m.mlp),
                 width = (static_cast<size_t>(m.Hq) + 2 * static_cast<size_t>(m.Hkv)) * m.D;
    const size_t e[7] = {h, width * h, h * m.Hq * m.D, h, mlp * h, mlp * h, h * mlp};
    for (int i = 0; i < 7; ++i) elems[i] = e[i];
  }
  // Bytes of the one allocation.
  static size_t bytes(const LayerDims& m) {
    size_t e[7], total = 0;
    sizes(m, e);
    for (size_t n : e) total += (2 * n + 255) / 256 * 256;
    return total;
  }

  LayerWeightsOnDevice(const LayerDims& m, uint64_t seed, cudaStream_t s) : buf(bytes(m)) {
    sizes(m, elems);
    size_t off = 0;
    for (int i = 0; i < 7; ++i) {
      offsets[i] = off;
      off += (2 * elems[i] + 255) / 256 * 256;
    }
    const float fan_in[7] = {0.f, float(m.hidden), float(m.Hq * m.D), 0.f, float(m.hidden), float(m.hidden),
                             float(m.mlp)};
    for (int i = 0; i < 7; ++i) {
      const float a = fan_in[i] > 0 ? std::sqrt(3.f / fan_in[i]) * (i == 2 ? 2.f : 1.f) : 0.f;
      const float lo = fan_in[i] > 0 ? -a : 0.75f, hi = fan_in[i] > 0 ? a : 1.25f;
      fill_uniform(at(i), elems[i], DType::bf16, seed + 0x51ed27ULL * (i + 1), lo, hi, s);
    }
    w.attn_norm = at(0);
    w.wqkv = at(1);
    w.wo = at(2);
    w.mlp_norm = at(3);
    w.wgate = at(4);
    w.wup = at(5);
    w.wdown = at(6);
  }
  __nv_bfloat16* at(int i) const {
    return reinterpret_cast<__nv_bfloat16*>(static_cast<char*>(buf.ptr) + offsets[i]);
  }
};

}  // namespace kl::bench
