"""minilib.py: torch reference of examples/minilib's recorded API, so FlashInfer's replay can resolve and run mate's demo dumps (module "minilib")."""
from flashinfer_peer import fused_add_rmsnorm, rmsnorm, silu_and_mul  # noqa: F401

import torch


def softmax(logits, temperature=None):
    lf = logits.float()
    if temperature is not None:
        lf = lf / temperature
    return torch.softmax(lf, dim=-1)


def mm(a, b, out_dtype=None):
    return (a.float() @ b.float()).to(out_dtype or a.dtype)
