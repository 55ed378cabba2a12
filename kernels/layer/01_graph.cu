// 01 graph — rung 00's launches replayed as one CUDA graph.
//
// Parent: 00 entry_points.
// Change: when a call repeats the previous call's arguments, rung 00's steps are captured once on a
//   stream of the rung's own and every later call with those arguments is one cudaGraphLaunch on
//   the caller's stream. The capture stream is a created stream, so the families that launch
//   programmatic-dependent there (the decode GEMMs, the attention's decode and combine) become
//   programmatic edges of the graph whatever stream the caller uses.
// Why: a decode layer is 13 to 15 short kernels; replayed as one graph the GPU starts each without
//   a host launch of its own, and a decode GEMM's CTAs start fetching weights while the kernel
//   before it drains.
// The replay machinery (layer_graph_run) serves every graph rung: rungs 02 and 03 replay their own steps.
// Limits: a graph serves one argument set (pointers, shape, kv_len): a decode loop whose kv_len
//   grows every step never replays one and runs rung 00's launches. A capture (host work and the
//   driver's memory for the instantiated graph) happens once per argument set; the 8 most recent
//   are kept per process. Inside the caller's own capture the steps are launched as in rung 00.
#include <cuda_runtime.h>

#include <atomic>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "kl/check.h"
#include "kernels/layer/layer_internal.h"
#include "kl/layer.h"

namespace kl::layer_detail {
namespace {

constexpr size_t kKept = 8;  // instantiated graphs kept (least recently used leaves first)

struct Graphs {
  std::mutex mu;
  using Key = std::pair<int, LayerKey>;              // the graph rung's number and the arguments
  std::optional<Key> last;                           // the previous call's
  std::list<std::pair<Key, cudaGraphExec_t>> kept;   // most recently used first
  std::map<int, cudaStream_t> capture;                   // the capture stream of each device
  std::atomic<long long> replays{0};
};
// Never destroyed: at process exit the driver may already be gone.
Graphs& graphs() {
  static Graphs* g = new Graphs;
  return *g;
}

cudaGraphExec_t capture(const LayerArgs& a, cudaStream_t cs, LayerLaunch launch) {
  cudaGraph_t graph = nullptr;
  KL_CHECK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
  try {
    launch(a, cs);
  } catch (...) {
    if (cudaStreamEndCapture(cs, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    throw;
  }
  KL_CHECK(cudaStreamEndCapture(cs, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  KL_CHECK(cudaGraphDestroy(graph));
  KL_CHECK(e);
  return exec;
}

}  // namespace

std::string layer_graph_supports(const LayerArgs& a, const DeviceInfo& d) { return layer_entry_points_supports(a, d); }

void layer_graph_run(const LayerArgs& a, cudaStream_t s, int rung, LayerLaunch launch) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  KL_CHECK(cudaStreamIsCapturing(s, &status));
  if (status != cudaStreamCaptureStatusNone) return launch(a, s);
  const DeviceInfo& d = device_info();
  const Graphs::Key k{rung, layer_key(a, d.id)};
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.mu);
  for (auto it = g.kept.begin(); it != g.kept.end(); ++it)
    if (it->first == k) {
      g.kept.splice(g.kept.begin(), g.kept, it);
      KL_CHECK(cudaGraphLaunch(it->second, s));
      ++g.replays;
      return;
    }
  const bool repeat = g.last && *g.last == k;
  g.last = k;
  launch(a, s);  // this call's work (and, on a first call, the families' set-up)
  if (!repeat) return;
  cudaStream_t& cs = g.capture[d.id];
  if (!cs) KL_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  g.kept.emplace_front(k, capture(a, cs, launch));
  if (g.kept.size() > kKept) {
    KL_CHECK(cudaGraphExecDestroy(g.kept.back().second));  // freed once any replay in flight ends
    g.kept.pop_back();
  }
}

void layer_graph_launch(const LayerArgs& a, cudaStream_t s) { layer_graph_run(a, s, 1, layer_entry_points_launch); }

long long layer_graph_replays() { return graphs().replays.load(); }

}  // namespace kl::layer_detail
