// tests/attention_test_util.h — the problem description the attention GPU tests share.
#pragma once
#include <string>

namespace kl::test {

// One attention problem: [B, H, S, D] bf16 Q/K/V/O, GQA (Hkv divides Hq), causal or not.
struct AttnCase {
  int B, Hq, Hkv, Sq, Skv, D;
  bool causal;
  // The bench's shape string, so a failing case can be re-run with bench_attention --shape.
  std::string str() const {
    return "B=" + std::to_string(B) + ",Hq=" + std::to_string(Hq) + ",Hkv=" + std::to_string(Hkv) +
           ",Sq=" + std::to_string(Sq) + ",Skv=" + std::to_string(Skv) + ",D=" + std::to_string(D) +
           ",causal=" + std::to_string(causal);
  }
};

}  // namespace kl::test
