// kernels/rmsnorm/row_regs.cu — the register-resident row kernel shared by rmsnorm rungs 04
// (row_in_registers) and 05 (cluster_row) and the fused add_rmsnorm rungs 02 and 03. The rung files
// choose the launch shape (group size, cluster size); this file holds the kernel and its launcher.
//
// Layout. A block has R groups of G threads; group g owns row (blockIdx.x / C) * R + g, and the
// block owns slice q = blockIdx.x % C (its cluster rank) of that row: columns [q*slice, q*slice +
// slice) clipped to cols. The slice is cut into 16-byte chunks of K elements (K = 4 f32, 8 bf16);
// thread `lane` of the group holds chunks lane, lane + G, ..., lane + (V-1)*G — so each load
// instruction of a warp covers 32 consecutive chunks (512 contiguous bytes: fully coalesced).
//
//   row (cols elements) = C slices x (up to V*G chunks x K elements), held as uint4 raw[V] in
//   storage form (aligned path; bf16 two to a register) or float v[V][K] (unaligned path).
//
// Dataflow: every chunk is loaded once (DRAM read once), squared into a per-thread partial; the
// group reduces with shuffles (+ one shared-memory exchange between its warps); with C > 1 the
// blocks of the cluster exchange their per-row partials through distributed shared memory; then
// each thread scales the chunks it already holds and writes y. The fused op loads r and x chunks,
// writes r + x (rounded to storage) back to r at once and keeps the rounded sum as the row.
//
// kAligned = false (cols % K != 0 or a pointer not 16-byte aligned): the same slices and register
// count, but scalar loads/stores with a per-element bound check (rows then start anywhere) in a
// warp-interleaved layout (a warp's 32 lanes take 32 consecutive columns per access). (The chunk
// layout with K scalar accesses per chunk would make each warp instruction touch K times the
// sectors, slower than rung 01.)
#include <cuda_runtime.h>

#include "common/dsmem.cuh"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "rmsnorm_common.cuh"
#include "rmsnorm_internal.h"

namespace kl::rmsnorm_detail {
namespace {

constexpr int kMaxThreads = 1024;

// The row's sum of squares from each thread's partial: the group reduction (shuffles, plus one
// shared-memory exchange when G > 32), then with C > 1 the cluster's: each block publishes its
// per-row partials, every thread sums the C partials of its row in rank order (all blocks get the
// same bits), and a second cluster barrier keeps every block alive until its peers have read.
// Every thread of the block calls it (barriers inside).
__device__ __forceinline__ float row_total(float ss, int G, int C, int g, int lane, float* red,
                                           float* cpart) {
  ss = group_reduce_rt(ss, SumOp{}, red, G);
  if (C > 1) {
    if (lane == 0) cpart[g] = ss;
    cluster_sync();
    float tot = 0.0f;
    for (int k = 0; k < C; ++k) tot += dsmem_ld_f32(&cpart[g], static_cast<uint32_t>(k));
    cluster_sync();
    ss = tot;
  }
  return ss;
}

// kXLoad (aligned path only): XLoad::plain reads x by plain ld.global instead of
// ld.global.nc.L1::no_allocate (rmsnorm rung 08 / fused 05); a template parameter so rungs 04/05
// and fused 02/03 keep the exact code they had before it.
template <DType D, int V, bool kAligned, bool kFused, XLoad kXLoad>
__global__ void __launch_bounds__(kMaxThreads) row_regs_kernel(RowRegsParams p) {
  using E = Elem<D>;
  using T = typename E::T;
  constexpr int K = E::kVec;
  static_assert(V >= 1 && V * K <= max_elems(D, kFused, kAligned),
                "elements per thread over the register budget");
  __shared__ float red[kMaxThreads / 32];  // one partial per warp (group_reduce_rt)
  __shared__ float cpart[kMaxThreads / 32];  // one partial per group, read by the cluster peers
  if (p.pdl) {  // rung 09 / fused 06: the next grid may start now; this one reads after its producer
    pdl_trigger();
    pdl_wait();
  }

  const int G = p.group, C = p.cluster;
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
  const int q = C > 1 ? static_cast<int>(blockIdx.x % C) : 0;  // == cluster rank (cluster along x)
  const long long row = static_cast<long long>(blockIdx.x / C) * p.rows_per_block + g;
  const bool active = row < p.rows;  // inactive groups still take part in every barrier
  const int c0 = q * p.slice;
  const int c1 = min(p.cols, c0 + p.slice);  // this block's columns: [c0, c1)
  const long long base = row * p.cols;

  const T* x = static_cast<const T*>(p.x) + base;
  T* r = kFused ? static_cast<T*>(p.r) + base : nullptr;  // the residual (fused op only)
  const T* w = static_cast<const T*>(p.w);
  T* y = static_cast<T*>(p.y) + base;
  float ss = 0.0f;

  if constexpr (kAligned) {
    // The row stays in registers in storage form (a uint4 per chunk: bf16 packed two to a register,
    // half the registers of floats); it is widened twice, for the squares and for the output.
    // A chunk is whole or absent: c1 - c is a multiple of K (cols % K == 0, slice % K == 0).
    uint4 raw[V];
    bool have[V];
#pragma unroll
    for (int i = 0; i < V; ++i) have[i] = active && c0 + (i * G + lane) * K < c1;
    if constexpr (kFused) {
      uint4 rawx[V];
      // Every load first (2V 16-byte loads in flight), then the adds and the stores of r: a store
      // issued between loads would order the later loads behind it.
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const int c = c0 + (i * G + lane) * K;
        raw[i] = have[i] ? ld16<Ld::normal>(r + c) : make_uint4(0, 0, 0, 0);  // r is written below
        rawx[i] = have[i] ? ld16<kXLoad == XLoad::plain ? Ld::normal : Ld::nc_noalloc>(x + c)  // read once
                          : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < V; ++i) {
        float a[K], b[K];
        E::unpack(raw[i], a);
        E::unpack(rawx[i], b);
#pragma unroll
        for (int j = 0; j < K; ++j) a[j] += b[j];
        raw[i] = E::pack(a);  // rounded to storage: what r holds and what y is computed from
        if (have[i]) st16(r + c0 + (i * G + lane) * K, raw[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i)
        raw[i] = have[i] ? ld16<kXLoad == XLoad::plain ? Ld::normal : Ld::nc_noalloc>(
                               x + c0 + (i * G + lane) * K)  // read once
                         : make_uint4(0, 0, 0, 0);           // zeros add nothing to the sum
    }
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float f[K];
      E::unpack(raw[i], f);
#pragma unroll
      for (int j = 0; j < K; ++j) ss += ss_term(f[j]);
    }

    ss = row_total(ss, G, C, g, lane, red, cpart);
    if (!active) return;  // no barrier follows
    const float inv = rms_inv(ss, p.cols, p.eps);

    // Output in batches of kB chunks: the batch's w loads are issued together (w is shared by every
    // row: default caching), then the batch's y stores. 16 registers of w at most (f32 with more
    // than 4 chunks: batches of 2, or 32 data + 16 w + addresses spill at the 64-register cap).
    constexpr int kB = (K == 4 && V > 4) ? 2 : (V < 4 ? V : 4);
#pragma unroll
    for (int i0 = 0; i0 < V; i0 += kB) {
      uint4 wr[kB];
#pragma unroll
      for (int b = 0; b < kB; ++b)
        if (i0 + b < V && have[i0 + b]) wr[b] = ld16<Ld::normal>(w + c0 + ((i0 + b) * G + lane) * K);
#pragma unroll
      for (int b = 0; b < kB; ++b) {
        const int i = i0 + b;
        if (i < V && have[i]) {
          float f[K], wv[K];
          E::unpack(raw[i], f);
          E::unpack(wr[b], wv);
#pragma unroll
          for (int j = 0; j < K; ++j) f[j] = f[j] * inv * wv[j];
          st16(y + c0 + (i * G + lane) * K, E::pack(f));
        }
      }
    }
  } else {
    // Unaligned rows: scalar accesses, bound-checked, in a warp-interleaved layout: warp wl of the
    // group owns "warp chunks" of 32 * K consecutive columns (chunks wl, wl + G/32, ...: V of
    // them), and value (i, j) of lane ll is column c0 + (i * G/32 + wl) * 32K + j * 32 + ll. Each
    // scalar load / store instruction of a warp covers 32 consecutive columns (coalesced), and
    // j * 32 is an immediate offset from one address per i. V * G * K columns cover the slice.
    // The fused op again issues every load before the first store of r.
    const int lim = c1 - c0;  // offsets from c0 below lim exist
    // Offset of value (i, 0) from c0 (recomputed where used: one IMAD, fewer live registers).
    const int b0 = (lane >> 5) * (32 * K) + (lane & 31), bstep = (G >> 5) * (32 * K);
#define KL_BI(i) (b0 + (i) * bstep)
    float v[V][K];
#pragma unroll
    for (int i = 0; i < V; ++i) {
#pragma unroll
      for (int j = 0; j < K; ++j) {  // past the slice end: 0, contributes nothing
        const int o = KL_BI(i) + j * 32;
        v[i][j] = active && o < lim ? E::load(kFused ? r : x, c0 + o) : 0.0f;
      }
    }
    if constexpr (kFused) {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        float xs[K];
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int o = KL_BI(i) + j * 32;
          xs[j] = active && o < lim ? E::load(x, c0 + o) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < K; ++j) v[i][j] = E::round(v[i][j] + xs[j]);
      }
      // Stores of r after every load (a store between loads would order later loads behind it).
#pragma unroll
      for (int i = 0; i < V; ++i)
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int o = KL_BI(i) + j * 32;
          if (active && o < lim) E::store(r, c0 + o, v[i][j]);
        }
    }
#pragma unroll
    for (int i = 0; i < V; ++i)
#pragma unroll
      for (int j = 0; j < K; ++j) ss += ss_term(v[i][j]);
    ss = row_total(ss, G, C, g, lane, red, cpart);
    if (!active) return;
    const float inv = rms_inv(ss, p.cols, p.eps);
#pragma unroll
    for (int i = 0; i < V; ++i) {
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const int o = KL_BI(i) + j * 32;
        if (o < lim) E::store(y, c0 + o, v[i][j] * inv * E::load(w, c0 + o));
      }
    }
#undef KL_BI
  }
}

template <DType D, int V, bool A, bool F, XLoad L>
void launch_v(const RowRegsParams& p, const RowRegsConfig& cfg, cudaStream_t s) {
  // The C blocks of one row form one cluster (no cluster attribute when C = 1).
  pdl_launch_cluster(row_regs_kernel<D, V, A, F, L>, dim3(static_cast<unsigned>(cfg.blocks)),
                     dim3(cfg.group * cfg.rows_per_block), 0, s, p.pdl, cfg.cluster > 1 ? cfg.cluster : 0, p);
}

// Instantiates only V <= the register budget of (D, F).
template <DType D, bool A, bool F, XLoad L>
void dispatch_v(int V, const RowRegsParams& p, const RowRegsConfig& cfg, cudaStream_t s) {
  constexpr int kVmax = max_elems(D, F, A) / Elem<D>::kVec;
  switch (V) {
    case 1: if constexpr (kVmax >= 1) return launch_v<D, 1, A, F, L>(p, cfg, s); break;
    case 2: if constexpr (kVmax >= 2) return launch_v<D, 2, A, F, L>(p, cfg, s); break;
    case 3: if constexpr (kVmax >= 3) return launch_v<D, 3, A, F, L>(p, cfg, s); break;
    case 4: if constexpr (kVmax >= 4) return launch_v<D, 4, A, F, L>(p, cfg, s); break;
    case 5: if constexpr (kVmax >= 5) return launch_v<D, 5, A, F, L>(p, cfg, s); break;
    case 6: if constexpr (kVmax >= 6) return launch_v<D, 6, A, F, L>(p, cfg, s); break;
    case 7: if constexpr (kVmax >= 7) return launch_v<D, 7, A, F, L>(p, cfg, s); break;
    case 8: if constexpr (kVmax >= 8) return launch_v<D, 8, A, F, L>(p, cfg, s); break;
    default: break;
  }
  KL_REQUIRE(false, "row_regs: " << V << " chunks per thread is over the register budget");
}

template <DType D>
void dispatch_af(bool aligned, bool fused, int V, const RowRegsParams& p, const RowRegsConfig& cfg,
                 cudaStream_t s) {
  if (aligned) {  // the x load form matters on the aligned (16-byte) path only
    constexpr XLoad kNc = XLoad::read_only_no_allocate, kPlain = XLoad::plain;
    if (p.x_load == kPlain) {
      if (fused) dispatch_v<D, true, true, kPlain>(V, p, cfg, s);
      else dispatch_v<D, true, false, kPlain>(V, p, cfg, s);
    } else {
      if (fused) dispatch_v<D, true, true, kNc>(V, p, cfg, s);
      else dispatch_v<D, true, false, kNc>(V, p, cfg, s);
    }
  } else {
    constexpr XLoad kNc = XLoad::read_only_no_allocate;
    if (fused) dispatch_v<D, false, true, kNc>(V, p, cfg, s);
    else dispatch_v<D, false, false, kNc>(V, p, cfg, s);
  }
}

}  // namespace

RowRegsConfig row_regs_config(DType t, int rows, int cols, int elems, int cluster, int sms) {
  RowRegsConfig c;
  const int K = t == DType::f32 ? 4 : 8;
  const int vmax = elems / K;
  c.cluster = cluster;
  // Columns per block: an equal share of the row, rounded up to whole 16-byte chunks.
  const long long chunks = (static_cast<long long>(cols) + K - 1) / K;
  const long long slice_chunks = (chunks + cluster - 1) / cluster;
  c.slice = static_cast<int>(slice_chunks * K);
  // The smallest group whose threads hold the slice in <= vmax chunks each.
  for (int g = 32; g <= kMaxThreads; g *= 2) {
    const long long v = (slice_chunks + g - 1) / g;
    if (v <= vmax) {
      c.group = g;
      c.vecs = static_cast<int>(v);
      break;
    }
  }
  if (c.group == 0) {
    c.why = "row too long for " + std::to_string(cluster) + " block(s) of 1024 threads x " +
            std::to_string(elems) + " elements";
    return c;
  }
  // Short rows: several rows per block (256 threads), unless that leaves SMs idle.
  int R = c.group >= 256 ? 1 : 256 / c.group;
  auto blocks_for = [&](int rr) { return (static_cast<long long>(rows) + rr - 1) / rr * cluster; };
  while (R > 1 && blocks_for(R) < 2LL * sms) R /= 2;
  c.rows_per_block = R;
  c.blocks = blocks_for(R);
  if (c.blocks > 0x7fffffffLL) c.why = "grid too large";
  return c;
}

int pick_cluster(DType t, int rows, int cols, int elems, int sms) {
  int C = 0;
  for (int c = 1; c <= 8; c *= 2)
    if (row_regs_config(t, rows, cols, elems, c, sms).why.empty()) {
      C = c;
      break;
    }
  if (C == 0) return 0;
  // Split each row over more blocks while the grid covers the SMs fewer than twice (few rows),
  // keeping at least kMinSliceCols columns per block: on rows of 8192 columns one block per row
  // (rung 04) runs ahead of 8 blocks of 1024 columns (rung 05) at 1 and 64 rows, so a split pays
  // only on rows too long for one block to hold quickly (docs/rmsnorm.md, few rows). 1024-thread
  // blocks (one per SM) are not split in two: C = 2 is slower than C = 1 on fused 4096x16384 f32.
  constexpr long long kMinSliceCols = 8192;
  while (C < 8) {
    const RowRegsConfig cur = row_regs_config(t, rows, cols, elems, C, sms);
    if (cur.blocks >= 2LL * sms) break;
    if ((static_cast<long long>(cols) + 2 * C - 1) / (2 * C) < kMinSliceCols) break;
    C *= 2;
  }
  return C;
}

void launch_row_regs(const RowRegsParams& p, const RowRegsConfig& cfg, DType t, bool aligned,
                     bool fused, cudaStream_t s) {
  KL_REQUIRE(cfg.why.empty(), "row_regs: " << cfg.why);
  if (t == DType::f32) dispatch_af<DType::f32>(aligned, fused, cfg.vecs, p, cfg, s);
  else dispatch_af<DType::bf16>(aligned, fused, cfg.vecs, p, cfg, s);
}

}  // namespace kl::rmsnorm_detail
