#!/usr/bin/env python3
"""CPU test of scripts/report.py on the fixture rows in tests/fixtures/*.jsonl.

    python3 tests/test_report.py OUT_DIR

OUT_DIR is a scratch folder (emptied first). Runs report.py as a user would (a subprocess) and checks
tables.md, roofline.png, the README markers, the refusal of mixed devices and of malformed rows.
Prints "N passed, M failed" and exits non-zero on any failure.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

from script_check import check, run_script, summary

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REPORT = os.path.join(ROOT, "scripts", "report.py")
FIXTURES = sorted(glob.glob(os.path.join(HERE, "fixtures", "*.jsonl")))



def run(*args):
    return run_script(REPORT, *args)


def fresh(path, files):
    os.makedirs(path)
    for f in files:
        shutil.copy(f, path)


def table_row(md, *cells):
    """The first markdown table line containing every one of `cells` as whole cells."""
    for line in md.splitlines():
        if line.startswith("|"):
            cs = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(c in cs for c in cells):
                return cs
    return None


def main():
    if len(sys.argv) != 2:
        print("usage: test_report.py OUT_DIR", file=sys.stderr)
        return 2
    out = os.path.abspath(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    check(len(FIXTURES) >= 3, "fixtures present", str(FIXTURES))

    # ---- the happy path: tables.md, charts, README markers, design-note ladder tables
    good = os.path.join(out, "h200")
    fresh(good, FIXTURES)
    with open(os.path.join(good, "env.txt"), "w") as f:
        f.write("gpu=NVIDIA H200\ndriver_version=580.1\ngit_commit=abc123\nbuild_seconds=60\n"
                "bench_seconds=420\nh2h_seconds=300\n")
    with open(os.path.join(good, "test.log"), "w") as f:
        f.write("test.sh: commit abc123\n100% tests passed out of 170\n"
                "test.sh: finished in 240 s (exit 0)\n")
    readme = os.path.join(out, "README.md")
    with open(readme, "w") as f:
        f.write("# title\n\nhand-written intro\n\n<!-- BEGIN HEADLINE -->\nstale headline\n"
                "<!-- END HEADLINE -->\n\nhand-written middle\n\n<!-- BEGIN RUN -->\nstale run\n"
                "<!-- END RUN -->\n\nhand-written end\n")
    docs = os.path.join(out, "docs")
    os.makedirs(docs)
    with open(os.path.join(docs, "rmsnorm.md"), "w") as f:
        f.write("# rmsnorm\n\n<!-- BEGIN LADDER TABLE -->\nstale ladder\n<!-- END LADDER TABLE -->\n\n### 01\n")
    with open(os.path.join(docs, "api.md"), "w") as f:
        f.write("# api\n\n<!-- BEGIN BINDING TABLE -->\nstale binding\n<!-- END BINDING TABLE -->\nend\n")
    os.makedirs(os.path.join(good, "binding"))
    with open(os.path.join(good, "binding", "rows.jsonl"), "w") as f:
        for impl, us in (("kernel_ladder", 21.5), ("ctypes", 6.25), ("torch", 9.0)):
            f.write(json.dumps({"family": "binding", "op": "rmsnorm", "impl": impl, "shape_str": "bf16 1x4096",
                                "us_per_call": us, "gpu": "NVIDIA H200", "torch": "2.11", "git_commit": "abc123",
                                "calls": 2000}) + "\n")
    long_name = "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)"
    with open(os.path.join(good, "torch_kernels.json"), "w") as f:
        json.dump({"device": {"name": "NVIDIA H200"}, "torch": "2.11", "git_commit": "abc123",
                   "timestamp": "2026-11-29T00:00:00Z",
                   "rows": {"rmsnorm|rmsnorm|torch|bf16|rows=16384,cols=8192": [
                                {"name": "vectorized_elementwise_kernel", "n": 2, "us": 120.5},
                                {"name": "reduce_kernel|a", "n": 1, "us": 90.25},
                                {"name": long_name, "n": 1, "us": 3.0},
                                {"name": "elementwise_kernel", "n": 1, "us": 1.0}],
                            "gemm_bf16|gemm|torch|bf16|M=4096,N=4096,K=4096": {"error": "RuntimeError: no CUPTI"}}},
                  f)
    rc, so, se = run(good, "--readme", readme, "--docs", docs)
    check(rc == 0, "report.py exits 0 on the fixture", se)
    tables_path = os.path.join(good, "tables.md")
    check(os.path.exists(tables_path), "tables.md written")
    for name in ("roofline.png", "ladder_rmsnorm.png", "ladder_rmsnorm_2.png", "ladder_gemm_bf16.png",
                 "ladder_gemm_bf16_2.png"):
        png = os.path.join(good, name)
        ok = os.path.exists(png) and os.path.getsize(png) > 10000
        if ok:
            with open(png, "rb") as f:
                ok = f.read(8) == b"\x89PNG\r\n\x1a\n"
        check(ok, "%s written (a PNG)" % name)
    for fam in ("swiglu", "rope", "layer"):
        check(not os.path.exists(os.path.join(good, "ladder_%s.png" % fam)), "no chart for a family without rows (%s)" % fam)
    md = open(tables_path).read() if os.path.exists(tables_path) else ""

    check("## Contents" in md and "- [rmsnorm](#rmsnorm)" in md and "- [gemm_bf16](#gemm_bf16)" in md,
          "table of contents")
    check("## rmsnorm" in md and "### add_rmsnorm" in md and "## gemm_bf16" in md,
          "sections per family and op")
    check(md.find("## rmsnorm") < md.find("## gemm_bf16"), "families in ladder order")
    check("![rmsnorm ladder](ladder_rmsnorm.png)" in md, "tables.md shows the family's charts")
    # The rung list carries the change text once per rung.
    r = table_row(md, "01", "warp_per_row", "a warp per row, shuffle reduction")
    check(r is not None, "rung list: rung 01 with its change", md)
    sec = md[md.find("### rmsnorm"):md.find("### add_rmsnorm")]
    check(sec.count("a warp per row, shuffle reduction") == 1, "change text once per rung", sec)
    # Rung-by-shape: rung 01 rmsnorm 3600 GB/s, 0.95x the same-run cudaMemcpy; the best rung in bold.
    hdr = table_row(sec, "rung", "bf16 rows=16384,cols=8192 (GB/s)")
    check(hdr is not None, "rung-by-shape header: dtype, shape and unit per column", sec)
    check(hdr is not None and any("rows=64,cols=1024, L2-resident" in c for c in hdr),
          "L2-resident shape marked in its column head", str(hdr))
    r = table_row(sec, "01 warp_per_row")
    check(r is not None and "**3600** (0.95×)" in r, "rung 01: rate, bold as the best, ratio to cudaMemcpy", str(r))
    t = [ln for ln in sec.splitlines() if ln.startswith("| torch_compile |")]
    check(any("| 3000 |" in ln for ln in t), "PyTorch row on the rungs' scale", str(t))
    # gemm 4096^3: the newer run (0.25 ms, 549.8 TFLOP/s) replaces the older one (1.0 ms).
    gsec = md[md.find("## gemm_bf16"):]
    g = table_row(gsec, "02 mma_ldmatrix")
    check(g is not None and "**549.8** (0.80×)" in g, "latest timestamp kept, ratio to the same-run cuBLAS", str(g))
    check(g is not None and any("% bw" not in c and "(0.80×)" in c for c in g) and "1.000" not in " ".join(g),
          "older duplicate dropped", str(g))
    # The entry point against the fastest library row (torch_compile 0.17896 ms over auto 0.14914).
    e = table_row(md, "rmsnorm", "rows=16384,cols=8192", "01")
    check(e is not None and "torch_compile" in e and "1.200" in e and "" in e,
          "entry point vs fastest library: ratio library / auto", str(e))
    check("behind the fastest library row" in md and "by more than 2% on 0 of 1 shapes" in md,
          "entry point vs fastest library: the count", md[md.find("## Entry point"):][:600])
    check("SM MHz auto / library" in md and e is not None and any(" / " in c for c in e),
          "entry point vs fastest library: each row's clock", str(e))
    # What PyTorch launches (torch_kernels.json): the fastest PyTorch row that has kernels recorded
    # (torch; torch_compile's are never recorded), its three heaviest kernels, names shortened.
    lk = table_row(md, "rmsnorm", "rows=16384,cols=8192", "torch")
    check("### What PyTorch launches" in md and lk is not None
          and "`vectorized_elementwise_kernel` ×2 120.5 us" in lk[-1] and "`reduce_kernel/a` 90.2 us" in lk[-1]
          and "…` 3.0 us" in lk[-1] and "+ 1 more" in lk[-1] and long_name not in lk[-1],
          "library kernels: heaviest three, counts, shortened names, the rest counted", str(lk))
    check(md.find("### What PyTorch launches") < md.find("## Measured roofs"),
          "library kernels: under the entry-point table")
    check("wgmma_bf16" in md and "800.0 TFLOP/s" in md and "4000 GB/s" in md, "measured roofs table")
    check("4400 GB/s (read)" in md, "read_stream row in the roofs table", md[md.find("## Measured roofs"):][:2000])
    check("5.50 us a launch, 1.20 us back to back" in md, "launch_empty row in the roofs table",
          md[md.find("## Measured roofs"):][:2000])
    check("NVIDIA H200" in md and "CUDA runtime 13.0" in md, "device and CUDA in the context line")

    text = open(readme).read()
    check("stale" not in text, "README markers replaced")
    check(all(s in text for s in ("hand-written intro", "hand-written middle", "hand-written end")),
          "README text outside the markers kept")
    hl = text[text.find("<!-- BEGIN HEADLINE -->"):text.find("<!-- END HEADLINE -->")]
    hr = table_row(hl, "gemm", "bf16 4096×4096×4096")
    check(hr is not None and "02 mma_ldmatrix" in hr and "0.80×" in hr and "0.84×" in hr,
          "headline: best rung vs cuBLAS and PyTorch", hl)
    ar = table_row(hl, "rmsnorm", "bf16 16384×8192")
    check(ar is not None and "→ 01 (0.95×)" in ar, "headline: the entry point's pick and ratio", str(ar))
    check("NVIDIA H200" in hl and "2026-11-29" in hl and "driver" in hl and "CUDA" in hl,
          "headline names card, date, driver, CUDA", hl)
    run_block = text[text.find("<!-- BEGIN RUN -->"):text.find("<!-- END RUN -->")]
    check("`scripts/run_all.sh` took 13 min on the NVIDIA H200" in run_block and "head to head 5.0 min" in run_block
          and "`scripts/test.sh` took 4 min there (build and 170 tests, 0 failed; commit abc123)" in run_block,
          "README run block: both commands' times", run_block)
    check(table_row(so, "gemm", "bf16 4096×4096×4096") is not None, "headline printed on stdout", so)
    note = open(os.path.join(docs, "rmsnorm.md")).read()
    lr = table_row(note, "01", "warp_per_row")
    check("stale" not in note and lr is not None and "3600" in lr and "3.60×" in lr and "0.95×" in lr,
          "design note ladder table: rate, × parent rung (0.537/0.149), × reference", note)
    check(table_row(note, "rung", "name", "parent") is not None and "× parent" in note and lr is not None
          and "00" in lr, "design note ladder table: the parent column from the rows", note)
    api = open(os.path.join(docs, "api.md")).read()
    br = table_row(api, "rmsnorm", "bf16 1x4096")
    check("stale" not in api and api.endswith("end\n") and br is not None and "21.5" in br and "6.2" in br
          and "9.0" in br and "+12.5" in br, "docs/api.md binding table: op, C API, PyTorch, difference", api)
    rl = table_row(sec, "01", "warp_per_row", "00")
    check(rl is not None, "rung list: the parent of rung 01", sec)
    check(note.endswith("### 01\n"), "design note text outside the markers kept", note)
    # Idempotent: a second run gives the same README and notes.
    rc2, _, _ = run(good, "--readme", readme, "--docs", docs)
    check(rc2 == 0 and open(readme).read() == text and open(os.path.join(docs, "rmsnorm.md")).read() == note,
          "README and note updates are idempotent")

    # ---- the read floor: decode rows against bench_peak's fastest read of as many bytes
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import report
    with open(os.path.join(HERE, "fixtures", "peak.jsonl")) as f:
        peak_lines = f.readlines()
    read_tpl = next(json.loads(ln) for ln in peak_lines if json.loads(ln)["op"] == "read_stream")

    def read_row(op, nbytes, rate, l2=False, best_of=None):
        r = dict(read_tpl, op=op, variant_name=op, shape={"bytes": nbytes}, shape_str="bytes=%d" % nbytes,
                 bytes=float(nbytes), median_ms=nbytes / rate / 1e6, gbps=float(rate), l2_resident=l2,
                 notes={"best_of": best_of} if best_of else {})
        return r
    copy = dict(read_row("copy_memcpy", 1 << 30, 9000), op="copy_memcpy")
    reads = [read_row("read_stream", 1 << 24, 2000), read_row("read_floor", 1 << 24, 2500),
             read_row("read_stream", 1 << 27, 4000), read_row("read_tma_bulk", 1 << 27, 4300),
             read_row("read_stream", 1 << 26, 9900, l2=True), read_row("read_floor", 1 << 34, 4700), copy]

    def floor_of(nbytes, rows=reads):
        g, r = report.read_floor(rows, nbytes)
        return (round(g), int(r["bytes"])) if g else None
    check(floor_of(int((1 << 27) * 1.02)) == (4700, 1 << 34) and floor_of(1 << 25) == (4300, 1 << 27),
          "read floor: the nearest measured size at or above the bytes, its fastest read row",
          str((floor_of(int((1 << 27) * 1.02)), floor_of(1 << 25))))
    check(floor_of((1 << 24) + 16384) == (2500, 1 << 24) and floor_of(1 << 27) == (4300, 1 << 27),
          "read floor: a size up to 1% below the bytes counts (a decode row's Q and O bytes)",
          str(floor_of((1 << 24) + 16384)))
    check(floor_of(1 << 35) == (4700, 1 << 34), "read floor: above every size, the largest", str(floor_of(1 << 35)))
    check(floor_of(1 << 26) == (4300, 1 << 27), "read floor: L2-resident read rows and copies never count",
          str(floor_of(1 << 26)))
    check(floor_of(1 << 24, [copy]) is None, "read floor: no read rows, no floor")

    dec_shape = {"B": 1, "Hq": 32, "Hkv": 8, "Sq": 1, "Skv": 32768, "D": 128, "causal": 1}
    dec_bytes = 134234112  # K + V (1 << 27) + Q + O
    tpl = json.loads(open(os.path.join(HERE, "fixtures", "rmsnorm.jsonl")).readline())

    def dec_row(impl, variant, name, rate, nbytes=dec_bytes, notes=None):
        return dict(tpl, family="attention", op="decode", impl=impl, variant=variant, variant_name=name,
                    change="", parent=-1, shape=dec_shape, shape_str=",".join("%s=%d" % kv for kv in dec_shape.items()),
                    flops=536870912, bytes=nbytes, median_ms=nbytes / rate / 1e6, gbps=rate, notes=notes or {})
    kl_ms = dec_bytes / 3375 / 1e6
    dec_rows = [dec_row("kl", 3, "flash_split_kv", 3375), dec_row("kl", -1, "auto", 3375, notes={"picked": "03"}),
                dict(dec_row("cudaMemcpy", -1, "copy_kv_bytes", 1, nbytes=1 << 27), median_ms=0.9 * kl_ms, flops=0),
                dec_row("torch_sdpa_cudnn", -1, "torch_sdpa_cudnn", 3600)]

    def floor_folder(name, peak_rows):
        d = os.path.join(out, name)
        fresh(d, [f for f in FIXTURES if not f.endswith("peak.jsonl")])
        with open(os.path.join(d, "peak.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in peak_rows))
        with open(os.path.join(d, "attention.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in dec_rows))
        rme, ddocs = os.path.join(d, "README.md"), os.path.join(d, "docs")
        os.makedirs(ddocs)
        with open(rme, "w") as f:
            f.write("<!-- BEGIN HEADLINE -->\n<!-- END HEADLINE -->\n")
        with open(os.path.join(ddocs, "attention.md"), "w") as f:
            f.write("<!-- BEGIN LADDER TABLE -->\n<!-- END LADDER TABLE -->\n")
        rc_, _, se_ = run(d, "--readme", rme, "--docs", ddocs, "--quiet")
        texts = [open(p_).read() if os.path.exists(p_) else "" for p_ in
                 (os.path.join(d, "tables.md"), rme, os.path.join(ddocs, "attention.md"))]
        return rc_, se_, texts
    no_reads = [json.loads(ln) for ln in peak_lines if not json.loads(ln)["op"].startswith("read_")]
    rc, se, (fmd, fread, fnote) = floor_folder(
        "floor", no_reads + [read_row("read_floor", 1 << 27, 4500, best_of="read_tma_bulk"),
                             read_row("read_floor", 1 << 24, 2500, best_of="read_ldg_chunks")])
    check(rc == 0, "read floor fixture: report.py exits 0", se)
    dsec = fmd[fmd.find("### decode"):]
    c3 = table_row(dsec, "03 flash_split_kv")
    check(c3 is not None and "**3375** (0.90× cudaMemcpy, 75% of read floor)" in c3,
          "decode cell: ratio labelled with its reference, then the % of the read floor at the row's size",
          str(c3))
    ct = table_row(dsec, "torch_sdpa_cudnn", "3600 (80% of read floor)")
    check(ct is not None, "decode cell: PyTorch's % of the read floor", str(ct))
    check("4500 GB/s (read; fastest: read_tma_bulk)" in fmd, "roofs table: read_floor names its fastest kernel",
          fmd[fmd.find("## Measured roofs"):][:1500])
    hd = table_row(fread, "decode")
    check("best rung % of read floor" in fread and hd is not None and "75%" in hd and "cudaMemcpy 3750 GB/s" in hd,
          "headline: the decode line's % of the read floor beside its cudaMemcpy reference", fread)
    nr = table_row(fnote, "03", "flash_split_kv")
    check("% of read floor" in fnote and nr is not None and "75%" in nr and "0.90×" in nr,
          "design note ladder table: a % of read floor column for the decode panel", fnote)
    check(os.path.exists(os.path.join(out, "floor", "ladder_attention.png")), "decode ladder chart with the floor")
    rc, se, (fmd, fread, fnote) = floor_folder("nofloor", no_reads)
    check(rc == 0 and "of read floor" not in fmd + fread + fnote and table_row(fnote, "03", "flash_split_kv"),
          "no read rows: no read floor column or cell anywhere", se + fread + fnote)

    # ---- refusals
    mixed = os.path.join(out, "mixed")
    fresh(mixed, FIXTURES)
    with open(FIXTURES[0]) as f:
        obj = json.loads(f.readline())
    obj["device"]["name"] = "NVIDIA GeForce RTX 5090"
    with open(os.path.join(mixed, "zz_other.jsonl"), "w") as f:
        f.write(json.dumps(obj) + "\n")
    rc, so, se = run(mixed)
    check(rc == 1, "mixed devices: exit 1", "rc=%d" % rc)
    check("NVIDIA H200" in se and "NVIDIA GeForce RTX 5090" in se and "zz_other.jsonl:1" in se,
          "mixed devices: names both devices and the file:line", se)
    check(not os.path.exists(os.path.join(mixed, "tables.md")), "mixed devices: nothing written")

    bad = os.path.join(out, "bad")
    fresh(bad, FIXTURES)
    with open(FIXTURES[0]) as f:
        lines = f.readlines()
    with open(os.path.join(bad, "zz_bad.jsonl"), "w") as f:
        f.write(lines[0] + "\n" + '{"family": "rmsnorm", "op": \n')
    rc, so, se = run(bad)
    check(rc == 1, "malformed JSON: exit 1", "rc=%d" % rc)
    check("zz_bad.jsonl:3" in se, "malformed JSON: names file:line", se)

    with open(os.path.join(bad, "zz_bad.jsonl"), "w") as f:
        o2 = json.loads(lines[0])
        del o2["median_ms"]
        f.write(lines[0] + json.dumps(o2) + "\n")
    rc, so, se = run(bad)
    check(rc == 1 and "zz_bad.jsonl:2" in se and "median_ms" in se,
          "row missing a field: file:line and the field", se)

    badk = os.path.join(out, "badk")
    fresh(badk, FIXTURES)
    with open(os.path.join(badk, "torch_kernels.json"), "w") as f:
        f.write('{"rows": [1, 2]}')
    rc, so, se = run(badk)
    check(rc == 1 and "torch_kernels.json" in se and "malformed" in se,
          "malformed torch_kernels.json refused", se)
    with open(os.path.join(badk, "torch_kernels.json"), "w") as f:
        f.write('{"rows": {"rmsnorm|rmsnorm|torch|bf16|rows=16384,cols=8192": [{"name": 3}]}}')
    rc, so, se = run(badk)
    check(rc == 1 and "rows=16384,cols=8192" in se and "Traceback" not in se,
          "torch_kernels.json entry without a kernel name refused", se)

    empty = os.path.join(out, "empty")
    os.makedirs(empty)
    rc, so, se = run(empty)
    check(rc == 1 and "no *.jsonl" in se, "empty folder refused", se)

    # ---- torch_baseline.py: what can be checked without a GPU
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import torch_baseline as tb

    def brute(sq, skv):
        return sum(1 for i in range(sq) for j in range(skv) if j <= i + skv - sq)
    cases = [(1, 1), (4, 4), (3, 7), (1, 9), (5, 6), (64, 200), (200, 200)]
    check(all(tb.causal_pairs(a, b) == brute(a, b) for a, b in cases),
          "torch_baseline causal pair count (diagonal aligned to the end)")
    check(tb.causal_pairs(4096, 4096) == 4096 * 4097 // 2, "causal pairs at Sq = Skv")
    attn = "B=1,Hq=32,Hkv=32,Sq=4096,Skv=4096,D=128,causal=0"
    dec = "B=1,Hq=32,Hkv=8,Sq=1,Skv=4096,D=128,causal=1"
    check(tb.shape_plan(["attention"], [attn, dec], False)
          == [("attention", [[(1, 32, 32, 4096, 4096, 128, 0)], [(1, 32, 8, 1, 4096, 128, 1)]])],
          "torch_baseline --shape: attention and decode (Sq = 1) shapes")
    check(tb.shape_plan(["sgemm", "attention"], ["M=5,N=8,K=16"], False) == [("sgemm", [[(5, 8, 16)], []])],
          "torch_baseline --shape: a GEMM shape goes to the GEMM families only")
    check(tb.shape_plan(["rmsnorm"], ["rows=4096,cols=4099"], False)
          == [("rmsnorm", [[e for e in tb.ROW_SHAPES["rmsnorm"] if e[:2] == (4096, 4099)], []])],
          "torch_baseline --shape: a row-op shape selects the default entry (its dtypes)")
    check([f for f, _ in tb.shape_plan(tb.FAMILIES, [], False)] == tb.FAMILIES,
          "torch_baseline: no --shape runs every family's default list")
    for bad in ("rows=3,cols=4", "M=1,N=2", "M=1,N=x,K=2", "M=1,M=2,N=2,K=2", "M=-1,N=8,K=8",
                "B=1,Hq=32,Hkv=32,Sq=64,Skv=64,D=128,causal=7", "B=1,Hq=32,Hkv=5,Sq=64,Skv=64,D=128,causal=0"):
        try:
            tb.shape_plan(["rmsnorm", "gemm_bf16", "attention"], [bad], False)
            check(False, "torch_baseline --shape '%s' refused" % bad)
        except ValueError:
            check(True, "torch_baseline --shape '%s' refused" % bad)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "torch_baseline.py"), "--shape", "M=1"],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "--shape 'M=1'" in p.stderr and "Traceback" not in p.stderr,
          "torch_baseline bad --shape: exit 2 before PyTorch or a GPU is needed", p.stderr)
    for extra, why in ((["--out", "x.jsonl"], "--out is for timed rows"), (["--family", "layer"], "layer")):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "torch_baseline.py"),
                            "--kernels", os.path.join(out, "k.json")] + extra, capture_output=True, text=True)
        check(p.returncode == 2 and why in p.stderr and "Traceback" not in p.stderr,
              "torch_baseline --kernels with %s: exit 2" % " ".join(extra), p.stderr)
    # ---- a launch's breakdown: "<op>_step" rows become one table (not op tables or charts)
    import report
    with open(FIXTURES[0]) as f:
        base = json.loads(f.readline())
    shape = {"B": 1, "S": 4096, "L": 4096, "hidden": 4096, "Hq": 32, "Hkv": 8, "D": 128, "mlp": 14336}
    ss = ",".join("%s=%d" % kv for kv in shape.items())

    def lrow(op, variant, name, ms, notes=None):
        return dict(base, family="layer", op=op, impl="kl", variant=variant, variant_name=name, shape=shape,
                    shape_str=ss, median_ms=ms, flops=0.0, bytes=0.0, notes=notes or {}, ok=True)
    lrows = [lrow("prefill", 0, "entry_points", 3.0),
             lrow("prefill_step", 0, "rmsnorm", 0.5, {"of": "00 entry_points"}),
             lrow("prefill_step", 1, "gemm qkv", 1.5, {"of": "00 entry_points"}),
             lrow("prefill_step", 2, "attention", 1.0, {"of": "00 entry_points"})]
    for i, r in enumerate(lrows):
        r["_order"] = i
    rep = report.Report(out, lrows, {})
    st = rep.steps_table("layer")
    check(("prefill", "layer") not in rep.groups and ("layer", "prefill_step") not in rep.groups
          and rep.ops("layer") == ["prefill"], "step rows stay out of the op tables", str(rep.groups.keys()))
    check(table_row(st, "gemm qkv", "1.500 (50%)") is not None and table_row(st, "steps' sum", "3.000")
          and table_row(st, "whole launch (00 entry_points)", "3.000"),
          "steps table: each step's ms and share, the sum and the whole launch's row", st)
    check(rep.steps_table("rmsnorm") == "", "no step rows: no steps table")
    # Two rungs' steps on one shape: a column each, named by its rung, each with its own launch row.
    lrows2 = lrows + [lrow("prefill", 2, "fused_gate_up", 1.4),
                      lrow("prefill_step", 0, "rmsnorm", 0.4, {"of": "02 fused_gate_up"}),
                      lrow("prefill_step", 1, "gate_up_swiglu", 1.2, {"of": "02 fused_gate_up"})]
    for i, r in enumerate(lrows2):
        r["_order"] = i
    st2 = report.Report(out, lrows2, {}).steps_table("layer")
    check("Rung 00 entry_points:" in st2 and "Rung 02 fused_gate_up:" in st2
          and table_row(st2, "gate_up_swiglu", "1.200 (75%)") and table_row(st2, "gemm qkv", "1.500 (50%)")
          and table_row(st2, "whole launch (00 entry_points)", "3.000")
          and table_row(st2, "whole launch (02 fused_gate_up)", "1.400")
          and table_row(st2, "steps' sum", "1.600") and table_row(st2, "steps' sum", "3.000"),
          "steps table: one table per rung, each with its own sum and launch row", st2)

    # ---- h2h.py: the round bookkeeping and the table, on synthetic rows; the plan and refusals
    import h2h
    sh = h2h.gemm(4096, 4096, 4096)

    def hrow(impl, name, variant, ms, rnd, ok=True):
        return {"family": "gemm_bf16", "op": "gemm", "shape_str": sh, "impl": impl, "variant_name": name,
                "variant": variant, "median_ms": ms, "ok": ok, "validated": ok, "clock_mhz": 1900.0 + rnd,
                "notes": dict({"picked": "12"} if name == "auto" else {}, h2h_round=str(rnd))}
    hrows = [hrow("cublas", "cublas", -1, 0.20, 0), hrow("cublas", "cublas", -1, 0.18, 1),
             hrow("kl", "four_stages", 12, 0.19, 0), hrow("kl", "four_stages", 12, 0.21, 1),
             hrow("kl", "stream_k_tail", 14, 0.17, 0), hrow("kl", "stream_k_tail", 14, 0.05, 1, ok=False),
             hrow("kl", "auto", -1, 0.19, 0)]
    other = dict(hrow("kl", "four_stages", 12, 0.01, 0), family="sgemm")  # same shape, other family
    hb = h2h.best_rounds(hrows + [other])
    e = hb[("gemm_bf16", "gemm", sh, "cublas", "cublas")]
    check(e["best"]["median_ms"] == 0.18 and e["n"] == 2 and abs(e["spread"] - 0.02 / 0.18) < 1e-12,
          "h2h best round: the lowest median, spread (max - min) / min")
    e14 = hb[("gemm_bf16", "gemm", sh, "kl", "stream_k_tail")]
    check(e14["n"] == 1 and e14["best"]["median_ms"] == 0.17, "h2h: a row that failed validation is not a round")
    tl = h2h.table("gemm_bf16", hb, 2)
    line = next((x for x in tl if x.startswith("| M=4096, N=4096, K=4096")), "")
    check("14 stream_k_tail: 0.1700 (1900 MHz, 0.0%, 1 of 2 rounds)" in line and "1.059, 0.947" in line
          and "(12) 0.1900 (1900 MHz" in line,
          "h2h table: best rung, auto pick, ratios library / ours; other families' rows kept out", "\n".join(tl))
    # attention: the portable rungs (02, 03, 11) go to the part-1 column, the others to "best rung"
    ash = h2h.attn(4096, 128, 1)
    arow = lambda impl, name, v, ms: dict(hrow(impl, name, v, ms, 0), family="attention", shape_str=ash)
    ab = h2h.best_rounds([arow("kl", "mma_sync", 3, 0.5), arow("kl", "tma_mma_sync", 11, 0.4),
                          arow("kl", "hopper", 8, 0.3), arow("torch_sdpa_flash", "flash", -1, 0.6)])
    apk = h2h.picks("attention", ab, ash)
    check(apk["top"]["best"]["variant"] == 8 and apk["part1"]["best"]["variant"] == 11,
          "h2h: rung 11 (TMA-fed mma.sync) counts as a portable rung, compared with flash")
    # --split-rungs: cuBLAS timed by every arm of a round counts once per round (the round's median
    # arm), and the best rung is chosen by the median of its rounds, not by its luckiest round.
    split = [hrow("cublas", "cublas", -1, ms, rnd) for rnd, ms in ((0, 0.20), (0, 0.10), (0, 0.21), (1, 0.19))]
    split += [hrow("kl", "four_stages", 12, 0.17, 0), hrow("kl", "four_stages", 12, 0.17, 1),
              hrow("kl", "stream_k_tail", 14, 0.12, 0), hrow("kl", "stream_k_tail", 14, 0.24, 1)]
    sb = h2h.best_rounds(split)
    cb = sb[("gemm_bf16", "gemm", sh, "cublas", "cublas")]
    check(cb["n"] == 2 and cb["best"]["median_ms"] == 0.19,
          "h2h: a row timed by several arms of one round counts once per round (the median arm)")
    sline = next((x for x in h2h.table("gemm_bf16", sb, 2) if x.startswith("| M=4096")), "")
    check("12 four_stages: 0.1700" in sline, "h2h: the best rung is chosen by its rounds' median", sline)
    hdir = os.path.join(out, "h2h")
    os.makedirs(hdir)
    with open(os.path.join(hdir, "rows.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in hrows))
    rc, so, se = run_script(os.path.join(ROOT, "scripts", "h2h.py"), "--set", "gemm_bf16", "--from",
                            os.path.join(hdir, "rows.jsonl"))
    with open(os.path.join(hdir, "table.md")) as f:
        tmd = f.read()
    check(rc == 0 and "1.059, 0.947" in tmd, "h2h --from: the table rewritten from a rows file", so + se)
    # report.py: the head to head in tables.md and in the README's optional block
    rdir = os.path.join(out, "h2h_report")
    fresh(rdir, FIXTURES)
    rmd = os.path.join(out, "README_h2h.md")
    block = "<!-- BEGIN HEAD TO HEAD -->\nstale\n<!-- END HEAD TO HEAD -->\n"
    with open(rmd, "w") as f:
        f.write("<!-- BEGIN HEADLINE -->\n<!-- END HEADLINE -->\n<!-- BEGIN GENERATED TABLES -->\n"
                "<!-- END GENERATED TABLES -->\n" + block)
    rc, so, se = run(rdir, "--readme", rmd, "--quiet")
    with open(rmd) as f:
        rtext = f.read()
    check(rc == 0 and "No head to head in this run" in rtext and "stale" not in rtext,
          "report.py: a run without h2h rows says so in the README block", se + rtext)
    os.makedirs(os.path.join(rdir, "h2h"))
    with open(os.path.join(rdir, "h2h", "rows.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in hrows))
    rc, so, se = run(rdir, "--readme", rmd, "--quiet")
    with open(rmd) as f:
        rtext = f.read()
    with open(os.path.join(rdir, "tables.md")) as f:
        ttext = f.read()
    want = "| gemm_bf16 | M=4096, N=4096, K=4096 | cublas | 14 stream_k_tail | 1.059 | 0.947 |"
    check(rc == 0 and want in rtext and "2 rounds" in rtext and want in ttext and "## Head to head" in ttext,
          "report.py: the h2h ratios in the README block and in tables.md", se + rtext)
    rc, so, se = run_script(os.path.join(ROOT, "scripts", "h2h.py"), "--dry-run", "--rounds", "2", "--set",
                            "attention", "--shape", h2h.attn(4096, 128, 0))
    lines_ = so.splitlines()
    check(rc == 0 and len(lines_) == 4 and " kl: " in lines_[0] and " torch: " in lines_[2]
          and "--no-compile" in lines_[1],
          "h2h --dry-run: two arms per round, their order alternating", so + se)
    rc, so, se = run_script(os.path.join(ROOT, "scripts", "h2h.py"), "--dry-run", "--rounds", "2", "--set",
                            "sgemm", "--shape", h2h.gemm(4096, 4096, 4096))
    check(rc == 0 and "--ref-last" not in so.splitlines()[0] and so.splitlines()[1].endswith("--ref-last"),
          "h2h --dry-run: the cuBLAS row goes last on odd rounds", so + se)
    rc, so, se = run_script(os.path.join(ROOT, "scripts", "h2h.py"), "--dry-run", "--rounds", "2", "--split-rungs",
                            "--set", "gemm_bf16", "--shape", h2h.gemm(4096, 4096, 4096))
    sl = so.splitlines()
    nv = len(h2h.SETS["gemm_bf16"][1][1].split(","))
    check(rc == 0 and len(sl) == 2 * nv and "--variant 12 " in sl[0] and "--variant auto " in sl[nv - 1]
          and "--variant auto " in sl[nv] and all(x.endswith("--ref-last") for x in sl[nv:]),
          "h2h --split-rungs: one arm per rung, order reversed on odd rounds", so + se)
    for bad in (["--set", "nope"], ["--set", ","], ["--rounds", "0"], ["--cooldown", "inf"],
                ["--shape", "M=1,N=8,K=8"], ["--from", os.path.join(out, "no_such_rows.jsonl")]):
        rc, so, se = run_script(os.path.join(ROOT, "scripts", "h2h.py"), "--dry-run", *bad)
        check(rc == 2 and "Traceback" not in se, "h2h refuses " + " ".join(bad), se)
    if tb.torch is None:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "torch_baseline.py"), "--quick"],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "PyTorch is not installed" in p.stderr and "Traceback" not in p.stderr,
              "torch_baseline without PyTorch: clean message, exit 1", p.stderr)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
