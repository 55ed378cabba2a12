// include/kl/device.h — what a launcher needs to know about the card, queried once per device.
//
// Launchers never hard-code the SM count, L2 size or shared-memory limit: they read DeviceInfo.
// `supports()` checks receive it too, so "needs sm_90a" is a run-time answer, not a crash.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace kl {

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  long long l2_bytes = 0;
  long long smem_optin = 0;       // max dynamic shared memory per block after opt-in
  long long smem_per_sm = 0;
  int clock_khz = 0;              // cudaDevAttrClockRate: the boost clock the driver reports
  int mem_clock_khz = 0;
  int mem_bus_bits = 0;
  long long global_mem = 0;
  int driver_version = 0;         // cudaDriverGetVersion
  int runtime_version = 0;        // cudaRuntimeGetVersion
  int cc() const { return cc_major * 10 + cc_minor; }
  // True on sm_90 parts (H100/H200). Hopper-only rungs (wgmma, setmaxnreg) are compiled for sm_90a
  // and the binary carries them only when built for 90a; see kl::has_sm90a_code().
  bool is_hopper() const { return cc_major == 9 && cc_minor == 0; }
};

// Queries (once, then cached) the current device. Throws kl::CudaError if no device is usable.
const DeviceInfo& device_info();
const DeviceInfo& device_info(int device);

// Why no GPU is usable ("" if one is). With no driver cudaGetDeviceCount returns an error, not 0.
std::string gpu_unavailable_reason();

// True when this binary was built with sm_90a machine code (CMAKE_CUDA_ARCHITECTURES has 90a).
bool has_sm90a_code();

// The common supports() answer for Hopper-only rungs: "" when it can run, else the reason.
std::string require_sm90a(const DeviceInfo& d);

// Resident blocks per SM of `kernel` launched with `threads` threads and `smem_bytes` of dynamic
// shared memory on the current device (cudaOccupancyMaxActiveBlocksPerMultiprocessor), queried once
// per (kernel, threads, smem, device) and cached: a launcher that sizes a persistent grid with it
// makes no runtime query per launch (cheap, graph-capturable). Above 48 KB the caller must already
// have opted the kernel into `smem_bytes` (cudaFuncSetAttribute). 0 when no block fits.
int resident_blocks_per_sm(const void* kernel, int threads, size_t smem_bytes);

// Thread-block clusters of `cluster` CTAs that run at once (cudaOccupancyMaxActiveClusters) for
// `kernel` with `threads` threads and `smem_bytes` of dynamic shared memory on the current device,
// cached like resident_blocks_per_sm. GPCs whose SM count is not a multiple of the cluster size
// leave SMs idle, so this can be below #SMs / cluster. If the query fails (or says 0) the answer
// is #SMs / cluster. The caller must already have opted the kernel into `smem_bytes`.
int resident_clusters(const void* kernel, int cluster, int threads, size_t smem_bytes);

}  // namespace kl
