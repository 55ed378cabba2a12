#!/usr/bin/env python3
"""Head to head: our kernels and the libraries on the comparison shapes, arms interleaved.

    python3 scripts/h2h.py [--set attention,gemm_bf16,sgemm,attention_d64] [--rounds 3] [--cooldown 1]
                           [--shape S ...] [--split-rungs] [--build build] [--dir results/<device>/h2h]
                           [--dry-run] [--from ROWS]

Why. Sustained benchmarking heats the card and the clock drops: in a full run the attention bench's
large Hopper rows run at a lower clock the longer the bench has been running, and PyTorch's rows
are timed minutes later in another process. The rule: interleave
the arms you compare, run them round-robin, keep each arm's best round and report the spread as
the noise floor. This script does that for the headline comparison shapes:

  attention  B=1, H=32, S in {4096, 8192}, causal and not, D = 128 (attention_d64: D = 64): arm
             "kl" is bench_attention --variant 2,3,6,7,8,11,auto (the portable rungs 02/03/11 in a
             column of their own, against flash), arm "torch" torch_baseline.py's flash and cuDNN rows
             (--family attention --shape S --no-compile).
  gemm_bf16  2048^3, 4096^3, 8192^3, 4096x11008x4096, 4096x4096x11008 and the Llama-3-8B prefill
             projections 4096x6144x4096, 4096x28672x4096, 4096x4096x14336: bench_gemm_bf16 --variant
             12,13,14,18,auto, whose cuBLAS row is timed in the same process; the order of cuBLAS and
             ours alternates with the rounds (--ref-last on odd rounds).
  sgemm      4096^3, 8192^3, 4096x11008x4096, 4096x4096x11008: bench_sgemm --variant 15,auto, the
             cuBLAS row alternating as above.

With --split-rungs every rung is an arm of its own (one process each; GEMM sets: cuBLAS in each).
Per round, per shape, the arms run in turn (their order reversed every other round), each after
--cooldown seconds of idle GPU. Every row of every round goes to DIR/rows.jsonl with notes
h2h_round / h2h_arm / h2h_slot; DIR/table.md has, per shape and row, the best round's median and
MHz and the spread of the rounds ((max - min) / min of the medians), and the ratios of the best
rounds: library time / ours (best rung, and the auto row). The "best rung" is chosen by the median
of each rung's rounds (not by its luckiest round: a minimum over rungs x rounds would favour us),
then shown by its best round like every other row; a row that several arms of one round time
(cuBLAS under --split-rungs) counts once per round. Validation is the benches' own: a row that
fails it is not timed and not in the table. Exits 1 if any arm failed, 2 on a bad flag or a
missing bench binary; --from rewrites table.md from a rows.jsonl without running anything.
"""
import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attn(S, D, causal):
    return "B=1,Hq=32,Hkv=32,Sq=%d,Skv=%d,D=%d,causal=%d" % (S, S, D, causal)


def gemm(M, N, K):
    return "M=%d,N=%d,K=%d" % (M, N, K)


# name -> (shapes, ours: (bench, variants), library impls, library arm: "torch" | "ref")
# Attention: "best rung" is the best Hopper rung; the portable mma.sync rungs (02, 03 and the TMA-fed
# 11, which also run on sm_120), compared with FlashAttention-2 (SDPA flash), get a column of their own.
FAMILY = {"attention": "attention", "attention_d64": "attention", "gemm_bf16": "gemm_bf16", "sgemm": "sgemm"}
PART1 = {"attention": ((2, 3, 11), "torch_sdpa_flash"), "attention_d64": ((2, 3, 11), "torch_sdpa_flash")}
SETS = {
    "attention": ([attn(S, 128, c) for S in (4096, 8192) for c in (1, 0)],
                  ("bench_attention", "2,3,6,7,8,11,auto"), ["torch_sdpa_cudnn", "torch_sdpa_flash"], "torch"),
    "attention_d64": ([attn(S, 64, c) for S in (4096, 8192) for c in (1, 0)],
                      ("bench_attention", "2,3,6,7,8,11,auto"), ["torch_sdpa_cudnn", "torch_sdpa_flash"], "torch"),
    "gemm_bf16": ([gemm(n, n, n) for n in (2048, 4096, 8192)] + [gemm(4096, 11008, 4096), gemm(4096, 4096, 11008),
                                                                   gemm(4096, 6144, 4096), gemm(4096, 28672, 4096),
                                                                   gemm(4096, 4096, 14336)],
                  ("bench_gemm_bf16", "12,13,14,18,auto"), ["cublas"], "ref"),
    "sgemm": ([gemm(n, n, n) for n in (4096, 8192)] + [gemm(4096, 11008, 4096), gemm(4096, 4096, 11008)],
              ("bench_sgemm", "15,auto"), ["cublas"], "ref"),
}


def arms_for(set_name, shape, rnd, build, split=False):
    """[(arm name, argv)] for one shape in round rnd, in the order they run. split: one arm (one
    process, its own cooldown) per listed variant instead of one for all of them."""
    shapes, (bench, variants), _, lib = SETS[set_name]
    groups = variants.split(",") if split else [variants]
    arms = []
    for v in groups:
        ours = [os.path.join(build, bench), "--variant", v, "--shape", shape]
        name = "kl" + (":" + v if split else "")
        if lib == "ref":  # one process times both; the reference row goes last on odd rounds
            arms.append((name + "+ref", ours + (["--ref-last"] if rnd % 2 else [])))
        else:
            arms.append((name, ours))
    if lib != "ref":
        arms.append(("torch", [sys.executable, os.path.join(ROOT, "scripts", "torch_baseline.py"), "--family",
                               "attention", "--shape", shape, "--no-compile"]))
    return arms if rnd % 2 == 0 else arms[::-1]


def row_id(r):
    return (r["family"], r["op"], r["shape_str"], r["impl"], r["variant_name"])


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def best_rounds(rows):
    """{row_id: {"best": the row of the round with the lowest median, "spread": (max - min) / min of
    the rounds' medians, "central": the median of the rounds' medians, "n": rounds}} over rows that
    passed validation (ok and validated). A row timed by several arms of one round (cuBLAS under
    --split-rungs) counts once per round, by the arm with that round's median value, so that the
    library does not get more tries than a rung."""
    per = {}
    for r in rows:
        if not (r.get("ok") and r.get("validated")) or not r.get("median_ms"):
            continue
        rnd = r.get("notes", {}).get("h2h_round", "?")
        per.setdefault(row_id(r), {}).setdefault(rnd, []).append(r)
    out = {}
    for k, rounds in per.items():
        picks = []
        for rs in rounds.values():
            rs = sorted(rs, key=lambda r: r["median_ms"])
            picks.append(rs[(len(rs) - 1) // 2])  # the (lower) median arm of the round
        ms = [r["median_ms"] for r in picks]
        out[k] = {"best": min(picks, key=lambda r: r["median_ms"]), "spread": (max(ms) - min(ms)) / min(ms),
                  "central": median(ms), "n": len(ms)}
    return out


def fmt_mhz(r):
    return "%.0f MHz" % r["clock_mhz"] if r.get("clock_mhz") else "- MHz"


def cell(v, rounds, label=""):
    """'label: ms (MHz, spread[, n rounds])' for one best_rounds() entry."""
    b = v["best"]
    n = "" if v["n"] >= rounds else ", %d of %d rounds" % (v["n"], rounds)
    return "%s%.4f (%s, %.1f%%%s)" % (label, b["median_ms"], fmt_mhz(b), 100 * v["spread"], n)


def picks(set_name, best, shape):
    """For one shape of a set: {"top": our best rung, "auto": the auto row, "part1": the best part-1
    rung (attention sets), "libs": {library impl: its row}} from best_rounds(), or None without our
    rows. Our "best rung" is the rung whose rounds' median is lowest (chosen on a central value, so
    that picking among several rungs does not turn into a minimum over rungs x rounds), shown, like
    every row, by its best round."""
    _, _, libs, _ = SETS[set_name]
    part1 = PART1.get(set_name)
    rs = {k: v for k, v in best.items() if k[2] == shape and k[0] == FAMILY[set_name]}
    ours = {k: v for k, v in rs.items() if k[3] == "kl"}
    rungs = [v for k, v in ours.items() if k[4] != "auto" and (not part1 or v["best"]["variant"] not in part1[0])]
    low = [v for k, v in ours.items() if k[4] != "auto" and part1 and v["best"]["variant"] in part1[0]]
    auto = next((v for k, v in ours.items() if k[4] == "auto"), None)
    if not rungs and auto is None:
        return None
    return {"top": min(rungs, key=lambda v: v["central"]) if rungs else None, "auto": auto,
            "part1": min(low, key=lambda v: v["central"]) if low else None,
            "libs": {lib: next((v for k, v in rs.items() if k[3] == lib), None) for lib in libs}}


def ratio(lib, ours):
    """'%.3f' of library best round / ours, or '-'."""
    return "%.3f" % (lib["best"]["median_ms"] / ours["best"]["median_ms"]) if lib and ours else "-"


def rung_label(v):
    return "%02d %s" % (v["best"]["variant"], v["best"]["variant_name"])


def table(set_name, best, rounds):
    """Markdown lines for one set from best_rounds() (see picks() for the best rung)."""
    shapes, _, libs, _ = SETS[set_name]
    head = ("| shape | best rung: ms (MHz, spread) | auto: ms (pick, MHz, spread) | "
            + " | ".join("%s: ms (MHz, spread)" % lib for lib in libs) + " | "
            + " | ".join("%s / best, / auto" % lib for lib in libs) + " |")
    part1 = PART1.get(set_name)
    if part1:
        head += " part-1 best: ms (MHz, spread) | %s / part-1 |" % part1[1]
    out = [head, "|" + "---|" * (3 + 2 * len(libs) + (2 if part1 else 0))]
    for shape in shapes:
        pk = picks(set_name, best, shape)
        if pk is None:
            continue
        top, auto = pk["top"], pk["auto"]
        cells = [shape.replace(",", ", ")]
        cells.append(cell(top, rounds, rung_label(top) + ": ") if top else "-")
        cells.append(cell(auto, rounds, "(%s) " % auto["best"].get("notes", {}).get("picked", "?")) if auto else "-")
        ratios = []
        for lib in libs:
            v = pk["libs"][lib]
            cells.append(cell(v, rounds) if v else "-")
            ratios.append("%s, %s" % (ratio(v, top), ratio(v, auto)) if v else "-")
        if part1:
            p1 = pk["part1"]
            ratios += [cell(p1, rounds, rung_label(p1) + ": ") if p1 else "-", ratio(pk["libs"][part1[1]], p1)]
        out.append("| " + " | ".join(cells + ratios) + " |")
    return out


def summary(rows):
    """A compact markdown table of a rows.jsonl's ratios (report.py puts it in the README): per set,
    shape and library, library best round / ours for the best rung and the auto row (and the part-1
    rung against flash)."""
    best = best_rounds(rows)
    rounds = len({r.get("notes", {}).get("h2h_round") for r in rows})
    out = ["| set | shape | vs | best rung | library / best rung | library / auto |", "|---|---|---|---|---|---|"]
    for set_name, (shapes, _, libs, _) in SETS.items():
        for shape in shapes:
            pk = picks(set_name, best, shape)
            if pk is None:
                continue
            for lib in libs:
                out.append("| %s | %s | %s | %s | %s | %s |" % (
                    set_name, shape.replace(",", ", "), lib, rung_label(pk["top"]) if pk["top"] else "-",
                    ratio(pk["libs"][lib], pk["top"]), ratio(pk["libs"][lib], pk["auto"])))
            if PART1.get(set_name) and pk["part1"]:
                lib = PART1[set_name][1]
                out.append("| %s | %s | %s | %s (part 1) | %s | - |" % (
                    set_name, shape.replace(",", ", "), lib, rung_label(pk["part1"]),
                    ratio(pk["libs"][lib], pk["part1"])))
    return out, rounds


def run_arm(argv, round_, arm, slot, rows_path, log, extra_notes):
    """Runs one arm with --out a temporary file; appends its rows (annotated) to rows_path. Returns
    (exit code, rows); a process that cannot start or writes a malformed line counts as failed
    (its well-formed rows are kept)."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as tf:
        tmp = tf.name
    try:
        t = time.monotonic()
        try:
            p = subprocess.run(argv + ["--out", tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            rc, text = p.returncode, p.stdout
        except OSError as e:
            rc, text = 127, "h2h.py: cannot run %s: %s" % (argv[0], e)
        rows, bad = [], 0
        with open(tmp) as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                r.setdefault("notes", {}).update(dict(extra_notes, h2h_round=str(round_), h2h_arm=arm,
                                                      h2h_slot=str(slot)))
                rows.append(r)
        if bad and rc == 0:
            rc = 1
        log.write("$ %s\n%s\n[exit %d, %.1f s%s]\n" % (" ".join(shlex.quote(x) for x in argv), text, rc,
                                                     time.monotonic() - t, ", %d malformed lines" % bad if bad else ""))
        log.flush()
        with open(rows_path, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return rc, rows
    finally:
        os.unlink(tmp)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Interleaved head-to-head of our rows and the libraries'.")
    ap.add_argument("--set", default="attention,gemm_bf16,sgemm,attention_d64",
                    help="comma list of: " + ", ".join(SETS) + " (default all)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--cooldown", type=float, default=1.0, help="idle seconds before each arm (default 1)")
    ap.add_argument("--build", default=os.environ.get("KL_BUILD_DIR", "build"), help="build folder")
    ap.add_argument("--dir", help="output folder (default results/<device>/h2h from nvidia-smi)")
    ap.add_argument("--shape", action="append", default=[], help="only these shapes of the sets (repeatable)")
    ap.add_argument("--split-rungs", action="store_true",
                    help="one arm (process) per rung instead of one for all of a set's rungs: no rung "
                         "runs after another one has heated the card (GEMM sets: cuBLAS in every arm)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("--from", dest="from_rows", metavar="ROWS",
                    help="run nothing: rewrite table.md of --dir (default: ROWS's folder) from a rows.jsonl")
    a = ap.parse_args(argv)
    sets = []
    for name in (x.strip() for x in a.set.split(",")):
        if name and name not in sets:
            sets.append(name)
    if not sets:
        ap.error("--set: no set given (sets: %s)" % ", ".join(SETS))
    for s in sets:
        if s not in SETS:
            ap.error("--set: unknown set '%s' (sets: %s)" % (s, ", ".join(SETS)))
    if a.rounds < 1 or not math.isfinite(a.cooldown) or a.cooldown < 0:
        ap.error("--rounds must be >= 1 and --cooldown a number >= 0")
    known = {sh for s in sets for sh in SETS[s][0]}
    for sh in a.shape:
        if sh not in known:
            ap.error("--shape '%s' is not a shape of the selected sets (e.g. %s)" % (sh, min(known)))
    plan = [(s, sh) for s in sets for sh in SETS[s][0] if not a.shape or sh in a.shape]
    if a.from_rows:
        try:
            with open(a.from_rows) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as e:
            ap.error("--from %s: %s" % (a.from_rows, e))
        notes = rows[0].get("notes", {}) if rows else {}
        rounds = len({r.get("notes", {}).get("h2h_round") for r in rows})
        out_dir = a.dir or os.path.dirname(os.path.abspath(a.from_rows))
        os.makedirs(out_dir, exist_ok=True)
        cooldown = float(notes.get("h2h_cooldown", a.cooldown))
        split = notes.get("h2h_split", "1" if a.split_rungs else "0") == "1"
        print("\n".join(write_table(out_dir, sets, rows, rounds, cooldown, split, 0, [])))
        return 0
    # The bench binaries: relative to the current folder, else to the repository root.
    build = a.build if os.path.isabs(a.build) or os.path.isdir(a.build) else os.path.join(ROOT, a.build)
    for s in sets:
        b = os.path.join(build, SETS[s][1][0])
        if not a.dry_run and not (os.path.isfile(b) and os.access(b, os.X_OK)):
            ap.error("no %s (build first, or point --build at the build folder)" % b)
    if a.dry_run:
        for rnd in range(a.rounds):
            for s, sh in plan:
                for arm, cmd in arms_for(s, sh, rnd, build, a.split_rungs):
                    print("round %d %s %s: %s" % (rnd, s, arm, " ".join(cmd)))
        return 0
    out_dir = a.dir
    if not out_dir:
        slug = subprocess.run(["bash", "-c", ". scripts/lib.sh >/dev/null 2>&1; kl_require_gpu >/dev/null; echo $SLUG"],
                              cwd=ROOT, capture_output=True, text=True).stdout.strip()
        if not slug:
            print("h2h.py: no GPU (nvidia-smi found none); nothing measured", file=sys.stderr)
            return 1
        out_dir = os.path.join(ROOT, "results", slug, "h2h")
    os.makedirs(out_dir, exist_ok=True)
    rows_path = os.path.join(out_dir, "rows.jsonl")
    open(rows_path, "w").close()  # this run's rows only
    notes = {"h2h_cooldown": str(a.cooldown), "h2h_split": "1" if a.split_rungs else "0"}
    failed = []
    all_rows = []
    t0 = time.monotonic()
    lines = []
    with open(os.path.join(out_dir, "log.txt"), "w") as log:
        for rnd in range(a.rounds):
            for s, sh in plan:
                for slot, (arm, cmd) in enumerate(arms_for(s, sh, rnd, build, a.split_rungs)):
                    time.sleep(a.cooldown)
                    rc, rows = run_arm(cmd, rnd, arm, slot, rows_path, log, notes)
                    all_rows += rows
                    print("h2h.py: round %d %-13s %-48s %-6s %d rows%s" % (rnd, s, sh, arm, len(rows),
                          "" if rc == 0 else "  FAILED (exit %d)" % rc), file=sys.stderr, flush=True)
                    if rc != 0:
                        failed.append("round %d %s %s %s (exit %d)" % (rnd, s, sh, arm, rc))
            # The table after every round, so that a run cut short keeps its complete rounds.
            lines = write_table(out_dir, sets, all_rows, rnd + 1, a.cooldown, a.split_rungs,
                                time.monotonic() - t0, failed)
    print("\n".join(lines))
    return 1 if failed else 0


def write_table(out_dir, sets, all_rows, rounds, cooldown, split, secs, failed):
    best = best_rounds(all_rows)
    commit = next((r.get("git_commit") for r in all_rows if r.get("git_commit")), "unknown")
    lines = ["# Head to head (`scripts/h2h.py`; do not edit by hand)", "",
             "Commit %s, %d rounds, arms alternating, %s, %.1f s cooldown before each arm; %d rows in "
             "`rows.jsonl`%s. Each cell is a row's best round (lowest median), with the NVML MHz of that round "
             "and the spread of its rounds' medians; ratios are the library's best round over ours (> 1: ours "
             "faster). \"best rung\" is the listed rung with the lowest median over its rounds; the auto row is "
             "the entry point's own row."
             % (commit, rounds, "one process per rung (--split-rungs)" if split else "one process for the rungs",
                cooldown, len(all_rows), ", %.0f s" % secs if secs else "")]
    for s in sets:
        lines += ["", "## " + s, ""] + table(s, best, rounds)
    if failed:
        lines += ["", "Failed arms: " + "; ".join(failed)]
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


if __name__ == "__main__":
    sys.exit(main())
