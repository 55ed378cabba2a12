// tests/test_cpu_layer.cpp — what the decoder layer decides without a GPU: the table, the defaults
// (kv_len, the Llama-3-8B dimensions), the workspace layout around a given scratch size (every
// tensor in its own aligned piece, the copies only where needed; the families' scratch itself needs
// the device and is checked in tests/test_gpu_layer.cu), the counted FLOPs and bytes, and every
// argument refusal that comes before the workspace size (pointers are fake, never dereferenced).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/layer/layer_internal.h"
#include "kl/layer.h"
#include "tests/fake_device.h"

namespace {

using namespace kl;

using kl::test::fake_h200;

constexpr size_t kBigWorkspace = size_t(1) << 40;  // more than any shape here needs: size never checked

template <class T>
T* fake(uintptr_t at) {
  return reinterpret_cast<T*>(at);
}

// Llama-3-8B dimensions; every tensor at its own fake address far from the others.
LayerArgs llama(LayerMode mode, int B, int S, int L, int kv_len = 0) {
  LayerArgs a;
  a.mode = mode;
  a.B = B;
  a.S = S;
  a.L = L;
  a.kv_len = kv_len;
  const uintptr_t G = uintptr_t(1) << 36;
  a.x = fake<const __nv_bfloat16>(1 * G);
  a.y = fake<__nv_bfloat16>(2 * G);
  a.w.attn_norm = fake<const __nv_bfloat16>(3 * G);
  a.w.wqkv = fake<const __nv_bfloat16>(4 * G);
  a.w.wo = fake<const __nv_bfloat16>(5 * G);
  a.w.mlp_norm = fake<const __nv_bfloat16>(6 * G);
  a.w.wgate = fake<const __nv_bfloat16>(7 * G);
  a.w.wup = fake<const __nv_bfloat16>(8 * G);
  a.w.wdown = fake<const __nv_bfloat16>(9 * G);
  a.k_cache = fake<__nv_bfloat16>(10 * G);
  a.v_cache = fake<__nv_bfloat16>(11 * G);
  a.pos = mode == LayerMode::decode ? fake<const int>(12 * G) : nullptr;
  a.workspace = fake<void>(13 * G);
  a.workspace_bytes = kBigWorkspace;
  return a;
}

TEST(LayerCpu, Table) {
  const auto& t = layer_rungs();
  ASSERT_GE(t.size(), 1u);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].number, static_cast<int>(i)) << "rungs are numbered in ladder order";
    EXPECT_GT(std::string(t[i].change).size(), 10u);
    EXPECT_LT(t[i].parent, t[i].number);
    for (size_t j = 0; j < i; ++j) EXPECT_STRNE(t[i].name, t[j].name);
  }
  EXPECT_STREQ(t[0].name, "entry_points");
  EXPECT_EQ(t[0].parent, -1);
}

TEST(LayerCpu, Defaults) {
  const LayerDims m;
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.Hq, 32);
  EXPECT_EQ(m.Hkv, 8);
  EXPECT_EQ(m.D, 128);
  EXPECT_EQ(m.mlp, 14336);
  EXPECT_FLOAT_EQ(m.eps, 1e-5f);
  EXPECT_FLOAT_EQ(m.theta, 500000.f);
  EXPECT_EQ(layer_kv_len(llama(LayerMode::prefill, 1, 100, 300)), 100);
  EXPECT_EQ(layer_kv_len(llama(LayerMode::decode, 4, 1, 300)), 300);
  EXPECT_EQ(layer_kv_len(llama(LayerMode::prefill, 1, 100, 300, 250)), 250);
}

TEST(LayerCpu, WorkspaceLayoutHoldsEveryTensor) {
  const LayerDims m;
  layer_detail::FamilyScratch fam;
  fam.gemm = 1000000;       // rounded up to 256 bytes
  fam.attention = 300001;   // its own region after the GEMMs'
  for (const LayerArgs& a : {llama(LayerMode::prefill, 1, 4096, 4096), llama(LayerMode::prefill, 2, 300, 512),
                             llama(LayerMode::prefill, 3, 7, 20, 20), llama(LayerMode::decode, 1, 1, 4096),
                             llama(LayerMode::decode, 16, 1, 4096, 1000)}) {
    SCOPED_TRACE(std::to_string(a.B) + "x" + std::to_string(a.S) + " L " + std::to_string(a.L));
    const layer_detail::WorkspaceLayout w = layer_detail::workspace_layout(a, fam);
    const size_t T = size_t(a.B) * a.S, kv = size_t(layer_kv_len(a));
    const size_t width = size_t(m.Hq + 2 * m.Hkv) * m.D, hqd = size_t(m.Hq) * m.D;
    EXPECT_EQ(w.gemm, (fam.gemm + 255) / 256 * 256);
    EXPECT_EQ(w.att_bytes, (fam.attention + 255) / 256 * 256);
    EXPECT_GT(w.att_flags, 0u);
    EXPECT_LE(w.att_flags, w.att_bytes);
    EXPECT_EQ(w.copy_kv, kv < size_t(a.L)) << "B * Hkv > 1 here: rows [0, kv_len) are not contiguous";
    EXPECT_EQ(w.copy_o, a.S > 1);
    // (offset, bytes) of every piece, in layout order: each starts 256-byte aligned, after the
    // previous one ends.
    const size_t kv_bytes = w.copy_kv ? 2 * size_t(a.B) * m.Hkv * kv * m.D : 0;
    const std::pair<size_t, size_t> pieces[] = {
        {0, w.gemm},              {w.att, w.att_bytes},    {w.pos, 4 * T},          {w.h, 2 * T * m.hidden},
        {w.qkv, 2 * T * width},   {w.q, 2 * T * hqd},      {w.k, kv_bytes},
        {w.v, kv_bytes},          {w.o, 2 * T * hqd},      {w.o_tok, w.copy_o ? 2 * T * hqd : 0},
        {w.r, 2 * T * m.hidden},  {w.h2, 2 * T * m.hidden}, {w.g, 2 * T * m.mlp},
        {w.u, 2 * T * m.mlp},     {w.act, 2 * T * m.mlp},  {w.dn, 2 * T * m.hidden}};
    size_t end = 0;
    for (const auto& [off, bytes] : pieces) {
      EXPECT_EQ(off % 256, 0u);
      EXPECT_GE(off, end);
      end = off + bytes;
    }
    EXPECT_GE(w.total, end);
    EXPECT_LT(w.total, end + 256);
  }
  // One KV head of one sequence: the rows [0, kv_len) are contiguous, read in place.
  LayerArgs one = llama(LayerMode::decode, 1, 1, 4096, 1000);
  one.dims.Hq = 8;
  one.dims.Hkv = 1;
  EXPECT_FALSE(layer_detail::workspace_layout(one, {}).copy_kv);
}

TEST(LayerCpu, FlopsAndBytes) {
  LayerArgs a = llama(LayerMode::prefill, 1, 4, 4);
  a.dims.hidden = 8;
  a.dims.Hq = 2;
  a.dims.Hkv = 1;
  a.dims.D = 64;
  a.dims.mlp = 16;
  // GEMMs: 2 T hidden ((Hq + 2 Hkv) D + Hq D + 3 mlp) = 2*4*8*(256 + 128 + 48); attention: 4 B Hq D
  // times the visible pairs 1 + 2 + 3 + 4.
  EXPECT_DOUBLE_EQ(layer_flops(a), 2.0 * 4 * 8 * (256 + 128 + 48) + 4.0 * 1 * 2 * 64 * 10);
  // Weights hidden ((Hq + 2 Hkv) D + Hq D + 3 mlp + 2), caches 2 B Hkv kv D, x and y, all bf16; positions.
  EXPECT_DOUBLE_EQ(layer_bytes(a), 2.0 * (8.0 * (256 + 128 + 48 + 2) + 2.0 * 1 * 1 * 4 * 64 + 2.0 * 4 * 8) + 4.0 * 4);
  // Decode against a cache: every earlier row is seen once.
  LayerArgs dcd = a;
  dcd.mode = LayerMode::decode;
  dcd.S = 1;
  dcd.L = 100;
  EXPECT_DOUBLE_EQ(layer_flops(dcd), 2.0 * 1 * 8 * (256 + 128 + 48) + 4.0 * 2 * 64 * 100);
}

TEST(LayerCpu, RefusesWithReasonBeforeAskingTheDevice) {
  const DeviceInfo d = fake_h200();
  struct Case {
    const char* what;
    LayerArgs a;
    const char* says;
  };
  auto with = [](LayerArgs a, auto edit) {
    edit(a);
    return a;
  };
  const LayerArgs p = llama(LayerMode::prefill, 2, 100, 200);
  const LayerArgs q = llama(LayerMode::decode, 4, 1, 200);
  const Case cases[] = {
      {"null x", with(p, [](LayerArgs& a) { a.x = nullptr; }), "null x"},
      {"null wup", with(p, [](LayerArgs& a) { a.w.wup = nullptr; }), "null weight"},
      {"null k_cache", with(p, [](LayerArgs& a) { a.k_cache = nullptr; }), "null k_cache"},
      {"v_cache misaligned", with(p, [](LayerArgs& a) { a.v_cache += 1; }), "16-byte aligned"},
      {"D = 96", with(p, [](LayerArgs& a) { a.dims.D = 96; }), "D must be 64 or 128"},
      {"Hkv 3", with(p, [](LayerArgs& a) { a.dims.Hkv = 3; }), "Hkv dividing Hq"},
      {"mlp 14340", with(p, [](LayerArgs& a) { a.dims.mlp = 14340; }), "multiples of 8"},
      {"eps nan", with(p, [](LayerArgs& a) { a.dims.eps = std::nanf(""); }), "eps"},
      {"theta -1", with(p, [](LayerArgs& a) { a.dims.theta = -1.f; }), "theta"},
      {"S = 0", with(p, [](LayerArgs& a) { a.S = 0; }), "B, S and L >= 1"},
      {"kv_len > L", with(p, [](LayerArgs& a) { a.kv_len = 201; }), "kv_len 201 outside"},
      {"kv_len < S", with(p, [](LayerArgs& a) { a.kv_len = 99; }), "kv_len 99 outside"},
      {"S > L", with(p, [](LayerArgs& a) { a.L = 50; }), "outside [S, L]"},
      {"decode S = 2", with(q, [](LayerArgs& a) { a.S = 2; }), "S = 1"},
      {"decode without positions", with(q, [](LayerArgs& a) { a.pos = nullptr; }), "positions"},
      {"workspace null", with(p, [](LayerArgs& a) { a.workspace = nullptr; }), "null workspace"},
      {"workspace misaligned", with(p, [](LayerArgs& a) { a.workspace = static_cast<char*>(a.workspace) + 128; }),
       "256-byte aligned"},
      {"y overlaps x", with(p, [](LayerArgs& a) { a.y = const_cast<__nv_bfloat16*>(a.x) + 1; }), "y overlaps x"},
      {"x in the cache", with(p, [](LayerArgs& a) { a.x = a.k_cache; }), "overlaps a cache"},
      {"caches overlap", with(p, [](LayerArgs& a) { a.v_cache = a.k_cache + 64; }), "overlap"},
      {"x in the workspace", with(p, [](LayerArgs& a) { a.x = static_cast<const __nv_bfloat16*>(a.workspace) + 1000; }),
       "overlaps a cache or the workspace"},
      {"too many tokens", with(p, [](LayerArgs& a) { a.B = 1 << 16; a.S = 1 << 16; a.L = 1 << 16; }),
       "2^31 - 1 tokens"},
  };
  for (const Case& c : cases) {
    const std::string why = layer_check_args(c.a, d);
    EXPECT_NE(why.find(c.says), std::string::npos) << c.what << ": " << why;
    // The rung refuses with the same reason (its first check), asking no family.
    EXPECT_EQ(layer_rungs()[0].supports(c.a, d), why) << c.what;
  }
}

}  // namespace
