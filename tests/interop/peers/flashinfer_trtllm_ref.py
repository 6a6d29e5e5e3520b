"""flashinfer_trtllm_ref.py: torch reference implementations (float64) of FlashInfer's trtllm-gen and XQA paged attention functions, MLA's included, with FlashInfer 0.7.2's names and signatures.

The math is that of FlashInfer's tests (test_trtllm_gen_attention_decode.py,
_prefill.py, test_xqa_batch_decode.py): request b's keys are the first
seq_lens[b] entries of the pages block_tables[b, :ceil(seq_lens[b] / page_size)]
of the cache (HND or NHD; a (k, v) tuple, or one tensor (pages, 1 or 2, ...));
its query rows are the last of its positions (causal, bottom-right); the
logits are q.k * bmm1_scale (window_left w keeps keys at most w behind),
sinks join the softmax's denominator, the output is softmax @ v * bmm2_scale
and the LSE is base 2 (flashinfer_attn_ref.attention()). MLA (test_trtllm_gen_mla.py):
one latent head whose first kv_lora_rank columns are also the values, the query's
columns split the same way, the output bfloat16."""
import math
from typing import Any, List, Optional, Tuple, Union

import torch

from flashinfer_attn_ref import attention


def _kv(kv_cache, kv_layout):
    """(k_cache, v_cache), each as (pages, page_size, H, D)."""
    if isinstance(kv_cache, (tuple, list)):
        k, v = kv_cache
    elif kv_cache.shape[1] == 1:
        k = v = kv_cache[:, 0]
    else:
        k, v = kv_cache[:, 0], kv_cache[:, 1]
    if kv_layout == "HND":
        k, v = k.transpose(1, 2), v.transpose(1, 2)
    return k, v


def _scale(x):
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


def _paged(query, kv_cache, block_tables, seq_lens, qo_indptr, bmm1, bmm2, window_left,
           kv_layout, causal, sinks, out, out_dtype, lse, return_lse):
    k, v = _kv(kv_cache, kv_layout)
    P = k.shape[1]
    o = torch.zeros(query.shape, dtype=torch.float64)
    lses = torch.zeros(query.shape[:2], dtype=torch.float64)
    for b in range(len(qo_indptr) - 1):
        q0, q1, L = int(qo_indptr[b]), int(qo_indptr[b + 1]), int(seq_lens[b])
        pages = block_tables[b, :(L + P - 1) // P].long()
        kb = k[pages].reshape(-1, *k.shape[2:])[:L]
        vb = v[pages].reshape(-1, *v.shape[2:])[:L]
        if q1 > q0:
            o[q0:q1], lses[q0:q1] = attention(query[q0:q1], kb, vb, causal=causal, sm_scale=bmm1,
                                              window_left=window_left, v_scale=bmm2, sinks=sinks)
    dt = out_dtype if isinstance(out_dtype, torch.dtype) else out.dtype if out is not None else query.dtype
    o = o.to(dt)
    if out is not None:
        out.copy_(o)
        o = out
    if lse is not None:
        lse.copy_(lses.float())
    if not return_lse:
        return o
    return o, (lse if lse is not None else lses.float())


def trtllm_batch_decode_with_kv_cache(
        query: torch.Tensor, kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        workspace_buffer: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
        max_seq_len: int, bmm1_scale: Union[float, torch.Tensor] = 1.0,
        bmm2_scale: Union[float, torch.Tensor] = 1.0, window_left: int = -1,
        out: Optional[torch.Tensor] = None, out_dtype: Optional[Union[torch.dtype, str]] = None,
        o_sf_scale: Optional[float] = None, o_sf_vec_size: Optional[int] = None,
        sinks: Optional[List[torch.Tensor]] = None, kv_layout: str = "HND",
        enable_pdl: Optional[bool] = None, backend: str = "auto", q_len_per_req: Optional[int] = 1,
        o_scale: Optional[float] = 1.0, mask: Optional[torch.Tensor] = None,
        max_q_len: Optional[int] = None, cum_seq_lens_q: Optional[torch.Tensor] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        kv_cache_sf: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        uses_shared_paged_kv_idx: bool = True, lse: Optional[torch.Tensor] = None,
        return_lse: bool = False, bmm1_scale_log2: Optional[torch.Tensor] = None,
        multi_ctas_kv_counter_buffer: Optional[torch.Tensor] = None,
        enable_block_sparse_attention: bool = False, cp_world: int = 1, cp_rank: int = 0,
        causal_seqlens_kv_global: Optional[torch.Tensor] = None,
        bf16q_fp8kv_transform_mode: Optional[str] = None,
        request_order: Optional[torch.Tensor] = None, request_order_plan: Optional[Any] = None):
    """FlashInfer's decode: q_len_per_req rows per request (cum_seq_lens_q when it is None),
    causal; bmm1_scale_log2, when given, takes precedence over bmm1_scale."""
    if q_len_per_req is not None:
        qo = torch.arange(0, query.shape[0] + 1, q_len_per_req)
    else:
        qo = cum_seq_lens_q
    bmm1 = _scale(bmm1_scale_log2) / math.log2(math.e) if bmm1_scale_log2 is not None else _scale(bmm1_scale)
    return _paged(query, kv_cache, block_tables, seq_lens, qo, bmm1, _scale(bmm2_scale),
                  window_left, kv_layout, True, sinks, out, out_dtype, lse, return_lse)


def trtllm_batch_context_with_kv_cache(
        query: torch.Tensor, kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        workspace_buffer: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
        max_q_len: int, max_kv_len: int, bmm1_scale: Union[float, torch.Tensor],
        bmm2_scale: Union[float, torch.Tensor], batch_size: int, cum_seq_lens_q: torch.Tensor,
        cum_seq_lens_kv: torch.Tensor, window_left: int = -1, out: Optional[torch.Tensor] = None,
        out_dtype: Optional[Union[torch.dtype, str]] = None, o_sf_scale: Optional[float] = None,
        o_sf_vec_size: Optional[int] = None, kv_layout: str = "HND",
        enable_pdl: Optional[bool] = None, sinks: Optional[List[torch.Tensor]] = None,
        kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        uses_shared_paged_kv_idx: bool = True, causal: bool = True,
        lse: Optional[torch.Tensor] = None, return_lse: bool = False,
        multi_ctas_kv_counter_buffer: Optional[torch.Tensor] = None,
        use_fp16_softmax: Optional[bool] = None, uses_spcompress: Optional[bool] = None,
        backend: str = "trtllm-gen"):
    """FlashInfer's context (prefill) attention: cum_seq_lens_q's rows per request."""
    return _paged(query, kv_cache, block_tables, seq_lens, cum_seq_lens_q, _scale(bmm1_scale),
                  _scale(bmm2_scale), window_left, kv_layout, causal, sinks, out, out_dtype, lse,
                  return_lse)


def xqa_batch_decode_with_kv_cache(
        query: torch.Tensor, kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        workspace_buffer: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
        max_seq_len: int, bmm1_scale: Union[float, torch.Tensor] = 1.0,
        bmm2_scale: Union[float, torch.Tensor] = 1.0, window_left: int = -1,
        out: Optional[torch.Tensor] = None, sinks: Optional[torch.Tensor] = None,
        kv_layout: str = "NHD", enable_pdl: bool = None, q_len_per_req: Optional[int] = 1,
        o_scale: Optional[float] = 1.0, mask: Optional[torch.Tensor] = None,
        kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
        q_cu_seq_lens: Optional[torch.Tensor] = None) -> torch.Tensor:
    """FlashInfer's XQA decode: its q scale bmm1_scale / (bmm2_scale o_scale) sqrt(D) and kv
    scale bmm2_scale o_scale, with 1 / o_scale on the output, are the logits' bmm1_scale and
    the output's bmm2_scale."""
    qo = torch.arange(0, query.shape[0] + 1, q_len_per_req)
    return _paged(query, kv_cache, block_tables, seq_lens, qo, _scale(bmm1_scale),
                  _scale(bmm2_scale), window_left, kv_layout, True, sinks, out, None, None, False)


def trtllm_batch_decode_with_kv_cache_mla(
        query: torch.Tensor, kv_cache: torch.Tensor, workspace_buffer: torch.Tensor,
        qk_nope_head_dim: int, kv_lora_rank: int, qk_rope_head_dim: int,
        block_tables: torch.Tensor, seq_lens: Optional[torch.Tensor], max_seq_len: int,
        sparse_mla_top_k: int = 0, out: Optional[torch.Tensor] = None,
        bmm1_scale: Union[float, torch.Tensor] = 1.0, bmm2_scale: Union[float, torch.Tensor] = 1.0,
        sinks: Optional[List[torch.Tensor]] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        enable_pdl: Optional[bool] = None, backend: str = "auto", is_var_seq: bool = True,
        uses_shared_paged_kv_idx: bool = True, lse: Optional[torch.Tensor] = None,
        return_lse: bool = False, cute_dsl_impl: str = "auto", kv_scale_format: str = "auto",
        cum_seq_lens_q: Optional[torch.Tensor] = None, max_q_len: Optional[int] = None,
        multi_ctas_kv_counter_buffer: Optional[torch.Tensor] = None,
        sparse_mla_top_k_lens: Optional[torch.Tensor] = None, enable_dcp: bool = False,
        cp_world: int = 1, cp_rank: int = 0,
        causal_seqlens_kv_global: Optional[torch.Tensor] = None,
        use_fp16_softmax: Optional[bool] = None, return_lse_base: Optional[str] = None):
    """FlashInfer's MLA decode: query (batch, q_len, H, rank + rope) or, with cum_seq_lens_q,
    (rows, H, rank + rope); kv_cache (pages, [1,] P, rank + rope)."""
    q = query.reshape(-1, *query.shape[-2:]) if query.ndim == 4 else query
    kv = kv_cache[:, 0] if kv_cache.ndim == 4 else kv_cache
    qo = cum_seq_lens_q if cum_seq_lens_q is not None else torch.arange(0, q.shape[0] + 1, query.shape[1])
    P, H = kv.shape[1], q.shape[1]
    o = torch.zeros(q.shape[0], H, kv_lora_rank, dtype=torch.float64)
    lses = torch.zeros(q.shape[0], H, dtype=torch.float64)
    for b in range(len(qo) - 1):
        q0, q1, L = int(qo[b]), int(qo[b + 1]), int(seq_lens[b])
        keys = kv[block_tables[b, :(L + P - 1) // P].long()].reshape(-1, kv.shape[-1])[:L, None, :]
        if q1 > q0:
            o[q0:q1], lses[q0:q1] = attention(q[q0:q1], keys, keys[..., :kv_lora_rank], causal=True,
                                              sm_scale=_scale(bmm1_scale), v_scale=_scale(bmm2_scale),
                                              sinks=sinks)
    o = o.reshape(*query.shape[:-1], kv_lora_rank).to(torch.bfloat16)
    if out is not None:
        out.copy_(o)
        o = out
    if return_lse_base == "basee":
        lses = lses * math.log(2.0)
    if lse is not None:
        lse.copy_(lses.float().reshape(lse.shape))
    if not return_lse:
        return o
    return o, (lse if lse is not None else lses.float())


FUNCTIONS = ["trtllm_batch_decode_with_kv_cache", "trtllm_batch_context_with_kv_cache",
             "xqa_batch_decode_with_kv_cache", "trtllm_batch_decode_with_kv_cache_mla"]


def decorate(api):
    """The references above, each wrapped by FlashInfer's real decorator."""
    return {n: api.flashinfer_api(globals()[n]) for n in FUNCTIONS}
