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


# ---- sampling (flashinfer/sampling.py, topk.py) ------------------------------------

def _per_row(v, rows, dtype):
    if isinstance(v, torch.Tensor):
        return v.to(dtype).reshape(-1).expand(rows) if v.numel() == 1 else v.to(dtype)
    return torch.full((rows,), v, dtype=dtype)


def _top_k_keep(x, top_k):
    """Keeps the values >= each row's k-th largest (FlashInfer's test reference)."""
    ks = _per_row(top_k, x.size(0), torch.int64)
    keep = torch.ones_like(x, dtype=torch.bool)
    srt = torch.sort(x, dim=-1, descending=True).values
    for r in range(x.size(0)):
        k = int(ks[r])
        if 0 < k < x.size(1):
            keep[r] = x[r] >= srt[r, k - 1]
    return keep


def _top_p_keep(p, top_p):
    """Keeps the largest probabilities while the mass above them is below top_p, and every
    probability equal to the smallest one kept: FlashInfer's kernels (sampling.cuh,
    TopPRenormProbKernel) search a threshold and keep the values above it, so ties at the
    boundary are kept or dropped together, never split by a sort's order."""
    ps = _per_row(top_p, p.size(0), torch.float64)
    pd = p.double()
    srt, idx = torch.sort(pd, dim=-1, descending=True)
    above = torch.cumsum(srt, -1) - srt
    keep_sorted = above < ps[:, None] * pd.sum(-1, keepdim=True)
    piv = torch.where(keep_sorted, srt, torch.full_like(srt, math.inf)).min(-1, keepdim=True).values
    return (pd >= piv) | (ps[:, None] >= 1)


def top_k_renorm_probs(probs, top_k, is_deterministic=False):
    kept = torch.where(_top_k_keep(probs, top_k), probs.double(), 0.0)
    return (kept / kept.sum(-1, keepdim=True)).to(probs.dtype)


def top_p_renorm_probs(probs, top_p, is_deterministic=False):
    kept = torch.where(_top_p_keep(probs, top_p), probs.double(), 0.0)
    return (kept / kept.sum(-1, keepdim=True)).to(probs.dtype)


def top_k_mask_logits(logits, top_k):
    return torch.where(_top_k_keep(logits, top_k), logits, torch.tensor(-math.inf, dtype=logits.dtype))


def top_k(input, k, sorted=False, deterministic=False, tie_break=0, dsa_graph_safe=False):
    v, i = torch.topk(input, k, dim=-1)
    if not sorted:                     # unsorted, in some order of the kernel's own
        perm = torch.randperm(k)
        v, i = v[:, perm], i[:, perm]
    return v, i


def _draw(p, keep, indices, generator):
    """One token per output from the kept probabilities of row indices[i]."""
    w = torch.where(keep, p.double(), 0.0)
    rows = indices.long() if indices is not None else torch.arange(p.size(0))
    s = torch.multinomial(w[rows], 1, generator=generator).squeeze(-1)
    return s.to(indices.dtype if indices is not None else torch.int32)


def sampling_from_probs(probs, indices=None, deterministic=True, generator=None, check_nan=False,
                        seed=None, offset=None, return_valid=False):
    return _draw(probs, probs > 0, indices, generator)


def sampling_from_logits(logits, indices=None, deterministic=True, generator=None,
                         check_nan=False, seed=None, offset=None):
    p = torch.softmax(logits.double(), -1)
    return _draw(p, p > 0, indices, generator)


def top_k_sampling_from_probs(probs, top_k, indices=None, deterministic=True, generator=None,
                              check_nan=False, seed=None, offset=None, return_valid=False):
    p = probs if indices is None else probs[indices.long()]
    return _draw(p, _top_k_keep(p, top_k) & (p > 0), None, generator).to(
        indices.dtype if indices is not None else torch.int32)


def top_p_sampling_from_probs(probs, top_p, indices=None, deterministic=True, generator=None,
                              check_nan=False, seed=None, offset=None, return_valid=False):
    p = probs if indices is None else probs[indices.long()]
    return _draw(p, _top_p_keep(p, top_p) & (p > 0), None, generator).to(
        indices.dtype if indices is not None else torch.int32)


def min_p_sampling_from_probs(probs, min_p, indices=None, deterministic=True, generator=None,
                              check_nan=False, seed=None, offset=None, return_valid=False):
    p = probs if indices is None else probs[indices.long()]
    m = _per_row(min_p, p.size(0), torch.float64)
    keep = p.double() >= m[:, None] * p.double().max(-1, keepdim=True).values
    return _draw(p, keep & (p > 0), None, generator).to(
        indices.dtype if indices is not None else torch.int32)


def _top_k_top_p(p, top_k, top_p, order):
    kk = _top_k_keep(p, top_k)
    if order == "joint":
        return kk & _top_p_keep(p, top_p) & (p > 0)
    return kk & _top_p_keep(torch.where(kk, p, 0.0), top_p) & (p > 0)


def top_k_top_p_sampling_from_probs(probs, top_k, top_p, indices=None,
                                    filter_apply_order="top_k_first", deterministic=True,
                                    generator=None, check_nan=False, seed=None, offset=None,
                                    return_valid=False):
    p = probs if indices is None else probs[indices.long()]
    return _draw(p, _top_k_top_p(p, top_k, top_p, filter_apply_order), None, generator).to(
        indices.dtype if indices is not None else torch.int32)


def top_k_top_p_sampling_from_logits(logits, top_k, top_p, indices=None,
                                     filter_apply_order="top_k_first", deterministic=True,
                                     generator=None, check_nan=False, seed=None, offset=None):
    p = torch.softmax(logits.double(), -1).float()
    return top_k_top_p_sampling_from_probs(p, top_k, top_p, indices, filter_apply_order)


SAMPLING = ["top_k_renorm_probs", "top_p_renorm_probs", "top_k_mask_logits", "top_k",
            "sampling_from_probs", "sampling_from_logits", "top_k_sampling_from_probs",
            "top_p_sampling_from_probs", "min_p_sampling_from_probs",
            "top_k_top_p_sampling_from_probs", "top_k_top_p_sampling_from_logits"]


# ---- bf16 and fp8 GEMMs (flashinfer/gemm), bit packing (flashinfer/quantization) ---

def _into(out, r):
    if out is None:
        return r
    out.copy_(r)
    return out


def mm_bf16(a, b, bias=None, pdl=False, out=None, out_dtype=torch.bfloat16, backend="cudnn"):
    r = a.double() @ b.double()
    if bias is not None:
        r = r.float() + bias.float()      # the float32 accumulator plus the bias
    return _into(out, r.to(out.dtype if out is not None else out_dtype))


def bmm_bf16(A, B, out=None, out_dtype=torch.bfloat16, backend="cudnn"):
    return _into(out, (A.double() @ B.double()).to(out.dtype if out is not None else out_dtype))


def mm_fp8(a, b, alpha=None, out_dtype=torch.bfloat16, out=None, backend="trtllm_low_latency"):
    if b.dim() != 2:
        raise NotImplementedError("the reference takes the unprocessed (n, k) weight only")
    r = a.double() @ b.double().t()
    if alpha is not None:
        r = r * alpha.float().item()
    return _into(out, r.to(out_dtype))


def bmm_fp8(A, B, A_scale, B_scale, dtype, out=None, backend="cublas"):
    s = float(A_scale.float().item() * B_scale.float().item())
    return _into(out, (A.double() @ B.double() * s).to(dtype))


def packbits(x, bitorder="big"):
    import numpy as np
    return torch.from_numpy(np.packbits(x.numpy().astype(bool), bitorder=bitorder))


def segment_packbits(x, indptr, bitorder="big"):
    parts, new = [], [0]
    for i in range(indptr.numel() - 1):
        p = packbits(x[int(indptr[i]):int(indptr[i + 1])], bitorder)
        parts.append(p)
        new.append(new[-1] + p.numel())
    return torch.cat(parts), torch.tensor(new, dtype=torch.int32)


GEMM_BITS = ["mm_bf16", "bmm_bf16", "mm_fp8", "bmm_fp8", "packbits", "segment_packbits"]


# ---- fused_rmsnorm_silu (flashinfer/norm) -----------------------------------------

def fused_rmsnorm_silu(input, weight, eps=1e-6, out=None, block_scale=None):
    x = input.float()
    y = torch.nn.functional.silu(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
    if out is None:
        return y.to(input.dtype)
    if out.dtype == torch.float8_e4m3fn:
        y = y.clamp(-448.0, 448.0)
    out.copy_(y.to(out.dtype))
    return out
