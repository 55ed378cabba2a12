"""kernel_ladder: the kernel-ladder entry points (rmsnorm, add_rmsnorm, swiglu, softmax, linear,
attention) as PyTorch custom ops, and one Llama decoder layer (layer, eager). See docs/api.md in the
repository; kernel_ladder.reference holds the same layer written in PyTorch.

The ops need PyTorch; without it the package still imports (version(), library_path()) and each op
raises ImportError when called.
"""
from ._lib import KernelLadderCudaError, KernelLadderError, library_path, version

try:
    from .ops import add_rmsnorm, attention, layer, linear, rmsnorm, softmax, swiglu
except ImportError as _e:  # PyTorch is missing
    _why = str(_e)

    def _needs_torch(name):
        def op(*args, **kwargs):
            raise ImportError("kernel_ladder.%s needs PyTorch (%s)" % (name, _why))
        op.__name__ = name
        return op

    rmsnorm, add_rmsnorm, swiglu, softmax, linear, attention, layer = (
        _needs_torch(n) for n in ("rmsnorm", "add_rmsnorm", "swiglu", "softmax", "linear", "attention", "layer"))

__all__ = ["rmsnorm", "add_rmsnorm", "swiglu", "softmax", "linear", "attention", "layer", "KernelLadderError",
           "KernelLadderCudaError", "library_path", "version"]
