#!/usr/bin/env python3
"""Tables and charts from the bench JSON lines of one device.

    python3 scripts/report.py results/<device>/ [--readme README.md] [--docs docs] [--quiet]

Reads every results/<device>/*.jsonl (the rows of bench_<family>, bench_peak and
scripts/torch_baseline.py; the schema is docs/results-format.md) and writes

    results/<device>/tables.md            contents; headline; the entry point against the fastest
                                          library on every shape; roofs; head to head; then per
                                          family and op a rung list and rung-by-shape tables
    results/<device>/ladder_<family>.png  one bar per rung on the family's chart shapes, with the
                                          same-run reference and the fastest PyTorch as lines
    results/<device>/roofline.png         each chart shape's best rung, the entry point and the
                                          references, against the roofs measured by bench_peak

With --readme, also replaces the text between the README's markers (HEADLINE, RUN, and the optional
HEAD TO HEAD and GENERATED TABLES blocks); with --docs, the LADDER TABLE block of each
<docs>/<family>.md. Everything outside the markers is left as it is. Prints the headline table.

Rules:
  * One device per folder: rows from two devices are refused (exit 1, naming both and the file).
  * A malformed row is refused with its file:line (exit 1). Blank lines are allowed.
  * Several measurements of the same row (family, op, impl, variant, dtype, shape, l2_resident):
    the one with the latest timestamp is kept.
  * Ratios are time ratios, reference_median / row_median: above 1 means the row is faster.
    A reference (cuBLAS, cudaMemcpy) is taken from the same run (same timestamp and commit)
    when there is one; otherwise the latest one is used and the cell is marked with '*'.
  * % roof: achieved / attainable, attainable = min(compute ceiling, intensity x copy bandwidth)
    with the ceilings measured by bench_peak (wgmma bf16 for gemm_bf16/attention, falling back to
    mma.sync when the card has no wgmma row; fp32 FMA for sgemm; copy bandwidth alone for the row
    ops). The cell names the binding roof ('bw', 'wgmma', 'mma', 'fma').
  * % of read floor (decode rows): the row's rate over the read floor of its bytes, the fastest
    bench_peak read row (op read_*) at the nearest measured size at or above the row's bytes (else
    the largest): the rate a step that only reads those bytes can reach. The × ratio beside it is
    against the same-run cudaMemcpy, which also writes.

Python 3 standard library + matplotlib only.
"""
import argparse
import glob
import json
import math
import os
import re
import sys

FAMILY_ORDER = ["rmsnorm", "swiglu", "softmax", "rope", "sgemm", "gemm_bf16", "attention", "layer"]
TORCH_IMPLS = ["torch", "torch_compile", "torch_sdpa_flash", "torch_sdpa_cudnn"]
REF_IMPLS = ["cublas", "cudaMemcpy"]
MEMORY_OPS = {"rmsnorm", "add_rmsnorm", "swiglu", "softmax", "rope", "rope_kv", "decode"}
# Compute ceiling per family (bench_peak op names), in order of preference.
CEILINGS = {
    "gemm_bf16": [("wgmma_bf16", "wgmma"), ("mma_sync_bf16", "mma")],
    "attention": [("wgmma_bf16", "wgmma"), ("mma_sync_bf16", "mma")],
    "sgemm": [("fp32_fma", "fma")],
    "layer": [("wgmma_bf16", "wgmma"), ("mma_sync_bf16", "mma")],
}
COPY_OPS = ("copy_memcpy", "copy_kernel")
READ_PREFIX = "read_"  # bench_peak's read rows: read_stream, read_ldg_chunks, read_tma_bulk*, read_floor
FLOOR_OPS = {"decode"}  # ops also shown as a percentage of the read floor at their bytes

# The headline shapes: (family, op, dtype, dims that must match). The README's headline table shows
# the best kl rung against the reference and PyTorch on each of these.
HEADLINE = [
    ("rmsnorm", "rmsnorm", "bf16", {"rows": 16384, "cols": 8192}),
    ("rmsnorm", "add_rmsnorm", "bf16", {"rows": 16384, "cols": 8192}),
    ("swiglu", "swiglu", "bf16", {"rows": 16384, "cols": 8192}),
    ("softmax", "softmax", "bf16", {"rows": 16384, "cols": 8192}),
    ("sgemm", "sgemm", "f32", {"M": 4096, "N": 4096, "K": 4096}),
    ("gemm_bf16", "gemm", "bf16", {"M": 4096, "N": 4096, "K": 4096}),
    ("gemm_bf16", "gemm", "bf16", {"M": 8192, "N": 8192, "K": 8192}),
    ("gemm_bf16", "gemm", "bf16", {"M": 16, "N": 4096, "K": 4096}),
    ("attention", "attention", "bf16",
     {"B": 1, "Hq": 32, "Hkv": 32, "Sq": 4096, "Skv": 4096, "D": 128, "causal": 1}),
    ("attention", "attention", "bf16",
     {"B": 1, "Hq": 32, "Hkv": 32, "Sq": 4096, "Skv": 4096, "D": 128, "causal": 0}),
    ("attention", "decode", "bf16", {"B": 1, "Hq": 32, "Hkv": 8, "Sq": 1, "Skv": 32768, "D": 128}),
]

# Each family's ladder chart, and the ladder table of its design note: one panel per entry
# (op, dtype, dims, label). The reduced roofline plots these shapes too.
CHART = {
    "rmsnorm": [("rmsnorm", "bf16", {"rows": 16384, "cols": 8192}, "rmsnorm"),
                ("add_rmsnorm", "bf16", {"rows": 16384, "cols": 8192}, "add + rmsnorm")],
    "swiglu": [("swiglu", "bf16", {"rows": 16384, "cols": 8192}, "swiglu")],
    "softmax": [("softmax", "bf16", {"rows": 16384, "cols": 8192}, "softmax")],
    "rope": [("rope", "bf16", {"B": 1, "S": 16384, "Hq": 32, "Hkv": 8, "D": 128}, "rope T=16384"),
             ("rope_kv", "bf16", {"B": 1, "S": 16384, "Hq": 32, "Hkv": 8, "D": 128}, "rope + KV cache T=16384")],
    "sgemm": [("sgemm", "f32", {"M": 4096, "N": 4096, "K": 4096}, "sgemm 4096³")],
    "gemm_bf16": [("gemm", "bf16", {"M": 4096, "N": 4096, "K": 4096}, "bf16 GEMM 4096³"),
                  ("gemm", "bf16", {"M": 16, "N": 4096, "K": 4096}, "decode GEMM M=16")],
    "attention": [("attention", "bf16", {"B": 1, "Hq": 32, "Hkv": 32, "Sq": 4096, "Skv": 4096, "D": 128,
                                         "causal": 1}, "attention causal S=4096"),
                  ("decode", "bf16", {"B": 1, "Hq": 32, "Hkv": 8, "Sq": 1, "Skv": 32768, "D": 128},
                   "decode attention")],
    "layer": [("prefill", "bf16", {"B": 1, "S": 4096, "L": 4096, "hidden": 4096, "Hq": 32, "Hkv": 8, "D": 128,
                                   "mlp": 14336}, "Llama-3-8B layer prefill S=4096"),
              ("decode", "bf16", {"B": 16, "S": 1, "L": 4096, "hidden": 4096, "Hq": 32, "Hkv": 8, "D": 128,
                                  "mlp": 14336}, "Llama-3-8B layer decode B=16")],
}
# Rows of a library doing the same op (the entry point is compared with the fastest of them).
LIBRARY_IMPLS = ["cublas"] + TORCH_IMPLS
BEGIN_LADDER, END_LADDER = "<!-- BEGIN LADDER TABLE -->", "<!-- END LADDER TABLE -->"
# The layer's per-step breakdown (bench_layer's "<op>_step" rows) in docs/layer.md.
BEGIN_STEPS, END_STEPS = "<!-- BEGIN LAYER STEPS -->", "<!-- END LAYER STEPS -->"
BEGIN_RUN, END_RUN = "<!-- BEGIN RUN -->", "<!-- END RUN -->"

BEGIN_TABLES, END_TABLES = "<!-- BEGIN GENERATED TABLES -->", "<!-- END GENERATED TABLES -->"
BEGIN_HEAD, END_HEAD = "<!-- BEGIN HEADLINE -->", "<!-- END HEADLINE -->"
# Optional in the README: the head to head's ratios (scripts/h2h.py's rows in <folder>/h2h/).
BEGIN_H2H, END_H2H = "<!-- BEGIN HEAD TO HEAD -->", "<!-- END HEAD TO HEAD -->"


def read_jsonl(path):
    """The rows of a JSON lines file (blank lines skipped); a malformed line is a ReportError."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise ReportError("%s:%d: %s" % (path, n, e))
    return rows


def h2h_section(folder, link_prefix):
    """Markdown for the head to head of <folder>/h2h/rows.jsonl (scripts/h2h.py), or a line saying
    the run has none."""
    path = os.path.join(folder, "h2h", "rows.jsonl")
    if not os.path.exists(path):
        return "No head to head in this run (`scripts/h2h.py`; `KL_NO_H2H=1` skips it).\n"
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import h2h
    rows = read_jsonl(path)
    lines, rounds = h2h.summary(rows)
    commit = next((r.get("git_commit") for r in rows if r.get("git_commit")), "unknown")
    return "\n".join(["Generated by `scripts/report.py` from `%s/h2h/rows.jsonl` (commit %s, %d rounds, arms "
                      "interleaved; `docs/method.md` section 12); every row's times, clocks and spreads are in "
                      "[%s/h2h/table.md](%s/h2h/table.md). Ratios: the library's best round over ours "
                      "(above 1.000 ours is faster)." % (link_prefix, commit, rounds, link_prefix, link_prefix),
                      ""] + lines) + "\n"

# docs/api.md: the binding's per-call cost (scripts/binding_overhead.py's rows in <folder>/binding/).
BEGIN_BIND, END_BIND = "<!-- BEGIN BINDING TABLE -->", "<!-- END BINDING TABLE -->"


def binding_table(folder, link_prefix):
    """Markdown for <folder>/binding/rows.jsonl (scripts/binding_overhead.py): per op, microseconds per
    call of the PyTorch op, of its C API call alone and of native PyTorch, from one run."""
    path = os.path.join(folder, "binding", "rows.jsonl")
    if not os.path.exists(path):
        return "No binding rows in this run (`scripts/binding_overhead.py`, run by `scripts/run_all.sh` " \
               "where PyTorch is installed).\n"
    rows = read_jsonl(path)
    by = {}
    for r in rows:
        by.setdefault((r["op"], r["shape_str"]), {})[r["impl"]] = r["us_per_call"]
    body = []
    for (op, shape), t in by.items():
        ours, raw, native = t.get("kernel_ladder"), t.get("ctypes"), t.get("torch")
        f = lambda v: "—" if v is None else "%.1f" % v  # noqa: E731
        body.append([op, shape, f(ours), f(t.get("custom_op")), f(raw), f(native),
                     "—" if ours is None or native is None else "%+.1f" % (ours - native)])
    r0 = rows[0] if rows else {}
    head = ("Generated by `scripts/report.py` from `%s/binding/rows.jsonl` (%s, PyTorch %s, commit %s). "
            "Microseconds per call, median of 7 loops of %s calls." % (
                link_prefix, r0.get("gpu", "?"), r0.get("torch", "?"), r0.get("git_commit", "?"), r0.get("calls", "?")))
    return head + "\n\n" + md_table(["op", "shape", "kernel_ladder.<op>", "torch.ops dispatch", "C API alone",
                                      "PyTorch", "kernel_ladder − PyTorch"], body)


REQUIRED = {
    "family": str, "op": str, "impl": str, "variant": int, "variant_name": str, "dtype": str,
    "shape": dict, "shape_str": str, "median_ms": (int, float), "device": dict, "timestamp": str,
}


class ReportError(Exception):
    pass


# ------------------------------------------------------------------------------------------ input
def check_row(obj):
    """Returns '' if `obj` is a usable row, else what is wrong with it."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    for k, t in REQUIRED.items():
        if k not in obj:
            return "missing field '%s'" % k
        v = obj[k]
        if isinstance(v, bool) or not isinstance(v, t):
            return "field '%s' has the wrong type (%s)" % (k, type(v).__name__)
    if not (obj["median_ms"] > 0 and math.isfinite(obj["median_ms"])):
        return "median_ms must be a positive number"
    if not isinstance(obj["device"].get("name"), str) or not obj["device"]["name"]:
        return "device.name missing"
    for k in ("flops", "bytes"):
        v = obj.get(k, 0)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            return "field '%s' must be a non-negative number" % k
    for k, v in obj["shape"].items():
        if isinstance(v, bool) or not isinstance(v, int):
            return "shape dim '%s' is not an integer" % k
    return ""


def load_rows(folder):
    files = sorted(glob.glob(os.path.join(folder, "*.jsonl")))
    if not files:
        raise ReportError("no *.jsonl files in %s" % folder)
    rows = []
    device = None  # (name, where)
    for path in files:
        base = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                where = "%s:%d" % (path, lineno)
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ReportError("%s: malformed row: %s" % (where, e))
                why = check_row(obj)
                if why:
                    raise ReportError("%s: malformed row: %s" % (where, why))
                name = obj["device"]["name"]
                if device is None:
                    device = (name, where)
                elif name != device[0]:
                    raise ReportError(
                        "%s mixes devices: '%s' (first seen at %s) and '%s' at %s; "
                        "one folder per device" % (folder, device[0], device[1], name, where))
                obj["_where"] = where
                obj["_file"] = base
                obj["_order"] = len(rows)
                rows.append(obj)
    return rows


def row_key(r):
    """A row's identity; a launch breakdown's step rows also carry the rung they belong to."""
    of = r.get("notes", {}).get("of", "") if r["op"].endswith("_step") else ""
    return (r["family"], r["op"], r["impl"], r["variant"], r["variant_name"], r["dtype"],
            r["shape_str"], bool(r.get("l2_resident", False)), of)


def dedupe(rows):
    """Keeps the latest timestamp of each row key (ties: the later line), in first-seen order."""
    best, first = {}, {}
    for r in rows:
        k = row_key(r)
        first.setdefault(k, r["_order"])
        if k not in best or r["timestamp"] >= best[k]["timestamp"]:
            best[k] = r
    out = list(best.values())
    for r in out:
        r["_order"] = first[row_key(r)]
    out.sort(key=lambda r: r["_order"])
    return out


def read_env(folder):
    """Optional results/<device>/env.txt (key=value lines written by scripts/run_all.sh)."""
    env = {}
    p = os.path.join(folder, "env.txt")
    if os.path.exists(p):
        with open(p, encoding="utf-8") as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k.strip()] = v.strip()
    return env


# ------------------------------------------------------------------------------------------ math
def tflops(r):
    f = r.get("flops") or 0
    return f / r["median_ms"] / 1e9 if f > 0 else None


def gbps(r):
    b = r.get("bytes") or 0
    return b / r["median_ms"] / 1e6 if b > 0 else None


def memory_bound(r):
    if r["op"] in MEMORY_OPS or not (r.get("flops") or 0):
        return True
    return r["family"] == "gemm_bf16" and r["shape"].get("M", 1 << 30) <= 64


def roofs(rows):
    """Measured roofs from the peak rows: {'copy': GB/s, 'wgmma_bf16': TFLOP/s, ...}."""
    out = {}
    for r in rows:
        if r["family"] != "peak":
            continue
        if r["op"] in COPY_OPS and r.get("gbps"):
            out["copy"] = max(out.get("copy", 0), gbps(r) or r["gbps"])
            out.setdefault("copy_by", {})[r["op"]] = gbps(r) or r["gbps"]
        elif r.get("flops"):
            out[r["op"]] = max(out.get(r["op"], 0), tflops(r))
    return out


def read_floor(rows, nbytes):
    """(GB/s, row) of the fastest DRAM-sized bench_peak read row at the smallest measured size at or
    above `nbytes`, else at the largest size; (None, None) without read rows. A size up to 1% below
    `nbytes` counts as at or above it: a decode row's bytes add Q and O to the K + V bytes that
    bench_peak's sizes are."""
    reads = [r for r in rows if r["family"] == "peak" and r["op"].startswith(READ_PREFIX)
             and not r.get("l2_resident") and r.get("ok", True) and gbps(r)]
    if not reads:
        return None, None
    sizes = sorted({r["bytes"] for r in reads})
    size = next((b for b in sizes if b >= 0.99 * nbytes), sizes[-1])
    best = max((r for r in reads if r["bytes"] == size), key=gbps)
    return gbps(best), best


def ceiling_for(family, rf):
    for op, label in CEILINGS.get(family, []):
        if op in rf:
            return rf[op], label
    return None, None


def pct_roof(r, rf):
    """(percent, binding roof label) or (None, None)."""
    bw = rf.get("copy")
    if memory_bound(r) and not (r.get("flops") or 0):
        g = gbps(r)
        return (100.0 * g / bw, "bw") if (g and bw) else (None, None)
    t = tflops(r)
    if t is None:
        return None, None
    ceil, label = ceiling_for(r["family"], rf)
    b = r.get("bytes") or 0
    cands = []
    if ceil:
        cands.append((ceil, label))
    if bw and b > 0:
        cands.append((r["flops"] / b * bw / 1000.0, "bw"))
    if not cands:
        return None, None
    att, label = min(cands)
    return 100.0 * t / att, label


# ------------------------------------------------------------------------------------------ format
def fmt_mhz(r):
    """A row's average SM clock while it was timed, in MHz, or a dash."""
    c = r.get("clock_mhz") if r else None
    return "%.0f" % c if isinstance(c, (int, float)) and c > 0 else "—"


def fmt_ms(x):
    if x is None:
        return "—"
    if x >= 100:
        return "%.1f" % x
    if x >= 1:
        return "%.3f" % x
    return "%.4f" % x


def fmt_rate(x, digits):
    return "—" if x is None else ("%.*f" % (digits, x))


def fmt_ratio(x, mark=""):
    return "—" if x is None else "%.2f×%s" % (x, mark)


def fmt_floor(pct):
    return "%.0f%% of read floor" % pct


def short_shape(shape):
    """"16384×8192", "4096×4096×4096", "B=1 H=32/8 S=1/32768 D=128 causal", "B=1 S=4096 H=32/8 D=128 L=4096",
    "B=1 S=4096 L=4096 hidden=4096 H=32/8 D=128 mlp=14336" for charts and headlines."""
    k = set(shape)
    if k == {"rows", "cols"}:
        return "%d×%d" % (shape["rows"], shape["cols"])
    if k == {"M", "N", "K"}:
        return "%d×%d×%d" % (shape["M"], shape["N"], shape["K"])
    if {"B", "Hq", "Hkv", "Sq", "Skv", "D"} <= k:
        s = "B=%d H=%d/%d S=%d/%d D=%d" % (shape["B"], shape["Hq"], shape["Hkv"], shape["Sq"],
                                          shape["Skv"], shape["D"])
        return s + (" causal" if shape.get("causal") else "")
    if k == {"B", "S", "L", "hidden", "Hq", "Hkv", "D", "mlp"}:
        return "B=%d S=%d L=%d hidden=%d H=%d/%d D=%d mlp=%d" % (
            shape["B"], shape["S"], shape["L"], shape["hidden"], shape["Hq"], shape["Hkv"], shape["D"], shape["mlp"])
    if k == {"B", "S", "Hq", "Hkv", "D", "L"}:
        return "B=%d S=%d H=%d/%d D=%d L=%d" % (shape["B"], shape["S"], shape["Hq"], shape["Hkv"], shape["D"],
                                               shape["L"])
    return ",".join("%s=%s" % kv for kv in shape.items())


def rate_of(r):
    """(value, unit): GB/s for memory-bound rows, TFLOP/s otherwise."""
    return (gbps(r), "GB/s") if memory_bound(r) else (tflops(r), "TFLOP/s")


def fmt_value(v, unit):
    return "—" if v is None else ("%.0f" % v if unit == "GB/s" else "%.1f" % v)


def rung_label(r):
    if r["impl"] == "kl":
        return "auto" if r["variant"] < 0 else "%02d" % r["variant"]
    return r["impl"]


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    return "\n".join(out)


def impl_rank(r):
    i = r["impl"]
    if i == "kl":
        return (0, r["variant"] if r["variant"] >= 0 else 10 ** 6)
    if i in REF_IMPLS:
        return (1, REF_IMPLS.index(i))
    if i in TORCH_IMPLS:
        return (2, TORCH_IMPLS.index(i))
    return (3, 0)


def read_torch_kernels(folder):
    """torch_kernels.json (torch_baseline.py --kernels) of the folder: its rows, or {} without one.
    A malformed file is an error, as a malformed row is."""
    path = os.path.join(folder, "torch_kernels.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
        rows = obj["rows"]
        if not isinstance(rows, dict):
            raise ValueError("'rows' is not an object")
        for key, ks in rows.items():
            ok = (isinstance(ks, dict) and "error" in ks) or (isinstance(ks, list) and all(
                isinstance(k, dict) and isinstance(k.get("name"), str) and isinstance(k.get("n", 1), int)
                and isinstance(k.get("us", 0.0), (int, float)) for k in ks))
            if not ok:
                raise ValueError("row '%s': neither a list of {name, n, us} nor {error}" % key)
    except (ValueError, KeyError, TypeError) as e:
        raise ReportError("%s: malformed: %s" % (path, e))
    return rows


def kernels_text(ks, top=3, width=72):
    """The heaviest `top` kernels of a torch_kernels.json entry: name (shortened) x count, us."""
    if isinstance(ks, dict):
        return "profiler: %s" % ks.get("error", "?")
    if not ks:
        return "no CUDA kernel"
    parts = []
    for k in ks[:top]:
        name = str(k.get("name", "?")).replace("|", "/")
        if len(name) > width:
            name = name[:width - 1] + "…"
        parts.append("`%s`%s %.1f us" % (name, " ×%d" % k["n"] if k.get("n", 1) > 1 else "", k.get("us", 0.0)))
    more = "" if len(ks) <= top else " + %d more" % (len(ks) - top)
    return "; ".join(parts) + more


# ------------------------------------------------------------------------------------------ model
class Report:
    def __init__(self, folder, rows, env):
        self.folder = folder
        self.env = env
        self.rows = dedupe(rows)
        self.rf = roofs(self.rows)
        self.groups = {}  # (family, op) -> [rows]
        self.steps = [r for r in self.rows if r["op"].endswith("_step")]  # a launch's breakdown
        self.kernels = read_torch_kernels(folder)  # "family|op|impl|dtype|shape_str" -> kernels
        for r in self.rows:
            if r["family"] != "peak" and not r["op"].endswith("_step"):
                self.groups.setdefault((r["family"], r["op"]), []).append(r)

    def families(self):
        fams = sorted({f for f, _ in self.groups},
                      key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER else 99, f))
        return fams

    def ops(self, family):
        ops = [(min(x["_order"] for x in rs), op) for (f, op), rs in self.groups.items()
               if f == family]
        return [op for _, op in sorted(ops)]

    def shapes(self, family, op):
        """(dtype, shape_str, l2_resident) in first-seen order."""
        seen = {}
        for r in self.groups[(family, op)]:
            k = (r["dtype"], r["shape_str"], bool(r.get("l2_resident", False)))
            seen.setdefault(k, r["_order"])
        return [k for k, _ in sorted(seen.items(), key=lambda kv: kv[1])]

    def rows_at(self, family, op, shape_key):
        dt, ss, l2 = shape_key
        rs = [r for r in self.groups[(family, op)]
              if r["dtype"] == dt and r["shape_str"] == ss and bool(r.get("l2_resident")) == l2]
        return sorted(rs, key=impl_rank)

    @staticmethod
    def reference(r, rs):
        """(reference row, different_run) for `r` among the rows of its shape, or (None, False)."""
        refs = [x for x in rs if x["impl"] in REF_IMPLS and x is not r]
        if not refs or r["impl"] in REF_IMPLS:
            return None, False
        # The timed reference row is named after its impl ("cublas"); prefer it over any other.
        refs.sort(key=lambda x: (x["variant_name"] != x["impl"], x["_order"]))
        same = [x for x in refs if x["timestamp"] == r["timestamp"]
                and x.get("git_commit") == r.get("git_commit")]
        if same:
            return same[0], False
        return max(refs, key=lambda x: x["timestamp"]), r["impl"] == "kl"

    def floor_pct(self, r):
        """(percent of the read floor at r's bytes, floor row) for a decode row that is not a copy
        reference, else (None, None)."""
        if r["op"] not in FLOOR_OPS or r["impl"] in REF_IMPLS or not gbps(r) or not r.get("ok", True):
            return None, None
        g, f = read_floor(self.rows, r["bytes"])
        return (100.0 * gbps(r) / g, f) if g else (None, None)

    @staticmethod
    def torch_row(impl, rs):
        ts = [x for x in rs if x["impl"] == impl]
        return ts[0] if ts else None

    def op_table(self, family, op, shape_keys=None, compact=False):
        keys = shape_keys if shape_keys is not None else self.shapes(family, op)
        all_rows = [r for k in keys for r in self.rows_at(family, op, k)]
        if not all_rows:
            return "", False
        ref_impls = [i for i in REF_IMPLS if any(r["impl"] == i for r in all_rows)]
        torch_impls = [i for i in TORCH_IMPLS if any(r["impl"] == i for r in all_rows)]
        header = ["rung", "name", "change"]
        if not compact:
            header += ["shape", "dtype"]
        header += ["median ms", "TFLOP/s", "GB/s", "% roof"]
        if ref_impls:
            header.append("× " + ref_impls[0] if len(ref_impls) == 1 else "× ref")
        header += ["× " + i for i in torch_impls]
        header += ["ok", "L2"]
        body = []
        marked = False
        for k in keys:
            rs = self.rows_at(family, op, k)
            for r in rs:
                pct, lab = pct_roof(r, self.rf)
                name = r["variant_name"]
                picked = (r.get("notes") or {}).get("picked")
                if r["impl"] == "kl" and r["variant"] < 0 and picked:
                    name = "auto → %s" % picked  # the rung the entry point chose
                cells = [rung_label(r), name, r.get("change", "")]
                if not compact:
                    cells += [r["shape_str"], r["dtype"]]
                cells += [fmt_ms(r["median_ms"]), fmt_rate(tflops(r), 1), fmt_rate(gbps(r), 0),
                          "—" if pct is None else "%.0f%% %s" % (pct, lab)]
                if ref_impls:
                    ref, other = self.reference(r, rs)
                    if ref is None:
                        cells.append("—")
                    else:
                        marked |= other
                        ratio = ref["median_ms"] / r["median_ms"]
                        tag = "" if len(ref_impls) == 1 else " " + ref["impl"]
                        cells.append(fmt_ratio(ratio, ("*" if other else "") + tag))
                for ti in torch_impls:
                    t = self.torch_row(ti, rs)
                    if t is None or r["impl"] in TORCH_IMPLS:
                        cells.append("—")
                    else:
                        cells.append(fmt_ratio(t["median_ms"] / r["median_ms"]))
                cells.append("ok" if r.get("ok", True) else "FAIL")
                cells.append("L2-resident" if r.get("l2_resident") else "")
                body.append(cells)
        return md_table(header, body), marked

    # -------------------------------------------------------------------------------- headline
    def headline_pick(self, family, op, dtype, dims):
        """((dtype, shape_str, l2_resident), rows) of the DRAM-sized shape matching `dims`, or None."""
        if (family, op) not in self.groups:
            return None
        for k in self.shapes(family, op):
            if k[0] != dtype or k[2]:
                continue
            rs = self.rows_at(family, op, k)
            shp = rs[0]["shape"]
            if all(shp.get(d) == v for d, v in dims.items()):
                return k, rs
        return None

    @staticmethod
    def best_rung(rs):
        kl = [r for r in rs if r["impl"] == "kl" and r["variant"] >= 0 and r.get("ok", True)]
        return min(kl, key=lambda r: r["median_ms"]) if kl else None

    @staticmethod
    def auto_row(rs):
        a = [r for r in rs if r["impl"] == "kl" and r["variant"] < 0 and r.get("ok", True)]
        return a[0] if a else None

    @staticmethod
    def fastest(rs, impls):
        cand = [r for r in rs if r["impl"] in impls and r.get("ok", True)]
        return min(cand, key=lambda r: r["median_ms"]) if cand else None

    def headline(self):
        header = ["op", "shape", "best rung", "rate", "entry point (× ref)", "reference", "best rung × ref",
                  "best rung % of read floor", "fastest PyTorch", "best rung × PyTorch", "SM MHz rung / ref"]
        body = []
        floors = False
        for family, op, dtype, dims in HEADLINE:
            got = self.headline_pick(family, op, dtype, dims)
            if not got:
                continue
            k, rs = got
            best = self.best_rung(rs)
            if best is None:
                continue
            v, unit = rate_of(best)

            def rate(r):  # r's speed on best's scale: best's rate x best's time / r's time
                return "%s %s" % (fmt_value(v * best["median_ms"] / r["median_ms"], unit), unit)
            ref, other = self.reference(best, rs)
            tbest = self.fastest(rs, TORCH_IMPLS)
            auto = self.auto_row(rs)
            auto_cell = "—"
            if auto:
                auto_cell = "→ %s" % (auto.get("notes") or {}).get("picked", "?")
                if ref:
                    auto_cell += " (%s)" % fmt_ratio(ref["median_ms"] / auto["median_ms"])

            pct, _ = self.floor_pct(best)
            floors |= pct is not None
            body.append([
                op, "%s %s" % (dtype, short_shape(best["shape"])),
                "%02d %s" % (best["variant"], best["variant_name"]), rate(best), auto_cell,
                "%s %s" % (ref["impl"], rate(ref)) if ref else "—",
                fmt_ratio(ref["median_ms"] / best["median_ms"], "*" if other else "") if ref else "—",
                "—" if pct is None else "%.0f%%" % pct,
                "%s %s" % (tbest["impl"], rate(tbest)) if tbest else "—",
                fmt_ratio(tbest["median_ms"] / best["median_ms"]) if tbest else "—",
                "%s / %s" % (fmt_mhz(best), fmt_mhz(ref)),
            ])
        if not floors:  # no read floor measured: no column
            header.pop(7)
            for row in body:
                row.pop(7)
        return md_table(header, body) if body else "(no headline rows yet)"

    def context_line(self):
        kl = [r for r in self.rows if r["impl"] not in TORCH_IMPLS] or self.rows
        last = max(kl, key=lambda r: r["timestamp"])
        d = last["device"]
        date = last["timestamp"][:10]
        drv = self.env.get("driver_version")
        dint = last.get("driver") or 0
        rt = last.get("cuda_runtime") or 0
        drv_s = ("driver %s (CUDA %d.%d)" % (drv, dint // 1000, (dint % 1000) // 10) if drv
                 else "driver CUDA %d.%d" % (dint // 1000, (dint % 1000) // 10))
        parts = ["%s (cc %s, %s SMs, L2 %.0f MiB)" % (d["name"], d.get("cc", "?"), d.get("sms", "?"),
                                                      (d.get("l2_bytes") or 0) / 2 ** 20),
                 "measured %s" % date, drv_s, "CUDA runtime %d.%d" % (rt // 1000, (rt % 1000) // 10)]
        tv = sorted({r.get("notes", {}).get("torch") for r in self.rows
                     if r["impl"] in TORCH_IMPLS and r.get("notes", {}).get("torch")})
        if tv:
            parts.append("PyTorch " + ", ".join(tv))
        commits = sorted({r.get("git_commit", "?") for r in kl})
        parts.append("commit " + ", ".join(commits))
        return " · ".join(parts)

    def run_line(self):
        """How long the two commands took on this card (env.txt of run_all.sh, test.log of test.sh)."""
        e = self.env
        parts = []
        secs = [int(e[k]) for k in ("build_seconds", "bench_seconds", "h2h_seconds") if e.get(k, "").isdigit()]
        if secs:
            total = sum(secs)
            detail = ["build %.0f s" % float(e["build_seconds"])] if e.get("build_seconds", "").isdigit() else []
            if e.get("bench_seconds", "").isdigit():
                detail.append("benches and PyTorch %.1f min" % (int(e["bench_seconds"]) / 60.0))
            detail.append("head to head %.1f min" % (int(e["h2h_seconds"]) / 60.0)
                          if e.get("h2h_seconds", "").isdigit() else "no head to head")
            parts.append("`scripts/run_all.sh` took %.0f min on the %s (%s; commit %s)." % (
                total / 60.0, e.get("gpu", "GPU"), ", ".join(detail), e.get("git_commit", "?")))
        tl = os.path.join(self.folder, "test.log")
        if os.path.exists(tl):
            with open(tl, encoding="utf-8", errors="replace") as f:
                text = f.read()
            took = re.findall(r"test\.sh: finished in (\d+) s", text)
            # ctest: "100% tests passed out of 179", or "97% tests passed, 5 tests failed out of 179"
            res = re.findall(r"(\d+)% tests passed(?:, (\d+) tests failed)? out of (\d+)", text)
            commit = re.findall(r"test\.sh: commit (\S+)", text)
            if took and res:
                _, failed, total = res[-1]
                failed = failed or "0"
                parts.append("`scripts/test.sh` took %.0f min there (build and %s tests, %s failed%s)." % (
                    int(took[-1]) / 60.0, total, failed, "; commit %s" % commit[-1] if commit else ""))
        return " ".join(parts) if parts else "No timing of the two commands in this folder."

    def roofs_table(self):
        peak = [r for r in self.rows if r["family"] == "peak"]
        if not peak:
            return "No bench_peak rows in this folder: no measured roofs, so no % roof figures."
        body = []
        for r in peak:
            if r["op"] in COPY_OPS:
                val = "%.0f GB/s (read + write)" % (gbps(r) or r.get("gbps") or 0)
            elif r["op"].startswith(READ_PREFIX):
                best_of = (r.get("notes") or {}).get("best_of")
                val = "%.0f GB/s (read%s)" % (gbps(r) or r.get("gbps") or 0, "; fastest: " + best_of if best_of else "")
            elif r["op"] == "launch_empty":
                g = r.get("graph_ms")
                val = "%.2f us a launch, %s back to back" % (
                    1e3 * r["median_ms"], "—" if g is None else "%.2f us" % (1e3 * g))
            else:
                t = tflops(r)
                val = "—" if t is None else "%.1f TFLOP/s" % t
            clk = r.get("clock_mhz")
            body.append([r["op"], r["impl"], r.get("shape_str", ""), val,
                         "—" if clk is None else "%.0f" % clk, fmt_ms(r["median_ms"])])
        return md_table(["roof", "impl", "shape", "measured", "SM clock MHz", "median ms"], body)

    # -------------------------------------------------------------------------------- tables
    def entry_vs_library(self):
        """The entry point against the fastest library row, on every shape that has both."""
        body, behind, n = [], 0, 0
        for fam in self.families():
            for op in self.ops(fam):
                for k in self.shapes(fam, op):
                    rs = self.rows_at(fam, op, k)
                    auto, lib = self.auto_row(rs), self.fastest(rs, LIBRARY_IMPLS)
                    if not auto or not lib:
                        continue
                    n += 1
                    ratio = lib["median_ms"] / auto["median_ms"]
                    flag = ""
                    if ratio < 0.98:
                        behind += 1
                        flag = "behind"
                    body.append([fam, op, k[0], k[1] + (" (L2)" if k[2] else ""),
                                 (auto.get("notes") or {}).get("picked", "?"), fmt_ms(auto["median_ms"]),
                                 lib["impl"], fmt_ms(lib["median_ms"]), "%.3f" % ratio,
                                 "%s / %s" % (fmt_mhz(auto), fmt_mhz(lib)), flag])
        if not body:
            return "No shape has both an entry-point row and a library row."
        head = ("The entry point (`auto`) is behind the fastest library row (cuBLAS, PyTorch eager, "
                "`torch.compile`, SDPA flash / cuDNN) by more than 2%% on %d of %d shapes. Ratio: "
                "library time / entry-point time (above 1 the entry point is faster); the PyTorch "
                "rows come from another process of the same run. SM MHz: each row's average SM clock "
                "while it was timed (a row far below the other ran on a throttled card)." % (behind, n))
        return head + "\n\n" + md_table(["family", "op", "dtype", "shape", "auto →", "auto ms",
                                         "fastest library", "library ms", "ratio", "SM MHz auto / library",
                                         ""], body)

    def library_kernels(self):
        """Per shape of the entry-point table: the kernels the fastest PyTorch row (eager or SDPA)
        launched in one call, from torch_kernels.json; "" without that file."""
        if not self.kernels:
            return ""
        body = []
        for fam in self.families():
            for op in self.ops(fam):
                for k in self.shapes(fam, op):
                    rs = self.rows_at(fam, op, k)
                    if not self.auto_row(rs):
                        continue
                    cand = [(r, self.kernels.get("|".join([fam, op, r["impl"], r["dtype"], r["shape_str"]])))
                            for r in rs if r["impl"] in TORCH_IMPLS and r.get("ok", True)]
                    cand = [(r, ks) for r, ks in cand if ks is not None]
                    if not cand:
                        continue
                    r, ks = min(cand, key=lambda c: c[0]["median_ms"])
                    body.append([fam, op, k[0], k[1], r["impl"], fmt_ms(r["median_ms"]), kernels_text(ks)])
        if not body:
            return ""
        head = ("What the fastest PyTorch row (eager or SDPA; `torch.compile`'s generated kernels are not "
                "recorded) launches in one call at each shape of the table above, heaviest first, from "
                "`torch_kernels.json` (`scripts/torch_baseline.py --kernels`, a process of its own: "
                "microseconds under the profiler, not the rows' timing).")
        return head + "\n\n" + md_table(["family", "op", "dtype", "shape", "PyTorch row", "row ms",
                                          "kernels"], body)

    def rung_list(self, family, op):
        """One line per rung (and reference, PyTorch row) of an op: its name and its change, once."""
        seen, body = {}, []
        for r in sorted(self.groups[(family, op)], key=impl_rank):
            key = (r["impl"], r["variant"])
            if key in seen:
                continue
            seen[key] = True
            parent = r.get("parent")
            body.append([rung_label(r), r["variant_name"],
                         "%02d" % parent if isinstance(parent, int) and parent >= 0 else "",
                         r.get("change", "")])
        if not any(b[2] for b in body):
            return md_table(["rung", "name", "change"], [[b[0], b[1], b[3]] for b in body])
        return md_table(["rung", "name", "parent", "change"], body)

    def rung_by_shape(self, family, op, per_table=5):
        """Rungs down, shapes across (in chunks): each cell the rung's rate on that shape and its
        ratio to the same-run reference; the best rung of a shape in bold."""
        keys = self.shapes(family, op)
        out, marked, floors = [], False, False
        for i in range(0, len(keys), per_table):
            chunk = keys[i:i + per_table]
            cols = {k: self.rows_at(family, op, k) for k in chunk}
            labels, order = {}, []
            for k in chunk:
                for r in cols[k]:
                    key = (r["impl"], r["variant"])
                    if key not in labels:
                        labels[key] = "%s %s" % (rung_label(r), r["variant_name"]) if r["impl"] == "kl" \
                            else r["impl"]
                        order.append((impl_rank(r), key))
            header = ["rung"]
            for k in chunk:
                basis = next((r for r in cols[k] if r["impl"] == "kl"), cols[k][0])
                header.append("%s %s%s (%s)" % (k[0], k[1], ", L2-resident" if k[2] else "", rate_of(basis)[1]))
            body = []
            for _, key in sorted(order):
                cells = [labels[key]]
                for k in chunk:
                    rs = cols[k]
                    r = next((x for x in rs if (x["impl"], x["variant"]) == key), None)
                    if r is None:
                        cells.append("")
                        continue
                    if not r.get("ok", True):
                        cells.append("FAIL")
                        continue
                    v, unit = rate_of(r)
                    basis = next((x for x in rs if x["impl"] == "kl"), r)
                    bv, _ = rate_of(basis)
                    if r["impl"] in REF_IMPLS or r["impl"] in TORCH_IMPLS:
                        v = bv * basis["median_ms"] / r["median_ms"] if bv else v  # on the rungs' scale
                    cell = fmt_value(v, unit)
                    best = self.best_rung(rs)
                    if r is best:
                        cell = "**%s**" % cell
                    extra = []  # the ratio to the reference, and a decode row's share of the read floor
                    if r["impl"] == "kl":
                        ref, other = self.reference(r, rs)
                        if ref is not None:
                            marked |= other
                            extra.append(fmt_ratio(ref["median_ms"] / r["median_ms"], "*" if other else ""))
                    pct, _ = self.floor_pct(r)
                    if pct is not None:
                        floors = True
                        if extra:
                            extra[0] += " " + ref["impl"]  # two figures: name the ratio's reference
                        extra.append(fmt_floor(pct))
                    if extra:
                        cell += " (%s)" % ", ".join(extra)
                    cells.append(cell)
                body.append(cells)
            out.append(md_table(header, body))
        note = ("Each cell: the rate (the unit is in the column head; reference and PyTorch rows are put on "
                "the rungs' scale: the rung's work over their time) and, for rungs, the time ratio to the "
                "same-run reference in brackets. Bold: the fastest rung of the shape.")
        if marked:
            note += " `*`: the reference comes from a different run."
        if floors:
            note += (" Decode cells also give the rate as a percentage of the read floor: the fastest "
                     "`bench_peak` read row at the nearest measured size at or above the row's bytes "
                     "(docs/method.md); the copy reference also writes, the floor only reads.")
        return note + "\n\n" + "\n\n".join(out)

    def tables_md(self):
        fams = self.families()
        folder = os.path.basename(os.path.normpath(self.folder))
        out = ["# Results: %s" % self.rows[0]["device"]["name"], "",
               "Generated by `scripts/report.py` from %d rows of `%s/*.jsonl`; do not edit by hand. "
               "Method: `docs/method.md`; fields: `docs/results-format.md`." % (len(self.rows), folder), "",
               self.context_line(), "", self.run_line(), "",
               "## Contents", "",
               "- [Headline](#headline)",
               "- [Entry point against the fastest library, every shape](#entry-point-against-the-fastest-library-every-shape)",
               "- [Measured roofs](#measured-roofs)",
               "- [Head to head](#head-to-head)"]
        out += ["- [%s](#%s)" % (f, f) for f in fams]
        out += ["", "## Headline", "", self.headline(), "",
                "Ratios are reference time / row time (above 1.00× the row is faster). Rates of the "
                "reference and PyTorch rows are on the best rung's scale (its work over their time).", "",
                "## Entry point against the fastest library, every shape", "", self.entry_vs_library(), ""]
        lk = self.library_kernels()
        if lk:
            out += ["### What PyTorch launches", "", lk, ""]
        out += ["## Measured roofs", "", self.roofs_table(), "",
                "## Head to head", "", h2h_section(self.folder, "."), ""]
        for fam in fams:
            out += ["## %s" % fam, ""]
            for png in sorted(glob.glob(os.path.join(self.folder, "ladder_%s*.png" % fam))):
                if re.fullmatch(r"ladder_%s(_\d+)?\.png" % re.escape(fam), os.path.basename(png)):
                    out += ["![%s ladder](%s)" % (fam, os.path.basename(png)), ""]
            for op in self.ops(fam):
                out += ["### %s" % op, "", self.rung_list(fam, op), "", self.rung_by_shape(fam, op), ""]
            steps = self.steps_table(fam)
            if steps:
                out += ["### %s: where the time goes" % fam, "", steps, ""]
        return "\n".join(out)

    def steps_table(self, family, results_rel=None):
        """Where a launch's time goes: the "<op>_step" rows of `family` (bench_layer times the steps of
        rung 00 and of the top rung inside the sequence), one table per rung (notes "of"), one column per
        shape, each cell ms and share of the steps' sum; the last rows the sum and the whole launch's
        own row. "" when there are none."""
        rows = [r for r in self.steps if r["family"] == family and r.get("ok", True)]
        if not rows:
            return ""
        of_row = lambda r: r.get("notes", {}).get("of", "")
        ofs = []
        for r in rows:
            if of_row(r) not in ofs:
                ofs.append(of_row(r))
        tables = []
        for of in ofs:
            table = self.one_steps_table(family, [r for r in rows if of_row(r) == of], of or "the rung")
            tables.append(("Rung %s:\n\n" % of if len(ofs) > 1 else "") + table)
        note = ("Each step's median ms between two events inside the rung's launch sequence, and its share "
                "of the steps' sum; the events keep a step from overlapping its neighbours, so the sum can "
                "exceed the whole launch's own median (its row above).")
        head = ("Generated by `scripts/report.py` from `%s/*.jsonl`; do not edit. %s\n\n" % (
            results_rel, self.context_line())) if results_rel else ""
        return head + "\n\n".join(tables) + "\n\n" + note

    def one_steps_table(self, family, rows, of):
        """steps_table's table of one rung's step rows."""
        cols = []  # (op, shape_str) in first-seen order
        for r in rows:
            k = (r["op"], r["shape_str"])
            if k not in cols:
                cols.append(k)
        names = []  # step names in order of their index, first seen
        for r in sorted(rows, key=lambda r: (r["variant"], r["_order"])):
            if r["variant_name"] not in names:
                names.append(r["variant_name"])
        cell = {(r["op"], r["shape_str"], r["variant_name"]): r for r in rows}
        header = ["step"] + ["%s %s" % (op[:-len("_step")], short_shape(
            next(r["shape"] for r in rows if r["shape_str"] == ss))) for op, ss in cols]
        sums = {k: sum(r["median_ms"] for r in rows if (r["op"], r["shape_str"]) == k) for k in cols}
        body = []
        for n in names:
            line = [n]
            for op, ss in cols:
                r = cell.get((op, ss, n))
                line.append("—" if r is None else "%s (%.0f%%)" % (fmt_ms(r["median_ms"]),
                                                                  100.0 * r["median_ms"] / sums[(op, ss)]))
            body.append(line)
        body.append(["steps' sum"] + [fmt_ms(sums[k]) for k in cols])
        num = of.split(" ")[0]
        whole = []
        for op, ss in cols:
            launch = next((r for r in self.groups.get((family, op[:-len("_step")]), [])
                           if r["shape_str"] == ss and r["impl"] == "kl" and num.isdigit()
                           and r["variant"] == int(num) and r.get("ok", True)), None)
            whole.append(fmt_ms(launch["median_ms"]) if launch else "—")
        body.append(["whole launch (%s)" % of] + whole)
        return md_table(header, body)

    def ladder_table(self, family, results_rel):
        """The design note's tables, one per op of the family's chart shapes: every rung, with its
        ratio to the rung before it (or to its parent, where the rows name one) and to the reference."""
        ops = []
        for op, _, _, _ in CHART.get(family, []):
            if op not in ops:
                ops.append(op)
        tables = [t for t in (self.op_ladder_table(family, op) for op in ops) if t]
        if not tables:
            return "No rows of this family in `%s`." % results_rel
        use_parent = any(isinstance(r.get("parent"), int) for r in self.rows if r["family"] == family)
        floor = ("; % of read floor (decode): the rate over that of `bench_peak`'s fastest read of as many bytes"
                 if any("% of read floor" in t for t in tables) else "")
        return "\n".join([
            "Generated by `scripts/report.py` from `%s/*.jsonl`; do not edit. %s" % (results_rel, self.context_line()),
            "", "\n\n".join(tables), "",
            "Rates are the rung's counted work over its median time. × %s: that rung's time over this "
            "rung's (above 1.00× this rung is faster); × ref: the same-run reference's time over this "
            "rung's%s. \"refuses\": the rung's `supports()` rejects the shape. Library rows are on the best "
            "rung's scale. Every shape: [%s/tables.md](%s/tables.md#%s)." % (
                "parent" if use_parent else "previous", floor, results_rel, results_rel, family)])

    def op_ladder_table(self, family, op):
        panels = []
        for o, dt, dims, label in CHART.get(family, []):
            got = self.headline_pick(family, o, dt, dims) if o == op else None
            if got:
                panels.append((label, got[1]))
        if not panels:
            return ""
        variants = {}
        for _, rs in panels:
            for r in rs:
                if r["impl"] == "kl" and r["variant"] >= 0:
                    variants.setdefault(r["variant"], r)
        use_parent = any(isinstance(r.get("parent"), int) for r in variants.values())
        header = ["rung", "name"] + (["parent"] if use_parent else [])
        # A decode panel with a read floor gets a column for it.
        floored = [any(self.floor_pct(r)[0] is not None for r in rs) for _, rs in panels]
        for (label, rs), fl in zip(panels, floored):
            basis = self.best_rung(rs) or rs[0]
            ref, _ = self.reference(basis, rs)
            header += ["%s (%s)" % (label, rate_of(basis)[1]),
                       "× parent" if use_parent else "× previous",
                       "× %s" % ref["impl"] if ref else "× ref"] + (["% of read floor"] if fl else [])

        def floor_cell(r, fl):
            pct = self.floor_pct(r)[0] if r is not None else None
            return ([] if not fl else ["—" if pct is None else "%.0f%%" % pct])
        body = []
        for v in sorted(variants):
            r0 = variants[v]
            row = ["%02d" % v, r0["variant_name"]]
            if use_parent:
                p = r0.get("parent")
                row.append("%02d" % p if isinstance(p, int) and p >= 0 else "—")
            for (label, rs), fl in zip(panels, floored):
                kl = {r["variant"]: r for r in rs if r["impl"] == "kl" and r["variant"] >= 0}
                r = kl.get(v)
                if r is None:
                    row += ["refuses", "", ""] + floor_cell(None, fl)
                    continue
                if not r.get("ok", True):
                    row += ["FAIL", "", ""] + floor_cell(None, fl)
                    continue
                val, unit = rate_of(r)
                if use_parent:
                    prev = kl.get(r.get("parent")) if isinstance(r.get("parent"), int) else None
                else:
                    prev = kl.get(max([u for u in kl if u < v], default=-1))
                ref, other = self.reference(r, rs)
                row += [fmt_value(val, unit),
                        fmt_ratio(prev["median_ms"] / r["median_ms"]) if prev and prev.get("ok", True) else "—",
                        fmt_ratio(ref["median_ms"] / r["median_ms"], "*" if other else "") if ref else "—"]
                row += floor_cell(r, fl)
            body.append(row)
        for impl in LIBRARY_IMPLS:
            row = [impl, ""] + ([""] if use_parent else [])
            anyv = False
            for (label, rs), fl in zip(panels, floored):
                t = next((r for r in rs if r["impl"] == impl and r.get("ok", True)), None)
                basis = self.best_rung(rs)
                if t is None or basis is None:
                    row += ["", "", ""] + ([""] if fl else [])
                    continue
                bv, unit = rate_of(basis)
                row += [fmt_value(bv * basis["median_ms"] / t["median_ms"], unit), "", ""] + floor_cell(t, fl)
                anyv = True
            if anyv:
                body.append(row)
        return md_table(header, body)

    # -------------------------------------------------------------------------------- charts
    def ladder_charts(self, family, folder):
        """The family's ladder charts: ladder_<family>.png on its first chart shape, and
        ladder_<family>_<n>.png on each further one. Returns the paths written."""
        paths = []
        for n, (op, dt, dims, label) in enumerate(CHART.get(family, [])):
            got = self.headline_pick(family, op, dt, dims)
            if not got or not self.best_rung(got[1]):
                continue
            name = "ladder_%s.png" % family if not paths else "ladder_%s_%d.png" % (family, n + 1)
            self.ladder_chart(family, label, got[1], os.path.join(folder, name))
            paths.append(os.path.join(folder, name))
        return paths

    def ladder_chart(self, family, label, rs, path):
        """One horizontal bar per rung (and the entry point) on one shape, the same-run reference
        and the fastest PyTorch as vertical lines."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        nbars = sum(1 for r in rs if r["impl"] == "kl")
        fig, ax = plt.subplots(figsize=(8.5, 0.26 * nbars + 1.5), dpi=100)
        best = self.best_rung(rs)
        bv, unit = rate_of(best)
        kl = sorted([r for r in rs if r["impl"] == "kl"], key=lambda r: (r["variant"] < 0, r["variant"]))
        names, vals, colors = [], [], []
        for r in kl:
            if r["variant"] < 0:
                names.append("entry point → %s" % (r.get("notes") or {}).get("picked", "?"))
            else:
                names.append("%02d %s" % (r["variant"], r["variant_name"]))
            ok = r.get("ok", True)
            vals.append(bv * best["median_ms"] / r["median_ms"] if ok else 0.0)
            colors.append("0.75" if not ok else "tab:orange" if r["variant"] < 0
                          else "tab:green" if r is best else "tab:blue")
        y = list(range(len(kl)))
        ax.barh(y, vals, color=colors, height=0.7, zorder=2)
        ax.set_yticks(y)
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        top = max(vals + [1e-9])
        for yi, v, r in zip(y, vals, kl):  # the value inside a long bar, beside a short one
            inside = v > 0.25 * top
            ax.text(v - top * 0.01 if inside else v + top * 0.01, yi,
                    fmt_value(v, unit) if r.get("ok", True) else "FAIL", va="center",
                    ha="right" if inside else "left", fontsize=7, color="white" if inside else "0.2",
                    zorder=4)
        ref, other = self.reference(best, rs)
        lines = []
        if ref is not None:
            lines.append((bv * best["median_ms"] / ref["median_ms"], "k", "-",
                          "%s%s" % (ref["impl"], " (other run)" if other else " (same run)")))
        tb = self.fastest(rs, TORCH_IMPLS)
        if tb is not None:
            lines.append((bv * best["median_ms"] / tb["median_ms"], "tab:red", "--",
                          "fastest PyTorch: %s" % tb["impl"]))
        pct, fl = self.floor_pct(best)
        if pct is not None:  # the floor's rate, as the rate of a step reading best's bytes at it
            lines.append((bv * 100.0 / pct, "tab:purple", ":",
                          "read floor (%s, %.0f MB)" % ((fl.get("notes") or {}).get("best_of", fl["op"]),
                                                        fl["bytes"] / 1e6)))
        for x, c, ls, lab in lines:
            ax.axvline(x, color=c, ls=ls, lw=1.3, zorder=3,
                       label="%s %s %s" % (lab, fmt_value(x, unit), unit))
            top = max(top, x)
        ax.set_xlim(0, top * 1.15)
        ax.set_xlabel("%s (the rung's counted work over its median time; higher is faster)" % unit,
                      fontsize=8)
        ax.grid(True, axis="x", alpha=0.3, zorder=0)
        if lines:
            ax.legend(loc="upper right", fontsize=7, framealpha=0.95)
        ax.set_title("%s ladder, %s\n%s: %s %s" % (family, self.rows[0]["device"]["name"], label,
                     best["dtype"], short_shape(best["shape"])), fontsize=10)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)

    def roofline(self, path):
        """The chart shapes only: each one's best rung, the entry point, the reference and the
        fastest PyTorch, against the copy roof and the compute ceilings of bench_peak."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D

        fam_color = {f: matplotlib.colormaps.get_cmap("tab10")(i) for i, f in enumerate(FAMILY_ORDER)}
        pts = []  # (family, label, ai, best, auto, ref, torch) in TFLOP/s
        for family in FAMILY_ORDER:
            for op, dt, dims, label in CHART.get(family, []):
                got = self.headline_pick(family, op, dt, dims)
                if not got:
                    continue
                rs = got[1]
                best = self.best_rung(rs)
                if best is None or not (best.get("flops") or 0) or not (best.get("bytes") or 0):
                    continue
                t = tflops(best)

                def on_scale(r):
                    return t * best["median_ms"] / r["median_ms"] if r is not None else None
                ref, _ = self.reference(best, rs)
                pts.append((family, label, best["flops"] / best["bytes"], t, on_scale(self.auto_row(rs)),
                            on_scale(ref), on_scale(self.fastest(rs, TORCH_IMPLS))))
        fig, ax = plt.subplots(figsize=(11, 6), dpi=100)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ais = [p[2] for p in pts] or [1.0, 100.0]
        xmin, xmax = min(min(ais) / 3, 0.1), max(max(ais) * 12, 1000.0)  # room for the labels
        bw = self.rf.get("copy")
        ceilings = [(op, self.rf[op]) for op in ("wgmma_bf16", "mma_sync_bf16", "fp32_fma") if op in self.rf]
        ys = [v for p in pts for v in p[3:] if v]
        top = max([c for _, c in ceilings] + ys + [1.0])
        if bw:
            ax.plot([xmin, top * 1000.0 / bw], [xmin * bw / 1000.0, top], color="0.3", lw=1.2)
            ax.text(xmin * 1.3, xmin * 1.3 * bw / 1000.0 * 1.6, "copy %.0f GB/s" % bw, fontsize=8,
                    color="0.3", rotation=28)
        # The ceilings are named in the legend: text on the chart would sit among the point labels.
        styles = {"wgmma_bf16": "-", "mma_sync_bf16": "--", "fp32_fma": ":"}
        roof_handles = []
        for op, c in sorted(ceilings, key=lambda oc: -oc[1]):
            x0 = c * 1000.0 / bw if bw else xmin
            ax.plot([x0, xmax], [c, c], color="0.3", lw=1.0, ls=styles[op])
            roof_handles.append(Line2D([], [], color="0.3", lw=1.0, ls=styles[op],
                                       label="%s roof %.0f TFLOP/s" % (op, c)))
        for family, label, ai, t, auto, ref, torch in pts:
            col = fam_color.get(family, "0.4")
            ax.scatter([ai], [t], s=60, color=col, zorder=4)
            if auto:
                ax.scatter([ai], [auto], s=140, facecolors="none", edgecolors=col, linewidths=1.4, zorder=4)
            if ref:
                ax.scatter([ai], [ref], s=60, marker="x", color="k", zorder=5)
            if torch:
                ax.scatter([ai], [torch], s=45, marker="^", facecolors="none", edgecolors="tab:red", zorder=5)
        # Labels: a lone point gets its label beside it; points close together get theirs fanned out
        # in a column to their right, each with a thin leader line.
        clusters = []
        for p in sorted(pts, key=lambda p: p[2]):
            for c in clusters:
                if any(abs(math.log10(p[2] / q[2])) < 0.6 and abs(math.log10(p[3] / q[3])) < 0.5 for q in c):
                    c.append(p)
                    break
            else:
                clusters.append([p])
        # A label needs about a decade and a half of the x axis: points nearer the right edge than that
        # get theirs on their left.
        def on_right(ai):
            return ai * 10 ** 1.6 < xmax

        for c in clusters:
            if len(c) == 1:
                family, label, ai, t = c[0][:4]
                right = on_right(ai)
                ax.annotate(label, (ai, t), xytext=(9 if right else -9, -12), textcoords="offset points",
                            fontsize=8, color=fam_color.get(family, "0.4"), ha="left" if right else "right")
                continue
            c.sort(key=lambda p: -p[3])
            # A column to the right of the cluster, or under it where the right edge is too near.
            if on_right(max(p[2] for p in c) * 3.0):
                x = max(p[2] for p in c) * 3.0
                mid = math.exp(sum(math.log(p[3]) for p in c) / len(c))
                ys_ = [mid * 1.7 ** ((len(c) - 1) / 2.0 - k) for k in range(len(c))]
            else:
                x = min(p[2] for p in c)
                ys_ = [min(p[3] for p in c) / 2.0 / 1.6 ** k for k in range(len(c))]
            for (family, label, ai, t), y in zip((p[:4] for p in c), ys_):
                col = fam_color.get(family, "0.4")
                ax.annotate(label, (ai, t), xytext=(x, y), textcoords="data", fontsize=8, color=col,
                            va="center", arrowprops=dict(arrowstyle="-", color=col, lw=0.6, relpos=(0.0, 0.5)))
        handles = [Line2D([], [], ls="", marker="o", color="0.3", label="best rung"),
                   Line2D([], [], ls="", marker="o", markerfacecolor="none", markersize=10, color="0.3",
                          label="entry point"),
                   Line2D([], [], ls="", marker="x", color="k", label="reference (cuBLAS / cudaMemcpy)"),
                   Line2D([], [], ls="", marker="^", markerfacecolor="none", color="tab:red",
                          label="fastest PyTorch")]
        handles += [Line2D([], [], ls="", marker="s", color=fam_color[f], label=f)
                    for f in FAMILY_ORDER if any(p[0] == f for p in pts)]
        ax.legend(handles=handles + roof_handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                  framealpha=0.9)
        ax.set_xlim(xmin, xmax)
        ax.set_ylim(min(ys + [xmin * (bw or 1000.0) / 1000.0]) / 2, top * 2.5)
        ax.set_xlabel("arithmetic intensity (counted FLOPs / minimum DRAM bytes)")
        ax.set_ylabel("TFLOP/s (counted FLOPs / median time)")
        ax.set_title("Roofline: %s, the ladders' chart shapes" % self.rows[0]["device"]["name"], fontsize=10)
        ax.grid(True, which="both", alpha=0.2)
        if not pts:
            ax.text(0.5, 0.5, "no rows with counted FLOPs and bytes", transform=ax.transAxes, ha="center")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)

    def readme_tables(self, readme_dir):
        rel = os.path.relpath(self.folder, readme_dir).replace(os.sep, "/")
        return "\n".join(["Generated by `scripts/report.py`; every shape is in [%s/tables.md](%s/tables.md)."
                          % (rel, rel), ""] +
                         ["- %s: [chart](%s/ladder_%s.png), [tables](%s/tables.md#%s), [design note](docs/%s.md)"
                          % (f, rel, f, rel, f, f) for f in self.families()])


# ------------------------------------------------------------------------------------------ README
def replace_between(text, begin, end, body, path):
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0 or j < i:
        raise ReportError("%s: markers %s ... %s not found (in that order)" % (path, begin, end))
    return text[: i + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[j:]


def update_readme(path, rep):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(os.path.abspath(path))
    rel = os.path.relpath(rep.folder, here).replace(os.sep, "/")
    text = replace_between(text, BEGIN_HEAD, END_HEAD, rep.context_line() + "\n\n" + rep.headline(), path)
    optional = [(BEGIN_RUN, END_RUN, lambda: rep.run_line()),
                (BEGIN_TABLES, END_TABLES, lambda: rep.readme_tables(here)),
                (BEGIN_H2H, END_H2H, lambda: h2h_section(rep.folder, rel))]
    for begin, end, body in optional:
        if begin in text or end in text:
            text = replace_between(text, begin, end, body(), path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def update_docs(docs, rep):
    """The LADDER TABLE block of every <docs>/<family>.md that has one; returns the files written."""
    written = []
    for fam in rep.families():
        path = os.path.join(docs, fam + ".md")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if BEGIN_LADDER not in text and END_LADDER not in text:
            continue
        rel = os.path.relpath(rep.folder, docs).replace(os.sep, "/")
        new = replace_between(text, BEGIN_LADDER, END_LADDER, rep.ladder_table(fam, rel), path)
        if BEGIN_STEPS in new or END_STEPS in new:
            new = replace_between(new, BEGIN_STEPS, END_STEPS,
                                  rep.steps_table(fam, rel) or "No step rows of this family in `%s`." % rel, path)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
        written.append(path)
    api = os.path.join(docs, "api.md")
    if os.path.exists(api):
        with open(api, encoding="utf-8") as f:
            text = f.read()
        if BEGIN_BIND in text:
            rel = os.path.relpath(rep.folder, docs).replace(os.sep, "/")
            new = replace_between(text, BEGIN_BIND, END_BIND, binding_table(rep.folder, rel), api)
            if new != text:
                with open(api, "w", encoding="utf-8") as f:
                    f.write(new)
            written.append(api)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", help="results/<device>/ with the *.jsonl of one device")
    ap.add_argument("--readme", help="README to update between its markers")
    ap.add_argument("--docs", help="folder of the design notes whose LADDER TABLE blocks to update")
    ap.add_argument("--quiet", action="store_true", help="do not print the headline table")
    a = ap.parse_args(argv)
    try:
        if not os.path.isdir(a.folder):
            raise ReportError("%s is not a folder" % a.folder)
        if a.docs and not os.path.isdir(a.docs):
            raise ReportError("--docs %s is not a folder" % a.docs)
        rows = load_rows(a.folder)
        rep = Report(a.folder, rows, read_env(a.folder))
        charts = []
        for old in glob.glob(os.path.join(a.folder, "ladder_*.png")):
            os.remove(old)
        for fam in rep.families():
            charts += rep.ladder_charts(fam, a.folder)
        png = os.path.join(a.folder, "roofline.png")
        rep.roofline(png)
        tables = os.path.join(a.folder, "tables.md")
        with open(tables, "w", encoding="utf-8") as f:
            f.write(rep.tables_md())
        docs = update_docs(a.docs, rep) if a.docs else []
        if a.readme:
            update_readme(a.readme, rep)
    except ReportError as e:
        print("report.py: error: %s" % e, file=sys.stderr)
        return 1
    if not a.quiet:
        print(rep.context_line())
        print()
        print(rep.headline())
        print()
    print("report.py: wrote %s, %s and %d ladder charts%s%s (%d rows)" % (
        tables, png, len(charts), "; updated " + a.readme if a.readme else "",
        "; generated blocks in %d docs" % len(docs) if a.docs else "", len(rep.rows)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
