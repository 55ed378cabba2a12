// tools/w_stream.cu — how fast TMA streams a bf16 weight matrix W [N, K] into shared memory, by how
// the matrix is cut over CTAs: the memory side of the decode GEMM (gemm_bf16 rung 11) without its
// math, activations or reduction.
//
// A cut is (R, S, stages, mc): CTA (strip b, range r) streams rows [b R, b R + R) over k-blocks
// [r KB / S, (r + 1) KB / S) (64 k each) through a ring of `stages` boxes of R rows x 128 bytes
// (128B swizzle, as rung 11 loads them); one consumer warp waits for each box and releases it. With
// mc = 2 a cluster of two CTAs streams the SAME rows and range, each loading half of every box
// multicast to both (one DRAM read feeds two SMs: the pattern cuBLAS's M = 64 decode kernel uses,
// nvjet_sm90_tst_64x32_64x16_1x2, which splits M over the pair). The grid is ceil(N / R) x S x mc.
// W is rotated over copies that exceed the L2 three times, so every launch reads DRAM.
//
// Per (shape, cut): 10 warm-up launches, then 50 launches each between its own cudaEvent pair
// (median: "single") and 50 back to back between one pair ("b2b" per launch), and the W bytes over
// each. Needs sm_90a.
//
//   build/w_stream                                 # default shapes and cuts
//   build/w_stream 4096x4096 64,2,13 32,1,26 64,1,13,2
//
// Arguments: shapes NxK, cuts R,S,stages[,mc] (R a multiple of 8 in 8..256, and of 16 with mc = 2).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kl/check.h"
#include "kl/device.h"
#include "kernels/common/hopper.cuh"
#include "kernels/common/tma.h"
#include "kernels/gemm_bf16/hopper_gemm.cuh"  // kBK, align1024, ceil_div, opt_in_smem (header-only parts)

namespace {

using namespace kl;
using bench::DeviceBuffer;
using hopper_gemm::ceil_div;
using hopper_gemm::kBK;  // k per box row: 128 bytes, the 128B swizzle's width

constexpr int kRingMax = 200 * 1024;
constexpr int kHead = 1024;                         // full + empty barriers ahead of the ring
constexpr int kMaxStages = kHead / (2 * 8);         // 64

__global__ void __launch_bounds__(64, 1)
    stream_w(const __grid_constant__ CUtensorMap tmW, int K, int R, int S, int stages, int mc,
             unsigned* sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = hopper_gemm::align1024(smem_raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + stages;
  uint8_t* ring = smem + kHead;
  const int tid = threadIdx.x;
  const int rank = mc == 2 ? static_cast<int>(cluster_ctarank()) : 0;
  const int unit = blockIdx.x / mc;      // (strip, range) of this CTA (the pair shares it)
  const int b = unit / S, r = unit % S;
  const int KB = ceil_div(K, kBK);
  const int kb0 = static_cast<int>(static_cast<long long>(r) * KB / S);
  const int kb1 = static_cast<int>(static_cast<long long>(r + 1) * KB / S);
  const int STAGE = R * 128;
  const int half = R / mc;               // rows this CTA loads per box
  if (tid == 0) {
    tma_prefetch_desc(&tmW);
    mbar_ring_init(full, empty, stages, mc);  // each consumer of the pair releases every slot
  }
  if (mc == 2) cluster_sync(); else __syncthreads();
  if (tid == 0) {
    for (int it = 0; it < kb1 - kb0; ++it) {
      const int s = it % stages;
      mbar_wait(&empty[s], ((it / stages) & 1) ^ 1);
      mbar_arrive_expect_tx(&full[s], STAGE);  // the whole box lands here (half from the peer)
      uint8_t* dst = ring + s * STAGE + rank * half * 128;
      if (mc == 2)
        tma_load_2d_multicast(dst, &tmW, &full[s], (kb0 + it) * kBK, b * R + rank * half, 0x3);
      else
        tma_load_2d(dst, &tmW, &full[s], (kb0 + it) * kBK, b * R);
    }
  } else if (tid == 32) {
    unsigned acc = 0;
    for (int it = 0; it < kb1 - kb0; ++it) {
      const int s = it % stages;
      mbar_wait(&full[s], (it / stages) & 1);
      acc += *reinterpret_cast<const unsigned*>(ring + s * STAGE);  // touch the box
      if (mc == 2) {
        mbar_arrive_remote(&empty[s], 0);
        mbar_arrive_remote(&empty[s], 1);
      } else {
        mbar_arrive(&empty[s]);
      }
    }
    if (acc == 0x9e3779b9u) *sink = acc;  // keeps the reads (never true for the bench's data)
  }
  if (mc == 2) cluster_sync();  // the peer may still multicast into / arrive on this CTA's smem
#endif
}

struct Cut { int R, S, stages, mc; };

std::string cut_str(const Cut& c) {
  return std::to_string(c.R) + "," + std::to_string(c.S) + "," + std::to_string(c.stages) + "," +
         std::to_string(c.mc);
}

void run(int N, int K, const Cut& c, std::vector<DeviceBuffer>& W, unsigned* sink) {
  const int stage = c.R * 128;
  if (c.R < 8 || c.R > 256 || c.R % (8 * c.mc) || (c.mc != 1 && c.mc != 2) || c.S < 1 ||
      c.stages < 2 || c.stages > kMaxStages || c.stages * stage > kRingMax) {
    std::printf("%5dx%-5d  cut %-14s  refused (R in 8..256, multiple of 8 mc; mc 1 or 2; 2..%d stages; "
                "ring <= %d KB)\n",
                N, K, cut_str(c).c_str(), kMaxStages, kRingMax / 1024);
    return;
  }
  const size_t smem = kHead + size_t(c.stages) * stage + 1024;  // + 1024: align1024 slack
  const int grid = ceil_div(N, c.R) * c.S * c.mc;
  hopper_gemm::opt_in_smem(reinterpret_cast<const void*>(stream_w), 1024 + kHead + kRingMax);
  std::vector<CUtensorMap> maps;
  for (auto& w : W)
    maps.push_back(make_tensor_map_bf16_2d(w.ptr, N, K, K, c.R / c.mc, kBK, CU_TENSOR_MAP_SWIZZLE_128B));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(64);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = c.mc, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  int idx = 0;
  auto launch = [&] {
    KL_CHECK(cudaLaunchKernelEx(&cfg, stream_w, maps[idx++ % maps.size()], K, c.R, c.S, c.stages, c.mc, sink));
  };
  for (int i = 0; i < 10; ++i) launch();
  KL_CHECK_LAUNCH();
  KL_CHECK(cudaDeviceSynchronize());
  constexpr int n = 50;
  std::vector<cudaEvent_t> ev(2 * n + 2);
  for (auto& e : ev) KL_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < n; ++i) {
    KL_CHECK(cudaEventRecord(ev[2 * i]));
    launch();
    KL_CHECK(cudaEventRecord(ev[2 * i + 1]));
  }
  KL_CHECK(cudaEventRecord(ev[2 * n]));
  for (int i = 0; i < n; ++i) launch();
  KL_CHECK(cudaEventRecord(ev[2 * n + 1]));
  KL_CHECK(cudaDeviceSynchronize());
  KL_CHECK_LAUNCH();
  std::vector<float> t(n);
  for (int i = 0; i < n; ++i) KL_CHECK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
  float b2b = 0;
  KL_CHECK(cudaEventElapsedTime(&b2b, ev[2 * n], ev[2 * n + 1]));
  for (auto& e : ev) KL_CHECK(cudaEventDestroy(e));
  std::sort(t.begin(), t.end());
  const double us = 1e3 * t[n / 2], us_b2b = 1e3 * b2b / n, bytes = 2.0 * N * K;
  std::printf("%5dx%-5d  cut %-14s  grid %4d  ring %3d KB  single %7.2f us %6.0f GB/s   b2b %7.2f us %6.0f GB/s\n",
              N, K, cut_str(c).c_str(), grid, c.stages * stage / 1024, us, bytes / us * 1e-3, us_b2b,
              bytes / us_b2b * 1e-3);
}

int main_(int argc, char** argv) {
  const DeviceInfo& d = device_info();
  if (d.cc_major != 9 || !has_sm90a_code() || !tma_available()) {
    std::fprintf(stderr, "w_stream: needs an sm_90 GPU with TMA and a build for sm_90a (this: %s, cc %d.%d)\n",
                 d.name.c_str(), d.cc_major, d.cc_minor);
    return 2;
  }
  std::vector<std::pair<int, int>> shapes;
  std::vector<Cut> cuts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    int x = 0, y = 0, z = 0, w = 1;
    if (std::sscanf(a.c_str(), "%dx%d", &x, &y) == 2 && a.find(',') == std::string::npos) {
      if (x < 8 || y < 64 || x % 8 || y % 8) {
        std::fprintf(stderr, "w_stream: shape '%s': N >= 8, K >= 64, both multiples of 8\n", a.c_str());
        return 2;
      }
      shapes.push_back({x, y});
    } else if (std::sscanf(a.c_str(), "%d,%d,%d,%d", &x, &y, &z, &w) >= 3) {
      cuts.push_back({x, y, z, w});
    } else {
      std::fprintf(stderr, "w_stream: '%s' is neither a shape NxK nor a cut R,S,stages[,mc]\n", a.c_str());
      return 2;
    }
  }
  if (shapes.empty()) shapes = {{4096, 4096}, {11008, 4096}, {4096, 11008}};
  if (cuts.empty())
    cuts = {{64, 2, 13, 1}, {128, 2, 12, 1}, {32, 1, 24, 1}, {64, 1, 24, 1}, {64, 1, 24, 2},
            {128, 1, 12, 2}, {64, 4, 13, 1}, {32, 2, 24, 1}, {128, 4, 6, 1}};
  std::printf("device %s, %d SMs; W bf16, 128B-swizzled boxes of R rows x 64 k\n", d.name.c_str(), d.sms);
  unsigned* sink = nullptr;
  KL_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  for (auto [N, K] : shapes) {
    const size_t bytes = size_t(N) * K * 2;
    const int copies = static_cast<int>(std::max<size_t>(2, (3 * size_t(d.l2_bytes)) / bytes + 1));
    std::vector<DeviceBuffer> W;
    for (int i = 0; i < copies; ++i) {
      W.emplace_back(bytes);
      KL_CHECK(cudaMemset(W.back().ptr, 0x11, bytes));
    }
    for (const Cut& c : cuts) run(N, K, c, W, sink);
  }
  KL_CHECK(cudaFree(sink));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "w_stream: %s\n", e.what());
    return 1;
  }
}
