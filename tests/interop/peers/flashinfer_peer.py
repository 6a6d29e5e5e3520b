"""flashinfer_peer.py: loads FlashInfer's real api_logging.py, and torch reference functions with FlashInfer's names and signatures."""
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Optional

import torch


def load_api_logging():
    """Imports flashinfer/api_logging.py from the installed flashinfer-python, unmodified.

    flashinfer's package __init__ loads its compiled kernels and wants a GPU, so
    the package is entered through a bare module object whose __path__ is the
    installed package folder: api_logging.py and what it imports itself
    (flashinfer.version) are the real files. Nothing is stubbed; the one thing
    that fails on a CPU-only machine is the level-5 CUDA-graph statistics
    kernel's JIT build, which api_logging.py itself catches and reports as a
    warning line ("Failed to build api_log_stats kernel") in its header.
    The FLASHINFER_* variables must be set before the call: the module reads
    them once, at import."""
    if "flashinfer.api_logging" in sys.modules:
        return sys.modules["flashinfer.api_logging"]
    other = os.environ.get("MATE_FLASHINFER")
    if other:
        # another flashinfer-python beside the venv's pinned one (tests/peers-venv.sh puts
        # the newest release in DIR/flashinfer-newest): CI runs the peers' tests on both
        spec = importlib.machinery.PathFinder.find_spec("flashinfer", [other])
        if spec is None:
            raise ImportError("MATE_FLASHINFER=%s holds no flashinfer package" % other)
    else:
        spec = importlib.util.find_spec("flashinfer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("flashinfer-python is not installed")
    pkg = types.ModuleType("flashinfer")
    pkg.__path__ = list(spec.submodule_search_locations)
    sys.modules["flashinfer"] = pkg
    api = importlib.import_module("flashinfer.api_logging")
    if other and not os.path.abspath(api.__file__).startswith(os.path.abspath(other) + os.sep):
        raise ImportError("MATE_FLASHINFER=%s, but api_logging came from %s" % (other, api.__file__))
    return api


def _rms(x, weight, eps, gemma=False):
    xf = x.float()
    w = weight.float() + 1.0 if gemma else weight.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w


def _into(out, r):
    if out is None:
        return r
    out.copy_(r)
    return out


def rmsnorm(input, weight, eps=1e-6, out=None, enable_pdl=None):
    return _into(out, _rms(input, weight, eps).to(input.dtype))


def gemma_rmsnorm(input, weight, eps=1e-6, out=None, enable_pdl=None):
    return _into(out, _rms(input, weight, eps, gemma=True).to(input.dtype))


def fused_add_rmsnorm(input, residual, weight, eps=1e-6, enable_pdl=None):
    s = input.float() + residual.float()
    residual.copy_(s.to(residual.dtype))
    input.copy_(_rms(s, weight, eps).to(input.dtype))


def silu_and_mul(input, out=None, enable_pdl=None):
    d = input.shape[-1] // 2
    r = torch.nn.functional.silu(input[..., :d].float()) * input[..., d:].float()
    return _into(out, r.to(input.dtype))


def softmax(logits, temperature=None, enable_pdl=None):
    lf = logits.float()
    if temperature is not None:
        lf = lf / temperature
    return torch.softmax(lf, dim=-1)


class SegmentGEMMWrapper:
    """FlashInfer's stateful segment GEMM with its class name and signatures; __init__ and run are logged with self_id.

    run: for each segment i < batch_size (rows seg_indptr[i]:seg_indptr[i+1]
    of x, the offsets computed from seg_lens when seg_indptr is None), x's rows
    times weights[weight_indices[i]] (weights[i] without weight_indices),
    stored (d_out, d_in) when weight_column_major, else (d_in, d_out); rows
    outside every segment are zero, the result has x's dtype."""

    def __init__(self, float_workspace_buffer: torch.Tensor, backend: str = "auto") -> None:
        self._float_workspace_buffer = float_workspace_buffer
        self.backend = backend

    def run(self, x: torch.Tensor, weights: torch.Tensor, batch_size: int,
            weight_column_major: bool, out: Optional[torch.Tensor] = None,
            seg_lens: Optional[torch.Tensor] = None, seg_indptr: Optional[torch.Tensor] = None,
            weight_indices: Optional[torch.Tensor] = None) -> torch.Tensor:
        if seg_lens is None and seg_indptr is None:
            raise ValueError("Either seg_lens or seg_indptr should be provided.")
        if seg_indptr is None:
            seg_indptr = torch.cat([seg_lens.new_zeros(1), torch.cumsum(seg_lens, 0)])
        d_out = weights.size(1) if weight_column_major else weights.size(2)
        if out is None:
            out = torch.zeros(x.size(0), d_out, dtype=x.dtype)
        for i in range(batch_size):
            s, e = int(seg_indptr[i]), int(seg_indptr[i + 1])
            w = weights[int(weight_indices[i]) if weight_indices is not None else i].double()
            out[s:e] = (x[s:e].double() @ (w.t() if weight_column_major else w)).to(out.dtype)
        return out


def decorate(api):
    """The reference functions above, each wrapped by FlashInfer's real decorator."""
    names = ["rmsnorm", "gemma_rmsnorm", "fused_add_rmsnorm", "silu_and_mul", "softmax"]
    fns = {n: api.flashinfer_api(globals()[n]) for n in names}
    cls = SegmentGEMMWrapper
    for m in ("__init__", "run"):
        setattr(cls, m, api.flashinfer_api(getattr(cls, m)))
    fns["SegmentGEMMWrapper"] = cls
    return fns
