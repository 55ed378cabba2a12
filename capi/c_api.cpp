// capi/c_api.cpp — include/kl/c_api.h: each function converts its arguments, calls the family's
// C++ entry point, and turns an exception into an error code and a per-thread message.
#include "kl/c_api.h"

#include <climits>
#include <exception>
#include <string>

#include "kl/attention.h"
#include "kl/gemm_bf16.h"
#include "kl/layer.h"
#include "kl/rmsnorm.h"
#include "kl/softmax.h"
#include "kl/swiglu.h"

namespace {

thread_local std::string g_last_error;

// Runs `f`; KL_OK, or the code and message of what it threw.
template <class F>
int guarded(F&& f) {
  g_last_error.clear();
  try {
    f();
    return KL_OK;
  } catch (const kl::BadArgument& e) {
    g_last_error = e.what();
    return KL_BAD_ARGUMENT;
  } catch (const kl::CudaError& e) {
    g_last_error = e.what();
    return KL_CUDA_ERROR;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return KL_INTERNAL;
  } catch (...) {
    g_last_error = "unknown exception";
    return KL_INTERNAL;
  }
}

// The entry points take int dimensions: a larger one is refused here, by name.
int dim(int64_t v, const char* name) {
  KL_REQUIRE(v >= 0 && v <= INT_MAX, name << " = " << v << " is outside [0, " << INT_MAX << "]");
  return static_cast<int>(v);
}

kl::DType dtype_of(int t) {
  KL_REQUIRE(t == KL_F32 || t == KL_BF16, "dtype " << t << " is neither KL_F32 (0) nor KL_BF16 (1)");
  return t == KL_F32 ? kl::DType::f32 : kl::DType::bf16;
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

extern "C" {

const char* kl_last_error(void) { return g_last_error.c_str(); }

const char* kl_version(void) { return KL_VERSION; }

int kl_rmsnorm(const void* x, const void* w, void* y, int64_t rows, int64_t cols, float eps,
               int dtype, void* stream) {
  return guarded([&] {
    kl::RmsnormArgs a;
    a.x = x, a.w = w, a.y = y, a.rows = dim(rows, "rows"), a.cols = dim(cols, "cols"), a.eps = eps;
    a.dtype = dtype_of(dtype);
    kl::rmsnorm(a, as_stream(stream));
  });
}

int kl_add_rmsnorm(void* r, const void* x, const void* w, void* y, int64_t rows, int64_t cols,
                   float eps, int dtype, void* stream) {
  return guarded([&] {
    kl::AddRmsnormArgs a;
    a.r = r, a.x = x, a.w = w, a.y = y, a.rows = dim(rows, "rows"), a.cols = dim(cols, "cols");
    a.eps = eps, a.dtype = dtype_of(dtype);
    kl::add_rmsnorm(a, as_stream(stream));
  });
}

int kl_swiglu(const void* g, const void* u, void* y, int64_t rows, int64_t cols, int dtype,
              void* stream) {
  return guarded([&] {
    kl::SwigluArgs a;
    a.g = g, a.u = u, a.y = y, a.rows = dim(rows, "rows"), a.cols = dim(cols, "cols");
    a.dtype = dtype_of(dtype);
    kl::swiglu(a, as_stream(stream));
  });
}

int kl_softmax(const void* x, void* y, int64_t rows, int64_t cols, int dtype, void* stream) {
  return guarded([&] {
    kl::SoftmaxArgs a;
    a.x = x, a.y = y, a.rows = dim(rows, "rows"), a.cols = dim(cols, "cols");
    a.dtype = dtype_of(dtype);
    kl::softmax(a, as_stream(stream));
  });
}

int kl_linear_bf16_workspace_bytes(int64_t M, int64_t N, int64_t K, size_t* bytes) {
  return guarded([&] {
    KL_REQUIRE(bytes != nullptr, "bytes is null");
    *bytes = kl::gemm_bf16_workspace_bytes(dim(M, "M"), dim(N, "N"), dim(K, "K"), kl::device_info());
  });
}

int kl_linear_bf16(const void* A, const void* W, void* C, int64_t M, int64_t N, int64_t K,
                   void* workspace, size_t workspace_bytes, void* stream) {
  return guarded([&] {
    kl::GemmBf16Args a;
    a.A = static_cast<const __nv_bfloat16*>(A), a.W = static_cast<const __nv_bfloat16*>(W);
    a.C = static_cast<__nv_bfloat16*>(C);
    a.M = dim(M, "M"), a.N = dim(N, "N"), a.K = dim(K, "K");
    a.workspace = workspace, a.workspace_bytes = workspace_bytes;
    kl::gemm_bf16(a, as_stream(stream));
  });
}

static kl::AttentionArgs attention_shape(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq,
                                         int64_t Skv, int64_t D, int causal) {
  KL_REQUIRE(causal == 0 || causal == 1, "causal = " << causal << " is neither 0 nor 1");
  kl::AttentionArgs a;
  a.B = dim(B, "B"), a.Hq = dim(Hq, "Hq"), a.Hkv = dim(Hkv, "Hkv"), a.Sq = dim(Sq, "Sq");
  a.Skv = dim(Skv, "Skv"), a.D = dim(D, "D"), a.causal = causal == 1;
  return a;
}

int kl_attention_workspace_bytes(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv,
                                 int64_t D, int causal, size_t* bytes) {
  return guarded([&] {
    KL_REQUIRE(bytes != nullptr, "bytes is null");
    *bytes = kl::attention_workspace_bytes(attention_shape(B, Hq, Hkv, Sq, Skv, D, causal),
                                           kl::device_info());
  });
}

int kl_attention(const void* Q, const void* K, const void* V, void* O, int64_t B, int64_t Hq,
                 int64_t Hkv, int64_t Sq, int64_t Skv, int64_t D, int causal, float scale,
                 void* workspace, size_t workspace_bytes, void* stream) {
  return guarded([&] {
    kl::AttentionArgs a = attention_shape(B, Hq, Hkv, Sq, Skv, D, causal);
    a.Q = static_cast<const __nv_bfloat16*>(Q), a.K = static_cast<const __nv_bfloat16*>(K);
    a.V = static_cast<const __nv_bfloat16*>(V), a.O = static_cast<__nv_bfloat16*>(O);
    a.scale = scale, a.workspace = workspace, a.workspace_bytes = workspace_bytes;
    kl::attention(a, as_stream(stream));
  });
}

// The layer's C++ arguments from the C struct: sizes checked by name, mode by value.
static kl::LayerArgs layer_args_of(const kl_layer_args* c) {
  KL_REQUIRE(c != nullptr, "args is null");
  KL_REQUIRE(c->mode == KL_LAYER_PREFILL || c->mode == KL_LAYER_DECODE,
             "mode = " << c->mode << " is neither KL_LAYER_PREFILL (0) nor KL_LAYER_DECODE (1)");
  kl::LayerArgs a;
  a.mode = c->mode == KL_LAYER_DECODE ? kl::LayerMode::decode : kl::LayerMode::prefill;
  a.x = static_cast<const __nv_bfloat16*>(c->x), a.y = static_cast<__nv_bfloat16*>(c->y);
  a.w.attn_norm = static_cast<const __nv_bfloat16*>(c->attn_norm);
  a.w.wqkv = static_cast<const __nv_bfloat16*>(c->wqkv);
  a.w.wo = static_cast<const __nv_bfloat16*>(c->wo);
  a.w.mlp_norm = static_cast<const __nv_bfloat16*>(c->mlp_norm);
  a.w.wgate = static_cast<const __nv_bfloat16*>(c->wgate);
  a.w.wup = static_cast<const __nv_bfloat16*>(c->wup);
  a.w.wdown = static_cast<const __nv_bfloat16*>(c->wdown);
  a.k_cache = static_cast<__nv_bfloat16*>(c->k_cache), a.v_cache = static_cast<__nv_bfloat16*>(c->v_cache);
  a.pos = reinterpret_cast<const int*>(c->pos);
  a.B = dim(c->B, "B"), a.S = dim(c->S, "S"), a.L = dim(c->L, "L"), a.kv_len = dim(c->kv_len, "kv_len");
  a.dims.hidden = dim(c->hidden, "hidden"), a.dims.Hq = dim(c->Hq, "Hq"), a.dims.Hkv = dim(c->Hkv, "Hkv");
  a.dims.D = dim(c->D, "D"), a.dims.mlp = dim(c->mlp, "mlp");
  a.dims.eps = c->eps, a.dims.theta = c->theta;
  a.workspace = c->workspace, a.workspace_bytes = c->workspace_bytes;
  return a;
}

int kl_layer_workspace_bytes(const kl_layer_args* args, size_t* bytes) {
  return guarded([&] {
    KL_REQUIRE(bytes != nullptr, "bytes is null");
    *bytes = kl::layer_workspace_bytes(layer_args_of(args), kl::device_info());
  });
}

int kl_layer(const kl_layer_args* args, void* stream) {
  return guarded([&] { kl::layer(layer_args_of(args), as_stream(stream)); });
}

}  // extern "C"
