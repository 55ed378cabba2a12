// kernels/common/device.cu — DeviceInfo queries (see device.h).
#include <map>
#include <mutex>
#include <tuple>

#include "kl/check.h"
#include "kl/device.h"

namespace kl {

namespace {
__global__ void probe_sm90a_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;  // only the sm_90a pass defines this macro
#else
  *out = 0;
#endif
}
}  // namespace

const DeviceInfo& device_info(int dev) {
  static std::mutex mu;
  static std::map<int, DeviceInfo> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(dev);
  if (it != cache.end()) return it->second;
  DeviceInfo d;
  d.id = dev;
  cudaDeviceProp p{};
  KL_CHECK(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.smem_optin = static_cast<long long>(p.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<long long>(p.sharedMemPerMultiprocessor);
  d.global_mem = static_cast<long long>(p.totalGlobalMem);
  KL_CHECK(cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, dev));
  KL_CHECK(cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, dev));
  KL_CHECK(cudaDeviceGetAttribute(&d.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
  KL_CHECK(cudaDriverGetVersion(&d.driver_version));
  KL_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return cache.emplace(dev, d).first->second;
}

const DeviceInfo& device_info() {
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  return device_info(dev);
}

std::string gpu_unavailable_reason() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device present";
  return "";
}

bool has_sm90a_code() {
  static int cached = -1;
  if (cached >= 0) return cached == 1;
  const DeviceInfo& d = device_info();
  if (!d.is_hopper()) return (cached = 0) == 1;
  int* p = nullptr;
  int v = 0;
  KL_CHECK(cudaMalloc(&p, sizeof(int)));
  probe_sm90a_kernel<<<1, 1>>>(p);
  KL_CHECK_LAUNCH();
  KL_CHECK(cudaMemcpy(&v, p, sizeof(int), cudaMemcpyDeviceToHost));
  KL_CHECK(cudaFree(p));
  cached = v;
  return v == 1;
}

int resident_blocks_per_sm(const void* kernel, int threads, size_t smem_bytes) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, size_t, int>, int> cache;
  const auto key = std::make_tuple(kernel, threads, smem_bytes, device_info().id);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int n = 0;
  KL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem_bytes));
  cache.emplace(key, n);
  return n;
}

int resident_clusters(const void* kernel, int cluster, int threads, size_t smem_bytes) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, int, size_t, int>, int> cache;
  const auto key = std::make_tuple(kernel, cluster, threads, smem_bytes, device_info().id);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cluster * (device_info().sms / cluster), 1, 1);
  cfg.blockDim = dim3(threads, 1, 1);
  cfg.dynamicSmemBytes = smem_bytes;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess || n < 1) {
    cudaGetLastError();  // clear; assume every SM can host one CTA
    n = device_info().sms / cluster;
  }
  cache.emplace(key, n);
  return n;
}

std::string require_sm90a(const DeviceInfo& d) {
  if (!d.is_hopper())
    return "needs sm_90a (Hopper wgmma/TMA); device is sm_" + std::to_string(d.cc());
  if (!has_sm90a_code()) return "binary built without sm_90a code (add 90a to CMAKE_CUDA_ARCHITECTURES)";
  return "";
}

}  // namespace kl
