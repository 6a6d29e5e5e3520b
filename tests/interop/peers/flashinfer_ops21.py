"""flashinfer_ops21.py: torch reference functions with the names, signatures and defaults of FlashInfer 0.7.2's RoPE, sampling, bf16 GEMM and bit-packing APIs (issue 21), and of chain_speculative_sampling, layernorm and the top-k transforms (issue 39), written from their docstrings and kernels, for recording under FlashInfer's real decorator."""
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


def chain_speculative_sampling(draft_probs, draft_token_ids, target_probs,
                               maybe_output_accepted_token_num=None,
                               maybe_output_emitted_draft_token_num=None, deterministic=True,
                               generator=None, seed=None, offset=None):
    """Speculative sampling as include/flashinfer/sampling.cuh's ChainSpeculativeSampling
    draws it, in float32, with torch's generator for the uniforms (0, 1]: draft i kept
    while u * draft < target at its token; the first rejected one redrawn from
    relu(target - draft), or, all kept, a bonus token from the last target row; -1
    after it. The accepted count goes on from the first rejection with fresh draws;
    both counts are added to the given tensors."""
    b, n = draft_token_ids.shape
    dp, tp = draft_probs.float(), target_probs.float()
    out = torch.full((b, n + 1), -1, dtype=torch.int32)
    acc = maybe_output_accepted_token_num
    emi = maybe_output_emitted_draft_token_num
    acc = torch.zeros(b, dtype=torch.int32) if acc is None else acc
    emi = torch.zeros(b, dtype=torch.int32) if emi is None else emi

    def u():
        return 1 - torch.rand((), generator=generator)

    for r in range(b):
        pos = n
        for i in range(n):
            d = int(draft_token_ids[r, i])
            if u() * dp[r, i, d] < tp[r, i, d]:
                out[r, i] = d
            else:
                pos = i
                break
        kept = pos
        for i in range(pos, n):
            d = int(draft_token_ids[r, i])
            kept += bool(u() * dp[r, i, d] < tp[r, i, d])
        acc[r] += kept
        emi[r] += pos
        rest = (tp[r, pos] - (dp[r, pos] if pos < n else 0)).clamp(min=0)
        out[r, pos] = int(torch.multinomial(rest, 1, generator=generator)) if rest.sum() > 0 \
            else tp.size(2) - 1
    return out, acc, emi


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


def layernorm(input, gemma, beta, eps=1e-6):
    """flashinfer/norm's layernorm as its tests check it: torch's layer_norm in float32
    over the last dimension, with gemma and beta, back to input's dtype."""
    return torch.nn.functional.layer_norm(input.float(), (input.size(-1),), gemma.float(),
                                          beta.float(), eps).to(input.dtype)


def top_k_ragged_transform(input, offsets, lengths, k, deterministic=False, tie_break=0,
                           dsa_graph_safe=False, row_starts=None):
    """flashinfer/topk's top_k_ragged_transform from its docstring: each row's top k of
    the window [row_starts[i], + lengths[i]) as positions in it plus offsets[i], int32,
    -1 past the window's length."""
    out = torch.full((input.size(0), k), -1, dtype=torch.int32)
    for r in range(input.size(0)):
        st = int(row_starts[r]) if row_starts is not None else 0
        n = int(lengths[r])
        top = torch.topk(input[r, st:st + n].float(), min(k, n)).indices
        out[r, :top.numel()] = (top + int(offsets[r])).int()
    return out


def top_k_page_table_transform(input, src_page_table, lengths, k, row_to_batch=None,
                               deterministic=False, tie_break=0, dsa_graph_safe=False,
                               row_starts=None, page_table_row_starts=None, *, page_size=1,
                               out=None, out_raw_indices=None):
    """flashinfer/topk's top_k_page_table_transform from its docstring: each row's top k
    of its window, position idx becoming src_page_table[batch, page_table_row_starts[i]
    + idx // page_size] * page_size + idx % page_size; -1 past the window's length."""
    res = torch.full((input.size(0), k), -1, dtype=torch.int32)
    for r in range(input.size(0)):
        st = int(row_starts[r]) if row_starts is not None else 0
        pst = int(page_table_row_starts[r]) if page_table_row_starts is not None else st
        b = int(row_to_batch[r]) if row_to_batch is not None else r
        n = int(lengths[r])
        top = torch.topk(input[r, st:st + n].float(), min(k, n)).indices
        pages = src_page_table[b, pst + top // page_size].long()
        res[r, :top.numel()] = (pages * page_size + top % page_size).int()
    if out is not None:
        out.copy_(res)
        return out
    return res


def _qk_freq(n, base, factor, low, high):
    """One section's float32 frequencies as the kernel's host code makes them (YaRN's ramp
    when factor != 1)."""
    i = torch.arange(n // 2, dtype=torch.float32)
    f = torch.pow(torch.tensor(base, dtype=torch.float32), -2.0 * i / n)
    if factor != 1.0:
        hi = high + 0.001 if abs(low - high) <= 1e-6 else high
        ramp = ((i - low) / (hi - low)).clamp(0, 1)
        f = f / factor * ramp + f * (1 - ramp)
    return f


def fused_qk_rmsnorm_rope(qkv, q_weight, k_weight, *, ppf, pph, ppw, num_frame_channels,
                          num_height_channels, num_width_channels, num_heads_q, num_heads_k,
                          num_heads_v, head_dim, eps=1e-6, base=10000.0, interleave=True,
                          factor=1.0, low=0.0, high=0.0, attention_factor=1.0, is_qk_norm=True,
                          output_fp8=False, output_quant_scale=1.0, v_quant_scale=1.0,
                          q_out=None, k_out=None, v_out=None):
    """flashinfer/norm's fused_qk_rmsnorm_rope from its docstring and
    norm/fused_qk_rmsnorm_rope.cuh: RMSNorm across all of a token's Q (K) heads, rounded
    to bf16 unless the output is fp8, then RoPE at the token's (frame, height, width)
    position, each channel section its coordinate; V copied."""
    D = head_dim
    lead = qkv.shape[:-1]
    x = qkv.reshape(-1, qkv.size(-1)).float()
    T, hw = x.size(0), pph * ppw
    freq = torch.cat([_qk_freq(n, base, factor, low, high)
                      for n in (num_frame_channels, num_height_channels, num_width_channels)])
    s = torch.arange(T) % (ppf * hw)
    pos = torch.stack([s // hw, s % hw // ppw, s % ppw], 1).float()
    d = torch.arange(D)
    c = d - d % 2 if interleave else (2 * d) % D
    section = (c >= num_frame_channels).long() + \
        (c >= num_frame_channels + num_height_channels).long()
    theta = pos[:, section] * freq[c // 2]
    cos, sin = torch.cos(theta.double()).float(), torch.sin(theta.double()).float()
    odt = torch.float8_e4m3fn if output_fp8 else torch.bfloat16

    def store(o, scale, n, dst):
        if output_fp8:
            o = (o * scale).clamp(-448, 448)
        o = o.to(odt).reshape(*lead, n, D)
        if dst is None:
            return o
        dst.copy_(o)
        return dst

    def rotate(seg, n, w):
        y = seg
        if is_qk_norm:
            y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps) * w.float()
            if not output_fp8:
                y = y.bfloat16().float()
        y = y.reshape(T, n, D)
        if interleave:
            other = torch.stack([-y[..., 1::2], y[..., 0::2]], -1).reshape(T, n, D)
        else:
            other = torch.cat([-y[..., D // 2:], y[..., :D // 2]], -1)
        o = y * cos[:, None] + other * sin[:, None]
        return o * attention_factor if factor != 1.0 else o

    q0, k0 = num_heads_q * D, (num_heads_q + num_heads_k) * D
    q = store(rotate(x[:, :q0], num_heads_q, q_weight), output_quant_scale, num_heads_q, q_out)
    k = store(rotate(x[:, q0:k0], num_heads_k, k_weight), output_quant_scale, num_heads_k, k_out)
    v = store(x[:, k0:], v_quant_scale, num_heads_v, v_out)
    return q, k, v
