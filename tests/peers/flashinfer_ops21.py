"""flashinfer_ops21.py: torch reference functions with the names, signatures and defaults of FlashInfer 0.7.2's RoPE, sampling, bf16 GEMM and bit-packing APIs, written from their docstrings and kernels (issue 21), for recording under FlashInfer's real decorator."""
import math
from typing import Optional

import torch


# ---- RoPE (flashinfer/rope.py; angles as include/flashinfer/pos_enc.cuh) ----------

def _inv_freq(rd, rope_scale, rope_theta, llama=None):
    """Frequencies in float32, as FlashInfer computes them; with llama =
    (low, high, old_len) Llama 3.1's rule: frequencies whose wavelength
    2 pi / f is below old_len / high are kept, above old_len / low divided
    by rope_scale, and blended linearly in old_len / wavelength between;
    the blend written as FlashInfer's kernel writes it, in float32
    (clamp(f * a + b, 0, 1): large positions magnify its rounding)."""
    f = torch.pow(torch.tensor(1.0 / rope_theta, dtype=torch.float32),
                  torch.arange(0, rd, 2, dtype=torch.float32) / rd)
    if llama is None:
        return f * torch.tensor(1.0 / rope_scale, dtype=torch.float32)
    low, high, old = llama
    a = torch.tensor(old / (2 * math.pi * high - 2 * math.pi * low), dtype=torch.float32)
    b = torch.tensor(-1.0 / (high / low - 1.0), dtype=torch.float32)
    smooth = (f * a + b).clamp(0, 1)
    return (1 - smooth) * (f * torch.tensor(1.0 / rope_scale, dtype=torch.float32)) + smooth * f


def _rotate(x, cos, sin, rd, interleave):
    """x (nnz, H, D); cos, sin (nnz, rd/2) float; float32 arithmetic."""
    xf = x.float()
    out = xf.clone()
    c, s = cos[:, None, :], sin[:, None, :]
    if interleave:
        a, b = xf[..., 0:rd:2], xf[..., 1:rd:2]
        out[..., 0:rd:2] = a * c - b * s
        out[..., 1:rd:2] = b * c + a * s
    else:
        a, b = xf[..., :rd // 2], xf[..., rd // 2:rd]
        out[..., :rd // 2] = a * c - b * s
        out[..., rd // 2:rd] = b * c + a * s
    return out.to(x.dtype)


def _cos_sin(pos, freq):
    ang = (pos.float()[:, None] * freq[None, :]).double()   # the angle rounded to float
    return torch.cos(ang).float(), torch.sin(ang).float()


def _positions(indptr, offsets, nnz):
    pos = torch.zeros(nnz, dtype=torch.int64)
    for b in range(indptr.numel() - 1):
        s, e = int(indptr[b]), int(indptr[b + 1])
        pos[s:e] = int(offsets[b]) + torch.arange(e - s)
    return pos


def _rope(q, k, pos, rotary_dim, interleave, rope_scale, rope_theta, llama=None):
    rd = rotary_dim or q.size(-1)
    cos, sin = _cos_sin(pos, _inv_freq(rd, rope_scale, rope_theta, llama))
    return _rotate(q, cos, sin, rd, interleave), _rotate(k, cos, sin, rd, interleave)


def apply_rope(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=1,
               rope_theta=1e4):
    return _rope(q, k, _positions(indptr, offsets, q.size(0)), rotary_dim, interleave,
                 rope_scale, rope_theta)


def apply_rope_inplace(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=1,
                       rope_theta=1e4):
    qr, kr = apply_rope(q, k, indptr, offsets, rotary_dim, interleave, rope_scale, rope_theta)
    q.copy_(qr)
    k.copy_(kr)


def apply_rope_pos_ids(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=1,
                       rope_theta=1e4):
    return _rope(q, k, pos_ids, rotary_dim, interleave, rope_scale, rope_theta)


def apply_rope_pos_ids_inplace(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=1,
                               rope_theta=1e4):
    qr, kr = apply_rope_pos_ids(q, k, pos_ids, rotary_dim, interleave, rope_scale, rope_theta)
    q.copy_(qr)
    k.copy_(kr)


def apply_llama31_rope(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=8,
                       rope_theta=5e5, low_freq_factor=1, high_freq_factor=4,
                       old_context_len=8192):
    return _rope(q, k, _positions(indptr, offsets, q.size(0)), rotary_dim, interleave, rope_scale,
                 rope_theta, (low_freq_factor, high_freq_factor, old_context_len))


def apply_llama31_rope_inplace(q, k, indptr, offsets, rotary_dim=None, interleave=False,
                               rope_scale=8, rope_theta=5e5, low_freq_factor=1,
                               high_freq_factor=4, old_context_len=8192):
    qr, kr = apply_llama31_rope(q, k, indptr, offsets, rotary_dim, interleave, rope_scale,
                                rope_theta, low_freq_factor, high_freq_factor, old_context_len)
    q.copy_(qr)
    k.copy_(kr)


def apply_llama31_rope_pos_ids(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=8,
                               rope_theta=5e5, low_freq_factor=1, high_freq_factor=4,
                               old_context_len=8192):
    return _rope(q, k, pos_ids, rotary_dim, interleave, rope_scale, rope_theta,
                 (low_freq_factor, high_freq_factor, old_context_len))


def apply_llama31_rope_pos_ids_inplace(q, k, pos_ids, rotary_dim=None, interleave=False,
                                       rope_scale=8, rope_theta=5e5, low_freq_factor=1,
                                       high_freq_factor=4, old_context_len=8192):
    qr, kr = apply_llama31_rope_pos_ids(q, k, pos_ids, rotary_dim, interleave, rope_scale,
                                        rope_theta, low_freq_factor, high_freq_factor,
                                        old_context_len)
    q.copy_(qr)
    k.copy_(kr)


def _cache_rope(positions, x, head_size, cache, is_neox):
    rd = cache.size(1)
    cos, sin = cache[positions.long(), :rd // 2], cache[positions.long(), rd // 2:]
    x3 = x.view(x.size(0), -1, head_size)
    return _rotate(x3, cos, sin, rd, not is_neox).view(x.shape)


def apply_rope_with_cos_sin_cache(positions, query, key, head_size, cos_sin_cache, is_neox=True):
    return (_cache_rope(positions, query, head_size, cos_sin_cache, is_neox),
            _cache_rope(positions, key, head_size, cos_sin_cache, is_neox))


def apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache,
                                          is_neox=True):
    q, k = apply_rope_with_cos_sin_cache(positions, query, key, head_size, cos_sin_cache, is_neox)
    query.copy_(q)
    key.copy_(k)


ROPE = ["apply_rope", "apply_rope_inplace", "apply_rope_pos_ids", "apply_rope_pos_ids_inplace",
        "apply_llama31_rope", "apply_llama31_rope_inplace", "apply_llama31_rope_pos_ids",
        "apply_llama31_rope_pos_ids_inplace", "apply_rope_with_cos_sin_cache",
        "apply_rope_with_cos_sin_cache_inplace"]


def decorate(api, names):
    """The named reference functions, each wrapped by FlashInfer's real decorator."""
    return {n: api.flashinfer_api(globals()[n]) for n in names}
