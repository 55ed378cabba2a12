// bench/harness_gpu.cu — the parts of the harness that touch the GPU: buffers, random fill,
// poison, rotation, clock ramp, event timing, CUDA-graph back-to-back timing, NVML clock sampling.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bench/gpu_sleep.cuh"
#include "bench/harness.h"
#include "common/parallel.h"
#include <cuda_bf16.h>

namespace kl::bench {

// ---------------------------------------------------------------- buffers
DeviceBuffer::DeviceBuffer(size_t n) : bytes(n) {
  if (n) KL_CHECK(cudaMalloc(&ptr, n));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr) cudaFree(ptr);  // no throw from a destructor
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) {
  o.ptr = nullptr;
  o.bytes = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr) cudaFree(ptr);
    ptr = o.ptr;
    bytes = o.bytes;
    o.ptr = nullptr;
    o.bytes = 0;
  }
  return *this;
}

Stream::Stream() { KL_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (s) cudaStreamDestroy(s);
}

// Device memory kept free beside a shape's buffers: the CUDA context's growth, cuBLAS's handle and
// workspace, the harness's small buffers (graph, events, gathers).
constexpr size_t kDeviceReserve = size_t(512) << 20;

int rotation_copies(size_t bytes_per_set, const DeviceInfo& d, bool no_rotate, size_t other_bytes) {
  if (no_rotate || bytes_per_set == 0) return 1;
  const double target = 3.0 * static_cast<double>(d.l2_bytes);
  const double want = std::floor(target / static_cast<double>(bytes_per_set)) + 1;
  size_t free_b = 0, total_b = 0;
  KL_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const size_t used = other_bytes + kDeviceReserve;
  const size_t room = std::min(free_b / 4, free_b > used ? free_b - used : 0);
  const double fit = static_cast<double>(room / bytes_per_set);
  return static_cast<int>(std::max(1.0, std::min({want, fit, static_cast<double>(kMaxRotationCopies)})));
}

void require_device_memory(const std::string& what, double need_bytes) {
  size_t free_b = 0, total_b = 0;
  KL_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const double avail = free_b > kDeviceReserve ? static_cast<double>(free_b - kDeviceReserve) : 0.0;
  if (need_bytes > avail) {
    char b[256];
    std::snprintf(b, sizeof b,
                  ": needs %.0f bytes (%.2f GiB) of device memory with one input copy; %.0f bytes "
                  "(%.2f GiB) free (less a %zu MiB reserve)",
                  need_bytes, need_bytes / double(1ull << 30), avail, avail / double(1ull << 30),
                  kDeviceReserve >> 20);
    throw BadArgument(what + b);
  }
}

// ---------------------------------------------------------------- fill / poison
namespace {
__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
template <class T>
__global__ void fill_kernel(T* p, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t h = splitmix64(seed ^ (i * 0xd1b54a32d192ed03ULL));
    float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // 24 random bits in [0,1)
    float v = lo + (hi - lo) * u;
    if constexpr (sizeof(T) == 4) {
      p[i] = v;
    } else {
      p[i] = __float2bfloat16_rn(v);
    }
  }
}
// Row k of the output is row idx[k] of src; U is the copy unit (16 bytes when everything is aligned).
template <class U>
__global__ void gather_kernel(const U* __restrict__ src, size_t units_per_row, const long long* __restrict__ idx,
                              size_t n_rows, U* __restrict__ dst) {
  const size_t total = n_rows * units_per_row;
  for (size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = t / units_per_row, u = t - r * units_per_row;
    dst[t] = src[static_cast<size_t>(idx[r]) * units_per_row + u];
  }
}
// ~300 ms of dependent FMAs on every SM so the clocks are up before the first timed launch.
__global__ void ramp_kernel(float* sink, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f;
  for (int i = 0; i < iters; ++i) a = fmaf(a, b, 1e-7f);
  if (a == 12345.678f) *sink = a;  // practically never: keeps the loop alive
}
// Holds the stream for `ns` nanoseconds of wall time (%globaltimer, so the hold does not depend on
// the SM clock) while the host queues a chunk of timed launches behind it.
__global__ void hold_kernel(unsigned long long ns) { sleep_ns(ns); }
constexpr int kChunk = 25;  // timed launches queued behind one hold
// Holds stream s for 1.5x `host_ms` (the host's time to enqueue what follows) plus 0.2 ms, at most
// 200 ms.
void hold_stream(cudaStream_t s, double host_ms) {
  const double hold_ms = std::min(200.0, 1.5 * host_ms + 0.2);
  hold_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(hold_ms * 1e6));
  KL_CHECK_LAUNCH();
}
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

void fill_uniform(void* dev, size_t n, DType t, uint64_t seed, float lo, float hi, cudaStream_t s) {
  if (n == 0) return;
  const DeviceInfo& d = device_info();
  int blocks = d.sms * 8;
  if (t == DType::f32)
    fill_kernel<float><<<blocks, 256, 0, s>>>(static_cast<float*>(dev), n, seed, lo, hi);
  else
    fill_kernel<__nv_bfloat16><<<blocks, 256, 0, s>>>(static_cast<__nv_bfloat16*>(dev), n, seed, lo, hi);
  KL_CHECK_LAUNCH();
}

void poison(void* dev, size_t bytes, cudaStream_t s) { KL_CHECK(cudaMemsetAsync(dev, 0xFF, bytes, s)); }

std::vector<float> download_as_float(const void* dev, size_t n, DType t) {
  std::vector<float> out(n);
  if (n == 0) return out;
  KL_CHECK(cudaDeviceSynchronize());
  if (t == DType::f32) {
    KL_CHECK(cudaMemcpy(out.data(), dev, n * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<uint16_t> h(n);
    KL_CHECK(cudaMemcpy(h.data(), dev, n * 2, cudaMemcpyDeviceToHost));
    parallel_for(static_cast<long long>(n), [&](long long b, long long e) {
      for (long long i = b; i < e; ++i) out[i] = bf16_bits_to_float(h[i]);
    });
  }
  return out;
}

void replicate(void* dst, size_t bytes, int copies) {
  char* base = static_cast<char*>(dst);
  // Slots [0, have) are filled; copy min(have, copies - have) of them after them.
  for (size_t have = 1; have < static_cast<size_t>(copies);) {
    const size_t n = std::min(have, static_cast<size_t>(copies) - have);
    KL_CHECK(cudaMemcpy(base + have * bytes, base, n * bytes, cudaMemcpyDeviceToDevice));
    have += n;
  }
  KL_CHECK(cudaDeviceSynchronize());
}

std::vector<float> gather_rows_as_float(const void* src, size_t row_elems, const std::vector<long long>& idx,
                                        DType t) {
  const size_t es = dtype_size(t), row_bytes = row_elems * es, n = idx.size() * row_elems;
  if (n == 0) return {};
  DeviceBuffer d_idx(idx.size() * sizeof(long long)), d_out(n * es);
  KL_CHECK(cudaMemcpy(d_idx.ptr, idx.data(), d_idx.bytes, cudaMemcpyHostToDevice));
  const int blocks = device_info().sms * 4;
  const bool v16 = row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0;
  if (v16)
    gather_kernel<uint4><<<blocks, 256>>>(static_cast<const uint4*>(src), row_bytes / 16,
                                          d_idx.as<long long>(), idx.size(), d_out.as<uint4>());
  else
    gather_kernel<unsigned char><<<blocks, 256>>>(static_cast<const unsigned char*>(src), row_bytes,
                                                  d_idx.as<long long>(), idx.size(), d_out.as<unsigned char>());
  KL_CHECK_LAUNCH();
  return download_as_float(d_out.ptr, n, t);  // synchronizes the device first
}

// ---------------------------------------------------------------- NVML clock sampling
// NVML is loaded at run time so that a machine without a driver still builds and runs the CPU
// tests; only the three entry points below are used.
namespace {
struct Nvml {
  void* lib = nullptr;
  void* dev = nullptr;
  int (*get_clock)(void*, int, unsigned*) = nullptr;
  bool ok = false;
  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(
        dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    get_clock = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    if (!init || !by_bus || !get_clock || init() != 0) return;
    char bus[64] = {0};
    int cur = 0;
    if (cudaGetDevice(&cur) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, cur) != cudaSuccess)
      return;
    ok = by_bus(bus, &dev) == 0;
  }
  double sm_mhz() {
    unsigned mhz = 0;
    // NVML_CLOCK_SM = 1
    if (!ok || get_clock(dev, 1, &mhz) != 0) return std::nan("");
    return mhz;
  }
};
Nvml& nvml() {
  static Nvml n;
  return n;
}

// Samples the SM clock every 2 ms on a side thread between start() and stop().
struct ClockSampler {
  std::atomic<bool> run{false};
  std::thread th;
  double sum = 0;
  int n = 0;
  void start() {
    if (!nvml().ok) return;
    run = true;
    th = std::thread([this] {
      while (run) {
        double m = nvml().sm_mhz();
        if (std::isfinite(m)) {
          sum += m;
          ++n;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  double stop() {
    if (th.joinable()) {
      run = false;
      th.join();
    }
    return n ? sum / n : std::nan("");
  }
};
}  // namespace

double sm_clock_mhz_now() { return nvml().sm_mhz(); }

// ---------------------------------------------------------------- timing
void ramp_clocks() {
  static bool done = false;
  if (done) return;
  done = true;
  // Under compute-sanitizer (scripts/sanitize.sh) the ramp only costs time: KL_NO_RAMP=1 skips it.
  const char* no_ramp = std::getenv("KL_NO_RAMP");
  if (no_ramp && std::string(no_ramp) == "1") return;
  const DeviceInfo& d = device_info();
  float* sink = nullptr;
  KL_CHECK(cudaMalloc(&sink, sizeof(float)));
  cudaEvent_t a, b;
  KL_CHECK(cudaEventCreate(&a));
  KL_CHECK(cudaEventCreate(&b));
  float total = 0;
  while (total < 300.f) {  // ~300 ms of work, measured, not assumed
    KL_CHECK(cudaEventRecord(a));
    ramp_kernel<<<d.sms * 4, 256>>>(sink, 1 << 16);
    KL_CHECK_LAUNCH();
    KL_CHECK(cudaEventRecord(b));
    KL_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    KL_CHECK(cudaEventElapsedTime(&ms, a, b));
    total += std::max(ms, 0.01f);
  }
  KL_CHECK(cudaEventDestroy(a));
  KL_CHECK(cudaEventDestroy(b));
  KL_CHECK(cudaFree(sink));
}

Timing time_launches(const std::function<void(int)>& launch, const Options& o, cudaStream_t s,
                     bool force_graph, const GraphCheck* gc) {
  ramp_clocks();
  Timing t;
  int idx = 0;
  const int n = o.iters;
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(std::max(n, 1)));
  for (auto& e : ev) KL_CHECK(cudaEventCreate(&e));
  // Warm-up, each launch between the same two events as a timed one: its host cost (events and
  // launch enqueued) sizes the hold below. Without warm-up a generous 50 us per launch is assumed.
  std::vector<double> host_ms;
  for (int w = 0; w < o.warmup; ++w) {
    const auto h0 = std::chrono::steady_clock::now();
    KL_CHECK(cudaEventRecord(ev[0], s));
    launch(idx++);
    KL_CHECK(cudaEventRecord(ev[1], s));
    host_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count());
  }
  KL_CHECK_LAUNCH();
  KL_CHECK(cudaStreamSynchronize(s));
  const double per_launch_ms = host_ms.empty() ? 0.05 : median_of(host_ms);

  // Timed launches in chunks of kChunk, each chunk queued behind a hold kernel that keeps the stream
  // busy while the host enqueues it (1.5x the measured host time, plus 0.2 ms): the GPU then runs
  // the chunk back to back and each event pair brackets device time, not the host's launch latency
  // (torch_baseline.py times PyTorch the same way).
  ClockSampler clk;
  clk.start();
  for (int i = 0; i < n;) {
    const int m = std::min(kChunk, n - i);
    hold_stream(s, m * per_launch_ms);
    for (int j = 0; j < m; ++j, ++i) {
      KL_CHECK(cudaEventRecord(ev[2 * i], s));
      launch(idx++);
      KL_CHECK(cudaEventRecord(ev[2 * i + 1], s));
    }
    KL_CHECK(cudaStreamSynchronize(s));
    KL_CHECK_LAUNCH();
  }
  t.clock_mhz = clk.stop();
  std::vector<double> ms(n);
  for (int i = 0; i < n; ++i) {
    float x = 0;
    KL_CHECK(cudaEventElapsedTime(&x, ev[2 * i], ev[2 * i + 1]));
    ms[i] = x;
  }
  for (auto& e : ev) KL_CHECK(cudaEventDestroy(e));
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  t.iters = n;
  t.min_ms = sorted.front();
  t.max_ms = sorted.back();
  t.median_ms = (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);

  if (o.graph || force_graph) {
    KL_REQUIRE(s != nullptr, "graph timing needs a created stream (kl::bench::Stream)");
    cudaGraph_t g;
    cudaGraphExec_t ge;
    // The graph only has to amortize launch gaps: enough launches for ~20 ms of GPU work (all
    // o.iters of them for a microsecond-scale kernel, as few as 5 for a millisecond-scale one) keeps
    // six replays of a slow row from costing seconds.
    const int ng = std::min(n, std::max(5, static_cast<int>(20.0 / std::max(t.median_ms, 1e-3))));
    KL_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    for (int i = 0; i < ng; ++i) launch(idx++);
    KL_CHECK(cudaStreamEndCapture(s, &g));
    KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
    KL_CHECK(cudaGraphLaunch(ge, s));  // warm replay
    KL_CHECK(cudaStreamSynchronize(s));
    cudaEvent_t a, b;
    KL_CHECK(cudaEventCreate(&a));
    KL_CHECK(cudaEventCreate(&b));
    std::vector<double> reps;
    for (int r = 0; r < 5; ++r) {
      KL_CHECK(cudaEventRecord(a, s));
      KL_CHECK(cudaGraphLaunch(ge, s));
      KL_CHECK(cudaEventRecord(b, s));
      KL_CHECK(cudaEventSynchronize(b));
      float x = 0;
      KL_CHECK(cudaEventElapsedTime(&x, a, b));
      reps.push_back(x / ng);
    }
    std::sort(reps.begin(), reps.end());
    t.graph_ms = reps[reps.size() / 2];
    if (gc && gc->check) {  // the graph's output: prepared (poisoned), one more replay, compared
      if (gc->prepare) gc->prepare();
      KL_CHECK(cudaGraphLaunch(ge, s));
      KL_CHECK(cudaStreamSynchronize(s));
      t.graph_err = gc->check();
      t.graph_checked = true;
    }
    KL_CHECK(cudaEventDestroy(a));
    KL_CHECK(cudaEventDestroy(b));
    KL_CHECK(cudaGraphExecDestroy(ge));
    KL_CHECK(cudaGraphDestroy(g));
  }
  return t;
}

std::vector<Timing> time_steps(const std::vector<std::function<void()>>& steps, const Options& o, cudaStream_t s) {
  ramp_clocks();
  const size_t k = steps.size();
  if (k == 0) return {};
  const int n = std::max(o.iters, 1);
  const int chunk = std::min(kChunk, n);
  std::vector<cudaEvent_t> ev(static_cast<size_t>(chunk) * (k + 1));
  for (auto& e : ev) KL_CHECK(cudaEventCreate(&e));
  auto sequence = [&](cudaEvent_t* e) {
    KL_CHECK(cudaEventRecord(e[0], s));
    for (size_t j = 0; j < k; ++j) {
      steps[j]();
      KL_CHECK(cudaEventRecord(e[j + 1], s));
    }
  };
  std::vector<double> host_ms;
  for (int w = 0; w < std::max(o.warmup, 1); ++w) {
    const auto h0 = std::chrono::steady_clock::now();
    sequence(ev.data());
    host_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count());
  }
  KL_CHECK_LAUNCH();
  KL_CHECK(cudaStreamSynchronize(s));
  const double per_sequence_ms = median_of(host_ms);
  std::vector<std::vector<double>> ms(k);
  ClockSampler clk;
  clk.start();
  for (int i = 0; i < n;) {
    const int m = std::min(chunk, n - i);
    hold_stream(s, m * per_sequence_ms);
    for (int c = 0; c < m; ++c) sequence(&ev[static_cast<size_t>(c) * (k + 1)]);
    KL_CHECK(cudaStreamSynchronize(s));
    KL_CHECK_LAUNCH();
    for (int c = 0; c < m; ++c)
      for (size_t j = 0; j < k; ++j) {
        float x = 0;
        KL_CHECK(cudaEventElapsedTime(&x, ev[c * (k + 1) + j], ev[c * (k + 1) + j + 1]));
        ms[j].push_back(x);
      }
    i += m;
  }
  const double mhz = clk.stop();
  for (auto& e : ev) KL_CHECK(cudaEventDestroy(e));
  std::vector<Timing> t(k);
  for (size_t j = 0; j < k; ++j) {
    t[j].iters = n;
    t[j].median_ms = median_of(ms[j]);
    t[j].min_ms = *std::min_element(ms[j].begin(), ms[j].end());
    t[j].max_ms = *std::max_element(ms[j].begin(), ms[j].end());
    t[j].clock_mhz = mhz;
  }
  return t;
}

double single_launch_ms(const std::function<void()>& f, cudaStream_t s) {
  cudaEvent_t a, b;
  KL_CHECK(cudaEventCreate(&a));
  KL_CHECK(cudaEventCreate(&b));
  KL_CHECK(cudaEventRecord(a, s));
  f();
  KL_CHECK(cudaEventRecord(b, s));
  KL_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  KL_CHECK(cudaEventElapsedTime(&ms, a, b));
  KL_CHECK(cudaEventDestroy(a));
  KL_CHECK(cudaEventDestroy(b));
  return ms;
}

Options iters_for_budget(const Options& o, const std::function<void()>& launch, cudaStream_t s,
                         double budget_s, bool named, Row* row) {
  Options c = o;
  if (named) return c;
  const double single_ms = single_launch_ms(launch, s);  // warm: not the row's first launch
  if (single_ms <= 0) return c;
  const int want = static_cast<int>(budget_s * 1e3 / single_ms);
  if (want < o.iters) {
    c.iters = std::max(5, want);
    c.warmup = std::min(o.warmup, std::max(1, c.iters / 10));
    row->notes["iters_capped"] = std::to_string(c.iters);
  }
  return c;
}

}  // namespace kl::bench
