#!/usr/bin/env python3
"""Where a kernel's issue slots go: a summary of Nsight Compute's per-instruction warp-state samples.

    ncu --section SourceCounters --section WarpStateStats -k regex:NAME -c 1 -o rep ./build/bench_X ...
    ncu --import rep.ncu-rep --page source --csv --print-source sass > src.csv
    scripts/ncu_stalls.py src.csv [--top N] [--kernel SUBSTRING]

For each kernel in the export (one "Kernel Name" block per profiled launch): the share of all warp
samples per stall reason ("selected" = the warp issued), then the opcodes that hold the most samples
with their main reasons, then the --top N single instructions. The samples count every resident warp,
a warp-specialized kernel's producer warp included (its mbarrier spin shows as long scoreboard on a
branch). docs/method.md ("Where the issue slots go") says how the figures in the design notes were
made with it. Exits 2 on a file that is not such an export.
"""
import argparse
import collections
import csv
import signal
import sys


def parse(path):
    """Returns [(kernel name, header, rows)]: one entry per "Kernel Name" block of the export."""
    kernels = []
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    i = 0
    while i < len(rows):
        row = rows[i]
        if row and row[0] == "Kernel Name":
            name = row[1] if len(row) > 1 else "?"
            if i + 1 >= len(rows) or not rows[i + 1] or rows[i + 1][0] != "Address":
                raise ValueError(f"{path}: kernel block without an 'Address' header at line {i + 2}")
            header = rows[i + 1]
            body = []
            i += 2
            while i < len(rows) and not (rows[i] and rows[i][0] == "Kernel Name"):
                if len(rows[i]) == len(header):
                    body.append(dict(zip(header, rows[i])))
                i += 1
            kernels.append((name, header, body))
        else:
            i += 1
    if not kernels:
        raise ValueError(f"{path}: no 'Kernel Name' block (not an ncu --page source --csv export)")
    return kernels


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def opcode(source):
    toks = source.split()
    if toks and toks[0].startswith("@"):  # predicate
        toks = toks[1:]
    return toks[0].split(".")[0] if toks else "?"


def summarize(name, header, body, top):
    reasons = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]
    if not reasons:
        raise ValueError(f"kernel {name}: no stall_* columns (profile with --section SourceCounters)")
    total = collections.Counter()
    by_op = collections.defaultdict(collections.Counter)
    per_instr = []
    for d in body:
        op = opcode(d.get("Source", ""))
        s = 0.0
        for c in reasons:
            v = num(d.get(c))
            total[c] += v
            by_op[op][c] += v
            s += v
        by_op[op]["#instructions"] += 1
        per_instr.append((s, d))
    all_samples = sum(total.values())
    out = [f"kernel: {name}", f"warp samples: {all_samples:.0f}"]
    if all_samples == 0:
        return "\n".join(out + ["(no samples)"])
    out.append("share of samples per reason:")
    for c, v in total.most_common():
        if v > 0:
            out.append(f"  {c[6:]:20s} {100 * v / all_samples:6.2f}%")
    out.append("opcodes holding >= 0.3% of the samples (main reasons, points of all samples):")
    ranked = sorted(by_op.items(), key=lambda kv: -sum(v for k, v in kv[1].items() if k.startswith("stall_")))
    for op, cn in ranked:
        s = sum(v for k, v in cn.items() if k.startswith("stall_"))
        if s / all_samples < 0.003:
            continue
        main = ", ".join(f"{k[6:]} {100 * v / all_samples:.1f}" for k, v in cn.most_common()
                         if k.startswith("stall_") and v / all_samples >= 0.002)
        out.append(f"  {op:10s} {int(cn['#instructions']):5d} instr  {100 * s / all_samples:5.1f}%  {main}")
    if top > 0:
        out.append(f"top {top} instructions:")
        for s, d in sorted(per_instr, key=lambda x: -x[0])[:top]:
            main = sorted(((c[6:], num(d.get(c))) for c in reasons if num(d.get(c)) > 0), key=lambda kv: -kv[1])[:3]
            out.append(f"  {d.get('Address', '?')}  {100 * s / all_samples:5.2f}%  {d.get('Source', '').strip()[:60]:60s} "
                       + ", ".join(f"{k} {v:.0f}" for k, v in main))
    return "\n".join(out)


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+", help="ncu --page source --csv --print-source sass exports")
    ap.add_argument("--top", type=int, default=0, help="also list the N instructions with the most samples")
    ap.add_argument("--kernel", default="", help="only kernels whose name contains this")
    a = ap.parse_args(argv)
    if a.top < 0:
        ap.error("--top must be >= 0")
    try:
        for path in a.csv:
            for name, header, body in parse(path):
                if a.kernel and a.kernel not in name:
                    continue
                print(f"== {path}")
                print(summarize(name, header, body, a.top))
    except (OSError, ValueError) as e:
        print(f"ncu_stalls.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
