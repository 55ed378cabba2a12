#!/usr/bin/env python3
"""PyTorch on the bench shapes, timed by the benches' method, written in the benches' JSON schema.

    python3 scripts/torch_baseline.py --out results/<device>/torch.jsonl [--family F ...] [--quick]
                                      [--shape S ...]
    python3 scripts/torch_baseline.py --kernels results/<device>/torch_kernels.json [...]

impl values: torch (eager), torch_compile (torch.compile(dynamic=False) of the same eager code;
family layer: mode "max-autotune-no-cudagraphs" for prefill, "reduce-overhead" (CUDA graphs) for
decode), torch_sdpa_flash / torch_sdpa_cudnn (scaled_dot_product_attention pinned to one backend).
Family layer is one Llama decoder layer (python/kernel_ladder/reference.py, the same code the tests
compare kernel_ladder.layer with) on bench_layer's shapes and input scales; its rows are checked
against kernel_ladder.layer on the same tensors where the package and its C library load
(KL_C_LIBRARY or an installed package), else against the same PyTorch layer in fp32.
F.linear and torch.matmul are cuBLAS inside, so their rows are cuBLAS reached through PyTorch.

Method (docs/method.md; the same as bench/harness): fresh random inputs (never zeros) rotated over
enough copies that one rotation exceeds 3x the L2 (floor(3 L2 / set) + 1 copies), a ~300 ms clock
ramp whenever the GPU has been idle (after start-up and after every torch.compile), warm-up launches,
then CUDA events around each launch and the median / min / max of --iters. PyTorch's Python launch
path costs tens of microseconds per call; so that rows measure device time, not launch overhead,
each chunk of timed launches is queued behind a short torch.cuda._sleep spin kernel (the queue
fills while the GPU is held, then drains back to back). Each output is checked once before timing
against a float64 computation (sampled rows for GEMMs and attention); a failed check is not a row.

With --kernels FILE nothing is timed: one call of each eager and SDPA row runs under torch.profiler
and FILE gets the CUDA kernels it launched (name, count, device microseconds under the profiler) per
row, which is what "the library" runs at that shape (cuBLAS's or cuDNN's kernel, a split-K reduction,
a cast). torch.compile rows (generated Triton code) and the layer family are left out. It is a
separate process from the timed one, so the profiler never runs beside a timed launch.

FLOPs and bytes are counted exactly as the benches count them (include/kl/<family>.h).
Needs PyTorch with CUDA; exits 1 with a message otherwise.
"""
import argparse
import ctypes
import datetime
import gc
import json
import math
import os
import subprocess
import sys
import time

FAMILIES = ["rmsnorm", "swiglu", "softmax", "sgemm", "gemm_bf16", "attention", "layer"]
EPS = 1e-6

# ----------------------------------------------------------------------------------------- shapes
# The benches' default shapes (bench/bench_<family>.cu), so rows pair up by shape_str. Row ops:
# (rows, cols, dtypes, compile?) -- torch.compile is timed on the main shapes only (one compile
# per shape and dtype: that is where the 3-minute budget goes); edge shapes are eager only.
BF, F32, BOTH = ("bf16",), ("f32",), ("f32", "bf16")
ROW_SHAPES = {
    "rmsnorm": [(16384, 8192, BF, True), (4096, 16384, F32, True), (65536, 4096, BF, True),
                (4096, 1024, BF, True), (4096, 4099, BOTH, False), (1, 8192, BF, False),
                (64, 8192, BF, False), (64, 131072, BF, False), (16, 131072, F32, False)],
    "swiglu": [(16384, 11008, BF, True), (8192, 14336, BF, True), (4096, 14336, F32, True),
               (16384, 8192, BF, True), (4096, 1024, BOTH, True), (4096, 11007, BOTH, False),
               (1, 8192, BOTH, False)],
    "softmax": [(16384, 8192, BF, True), (4096, 16384, F32, True), (65536, 4096, BF, True),
                (4096, 1024, BOTH, True), (4096, 4099, BOTH, False), (1, 8192, BOTH, False),
                (64, 8192, BOTH, False), (16, 131072, BOTH, False)],
}
ROW_QUICK = [(16384, 8192, BF, True), (4096, 1024, BOTH, True)]
GEMM_SHAPES = ([(n, n, n) for n in (1024, 2048, 4096, 8192)] + [(4096, 11008, 4096), (4096, 4096, 11008)]
               + [(4096, 6144, 4096), (4096, 28672, 4096), (4096, 4096, 14336)]
               + [(m, n, k) for (n, k) in ((4096, 4096), (11008, 4096), (4096, 11008)) for m in (1, 16, 32, 64)]
               + [(1000, 1000, 1024), (4097, 1016, 520)])
SGEMM_SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                (4096, 11008, 4096), (4096, 4096, 11008), (1000, 1000, 1000), (4097, 1023, 515)]
# (B, Hq, Hkv, Sq, Skv, D, causal), as bench_attention's default_shapes()
ATTN_SHAPES = ([(b, 32, 32, s, s, d, c) for d in (128, 64) for c in (1, 0)
                for (b, s) in ((16, 512), (8, 1024), (1, 4096), (1, 8192), (1, 16384))]
               + [(1, 32, 8, 4096, 4096, 128, c) for c in (1, 0)]
               + [(2, 12, 4, 1000, 1234, 64, 1)])
DECODE_SHAPES = [(b, 32, hkv, 1, skv, 128, 1) for skv in (4096, 32768, 131072) for b in (1, 8)
                 for hkv in (8, 32)]

# bench_layer's shapes (kDefaultShapes, kQuickShapes): (B, S, L); S = 1 is decode; Llama-3-8B dims
# (LAYER_DIMS). Every one is a main shape: eager and compiled.
LAYER_KEYS = ("B", "S", "L", "hidden", "Hq", "Hkv", "D", "mlp")
LAYER_DIMS = {"hidden": 4096, "Hq": 32, "Hkv": 8, "D": 128, "mlp": 14336}
LAYER_SHAPES = [(1, 4096, 4096), (1, 8192, 8192), (4, 2048, 2048)] + [
    (b, 1, L) for L in (4096, 32768) for b in (1, 16, 64)]
LAYER_QUICK = [(1, 1024, 1024), (16, 1, 4096)]

QUICK = {
    "gemm": [(1024, 1024, 1024), (4096, 4096, 4096), (16, 4096, 4096)],
    "sgemm": [(1024, 1024, 1024), (4096, 4096, 4096)],
    "attn": [(8, 32, 32, 1024, 1024, 128, 1), (1, 32, 32, 4096, 4096, 128, 0),
             (2, 12, 4, 1000, 1234, 64, 1)],
    "decode": [(1, 32, 8, 1, 32768, 128, 1)],
}


def die(msg):
    print("torch_baseline.py: " + msg, file=sys.stderr)
    sys.exit(1)


# ----------------------------------------------------------------------------------------- setup
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_commit():
    env = os.environ.get("KL_GIT_COMMIT")
    if env:
        return env
    try:  # the stamp the bench binaries' rows carry (CMakeLists.txt runs the same script)
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["bash", os.path.join(here, "commit_id.sh")], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        return out or "unknown"
    except Exception:
        return "unknown"


def libcuda_device(ordinal):
    """(libcuda through ctypes, the CUdevice of `ordinal` after cuInit); None for what is missing."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None, None
    cu.cuInit(0)
    dev = ctypes.c_int(0)
    return cu, (dev if cu.cuDeviceGet(ctypes.byref(dev), ordinal) == 0 else None)


def driver_attrs(ordinal):
    """Driver version and clock attributes through libcuda (what cudaGetDeviceProperties reports)."""
    out = {"driver": 0, "clock_khz": 0, "mem_clock_khz": 0, "mem_bus_bits": 0}
    cu, dev = libcuda_device(ordinal)
    if cu is not None:
        v = ctypes.c_int(0)
        if cu.cuDriverGetVersion(ctypes.byref(v)) == 0:
            out["driver"] = v.value
    if dev is not None:
        for key, attr in (("clock_khz", 13), ("mem_clock_khz", 36), ("mem_bus_bits", 37)):
            x = ctypes.c_int(0)
            if cu.cuDeviceGetAttribute(ctypes.byref(x), attr, dev) == 0:
                out[key] = x.value
    return out


class ClockSampler:
    """The mean NVML SM clock over a timed window, sampled every 2 ms on a side thread (what
    bench/harness_gpu.cu's ClockSampler writes as clock_mhz). stop() returns None where NVML is
    missing. The window holds the chunks' _sleep spins and syncs as well as the launches (the C++
    harness's holds its launches and syncs). The thread takes the GIL for a few microseconds every
    2 ms while the host queues a chunk; the chunk's _sleep hold (1.5x the measured host time) covers that."""
    def __init__(self, ordinal):
        self.nv = None
        try:
            nv = ctypes.CDLL("libnvidia-ml.so.1")
            cu, dev = libcuda_device(ordinal)
            bus = ctypes.create_string_buffer(64)
            handle = ctypes.c_void_p()
            if (dev is not None and nv.nvmlInit_v2() == 0
                    and cu.cuDeviceGetPCIBusId(bus, 64, dev) == 0
                    and nv.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(handle)) == 0):
                self.nv, self.handle = nv, handle
        except (OSError, AttributeError):
            pass
        self.samples = []
        self.thread = None
        self.running = False

    def mhz(self):
        v = ctypes.c_uint(0)
        # NVML_CLOCK_SM = 1
        return v.value if self.nv.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(v)) == 0 else None

    def start(self):
        self.samples = []
        if self.nv is None:
            return
        import threading
        self.running = True

        def loop():
            while self.running:
                m = self.mhz()
                if m:
                    self.samples.append(m)
                time.sleep(0.002)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def stop(self):
        if self.thread is not None:
            self.running = False
            self.thread.join()
            self.thread = None
        return sum(self.samples) / len(self.samples) if self.samples else None


class Ctx:
    def __init__(self, args):
        self.args = args
        self.dev = torch.cuda.current_device()
        p = torch.cuda.get_device_properties(self.dev)
        self.l2 = int(getattr(p, "L2_cache_size", 0) or 50 * 2 ** 20)
        da = driver_attrs(self.dev)
        self.device = {"name": p.name, "cc": "%d.%d" % (p.major, p.minor),
                       "sms": p.multi_processor_count, "l2_bytes": self.l2,
                       "clock_khz": da["clock_khz"], "mem_clock_khz": da["mem_clock_khz"],
                       "mem_bus_bits": da["mem_bus_bits"]}
        self.clock_khz = da["clock_khz"] or 2_000_000
        try:
            self.runtime = int(torch._C._cuda_getCompiledVersion())
        except Exception:
            maj, mnr = (torch.version.cuda or "0.0").split(".")[:2]
            self.runtime = int(maj) * 1000 + int(mnr) * 10
        self.driver = da["driver"]
        self.commit = git_commit()
        self.timestamp = now_iso()
        self.seed = args.seed if args.seed else int(time.time_ns() & 0x7FFFFFFF)
        self.seq = 0
        self.last_gpu = 0.0
        self.out = open(args.out, "a") if args.out else sys.stdout
        self.rows = 0
        self.failed = 0
        self.skipped = 0
        self.has_sleep = hasattr(torch.cuda, "_sleep")
        self.clock = ClockSampler(self.dev)
        self.last_clock = None
        self.kernels = {}  # --kernels: "family|op|impl|dtype|shape_str" -> kernels_of()

    def next_seed(self):
        self.seq += 1
        return self.seed * 1000003 + self.seq

    # ---------------------------------------------------------------------------------- inputs
    def uniform(self, shape, dtype, lo=-1.0, hi=1.0):
        g = torch.Generator(device="cuda")
        g.manual_seed(self.next_seed())
        t = torch.rand(shape, generator=g, device="cuda", dtype=torch.float32)
        t.mul_(hi - lo).add_(lo)
        return t.to(dtype)

    def copies(self, bytes_per_set):
        """bench/harness rotation_copies: floor(3 L2 / set) + 1, at most 2^16 and at most a quarter of
        free memory."""
        if self.args.no_rotate or self.args.kernels or bytes_per_set <= 0:
            return 1
        c = int(math.floor(3.0 * self.l2 / bytes_per_set)) + 1
        free, _ = torch.cuda.mem_get_info()
        cap = max(1, (free // 4) // bytes_per_set)
        return max(1, min(c, cap, 1 << 16))

    # ---------------------------------------------------------------------------------- timing
    def ramp(self, force=False):
        """About 300 ms of matmul work so the clocks are up; only after the GPU has been idle."""
        if not force and time.monotonic() - self.last_gpu < 1.0:
            return
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        total = 0.0
        while total < 300.0:
            s.record()
            for _ in range(4):
                torch.mm(a, a)
            e.record()
            e.synchronize()
            total += max(s.elapsed_time(e), 0.01)
        del a
        self.last_gpu = time.monotonic()

    def time_fn(self, fn, copies):
        """fn(i) launches on copy i. Returns (median, min, max, iters) in ms."""
        a = self.args
        idx = 0
        enqueue = []
        for _ in range(max(a.warmup, 2)):
            t0 = time.perf_counter()
            fn(idx % copies)
            enqueue.append(time.perf_counter() - t0)
            idx += 1
        torch.cuda.synchronize()
        self.ramp()
        # Host cost of one launch (median of the later warm-up calls, which do not compile).
        host_ms = sorted(enqueue[len(enqueue) // 2:])[len(enqueue[len(enqueue) // 2:]) // 2] * 1e3
        times = []
        self.clock.start()
        try:
            self._timed_chunks(fn, copies, idx, host_ms, times)
        finally:
            self.last_clock = self.clock.stop()
        self.last_gpu = time.monotonic()
        ts = sorted(times)
        med = ts[len(ts) // 2] if len(ts) % 2 else 0.5 * (ts[len(ts) // 2 - 1] + ts[len(ts) // 2])
        return med, ts[0], ts[-1], len(ts)

    def _timed_chunks(self, fn, copies, idx, host_ms, times):
        """--iters launches in chunks of 25, each chunk queued behind a _sleep spin; appends ms."""
        chunk = 25
        n = self.args.iters
        while len(times) < n:
            m = min(chunk, n - len(times))
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(m)]
            if self.has_sleep:
                # Hold the stream while the host queues the chunk: 1.5x the host time + 0.2 ms.
                sleep_ms = min(200.0, 1.5 * m * (host_ms + 0.01) + 0.2)
                torch.cuda._sleep(int(sleep_ms * self.clock_khz))
            for s, e in ev:
                s.record()
                fn(idx % copies)
                e.record()
                idx += 1
            torch.cuda.synchronize()
            times += [s.elapsed_time(e) for s, e in ev]

    def kernels_of(self, fn):
        """The CUDA kernels of one call of fn (already run once: its validation), heaviest first:
        [{"name", "n", "us"}], or {"error": why} where the profiler could not say."""
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            agg = {}
            for e in prof.events():
                if e.device_type != torch.autograd.DeviceType.CUDA:
                    continue
                k = agg.setdefault(e.name, [0, 0.0])
                k[0] += 1
                k[1] += e.time_range.elapsed_us()
            return [{"name": name, "n": n, "us": round(us, 2)}
                    for name, (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1])]
        except Exception as e:  # no CUPTI, a profiler that refuses: say so, time nothing
            return {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}

    def write_kernels(self, path):
        with open(path, "w") as f:
            json.dump({"device": self.device, "torch": torch.__version__, "git_commit": self.commit,
                       "timestamp": self.timestamp, "rows": self.kernels}, f, indent=1, sort_keys=True)
            f.write("\n")

    # ---------------------------------------------------------------------------------- rows
    def emit(self, family, op, impl, dtype, shape, timing, flops, bytes_, err, tol, l2_res, copies,
             seed, notes=None):
        med, mn, mx, iters = timing
        shape_str = ",".join("%s=%d" % kv for kv in shape.items())
        row = {
            "family": family, "op": op, "impl": impl, "variant": -1, "variant_name": impl,
            "change": "", "dtype": dtype, "shape": shape, "shape_str": shape_str,
            "median_ms": med, "min_ms": mn, "max_ms": mx, "iters": iters, "graph_ms": None,
            "flops": flops, "bytes": bytes_,
            "tflops": flops / med / 1e9 if flops > 0 else None,
            "gbps": bytes_ / med / 1e6 if bytes_ > 0 else None,
            "validated": err is not None, "ok": True,
            "err": err or {"n": 0, "max_abs": 0.0, "max_rel": 0.0, "rel_l2": 0.0, "bad": 0,
                           "nonfinite": 0},
            "tol": tol or {"abs": 0.0, "rel": 0.0, "rel_l2": 0.0},
            "l2_resident": l2_res, "copies": copies, "seed": seed, "clock_mhz": self.last_clock,
            "device": self.device, "cuda_runtime": self.runtime, "driver": self.driver,
            "git_commit": self.commit, "timestamp": self.timestamp,
            "notes": dict({"torch": torch.__version__,
                           "launch": "queued behind torch.cuda._sleep" if self.has_sleep
                           else "python launch path (no _sleep)"}, **(notes or {})),
        }
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()
        self.rows += 1
        rate = ("%8.1f TFLOP/s" % row["tflops"]) if (row["tflops"] and op not in
                                                    ("rmsnorm", "add_rmsnorm", "swiglu", "softmax", "decode")) \
            else ("%8.0f GB/s" % (row["gbps"] or 0))
        print("  [%s %s] %-17s %-44s %10.4f ms %s%s" % (op, dtype, impl, shape_str, med, rate,
                                                       "  (L2-resident)" if l2_res else ""),
              file=sys.stderr, flush=True)

    def skip(self, what, why):
        self.skipped += 1
        print("  skip %s: %s" % (what, why), file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- checks
def compare(got, ref, tol):
    """Error figures of `got` against a float64 `ref` (same shape); element passes if
    |got - ref| <= abs + rel |ref|, and the whole output if rel_l2 <= tol.rel_l2."""
    g = got.double()
    r = ref.double()
    fin = torch.isfinite(r)
    nonfinite = int((~torch.isfinite(g) & fin).sum().item())
    d = (g - r).abs()
    d = torch.where(torch.isfinite(d), d, torch.full_like(d, float("inf")))
    bad = int((d > tol["abs"] + tol["rel"] * r.abs()).sum().item())
    nz = r.abs() > 0
    max_rel = float((d[nz] / r.abs()[nz]).max().item()) if bool(nz.any()) else 0.0
    den = float(r.pow(2).sum().item())
    rel_l2 = math.sqrt(float(torch.where(torch.isfinite(d), d, torch.zeros_like(d)).pow(2).sum().item())
                       / den) if den > 0 else 0.0
    max_abs = float(d.max().item()) if d.numel() else 0.0
    err = {"n": int(r.numel()), "max_abs": max_abs if math.isfinite(max_abs) else None,
           "max_rel": max_rel if math.isfinite(max_rel) else None, "rel_l2": rel_l2, "bad": bad,
           "nonfinite": nonfinite}
    ok = nonfinite == 0 and bad == 0 and rel_l2 <= tol["rel_l2"]
    return ok, err


def tol_rows(dtype):  # bench/harness default_tolerance
    return {"abs": 1e-5, "rel": 1e-4, "rel_l2": 1e-5} if dtype == "f32" else \
        {"abs": 1e-3, "rel": 1.6e-2, "rel_l2": 8e-3}


def tol_scaled(ref, rel, rel_l2):
    """For sums of many products: an absolute floor of `rel` times the output's rms, so a near-zero
    output from cancellation is judged against the size of the terms that cancelled."""
    rms = float(ref.double().pow(2).mean().sqrt().item())
    return {"abs": rel * rms, "rel": rel, "rel_l2": rel_l2}


TD = {}  # filled in main(): "f32" -> torch.float32, "bf16" -> torch.bfloat16


def esize(dtype):
    return 4 if dtype == "f32" else 2


# ----------------------------------------------------------------------------------------- ops
def rms_eager(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def add_rms_eager(x, r, w):
    r.add_(x)  # r = r + x, rounded to the storage type, then normalized (kernels/rmsnorm)
    return rms_eager(r, w)


def swiglu_eager(g, u):
    return F.silu(g) * u


def softmax_eager(x):
    return torch.softmax(x, dim=-1)


def make_compiled(fn, ctx):
    if ctx.args.no_compile:
        return None
    try:
        return torch.compile(fn, dynamic=False)
    except Exception as e:  # no Triton, unsupported platform ...
        print("torch_baseline.py: torch.compile unavailable: %s" % e, file=sys.stderr)
        return None


def run_impls(ctx, family, op, dtype, shape, impls, sets, copies, flops, bytes_, check, seed, l2_res=None,
              notes=None):
    """impls: [(impl name, fn(set) -> output)]. check(fn) runs fn once on set 0 and returns
    (ok, err, tol) against a float64 reference (see plain_check). l2_res: given where the sets are not
    what the launch reads (else from their bytes); notes: extra row notes."""
    if l2_res is None:
        l2_res = ctx.l2 > 0 and (bytes_per_set_of(sets) * copies <= 3 * ctx.l2)  # as bench/harness
    shape_str = ",".join("%s=%d" % kv for kv in shape.items())
    for impl, fn in impls:
        what = "%s %s %s %s" % (impl, op, dtype, shape_str)
        try:
            ok, err, tol = check(fn)
            torch.cuda.synchronize()
            if not ok:
                ctx.failed += 1
                print("  FAIL %s: %s (tol %s)" % (what, err, tol), file=sys.stderr, flush=True)
                continue
            if ctx.args.kernels:
                ctx.kernels["|".join([family, op, impl, dtype, shape_str])] = ctx.kernels_of(
                    lambda fn=fn: fn(sets[0]))
                continue
            timing = ctx.time_fn(lambda i, fn=fn: fn(sets[i]), copies)
        except Exception as e:  # a backend that refuses the shape, out of memory, ...
            try:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except Exception as e2:  # a sticky CUDA error: nothing after this can be trusted
                die("CUDA error after %s: %s / %s" % (what, e, e2))
            ctx.skip(what, "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            continue
        ctx.emit(family, op, impl, dtype, shape, timing, flops, bytes_, err, tol, l2_res, copies, seed, notes)


def plain_check(sets, cmp):
    """check(fn) for an op that does not modify its inputs: cmp(out, set) -> (ok, err, tol)."""
    def check(fn):
        out = fn(sets[0])
        torch.cuda.synchronize()
        return cmp(out, sets[0])
    return check


def bytes_per_set_of(sets):
    return sum(t.numel() * t.element_size() for t in sets[0] if torch.is_tensor(t))


def bench_rows(ctx, family, shape_list):
    compiled = {}
    for rows, cols, dt, want_compile in [(r, c, dt, w) for (r, c, dts, w) in shape_list for dt in dts]:
        tdt = TD[dt]
        es = esize(dt)
        n = rows * cols
        ops = {"rmsnorm": ["rmsnorm", "add_rmsnorm"], "swiglu": ["swiglu"], "softmax": ["softmax"]}[family]
        for op in ops:
            seed = ctx.next_seed()
            shape = {"rows": rows, "cols": cols}
            if op == "rmsnorm":
                mk = lambda: (ctx.uniform((rows, cols), tdt), ctx.uniform((cols,), tdt, 0.5, 1.5))
                eager, nbytes, flops = rms_eager, (2 * n + cols) * es, 4.0 * n

                def ref(s):
                    x = s[0].double()
                    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * s[1].double()
            elif op == "add_rmsnorm":
                mk = lambda: (ctx.uniform((rows, cols), tdt), ctx.uniform((rows, cols), tdt),
                              ctx.uniform((cols,), tdt, 0.5, 1.5))
                eager, nbytes, flops = add_rms_eager, (4 * n + cols) * es, 5.0 * n
                ref = None  # r is written in place: check_add_rms compares against a snapshot
            elif op == "swiglu":
                mk = lambda: (ctx.uniform((rows, cols), tdt, -4, 4), ctx.uniform((rows, cols), tdt))
                eager, nbytes, flops = swiglu_eager, 3 * n * es, 5.0 * n

                def ref(s):
                    g = s[0].double()
                    return g / (1 + torch.exp(-g)) * s[1].double()
            else:
                mk = lambda: (ctx.uniform((rows, cols), tdt, -8, 8),)
                eager, nbytes, flops = softmax_eager, 2 * n * es, 5.0 * n

                def ref(s):
                    return torch.softmax(s[0].double(), dim=-1)
            set_bytes = sum(t.numel() * t.element_size() for t in mk_shape_probe(op, rows, cols, es))
            copies = ctx.copies(set_bytes)
            try:
                sets = [mk() for _ in range(copies)]
            except torch.cuda.OutOfMemoryError as e:
                ctx.skip("%s %s %dx%d" % (op, dt, rows, cols), "out of memory: %s" % e)
                continue

            def cmp(out, s, ref=ref):
                ok, err = compare(out, ref(s), tol_rows(dt))
                return ok, err, tol_rows(dt)
            check = check_add_rms(sets, dt) if op == "add_rmsnorm" else plain_check(sets, cmp)
            if op not in compiled:
                compiled[op] = make_compiled(eager, ctx)
            impls = [("torch", eager)]
            if want_compile and compiled[op] is not None:
                impls.append(("torch_compile", compiled[op]))
            run_impls(ctx, family, op, dt, shape, [(i, (lambda s, f=f: f(*s))) for i, f in impls],
                      sets, copies, flops, nbytes, check, seed)
            del sets
            torch.cuda.empty_cache()


def mk_shape_probe(op, rows, cols, es):
    """Zero-size stand-ins with the byte count of one input set (no allocation)."""
    class T:
        def __init__(self, n):
            self.n = n

        def numel(self):
            return self.n

        def element_size(self):
            return es
    n = rows * cols
    return {"rmsnorm": [T(n), T(cols)], "add_rmsnorm": [T(n), T(n), T(cols)],
            "swiglu": [T(n), T(n)], "softmax": [T(n)]}[op]


def check_add_rms(sets, dt):
    """check(fn) for add_rmsnorm, which writes r in place: compares both r and y with float64
    computed from a snapshot of r. (During timing r keeps accumulating x; RMSNorm is
    scale-invariant and ~100 additions stay far from overflow.)"""
    def check(fn):
        x, r, w = sets[0]
        r0 = r.clone()
        y = fn(sets[0])
        torch.cuda.synchronize()
        rr = (r0.float() + x.float()).to(r.dtype)  # the rounded residual the op must store
        tol = tol_rows(dt)
        ok1, e1 = compare(r, rr.double(), tol)
        rd = rr.double()
        ref = rd * torch.rsqrt(rd.pow(2).mean(-1, keepdim=True) + EPS) * w.double()
        ok2, e2 = compare(y, ref, tol)
        r.copy_(r0)
        return ok1 and ok2, (e2 if ok1 else e1), tol
    return check


def bench_gemm(ctx, family, shapes):
    dt = "bf16" if family == "gemm_bf16" else "f32"
    tdt = TD[dt]
    es = esize(dt)
    for M, N, K in shapes:
        seed = ctx.next_seed()
        shape = {"M": M, "N": N, "K": K}
        copies = ctx.copies((M * K + N * K) * es)
        try:
            if family == "gemm_bf16":  # C = A W^T, the nn.Linear layout
                sets = [(ctx.uniform((M, K), tdt), ctx.uniform((N, K), tdt)) for _ in range(copies)]
                fn = lambda s: F.linear(s[0], s[1])
            else:  # C = A B, row-major, fp32, TF32 off
                sets = [(ctx.uniform((M, K), tdt), ctx.uniform((K, N), tdt)) for _ in range(copies)]
                fn = lambda s: torch.matmul(s[0], s[1])
        except torch.cuda.OutOfMemoryError as e:
            ctx.skip("%s %s" % (family, shape), "out of memory: %s" % e)
            continue

        def cmp(out, s):
            rows = torch.arange(0, M, max(1, M // 64), device="cuda")[:64]
            a = s[0][rows].double()
            ref = a @ (s[1].double().t() if family == "gemm_bf16" else s[1].double())
            tol = tol_scaled(ref, 1.6e-2, 8e-3) if dt == "bf16" else tol_scaled(ref, 1e-4, 1e-5)
            ok, err = compare(out[rows], ref, tol)
            return ok, err, tol
        check = plain_check(sets, cmp)
        run_impls(ctx, family, "sgemm" if family == "sgemm" else "gemm", dt, shape,
                  [("torch", fn)], sets, copies, 2.0 * M * N * K, float(es * (M * K + N * K + M * N)),
                  check, seed)
        del sets
        torch.cuda.empty_cache()


def causal_pairs(Sq, Skv):
    """Unmasked (query, key) pairs with the diagonal aligned to the end: key j <= i + Skv - Sq."""
    off = Skv - Sq
    # sum_{i=0}^{Sq-1} clamp(i + off + 1, 0, Skv)
    tot = 0
    lo = max(0, -off)  # first query that sees any key
    # queries i in [lo, Sq): seen = min(i + off + 1, Skv)
    full_from = max(lo, Skv - off - 1)  # from here on every key is seen
    if full_from < Sq:
        tot += (Sq - full_from) * Skv
    a, b = lo, min(Sq, full_from)
    if b > a:
        tot += (b - a) * (off + 1) + (b - 1 + a) * (b - a) // 2
    return tot


def bench_attention(ctx, shapes, op):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        from torch.nn.attention.bias import causal_lower_right
    except ImportError:
        causal_lower_right = None
    backends = [("torch_sdpa_flash", SDPBackend.FLASH_ATTENTION),
                ("torch_sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)]
    for B, Hq, Hkv, Sq, Skv, D, causal in shapes:
        seed = ctx.next_seed()
        shape = {"B": B, "Hq": Hq, "Hkv": Hkv, "Sq": Sq, "Skv": Skv, "D": D, "causal": causal}
        pairs = causal_pairs(Sq, Skv) if causal else Sq * Skv
        flops = 4.0 * B * Hq * pairs * D
        nbytes = 2.0 * (2 * B * Hq * Sq * D + 2 * B * Hkv * Skv * D)  # Q, O + K, V once
        copies = ctx.copies(int(2 * (B * Hq * Sq * D + 2 * B * Hkv * Skv * D)))
        try:
            sets = [(ctx.uniform((B, Hq, Sq, D), torch.bfloat16, -2, 2),
                     ctx.uniform((B, Hkv, Skv, D), torch.bfloat16, -2, 2),
                     ctx.uniform((B, Hkv, Skv, D), torch.bfloat16)) for _ in range(copies)]
        except torch.cuda.OutOfMemoryError as e:
            ctx.skip("%s %s" % (op, shape), "out of memory: %s" % e)
            continue
        gqa = Hq != Hkv
        kw = {"enable_gqa": True} if gqa else {}
        mask = None
        is_causal = False
        if causal and Sq == Skv:
            is_causal = True
        elif causal and Sq > 1:
            if causal_lower_right is None:
                ctx.skip("%s %s" % (op, shape), "no causal_lower_right in this PyTorch")
                continue
            mask = causal_lower_right(Sq, Skv)
        # causal with Sq == 1 (decode): the one query sees every key, i.e. no mask.

        def cmp(out, s):
            qi = torch.arange(0, Sq, max(1, Sq // 32), device="cuda")[:32]
            heads = sorted({0, Hq - 1})
            errs = []
            got, ref = [], []
            for h in heads:
                q = s[0][0, h, qi].double()
                k = s[1][0, h // (Hq // Hkv)].double()
                v = s[2][0, h // (Hq // Hkv)].double()
                sc = (q @ k.t()) / math.sqrt(D)
                if causal:
                    j = torch.arange(Skv, device="cuda")
                    sc = sc.masked_fill(j[None, :] > (qi[:, None] + Skv - Sq), float("-inf"))
                ref.append(torch.softmax(sc, -1) @ v)
                got.append(out[0, h, qi])
            r = torch.cat(ref)
            tol = tol_scaled(r, 2e-2, 1e-2)
            ok, err = compare(torch.cat(got), r, tol)
            return ok, err, tol
        check = plain_check(sets, cmp)
        for impl, be in backends:
            def fn(s, be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(s[0], s[1], s[2], attn_mask=mask,
                                                          is_causal=is_causal, **kw)
            run_impls(ctx, "attention", op, "bf16", shape, [(impl, fn)], sets, copies, flops, nbytes,
                      check, seed)
        del sets
        torch.cuda.empty_cache()


def layer_shape(B, S, L, dims=None):
    """The row's shape in bench_layer's order (its shape_str: B,S,L,hidden,Hq,Hkv,D,mlp)."""
    d = dict(LAYER_DIMS, **(dims or {}))
    return dict([("B", B), ("S", S), ("L", L)] + [(k, d[k]) for k in LAYER_KEYS[3:]])


def layer_counts(sh):
    """include/kl/layer.h layer_flops and layer_bytes, with kv_len = L (as bench_layer runs it)."""
    B, S, kv, h, D = sh["B"], sh["S"], sh["L"], sh["hidden"], sh["D"]
    T = float(B * S)
    width = (sh["Hq"] + 2 * sh["Hkv"]) * D
    flops = 2.0 * T * h * (width + sh["Hq"] * D + 3.0 * sh["mlp"])
    flops += 4.0 * B * sh["Hq"] * D * (S * (kv - S + 1) + 0.5 * S * (S - 1))
    weights = float(h) * (width + sh["Hq"] * D + 3.0 * sh["mlp"] + 2.0)
    cache = 2.0 * B * sh["Hkv"] * kv * D
    return flops, 2.0 * (weights + cache + 2.0 * T * h) + 4.0 * T


def load_kernel_ladder():
    """(kernel_ladder, "") when the package and its C library load, else (None, why). The library:
    $KL_C_LIBRARY, else the package's own, else the build folder's (run_all.sh's: $KL_BUILD_DIR,
    $KL_BUILD or build/)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sys.path.insert(0, os.path.join(root, "python"))
    try:
        import kernel_ladder
    except ImportError as e:
        return None, "kernel_ladder does not import: %s" % e
    if not os.environ.get("KL_C_LIBRARY") and not os.path.exists(kernel_ladder.library_path()):
        build = os.environ.get("KL_BUILD_DIR") or os.environ.get("KL_BUILD") or "build"
        built = os.path.join(build if os.path.isabs(build) else os.path.join(root, build), "libkernel_ladder_c.so")
        if os.path.exists(built):
            os.environ["KL_C_LIBRARY"] = os.path.abspath(built)
    if not os.path.exists(kernel_ladder.library_path()):
        return None, "%s not found (set KL_C_LIBRARY)" % kernel_ladder.library_path()
    try:
        kernel_ladder.version()
    except Exception as e:  # noqa: BLE001 (a library that does not load)
        return None, "the C library does not load: %s" % e
    return kernel_ladder, ""


# kernel_ladder.layer against the PyTorch layer. The gate is the relative L2: each side is within
# bench_layer's 1e-2 of the layer computed exactly (both round a dozen intermediates to bf16, at
# places, and with fp32 sums in orders, of their own), so the two are within 2e-2 of each other.
# Elementwise only a coarse check (abs 1/8, rel 1/16: four times bench_layer's), since PyTorch
# rounds at more places (silu and the product apart, the RoPE terms) and the worst element of a
# large output sits far out in the tail of those roundings.
LAYER_TOL = {"abs": 1.0 / 8, "rel": 1.0 / 16, "rel_l2": 2e-2}


def bench_layer(ctx, shapes):
    with torch.no_grad():
        bench_layer_shapes(ctx, shapes)


def bench_layer_shapes(ctx, shapes):
    kl, why = load_kernel_ladder()  # puts python/ on the path for kernel_ladder.reference too
    if kl is None:
        print("torch_baseline.py: layer rows checked against the PyTorch layer in fp32 (%s)" % why,
              file=sys.stderr, flush=True)
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        counters = None
    for sh in shapes:
        layer_rows(ctx, sh, kl, why, counters)
        # The compiled module (and its CUDA graphs' memory pool) held the buffers: free them before
        # the next shape's memory check.
        if not ctx.args.no_compile:
            import importlib
            importlib.import_module("torch._dynamo").reset()
        gc.collect()
        torch.cuda.empty_cache()


def layer_rows(ctx, sh, kl, why, counters):
    """The torch and torch_compile rows of one layer shape."""
    from kernel_ladder.reference import TorchLayer, default_positions, torch_layer
    seed = ctx.next_seed()
    B, S, L, h, Hq, Hkv, D, mlp = (sh[k] for k in LAYER_KEYS)
    decode = S == 1
    op = "decode" if decode else "prefill"
    what = "%s %s" % (op, ",".join("%s=%d" % kv for kv in sh.items()))
    flops, nbytes = layer_counts(sh)
    weight_bytes = 2.0 * h * ((Hq + 2 * Hkv) * D + Hq * D + 3 * mlp + 2)
    need = weight_bytes + 2 * 2.0 * B * Hkv * L * D + 2.0 * B * S * (6 * h + 4 * mlp + 2 * (Hq + 2 * Hkv) * D)
    if need > torch.cuda.mem_get_info()[0]:
        ctx.skip(what, "needs about %.1f GiB of device memory, %.1f GiB free"
                 % (need / 2 ** 30, torch.cuda.mem_get_info()[0] / 2 ** 30))
        return
    try:  # bench/layer_inputs.h: fan-in K uniform in [-sqrt(3/K), sqrt(3/K)), wo twice that
        def w(n, k, scale=1.0):
            a = scale * math.sqrt(3.0 / k)
            return ctx.uniform((n, k), torch.bfloat16, -a, a)
        weights = [ctx.uniform((h,), torch.bfloat16, 0.75, 1.25), w((Hq + 2 * Hkv) * D, h), w(h, Hq * D, 2.0),
                   ctx.uniform((h,), torch.bfloat16, 0.75, 1.25), w(mlp, h), w(mlp, h), w(h, mlp)]
        k_cache = ctx.uniform((B, Hkv, L, D), torch.bfloat16)
        v_cache = ctx.uniform((B, Hkv, L, D), torch.bfloat16)
        x = ctx.uniform((B, S, h), torch.bfloat16)
        pos = (torch.full((B,), L - 1, dtype=torch.int32, device="cuda") if decode
               else default_positions(B, S, L, "cuda"))
    except torch.cuda.OutOfMemoryError as e:
        ctx.skip(what, "out of memory: %s" % e)
        return
    mode = op
    module = TorchLayer(*weights, k_cache, v_cache, mode=mode, kv_len=L)
    sets = [(x, pos)]

    def check(fn, notes):
        skips = counters["inductor"]["cudagraph_skips"] if counters is not None else 0
        t0 = time.monotonic()
        y = fn(sets[0])  # a compiled impl compiles here, outside the timing
        torch.cuda.synchronize()
        notes["first_call_s"] = "%.1f" % (time.monotonic() - t0)
        if notes.get("compile_mode") == "reduce-overhead" and counters is not None:
            n = counters["inductor"]["cudagraph_skips"] - skips
            notes["cudagraph_skips"] = str(n)
            if n:
                print("  note torch_compile %s: torch.compile skipped CUDA graphs; the row times the compiled "
                      "code without them" % what, file=sys.stderr, flush=True)
        if kl is not None:  # the same caches: each call writes its rows at pos before reading them
            ref = kl.layer(x, *weights, k_cache, v_cache, pos, mode=mode, kv_len=L)
            notes["validated_against"] = "kernel_ladder.layer (y, same tensors)"
        else:
            f32 = [t.float() for t in weights]
            ref = torch_layer(x.float(), *f32, k_cache.float(), v_cache.float(), pos, mode=mode, kv_len=L)
            notes["validated_against"] = "the PyTorch layer in fp32 (y; %s)" % why
        torch.cuda.synchronize()
        ok, err = compare(y, ref.double(), LAYER_TOL)
        notes["rel_l2_vs_reference"] = "%.3g" % err["rel_l2"]
        return ok, err, LAYER_TOL

    impls = [("torch", lambda s: module(*s), {})]
    if not ctx.args.no_compile:
        cmode = "reduce-overhead" if decode else "max-autotune-no-cudagraphs"
        try:
            if decode:  # the caches are updated in place: static addresses, so CUDA graphs may mutate them
                import importlib
                dynamo = importlib.import_module("torch._dynamo")
                for t in (k_cache, v_cache):
                    dynamo.mark_static_address(t)
            compiled = torch.compile(module, mode=cmode, dynamic=False)
            if decode:  # CUDA graphs: each call a new step (no output is kept across calls)
                def fn(s, c=compiled):
                    torch.compiler.cudagraph_mark_step_begin()
                    return c(*s)
            else:
                fn = lambda s, c=compiled: c(*s)
            impls.append(("torch_compile", fn, {"compile_mode": cmode}))
        except Exception as e:  # noqa: BLE001 (no Triton, unsupported platform ...)
            print("torch_baseline.py: torch.compile unavailable: %s" % e, file=sys.stderr)
    l2_res = ctx.l2 > 0 and nbytes <= 3 * ctx.l2
    for impl, fn, notes in impls:
        run_impls(ctx, "layer", op, "bf16", sh, [(impl, fn)], sets, 1, flops, nbytes,
                  lambda f, notes=notes: check(f, notes), seed, l2_res=l2_res, notes=notes)


# ----------------------------------------------------------------------------------------- main
ATTN_KEYS = ("B", "Hq", "Hkv", "Sq", "Skv", "D", "causal")


def is_layer_shape(d):
    """A --shape of family layer: names from bench_layer's (B,S,L,hidden,Hq,Hkv,D,mlp), S among them."""
    return "S" in d and set(d) <= set(LAYER_KEYS)


def parse_shape_arg(text):
    """'M=1,N=2,K=3' -> {'M': 1, 'N': 2, 'K': 3}; ValueError on anything else."""
    d = {}
    for part in text.split(","):
        k, eq, v = part.partition("=")
        k = k.strip()
        try:
            n = int(v)
        except ValueError:
            n = None
        if not eq or not k or n is None or k in d:
            raise ValueError("--shape '%s': expected name=integer,... (e.g. M=4096,N=4096,K=4096)" % text)
        d[k] = n
    return d


def shape_plan(fams, shape_args, quick):
    """[(family, shape lists)] to run: the default (or --quick) lists, or with --shape only those
    shapes: GEMM shapes M,N,K (any), attention B,Hq,Hkv,Sq,Skv,D,causal (any; Sq = 1 -> decode),
    row-op rows,cols (the default entries of that size, with their dtypes), layer B,S,L,hidden,Hq,Hkv,
    D,mlp (S required; bench_layer's defaults: B = 1, L = S, Llama-3-8B dims). ValueError if a
    --shape is malformed or no selected family takes it."""
    gemm_default = {"gemm_bf16": QUICK["gemm"] if quick else GEMM_SHAPES,
                    "sgemm": QUICK["sgemm"] if quick else SGEMM_SHAPES}
    if not shape_args:
        plan = []
        for fam in fams:
            if fam in ROW_SHAPES:
                plan.append((fam, [ROW_QUICK if quick else ROW_SHAPES[fam]]))
            elif fam in gemm_default:
                plan.append((fam, [gemm_default[fam]]))
            elif fam == "layer":
                plan.append((fam, [[layer_shape(*t) for t in (LAYER_QUICK if quick else LAYER_SHAPES)]]))
            else:
                plan.append((fam, [QUICK["attn"] if quick else ATTN_SHAPES,
                                   QUICK["decode"] if quick else DECODE_SHAPES]))
        return plan
    wanted = [parse_shape_arg(t) for t in shape_args]
    for t, d in zip(shape_args, wanted):
        if any(v < 1 for k, v in d.items() if k != "causal"):
            raise ValueError("--shape '%s': every size must be >= 1" % t)
        if set(d) == set(ATTN_KEYS) and (d["causal"] not in (0, 1) or d["Hq"] % d["Hkv"] or d["Sq"] > d["Skv"]):
            raise ValueError("--shape '%s': needs causal 0 or 1, Hkv dividing Hq and Sq <= Skv" % t)
        if is_layer_shape(d):
            ls = layer_shape(d.get("B", 1), d["S"], d.get("L", d["S"]), d)
            if ls["Hq"] % ls["Hkv"] or ls["S"] > ls["L"] or ls["D"] not in (64, 128):
                raise ValueError("--shape '%s': a layer shape needs Hkv dividing Hq, S <= L and D 64 or 128" % t)
    used = [False] * len(wanted)
    plan = []
    for fam in fams:
        lists = [[], []]
        for i, d in enumerate(wanted):
            keys = set(d)
            if fam in ROW_SHAPES and keys == {"rows", "cols"}:
                hit = [e for e in ROW_SHAPES[fam] if (e[0], e[1]) == (d["rows"], d["cols"])]
                lists[0] += hit
                used[i] = used[i] or bool(hit)
            elif fam in gemm_default and keys == {"M", "N", "K"}:
                lists[0].append((d["M"], d["N"], d["K"]))
                used[i] = True
            elif fam == "attention" and keys == set(ATTN_KEYS):
                lists[1 if d["Sq"] == 1 else 0].append(tuple(d[k] for k in ATTN_KEYS))
                used[i] = True
            elif fam == "layer" and is_layer_shape(d):
                lists[0].append(layer_shape(d.get("B", 1), d["S"], d.get("L", d["S"]), d))
                used[i] = True
        if lists[0] or lists[1]:
            plan.append((fam, lists))
    for i, ok in enumerate(used):
        if not ok:
            raise ValueError("--shape '%s': no selected family takes it (families: %s)"
                             % (shape_args[i], ", ".join(fams)))
    return plan


def main():
    ap = argparse.ArgumentParser(description="Time PyTorch on the bench shapes (same JSON schema).")
    ap.add_argument("--out", help="JSON lines file (appended); default stdout")
    ap.add_argument("--family", action="append", choices=FAMILIES,
                    help="family to run (repeatable); default all")
    ap.add_argument("--quick", action="store_true", help="one or two shapes per family, 30 iterations")
    ap.add_argument("--iters", type=int, default=100, help="timed launches per row (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed launches before timing")
    ap.add_argument("--seed", type=int, default=0, help="input seed; 0 = from the clock")
    ap.add_argument("--no-rotate", action="store_true", help="one input copy (rows may be L2-resident)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch_compile rows")
    ap.add_argument("--kernels", metavar="FILE",
                    help="time nothing: write the CUDA kernels one call of each eager / SDPA row launches "
                         "(torch.profiler) to FILE as one JSON object (no torch_compile rows, no layer)")
    ap.add_argument("--shape", action="append", default=[],
                    help="only this shape (repeatable), as the rows' shape_str: M=..,N=..,K=.. "
                         "(gemm_bf16, sgemm), B=..,Hq=..,Hkv=..,Sq=..,Skv=..,D=..,causal=.. "
                         "(attention; Sq=1 is a decode row), rows=..,cols=.. (a default row-op shape), "
                         "B=..,S=..,L=.. [,hidden=..,Hq=..,Hkv=..,D=..,mlp=..] (layer; S=1 is a decode row)")
    a = ap.parse_args()
    if a.iters < 1 or a.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    if a.kernels:
        if a.out:
            ap.error("--kernels writes its own file; --out is for timed rows")
        a.no_compile = True
        if a.family and "layer" in a.family:
            ap.error("--kernels leaves the layer family out")
    try:  # before anything needs PyTorch or a GPU: a bad flag is exit 2 everywhere
        plan = shape_plan(a.family or [f for f in FAMILIES if not (a.kernels and f == "layer")],
                          a.shape, a.quick)
    except ValueError as e:
        ap.error(str(e))
    if torch is None:
        die("PyTorch is not installed (pip install torch); nothing measured")
    if not torch.cuda.is_available():
        die("PyTorch sees no CUDA device (torch %s, CUDA %s); nothing measured"
            % (torch.__version__, torch.version.cuda))
    if a.quick and a.iters == 100:
        a.iters = 30
    TD.update({"f32": torch.float32, "bf16": torch.bfloat16})
    torch.backends.cuda.matmul.allow_tf32 = False  # SGEMM is compared with TF32 off
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        import importlib
        dynamo = importlib.import_module("torch._dynamo")
        for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                  "accumulated_recompile_limit"):
            if hasattr(dynamo.config, k):
                setattr(dynamo.config, k, 1024)  # one compile per shape, never fall back
    except Exception:
        pass
    ctx = Ctx(a)
    print("torch_baseline.py: torch %s on %s (cc %s, %d SMs, L2 %d MiB), %d iters, seed %d%s" % (
        torch.__version__, ctx.device["name"], ctx.device["cc"], ctx.device["sms"], ctx.l2 >> 20,
        a.iters, ctx.seed, "" if ctx.has_sleep else "; no torch.cuda._sleep: launch-bound rows possible"),
        file=sys.stderr, flush=True)
    t0 = time.monotonic()
    ctx.ramp(force=True)
    for fam, lists in plan:
        tf = time.monotonic()
        print("torch_baseline.py: %s" % fam, file=sys.stderr, flush=True)
        if fam in ROW_SHAPES:
            bench_rows(ctx, fam, lists[0])
        elif fam in ("gemm_bf16", "sgemm"):
            bench_gemm(ctx, fam, lists[0])
        elif fam == "attention":
            bench_attention(ctx, lists[0], "attention")
            bench_attention(ctx, lists[1], "decode")
        elif fam == "layer":
            bench_layer(ctx, lists[0])
        print("torch_baseline.py: %s done in %.1f s" % (fam, time.monotonic() - tf), file=sys.stderr,
              flush=True)
    if a.kernels:
        ctx.write_kernels(a.kernels)
        print("torch_baseline.py: kernels of %d rows, %d skipped, %d failed validation, %.1f s -> %s" % (
            len(ctx.kernels), ctx.skipped, ctx.failed, time.monotonic() - t0, a.kernels), file=sys.stderr)
        return 1 if ctx.failed else 0
    print("torch_baseline.py: %d rows, %d skipped, %d failed validation, %.1f s%s" % (
        ctx.rows, ctx.skipped, ctx.failed, time.monotonic() - t0,
        (" -> " + a.out) if a.out else ""), file=sys.stderr)
    return 1 if ctx.failed else 0


if __name__ == "__main__":
    sys.exit(main())
