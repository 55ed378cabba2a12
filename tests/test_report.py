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

    # ---- the happy path: tables.md, roofline.png, README markers
    good = os.path.join(out, "h200")
    fresh(good, FIXTURES)
    readme = os.path.join(out, "README.md")
    with open(readme, "w") as f:
        f.write("# title\n\nhand-written intro\n\n<!-- BEGIN HEADLINE -->\nstale headline\n"
                "<!-- END HEADLINE -->\n\nhand-written middle\n\n<!-- BEGIN GENERATED TABLES -->\n"
                "stale tables\n<!-- END GENERATED TABLES -->\n\nhand-written end\n")
    rc, so, se = run(good, "--readme", readme)
    check(rc == 0, "report.py exits 0 on the fixture", se)
    tables_path = os.path.join(good, "tables.md")
    png = os.path.join(good, "roofline.png")
    check(os.path.exists(tables_path), "tables.md written")
    check(os.path.exists(png) and os.path.getsize(png) > 10000, "roofline.png written")
    with open(png, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "roofline.png is a PNG")
    md = open(tables_path).read() if os.path.exists(tables_path) else ""

    check("## rmsnorm" in md and "### add_rmsnorm" in md and "## gemm_bf16" in md,
          "sections per family and op")
    check(md.find("## rmsnorm") < md.find("## gemm_bf16"), "families in ladder order")
    # Rung 01 rmsnorm: 3600 GB/s against a 4000 GB/s copy roof = 90%; cudaMemcpy 3800 GB/s of the
    # same bytes = 0.95x; torch (2000 GB/s) 1.80x; torch_compile (3000 GB/s) 1.20x.
    r = table_row(md, "01", "warp_per_row", "rows=16384,cols=8192")
    check(r is not None, "rmsnorm rung 01 row present", md)
    if r:
        check("3600" in r, "rmsnorm rung 01 GB/s", str(r))
        check("90% bw" in r, "rmsnorm rung 01 % of copy roof", str(r))
        check("0.95×" in r, "rmsnorm rung 01 ratio to cudaMemcpy", str(r))
        check("1.80×" in r and "1.20×" in r, "rmsnorm rung 01 ratios to torch and torch_compile",
              str(r))
        check("a warp per row, shuffle reduction" in r, "change column from the row", str(r))
    hdr = table_row(md, "rung", "name", "change", "shape", "dtype", "median ms")
    check(hdr is not None and "× torch_compile" in hdr and "% roof" in hdr and "L2" in hdr,
          "rmsnorm table header has ratio, roof and L2 columns", str(hdr))
    a = table_row(md, "auto", "rows=16384,cols=8192")
    check(a is not None, "auto row present")
    l2 = table_row(md, "rows=64,cols=1024")
    check(l2 is not None and "L2-resident" in l2, "l2_resident row marked", str(l2))
    # gemm 4096^3: the newer run (0.25 ms, 549.8 TFLOP/s) replaces the older one (1.0 ms).
    g = table_row(md, "02", "M=4096,N=4096,K=4096")
    check(g is not None and "0.2500" in g and "549.8" in g, "latest timestamp kept", str(g))
    check(g is not None and "0.80×" in g, "gemm ratio to the same-run cuBLAS row (0.2/0.25)", str(g))
    check(g is not None and "69% wgmma" in g, "gemm % of the measured wgmma roof (549.8/800)", str(g))
    check(g is not None and "0.84×" in g, "gemm ratio to torch (0.21/0.25)", str(g))
    check("1.000" not in (table_row(md, "02", "M=4096,N=4096,K=4096") or []),
          "older duplicate dropped")
    d = table_row(md, "02", "M=16,N=4096,K=4096")
    check(d is not None and "% bw" in " ".join(d), "decode-shaped GEMM judged against bandwidth",
          str(d))
    check("wgmma_bf16" in md and "800.0 TFLOP/s" in md and "4000 GB/s" in md,
          "measured roofs table")
    check("NVIDIA H200" in md and "CUDA runtime 13.0" in md, "device and CUDA in the context line")

    text = open(readme).read()
    check("stale" not in text, "README markers replaced")
    check(all(s in text for s in ("hand-written intro", "hand-written middle", "hand-written end")),
          "README text outside the markers kept")
    hl = text[text.find("<!-- BEGIN HEADLINE -->"):text.find("<!-- END HEADLINE -->")]
    hr = table_row(hl, "gemm_bf16", "M=4096,N=4096,K=4096")
    check(hr is not None and "02 mma_ldmatrix" in hr and "0.80×" in hr and "0.84×" in hr,
          "headline: best rung vs cuBLAS and PyTorch", hl)
    check("NVIDIA H200" in hl and "2026-11-29" in hl and "driver" in hl and "CUDA" in hl,
          "headline names card, date, driver, CUDA", hl)
    check("roofline.png" in text and "tables.md" in text, "README links the roofline and tables")
    check(table_row(so, "gemm_bf16", "M=4096,N=4096,K=4096") is not None,
          "headline printed on stdout", so)
    # Idempotent: a second run gives the same README.
    rc2, _, _ = run(good, "--readme", readme)
    check(rc2 == 0 and open(readme).read() == text, "README update is idempotent")

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
    if tb.torch is None:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "torch_baseline.py"), "--quick"],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "PyTorch is not installed" in p.stderr and "Traceback" not in p.stderr,
              "torch_baseline without PyTorch: clean message, exit 1", p.stderr)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
