"""The PyTorch ops of python/kernel_ladder against PyTorch references, under torch.compile, inside a
captured CUDA graph, and every refusal; the decoder layer against kernel_ladder.reference.

Run by ctest (test python_ops; KL_C_LIBRARY points at the build's libkernel_ladder_c.so) with pytest
where it is installed, else with the small runner at the bottom. Without PyTorch, a GPU or the
library it exits 77 (ctest: skipped) and says why.
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def skip_reason():
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to PyTorch"
    import kernel_ladder
    if not os.path.exists(kernel_ladder.library_path()):
        return "%s not built" % kernel_ladder.library_path()
    return ""


REASON = skip_reason()
if REASON:
    if __name__ == "__main__":
        print("SKIPPED: " + REASON)
        sys.exit(77)
    import pytest
    pytest.skip(REASON, allow_module_level=True)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kernel_ladder as kl  # noqa: E402
from kernel_ladder import KernelLadderError  # noqa: E402
from kernel_ladder.reference import torch_layer  # noqa: E402

DEV = "cuda"
torch.manual_seed(0)


def close(out, ref, atol, rtol, what, max_rel_l2=1e-2):
    out, ref = out.float(), ref.float()
    err = (out - ref).abs()
    tol = atol + rtol * ref.abs()
    bad = (err > tol).sum().item()
    rel_l2 = ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    assert bad == 0 and rel_l2 < max_rel_l2, "%s: %d elements outside tolerance, max error %.3g, relative L2 %.3g" % (
        what, bad, err.max().item(), rel_l2)


def ref_rmsnorm(x, w, eps):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()


def raises(fn, *needles, exc=KernelLadderError):
    try:
        fn()
    except exc as e:
        for n in needles:
            assert n in str(e), "message %r lacks %r" % (str(e), n)
        return str(e)
    raise AssertionError("no %s raised (wanted one mentioning %s)" % (exc.__name__, needles))


# ---- each op against PyTorch

def test_rmsnorm():
    for dtype, shape in ((torch.float32, (3, 1000)), (torch.bfloat16, (2, 5, 4096)), (torch.bfloat16, (1, 7)),
                         (torch.float32, (64, 8192))):
        x = torch.randn(shape, device=DEV, dtype=dtype)
        w = torch.randn(shape[-1], device=DEV, dtype=dtype)
        tol = (1e-5, 1e-5) if dtype == torch.float32 else (2e-2, 2e-2)
        close(kl.rmsnorm(x, w, 1e-6), ref_rmsnorm(x, w, 1e-6), *tol, "rmsnorm %s %s" % (dtype, shape))


def test_add_rmsnorm():
    for dtype in (torch.float32, torch.bfloat16):
        r = torch.randn(33, 999, device=DEV, dtype=dtype)
        x = torch.randn_like(r)
        w = torch.randn(999, device=DEV, dtype=dtype)
        r_ref = (r.float() + x.float()).to(dtype)
        y = kl.add_rmsnorm(r, x, w, 1e-5)
        assert torch.equal(r, r_ref), "add_rmsnorm: the residual is not r + x"
        tol = (1e-5, 1e-5) if dtype == torch.float32 else (2e-2, 2e-2)
        close(y, ref_rmsnorm(r_ref, w, 1e-5), *tol, "add_rmsnorm %s" % dtype)


def test_swiglu():
    for dtype, shape in ((torch.float32, (5, 999)), (torch.bfloat16, (4, 11008)), (torch.bfloat16, (1, 1))):
        g = torch.randn(shape, device=DEV, dtype=dtype) * 4
        u = torch.randn(shape, device=DEV, dtype=dtype)
        ref = F.silu(g.float()) * u.float()
        tol = (1e-6, 1e-5) if dtype == torch.float32 else (1e-2, 1e-2)
        close(kl.swiglu(g, u), ref, *tol, "swiglu %s %s" % (dtype, shape))


def test_softmax():
    for dtype, shape in ((torch.float32, (7, 1000)), (torch.bfloat16, (2, 3, 4096)), (torch.float32, (4, 1))):
        x = torch.randn(shape, device=DEV, dtype=dtype) * 10
        tol = (1e-7, 1e-5) if dtype == torch.float32 else (1e-3, 1e-2)
        close(kl.softmax(x), torch.softmax(x.float(), -1), *tol, "softmax %s %s" % (dtype, shape))


def test_linear():
    for M, N, K in ((1, 4096, 4096), (16, 512, 1024), (130, 72, 96), (512, 1024, 512), (3, 8, 8)):
        x = torch.randn(M, K, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(N, K, device=DEV, dtype=torch.bfloat16) / math.sqrt(K)
        close(kl.linear(x, w), F.linear(x.float(), w.float()), 2e-2, 2e-2, "linear %dx%dx%d" % (M, N, K))
    x = torch.randn(2, 3, 64, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(40, 64, device=DEV, dtype=torch.bfloat16)
    y = kl.linear(x, w)
    assert y.shape == (2, 3, 40)
    close(y, F.linear(x.float(), w.float()), 5e-2, 2e-2, "linear [2, 3, 64]")


def ref_attention(q, k, v, causal, scale=None):
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    rep = Hq // Hkv
    kf = k.float().repeat_interleave(rep, dim=1)
    vf = v.float().repeat_interleave(rep, dim=1)
    s = (q.float() @ kf.transpose(-1, -2)) * (scale if scale is not None else 1.0 / math.sqrt(D))
    if causal:  # the diagonal aligned to the end: query i sees keys j <= i + Skv - Sq
        i = torch.arange(Sq, device=q.device)[:, None]
        j = torch.arange(Skv, device=q.device)[None, :]
        s = s.masked_fill(j > i + (Skv - Sq), float("-inf"))
    return torch.softmax(s, -1) @ vf


def test_attention():
    cases = [(1, 4, 4, 256, 256, 128, False), (1, 4, 4, 256, 256, 128, True), (2, 8, 2, 192, 320, 64, True),
             (2, 4, 1, 1, 600, 128, False), (1, 32, 8, 1, 4096, 128, True), (3, 2, 2, 77, 77, 64, True)]
    for B, Hq, Hkv, Sq, Skv, D, causal in cases:
        q = torch.randn(B, Hq, Sq, D, device=DEV, dtype=torch.bfloat16)
        k = torch.randn(B, Hkv, Skv, D, device=DEV, dtype=torch.bfloat16)
        v = torch.randn(B, Hkv, Skv, D, device=DEV, dtype=torch.bfloat16)
        out = kl.attention(q, k, v, causal=causal)
        close(out, ref_attention(q, k, v, causal), 2e-2, 2e-2, "attention %s" % ((B, Hq, Hkv, Sq, Skv, D, causal),))
    q = torch.randn(1, 2, 64, 64, device=DEV, dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    close(kl.attention(q, k, v, scale=0.05), ref_attention(q, k, v, False, 0.05), 2e-2, 2e-2, "attention scale")


# ---- the decoder layer against the same layer in PyTorch (kernel_ladder.reference)

def layer_inputs(B, S, L, hidden=256, Hq=4, Hkv=2, D=64, mlp=512):
    """Weights scaled as bench/layer_inputs.h (fan-in K: uniform in +-sqrt(3/K), wo twice that),
    x and the caches uniform in [-1, 1)."""
    def u(shape, a, lo=None):
        lo = -a if lo is None else lo
        return (torch.rand(shape, device=DEV) * (a - lo) + lo).to(torch.bfloat16)
    weights = [u(hidden, 1.25, 0.75), u(((Hq + 2 * Hkv) * D, hidden), math.sqrt(3 / hidden)),
               u((hidden, Hq * D), 2 * math.sqrt(3 / (Hq * D))), u(hidden, 1.25, 0.75),
               u((mlp, hidden), math.sqrt(3 / hidden)), u((mlp, hidden), math.sqrt(3 / hidden)),
               u((hidden, mlp), math.sqrt(3 / mlp))]
    return u((B, S, hidden), 1.0), weights, u((B, Hkv, L, D), 1.0), u((B, Hkv, L, D), 1.0)


def check_layer(mode, B, S, L, pos):
    x, w, kc, vc = layer_inputs(B, S, L)
    kc_ref, vc_ref = kc.clone(), vc.clone()
    y = kl.layer(x, *w, kc, vc, pos, mode=mode)
    ref = torch_layer(x, *w, kc_ref, vc_ref, pos, mode=mode)
    what = "layer %s B=%d S=%d L=%d" % (mode, B, S, L)
    # Both round every intermediate to bf16, at places of their own: scripts/torch_baseline.py's
    # LAYER_TOL (rel-L2 2e-2, elements abs 1/8, rel 1/16) says why.
    close(y, ref, 1 / 8, 1 / 16, what, max_rel_l2=2e-2)
    rows = pos.reshape(B, S).long() if pos is not None else (torch.arange(S, device=DEV) + L - S).repeat(B, 1)
    for b in range(B):  # the rows written: the same K and V up to a bf16 rounding; the others untouched
        close(kc[b][:, rows[b]], kc_ref[b][:, rows[b]], 1 / 64, 1 / 64, what + " k_cache rows")
        close(vc[b][:, rows[b]], vc_ref[b][:, rows[b]], 1 / 64, 1 / 64, what + " v_cache rows")
    written = torch.zeros(B, L, dtype=torch.bool, device=DEV)
    written[torch.arange(B, device=DEV)[:, None], rows] = True
    for c, c_ref in ((kc, kc_ref), (vc, vc_ref)):
        assert torch.equal(c.transpose(1, 2)[~written], c_ref.transpose(1, 2)[~written]), what + ": other rows changed"


def test_layer():
    torch.manual_seed(1)
    check_layer("prefill", 2, 64, 64, None)
    check_layer("prefill", 2, 64, 64, torch.arange(64, device=DEV, dtype=torch.int32).repeat(2))
    check_layer("decode", 2, 1, 96, torch.tensor([95, 95], device=DEV, dtype=torch.int32))


def test_layer_refusals():
    x, w, kc, vc = layer_inputs(2, 1, 96)
    pos = torch.tensor([95, 95], device=DEV, dtype=torch.int32)
    raises(lambda: kl.layer(x.float(), *w, kc, vc, pos, mode="decode"), "x has dtype torch.float32")
    raises(lambda: kl.layer(x.cpu(), *w, kc, vc, pos, mode="decode"), "is on cpu")
    raises(lambda: kl.layer(x, *w, kc, vc, pos.long(), mode="decode"), "pos has dtype torch.int64")
    raises(lambda: kl.layer(x, *w, kc, vc, None, mode="decode"), "decode needs pos")
    raises(lambda: kl.layer(x, *w, kc, vc, pos, mode="generate"), "'prefill' or 'decode'")
    raises(lambda: kl.layer(x, *w, kc[:1], vc[:1], pos, mode="decode"), "batch")
    raises(lambda: kl.layer(x, *w[:6], w[6][:, :256].contiguous(), kc, vc, pos, mode="decode"), "wdown has shape")
    # Refused by the library itself (kv_len beyond the cache's rows), with its own message.
    raises(lambda: kl.layer(x, *w, kc, vc, pos, mode="decode", kv_len=97), "kv_len")


# ---- the custom-op path: eager calls skip the dispatch; torch.ops.kernel_ladder.* must agree

def test_custom_op_path_matches_direct_calls():
    x = torch.randn(6, 512, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(512, device=DEV, dtype=torch.bfloat16)
    ops = torch.ops.kernel_ladder
    assert torch.equal(ops.rmsnorm(x, w, 1e-6), kl.rmsnorm(x, w))
    r1, r2 = x.clone(), x.clone()
    assert torch.equal(ops.add_rmsnorm(r1, x, w, 1e-6), kl.add_rmsnorm(r2, x, w)) and torch.equal(r1, r2)
    assert torch.equal(ops.swiglu(x, x), kl.swiglu(x, x))
    assert torch.equal(ops.softmax(x), kl.softmax(x))
    wl = torch.randn(64, 512, device=DEV, dtype=torch.bfloat16)
    assert torch.equal(ops.linear(x, wl), kl.linear(x, wl))
    q = torch.randn(1, 4, 8, 64, device=DEV, dtype=torch.bfloat16)
    assert torch.equal(ops.attention(q, q, q, True, 0.0), kl.attention(q, q, q, causal=True))
    # Parameters without a gradient wanted (inference) take the direct path too, with the same bits.
    wp = torch.nn.Parameter(w.clone())
    with torch.no_grad():
        assert torch.equal(kl.rmsnorm(x, wp), ops.rmsnorm(x, w, 1e-6))
    # A tensor that wants a gradient goes through the custom op (which has no backward) and says so
    # at backward time, instead of silently returning a tensor cut from the graph.
    xg = x.float().requires_grad_()
    y = kl.softmax(xg)
    try:
        y.sum().backward()
    except RuntimeError:
        return
    raise AssertionError("backward through kernel_ladder.softmax did not raise")


# ---- torch.compile, CUDA graphs, streams

def block(x, r, w_norm, w_gate, w_up, w_down):
    h = kl.add_rmsnorm(r, x, w_norm)
    return kl.linear(kl.swiglu(kl.linear(h, w_gate), kl.linear(h, w_up)), w_down)


def block_inputs():
    d, f = 256, 512
    x = torch.randn(8, d, device=DEV, dtype=torch.bfloat16)
    r = torch.randn_like(x)
    ws = [torch.randn(d, device=DEV, dtype=torch.bfloat16), torch.randn(f, d, device=DEV, dtype=torch.bfloat16) / 16,
          torch.randn(f, d, device=DEV, dtype=torch.bfloat16) / 16, torch.randn(d, f, device=DEV, dtype=torch.bfloat16) / 23]
    return x, r, ws


def test_torch_compile():
    x, r, ws = block_inputs()
    r_eager, r_comp = r.clone(), r.clone()
    eager = block(x, r_eager, *ws)
    compiled = torch.compile(block, fullgraph=True)
    out = compiled(x, r_comp, *ws)
    assert torch.equal(r_eager, r_comp), "torch.compile: the residual update differs"
    assert torch.equal(out, eager), "torch.compile: the output differs from eager"

    def attn_then_norm(q, k, v, w):
        return kl.rmsnorm(kl.attention(q, k, v, causal=True), w) + kl.softmax(q)
    q = torch.randn(1, 4, 128, 64, device=DEV, dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    w = torch.randn(64, device=DEV, dtype=torch.bfloat16)
    assert torch.equal(torch.compile(attn_then_norm, fullgraph=True)(q, k, v, w), attn_then_norm(q, k, v, w))


def test_cuda_graph():
    x, r, ws = block_inputs()
    q = torch.randn(2, 8, 1, 128, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(2, 2, 1000, 128, device=DEV, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    r0 = r.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (first-use queries, workspaces) off the capture
        block(x, r.clone(), *ws)
        kl.attention(q, k, v, causal=True)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = block(x, r, *ws)
        o = kl.attention(q, k, v, causal=True)
    for _ in range(2):
        x.copy_(torch.randn_like(x))
        q.copy_(torch.randn_like(q))
        r.copy_(r0)
        g.replay()
        torch.cuda.synchronize()
        r_ref = r0.clone()
        assert torch.equal(out, block(x, r_ref, *ws)), "graph replay of the block differs from a direct call"
        assert torch.equal(r, r_ref), "graph replay: the residual update differs"
        assert torch.equal(o, kl.attention(q, k, v, causal=True)), "graph replay of decode attention differs"


def test_side_stream_and_other_device_index():
    x = torch.randn(64, 4096, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(4096, device=DEV, dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = kl.rmsnorm(x, w)
    s.synchronize()
    close(y, ref_rmsnorm(x, w, 1e-6), 2e-2, 2e-2, "rmsnorm on a side stream")


# ---- refusals: a clear error, nothing launched

def test_refusals():
    x = torch.randn(4, 64, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(64, device=DEV, dtype=torch.bfloat16)
    raises(lambda: kl.rmsnorm(x.cpu(), w.cpu()), "is on cpu")
    raises(lambda: kl.rmsnorm(x.half(), w.half()), "dtype torch.float16")
    raises(lambda: kl.rmsnorm(x, w.float()), "different dtypes")
    raises(lambda: kl.rmsnorm(x.t(), w), "not contiguous")
    raises(lambda: kl.rmsnorm(x, w[:32]), "weight has shape")
    raises(lambda: kl.add_rmsnorm(x[:2].clone(), x, w), "residual has shape")
    raises(lambda: kl.swiglu(x, x[:2]), "gate has shape")
    raises(lambda: kl.softmax(x.t()), "not contiguous")
    raises(lambda: kl.linear(x.float(), w.float()[None]), "this op takes torch.bfloat16")
    raises(lambda: kl.linear(x, torch.randn(8, 32, device=DEV, dtype=torch.bfloat16)), "weight must be [out_features, 64]")
    # Refused by the library itself: the message is the library's (kl::BadArgument), word for word.
    xk = torch.randn(4, 60, device=DEV, dtype=torch.bfloat16)
    msg = raises(lambda: kl.linear(xk, torch.randn(16, 60, device=DEV, dtype=torch.bfloat16)), "8")
    assert "K" in msg, msg
    flat = torch.randn(4 * 64 + 1, device=DEV, dtype=torch.bfloat16)
    raises(lambda: kl.linear(flat[1:].view(4, 64), torch.randn(16, 64, device=DEV, dtype=torch.bfloat16)), "align")
    q = torch.randn(1, 4, 16, 96, device=DEV, dtype=torch.bfloat16)
    raises(lambda: kl.attention(q, q, q), "D")
    q = torch.randn(1, 6, 16, 64, device=DEV, dtype=torch.bfloat16)
    kv = torch.randn(1, 4, 16, 64, device=DEV, dtype=torch.bfloat16)
    raises(lambda: kl.attention(q, kv, kv), "Hkv")
    raises(lambda: kl.attention(q[0], kv, kv), "[batch, heads, seq, head_dim]")
    q = torch.randn(1, 4, 32, 64, device=DEV, dtype=torch.bfloat16)
    kv = torch.randn(1, 4, 16, 64, device=DEV, dtype=torch.bfloat16)
    raises(lambda: kl.attention(q, kv, kv), "Sq")
    # Under torch.compile the same checks fire (while tracing, or from the fake implementation).
    raises(lambda: torch.compile(lambda a, b: kl.rmsnorm(a, b) * 2, fullgraph=True)(x, w[:32]), exc=Exception)


if __name__ == "__main__":
    try:
        import pytest
        sys.exit(pytest.main([__file__, "-q", "-rs"]))
    except ImportError:
        failed = 0
        tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
        for name, fn in tests:
            try:
                fn()
                print("PASS  " + name)
            except Exception as e:  # noqa: BLE001
                failed += 1
                print("FAIL  %s: %s: %s" % (name, type(e).__name__, e))
        print("%d passed, %d failed" % (len(tests) - failed, failed))
        sys.exit(1 if failed else 0)
