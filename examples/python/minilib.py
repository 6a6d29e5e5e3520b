"""minilib.py: the demo library's operations in torch, as its authors would check them: what a
reproducer that mate-replay --export writes for a minilib call (module "minilib") imports.

examples/find-the-bug.sh runs one: PYTHONPATH=examples/python python3 repro.py --device cpu
"""
import torch


def rmsnorm(input, weight, eps=1e-6, out=None):
    x = input.float()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    y = y.to(input.dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y


def fused_add_rmsnorm(input, residual, weight, eps=1e-6):
    residual.copy_((residual.float() + input.float()).to(residual.dtype))
    input.copy_(rmsnorm(residual, weight, eps))


def silu_and_mul(input, out=None):
    d = input.shape[-1] // 2
    x = input.float()
    y = (torch.nn.functional.silu(x[..., :d]) * x[..., d:]).to(input.dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y


def softmax(logits, temperature=1.0, out=None):
    y = torch.softmax(logits.float() / temperature, dim=-1)
    if out is not None:
        out.copy_(y)
        return out
    return y


def mm(a, b, out=None):
    y = (a.float() @ b.float()).to(a.dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y
