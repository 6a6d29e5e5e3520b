"""flashinfer_attn_ref.py: torch reference implementations (float64) of FlashInfer's batch attention wrappers, MLA, state merges and KV-cache appends, with FlashInfer's names and signatures.

The formulas are FlashInfer's own (its kernels and tests' references): the
LSE is base 2; the causal mask is aligned bottom-right (query row i of a
request with qo_len rows and kv_len keys sees keys j <= i + kv_len - qo_len);
query head h reads KV head h // (Hq // Hk); window_left w keeps keys
j >= qpos - w; the soft cap is c * tanh(s * sm_scale / c); ROPE_LLAMA
rotates the halves of q (at its position) and k (at j) by
pos / rope_scale * rope_theta ** (-2i / D)."""
import math
from typing import Any, Optional, Tuple, Union

import torch

LN2 = math.log(2.0)


def _rope(x, pos, scale, theta):
    """Rotate-half RoPE of x (L, H, D) at positions pos (L)."""
    D = x.shape[-1]
    half = D // 2
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / D)
    a = (pos.double() / scale)[:, None] * inv[None, :]
    c, s = torch.cos(a)[:, None, :], torch.sin(a)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def attention(q, k, v, causal=False, sm_scale=None, window_left=-1, logits_soft_cap=None,
              pos_encoding_mode="NONE", rope_scale=None, rope_theta=None, v_scale=None, sinks=None):
    """q (Lq, Hq, D), k (Lk, Hk, D), v (Lk, Hk, Dv) -> out (Lq, Hq, Dv) float64 and
    lse (Lq, Hq) float64, base 2 (-inf and zeros for a row with no key). sinks (Hq): one
    more logit per head in the softmax's denominator, with no value (FlashInfer's
    sink_softmax)."""
    Lq, Hq, D = q.shape
    Lk, Hk = k.shape[0], k.shape[1]
    qf, kf, vf = q.double(), k.double(), v.double()
    qpos = torch.arange(Lq) + Lk - Lq
    kpos = torch.arange(Lk)
    if pos_encoding_mode == "ROPE_LLAMA":
        qf = _rope(qf, qpos, rope_scale or 1.0, rope_theta or 1e4)
        kf = _rope(kf, kpos, rope_scale or 1.0, rope_theta or 1e4)
    g = Hq // Hk
    kf = kf.repeat_interleave(g, dim=1)
    vf = vf.repeat_interleave(g, dim=1)
    s = torch.einsum("qhd,khd->hqk", qf, kf) * (sm_scale if sm_scale else 1.0 / math.sqrt(D))
    if logits_soft_cap:
        s = logits_soft_cap * torch.tanh(s / logits_soft_cap)
    keep = torch.ones(Lq, Lk, dtype=torch.bool)
    if causal:
        keep &= kpos[None, :] <= qpos[:, None]
    if window_left is not None and window_left >= 0:
        keep &= kpos[None, :] >= qpos[:, None] - window_left
    s = s.masked_fill(~keep[None], -math.inf)
    if sinks is not None:
        lse = torch.logsumexp(torch.cat([s, sinks.double()[:, None, None].expand(Hq, Lq, 1)], -1), -1)
    else:
        lse = torch.logsumexp(s, -1)
    p = torch.where(torch.isinf(lse)[..., None], torch.zeros_like(s), torch.exp(s - lse[..., None]))
    o = torch.einsum("hqk,khd->qhd", p, vf)
    if v_scale is not None:
        o = o * v_scale
    return o, (lse / LN2).t()


def split_cache(paged_kv_cache, kv_layout):
    """(k_cache, v_cache), each as (pages, page_size, H, D)."""
    if isinstance(paged_kv_cache, (tuple, list)):
        k, v = paged_kv_cache
    else:
        k, v = paged_kv_cache[:, 0], paged_kv_cache[:, 1]
    if kv_layout == "HND":
        k, v = k.transpose(1, 2), v.transpose(1, 2)
    return k, v


def gather(cache, indptr, indices, last_page_len, b):
    """Request b's keys (L, H, D) from an NHD-view cache."""
    pages = indices[int(indptr[b]):int(indptr[b + 1])].long()
    if len(pages) == 0:
        return cache[:0, 0]
    P = cache.shape[1]
    n = (len(pages) - 1) * P + int(last_page_len[b])
    return cache[pages].reshape(-1, *cache.shape[2:])[:n]


def _finish(o, lse, dtype, return_lse, out=None, lse_out=None, lse_base="log2", lse_layout="NH"):
    o = o.to(dtype)
    if out is not None:
        out.copy_(o)
        o = out
    if not return_lse:
        return o
    if lse_base == "ln":
        lse = lse * LN2
    if lse_layout == "HN":
        lse = lse.t().contiguous()
    lse = lse.float()
    if lse_out is not None:
        lse_out.copy_(lse)
        lse = lse_out
    return o, lse


def _dtype(d):
    """FlashInfer's canonicalize_torch_dtype: a torch dtype, or its name."""
    return getattr(torch, d) if isinstance(d, str) else d


def _plan_dtypes(w, kw, q_default="float16"):
    """The q and kv dtypes a plan fixes, resolved as FlashInfer's plans do: q_data_type
    ('float16' unless given; decode's deprecated data_type stands in where it is None),
    kv_data_type (data_type, else q's)."""
    q = kw.get("q_data_type", q_default)
    if q is None:
        q = kw.get("data_type")
    kv = kw.get("kv_data_type") or kw.get("data_type") or q
    w.q_dtype, w.kv_dtype = _dtype(q), _dtype(kv)


def _check_dtypes(w, q, k):
    """FlashInfer's _check_cached_qkv_data_type: run refuses q and k of other dtypes than plan's."""
    if q.dtype != w.q_dtype:
        raise ValueError("The dtype of q %s does not match the q_data_type %s specified in plan "
                         "function." % (q.dtype, w.q_dtype))
    if k.dtype != w.kv_dtype:
        raise ValueError("The dtype of k %s does not match the kv_data_type %s specified in plan "
                         "function." % (k.dtype, w.kv_dtype))


class BatchDecodeWithPagedKVCacheWrapper:
    """FlashInfer's batch decode on a paged KV cache: one query per request."""

    def __init__(self, float_workspace_buffer: torch.Tensor, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, use_tensor_cores: bool = False,
                 paged_kv_indptr_buffer: Optional[torch.Tensor] = None,
                 paged_kv_indices_buffer: Optional[torch.Tensor] = None,
                 paged_kv_last_page_len_buffer: Optional[torch.Tensor] = None,
                 backend: str = "auto", jit_args: Optional[list] = None) -> None:
        self.kv_layout = kv_layout

    def plan(self, indptr: torch.Tensor, indices: torch.Tensor, last_page_len: torch.Tensor,
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             *deprecated_positional_args: Any, **kwargs: Any) -> None:
        names = ("pos_encoding_mode", "window_left", "logits_soft_cap", "q_data_type",
                 "kv_data_type", "o_data_type", "data_type", "sm_scale", "rope_scale", "rope_theta")
        kw = dict(zip(names, deprecated_positional_args))
        kw.update(kwargs)
        self.indptr, self.indices, self.last = indptr.clone(), indices.clone(), last_page_len.clone()
        self.kw = kw
        _plan_dtypes(self, kw)

    def run(self, q: torch.Tensor, paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
            *args, q_scale: Optional[float] = None, k_scale: Optional[float] = None,
            v_scale: Optional[float] = None, out: Optional[torch.Tensor] = None,
            lse: Optional[torch.Tensor] = None, return_lse: bool = False,
            enable_pdl: Optional[bool] = None, window_left: Optional[int] = None,
            sinks: Optional[torch.Tensor] = None, q_len_per_req: Optional[int] = None,
            skip_softmax_threshold_scale_factor: Optional[float] = None,
            kv_cache_sf=None):
        kc, vc = split_cache(paged_kv_cache, self.kv_layout)
        _check_dtypes(self, q, kc)
        kw = self.kw
        sm = kw.get("sm_scale") or 1.0 / math.sqrt(q.shape[-1])
        sm = sm * (q_scale or 1.0) * (k_scale or 1.0)
        wl = kw.get("window_left", -1) if window_left is None else window_left
        outs, lses = [], []
        for b in range(len(self.indptr) - 1):
            o, l = attention(q[b:b + 1], gather(kc, self.indptr, self.indices, self.last, b),
                             gather(vc, self.indptr, self.indices, self.last, b), sm_scale=sm,
                             window_left=wl, logits_soft_cap=kw.get("logits_soft_cap"),
                             pos_encoding_mode=str(kw.get("pos_encoding_mode", "NONE")),
                             rope_scale=kw.get("rope_scale"), rope_theta=kw.get("rope_theta"),
                             v_scale=v_scale)
            outs.append(o)
            lses.append(l)
        o = torch.cat(outs) if outs else torch.zeros(0, q.shape[1], vc.shape[-1], dtype=torch.float64)
        l = torch.cat(lses) if lses else torch.zeros(0, q.shape[1], dtype=torch.float64)
        return _finish(o, l, kw.get("o_data_type") or q.dtype, return_lse, out, lse)


class BatchPrefillWithPagedKVCacheWrapper:
    """FlashInfer's batch prefill on a paged KV cache: qo_indptr rows per request."""

    def __init__(self, float_workspace_buffer: torch.Tensor, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Optional[torch.Tensor] = None,
                 paged_kv_indptr_buf: Optional[torch.Tensor] = None,
                 paged_kv_indices_buf: Optional[torch.Tensor] = None,
                 paged_kv_last_page_len_buf: Optional[torch.Tensor] = None,
                 custom_mask_buf: Optional[torch.Tensor] = None,
                 mask_indptr_buf: Optional[torch.Tensor] = None, backend: str = "auto",
                 jit_args: Optional[list] = None, jit_kwargs: Optional[dict] = None,
                 variant_owns_mask: bool = False) -> None:
        self.kv_layout = kv_layout

    def plan(self, qo_indptr: torch.Tensor, paged_kv_indptr: torch.Tensor,
             paged_kv_indices: torch.Tensor, paged_kv_last_page_len: torch.Tensor,
             num_qo_heads: int, num_kv_heads: int, head_dim_qk: int, page_size: int,
             head_dim_vo: Optional[int] = None, custom_mask: Optional[torch.Tensor] = None,
             packed_custom_mask: Optional[torch.Tensor] = None, causal: bool = False,
             pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
             sm_scale: Optional[float] = None, window_left: int = -1,
             logits_soft_cap: Optional[float] = None, rope_scale: Optional[float] = None,
             rope_theta: Optional[float] = None, q_data_type="float16", kv_data_type=None,
             o_data_type=None, non_blocking: bool = True) -> None:
        self.qo, self.indptr = qo_indptr.clone(), paged_kv_indptr.clone()
        self.indices, self.last = paged_kv_indices.clone(), paged_kv_last_page_len.clone()
        self.kw = dict(causal=causal, sm_scale=sm_scale, window_left=window_left,
                       logits_soft_cap=logits_soft_cap, pos_encoding_mode=pos_encoding_mode,
                       rope_scale=rope_scale, rope_theta=rope_theta)
        self.o_dtype = o_data_type
        _plan_dtypes(self, dict(q_data_type=q_data_type, kv_data_type=kv_data_type))

    def keys(self, paged_kv_cache, b):
        kc, vc = split_cache(paged_kv_cache, self.kv_layout)
        return (gather(kc, self.indptr, self.indices, self.last, b),
                gather(vc, self.indptr, self.indices, self.last, b))

    def run(self, q: torch.Tensor, paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
            *args, q_scale=None, k_scale=None, v_scale=None,
            out: Optional[torch.Tensor] = None, lse: Optional[torch.Tensor] = None,
            return_lse: bool = False, lse_base: str = "log2", lse_layout: str = "NH",
            enable_pdl: Optional[bool] = None, window_left: Optional[int] = None, sinks=None,
            kv_cache_sf=None, skip_softmax_threshold_scale_factor=None, use_fp16_softmax=None,
            uses_spcompress=None):
        _check_dtypes(self, q, split_cache(paged_kv_cache, self.kv_layout)[0])
        return _prefill(self, q, lambda b: self.keys(paged_kv_cache, b), q_scale, k_scale,
                        v_scale, out, lse, return_lse, window_left, lse_base, lse_layout)


def _prefill(w, q, keys, q_scale, k_scale, v_scale, out, lse, return_lse, window_left,
             lse_base="log2", lse_layout="NH"):
    kw = dict(w.kw)
    kw["sm_scale"] = (kw["sm_scale"] or 1.0 / math.sqrt(q.shape[-1])) * (q_scale or 1.0) * (k_scale or 1.0)
    if window_left is not None:
        kw["window_left"] = window_left
    n, H = q.shape[0], q.shape[1]
    o_all, l_all = None, torch.full((n, H), -math.inf, dtype=torch.float64)
    for b in range(len(w.qo) - 1):
        q0, q1 = int(w.qo[b]), int(w.qo[b + 1])
        k, v = keys(b)
        if o_all is None:
            o_all = torch.zeros(n, H, v.shape[-1], dtype=torch.float64)
        if q1 == q0:
            continue
        o, l = attention(q[q0:q1], k, v, v_scale=v_scale, **kw)
        o_all[q0:q1], l_all[q0:q1] = o, l
    if o_all is None:
        o_all = torch.zeros(n, H, q.shape[-1], dtype=torch.float64)
    return _finish(o_all, l_all, w.o_dtype or q.dtype, return_lse, out, lse, lse_base, lse_layout)


class BatchPrefillWithRaggedKVCacheWrapper:
    """FlashInfer's batch prefill on ragged keys: kv_indptr rows of k and v per request."""

    def __init__(self, float_workspace_buffer: torch.Tensor, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Optional[torch.Tensor] = None,
                 kv_indptr_buf: Optional[torch.Tensor] = None,
                 custom_mask_buf: Optional[torch.Tensor] = None,
                 mask_indptr_buf: Optional[torch.Tensor] = None, backend: str = "auto",
                 jit_args: Optional[list] = None, jit_kwargs: Optional[dict] = None,
                 variant_owns_mask: bool = False) -> None:
        self.kv_layout = kv_layout

    def plan(self, qo_indptr: torch.Tensor, kv_indptr: torch.Tensor, num_qo_heads: int,
             num_kv_heads: int, head_dim_qk: int, head_dim_vo: Optional[int] = None,
             custom_mask: Optional[torch.Tensor] = None,
             packed_custom_mask: Optional[torch.Tensor] = None, causal: bool = False,
             pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
             rope_theta: Optional[float] = None, q_data_type="float16", kv_data_type=None,
             o_data_type=None, non_blocking: bool = True) -> None:
        self.qo, self.kv = qo_indptr.clone(), kv_indptr.clone()
        self.kw = dict(causal=causal, sm_scale=sm_scale, window_left=window_left,
                       logits_soft_cap=logits_soft_cap, pos_encoding_mode=pos_encoding_mode,
                       rope_scale=rope_scale, rope_theta=rope_theta)
        self.o_dtype = o_data_type
        _plan_dtypes(self, dict(q_data_type=q_data_type, kv_data_type=kv_data_type))

    def run(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args,
            q_scale: Optional[float] = None, k_scale: Optional[float] = None,
            v_scale: Optional[float] = None, o_scale: Optional[float] = None,
            out: Optional[torch.Tensor] = None, lse: Optional[torch.Tensor] = None,
            return_lse: bool = False, lse_base: str = "log2", lse_layout: str = "NH",
            enable_pdl: Optional[bool] = None, kv_cache_sf=None):
        _check_dtypes(self, q, k)
        if self.kv_layout == "HND":
            k, v = k.transpose(0, 1), v.transpose(0, 1)

        def keys(b):
            s, e = int(self.kv[b]), int(self.kv[b + 1])
            return k[s:e], v[s:e]
        return _prefill(self, q, keys, q_scale, k_scale, v_scale, out, lse, return_lse, None,
                        lse_base, lse_layout)


class BatchMLAPagedAttentionWrapper:
    """FlashInfer's MLA: logits (q_nope . ckv + q_pe . kpe) * sm_scale, output softmax @ ckv."""

    def __init__(self, float_workspace_buffer: torch.Tensor, use_cuda_graph: bool = False,
                 qo_indptr: Optional[torch.Tensor] = None, kv_indptr: Optional[torch.Tensor] = None,
                 kv_indices: Optional[torch.Tensor] = None,
                 kv_len_arr: Optional[torch.Tensor] = None, backend: str = "auto") -> None:
        pass

    def plan(self, qo_indptr: torch.Tensor, kv_indptr: torch.Tensor, kv_indices: torch.Tensor,
             kv_len_arr: torch.Tensor, num_heads: int, head_dim_ckv: int, head_dim_kpe: int,
             page_size: int, causal: bool, sm_scale: float, q_data_type: torch.dtype,
             kv_data_type: torch.dtype, use_profiler: bool = False) -> None:
        self.qo, self.kv, self.indices = qo_indptr.clone(), kv_indptr.clone(), kv_indices.clone()
        self.lens, self.causal, self.sm = kv_len_arr.clone(), causal, sm_scale

    def run(self, q_nope: Optional[torch.Tensor] = None, q_pe: Optional[torch.Tensor] = None,
            ckv_cache: Optional[torch.Tensor] = None, kpe_cache: Optional[torch.Tensor] = None,
            out: Optional[torch.Tensor] = None, lse: Optional[torch.Tensor] = None,
            return_lse: bool = False, profiler_buffer: Optional[torch.Tensor] = None,
            kv_len: Optional[torch.Tensor] = None, page_table: Optional[torch.Tensor] = None,
            return_lse_base_on_e: bool = False, o_scale: Optional[float] = None):
        n, H, Dc = q_nope.shape
        o_all = torch.zeros(n, H, Dc, dtype=torch.float64)
        l_all = torch.full((n, H), -math.inf, dtype=torch.float64)
        q = torch.cat([q_nope, q_pe], -1)
        kv = torch.cat([ckv_cache, kpe_cache], -1)[:, :, None, :]
        for b in range(len(self.qo) - 1):
            q0, q1 = int(self.qo[b]), int(self.qo[b + 1])
            pages = self.indices[int(self.kv[b]):int(self.kv[b + 1])].long()
            k = kv[pages].reshape(-1, 1, kv.shape[-1])[:int(self.lens[b])]
            if q1 > q0:
                o, l = attention(q[q0:q1], k, k[..., :Dc], causal=self.causal, sm_scale=self.sm)
                o_all[q0:q1], l_all[q0:q1] = o, l
        if return_lse_base_on_e:
            l_all = l_all * LN2
        return _finish(o_all, l_all, q_nope.dtype, return_lse, out, lse)


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor,
                s_b: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    return merge_states(torch.stack([v_a, v_b], 1), torch.stack([s_a, s_b], 1))


def merge_states(v: torch.Tensor, s: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    sd = s.double()
    m = sd.max(1, keepdim=True).values
    w = torch.pow(2.0, sd - m)
    tot = w.sum(1)
    V = (v.double() * w[..., None]).sum(1) / tot[..., None]
    return V.to(v.dtype), (m.squeeze(1) + torch.log2(tot)).float()


def merge_state_in_place(v: torch.Tensor, s: torch.Tensor, v_other: torch.Tensor,
                         s_other: torch.Tensor, mask: Optional[torch.Tensor] = None) -> None:
    """FlashInfer's cascade.merge_state_in_place: (v, s) becomes its merge with (v_other,
    s_other), only the rows where mask is true; s is merged into s.to(float32) (a copy
    unless it is float32)."""
    V, S = merge_state(v, s.float(), v_other, s_other.float())
    rows = torch.ones(v.shape[0], dtype=torch.bool) if mask is None else mask.bool()
    v[rows] = V[rows]
    if s.dtype == torch.float32:
        s[rows] = S[rows]


def append_paged_kv_cache(append_key: torch.Tensor, append_value: torch.Tensor,
                          batch_indices: torch.Tensor, positions: torch.Tensor,
                          paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
                          kv_indices: torch.Tensor, kv_indptr: torch.Tensor,
                          kv_last_page_len: torch.Tensor, kv_layout: str = "NHD") -> None:
    kc, vc = split_cache(paged_kv_cache, kv_layout)
    P = kc.shape[1]
    for i in range(append_key.shape[0]):
        b, p = int(batch_indices[i]), int(positions[i])
        page = int(kv_indices[int(kv_indptr[b]) + p // P])
        kc[page, p % P] = append_key[i]
        vc[page, p % P] = append_value[i]


def append_paged_mla_kv_cache(append_ckv: torch.Tensor, append_kpe: torch.Tensor,
                              batch_indices: torch.Tensor, positions: torch.Tensor,
                              ckv_cache: Optional[torch.Tensor], kpe_cache: Optional[torch.Tensor],
                              kv_indices: torch.Tensor, kv_indptr: torch.Tensor,
                              kv_last_page_len: torch.Tensor) -> None:
    P = ckv_cache.shape[1]
    for i in range(append_ckv.shape[0]):
        b, p = int(batch_indices[i]), int(positions[i])
        page = int(kv_indices[int(kv_indptr[b]) + p // P])
        ckv_cache[page, p % P] = append_ckv[i]
        kpe_cache[page, p % P] = append_kpe[i]


def get_batch_indices_positions(append_indptr: torch.Tensor, seq_lens: torch.Tensor, nnz: int,
                                batch_indices: Optional[torch.Tensor] = None,
                                positions: Optional[torch.Tensor] = None
                                ) -> Tuple[torch.Tensor, torch.Tensor]:
    if batch_indices is None:
        batch_indices = torch.full((nnz,), -1, dtype=torch.int32)
    if positions is None:
        positions = torch.zeros((nnz,), dtype=torch.int32)
    for b in range(len(append_indptr) - 1):
        s, e = int(append_indptr[b]), int(append_indptr[b + 1])
        for j in range(s, e):
            batch_indices[j] = b
            positions[j] = int(seq_lens[b]) - (e - s) + (j - s)
    return batch_indices, positions


def single_decode_with_kv_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                kv_layout: str = "NHD", pos_encoding_mode: str = "NONE",
                                use_tensor_cores: bool = False, q_scale: Optional[float] = None,
                                k_scale: Optional[float] = None, v_scale: Optional[float] = None,
                                window_left: int = -1, logits_soft_cap: Optional[float] = None,
                                sm_scale: Optional[float] = None, rope_scale: Optional[float] = None,
                                rope_theta: Optional[float] = None, return_lse: bool = False):
    """FlashInfer's decode of one request: q (Hq, D), k and v (L, Hk, D), or (Hk, L, D) for HND."""
    if kv_layout == "HND":
        k, v = k.transpose(0, 1), v.transpose(0, 1)
    sm = (sm_scale or 1.0 / math.sqrt(q.shape[-1])) * (q_scale or 1.0) * (k_scale or 1.0)
    o, lse = attention(q[None], k, v, sm_scale=sm, window_left=window_left,
                       logits_soft_cap=logits_soft_cap, pos_encoding_mode=pos_encoding_mode,
                       rope_scale=rope_scale, rope_theta=rope_theta, v_scale=v_scale)
    o = o[0].to(q.dtype)
    return (o, lse[0].float()) if return_lse else o


def single_prefill_with_kv_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 scale_q: Optional[torch.Tensor] = None,
                                 scale_k: Optional[torch.Tensor] = None,
                                 scale_v: Optional[torch.Tensor] = None, o_dtype=None,
                                 custom_mask: Optional[torch.Tensor] = None,
                                 packed_custom_mask: Optional[torch.Tensor] = None,
                                 causal: bool = False, kv_layout: str = "NHD",
                                 pos_encoding_mode: str = "NONE", use_fp16_qk_reduction: bool = False,
                                 sm_scale: Optional[float] = None, window_left: int = -1,
                                 logits_soft_cap: Optional[float] = None,
                                 rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
                                 backend: str = "auto", return_lse: bool = False):
    """FlashInfer's prefill of one request: q (Lq, Hq, D), k and v (Lk, Hk, D), or (Hk, Lk, D)."""
    if kv_layout == "HND":
        k, v = k.transpose(0, 1), v.transpose(0, 1)
    o, lse = attention(q, k, v, causal=causal, sm_scale=sm_scale, window_left=window_left,
                       logits_soft_cap=logits_soft_cap, pos_encoding_mode=pos_encoding_mode,
                       rope_scale=rope_scale, rope_theta=rope_theta)
    o = o.to(o_dtype or q.dtype)
    return (o, lse.float()) if return_lse else o


class MultiLevelCascadeAttentionWrapper:
    """FlashInfer's cascade attention as its own run code computes it: one paged prefill
    wrapper per level, the last planned causal (when causal) and the others not; run merges
    each other level's (out, lse), in order, into the last level's with merge_state_in_place."""

    def __init__(self, num_levels, float_workspace_buffer: torch.Tensor, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf_arr: Optional[list] = None,
                 paged_kv_indptr_buf_arr: Optional[list] = None,
                 paged_kv_indices_buf_arr: Optional[list] = None,
                 paged_kv_last_page_len_buf_arr: Optional[list] = None) -> None:
        self.levels = [BatchPrefillWithPagedKVCacheWrapper(float_workspace_buffer, kv_layout)
                       for _ in range(num_levels)]

    def plan(self, qo_indptr_arr: list, paged_kv_indptr_arr: list, paged_kv_indices_arr: list,
             paged_kv_last_page_len: list, num_qo_heads: int, num_kv_heads: int, head_dim: int,
             page_size: int, causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type: str = "float16", kv_data_type: Optional[Union[str, torch.dtype]] = None):
        n = len(self.levels)
        for i, (w, qo, ip, ix, last) in enumerate(zip(self.levels, qo_indptr_arr, paged_kv_indptr_arr,
                                                        paged_kv_indices_arr, paged_kv_last_page_len,
                                                        strict=True)):
            w.plan(qo, ip, ix, last, num_qo_heads, num_kv_heads, head_dim, page_size,
                   causal=causal if i == n - 1 else False, pos_encoding_mode=pos_encoding_mode,
                   sm_scale=sm_scale, window_left=window_left, logits_soft_cap=logits_soft_cap,
                   rope_scale=rope_scale, rope_theta=rope_theta, q_data_type=q_data_type,
                   kv_data_type=kv_data_type)

    def run(self, q: torch.Tensor, paged_kv_cache: torch.Tensor):
        out, lse = self.levels[-1].run(q, paged_kv_cache, return_lse=True)
        for w in self.levels[:-1]:
            o, s = w.run(q, paged_kv_cache, return_lse=True)
            merge_state_in_place(out, lse, o, s)
        return out


CLASSES = ["BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper",
           "BatchPrefillWithRaggedKVCacheWrapper", "BatchMLAPagedAttentionWrapper"]
FUNCTIONS = ["merge_state", "merge_states", "merge_state_in_place", "append_paged_kv_cache",
             "append_paged_mla_kv_cache",
             "get_batch_indices_positions", "single_decode_with_kv_cache", "single_prefill_with_kv_cache"]


def decorate(api):
    """The references above, each wrapped by FlashInfer's real decorator."""
    fns = {n: api.flashinfer_api(globals()[n]) for n in FUNCTIONS}
    for n in CLASSES:
        cls = globals()[n]
        for m in ("__init__", "plan", "run"):
            setattr(cls, m, api.flashinfer_api(getattr(cls, m)))
        fns[n] = cls
    return fns
