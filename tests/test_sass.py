#!/usr/bin/env python3
"""CPU test of what the compiled sm_90a code of the tensor-core rungs contains (no GPU needed).

    python3 tests/test_sass.py BUILD_DIR

The wgmma rungs must show HGMMA in their SASS, and the design notes say which
kernels do not spill. This reads `cuobjdump -sass -arch sm_90a` of the bench binaries, groups the
instructions per kernel (names demangled with c++filt) and checks:
  - every Hopper GEMM kernel (rungs 05-09, 12-16, 18-21, and rung 11's wgmma tiles) and every Hopper
    attention kernel (rungs 04-08, 10, 12-15) issues HGMMA and stores nothing to local memory (no STL);
  - the mma.sync rungs (GEMM 00-04, rung 11's m16 tiles, attention 02/03 and the decode kernels)
    issue HMMA;
  - sgemm rung 15's and rung 17's kernels (sgemm_ak_kernel<Bk64TwoStage / AnyShapeTwoBlocks>) and
    the 128x256 tile of gemm_bf16 rungs 03/04 do not spill (docs/sgemm.md, docs/gemm_bf16.md say
    so); rung 17 copies by cp.async (LDGSTS);
  - gemm_bf16 rung 17's six tiles issue TMA loads (UTMALDG) and HMMA, touch no local memory, and
    have one block barrier (BAR) at most: the ring's init, none in the k-loop;
  - attention rung 11's eight kernels (rung 03's tiles fed by TMA) likewise: UTMALDG and HMMA, no
    local memory, at most one BAR;
  - each rule matched at least as many kernels as the rungs instantiate (a renamed kernel fails
    instead of passing by matching nothing).
Exits 77 (ctest: skipped) when cuobjdump, nvdisasm or c++filt is missing or a binary has no sm_90a code (for
example a build for sm_120 only); prints "N passed, M failed" and exits 1 on any failure.
"""
import collections
import glob
import os
import re
import shutil
import subprocess
import sys

from script_check import check, summary

SKIP = 77


def kernels(binary):
    """{demangled kernel name: Counter(opcode -> static count)} of the binary's sm_90a code."""
    sass = subprocess.run(["cuobjdump", "-sass", "-arch", "sm_90a", binary],
                          capture_output=True, text=True).stdout
    counts, name = collections.OrderedDict(), None
    for line in sass.split("\n"):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            counts.setdefault(name, collections.Counter())
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if name and m:
            counts[name][m.group(1)] += 1
    if not counts:
        return {}
    names = list(counts)
    dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return {d: counts[n] for n, d in zip(names, dem)}


def rule(ks, pattern, minimum, what, need=(), forbid=()):
    """Every kernel whose name matches `pattern` has each opcode of `need` and none of `forbid`."""
    hit = {k: c for k, c in ks.items() if re.search(pattern, k)}
    check(len(hit) >= minimum, f"{what}: {len(hit)} kernels (at least {minimum})",
          "matched: " + ", ".join(hit) if hit else f"no kernel matches {pattern}")
    for k, c in hit.items():
        short = k if len(k) < 110 else k[:107] + "..."
        for op in need:
            check(c[op] > 0, f"{what}: {short} has {op} ({c[op]})")
        for op in forbid:
            check(c[op] == 0, f"{what}: {short} has no {op} ({c[op]})")


def cuobjdump_dirs():
    """Where cuobjdump may be besides PATH: the CUDA toolkit, or PyPI's nvidia-cuda-cuobjdump wheel
    (which .ci/run installs: CI's toolkit has nvcc but may lack cuobjdump)."""
    dirs = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")]
    try:
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
        for root in (spec.submodule_search_locations or []) if spec else []:
            dirs += sorted(glob.glob(os.path.join(root, "cu*", "bin")))
    except ImportError:
        pass
    return dirs


def main(build):
    if shutil.which("cuobjdump") is None or shutil.which("nvdisasm") is None:
        for d in cuobjdump_dirs():  # both from one place: cuobjdump -sass runs nvdisasm
            if all(os.path.exists(os.path.join(d, t)) for t in ("cuobjdump", "nvdisasm")):
                os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
                break
    for tool in ("cuobjdump", "nvdisasm", "c++filt"):  # cuobjdump -sass runs nvdisasm
        if shutil.which(tool) is None:
            print(f"SKIP  {tool} not found (it ships with the CUDA toolkit / binutils)")
            return SKIP
    found = {}
    for b in ("bench_gemm_bf16", "bench_attention", "bench_sgemm"):
        path = os.path.join(build, b)
        if not os.path.exists(path):
            print(f"SKIP  {path} not built")
            return SKIP
        found[b] = kernels(path)
        if not found[b]:
            print(f"SKIP  {path} has no sm_90a code (CMAKE_CUDA_ARCHITECTURES without 90a)")
            return SKIP

    g = found["bench_gemm_bf16"]
    hopper_gemm = (r"^(void )?kl::hopper_gemm::(tma_store::tma_store_gemm_kernel<|cluster::cluster_gemm_kernel<|"
                   r"\(anonymous namespace\)::gemm_bf16_(tma_wgmma|warp_specialized|persistent|stream_k_tail|pingpong)_kernel\(|"
                   r"\(anonymous namespace\)::gemm_bf16_decode_tma_splitk_kernel<[^>]*::Wgmma|"
                   r"\(anonymous namespace\)::whole_k_gemm_kernel<)")
    rule(g, hopper_gemm, 17, "gemm_bf16 wgmma rungs", need=("HGMMA",), forbid=("STL",))
    rule(g, r"kl::hopper_gemm::\(anonymous namespace\)::gemm_bf16_decode_tma_splitk_kernel<[^>]*::MmaSyncRows<", 2,
         "gemm_bf16 rung 11 m16 tiles", need=("HMMA",))
    rule(g, r"kl::gemm_bf16_detail::\(anonymous namespace\)::(gemm_bf16_(wmma_global|smem_tile_padded|"
            r"cp_async_pipeline)_kernel\(|(mma_sync|stream_k)_gemm_kernel<)", 10, "gemm_bf16 part 1", need=("HMMA",))
    # The 128x256 tile of rungs 03/04 (255 registers, InteriorCopies' pointers among them): no spill.
    rule(g, r"kl::gemm_bf16_detail::\(anonymous namespace\)::(mma_sync|stream_k)_gemm_kernel<"
            r"kl::gemm_bf16_detail::MmaCfg<kl::gemm_bf16_detail::Tile128x256>",
         2, "gemm_bf16 rungs 03/04, 128x256 tile", need=("HMMA",), forbid=("STL",))

    # Rung 17 (rung 03's tiles fed by TMA): a producer warp and full/empty mbarriers, so the one
    # __syncthreads (after the barriers' init) is the kernel's only BAR.
    r17 = r"kl::gemm_bf16_detail::\(anonymous namespace\)::gemm_bf16_tma_mma_sync_kernel<"
    rule(g, r17, 6, "gemm_bf16 rung 17", need=("HMMA", "UTMALDG"), forbid=("STL", "LDL"))
    for k, c in g.items():
        if re.search(r17, k):
            check(c["BAR"] <= 1, f"gemm_bf16 rung 17: {k[:100]}... has at most one BAR ({c['BAR']})")

    a = found["bench_attention"]
    rule(a, r"kl::hattn::flash_attention_kernel<", 19, "attention wgmma rungs 04-08, 10, 12-15", need=("HGMMA",), forbid=("STL",))
    rule(a, r"kl::flash::flash_mma_kernel<", 4, "attention mma.sync rungs 02/03", need=("HMMA",))
    rule(a, r"kl::\(anonymous namespace\)::attention_(flash_split_kv_decode|decode_split_kv)_kernel<", 4, "attention decode kernels", need=("HMMA",))
    # Rung 11 (rung 03's tiles fed by TMA): as rung 17, the barriers' init is the only BAR.
    r11 = r"kl::flash::attention_tma_mma_sync_kernel<"
    rule(a, r11, 8, "attention rung 11", need=("HMMA", "UTMALDG"), forbid=("STL", "LDL"))
    for k, c in a.items():
        if re.search(r11, k):
            check(c["BAR"] <= 1, f"attention rung 11: {k[:100]}... has at most one BAR ({c['BAR']})")

    s = found["bench_sgemm"]
    rule(s, r"kl::sgemm_detail::ak::sgemm_ak_kernel<kl::sgemm_detail::ak::Bk64TwoStage, false>", 1, "sgemm rung 15", need=("FFMA",), forbid=("STL",))
    rule(s, r"kl::sgemm_detail::ak::sgemm_ak_kernel<kl::sgemm_detail::ak::AnyShapeTwoBlocks, false>", 1, "sgemm rung 17", need=("FFMA", "LDGSTS"), forbid=("STL", "LDL"))

    return summary()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
