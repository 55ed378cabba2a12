#!/usr/bin/env python3
"""CPU test of scripts/ncu_stalls.py on tests/fixtures/ncu_source.csv (a two-kernel export in the
layout of `ncu --page source --csv --print-source sass`): the per-reason shares, the per-opcode
grouping (a predicated instruction counts under its opcode), the --kernel filter, --top, and the
refusal of a file that is not such an export. Prints "N passed, M failed"; exits non-zero on any failure.
"""
import os
import re
import sys
import tempfile

from script_check import check, run_script, summary

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "scripts", "ncu_stalls.py")
FIXTURE = os.path.join(HERE, "fixtures", "ncu_source.csv")


def run(*args):
    return run_script(SCRIPT, *args)


rc, out, err = run(FIXTURE, "--top", "2")
check(rc == 0, "fixture: exit 0", err)
first = out.split("== ")[1] if "== " in out else ""
# demo_kernel: 100 samples: selected 56, short_sb 30, barrier 10, wait 4 (the "Not Issued" columns are not added).
check("warp samples: 100" in first, "demo_kernel: 100 samples (Not-Issued columns not double counted)", first)
check(all(re.search(rf"\b{r}\s+{v}%", first) for r, v in
          (("selected", "56.00"), ("short_sb", "30.00"), ("barrier", "10.00"), ("wait", "4.00"))),
      "demo_kernel: per-reason shares", first)
check(re.search(r"FFMA\s+2 instr\s+80.0%", first) is not None, "predicated FFMA grouped with FFMA (2 instructions, 80%)", first)
check("top 2 instructions:" in first and first.index("0x7f0000000010") < first.index("0x7f0000000020"),
      "--top lists the instructions by samples", first)
check(out.count("kernel: ") == 2 and "other_kernel" in out, "both kernels of the export", out)
rc, out, err = run(FIXTURE, "--kernel", "other_kernel")
check(rc == 0 and out.count("kernel: ") == 1 and re.search(r"wait\s+75.00%", out) is not None,
      "--kernel keeps one kernel (MUFU: wait 3 of 4 samples)", out + err)
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write("a,b\n1,2\n")
rc, out, err = run(f.name)
os.unlink(f.name)
check(rc == 2 and "not an ncu" in err, "a CSV that is not an export: exit 2 with a reason", err)
rc, out, err = run(FIXTURE, "--top", "-1")
check(rc == 2, "--top -1 refused", err)

sys.exit(summary())
