#!/usr/bin/env python3
"""Tables and roofline from the bench JSON lines of one device.

    python3 scripts/report.py results/<device>/ [--readme README.md] [--quiet]

Reads every results/<device>/*.jsonl (the rows of bench_<family>, bench_peak and
scripts/torch_baseline.py; the schema is docs/results-format.md) and writes

    results/<device>/tables.md      per family and op: every rung, reference and PyTorch row
    results/<device>/roofline.png   log-log roofline with the measured roofs of bench_peak

With --readme, also replaces the text between the GENERATED markers of that README (the headline
table and the per-family ladders); everything outside the markers is left as it is. Prints the
headline table on stdout.

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

Python 3 standard library + matplotlib only.
"""
import argparse
import glob
import json
import math
import os
import sys

FAMILY_ORDER = ["rmsnorm", "swiglu", "softmax", "sgemm", "gemm_bf16", "attention"]
TORCH_IMPLS = ["torch", "torch_compile", "torch_sdpa_flash", "torch_sdpa_cudnn"]
REF_IMPLS = ["cublas", "cudaMemcpy"]
MEMORY_OPS = {"rmsnorm", "add_rmsnorm", "swiglu", "softmax", "decode"}
# Compute ceiling per family (bench_peak op names), in order of preference.
CEILINGS = {
    "gemm_bf16": [("wgmma_bf16", "wgmma"), ("mma_sync_bf16", "mma")],
    "attention": [("wgmma_bf16", "wgmma"), ("mma_sync_bf16", "mma")],
    "sgemm": [("fp32_fma", "fma")],
}
COPY_OPS = ("copy_memcpy", "copy_kernel")

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

BEGIN_TABLES, END_TABLES = "<!-- BEGIN GENERATED TABLES -->", "<!-- END GENERATED TABLES -->"
BEGIN_HEAD, END_HEAD = "<!-- BEGIN HEADLINE -->", "<!-- END HEADLINE -->"

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
    return (r["family"], r["op"], r["impl"], r["variant"], r["variant_name"], r["dtype"],
            r["shape_str"], bool(r.get("l2_resident", False)))


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


# ------------------------------------------------------------------------------------------ model
class Report:
    def __init__(self, folder, rows, env):
        self.folder = folder
        self.env = env
        self.rows = dedupe(rows)
        self.rf = roofs(self.rows)
        self.groups = {}  # (family, op) -> [rows]
        for r in self.rows:
            if r["family"] != "peak":
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

    def headline(self):
        header = ["family", "op", "shape", "dtype", "best kl rung", "kl", "reference",
                  "kl vs ref", "auto (entry point) vs ref", "best PyTorch", "kl vs PyTorch",
                  "SM MHz kl / ref"]
        body = []
        for family, op, dtype, dims in HEADLINE:
            got = self.headline_pick(family, op, dtype, dims)
            if not got:
                continue
            k, rs = got
            kl = [r for r in rs if r["impl"] == "kl" and r["variant"] >= 0 and r.get("ok", True)]
            if not kl:
                continue
            best = min(kl, key=lambda r: r["median_ms"])
            mem = memory_bound(best)
            unit = "GB/s" if mem else "TFLOP/s"

            def rate(r):
                v = gbps(r) if mem else tflops(r)
                return "—" if v is None else ("%.0f %s" % (v, unit) if mem else "%.1f %s" % (v, unit))
            ref, _ = self.reference(best, rs)
            torch = [r for r in rs if r["impl"] in TORCH_IMPLS]
            tbest = min(torch, key=lambda r: r["median_ms"]) if torch else None
            auto = [r for r in rs if r["impl"] == "kl" and r["variant"] == -1 and r.get("ok", True)]
            if auto and ref:
                a = auto[0]
                auto_cell = "→ %s: %s" % ((a.get("notes") or {}).get("picked", "?"),
                                          fmt_ratio(ref["median_ms"] / a["median_ms"]))
            else:
                auto_cell = "—"

            # The NVML-sampled SM clock of the two rows (the H200 throttles under long heavy
            # runs: a ratio of rows measured at different clocks is partly a clock ratio).
            def mhz(r):
                c = r.get("clock_mhz") if r else None
                return "%.0f" % c if isinstance(c, (int, float)) and c > 0 else "—"
            body.append([
                family, op, k[1], dtype, "%02d %s" % (best["variant"], best["variant_name"]),
                rate(best),
                "%s %s" % (ref["impl"], rate(ref)) if ref else "—",
                fmt_ratio(ref["median_ms"] / best["median_ms"]) if ref else "—",
                auto_cell,
                "%s %s" % (tbest["impl"], rate(tbest)) if tbest else "—",
                fmt_ratio(tbest["median_ms"] / best["median_ms"]) if tbest else "—",
                "%s / %s" % (mhz(best), mhz(ref)),
            ])
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

    def roofs_table(self):
        peak = [r for r in self.rows if r["family"] == "peak"]
        if not peak:
            return "No bench_peak rows in this folder: no measured roofs, so no % roof figures."
        body = []
        for r in peak:
            if r["op"] in COPY_OPS:
                val = "%.0f GB/s (read + write)" % (gbps(r) or r.get("gbps") or 0)
            else:
                t = tflops(r)
                val = "—" if t is None else "%.1f TFLOP/s" % t
            clk = r.get("clock_mhz")
            body.append([r["op"], r["impl"], val, "—" if clk is None else "%.0f" % clk,
                         fmt_ms(r["median_ms"]), r["timestamp"]])
        return md_table(["roof", "impl", "measured", "SM clock MHz", "median ms", "timestamp"], body)

    # -------------------------------------------------------------------------------- outputs
    def tables_md(self):
        out = ["# Results: %s" % self.rows[0]["device"]["name"], "",
               "Generated by `scripts/report.py` from %d rows of `%s/*.jsonl`; do not edit by hand. "
               "Method: `docs/method.md`; fields: `docs/results-format.md`." % (
                   len(self.rows), os.path.basename(os.path.normpath(self.folder))), "",
               self.context_line(), "",
               "Ratios are reference time / row time (above 1.00× the row is faster). `*`: the "
               "reference row comes from a different run than the row. % roof: achieved over "
               "min(measured compute ceiling, intensity × measured copy bandwidth), naming the "
               "binding roof. `L2-resident`: the working set fits in L2 (not a DRAM figure).", "",
               "## Headline", "", self.headline(), "",
               "## Measured roofs (bench_peak)", "", self.roofs_table(), ""]
        for fam in self.families():
            out += ["## %s" % fam, ""]
            for op in self.ops(fam):
                t, marked = self.op_table(fam, op)
                out += ["### %s" % op, "", t, ""]
                if marked:
                    out += ["`*` reference from a different run.", ""]
        return "\n".join(out)

    def readme_tables(self, readme_dir):
        rel = os.path.relpath(self.folder, readme_dir).replace(os.sep, "/")
        out = ["Generated by `scripts/report.py %s --readme` from `%s/*.jsonl`; do not edit." % (rel, rel),
               "", self.context_line(), "",
               "Each ladder is shown on one shape; every shape and dtype is in [%s/tables.md](%s/tables.md). "
               "Ratios are reference time / rung time (above 1.00× the rung is faster)." % (rel, rel),
               "", "![roofline](%s/roofline.png)" % rel, ""]
        for fam in self.families():
            note = os.path.join(readme_dir, "docs", fam + ".md")
            out += ["### %s" % fam, ""]
            if os.path.exists(note):
                out += ["Design note: [docs/%s.md](docs/%s.md)" % (fam, fam), ""]
            for op in self.ops(fam):
                pick = None
                for f, o, dt, dims in HEADLINE:
                    if f == fam and o == op:
                        got = self.headline_pick(f, o, dt, dims)
                        if got:
                            pick = got[0]
                            break
                if pick is None:  # the shape with the most kl rungs
                    keys = self.shapes(fam, op)
                    pick = max(keys, key=lambda k: (
                        sum(1 for r in self.rows_at(fam, op, k) if r["impl"] == "kl"), -keys.index(k)))
                t, marked = self.op_table(fam, op, [pick], compact=True)
                out += ["**%s** — %s, %s%s" % (op, pick[1], pick[0], ", L2-resident" if pick[2] else ""),
                        "", t, ""]
                if marked:
                    out += ["`*` reference from a different run.", ""]
        return "\n".join(out)

    def roofline(self, path):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D

        # The auto row repeats the rung it picked, so it is not plotted again.
        plotted = [r for r in self.rows if r["family"] != "peak"
                   and not (r["impl"] == "kl" and r["variant"] < 0)]
        pts = [r for r in plotted if (r.get("flops") or 0) > 0 and (r.get("bytes") or 0) > 0]
        fig, ax = plt.subplots(figsize=(11, 7), dpi=110)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ais = [r["flops"] / r["bytes"] for r in pts] or [1.0, 100.0]
        xmin, xmax = min(ais) / 3, max(ais) * 3
        xmin, xmax = min(xmin, 0.1), max(xmax, 1000.0)
        bw = self.rf.get("copy")
        ceilings = [(op, self.rf[op]) for op in ("wgmma_bf16", "mma_sync_bf16", "fp32_fma") if op in self.rf]
        top = max([c for _, c in ceilings] + [max((tflops(r) for r in pts), default=1.0)])
        if bw:
            xr = top * 1000.0 / bw
            ax.plot([xmin, xr], [xmin * bw / 1000.0, top], color="0.2", lw=1.5)
            ax.text(xmin * 1.2, xmin * 1.2 * bw / 1000.0 * 4, "copy %.0f GB/s\n(measured)" % bw,
                    fontsize=8, color="0.2")
        styles = {"wgmma_bf16": "-", "mma_sync_bf16": "--", "fp32_fma": ":"}
        for k, (op, c) in enumerate(sorted(ceilings, key=lambda oc: -oc[1])):
            x0 = c * 1000.0 / bw if bw else xmin
            ax.plot([x0, xmax], [c, c], color="0.2", lw=1.2, ls=styles[op])
            # Alternate above / below the line so close ceilings keep readable labels.
            ax.text(xmax / 1.05, c * (1.05 if k % 2 == 0 else 0.95), "%s %.0f TFLOP/s" % (op, c),
                    ha="right", va="bottom" if k % 2 == 0 else "top", fontsize=8, color="0.2")
        markers = ["o", "s", "^", "D", "v", "P", "X", "*", "h"]
        fams = sorted({r["family"] for r in pts},
                      key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER else 99, f))
        fmark = {f: markers[i % len(markers)] for i, f in enumerate(fams)}
        maxv = max([r["variant"] for r in pts if r["impl"] == "kl"] + [1])
        cmap = matplotlib.colormaps.get_cmap("viridis")
        other_colors = {"cublas": "black", "cudaMemcpy": "black", "torch": "tab:red",
                        "torch_compile": "tab:orange", "torch_sdpa_flash": "tab:purple",
                        "torch_sdpa_cudnn": "tab:brown"}

        def color(r):
            if r["impl"] == "kl":
                return "tab:pink" if r["variant"] < 0 else cmap(r["variant"] / maxv * 0.9)
            return other_colors.get(r["impl"], "tab:gray")
        for r in pts:
            c = color(r)
            hollow = bool(r.get("l2_resident"))
            ax.scatter([r["flops"] / r["bytes"]], [tflops(r)], marker=fmark[r["family"]], s=36,
                       facecolors="none" if hollow else c, edgecolors=c, linewidths=1.2, zorder=3)
        handles = [Line2D([], [], ls="", marker=fmark[f], color="0.4", label=f) for f in fams]
        impls = sorted({r["impl"] for r in pts if r["impl"] != "kl"}, key=lambda i: impl_rank({"impl": i, "variant": 0}))
        handles += [Line2D([], [], ls="", marker="o", color=other_colors.get(i, "tab:gray"), label=i)
                    for i in impls]
        if any(r.get("l2_resident") for r in pts):
            handles.append(Line2D([], [], ls="", marker="o", markerfacecolor="none", color="0.4",
                                  label="L2-resident (hollow)"))
        ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
        if any(r["impl"] == "kl" and r["variant"] >= 0 for r in pts):
            # One discrete colour per rung number, the same mapping as color() above.
            levels = list(range(0, maxv + 1))
            cols = [cmap(v / maxv * 0.9) for v in levels]
            lc = matplotlib.colors.ListedColormap(cols)
            norm = matplotlib.colors.BoundaryNorm([v - 0.5 for v in levels] + [maxv + 0.5], lc.N)
            sm = matplotlib.cm.ScalarMappable(cmap=lc, norm=norm)
            cb = fig.colorbar(sm, ax=ax, pad=0.01, ticks=levels)
            cb.set_label("kl rung number (hollow: L2-resident)")
        skipped = len(plotted) - len(pts)
        if skipped:
            ax.text(0.01, 0.99, "%d row%s without counted FLOPs (cudaMemcpy references) not plotted"
                    % (skipped, "" if skipped == 1 else "s"),
                    transform=ax.transAxes, ha="left", va="top", fontsize=8, color="0.3")
        ax.set_xlim(xmin, xmax)
        ymin = min([tflops(r) for r in pts] + [xmin * (bw or 1000.0) / 1000.0]) / 2
        ax.set_ylim(ymin, top * 2)
        ax.set_xlabel("arithmetic intensity (counted FLOPs / minimum DRAM bytes)")
        ax.set_ylabel("achieved TFLOP/s (counted FLOPs / median time)")
        ax.set_title("Roofline: %s (measured roofs from bench_peak)" % self.rows[0]["device"]["name"])
        ax.grid(True, which="both", alpha=0.25)
        if not pts:
            ax.text(0.5, 0.5, "no rows with counted FLOPs and bytes", transform=ax.transAxes,
                    ha="center")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


# ------------------------------------------------------------------------------------------ README
def replace_between(text, begin, end, body, path):
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0 or j < i:
        raise ReportError("%s: markers %s ... %s not found (in that order)" % (path, begin, end))
    return text[: i + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[j:]


def update_readme(path, rep):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head = rep.context_line() + "\n\n" + rep.headline()
    text = replace_between(text, BEGIN_HEAD, END_HEAD, head, path)
    text = replace_between(text, BEGIN_TABLES, END_TABLES,
                           rep.readme_tables(os.path.dirname(os.path.abspath(path))), path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", help="results/<device>/ with the *.jsonl of one device")
    ap.add_argument("--readme", help="README to update between the GENERATED markers")
    ap.add_argument("--quiet", action="store_true", help="do not print the headline table")
    a = ap.parse_args(argv)
    try:
        if not os.path.isdir(a.folder):
            raise ReportError("%s is not a folder" % a.folder)
        rows = load_rows(a.folder)
        rep = Report(a.folder, rows, read_env(a.folder))
        tables = os.path.join(a.folder, "tables.md")
        with open(tables, "w", encoding="utf-8") as f:
            f.write(rep.tables_md())
        png = os.path.join(a.folder, "roofline.png")
        rep.roofline(png)
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
    print("report.py: wrote %s and %s%s (%d rows)" % (
        tables, png, " and updated " + a.readme if a.readme else "", len(rep.rows)),
        file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
