/* include/kl/c_api.h — the entry points as plain C functions (libkernel_ladder_c), for bindings.
 *
 * The Python package (python/kernel_ladder) loads this library with ctypes; any other language with
 * a C FFI can do the same. Each function forwards to the C++ entry point of its family (kl::rmsnorm,
 * kl::gemm_bf16, ...; docs/api.md), so it picks the same rung, takes the same layouts and refuses
 * the same inputs. Pointers are device pointers; `stream` is a cudaStream_t (NULL: the legacy
 * default stream). Nothing synchronizes or allocates: every call can be captured in a CUDA graph.
 *
 * Returns KL_OK, or an error code with the message in kl_last_error() (per thread, valid until
 * this thread's next call): KL_BAD_ARGUMENT for input the library refuses (nothing was launched),
 * KL_CUDA_ERROR for a failed CUDA call or launch, KL_INTERNAL for anything else. */
#ifndef KL_C_API_H
#define KL_C_API_H

#include <stddef.h>
#include <stdint.h>

#if defined(KL_C_API_BUILD)
#define KL_C_EXPORT __attribute__((visibility("default")))
#else
#define KL_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { KL_OK = 0, KL_BAD_ARGUMENT = 1, KL_CUDA_ERROR = 2, KL_INTERNAL = 3 };
/* Storage types of the row ops (kl::DType). */
enum { KL_F32 = 0, KL_BF16 = 1 };

KL_C_EXPORT const char* kl_last_error(void);
/* The version of the library (the CMake project version, e.g. "0.1.0"). */
KL_C_EXPORT const char* kl_version(void);

/* y = x / sqrt(mean(x^2) + eps) * w, row-major [rows, cols], w [cols] (include/kl/rmsnorm.h). */
KL_C_EXPORT int kl_rmsnorm(const void* x, const void* w, void* y, int64_t rows, int64_t cols,
                           float eps, int dtype, void* stream);
/* r += x; y = rmsnorm(r) * w. r is read and written in place. */
KL_C_EXPORT int kl_add_rmsnorm(void* r, const void* x, const void* w, void* y, int64_t rows,
                               int64_t cols, float eps, int dtype, void* stream);
/* y = silu(g) * u, elementwise over [rows, cols] (include/kl/swiglu.h). */
KL_C_EXPORT int kl_swiglu(const void* g, const void* u, void* y, int64_t rows, int64_t cols,
                          int dtype, void* stream);
/* Row softmax of [rows, cols] (include/kl/softmax.h). */
KL_C_EXPORT int kl_softmax(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                           void* stream);
/* bf16 C[M,N] = A[M,K] W[N,K]^T, fp32 accumulation (include/kl/gemm_bf16.h). The workspace is
 * caller-owned and reused; its size comes from kl_linear_bf16_workspace_bytes. */
KL_C_EXPORT int kl_linear_bf16_workspace_bytes(int64_t M, int64_t N, int64_t K, size_t* bytes);
KL_C_EXPORT int kl_linear_bf16(const void* A, const void* W, void* C, int64_t M, int64_t N,
                               int64_t K, void* workspace, size_t workspace_bytes, void* stream);
/* bf16 attention, [B, H, S, D] contiguous, GQA when Hkv < Hq; scale 0 means 1/sqrt(D)
 * (include/kl/attention.h). The workspace is caller-owned, zeroed once before its first use, and
 * reused; its size comes from kl_attention_workspace_bytes. */
KL_C_EXPORT int kl_attention_workspace_bytes(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq,
                                             int64_t Skv, int64_t D, int causal, size_t* bytes);
KL_C_EXPORT int kl_attention(const void* Q, const void* K, const void* V, void* O, int64_t B,
                             int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv, int64_t D,
                             int causal, float scale, void* workspace, size_t workspace_bytes,
                             void* stream);

/* One Llama decoder layer (include/kl/layer.h): y = r + Wdown swiglu(Wgate h2, Wup h2) with
 * r = x + Wo attention(rope(Wqkv rmsnorm(x))), h2 = rmsnorm(r); bf16 tensors, fp32 math. Every
 * pointer is a device pointer to a contiguous bf16 tensor, except pos (int32); T = B * S tokens:
 *   x, y [T, hidden] (y may be x itself, else must not overlap it); attn_norm, mlp_norm [hidden];
 *   wqkv [(Hq + 2 Hkv) D, hidden] (q heads, k heads, v heads); wo [hidden, Hq D];
 *   wgate, wup [mlp, hidden]; wdown [hidden, mlp] (the nn.Linear layout, out x in);
 *   k_cache, v_cache [B, Hkv, L, D], read and written: each token's rotated k and its v go to row
 *   pos[t] of its sequence, the attention reads rows [0, kv_len);
 *   pos [T] the tokens' positions: required for decode; prefill may pass NULL (token s of each
 *   sequence at kv_len - S + s, the positions the attention's row-order mask assumes).
 * mode KL_LAYER_PREFILL (B sequences of S tokens, causal) or KL_LAYER_DECODE (S = 1, every cache row
 * [0, kv_len) visible); kv_len 0 means S for prefill, L for decode. eps (both RMSNorms) and theta
 * (the RoPE base) are read as given: Llama-3 uses 1e-5 and 500000. The workspace is caller-owned,
 * sized by kl_layer_workspace_bytes (which reads only mode, B, S, L, kv_len and the dims), zeroed
 * once before its first use and then reused for any shape; two launches in flight must not share
 * it. */
enum { KL_LAYER_PREFILL = 0, KL_LAYER_DECODE = 1 };
typedef struct kl_layer_args {
  int mode;                                           /* KL_LAYER_PREFILL or KL_LAYER_DECODE */
  const void* x;                                      /* [T, hidden] */
  void* y;                                            /* [T, hidden] */
  const void* attn_norm;                              /* [hidden] */
  const void* wqkv;                                   /* [(Hq + 2 Hkv) D, hidden] */
  const void* wo;                                     /* [hidden, Hq D] */
  const void* mlp_norm;                               /* [hidden] */
  const void* wgate;                                  /* [mlp, hidden] */
  const void* wup;                                    /* [mlp, hidden] */
  const void* wdown;                                  /* [hidden, mlp] */
  void* k_cache;                                      /* [B, Hkv, L, D] */
  void* v_cache;                                      /* [B, Hkv, L, D] */
  const int32_t* pos;                                 /* [T], or NULL (prefill only) */
  int64_t B, S, L, kv_len;                            /* sequences, tokens each, cache rows, rows read */
  int64_t hidden, Hq, Hkv, D, mlp;                    /* Llama-3-8B: 4096, 32, 8, 128, 14336 */
  float eps, theta;
  void* workspace;
  size_t workspace_bytes;
} kl_layer_args;
KL_C_EXPORT int kl_layer_workspace_bytes(const kl_layer_args* args, size_t* bytes);
KL_C_EXPORT int kl_layer(const kl_layer_args* args, void* stream);

#ifdef __cplusplus
}
#endif
#endif
