/* replay_ops_trtllm.c: replay handlers for FlashInfer's trtllm-gen and XQA paged attention functions, MLA's included (block tables and seq_lens onto mate's batch attention). */
#include "mate_private.h"
#include "kernels.h"
#include "kernels_fi.h"
#include "kernels_paged.h"
#include "replay_private.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registers the handlers of this file on r (replay_ops.c calls it). */
int mate_replay_register_trtllm(mate_replay *r, mate_error *err) MATE_HIDDEN;

#define ABSENT(v) ((v) == NULL || mate_value_kind_of(v) == MATE_V_NONE)

static const char *
fname(const mate_replay_call *c)
{
	return mate_replay_call_function(c);
}

enum tr_kind { TR_DECODE, TR_CONTEXT, TR_XQA, TR_MLA };

/* A parameter mate does not replay, fine at its default: absent or None for
 * P_NONE, else a bool or int equal to def. */
struct tr_default {
	int pos;
	const char *name;
	enum { P_NONE, P_BOOL, P_INT } kind;
	int64_t def;
};

static int
at_defaults(mate_replay_call *c, const struct tr_default *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const mate_value *v = mate_replay_arg(c, d[i].pos, d[i].name);
		int64_t x;
		int b, rc = MATE_OK;

		if (ABSENT(v))
			continue;
		if (d[i].kind == P_BOOL && (rc = mate_replay_arg_bool(c, d[i].pos, d[i].name,
		    (int)d[i].def, &b)) == MATE_OK && b == d[i].def)
			continue;
		if (d[i].kind == P_INT && (rc = mate_replay_arg_int(c, d[i].pos, d[i].name, d[i].def,
		    &x)) == MATE_OK && x == d[i].def)
			continue;
		if (rc != MATE_OK)
			return rc;
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: %s is not replayed", fname(c),
		    d[i].name);
	}
	return MATE_OK;
}

/* Where each function has its parameters (-1: it has none such). */
struct tr_pos {
	int bt, sl, max_seq, max_q, max_kv, bmm1, bmm2, batch, cu_q, cu_kv, window, out, out_dtype;
	int sinks, kv_layout, q_len, lse, ret_lse, causal, bmm1_log2;
	const char *cu_q_name, *layout_default;
};

static const struct tr_pos tr_pos[] = {
	[TR_DECODE] = { .bt = 3, .sl = 4, .max_seq = 5, .max_q = 20, .max_kv = -1, .bmm1 = 6, .bmm2 = 7, .batch = -1,
		.cu_q = 21, .cu_kv = -1, .window = 8, .out = 9, .out_dtype = 10, .sinks = 13,
		.kv_layout = 14, .q_len = 17, .lse = 25, .ret_lse = 26, .causal = -1, .bmm1_log2 = 27,
		.cu_q_name = "cum_seq_lens_q", .layout_default = "HND" },
	[TR_CONTEXT] = { .bt = 3, .sl = 4, .max_seq = -1, .max_q = 5, .max_kv = 6, .bmm1 = 7, .bmm2 = 8, .batch = 9,
		.cu_q = 10, .cu_kv = 11, .window = 12, .out = 13, .out_dtype = 14, .sinks = 19,
		.kv_layout = 17, .q_len = -1, .lse = 24, .ret_lse = 25, .causal = 23, .bmm1_log2 = -1,
		.cu_q_name = "cum_seq_lens_q", .layout_default = "HND" },
	[TR_XQA] = { .bt = 3, .sl = 4, .max_seq = 5, .max_q = -1, .max_kv = -1, .bmm1 = 6, .bmm2 = 7, .batch = -1,
		.cu_q = 17, .cu_kv = -1, .window = 8, .out = 9, .out_dtype = -1, .sinks = 10,
		.kv_layout = 11, .q_len = 13, .lse = -1, .ret_lse = -1, .causal = -1, .bmm1_log2 = -1,
		.cu_q_name = "q_cu_seq_lens", .layout_default = "NHD" },
	[TR_MLA] = { .bt = 6, .sl = 7, .max_seq = 8, .max_q = 24, .max_kv = -1, .bmm1 = 11,
		.bmm2 = 12, .batch = -1, .cu_q = 23, .cu_kv = -1, .window = -1, .out = 10,
		.out_dtype = -1, .sinks = 13, .kv_layout = -1, .q_len = -1, .lse = 19, .ret_lse = 20,
		.causal = -1, .bmm1_log2 = -1, .cu_q_name = "cum_seq_lens_q", .layout_default = NULL },
};

/* What is not replayed: nvfp4 outputs, NVFP4 caches' scale factors, XQA's
 * spec-decoding masks, skip-softmax, separate K and V page tables, block
 * sparsity, decode-context parallelism, Cake's request order, windows
 * to the right. */
static const struct tr_default decode_defaults[] = {
	{ 11, "o_sf_scale", P_NONE, 0 }, { 12, "o_sf_vec_size", P_NONE, 0 },
	{ 19, "mask", P_NONE, 0 }, { 22, "skip_softmax_threshold_scale_factor", P_NONE, 0 },
	{ 23, "kv_cache_sf", P_NONE, 0 }, { 24, "uses_shared_paged_kv_idx", P_BOOL, 1 },
	{ 29, "enable_block_sparse_attention", P_BOOL, 0 }, { 30, "cp_world", P_INT, 1 },
	{ 31, "cp_rank", P_INT, 0 }, { 32, "causal_seqlens_kv_global", P_NONE, 0 },
	{ 34, "request_order", P_NONE, 0 }, { 35, "request_order_plan", P_NONE, 0 },
	{ 36, "sparse_top_k", P_INT, 0 },
};
static const struct tr_default context_defaults[] = {
	{ 15, "o_sf_scale", P_NONE, 0 }, { 16, "o_sf_vec_size", P_NONE, 0 },
	{ 20, "kv_cache_sf", P_NONE, 0 }, { 21, "skip_softmax_threshold_scale_factor", P_NONE, 0 },
	{ 22, "uses_shared_paged_kv_idx", P_BOOL, 1 }, { 30, "window_right", P_INT, -1 },
	{ 31, "variable_window_token_starts", P_NONE, 0 },
	{ 32, "variable_window_token_ends", P_NONE, 0 },
};
static const struct tr_default xqa_defaults[] = {
	{ 15, "mask", P_NONE, 0 }, { 16, "kv_cache_sf", P_NONE, 0 },
};
static const struct tr_default mla_defaults[] = {
	{ 9, "sparse_mla_top_k", P_INT, 0 }, { 14, "skip_softmax_threshold_scale_factor", P_NONE, 0 },
	{ 18, "uses_shared_paged_kv_idx", P_BOOL, 1 }, { 26, "sparse_mla_top_k_lens", P_NONE, 0 },
	{ 27, "enable_dcp", P_BOOL, 0 }, { 28, "cp_world", P_INT, 1 }, { 29, "cp_rank", P_INT, 0 },
	{ 30, "causal_seqlens_kv_global", P_NONE, 0 },
};

/* The call's batch as mate_batch_attn's arrays. */
struct tr_batch {
	int64_t batch, *qo_indptr, *kv_indptr, *kv_indices, *kv_len, n_indices;
};

static void
batch_free(struct tr_batch *t)
{
	free(t->qo_indptr);
	free(t->kv_indptr);
	free(t->kv_indices);
	free(t->kv_len);
}

/* The most keys a request has. */
static int64_t
max_len(const struct tr_batch *t)
{
	int64_t m = 0;

	for (int64_t b = 0; b < t->batch; b++)
		m = t->kv_len[b] > m ? t->kv_len[b] : m;
	return m;
}

/* The call's result once its kernel ran (rc, err): out, or (out, lse) with return_lse (an
 * lse= argument alone is written in place, not returned); t is freed. */
static int
finish(mate_replay_call *c, int rc, const mate_error *err, mate_value *outv, mate_value *lsev,
    int ret_lse, struct tr_batch *t)
{
	if (!ret_lse) {
		mate_value_free(lsev);
		lsev = NULL;
	}
	batch_free(t);
	return mate_replay_kernel_done_pair(c, rc, err, outv, lsev);
}

/* The query rows of each request: cu (batch + 1 offsets ending at nq) when
 * given, else q_len rows each. */
static int
query_rows(mate_replay_call *c, const struct tr_pos *pp, int kind, int64_t nq, struct tr_batch *t)
{
	int64_t qlen = 1, n = 0, maxq = -1;
	const mate_value *ql = pp->q_len >= 0 ? mate_replay_arg(c, pp->q_len, "q_len_per_req") : NULL;
	int rc, has_qlen = pp->q_len >= 0 && (ql == NULL || !ABSENT(ql));

	if ((rc = mate_replay_arg_ints(c, pp->cu_q, pp->cu_q_name, kind != TR_CONTEXT, &t->qo_indptr,
	    &n)) != MATE_OK || (has_qlen && (rc = mate_replay_arg_int(c, pp->q_len,
	    "q_len_per_req", 1, &qlen)) != MATE_OK) || (pp->max_q >= 0 &&
	    (rc = mate_replay_arg_int(c, pp->max_q, "max_q_len", -1, &maxq)) != MATE_OK))
		return rc;
	if (kind == TR_DECODE && has_qlen && t->qo_indptr != NULL)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: cum_seq_lens_q with "
		    "q_len_per_req=%lld is not replayed (FlashInfer reads q_len_per_req)", fname(c),
		    (long long)qlen);
	if (kind == TR_XQA && (qlen > 1 || t->qo_indptr != NULL))
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: speculative decoding "
		    "(q_len_per_req=%lld) is not replayed", fname(c), (long long)qlen);
	if (t->qo_indptr == NULL) {   /* q_len rows each */
		if (qlen < 1 || nq % qlen != 0)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q_len_per_req=%lld does not "
			    "divide the query's %lld rows", fname(c), (long long)qlen, (long long)nq);
		t->batch = nq / qlen;
		if ((t->qo_indptr = malloc((size_t)(t->batch + 1) * sizeof(int64_t))) == NULL)
			return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
		for (int64_t b = 0; b <= t->batch; b++)
			t->qo_indptr[b] = b * qlen;
		return MATE_OK;
	}
	if ((rc = mate_replay_check_indptr(c, pp->cu_q_name, t->qo_indptr, n)) != MATE_OK)
		return rc;
	if (t->qo_indptr[n - 1] != nq)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s ends at %lld, the query has %lld "
		    "rows", fname(c), pp->cu_q_name, (long long)t->qo_indptr[n - 1], (long long)nq);
	t->batch = n - 1;
	for (int64_t b = 0; b < t->batch && maxq >= 0; b++)
		if (t->qo_indptr[b + 1] - t->qo_indptr[b] > maxq)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: request %lld has %lld query rows, "
			    "max_q_len is %lld", fname(c), (long long)b,
			    (long long)(t->qo_indptr[b + 1] - t->qo_indptr[b]), (long long)maxq);
	return MATE_OK;
}

/* block_tables (rows, max_pages) and seq_lens into pages: request b reads
 * its first ceil(seq_lens[b] / P) entries, each a page of the cache. */
static int
page_table(mate_replay_call *c, const struct tr_pos *pp, int64_t P, int64_t npages,
    struct tr_batch *t)
{
	const mate_tensor *bt;
	int64_t nlen, maxlen = -1, ncol;
	int rc, kind;

	if ((rc = mate_replay_arg_tensor(c, pp->bt, "block_tables", 0, &bt)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, pp->sl, "seq_lens", 0, &t->kv_len, &nlen)) != MATE_OK ||
	    (pp->max_seq >= 0 && (rc = mate_replay_arg_int(c, pp->max_seq, "max_seq_len", -1,
	    &maxlen)) != MATE_OK) || (pp->max_kv >= 0 && (rc = mate_replay_arg_int(c, pp->max_kv,
	    "max_kv_len", -1, &maxlen)) != MATE_OK))
		return rc;
	kind = mate_dtype_kind(bt->dtype);
	if (bt->ndim != 2 || (kind != MATE_KIND_INT && kind != MATE_KIND_UINT) ||
	    bt->device_type != MATE_DEVICE_CPU || (bt->data == NULL && mate_tensor_numel(bt) > 0))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: block_tables: expected a 2-D integer "
		    "host tensor (batch_size, max_num_pages_per_seq) (%s, %d-D)", fname(c),
		    mate_dtype_name(bt->dtype), bt->ndim);
	if (bt->shape[0] < t->batch || nlen < t->batch)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld requests with %lld block table "
		    "rows and %lld seq_lens", fname(c), (long long)t->batch, (long long)bt->shape[0],
		    (long long)nlen);
	ncol = bt->shape[1];
	if ((t->kv_indptr = calloc((size_t)t->batch + 1, sizeof(int64_t))) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
	for (int64_t b = 0; b < t->batch; b++) {
		int64_t len = t->kv_len[b], q = t->qo_indptr[b + 1] - t->qo_indptr[b];

		/* the query rows are the last of the request's keys */
		if (len < q || len > INT32_MAX || (maxlen >= 0 && len > maxlen) ||
		    (len + P - 1) / P > ncol)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: request %lld: seq_lens %lld "
			    "for %lld query rows, max %lld keys, %lld pages of %lld in its block table "
			    "row", fname(c), (long long)b, (long long)len, (long long)q, (long long)maxlen,
			    (long long)ncol, (long long)P);
		t->kv_indptr[b + 1] = t->kv_indptr[b] + (len + P - 1) / P;
	}
	t->n_indices = t->kv_indptr[t->batch];
	if ((t->kv_indices = malloc((size_t)t->n_indices * sizeof(int64_t) + 1)) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
	for (int64_t b = 0; b < t->batch; b++)
		for (int64_t i = 0; i < t->kv_indptr[b + 1] - t->kv_indptr[b]; i++) {
			int64_t page = mate_kernel_int_at(bt, b * ncol + i);

			if (page < 0 || page >= npages)
				return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: block_tables[%lld][%lld] = "
				    "%lld is not a page of the cache's %lld", fname(c), (long long)b,
				    (long long)i, (long long)page, (long long)npages);
			t->kv_indices[t->kv_indptr[b] + i] = page;
		}
	return MATE_OK;
}

/* The cache's K and V (pages, P, Hk, D) or (pages, Hk, P, D), and q (rows, Hq, D). */
static int
check_cache(mate_replay_call *c, const mate_tensor *q, const mate_tensor *k,
    const mate_tensor *v, int hnd, int64_t *P)
{
	int64_t Hk;

	if (q->ndim != 3 || k->ndim != 4 || v->ndim != 4)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: query must be (num_tokens, "
		    "num_heads, head_dim) and the caches 4-D (%d-D, %d-D, %d-D)", fname(c), q->ndim,
		    k->ndim, v->ndim);
	for (int d = 0; d < 4; d++)
		if (k->shape[d] != v->shape[d])
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the K and V caches differ in "
			    "dim %d", fname(c), d);
	Hk = k->shape[hnd ? 1 : 2];
	*P = k->shape[hnd ? 2 : 1];
	if (k->shape[3] != q->shape[2] || Hk < 1 || *P < 1 || q->shape[1] % Hk != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld query heads of %lld do not fit "
		    "a cache of %lld kv heads of %lld, %lld per page", fname(c),
		    (long long)q->shape[1], (long long)q->shape[2], (long long)Hk,
		    (long long)k->shape[3], (long long)*P);
	if (k->dtype != v->dtype)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the K cache is %s, V %s", fname(c),
		    mate_dtype_name(k->dtype), mate_dtype_name(v->dtype));
	return MATE_OK;
}

/* The output dtype: out_dtype (not 'nvfp4'), else out's, else the query's. */
static int
out_dtype(mate_replay_call *c, const struct tr_pos *pp, const mate_tensor *q, mate_dtype *dt)
{
	const mate_value *v = pp->out_dtype >= 0 ? mate_replay_arg(c, pp->out_dtype, "out_dtype") : NULL;
	const mate_tensor *out;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, pp->out, "out", 1, &out)) != MATE_OK)
		return rc;
	*dt = out != NULL ? out->dtype : q->dtype;
	if (ABSENT(v))
		return MATE_OK;
	if (mate_value_kind_of(v) == MATE_V_STR && strcmp(mate_value_get_str(v, NULL), "nvfp4") == 0)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: out_dtype='nvfp4' is not "
		    "replayed", fname(c));
	return mate_replay_arg_dtype(c, pp->out_dtype, "out_dtype", *dt, dt);
}

/* The scales: bmm1_scale multiplies q.k (bmm1_scale_log2 / log2(e) when
 * given), bmm2_scale the output; FlashInfer's o_scale cancels out of XQA's
 * float outputs and trtllm-gen ignores it. */
static int
scales(mate_replay_call *c, const struct tr_pos *pp, mate_attn_params *p)
{
	double log2s = 0;
	int rc;

	if ((rc = mate_replay_arg_float(c, pp->bmm1, "bmm1_scale", 1.0, &p->sm_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, pp->bmm2, "bmm2_scale", 1.0, &p->v_scale)) != MATE_OK ||
	    (pp->bmm1_log2 >= 0 && (rc = mate_replay_arg_float(c, pp->bmm1_log2, "bmm1_scale_log2",
	    0, &log2s)) != MATE_OK))
		return rc;
	if (log2s != 0)
		p->sm_scale = log2s / 1.44269504088896340736;
	if (!(p->sm_scale > 0) || !isfinite(p->sm_scale) || !isfinite(p->v_scale))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: bmm1_scale %g, bmm2_scale %g",
		    fname(c), p->sm_scale, p->v_scale);
	return MATE_OK;
}

/* trtllm_batch_decode_with_kv_cache, trtllm_batch_context_with_kv_cache and
 * xqa_batch_decode_with_kv_cache: query (num_tokens, Hq, D) against the
 * paged cache, request b's keys the first seq_lens[b] entries of the pages
 * block_tables[b]; causal (bottom-right) for decode and, unless
 * causal=False, context; softmax of q.k * bmm1_scale (with sinks: one more
 * logit per head in the denominator) @ V * bmm2_scale -> out, and (out,
 * lse) with return_lse (base 2, float32). */
static int
op_trtllm(mate_replay_call *c, void *ctx)
{
	static const char *const layouts[] = { "NHD", "HND", NULL };
	int kind = (int)(intptr_t)ctx, hnd, rc, ret_lse = 0;
	const struct tr_pos *pp = &tr_pos[kind];
	const mate_tensor *q, *sinks = NULL, *lse_in = NULL;
	struct tr_batch t = { .batch = 0 };
	mate_value *outv = NULL, *lsev = NULL;
	mate_tensor kc, vc;
	mate_attn_params p;
	mate_batch_attn a;
	mate_dtype odt;
	mate_error err;
	int64_t P = 1;

	mate_attn_params_init(&p);
	p.causal = 1;
	rc = kind == TR_DECODE ? at_defaults(c, decode_defaults, sizeof(decode_defaults) /
	    sizeof(decode_defaults[0])) : kind == TR_CONTEXT ? at_defaults(c, context_defaults,
	    sizeof(context_defaults) / sizeof(context_defaults[0])) : at_defaults(c, xqa_defaults,
	    sizeof(xqa_defaults) / sizeof(xqa_defaults[0]));
	if (rc != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 0, "query", 0, &q)) != MATE_OK ||
	    (rc = mate_replay_split_cache(c, 1, "kv_cache", 1, &kc, &vc)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, pp->kv_layout, "kv_layout", pp->layout_default, layouts,
	    &hnd)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, pp->window, "window_left", -1, &p.window_left)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, pp->sinks, "sinks", 1, &sinks)) != MATE_OK ||
	    (pp->causal >= 0 && (rc = mate_replay_arg_bool(c, pp->causal, "causal", 1,
	    &p.causal)) != MATE_OK) ||
	    (pp->ret_lse >= 0 && (rc = mate_replay_arg_bool(c, pp->ret_lse, "return_lse", 0,
	    &ret_lse)) != MATE_OK) ||
	    (pp->lse >= 0 && (rc = mate_replay_arg_tensor(c, pp->lse, "lse", 1, &lse_in)) != MATE_OK) ||
	    (rc = scales(c, pp, &p)) != MATE_OK ||
	    (rc = out_dtype(c, pp, q, &odt)) != MATE_OK ||
	    (rc = check_cache(c, q, &kc, &vc, hnd, &P)) != MATE_OK)
		return rc;
	if (sinks != NULL && (ret_lse || lse_in != NULL))
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: the LSE of attention with sinks "
		    "is not replayed", fname(c));
	if (!p.causal && p.window_left >= 0)   /* FlashInfer raises NotImplementedError */
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: causal=False with window_left=%lld",
		    fname(c), (long long)p.window_left);
	p.kv_layout = hnd ? MATE_KV_HND : MATE_KV_NHD;
	p.sinks = sinks;
	if ((rc = query_rows(c, pp, kind, q->shape[0], &t)) != MATE_OK)
		goto out;
	if (kind == TR_CONTEXT) {
		int64_t bs, *cukv = NULL, n = 0;

		/* batch_size and cum_seq_lens_kv (not read: seq_lens give the keys) must fit */
		if ((rc = mate_replay_arg_int(c, pp->batch, "batch_size", -1, &bs)) != MATE_OK ||
		    (rc = mate_replay_arg_ints(c, pp->cu_kv, "cum_seq_lens_kv", 0, &cukv, &n)) != MATE_OK)
			goto out;
		free(cukv);
		if (bs != t.batch || n != t.batch + 1) {
			rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: batch_size %lld, %lld offsets in "
			    "cum_seq_lens_q and %lld in cum_seq_lens_kv", fname(c), (long long)bs,
			    (long long)(t.batch + 1), (long long)n);
			goto out;
		}
	}
	if ((rc = page_table(c, pp, P, kc.shape[0], &t)) != MATE_OK)
		goto out;
	if ((rc = mate_replay_output(c, pp->out, "out", odt, 0, 3, q->shape, &outv)) != MATE_OK ||
	    ((ret_lse || lse_in != NULL) && (rc = mate_replay_output(c, pp->lse, "lse", MATE_F32, 0, 2,
	    q->shape, &lsev)) != MATE_OK))
		goto out;
	a = (mate_batch_attn){ .batch = t.batch, .qo_indptr = t.qo_indptr, .kv_indptr = t.kv_indptr,
		.kv_indices = t.kv_indices, .n_indices = t.n_indices, .kv_len = t.kv_len,
		.page_size = P, .q = q, .k = &kc, .v = &vc, .out = mate_value_get_tensor(outv),
		.lse = lsev != NULL ? mate_value_get_tensor(lsev) : NULL };
	mate_replay_attention_bound(c, max_len(&t) + (sinks != NULL), q, &kc, NULL, NULL, &vc, &p);
	return finish(c, mate_batch_attention(mate_replay_kernels(c), &a, &p, &err), &err, outv,
	    lsev, ret_lse, &t);
out:
	mate_value_free(outv);
	mate_value_free(lsev);
	batch_free(&t);
	return rc;
}

/* ---- MLA --------------------------------------------------------------------------- */

/* Columns [c0, c0 + n) of t's last dim. */
static void
last_cols(const mate_tensor *t, int64_t c0, int64_t n, mate_tensor *v)
{
	*v = *t;
	v->offset += c0 * t->stride[t->ndim - 1];
	v->shape[t->ndim - 1] = n;
}

/* t without its dim d (of one element), or with dims 0 and 1 merged (d < 0) where their
 * strides allow; 0 when they do not. */
static int
drop_dim(const mate_tensor *t, int d, mate_tensor *v)
{
	int64_t s0 = t->stride[0];

	if (d < 0) {   /* (B, L, ...) as (B * L, ...) */
		if (t->shape[1] != 1 && t->shape[0] > 1 && t->stride[0] != t->shape[1] * t->stride[1])
			return 0;
		s0 = t->shape[1] != 1 ? t->stride[1] : t->stride[0];
	}
	*v = *t;
	v->ndim = t->ndim - 1;
	if (d < 0)
		v->shape[0] = t->shape[0] * t->shape[1], v->stride[0] = s0;
	for (int i = d < 0 ? 1 : d; i < v->ndim; i++)
		v->shape[i] = t->shape[i + 1], v->stride[i] = t->stride[i + 1];
	return 1;
}

/* trtllm_batch_decode_with_kv_cache_mla: query (batch, q_len, H, kv_lora_rank + rope) or,
 * with cum_seq_lens_q, (rows, H, ...), against the paged latent cache (pages, [1,] P,
 * kv_lora_rank + rope) as block_tables and seq_lens give it: logits (q_nope . ckv + q_pe .
 * kpe) * bmm1_scale, causal over each request's rows, sinks in the denominator, softmax @ ckv
 * * bmm2_scale -> out (query's dims, kv_lora_rank) in bfloat16, and (out, lse) with
 * return_lse (base 2 unless return_lse_base='basee'). */
static int
op_trtllm_mla(mate_replay_call *c, void *unused)
{
	static const char *const bases[] = { "base2", "basee", NULL };
	const struct tr_pos *pp = &tr_pos[TR_MLA];
	const mate_tensor *query, *kv, *sinks = NULL, *lse_in = NULL;
	mate_tensor q, kc, qn, qp, ckv, kpe, o, l;
	int64_t rank, rope, nope, D, P, oshape[4];
	struct tr_batch t = { .batch = 0 };
	mate_value *outv = NULL, *lsev = NULL;
	mate_batch_mla_args a;
	mate_attn_params p;
	int rc, ret_lse = 0, base = 0;
	mate_error err;

	(void)unused;
	mate_attn_params_init(&p);
	p.causal = 1;
	if ((rc = at_defaults(c, mla_defaults, sizeof(mla_defaults) / sizeof(mla_defaults[0]))) !=
	    MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 0, "query", 0, &query)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "kv_cache", 0, &kv)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 3, "qk_nope_head_dim", 0, &nope)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 4, "kv_lora_rank", 0, &rank)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 5, "qk_rope_head_dim", 0, &rope)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, pp->sinks, "sinks", 1, &sinks)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, pp->ret_lse, "return_lse", 0, &ret_lse)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, pp->lse, "lse", 1, &lse_in)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, 32, "return_lse_base", "base2", bases, &base)) != MATE_OK ||
	    (rc = scales(c, pp, &p)) != MATE_OK)
		return rc;
	if (sinks != NULL && (ret_lse || lse_in != NULL))
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: the LSE of attention with sinks "
		    "is not replayed", fname(c));
	D = query->ndim >= 3 ? query->shape[query->ndim - 1] : -1;
	if ((query->ndim != 4 && query->ndim != 3) || rank < 1 || rope < 0 || nope < 0 ||
	    rank + rope != D || (kv->ndim != 3 && (kv->ndim != 4 || kv->shape[1] != 1)) ||
	    kv->shape[kv->ndim - 1] != D)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: query (%d-D) and kv_cache (%d-D) do "
		    "not fit kv_lora_rank %lld + qk_rope_head_dim %lld = their last dim", fname(c),
		    query->ndim, kv->ndim, (long long)rank, (long long)rope);
	if ((query->ndim == 4 ? !drop_dim(query, -1, &q) : (q = *query, 0)) ||
	    (kv->ndim == 4 ? !drop_dim(kv, 1, &kc) : (kc = *kv, 0)))
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: a query whose batch and q_len "
		    "dims do not merge is not replayed", fname(c));
	if ((P = kc.shape[1]) < 1)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: kv_cache has pages of %lld entries",
		    fname(c), (long long)P);
	if (query->ndim == 3 && ABSENT(mate_replay_arg(c, pp->cu_q, pp->cu_q_name)))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: a 3-D query needs cum_seq_lens_q",
		    fname(c));
	if (query->ndim == 4) {   /* q_len rows per request */
		t.batch = query->shape[0];
		if ((t.qo_indptr = malloc((size_t)(t.batch + 1) * sizeof(int64_t))) == NULL)
			return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
		for (int64_t b = 0; b <= t.batch; b++)
			t.qo_indptr[b] = b * query->shape[1];
	} else if ((rc = query_rows(c, pp, TR_MLA, q.shape[0], &t)) != MATE_OK) {
		goto out;
	}
	if ((rc = page_table(c, pp, P, kc.shape[0], &t)) != MATE_OK)
		goto out;
	memcpy(oshape, query->shape, sizeof(oshape));
	oshape[query->ndim - 1] = rank;
	if ((rc = mate_replay_output(c, pp->out, "out", MATE_BF16, 0, query->ndim, oshape,
	    &outv)) != MATE_OK || ((ret_lse || lse_in != NULL) && (rc = mate_replay_output(c, pp->lse,
	    "lse", MATE_F32, 0, lse_in != NULL && lse_in->ndim == 3 ? 3 : 2, lse_in != NULL &&
	    lse_in->ndim == 3 ? query->shape : q.shape, &lsev)) != MATE_OK))
		goto out;
	if (query->ndim == 4)
		drop_dim(mate_value_get_tensor(outv), -1, &o);
	else
		o = *mate_value_get_tensor(outv);
	if (lsev != NULL && mate_value_get_tensor(lsev)->ndim == 3)
		drop_dim(mate_value_get_tensor(lsev), -1, &l);
	else if (lsev != NULL)
		l = *mate_value_get_tensor(lsev);
	last_cols(&q, 0, rank, &qn);
	last_cols(&q, rank, rope, &qp);
	last_cols(&kc, 0, rank, &ckv);
	last_cols(&kc, rank, rope, &kpe);
	p.lse_base_e = base == 1;
	p.sinks = sinks;
	a = (mate_batch_mla_args){ .batch = t.batch, .qo_indptr = t.qo_indptr,
		.kv_indptr = t.kv_indptr, .kv_indices = t.kv_indices, .kv_len = t.kv_len,
		.n_indices = t.n_indices, .page_size = P, .q_nope = &qn, .q_pe = &qp, .ckv = &ckv,
		.kpe = &kpe, .out = &o, .lse = lsev != NULL ? &l : NULL };
	mate_replay_attention_bound(c, max_len(&t) + (sinks != NULL), &qn, &ckv, &qp, &kpe, &ckv, &p);
	return finish(c, mate_batch_mla(mate_replay_kernels(c), &a, &p, &err), &err, outv, lsev,
	    ret_lse, &t);
out:
	mate_value_free(outv);
	mate_value_free(lsev);
	batch_free(&t);
	return rc;
}

/* FlashInfer 0.7.4's signatures (without the annotations), a superset of
 * 0.7.2's: a parameter that an older one lacks takes its default. */
#define SIG_TRTLLM_DECODE \
	"(query, kv_cache, workspace_buffer, block_tables, seq_lens, max_seq_len, " \
	"bmm1_scale=1.0, bmm2_scale=1.0, window_left=-1, out=None, out_dtype=None, " \
	"o_sf_scale=None, o_sf_vec_size=None, sinks=None, kv_layout='HND', enable_pdl=None, " \
	"backend='auto', q_len_per_req=1, o_scale=1.0, mask=None, max_q_len=None, " \
	"cum_seq_lens_q=None, skip_softmax_threshold_scale_factor=None, kv_cache_sf=None, " \
	"uses_shared_paged_kv_idx=True, lse=None, return_lse=False, bmm1_scale_log2=None, " \
	"multi_ctas_kv_counter_buffer=None, enable_block_sparse_attention=False, cp_world=1, " \
	"cp_rank=0, causal_seqlens_kv_global=None, bf16q_fp8kv_transform_mode=None, " \
	"request_order=None, request_order_plan=None, sparse_top_k=0, " \
	"length_aware_schedule=False)"
#define SIG_TRTLLM_CONTEXT \
	"(query, kv_cache, workspace_buffer, block_tables, seq_lens, max_q_len, max_kv_len, " \
	"bmm1_scale, bmm2_scale, batch_size, cum_seq_lens_q, cum_seq_lens_kv, window_left=-1, " \
	"out=None, out_dtype=None, o_sf_scale=None, o_sf_vec_size=None, kv_layout='HND', " \
	"enable_pdl=None, sinks=None, kv_cache_sf=None, " \
	"skip_softmax_threshold_scale_factor=None, uses_shared_paged_kv_idx=True, " \
	"causal=True, lse=None, return_lse=False, multi_ctas_kv_counter_buffer=None, " \
	"use_fp16_softmax=None, uses_spcompress=None, backend='trtllm-gen', window_right=-1, " \
	"variable_window_token_starts=None, variable_window_token_ends=None)"
#define SIG_TRTLLM_MLA \
	"(query, kv_cache, workspace_buffer, qk_nope_head_dim, kv_lora_rank, qk_rope_head_dim, " \
	"block_tables, seq_lens, max_seq_len, sparse_mla_top_k=0, out=None, bmm1_scale=1.0, " \
	"bmm2_scale=1.0, sinks=None, skip_softmax_threshold_scale_factor=None, enable_pdl=None, " \
	"backend='auto', is_var_seq=True, uses_shared_paged_kv_idx=True, lse=None, " \
	"return_lse=False, cute_dsl_impl='auto', kv_scale_format='auto', cum_seq_lens_q=None, " \
	"max_q_len=None, multi_ctas_kv_counter_buffer=None, sparse_mla_top_k_lens=None, " \
	"enable_dcp=False, cp_world=1, cp_rank=0, causal_seqlens_kv_global=None, " \
	"use_fp16_softmax=None, return_lse_base=None)"
#define SIG_XQA_DECODE \
	"(query, kv_cache, workspace_buffer, block_tables, seq_lens, max_seq_len, " \
	"bmm1_scale=1.0, bmm2_scale=1.0, window_left=-1, out=None, sinks=None, " \
	"kv_layout='NHD', enable_pdl=None, q_len_per_req=1, o_scale=1.0, mask=None, " \
	"kv_cache_sf=None, q_cu_seq_lens=None)"

int
mate_replay_register_trtllm(mate_replay *r, mate_error *err)
{
	static const struct mate_replay_op_def ops[] = {
		{ "trtllm_batch_decode_with_kv_cache", SIG_TRTLLM_DECODE, op_trtllm, TR_DECODE, NULL },
		{ "trtllm_batch_context_with_kv_cache", SIG_TRTLLM_CONTEXT, op_trtllm, TR_CONTEXT, NULL },
		{ "xqa_batch_decode_with_kv_cache", SIG_XQA_DECODE, op_trtllm, TR_XQA, NULL },
		{ "trtllm_batch_decode_with_kv_cache_mla", SIG_TRTLLM_MLA, op_trtllm_mla, 0, NULL },
	};
	return mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err);
}
