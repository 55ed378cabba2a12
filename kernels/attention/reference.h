// kernels/attention/reference.h — CPU double-precision attention reference (bench and tests, both
// parts of the ladder). Inputs are host floats holding the same bf16-rounded values the GPU reads.
#pragma once
#include <cstdint>
#include <vector>

#include "kl/attention.h"

namespace kl {

// Keys query i may see: all Skv, or (causal, diagonal aligned to the end) i + (Skv - Sq) + 1.
int attention_visible_keys(int i, int Sq, int Skv, bool causal);
// The softmax scale a rung uses: a.scale, or 1/sqrt(D) when a.scale == 0.
double attention_scale(const AttentionArgs& a);

// One output row: q [D]; K, V [Skv][D] of the row's KV head; keys [0, visible) take part.
// out [D] = sum_j softmax_j(scale * q.k_j) v_j, all in double.
void attention_reference_row(const float* q, const float* K, const float* V, int visible, int D,
                             double scale, double* out);

// Whole problem (small shapes): Q [B,Hq,Sq,D], K/V [B,Hkv,Skv,D] -> O [B,Hq,Sq,D] (doubles).
std::vector<double> attention_reference(const std::vector<float>& Q, const std::vector<float>& K,
                                        const std::vector<float>& V, const AttentionArgs& shape);

struct AttentionRowId {
  int b, hq, i;
};

}  // namespace kl
