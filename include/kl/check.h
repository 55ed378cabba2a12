// include/kl/check.h — error checking shared by every launcher, bench and test.
//
// KL_CHECK(call) turns a failed CUDA runtime call into a kl::CudaError (a std::runtime_error that
// names the call, file and line). KL_CHECK_LAUNCH() does the same for the last launch.
// KL_REQUIRE(cond, msg) is for argument checks: it throws kl::BadArgument before anything launches.
#pragma once
#include <cuda_runtime.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace kl {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct BadArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    std::ostringstream s;
    s << file << ":" << line << ": " << what << " failed: " << cudaGetErrorName(e) << " ("
      << cudaGetErrorString(e) << ")";
    throw CudaError(s.str());
  }
}

}  // namespace kl

#define KL_CHECK(call) ::kl::cuda_check((call), #call, __FILE__, __LINE__)
// After a <<<>>> launch: catches bad configurations (too much shared memory, bad grid) at once.
#define KL_CHECK_LAUNCH() ::kl::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
#define KL_REQUIRE(cond, msg)                                      \
  do {                                                             \
    if (!(cond)) {                                                 \
      std::ostringstream kl_s_;                                    \
      kl_s_ << msg;                                                \
      throw ::kl::BadArgument(kl_s_.str());                        \
    }                                                              \
  } while (0)
