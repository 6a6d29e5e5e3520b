/* kernels_paged.h: FlashInfer's batch attention on paged and ragged KV caches, MLA, attention-state merges and KV-cache appends (private). */
#ifndef MATE_KERNELS_PAGED_H_INCLUDED
#define MATE_KERNELS_PAGED_H_INCLUDED

#include "kernels.h"

/*
 * A batch of requests. Request b has query rows [qo_indptr[b],
 * qo_indptr[b+1]) of q (row b alone when qo_indptr is NULL: decode) and
 * kv_len[b] keys:
 * - paged (page_size > 0): pages kv_indices[kv_indptr[b] .. kv_indptr[b+1])
 *   of the caches k and v, (pages, page_size, Hk, D) for NHD or (pages, Hk,
 *   page_size, D) for HND (p->kv_layout); the last page holds the tail;
 * - ragged (page_size == 0): rows [kv_indptr[b], kv_indptr[b+1]) of k and v,
 *   (nnz, Hk, D) for NHD or (Hk, nnz, D) for HND; kv_len is unused.
 * q (nnz_q, Hq, D), out (nnz_q, Hq, Dv), lse (nnz_q, Hq) or NULL. The
 * arrays are borrowed host integers, checked against the tensors here.
 * Each request is single_prefill (kernels.h) on its own keys, so p's
 * causal mask is aligned bottom-right per request, GQA, window, soft cap,
 * scales and ROPE_LLAMA positions are the single-request ones.
 */
typedef struct mate_batch_attn {
	int64_t batch;
	const int64_t *qo_indptr;            /* batch + 1, or NULL */
	const int64_t *kv_indptr;            /* batch + 1 */
	const int64_t *kv_indices;           /* paged: n_indices page numbers */
	int64_t n_indices;
	const int64_t *kv_len;               /* paged: batch lengths */
	int64_t page_size;
	const mate_tensor *q, *k, *v, *out, *lse;
} mate_batch_attn;

/*! mate_batch_attention() : a's batch on k's batch_attention: the CPU's
 * runs single_prefill once per request with a query row (the keys of a
 * paged request gathered into a contiguous buffer first), CUDA's one
 * kernel reading the pages in place. Custom masks are
 * MATE_ERR_UNSUPPORTED. @return MATE_OK or the status with err. */
int mate_batch_attention(const mate_kernels *k, const mate_batch_attn *a,
    const mate_attn_params *p, mate_error *err);
/*! mate_cpu_batch_attention() : the CPU kernel table's batch_attention. */
int mate_cpu_batch_attention(const mate_batch_attn *a, const mate_attn_params *p,
    mate_error *err);

/* BatchMLAPagedAttentionWrapper.run: q_nope (nnz, H, Dc), q_pe (nnz, H,
 * Dp); ckv (pages, page_size, Dc) and kpe (pages, page_size, Dp) paged by
 * kv_indptr/kv_indices/kv_len; logits (q_nope . ckv + q_pe . kpe) *
 * sm_scale, output softmax @ ckv (nnz, H, Dc). */
typedef struct mate_batch_mla_args {
	int64_t batch;
	const int64_t *qo_indptr, *kv_indptr, *kv_indices, *kv_len;
	int64_t n_indices, page_size;
	const mate_tensor *q_nope, *q_pe, *ckv, *kpe, *out, *lse;
} mate_batch_mla_args;

/*! mate_batch_mla() : as mate_batch_attention(), one KV head shared by
 * all query heads; p gives causal, sm_scale and lse_base_e. */
int mate_batch_mla(const mate_kernels *k, const mate_batch_mla_args *a, const mate_attn_params *p,
    mate_error *err);

/*! mate_merge_states() : nstates attention states, v[i] (n, H, D) with
 * their float32 base-2 LSEs s[i] (n, H), merged into vo (n, H, D) and so
 * (n, H): the states weighted by 2^(s - max s), so = log2 of the sum of
 * 2^s. merge_state is two states; merge_states the slices of dim 1. */
int mate_merge_states(const mate_tensor *v, const mate_tensor *s, int64_t nstates,
    const mate_tensor *vo, const mate_tensor *so, mate_error *err);

/*! mate_append_paged_kv() : for each row i of append (nnz, Hk, D): the
 * entry positions[i] of request batch_indices[i] of the paged cache (as
 * mate_batch_attn's, layout hnd) gets append[i]. cache may be NULL (MLA
 * kpe without a cache). Every index is checked before the first write. */
int mate_append_paged_kv(const mate_tensor *append, const mate_tensor *cache, int hnd,
    const int64_t *batch_indices, const int64_t *positions, const int64_t *kv_indptr,
    int64_t batch, const int64_t *kv_indices, int64_t n_indices, mate_error *err);

#endif /* MATE_KERNELS_PAGED_H_INCLUDED */
