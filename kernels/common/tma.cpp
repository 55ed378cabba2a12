// kernels/common/tma.cpp — see tma.h. The driver entry point is resolved once, thread-safely.
#include "common/tma.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000 (types only; libcuda not linked)

#include <mutex>
#include <sstream>

#include "kl/check.h"

namespace kl {
namespace {

struct EncodeFn {
  PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  const char* why = "";
};

const EncodeFn& encode_fn() {
  static EncodeFn f;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                     cudaEnableDefault, &q);
    if (e != cudaSuccess) {
      f.why = "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled) failed (no usable driver?)";
      cudaGetLastError();  // do not leave the error sticky for the next KL_CHECK_LAUNCH
    } else if (q != cudaDriverEntryPointSuccess || !p) {
      f.why = "the CUDA driver has no cuTensorMapEncodeTiled (needs a 12.0+ driver)";
    } else {
      f.fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
  });
  return f;
}

}  // namespace

bool tma_available(const char** why) {
  const EncodeFn& f = encode_fn();
  if (why) *why = f.why;
  return f.fn != nullptr;
}

CUtensorMap make_tensor_map(const void* base, CUtensorMapDataType dtype, int rank,
                            const uint64_t* dims,
                            const uint64_t* strides_bytes, const uint32_t* box,
                            CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2) {
  const EncodeFn& f = encode_fn();
  if (!f.fn) throw CudaError(std::string("TMA unavailable: ") + f.why);
  KL_REQUIRE(rank >= 1 && rank <= 5, "tensor map rank " << rank << " not in 1..5");
  cuuint64_t gdim[5], gstride[4];
  cuuint32_t bdim[5], estride[5];
  for (int i = 0; i < rank; ++i) {
    gdim[i] = dims[i];
    bdim[i] = box[i];
    estride[i] = 1;
    KL_REQUIRE(box[i] >= 1 && box[i] <= 256, "tensor map box[" << i << "] = " << box[i]
                                                                 << " not in 1..256");
  }
  for (int i = 0; i + 1 < rank; ++i) {
    gstride[i] = strides_bytes[i];
    KL_REQUIRE(strides_bytes[i] % 16 == 0,
               "tensor map stride[" << i << "] = " << strides_bytes[i] << " bytes, not a multiple of 16");
  }
  CUtensorMap m;
  // Zero fill out of bounds (OOB_FILL_NONE): ragged tiles contribute 0 to the products.
  KL_REQUIRE(reinterpret_cast<uintptr_t>(base) % 16 == 0, "tensor map base not 16-byte aligned");
  CUresult r = f.fn(&m, dtype, static_cast<cuuint32_t>(rank), const_cast<void*>(base), gdim,
                    gstride, bdim, estride, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  KL_REQUIRE(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed (CUresult " << int(r) << "), rank "
                                    << rank << ", dims[0] " << dims[0] << ", box[0] " << box[0]);
  return m;
}

CUtensorMap make_tensor_map_bf16_2d(const void* base, uint64_t rows, uint64_t cols, uint64_t ld,
                                    uint32_t box_rows, uint32_t box_cols,
                                    CUtensorMapSwizzle swizzle) {
  const uint64_t dims[2] = {cols, rows};
  const uint64_t strides[1] = {ld * 2};
  const uint32_t box[2] = {box_cols, box_rows};
  return make_tensor_map(base, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, dims, strides, box, swizzle);
}

}  // namespace kl
