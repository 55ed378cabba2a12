"""Loads libkernel_ladder_c (include/kl/c_api.h) with ctypes and declares its functions.

The library is looked for at $KL_C_LIBRARY, then next to this file (where `pip install .` puts it).
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = "libkernel_ladder_c.so"

KL_OK, KL_BAD_ARGUMENT, KL_CUDA_ERROR, KL_INTERNAL = 0, 1, 2, 3
KL_F32, KL_BF16 = 0, 1


class KernelLadderError(ValueError):
    """Input the library refuses (shape, dtype, device, alignment, layout): nothing was launched."""


class KernelLadderCudaError(RuntimeError):
    """A CUDA call or launch failed inside the library."""


def library_path():
    env = os.environ.get("KL_C_LIBRARY")
    if env:
        return env
    return os.path.join(_HERE, _NAME)


_P, _I64, _I, _F, _SZ = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float, ctypes.c_size_t
KL_LAYER_PREFILL, KL_LAYER_DECODE = 0, 1


class LayerArgs(ctypes.Structure):
    """struct kl_layer_args of c_api.h, field for field."""
    _fields_ = ([("mode", _I)] + [(n, _P) for n in ("x", "y", "attn_norm", "wqkv", "wo", "mlp_norm", "wgate", "wup",
                                                   "wdown", "k_cache", "v_cache", "pos")]
                + [(n, _I64) for n in ("B", "S", "L", "kv_len", "hidden", "Hq", "Hkv", "D", "mlp")]
                + [("eps", _F), ("theta", _F), ("workspace", _P), ("workspace_bytes", _SZ)])


_SIGNATURES = {
    "kl_last_error": (ctypes.c_char_p, []),
    "kl_version": (ctypes.c_char_p, []),
    "kl_rmsnorm": (_I, [_P, _P, _P, _I64, _I64, _F, _I, _P]),
    "kl_add_rmsnorm": (_I, [_P, _P, _P, _P, _I64, _I64, _F, _I, _P]),
    "kl_swiglu": (_I, [_P, _P, _P, _I64, _I64, _I, _P]),
    "kl_softmax": (_I, [_P, _P, _I64, _I64, _I, _P]),
    "kl_linear_bf16_workspace_bytes": (_I, [_I64, _I64, _I64, ctypes.POINTER(_SZ)]),
    "kl_linear_bf16": (_I, [_P, _P, _P, _I64, _I64, _I64, _P, _SZ, _P]),
    "kl_attention_workspace_bytes": (_I, [_I64] * 6 + [_I, ctypes.POINTER(_SZ)]),
    "kl_attention": (_I, [_P] * 4 + [_I64] * 6 + [_I, _F, _P, _SZ, _P]),
    "kl_layer_workspace_bytes": (_I, [ctypes.POINTER(LayerArgs), ctypes.POINTER(_SZ)]),
    "kl_layer": (_I, [ctypes.POINTER(LayerArgs), _P]),
}

_lib = None


def lib():
    """The loaded library (loaded on first use, so that importing needs no GPU)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise ImportError("kernel_ladder: %s not found; install the package with `pip install .` from the "
                              "repository, or point KL_C_LIBRARY at a built libkernel_ladder_c.so" % path)
        handle = ctypes.CDLL(path)
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.restype, fn.argtypes = res, args
        _lib = handle
    return _lib


def check(rc):
    """Raises the exception that matches a C API return code, with the library's message."""
    if rc == KL_OK:
        return
    msg = lib().kl_last_error().decode("utf-8", "replace")
    if rc == KL_BAD_ARGUMENT:
        raise KernelLadderError(msg)
    if rc == KL_CUDA_ERROR:
        raise KernelLadderCudaError(msg)
    raise RuntimeError("kernel_ladder: " + msg)


def version():
    return lib().kl_version().decode()


def workspace_bytes(fn, *args):
    out = _SZ(0)
    check(fn(*args, ctypes.byref(out)))
    return out.value
