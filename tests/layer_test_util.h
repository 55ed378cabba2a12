// tests/layer_test_util.h — one decoder-layer problem on the device for tests/test_gpu_layer.cu:
// random weights (bench/layer_inputs.h), x in [-1, 1), caches whose rows hold random earlier K/V,
// a zeroed workspace, and a second set of caches, output and workspace for the GPU reference
// (kernels/layer/reference.h); and a CPU double computation of the layer that rounds to bf16 where
// the layer stores bf16 (the check of the GPU reference itself, on small shapes).
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/harness.h"
#include "bench/layer_inputs.h"
#include "kernels/layer/reference.h"
#include "kl/check.h"
#include "kl/dtype.h"
#include "kl/layer.h"

namespace kl::layer_test {

using bf16 = __nv_bfloat16;

inline LayerDims small_dims() {
  LayerDims m;
  m.hidden = 256;
  m.Hq = 4;
  m.Hkv = 2;
  m.D = 64;
  m.mlp = 512;
  return m;
}
inline LayerDims medium_dims() {
  LayerDims m;
  m.hidden = 1024;
  m.Hq = 16;
  m.Hkv = 4;
  m.D = 128;
  m.mlp = 2816;
  return m;
}

// y and the written cache rows: the layer and its reference differ in fp32 summation order, the
// attention's bf16 P and the last bits of the angle, which can move an intermediate's rounding by
// one ulp (at most |v| / 128 for a bf16 v). Two such moves on the way to an element (the residual r,
// then y; qkv, then the rotated k) stay within 2^-5 + 2^-6 |ref| for |r| up to about 2 + 2 |y|;
// the relative-L2 gate of the GPU tests catches what is wrong by more than roundings.
inline bench::Tolerance layer_tolerance() { return bench::Tolerance{1.0 / 32, 1.0 / 64, 1e-2}; }

struct Shape {
  LayerDims m;
  LayerMode mode = LayerMode::prefill;
  int B = 1, S = 1, L = 1, kv_len = 0;
  std::string str() const {
    std::ostringstream s;
    s << (mode == LayerMode::decode ? "decode" : "prefill") << " B=" << B << " S=" << S << " L=" << L
      << " kv_len=" << kv_len << " hidden=" << m.hidden << " H=" << m.Hq << "/" << m.Hkv << " D=" << m.D
      << " mlp=" << m.mlp;
    return s.str();
  }
};

inline Shape prefill(const LayerDims& m, int B, int S, int L, int kv_len = 0) {
  return Shape{m, LayerMode::prefill, B, S, L, kv_len};
}
inline Shape decode(const LayerDims& m, int B, int L, int kv_len = 0) {
  return Shape{m, LayerMode::decode, B, 1, L, kv_len};
}

// Everything one layer launch and its reference need. `pos` empty: the default positions (prefill);
// decode without positions gets kv_len - 1 for every sequence.
struct Problem {
  Shape sh;
  long long T = 0;
  size_t n_x = 0, n_cache = 0;
  std::vector<int> pos;
  std::unique_ptr<bench::LayerWeightsOnDevice> W;
  bench::DeviceBuffer x, y, y_ref, kc, vc, kc_ref, vc_ref, dpos, ws, ws_ref;

  Problem(const Shape& s, uint64_t seed, std::vector<int> positions = {})
      : sh(s), T(static_cast<long long>(s.B) * s.S), n_x(static_cast<size_t>(T) * s.m.hidden),
        n_cache(static_cast<size_t>(s.B) * s.m.Hkv * s.L * s.m.D), pos(std::move(positions)) {
    W = std::make_unique<bench::LayerWeightsOnDevice>(s.m, seed, nullptr);
    x = bench::DeviceBuffer(2 * n_x);
    y = bench::DeviceBuffer(2 * n_x);
    y_ref = bench::DeviceBuffer(2 * n_x);
    kc = bench::DeviceBuffer(2 * n_cache);
    vc = bench::DeviceBuffer(2 * n_cache);
    kc_ref = bench::DeviceBuffer(2 * n_cache);
    vc_ref = bench::DeviceBuffer(2 * n_cache);
    bench::fill_uniform(x.ptr, n_x, DType::bf16, seed ^ 0x1234567ULL, -1.f, 1.f);
    bench::fill_uniform(kc.ptr, n_cache, DType::bf16, seed ^ 0x2345678ULL, -1.f, 1.f);
    bench::fill_uniform(vc.ptr, n_cache, DType::bf16, seed ^ 0x3456789ULL, -1.f, 1.f);
    if (pos.empty() && s.mode == LayerMode::decode) pos.assign(s.B, kv() - 1);
    if (!pos.empty()) {
      dpos = bench::DeviceBuffer(4 * pos.size());
      KL_CHECK(cudaMemcpy(dpos.ptr, pos.data(), 4 * pos.size(), cudaMemcpyHostToDevice));
    }
    const LayerArgs shape = args();
    ws = bench::DeviceBuffer(layer_workspace_bytes(shape, device_info()));
    ws_ref = bench::DeviceBuffer(layer_reference_workspace_bytes(shape));
    KL_CHECK(cudaMemset(ws.ptr, 0, ws.bytes));
    KL_CHECK(cudaDeviceSynchronize());
    reset_reference_caches();
  }
  int kv() const { return sh.kv_len > 0 ? sh.kv_len : sh.mode == LayerMode::decode ? sh.L : sh.S; }
  // The reference's caches start as copies of the layer's.
  void reset_reference_caches() {
    KL_CHECK(cudaMemcpy(kc_ref.ptr, kc.ptr, 2 * n_cache, cudaMemcpyDeviceToDevice));
    KL_CHECK(cudaMemcpy(vc_ref.ptr, vc.ptr, 2 * n_cache, cudaMemcpyDeviceToDevice));
  }
  LayerArgs args() const {
    LayerArgs a;
    a.mode = sh.mode;
    a.x = x.as<bf16>();
    a.y = y.as<bf16>();
    a.w = W->w;
    a.dims = sh.m;
    a.k_cache = kc.as<bf16>();
    a.v_cache = vc.as<bf16>();
    a.pos = pos.empty() ? nullptr : dpos.as<int>();
    a.B = sh.B;
    a.S = sh.S;
    a.L = sh.L;
    a.kv_len = sh.kv_len;
    a.workspace = ws.ptr;
    a.workspace_bytes = ws.bytes;
    return a;
  }
  LayerArgs ref_args() const {
    LayerArgs a = args();
    a.y = y_ref.as<bf16>();
    a.k_cache = kc_ref.as<bf16>();
    a.v_cache = vc_ref.as<bf16>();
    a.workspace = ws_ref.ptr;
    a.workspace_bytes = ws_ref.bytes;
    return a;
  }
  void run_reference(cudaStream_t s = nullptr) const { layer_reference(ref_args(), s); }
};

inline std::vector<float> download(const bench::DeviceBuffer& b, size_t n) {
  KL_CHECK(cudaDeviceSynchronize());
  return bench::download_as_float(b.ptr, n, DType::bf16);
}
inline std::vector<double> widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// ---------------------------------------------------------------- CPU double layer
struct HostWeights {
  std::vector<float> attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown;
};
inline HostWeights download_weights(const bench::LayerWeightsOnDevice& W) {
  KL_CHECK(cudaDeviceSynchronize());
  HostWeights h;
  std::vector<float>* dst[7] = {&h.attn_norm, &h.wqkv, &h.wo, &h.mlp_norm, &h.wgate, &h.wup, &h.wdown};
  for (int i = 0; i < 7; ++i) *dst[i] = bench::download_as_float(W.at(i), W.elems[i], DType::bf16);
  return h;
}

inline double rb(double v) { return round_to_bf16(static_cast<float>(v)); }

// out [M, N] = rb(A [M, K] W [N, K]^T) in double.
inline std::vector<double> cpu_linear(const std::vector<double>& A, const std::vector<float>& W, long long M,
                                      int N, int K) {
  std::vector<double> out(static_cast<size_t>(M) * N);
  for (long long i = 0; i < M; ++i)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += A[i * K + k] * W[static_cast<size_t>(n) * K + k];
      out[i * N + n] = rb(s);
    }
  return out;
}
inline std::vector<double> cpu_rmsnorm(const std::vector<double>& v, const std::vector<float>& w, long long rows,
                                       int cols, double eps) {
  std::vector<double> out(v.size());
  for (long long i = 0; i < rows; ++i) {
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += v[i * cols + c] * v[i * cols + c];
    const double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int c = 0; c < cols; ++c) out[i * cols + c] = rb(v[i * cols + c] * inv * w[c]);
  }
  return out;
}

// The layer of `a`'s shape on host values: x [T, hidden], caches [B, Hkv, L, D] (updated: the rows of
// the positions), positions `pos` (empty: the default ones). Returns y [T, hidden].
inline std::vector<double> cpu_layer(const LayerArgs& a, const HostWeights& w, const std::vector<float>& x,
                                     const std::vector<int>& pos, std::vector<float>& kc, std::vector<float>& vc) {
  const LayerDims& m = a.dims;
  const long long T = static_cast<long long>(a.B) * a.S;
  const int width = (m.Hq + 2 * m.Hkv) * m.D, half = m.D / 2, kv = layer_kv_len(a);
  const std::vector<double> xd(x.begin(), x.end());
  const std::vector<double> h = cpu_rmsnorm(xd, w.attn_norm, T, m.hidden, m.eps);
  const std::vector<double> qkv = cpu_linear(h, w.wqkv, T, width, m.hidden);
  std::vector<double> q(static_cast<size_t>(T) * m.Hq * m.D);
  for (long long t = 0; t < T; ++t) {
    const int p = pos.empty() ? kv - a.S + static_cast<int>(t % a.S) : pos[t];
    const long long b = t / a.S;
    for (int head = 0; head < m.Hq + 2 * m.Hkv; ++head) {
      const double* src = &qkv[t * width + static_cast<long long>(head) * m.D];
      const bool is_v = head >= m.Hq + m.Hkv;
      double out[128];
      for (int i = 0; i < half; ++i) {
        if (is_v) {
          out[i] = src[i];
          out[i + half] = src[i + half];
          continue;
        }
        const double ang = p * std::pow(static_cast<double>(m.theta), -2.0 * i / m.D);
        out[i] = rb(src[i] * std::cos(ang) - src[i + half] * std::sin(ang));
        out[i + half] = rb(src[i + half] * std::cos(ang) + src[i] * std::sin(ang));
      }
      if (head < m.Hq) {
        for (int d = 0; d < m.D; ++d) q[(t * m.Hq + head) * m.D + d] = out[d];
      } else if (p >= 0 && p < a.L) {
        const int kvh = is_v ? head - m.Hq - m.Hkv : head - m.Hq;
        std::vector<float>& cache = is_v ? vc : kc;
        for (int d = 0; d < m.D; ++d)
          cache[((b * m.Hkv + kvh) * a.L + p) * m.D + d] = static_cast<float>(out[d]);
      }
    }
  }
  std::vector<double> o(static_cast<size_t>(T) * m.Hq * m.D);
  const double scale = 1.0 / std::sqrt(static_cast<double>(m.D));
  for (long long t = 0; t < T; ++t) {
    const long long b = t / a.S;
    const int s = static_cast<int>(t % a.S), visible = s + kv - a.S + 1;
    for (int hq = 0; hq < m.Hq; ++hq) {
      const int kvh = hq / (m.Hq / m.Hkv);
      const float* K = &kc[(b * m.Hkv + kvh) * a.L * m.D];
      const float* V = &vc[(b * m.Hkv + kvh) * a.L * m.D];
      const double* qr = &q[(t * m.Hq + hq) * m.D];
      std::vector<double> sc(visible);
      double mx = -INFINITY;
      for (int j = 0; j < visible; ++j) {
        double d = 0;
        for (int e = 0; e < m.D; ++e) d += qr[e] * K[static_cast<size_t>(j) * m.D + e];
        sc[j] = d * scale;
        mx = std::max(mx, sc[j]);
      }
      double l = 0;
      std::vector<double> acc(m.D, 0.0);
      for (int j = 0; j < visible; ++j) {
        const double p = std::exp(sc[j] - mx);
        l += p;
        for (int e = 0; e < m.D; ++e) acc[e] += p * V[static_cast<size_t>(j) * m.D + e];
      }
      for (int e = 0; e < m.D; ++e) o[t * m.Hq * m.D + static_cast<long long>(hq) * m.D + e] = rb(acc[e] / l);
    }
  }
  const std::vector<double> proj = cpu_linear(o, w.wo, T, m.hidden, m.Hq * m.D);
  std::vector<double> r(proj.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = rb(xd[i] + proj[i]);
  const std::vector<double> h2 = cpu_rmsnorm(r, w.mlp_norm, T, m.hidden, m.eps);
  const std::vector<double> g = cpu_linear(h2, w.wgate, T, m.mlp, m.hidden);
  const std::vector<double> u = cpu_linear(h2, w.wup, T, m.mlp, m.hidden);
  std::vector<double> act(g.size());
  for (size_t i = 0; i < act.size(); ++i) act[i] = rb(g[i] / (1.0 + std::exp(-g[i])) * u[i]);
  const std::vector<double> dn = cpu_linear(act, w.wdown, T, m.hidden, m.mlp);
  std::vector<double> y(r.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = rb(r[i] + dn[i]);
  return y;
}

}  // namespace kl::layer_test
