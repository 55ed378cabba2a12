#!/usr/bin/env python3
"""What a call of each PyTorch op of python/kernel_ladder costs, against the native PyTorch op.

    python3 scripts/binding_overhead.py --out results/<device>/binding/rows.jsonl [--calls N]

Per op, on a small shape (where the launch, not the kernel, sets the time), three ways of calling:
  kernel_ladder  the public function called eagerly (argument checks, the output allocation, ctypes)
  custom_op      torch.ops.kernel_ladder.<op>: the dispatch that torch.compile traces
  ctypes         the C API function alone, outputs allocated up front (what the library call costs)
  torch          the native PyTorch op(s) a user would write for the same thing
Each is called --calls times in a row from Python with the GPU free to keep up; the figure is host
time per call (time.perf_counter over the loop, synchronized at both ends), the median of 7 repeats.
The outputs of the first two are checked against the third before timing. Writes one JSON line per
(op, way); report.py turns them into the table of docs/api.md. Needs PyTorch with CUDA and the
library (KL_C_LIBRARY or an installed package); exits 1 with a message otherwise.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def die(msg):
    print("binding_overhead.py: " + msg, file=sys.stderr)
    sys.exit(1)


try:
    import torch
    import torch.nn.functional as F
except ImportError:
    die("PyTorch is not installed")
if not torch.cuda.is_available():
    die("no CUDA GPU visible to PyTorch")
import kernel_ladder as kl  # noqa: E402
from kernel_ladder import _lib  # noqa: E402

if not os.path.exists(kl.library_path()):
    die("%s not found (build the target kl_c_api and set KL_C_LIBRARY)" % kl.library_path())


def per_call_us(fn, calls):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    reps = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        reps.append((time.perf_counter() - t0) * 1e6 / calls)
    return statistics.median(reps), min(reps), max(reps)


def cases():
    """(op, shape text, kernel_ladder call, custom-op call, ctypes call, torch call, output of the ctypes call)."""
    dev, bf = "cuda", torch.bfloat16
    L = _lib.lib()
    s = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
    out = []

    x = torch.randn(1, 4096, device=dev, dtype=bf)
    w = torch.randn(4096, device=dev, dtype=bf)
    y = torch.empty_like(x)
    ops = torch.ops.kernel_ladder
    out.append(("rmsnorm", "bf16 1x4096", lambda: kl.rmsnorm(x, w), lambda: ops.rmsnorm(x, w, 1e-6),
                lambda: L.kl_rmsnorm(x.data_ptr(), w.data_ptr(), y.data_ptr(), 1, 4096, 1e-6, _lib.KL_BF16, s()),
                lambda: F.rms_norm(x, (4096,), w, 1e-6), y))

    r0 = torch.randn(1, 4096, device=dev, dtype=bf)
    r1, r2, r3 = r0.clone(), r0.clone(), r0.clone()
    y2 = torch.empty_like(x)

    def torch_add_rms():
        r3.add_(x)
        return F.rms_norm(r3, (4096,), w, 1e-6)
    r4 = r0.clone()
    out.append(("add_rmsnorm", "bf16 1x4096", lambda: kl.add_rmsnorm(r1, x, w), lambda: ops.add_rmsnorm(r4, x, w, 1e-6),
                lambda: L.kl_add_rmsnorm(r2.data_ptr(), x.data_ptr(), w.data_ptr(), y2.data_ptr(), 1, 4096, 1e-6,
                                         _lib.KL_BF16, s()),
                torch_add_rms, None))

    g = torch.randn(1, 11008, device=dev, dtype=bf)
    u = torch.randn_like(g)
    y3 = torch.empty_like(g)
    out.append(("swiglu", "bf16 1x11008", lambda: kl.swiglu(g, u), lambda: ops.swiglu(g, u),
                lambda: L.kl_swiglu(g.data_ptr(), u.data_ptr(), y3.data_ptr(), 1, 11008, _lib.KL_BF16, s()),
                lambda: F.silu(g) * u, y3))

    z = torch.randn(1, 4096, device=dev, dtype=bf)
    y4 = torch.empty_like(z)
    out.append(("softmax", "bf16 1x4096", lambda: kl.softmax(z), lambda: ops.softmax(z),
                lambda: L.kl_softmax(z.data_ptr(), y4.data_ptr(), 1, 4096, _lib.KL_BF16, s()),
                lambda: torch.softmax(z, -1), y4))

    a = torch.randn(16, 256, device=dev, dtype=bf)
    wl = torch.randn(256, 256, device=dev, dtype=bf) / 16
    y5 = torch.empty(16, 256, device=dev, dtype=bf)
    nb = _lib.workspace_bytes(L.kl_linear_bf16_workspace_bytes, 16, 256, 256)
    ws = torch.zeros(max(nb, 1), dtype=torch.uint8, device=dev)
    out.append(("linear", "bf16 16x256x256", lambda: kl.linear(a, wl), lambda: ops.linear(a, wl),
                lambda: L.kl_linear_bf16(a.data_ptr(), wl.data_ptr(), y5.data_ptr(), 16, 256, 256, ws.data_ptr(),
                                         nb, s()),
                lambda: F.linear(a, wl), y5))

    q = torch.randn(1, 8, 1, 128, device=dev, dtype=bf)
    k = torch.randn(1, 8, 256, 128, device=dev, dtype=bf)
    v = torch.randn_like(k)
    o = torch.empty_like(q)
    nb2 = _lib.workspace_bytes(L.kl_attention_workspace_bytes, 1, 8, 8, 1, 256, 128, 1)
    ws2 = torch.zeros(max(nb2, 1), dtype=torch.uint8, device=dev)
    out.append(("attention", "decode B=1 H=8 Skv=256 D=128", lambda: kl.attention(q, k, v, causal=True),
                lambda: ops.attention(q, k, v, True, 0.0),
                lambda: L.kl_attention(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), 1, 8, 8, 1, 256, 128, 1,
                                       0.0, ws2.data_ptr(), nb2, s()),
                lambda: F.scaled_dot_product_attention(q, k, v, is_causal=False), o))
    return out


def main():
    ap = argparse.ArgumentParser(description="Per-call cost of the PyTorch ops against native PyTorch.")
    ap.add_argument("--out", help="JSON lines file (written anew); default stdout")
    ap.add_argument("--calls", type=int, default=2000, help="calls per timed loop (default 2000)")
    a = ap.parse_args()
    commit = subprocess.run(["bash", os.path.join(HERE, "commit_id.sh")], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    base = {"family": "binding", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "git_commit": commit, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    rows = []
    for op, shape, ours, custom, raw, native, raw_out in cases():
        ref = native()
        got = ours()
        via_op = custom()
        _lib.check(raw())
        torch.cuda.synchronize()
        for name, t in (("kernel_ladder", got), ("custom_op", via_op), ("ctypes", raw_out)):
            if t is not None and not torch.allclose(t.float(), ref.float(), atol=3e-2, rtol=3e-2):
                die("%s %s: output differs from PyTorch's" % (op, name))
        for impl, fn in (("kernel_ladder", ours), ("custom_op", custom), ("ctypes", lambda: _lib.check(raw())),
                         ("torch", native)):
            med, lo, hi = per_call_us(fn, a.calls)
            row = dict(base, op=op, impl=impl, shape_str=shape, us_per_call=round(med, 2), us_min=round(lo, 2),
                       us_max=round(hi, 2), calls=a.calls)
            rows.append(row)
            print("  %-12s %-30s %-14s %7.2f us/call" % (op, shape, impl, med), flush=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
