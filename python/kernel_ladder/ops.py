"""The entry points as torch.library custom ops (namespace `kernel_ladder`).

Each public function checks its tensors (CUDA, dtype, contiguity, shapes) with a clear error, then
calls the library on the current CUDA stream of the input's device. The library picks the rung and
refuses what it cannot compute (alignment, sizes) with its own message, raised here as
KernelLadderError. Every op is a custom op with a fake (meta) implementation, so it traces under
torch.compile; none synchronizes or allocates outside PyTorch's caching allocator, so it can be
captured in a CUDA graph. Called eagerly on plain tensors that need no gradient, a public function
calls the implementation directly: the custom-op dispatch is for tracing, and costs more than the
kernel launch itself on small shapes. The decoder layer (layer) is a plain eager function over the
same library, not a custom op.
"""
import contextlib
import ctypes

import torch

from . import _lib
from ._lib import KernelLadderError

_DTYPES = {torch.float32: _lib.KL_F32, torch.bfloat16: _lib.KL_BF16}


def _require(cond, msg):
    if not cond:
        raise KernelLadderError(msg)


def _check_tensor(name, t, dtypes):
    _require(isinstance(t, torch.Tensor), "%s must be a torch.Tensor, not %s" % (name, type(t).__name__))
    _require(t.device.type in ("cuda", "meta"), "%s is on %s; kernel_ladder ops take CUDA tensors" % (name, t.device))
    _require(t.dtype in dtypes, "%s has dtype %s; this op takes %s" % (
        name, t.dtype, " or ".join(str(d) for d in dtypes)))
    _require(t.is_contiguous(), "%s is not contiguous (strides %s); call .contiguous() first" % (name, tuple(t.stride())))


def _same(names, *ts):
    for t in ts[1:]:
        _require(t.device == ts[0].device, "%s are on different devices (%s)" % (names, ", ".join(str(x.device) for x in ts)))
        _require(t.dtype == ts[0].dtype, "%s have different dtypes (%s)" % (names, ", ".join(str(x.dtype) for x in ts)))


def _rows_cols(x):
    _require(x.dim() >= 1, "the input needs at least one dimension")
    cols = x.shape[-1]
    rows = x.numel() // cols if cols else 0
    return rows, cols


def _stream(t):
    return torch.cuda.current_stream(t.device).cuda_stream


def _ptr(t):
    return t.data_ptr()


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _direct(*ts):
    """True when the call can skip the custom-op dispatch: eager (not tracing), plain tensors or
    parameters (no fake or other subclass), no gradient wanted (grad mode off, or none requires it)."""
    if torch.compiler.is_compiling():
        return False
    grad = torch.is_grad_enabled()
    return all(type(t) in _PLAIN and not (grad and t.requires_grad) for t in ts)


def _on(device):
    """The device guard, only when the tensors are not on the current device."""
    if device.index == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(device)


# ---- workspace: one buffer per (op, device, stream), grown (zeroed) when a shape needs more. The
# kernels leave it ready for the next launch, so it is zeroed only when it is (re)allocated.
_workspaces = {}


def _workspace(op, device, nbytes):
    if nbytes == 0:
        return None
    key = (op, device.index, torch.cuda.current_stream(device).cuda_stream)
    ws = _workspaces.get(key)
    if ws is None or ws.numel() < nbytes:
        ws = torch.zeros(nbytes, dtype=torch.uint8, device=device)
        _workspaces[key] = ws
    return ws


# ---- rmsnorm, add_rmsnorm

def _check_rmsnorm(x, weight):
    _check_tensor("x", x, _DTYPES)
    _check_tensor("weight", weight, _DTYPES)
    _same("x and weight", x, weight)
    _require(weight.dim() == 1 and weight.shape[0] == x.shape[-1],
             "weight has shape %s; it must be [%d] (the last dimension of x)" % (tuple(weight.shape), x.shape[-1]))


def _rmsnorm(x, weight, eps):
    y = torch.empty_like(x)
    rows, cols = _rows_cols(x)
    with _on(x.device):
        _lib.check(_lib.lib().kl_rmsnorm(_ptr(x), _ptr(weight), _ptr(y), rows, cols, eps, _DTYPES[x.dtype], _stream(x)))
    return y


@torch.library.custom_op("kernel_ladder::rmsnorm", mutates_args=())
def _rmsnorm_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    _check_rmsnorm(x, weight)
    return _rmsnorm(x, weight, eps)


@_rmsnorm_op.register_fake
def _(x, weight, eps):
    _check_rmsnorm(x, weight)
    return torch.empty_like(x)


def rmsnorm(x, weight, eps=1e-6):
    """y = x / sqrt(mean(x^2, -1) + eps) * weight over the last dimension; f32 or bf16."""
    _check_rmsnorm(x, weight)
    if _direct(x, weight):
        return _rmsnorm(x, weight, float(eps))
    return torch.ops.kernel_ladder.rmsnorm(x, weight, float(eps))


def _add_rmsnorm(residual, x, weight, eps):
    y = torch.empty_like(x)
    rows, cols = _rows_cols(x)
    with _on(x.device):
        _lib.check(_lib.lib().kl_add_rmsnorm(_ptr(residual), _ptr(x), _ptr(weight), _ptr(y), rows, cols, eps,
                                             _DTYPES[x.dtype], _stream(x)))
    return y


@torch.library.custom_op("kernel_ladder::add_rmsnorm", mutates_args=("residual",))
def _add_rmsnorm_op(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    _check_add_rmsnorm(residual, x, weight)
    return _add_rmsnorm(residual, x, weight, eps)


def _check_add_rmsnorm(residual, x, weight):
    _check_rmsnorm(x, weight)
    _check_tensor("residual", residual, _DTYPES)
    _same("residual and x", residual, x)
    _require(residual.shape == x.shape, "residual has shape %s and x %s; they must match" % (
        tuple(residual.shape), tuple(x.shape)))


@_add_rmsnorm_op.register_fake
def _(residual, x, weight, eps):
    _check_add_rmsnorm(residual, x, weight)
    return torch.empty_like(x)


def add_rmsnorm(residual, x, weight, eps=1e-6):
    """residual += x (in place, rounded to its dtype); returns rmsnorm(residual, weight, eps)."""
    _check_add_rmsnorm(residual, x, weight)
    if _direct(residual, x, weight):
        return _add_rmsnorm(residual, x, weight, float(eps))
    return torch.ops.kernel_ladder.add_rmsnorm(residual, x, weight, float(eps))


# ---- swiglu, softmax

def _check_swiglu(gate, up):
    _check_tensor("gate", gate, _DTYPES)
    _check_tensor("up", up, _DTYPES)
    _same("gate and up", gate, up)
    _require(gate.shape == up.shape, "gate has shape %s and up %s; they must match" % (
        tuple(gate.shape), tuple(up.shape)))


def _swiglu(gate, up):
    y = torch.empty_like(gate)
    rows, cols = _rows_cols(gate)
    with _on(gate.device):
        _lib.check(_lib.lib().kl_swiglu(_ptr(gate), _ptr(up), _ptr(y), rows, cols, _DTYPES[gate.dtype], _stream(gate)))
    return y


@torch.library.custom_op("kernel_ladder::swiglu", mutates_args=())
def _swiglu_op(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    _check_swiglu(gate, up)
    return _swiglu(gate, up)


@_swiglu_op.register_fake
def _(gate, up):
    _check_swiglu(gate, up)
    return torch.empty_like(gate)


def swiglu(gate, up):
    """silu(gate) * up, elementwise; f32 or bf16."""
    _check_swiglu(gate, up)
    if _direct(gate, up):
        return _swiglu(gate, up)
    return torch.ops.kernel_ladder.swiglu(gate, up)


def _softmax(x):
    y = torch.empty_like(x)
    rows, cols = _rows_cols(x)
    with _on(x.device):
        _lib.check(_lib.lib().kl_softmax(_ptr(x), _ptr(y), rows, cols, _DTYPES[x.dtype], _stream(x)))
    return y


@torch.library.custom_op("kernel_ladder::softmax", mutates_args=())
def _softmax_op(x: torch.Tensor) -> torch.Tensor:
    _check_tensor("x", x, _DTYPES)
    return _softmax(x)


@_softmax_op.register_fake
def _(x):
    _check_tensor("x", x, _DTYPES)
    return torch.empty_like(x)


def softmax(x):
    """Softmax over the last dimension; f32 or bf16."""
    _check_tensor("x", x, _DTYPES)
    if _direct(x):
        return _softmax(x)
    return torch.ops.kernel_ladder.softmax(x)


# ---- linear: y = x @ weight.T (bf16, the nn.Linear layout)

_BF16 = {torch.bfloat16: _lib.KL_BF16}


def _check_linear(x, weight):
    _check_tensor("x", x, _BF16)
    _check_tensor("weight", weight, _BF16)
    _same("x and weight", x, weight)
    _require(weight.dim() == 2 and x.dim() >= 1 and weight.shape[1] == x.shape[-1],
             "weight has shape %s and x %s; weight must be [out_features, %d]" % (
                 tuple(weight.shape), tuple(x.shape), x.shape[-1] if x.dim() else 0))


def _linear(x, weight):
    M, K = _rows_cols(x)
    N = weight.shape[0]
    y = torch.empty(tuple(x.shape[:-1]) + (N,), dtype=x.dtype, device=x.device)
    with _on(x.device):
        L = _lib.lib()
        nbytes = _lib.workspace_bytes(L.kl_linear_bf16_workspace_bytes, M, N, K)
        ws = _workspace("linear", x.device, nbytes)
        _lib.check(L.kl_linear_bf16(_ptr(x), _ptr(weight), _ptr(y), M, N, K, ws.data_ptr() if ws is not None else None,
                                    nbytes, _stream(x)))
    return y


@torch.library.custom_op("kernel_ladder::linear", mutates_args=())
def _linear_op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    _check_linear(x, weight)
    return _linear(x, weight)


@_linear_op.register_fake
def _(x, weight):
    _check_linear(x, weight)
    return x.new_empty(tuple(x.shape[:-1]) + (weight.shape[0],))


def linear(x, weight):
    """x @ weight.T for bf16 x [..., K] and weight [N, K] (fp32 accumulation, no bias)."""
    _check_linear(x, weight)
    if _direct(x, weight):
        return _linear(x, weight)
    return torch.ops.kernel_ladder.linear(x, weight)


# ---- attention: softmax(q k^T * scale [+ causal]) v, bf16 [B, H, S, D]

def _check_attention(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_tensor(name, t, _BF16)
        _require(t.dim() == 4, "%s has shape %s; attention takes [batch, heads, seq, head_dim]" % (name, tuple(t.shape)))
    _same("q, k and v", q, k, v)
    _require(k.shape == v.shape, "k has shape %s and v %s; they must match" % (tuple(k.shape), tuple(v.shape)))
    _require(q.shape[0] == k.shape[0] and q.shape[3] == k.shape[3],
             "q %s and k %s differ in batch or head_dim" % (tuple(q.shape), tuple(k.shape)))


def _attention(q, k, v, causal, scale):
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    with _on(q.device):
        L = _lib.lib()
        nbytes = _lib.workspace_bytes(L.kl_attention_workspace_bytes, B, Hq, Hkv, Sq, Skv, D, int(causal))
        ws = _workspace("attention", q.device, nbytes)
        _lib.check(L.kl_attention(_ptr(q), _ptr(k), _ptr(v), _ptr(o), B, Hq, Hkv, Sq, Skv, D, int(causal), scale,
                                  ws.data_ptr() if ws is not None else None, nbytes, _stream(q)))
    return o


@torch.library.custom_op("kernel_ladder::attention", mutates_args=())
def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float) -> torch.Tensor:
    _check_attention(q, k, v)
    return _attention(q, k, v, causal, scale)


@_attention_op.register_fake
def _(q, k, v, causal, scale):
    _check_attention(q, k, v)
    return torch.empty_like(q)


def attention(q, k, v, causal=False, scale=None):
    """softmax(q k^T * scale [+ causal mask]) v for bf16 q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D].

    D is 64 or 128; Hkv divides Hq (grouped-query attention); Sq <= Skv, and with causal the
    diagonal is aligned to the end (query i sees keys j <= i + Skv - Sq), so Sq = 1 is decode.
    scale defaults to 1/sqrt(D).
    """
    _check_attention(q, k, v)
    scale = 0.0 if scale is None else float(scale)
    if _direct(q, k, v):
        return _attention(q, k, v, bool(causal), scale)
    return torch.ops.kernel_ladder.attention(q, k, v, bool(causal), scale)


# ---- layer: one Llama decoder layer (include/kl/layer.h), eager

_MODES = {"prefill": _lib.KL_LAYER_PREFILL, "decode": _lib.KL_LAYER_DECODE}
_LAYER_WEIGHTS = ("attn_norm", "wqkv", "wo", "mlp_norm", "wgate", "wup", "wdown")


def _check_layer(x, weights, k_cache, v_cache, pos, mode, kv_len):
    """The layer's dimensions (B, S, L, hidden, Hq, Hkv, D, mlp) from the tensors' shapes, after
    checking each tensor; KernelLadderError naming the first that does not fit."""
    _require(mode in _MODES, "mode is %r; it must be 'prefill' or 'decode'" % (mode,))
    _check_tensor("x", x, _BF16)
    _require(x.dim() == 3, "x has shape %s; the layer takes [batch, seq, hidden]" % (tuple(x.shape),))
    for name, t in zip(_LAYER_WEIGHTS, weights):
        _check_tensor(name, t, _BF16)
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        _check_tensor(name, t, _BF16)
        _require(t.dim() == 4, "%s has shape %s; caches are [batch, kv_heads, rows, head_dim]" % (name, tuple(t.shape)))
    _same("x, the weights and the caches", x, *weights, k_cache, v_cache)
    B, S, hidden = x.shape
    attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown = weights
    _require(k_cache.shape == v_cache.shape, "k_cache has shape %s and v_cache %s; they must match" % (
        tuple(k_cache.shape), tuple(v_cache.shape)))
    _require(k_cache.shape[0] == B, "k_cache has shape %s; its batch must be x's (%d)" % (tuple(k_cache.shape), B))
    Hkv, L, D = k_cache.shape[1], k_cache.shape[2], k_cache.shape[3]
    for name, t in (("attn_norm", attn_norm), ("mlp_norm", mlp_norm)):
        _require(t.dim() == 1 and t.shape[0] == hidden, "%s has shape %s; it must be [%d] (hidden)" % (
            name, tuple(t.shape), hidden))
    _require(wqkv.dim() == 2 and wqkv.shape[1] == hidden and D > 0 and wqkv.shape[0] % D == 0
             and wqkv.shape[0] // D > 2 * Hkv,
             "wqkv has shape %s; it must be [(Hq + 2 Hkv) * %d, %d] with Hkv = %d (from the caches)" % (
                 tuple(wqkv.shape), D, hidden, Hkv))
    Hq = wqkv.shape[0] // D - 2 * Hkv
    _require(tuple(wo.shape) == (hidden, Hq * D), "wo has shape %s; it must be [%d, %d] (hidden, Hq * head_dim, "
             "with Hq = %d from wqkv's rows)" % (tuple(wo.shape), hidden, Hq * D, Hq))
    _require(wgate.dim() == 2 and wgate.shape[1] == hidden, "wgate has shape %s; it must be [mlp, %d]" % (
        tuple(wgate.shape), hidden))
    mlp = wgate.shape[0]
    _require(tuple(wup.shape) == (mlp, hidden), "wup has shape %s; it must be [%d, %d] (as wgate)" % (
        tuple(wup.shape), mlp, hidden))
    _require(tuple(wdown.shape) == (hidden, mlp), "wdown has shape %s; it must be [%d, %d] (hidden, mlp)" % (
        tuple(wdown.shape), hidden, mlp))
    if mode == "decode":
        _require(S == 1, "x has shape %s; decode takes one token per sequence ([batch, 1, hidden])" % (tuple(x.shape),))
        _require(pos is not None, "decode needs pos (each sequence's position, int32 [batch])")
    if pos is not None:
        _check_tensor("pos", pos, {torch.int32: 0})
        _require(pos.device == x.device, "pos is on %s and x on %s" % (pos.device, x.device))
        _require(pos.numel() == B * S, "pos has %d elements; it must have batch * seq = %d" % (pos.numel(), B * S))
    _require(isinstance(kv_len, int) and kv_len >= 0, "kv_len must be an int >= 0 (0: prefill S, decode L)")
    return B, S, L, hidden, Hq, Hkv, D, mlp


def layer(x, attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown, k_cache, v_cache, pos=None, *, mode,
          kv_len=0, eps=1e-5, theta=500000.0):
    """One Llama decoder layer: r = x + attn(rope(rmsnorm(x) wqkv^T)) wo^T; returns
    y = r + (silu(h2 wgate^T) * (h2 wup^T)) wdown^T with h2 = rmsnorm(r) (kl::layer, include/kl/layer.h).

    bf16 CUDA tensors, contiguous: x [B, S, hidden]; attn_norm, mlp_norm [hidden]; wqkv
    [(Hq + 2 Hkv) D, hidden] (q heads, then k heads, then v heads); wo [hidden, Hq D]; wgate, wup
    [mlp, hidden]; wdown [hidden, mlp]; k_cache, v_cache [B, Hkv, L, D], updated in place: row pos[t]
    of each sequence gets the token's rotated k and its v, and the attention reads rows [0, kv_len).
    pos: int32 [B, S] (or [B * S]) positions; required for decode, optional for prefill (default
    kv_len - S + s). mode "prefill" (causal, the diagonal aligned to kv_len) or "decode" (S = 1,
    every row [0, kv_len) visible); kv_len 0 means S for prefill, L for decode. The dimensions come
    from the shapes (Hkv, L, D from the caches, Hq from wqkv). Eager only (not a custom op), on the
    current stream of x's device; the workspace is the package's per-(op, device, stream) buffer.
    """
    weights = (attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown)
    B, S, L, hidden, Hq, Hkv, D, mlp = _check_layer(x, weights, k_cache, v_cache, pos, mode, kv_len)
    y = torch.empty_like(x)
    a = _lib.LayerArgs()
    a.mode = _MODES[mode]
    a.x, a.y = _ptr(x), _ptr(y)
    for name, t in zip(_LAYER_WEIGHTS, weights):
        setattr(a, name, _ptr(t))
    a.k_cache, a.v_cache = _ptr(k_cache), _ptr(v_cache)
    a.pos = _ptr(pos) if pos is not None else None
    a.B, a.S, a.L, a.kv_len = B, S, L, kv_len
    a.hidden, a.Hq, a.Hkv, a.D, a.mlp = hidden, Hq, Hkv, D, mlp
    a.eps, a.theta = float(eps), float(theta)
    with _on(x.device):
        lib = _lib.lib()
        nbytes = _lib.workspace_bytes(lib.kl_layer_workspace_bytes, ctypes.byref(a))
        ws = _workspace("layer", x.device, nbytes)
        a.workspace, a.workspace_bytes = (ws.data_ptr() if ws is not None else None), nbytes
        _lib.check(lib.kl_layer(ctypes.byref(a), _stream(x)))
    return y
