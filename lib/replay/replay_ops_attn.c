/* replay_ops_attn.c: replay handlers for FlashInfer's batch attention wrappers (paged, ragged, MLA, multi-level cascade), state merges and KV-cache appends. */
#include "mate_private.h"
#include "kernels.h"
#include "kernels_fi.h"
#include "kernels_paged.h"
#include "replay_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registers the handlers of this file on r (replay_ops.c calls it). */
int mate_replay_register_attn(mate_replay *r, mate_error *err) MATE_HIDDEN;

static const char *
fname(const mate_replay_call *c)
{
	return mate_replay_call_function(c);
}

#define ABSENT(v) ((v) == NULL || mate_value_kind_of(v) == MATE_V_NONE)

/* The `out=`-style buffer (pos, name) when given (of exactly the result's shape and dtype:
 * mate_replay_output()), else a new tensor. */
static int
output(mate_replay_call *c, int pos, const char *name, mate_dtype dt, int ndim,
    const int64_t *shape, mate_value **outv)
{
	return mate_replay_output(c, pos, name, dt, 0, ndim, shape, outv);
}

static const mate_tensor *
tensor_of(const mate_value *v)
{
	return v != NULL ? mate_value_get_tensor(v) : NULL;
}

/* ---- the wrappers' state --------------------------------------------------------- */

enum wrapper { W_DECODE, W_PAGED, W_RAGGED, W_MLA, W_CASCADE };

static const char *const wrapper_names[] = {
	"BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper",
	"BatchPrefillWithRaggedKVCacheWrapper", "BatchMLAPagedAttentionWrapper",
	"MultiLevelCascadeAttentionWrapper"
};

/* What __init__ and the latest plan gave one wrapper object. */
struct batch_state {
	int kind, kv_layout, planned;
	int plan_unsupported;     /* the latest plan was Unsupported */
	int init_unsupported;     /* so was __init__: every call on it is */
	int64_t batch, n_indices, page_size, Hq, Hk, D, Dv;
	int64_t *qo_indptr, *kv_indptr, *kv_indices, *kv_len;
	mate_attn_params p;
	int has_o_dtype;
	mate_dtype o_dtype;
	mate_dtype q_dtype, kv_dtype;  /* plan's q_data_type and kv_data_type: run checks q, k */
	int64_t nlevels;               /* cascade: its levels' page tables, a paged prefill each */
	struct batch_state *levels;
};

static void
state_clear_plan(struct batch_state *st)
{
	free(st->qo_indptr);
	free(st->kv_indptr);
	free(st->kv_indices);
	free(st->kv_len);
	st->qo_indptr = st->kv_indptr = st->kv_indices = st->kv_len = NULL;
	st->planned = 0;
	for (int64_t l = 0; l < st->nlevels && st->levels != NULL; l++)
		state_clear_plan(&st->levels[l]);
}

static void
state_free(void *p)
{
	if (p != NULL) {
		state_clear_plan(p);
		free(((struct batch_state *)p)->levels);
	}
	free(p);
}

/* The object's state, made by an __init__ of the same class. */
static struct batch_state *
state_of(mate_replay_call *c, int kind, int need_plan, int *rc)
{
	struct batch_state *st = mate_replay_call_self(c);

	*rc = MATE_ERR_ARGUMENT;
	if (mate_replay_call_object(c) == NULL) {
		mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the call has no self_id", fname(c));
		return NULL;
	}
	if (st == NULL || st->kind != kind) {
		mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: object %s (process_id:self_id): no %s.__init__ "
		    "of it was replayed before this call", fname(c), mate_replay_call_object(c),
		    wrapper_names[kind]);
		return NULL;
	}
	if (st->init_unsupported) {
		*rc = MATE_ERR_UNSUPPORTED;
		mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: object %s (process_id:self_id): its "
		    "__init__ was Unsupported", fname(c), mate_replay_call_object(c));
		return NULL;
	}
	if (need_plan && st->plan_unsupported) {
		*rc = MATE_ERR_UNSUPPORTED;
		mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: object %s (process_id:self_id): its plan "
		    "was Unsupported", fname(c), mate_replay_call_object(c));
		return NULL;
	}
	if (need_plan && !st->planned) {
		mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: object %s (process_id:self_id): no plan of it "
		    "replayed without error before this run", fname(c), mate_replay_call_object(c));
		return NULL;
	}
	return st;
}

/* __init__(self, float_workspace_buffer, kv_layout='NHD', use_cuda_graph=False,
 * ...buffers..., backend='auto', jit_args=None, ...): the buffers are
 * FlashInfer's scratch and CUDA-graph staging; only kv_layout changes the
 * math, and jit_args (a custom attention variant) is Unsupported. The MLA
 * wrapper's __init__ has no kv_layout. */
static const char *const init_kw[] = { "float_workspace_buffer", "kv_layout", "use_cuda_graph",
	"use_tensor_cores", "paged_kv_indptr_buffer", "paged_kv_indices_buffer",
	"paged_kv_last_page_len_buffer", "qo_indptr_buf", "paged_kv_indptr_buf",
	"paged_kv_indices_buf", "paged_kv_last_page_len_buf", "custom_mask_buf", "mask_indptr_buf",
	"kv_indptr_buf", "qo_indptr", "kv_indptr", "kv_indices", "kv_len_arr", "backend", NULL };

static int
op_wrapper_init(mate_replay_call *c, void *ctx)
{
	static const char *const layouts[] = { "NHD", "HND", NULL };
	static const int last_pos[] = { [W_DECODE] = 8, [W_PAGED] = 10, [W_RAGGED] = 8, [W_MLA] = 7 };
	int kind = (int)(intptr_t)ctx, layout = 0, rc;
	struct batch_state *st;
	const mate_tensor *ws;

	if ((rc = mate_replay_only_known(c, last_pos[kind], init_kw)) == MATE_OK &&  /* jit_args: a custom variant */
	    (rc = mate_replay_arg_tensor(c, 1, "float_workspace_buffer", 0, &ws)) == MATE_OK &&
	    kind != W_MLA)
		rc = mate_replay_arg_choice(c, 2, "kv_layout", "NHD", layouts, &layout);
	if (rc != MATE_OK && rc != MATE_ERR_UNSUPPORTED)
		return rc;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
	st->kind = kind;
	st->kv_layout = layout;
	st->init_unsupported = rc == MATE_ERR_UNSUPPORTED;  /* kept: its calls say so */
	if ((rc = mate_replay_call_set_self(c, st, state_free)) != MATE_OK)
		return rc;
	return st->init_unsupported ? MATE_ERR_UNSUPPORTED : mate_replay_return(c, mate_value_none());
}

/* The parameters every plan shares, by position (-1: keyword only); q_data_type
 * and kv_data_type come just before o_data_type; data_type (decode's deprecated
 * alias of both) is -2 where the plan has none. */
struct plan_pos {
	int pos_enc, window, cap, sm, rope_scale, rope_theta, causal, o_dtype, data_type;
};

static int
plan_params(mate_replay_call *c, struct batch_state *st, const struct plan_pos *pp)
{
	static const char *const modes[] = { "NONE", "ROPE_LLAMA", "PosEncodingMode.NONE",
		"PosEncodingMode.ROPE_LLAMA", NULL };
	mate_attn_params *p = &st->p;
	const mate_value *odt, *qv, *kvv, *dv;
	int mode, rc;

	mate_attn_params_init(p);
	p->kv_layout = st->kv_layout;
	if ((rc = mate_replay_arg_choice(c, pp->pos_enc, "pos_encoding_mode", "NONE", modes, &mode)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, pp->window, "window_left", -1, &p->window_left)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, pp->cap, "logits_soft_cap", 0, &p->logits_soft_cap)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, pp->sm, "sm_scale", 0, &p->sm_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, pp->rope_scale, "rope_scale", 0, &p->rope_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, pp->rope_theta, "rope_theta", 0, &p->rope_theta)) != MATE_OK ||
	    (pp->causal >= 0 &&
	    (rc = mate_replay_arg_bool(c, pp->causal, "causal", 0, &p->causal)) != MATE_OK))
		return rc;
	p->pos_encoding_mode = mode % 2 == 1 ? MATE_POS_ROPE_LLAMA : MATE_POS_NONE;
	/* FlashInfer: q_data_type='float16' unless given; data_type (decode's deprecated
	 * alias) stands for q_data_type=None and kv_data_type=None; kv defaults to q's */
	qv = mate_replay_arg(c, pp->o_dtype - 2, "q_data_type");
	kvv = mate_replay_arg(c, pp->o_dtype - 1, "kv_data_type");
	dv = pp->data_type != -2 ? mate_replay_arg(c, pp->data_type, "data_type") : NULL;
	st->q_dtype = MATE_F16;
	if (!ABSENT(qv))
		rc = mate_replay_arg_dtype(c, pp->o_dtype - 2, "q_data_type", MATE_F16, &st->q_dtype);
	else if (qv != NULL && !ABSENT(dv))
		rc = mate_replay_arg_dtype(c, pp->data_type, "data_type", MATE_F16, &st->q_dtype);
	if (rc != MATE_OK)
		return rc;
	st->kv_dtype = st->q_dtype;
	if (!ABSENT(kvv))
		rc = mate_replay_arg_dtype(c, pp->o_dtype - 1, "kv_data_type", MATE_F16, &st->kv_dtype);
	else if (!ABSENT(dv))
		rc = mate_replay_arg_dtype(c, pp->data_type, "data_type", MATE_F16, &st->kv_dtype);
	if (rc != MATE_OK)
		return rc;
	odt = mate_replay_arg(c, pp->o_dtype, "o_data_type");
	st->has_o_dtype = !ABSENT(odt);
	if (st->has_o_dtype &&
	    (rc = mate_replay_arg_dtype(c, pp->o_dtype, "o_data_type", MATE_F16, &st->o_dtype)) != MATE_OK)
		return rc;
	return MATE_OK;
}

/* BatchDecodeWithPagedKVCacheWrapper.plan(self, indptr, indices, last_page_len,
 * num_qo_heads, num_kv_heads, head_dim, page_size, *deprecated_positional_args,
 * **kwargs), the deprecated positions being pos_encoding_mode, window_left,
 * logits_soft_cap, q_data_type, kv_data_type, o_data_type, data_type,
 * sm_scale, rope_scale, rope_theta, non_blocking; keywords as _plan_impl's
 * (window_right, is_causal: no effect on one query per request). */
static const char *const decode_plan_kw[] = { "indptr", "indices", "last_page_len", "num_qo_heads",
	"num_kv_heads", "head_dim", "page_size", "pos_encoding_mode", "window_left", "window_right",
	"logits_soft_cap", "q_data_type", "kv_data_type", "o_data_type", "data_type", "sm_scale",
	"rope_scale", "rope_theta", "non_blocking", "fixed_split_size", "disable_split_kv",
	"q_len_per_req", "is_causal", NULL };
static const struct plan_pos decode_plan_pos = { 8, 9, 10, 15, 16, 17, -1, 13, 14 };

/* BatchPrefillWithPagedKVCacheWrapper.plan(self, qo_indptr, paged_kv_indptr,
 * paged_kv_indices, paged_kv_last_page_len, num_qo_heads, num_kv_heads,
 * head_dim_qk, page_size, head_dim_vo=None, custom_mask=None,
 * packed_custom_mask=None, causal=False, pos_encoding_mode='NONE',
 * use_fp16_qk_reduction=False, sm_scale=None, window_left=-1,
 * logits_soft_cap=None, rope_scale=None, rope_theta=None,
 * q_data_type='float16', kv_data_type=None, o_data_type=None,
 * non_blocking=True, ...): the later parameters (item masks, block tables,
 * seq_lens, ...) must be None */
static const char *const paged_plan_kw[] = { "qo_indptr", "paged_kv_indptr", "paged_kv_indices",
	"paged_kv_last_page_len", "num_qo_heads", "num_kv_heads", "head_dim_qk", "page_size",
	"head_dim_vo", "causal", "pos_encoding_mode", "use_fp16_qk_reduction", "sm_scale", "window_left",
	"logits_soft_cap", "rope_scale", "rope_theta", "q_data_type", "kv_data_type", "o_data_type",
	"non_blocking", "token_pos_in_items_len", "fixed_split_size", "disable_split_kv", NULL };
static const struct plan_pos paged_plan_pos = { 13, 16, 17, 15, 18, 19, 12, 22, -2 };

/* BatchPrefillWithRaggedKVCacheWrapper.plan(self, qo_indptr, kv_indptr,
 * num_qo_heads, num_kv_heads, head_dim_qk, head_dim_vo=None, custom_mask=None,
 * packed_custom_mask=None, causal=False, pos_encoding_mode='NONE',
 * use_fp16_qk_reduction=False, window_left=-1, logits_soft_cap=None,
 * sm_scale=None, rope_scale=None, rope_theta=None, q_data_type='float16',
 * kv_data_type=None, o_data_type=None, non_blocking=True, ...) */
static const char *const ragged_plan_kw[] = { "qo_indptr", "kv_indptr", "num_qo_heads",
	"num_kv_heads", "head_dim_qk", "head_dim_vo", "causal", "pos_encoding_mode",
	"use_fp16_qk_reduction", "window_left", "logits_soft_cap", "sm_scale", "rope_scale",
	"rope_theta", "q_data_type", "kv_data_type", "o_data_type", "non_blocking",
	"token_pos_in_items_len", "fixed_split_size", "disable_split_kv", NULL };
static const struct plan_pos ragged_plan_pos = { 10, 12, 13, 14, 15, 16, 9, 19, -2 };

/* The shapes' integers of a plan. */
static int
plan_ints(mate_replay_call *c, const int *pos, const char *const *names, int n, int64_t *out)
{
	int rc;

	for (int i = 0; i < n; i++) {
		if ((rc = mate_replay_arg_int(c, pos[i], names[i], -1, &out[i])) != MATE_OK)
			return rc;
		/* FlashInfer's plans keep these in int32: larger ones would overflow the page
		 * arithmetic (pages times page size) */
		if (out[i] < (strcmp(names[i], "head_dim_vo") == 0 ? -1 : 1) || out[i] > INT32_MAX)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s=%lld", fname(c), names[i],
			    (long long)out[i]);
	}
	return MATE_OK;
}

/* Page tables: kv_len from last_page_len (request b has kv_indptr[b+1] -
 * kv_indptr[b] pages, the last holding last_page_len[b]). */
static int
paged_lengths(mate_replay_call *c, struct batch_state *st, const int64_t *last, int64_t nlast)
{
	if (nlast < st->batch)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld last-page lengths for %lld "
		    "requests", fname(c), (long long)nlast, (long long)st->batch);
	if ((st->kv_len = calloc((size_t)st->batch + 1, sizeof(int64_t))) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
	for (int64_t b = 0; b < st->batch; b++) {
		int64_t np = st->kv_indptr[b + 1] - st->kv_indptr[b];

		if (np > 0 && (last[b] < 1 || last[b] > st->page_size))
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: request %lld: last page length "
			    "%lld with pages of %lld", fname(c), (long long)b, (long long)last[b],
			    (long long)st->page_size);
		st->kv_len[b] = np > 0 ? (np - 1) * st->page_size + last[b] : 0;
	}
	return MATE_OK;
}

/* A page table or ragged offsets, as a plan reads them. */
struct plan_tables {
	int64_t *last, nlast, n, n_ind, nq;
};

/* BatchDecodeWithPagedKVCacheWrapper.plan's arguments into st. */
static int
plan_decode(mate_replay_call *c, struct batch_state *st, struct plan_tables *t)
{
	int64_t qlen, dims[4];
	int rc;

	if ((rc = mate_replay_only_known(c, 17, decode_plan_kw)) != MATE_OK ||
	    (rc = plan_ints(c, (int[]){ 4, 5, 6, 7 }, (const char *[]){ "num_qo_heads",
	    "num_kv_heads", "head_dim", "page_size" }, 4, dims)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, -1, "q_len_per_req", 1, &qlen)) != MATE_OK)
		return rc;
	if (qlen != 1)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: q_len_per_req=%lld is not replayed",
		    fname(c), (long long)qlen);
	if ((rc = mate_replay_arg_ints(c, 1, "indptr", 0, &st->kv_indptr, &t->n)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 2, "indices", 0, &st->kv_indices, &t->n_ind)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 3, "last_page_len", 0, &t->last, &t->nlast)) != MATE_OK ||
	    (rc = plan_params(c, st, &decode_plan_pos)) != MATE_OK)
		return rc;
	st->Hq = dims[0], st->Hk = dims[1], st->D = st->Dv = dims[2], st->page_size = dims[3];
	return MATE_OK;
}

/* The prefill wrappers' plan arguments into st (paged or ragged). */
static int
plan_prefill(mate_replay_call *c, struct batch_state *st, int paged, struct plan_tables *t)
{
	const mate_tensor *m1, *m2;
	int64_t dims[5];
	int rc;

	if ((rc = mate_replay_only_known(c, paged ? 23 : 20, paged ? paged_plan_kw : ragged_plan_kw)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, paged ? 10 : 7, "custom_mask", 1, &m1)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, paged ? 11 : 8, "packed_custom_mask", 1, &m2)) != MATE_OK)
		return rc;
	if (m1 != NULL || m2 != NULL)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: custom masks are not replayed",
		    fname(c));
	if (paged)
		rc = plan_ints(c, (int[]){ 5, 6, 7, 8, 9 }, (const char *[]){ "num_qo_heads",
		    "num_kv_heads", "head_dim_qk", "page_size", "head_dim_vo" }, 5, dims);
	else
		rc = plan_ints(c, (int[]){ 3, 4, 5, 6 }, (const char *[]){ "num_qo_heads",
		    "num_kv_heads", "head_dim_qk", "head_dim_vo" }, 4, dims);
	if (rc != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 1, "qo_indptr", 0, &st->qo_indptr, &t->nq)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 2, paged ? "paged_kv_indptr" : "kv_indptr", 0, &st->kv_indptr, &t->n)) != MATE_OK ||
	    (paged && (rc = mate_replay_arg_ints(c, 3, "paged_kv_indices", 0, &st->kv_indices, &t->n_ind)) != MATE_OK) ||
	    (paged && (rc = mate_replay_arg_ints(c, 4, "paged_kv_last_page_len", 0, &t->last, &t->nlast)) != MATE_OK) ||
	    (rc = plan_params(c, st, paged ? &paged_plan_pos : &ragged_plan_pos)) != MATE_OK ||
	    (rc = mate_replay_check_indptr(c, "qo_indptr", st->qo_indptr, t->nq)) != MATE_OK)
		return rc;
	if (t->nq != t->n)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: qo_indptr has %lld elements, "
		    "kv_indptr %lld", fname(c), (long long)t->nq, (long long)t->n);
	st->Hq = dims[0], st->Hk = dims[1], st->D = dims[2];
	st->page_size = paged ? dims[3] : 0;
	st->Dv = dims[paged ? 4 : 3] > 0 ? dims[paged ? 4 : 3] : st->D;
	return MATE_OK;
}

/* plan of the decode and prefill wrappers: the tables are copied onto the
 * object, checked against each other (the caches are checked at run) */
static int
op_batch_plan(mate_replay_call *c, void *ctx)
{
	int kind = (int)(intptr_t)ctx, rc;
	struct batch_state *st = state_of(c, kind, 0, &rc);
	struct plan_tables t = { .last = NULL };

	if (st == NULL)
		return rc;
	state_clear_plan(st);
	if ((rc = kind == W_DECODE ? plan_decode(c, st, &t) : plan_prefill(c, st, kind == W_PAGED,
	    &t)) != MATE_OK || (rc = mate_replay_check_indptr(c, "kv_indptr", st->kv_indptr, t.n)) != MATE_OK)
		goto out;
	st->n_indices = t.n_ind;
	st->batch = t.n - 1;
	if (st->Hq % st->Hk != 0)
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld query heads are not a multiple of "
		    "%lld kv heads", fname(c), (long long)st->Hq, (long long)st->Hk);
	else if (st->kv_indices != NULL && st->kv_indptr[st->batch] > st->n_indices)
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: indptr ends at %lld of %lld indices",
		    fname(c), (long long)st->kv_indptr[st->batch], (long long)st->n_indices);
	else if (st->page_size > 0)
		rc = paged_lengths(c, st, t.last, t.nlast);
	if (rc == MATE_OK) {
		st->planned = 1;
		rc = mate_replay_return(c, mate_value_none());
	}
out:
	free(t.last);
	if (rc != MATE_OK)
		state_clear_plan(st);
	st->plan_unsupported = rc == MATE_ERR_UNSUPPORTED;
	return rc;
}

/* run(self, q, paged_kv_cache | k, v, *args, q_scale=None, k_scale=None,
 * v_scale=None, out=None, lse=None, return_lse=False, lse_base='log2',
 * lse_layout='NH', enable_pdl=None, window_left=None, ...): the paged
 * wrappers' and the ragged one's; sinks, kv_cache_sf, o_scale and the
 * other options must be None */
static const char *const run_kw[] = { "q", "paged_kv_cache", "k", "v", "q_scale", "k_scale",
	"v_scale", "out", "lse", "return_lse", "lse_base", "lse_layout", "enable_pdl", "window_left",
	"q_len_per_req", NULL };

static int
op_batch_run(mate_replay_call *c, void *ctx)
{
	static const char *const bases[] = { "log2", "ln", NULL }, *const layouts[] = { "NH", "HN", NULL };
	int kind = (int)(intptr_t)ctx, ragged = kind == W_RAGGED, rc, ret_lse, base, lay;
	struct batch_state *st = state_of(c, kind, 1, &rc);
	const mate_tensor *q;
	mate_tensor kc, vc, lt;
	mate_value *outv = NULL, *lsev = NULL;
	mate_batch_attn a;
	mate_attn_params p;
	mate_error err;
	int64_t qlen;

	if (st == NULL)
		return rc;
	p = st->p;
	if ((rc = mate_replay_only_known(c, ragged ? 3 : 2, run_kw)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "q", 0, &q)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "q_scale", 1.0, &p.q_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "k_scale", 1.0, &p.k_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, -1, "v_scale", 1.0, &p.v_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, -1, "return_lse", 0, &ret_lse)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, -1, "lse_base", "log2", bases, &base)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, -1, "lse_layout", "NH", layouts, &lay)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, -1, "window_left", p.window_left, &p.window_left)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, -1, "q_len_per_req", 1, &qlen)) != MATE_OK)
		return rc;
	if (qlen != 1)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: q_len_per_req=%lld is not replayed",
		    fname(c), (long long)qlen);
	p.lse_base_e = base > 0;
	if (ragged) {
		const mate_tensor *k, *v;

		if ((rc = mate_replay_arg_tensor(c, 2, "k", 0, &k)) != MATE_OK ||
		    (rc = mate_replay_arg_tensor(c, 3, "v", 0, &v)) != MATE_OK)
			return rc;
		kc = *k, vc = *v;
	} else if ((rc = mate_replay_split_cache(c, 2, "paged_kv_cache", 0, &kc, &vc)) != MATE_OK) {
		return rc;
	}
	if (q->ndim != 3 || q->shape[1] != st->Hq || q->shape[2] != st->D ||
	    (kind == W_DECODE && q->shape[0] != st->batch))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q (%d-D) does not fit the plan "
		    "(%lld requests, %lld heads of %lld)", fname(c), q->ndim, (long long)st->batch,
		    (long long)st->Hq, (long long)st->D);
	/* FlashInfer's _check_cached_qkv_data_type: a run refuses q and k of other dtypes than plan's */
	if (q->dtype != st->q_dtype)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the dtype of q %s does not match "
		    "the q_data_type %s specified in plan function", fname(c),
		    mate_dtype_name(q->dtype), mate_dtype_name(st->q_dtype));
	if (kc.dtype != st->kv_dtype)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the dtype of k %s does not match "
		    "the kv_data_type %s specified in plan function", fname(c),
		    mate_dtype_name(kc.dtype), mate_dtype_name(st->kv_dtype));
	if ((rc = output(c, -1, "out", st->has_o_dtype ? st->o_dtype : q->dtype, 3,
	    (int64_t[]){ q->shape[0], st->Hq, st->Dv }, &outv)) != MATE_OK ||
	    (ret_lse && (rc = output(c, -1, "lse", MATE_F32, 2, lay ? (int64_t[]){ st->Hq,
	    q->shape[0] } : q->shape, &lsev)) != MATE_OK)) {
		mate_value_free(outv);
		return rc;
	}
	if (lsev != NULL) {  /* lse_layout 'HN': (heads, tokens), written through its transpose */
		lt = *tensor_of(lsev);
		if (lay && lt.ndim == 2) {
			lt.shape[0] = tensor_of(lsev)->shape[1], lt.stride[0] = tensor_of(lsev)->stride[1];
			lt.shape[1] = tensor_of(lsev)->shape[0], lt.stride[1] = tensor_of(lsev)->stride[0];
		}
	}
	a = (mate_batch_attn){ .batch = st->batch, .qo_indptr = st->qo_indptr,
		.kv_indptr = st->kv_indptr, .kv_indices = st->kv_indices, .n_indices = st->n_indices,
		.kv_len = st->kv_len, .page_size = st->page_size, .q = q, .k = &kc, .v = &vc,
		.out = tensor_of(outv), .lse = lsev != NULL ? &lt : NULL };
	if (kc.ndim != (ragged ? 3 : 4) || kc.shape[kc.ndim - 2 - (st->kv_layout == MATE_KV_HND)] != st->Hk)
		return mate_replay_kernel_done_pair(c, mate_set_error(&err, MATE_ERR_ARGUMENT,
		    "the cache (%d-D) does not have the plan's %lld kv heads", kc.ndim,
		    (long long)st->Hk), &err, outv, lsev);
	{
		int64_t kmax = 0;

		for (int64_t b = 0; b < st->batch; b++) {
			int64_t n = st->kv_len != NULL ? st->kv_len[b] : st->kv_indptr[b + 1] - st->kv_indptr[b];

			kmax = n > kmax ? n : kmax;
		}
		mate_replay_attention_bound(c, kmax, q, &kc, NULL, NULL, &vc, &p);
	}
	rc = mate_batch_attention(mate_replay_kernels(c), &a, &p, &err);
	return mate_replay_kernel_done_pair(c, rc, &err, outv, lsev);
}

/* ---- MLA ----------------------------------------------------------------------- */

/* BatchMLAPagedAttentionWrapper.plan(self, qo_indptr, kv_indptr, kv_indices,
 * kv_len_arr, num_heads, head_dim_ckv, head_dim_kpe, page_size, causal,
 * sm_scale, q_data_type, kv_data_type, use_profiler=False, *,
 * query_layout='split', kv_cache_layout='split', lse_mode='none',
 * output_dtype=None, ...): the split layouts of the classic form only */
static const char *const mla_plan_kw[] = { "qo_indptr", "kv_indptr", "kv_indices", "kv_len_arr",
	"num_heads", "head_dim_ckv", "head_dim_kpe", "page_size", "causal", "sm_scale",
	"q_data_type", "kv_data_type", "use_profiler", "query_layout", "kv_cache_layout", "lse_mode",
	"output_dtype", "output_scale", "scale_mode", "skip_softmax", "enable_pdl", "use_sinks", NULL };

static int
op_mla_plan(mate_replay_call *c, void *ctx)
{
	static const char *const split[] = { "split", NULL }, *const nones[] = { "none", NULL };
	static const char *const defaults[] = { "default", NULL };
	int64_t dims[4], nq, n, nlen, *len = NULL;
	int rc, w, skip, sinks;
	struct batch_state *st = state_of(c, W_MLA, 0, &rc);

	if (st == NULL)
		return rc;
	state_clear_plan(st);
	mate_attn_params_init(&st->p);
	if ((rc = mate_replay_only_known(c, 13, mla_plan_kw)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, -1, "query_layout", "split", split, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, -1, "kv_cache_layout", "split", split, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, -1, "output_scale", "none", nones, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_choice(c, -1, "scale_mode", "default", defaults, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, -1, "skip_softmax", 0, &skip)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, -1, "use_sinks", 0, &sinks)) != MATE_OK ||
	    (rc = plan_ints(c, (int[]){ 5, 6, 7, 8 }, (const char *[]){ "num_heads", "head_dim_ckv",
	    "head_dim_kpe", "page_size" }, 4, dims)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 9, "causal", 0, &st->p.causal)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 10, "sm_scale", 0, &st->p.sm_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 1, "qo_indptr", 0, &st->qo_indptr, &nq)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 2, "kv_indptr", 0, &st->kv_indptr, &n)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 3, "kv_indices", 0, &st->kv_indices, &st->n_indices)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 4, "kv_len_arr", 0, &len, &nlen)) != MATE_OK)
		goto out;
	if (skip || sinks) {
		rc = mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: skip_softmax and use_sinks are not "
		    "replayed", fname(c));
		goto out;
	}
	if ((rc = mate_replay_check_indptr(c, "qo_indptr", st->qo_indptr, nq)) != MATE_OK ||
	    (rc = mate_replay_check_indptr(c, "kv_indptr", st->kv_indptr, n)) != MATE_OK)
		goto out;
	if (nq != n || nlen < n - 1 || st->kv_indptr[n - 1] > st->n_indices) {
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: qo_indptr (%lld), kv_indptr (%lld), "
		    "kv_len_arr (%lld) and kv_indices (%lld) do not fit", fname(c), (long long)nq,
		    (long long)n, (long long)nlen, (long long)st->n_indices);
		goto out;
	}
	st->batch = n - 1;
	st->kv_len = len;
	len = NULL;
	st->Hq = dims[0], st->D = dims[1], st->Dv = dims[2], st->page_size = dims[3];
	st->planned = 1;
	rc = mate_replay_return(c, mate_value_none());
out:
	free(len);
	if (rc != MATE_OK)
		state_clear_plan(st);
	st->plan_unsupported = rc == MATE_ERR_UNSUPPORTED;
	return rc;
}

/* BatchMLAPagedAttentionWrapper.run(self, q_nope, q_pe, ckv_cache, kpe_cache,
 * out=None, lse=None, return_lse=False, profiler_buffer=None, kv_len=None,
 * page_table=None, return_lse_base_on_e=False, o_scale=None, *, ...): the
 * scales, sinks and the query/kv_cache form must be None */
static const char *const mla_run_kw[] = { "q_nope", "q_pe", "ckv_cache", "kpe_cache", "out",
	"lse", "return_lse", "return_lse_base_on_e", NULL };

static int
op_mla_run(mate_replay_call *c, void *ctx)
{
	const mate_tensor *qn, *qp, *ckv, *kpe;
	mate_value *outv = NULL, *lsev = NULL;
	mate_attn_params p;
	mate_batch_mla_args a;
	mate_error err;
	int rc, ret_lse;
	struct batch_state *st = state_of(c, W_MLA, 1, &rc);

	if (st == NULL)
		return rc;
	p = st->p;
	if ((rc = mate_replay_only_known(c, 7, mla_run_kw)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "q_nope", 0, &qn)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "q_pe", 0, &qp)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "ckv_cache", 0, &ckv)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 4, "kpe_cache", 0, &kpe)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 7, "return_lse", 0, &ret_lse)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 11, "return_lse_base_on_e", 0, &p.lse_base_e)) != MATE_OK)
		return rc;
	if (qn->ndim != 3 || qn->shape[1] != st->Hq || qn->shape[2] != st->D)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q_nope does not fit the plan (%lld "
		    "heads of %lld)", fname(c), (long long)st->Hq, (long long)st->D);
	if ((rc = output(c, 5, "out", qn->dtype, 3, qn->shape, &outv)) != MATE_OK ||
	    (ret_lse && (rc = output(c, 6, "lse", MATE_F32, 2, qn->shape, &lsev)) != MATE_OK)) {
		mate_value_free(outv);
		return rc;
	}
	a = (mate_batch_mla_args){ .batch = st->batch, .qo_indptr = st->qo_indptr,
		.kv_indptr = st->kv_indptr, .kv_indices = st->kv_indices, .kv_len = st->kv_len,
		.n_indices = st->n_indices, .page_size = st->page_size, .q_nope = qn, .q_pe = qp,
		.ckv = ckv, .kpe = kpe, .out = tensor_of(outv), .lse = tensor_of(lsev) };
	{
		int64_t kmax = 0;

		for (int64_t b = 0; b < st->batch; b++)
			kmax = st->kv_len[b] > kmax ? st->kv_len[b] : kmax;
		mate_replay_attention_bound(c, kmax, qn, ckv, qp, kpe, ckv, &p);
	}
	rc = mate_batch_mla(mate_replay_kernels(c), &a, &p, &err);
	return mate_replay_kernel_done_pair(c, rc, &err, outv, lsev);
}

/* ---- multi-level cascade ----------------------------------------------------------- */

#define CASCADE_MAX_LEVELS 64

/* MultiLevelCascadeAttentionWrapper.__init__(self, num_levels, float_workspace_buffer,
 * kv_layout='NHD', use_cuda_graph=False, qo_indptr_buf_arr=None,
 * paged_kv_indptr_buf_arr=None, paged_kv_indices_buf_arr=None,
 * paged_kv_last_page_len_buf_arr=None): a paged prefill wrapper per level (the
 * buffers are CUDA-graph staging) */
static const char *const cascade_init_kw[] = { "num_levels", "float_workspace_buffer",
	"kv_layout", "use_cuda_graph", "qo_indptr_buf_arr", "paged_kv_indptr_buf_arr",
	"paged_kv_indices_buf_arr", "paged_kv_last_page_len_buf_arr", NULL };

static int
op_cascade_init(mate_replay_call *c, void *unused)
{
	static const char *const layouts[] = { "NHD", "HND", NULL };
	struct batch_state *st;
	const mate_tensor *ws;
	int64_t n;
	int layout = 0, rc;

	(void)unused;
	if ((rc = mate_replay_arg_int(c, 1, "num_levels", 0, &n)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "float_workspace_buffer", 0, &ws)) != MATE_OK)
		return rc;
	if (n < 1 || n > CASCADE_MAX_LEVELS)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: num_levels=%lld (1 to %d)", fname(c),
		    (long long)n, CASCADE_MAX_LEVELS);
	if ((rc = mate_replay_only_known(c, 8, cascade_init_kw)) == MATE_OK)
		rc = mate_replay_arg_choice(c, 3, "kv_layout", "NHD", layouts, &layout);
	if (rc != MATE_OK && rc != MATE_ERR_UNSUPPORTED)
		return rc;
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->levels = calloc((size_t)n, sizeof(*st->levels))) == NULL) {
		free(st);
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
	}
	st->kind = W_CASCADE;
	st->kv_layout = layout;
	st->nlevels = n;
	st->init_unsupported = rc == MATE_ERR_UNSUPPORTED;
	if ((rc = mate_replay_call_set_self(c, st, state_free)) != MATE_OK)
		return rc;
	return st->init_unsupported ? MATE_ERR_UNSUPPORTED : mate_replay_return(c, mate_value_none());
}

/* plan(self, qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
 * paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
 * causal=False, pos_encoding_mode='NONE', use_fp16_qk_reduction=False,
 * sm_scale=None, window_left=-1, logits_soft_cap=None, rope_scale=None,
 * rope_theta=None, q_data_type='float16', kv_data_type=None): one table per
 * level in each list; FlashInfer plans the last level causal, the others not */
static const char *const cascade_plan_kw[] = { "qo_indptr_arr", "paged_kv_indptr_arr",
	"paged_kv_indices_arr", "paged_kv_last_page_len", "num_qo_heads", "num_kv_heads",
	"head_dim", "page_size", "causal", "pos_encoding_mode", "use_fp16_qk_reduction", "sm_scale",
	"window_left", "logits_soft_cap", "rope_scale", "rope_theta", "q_data_type", "kv_data_type",
	NULL };
static const struct plan_pos cascade_plan_pos = { 10, 13, 14, 12, 15, 16, 9, 19, -2 };

/* Item l of the list argument (pos, name): a 1-D integer host tensor. */
static int
level_ints(mate_replay_call *c, int pos, const char *name, int64_t l, int64_t nlevels,
    int64_t **out, int64_t *n)
{
	const mate_value *v = mate_replay_arg(c, pos, name), *it;
	char what[80];

	if ((mate_value_kind_of(v) != MATE_V_LIST && mate_value_kind_of(v) != MATE_V_TUPLE) ||
	    (int64_t)mate_value_len(v) != nlevels ||
	    mate_value_kind_of(it = mate_value_item(v, (size_t)l)) != MATE_V_TENSOR)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s: expected a list of %lld tensors, "
		    "one per level", fname(c), name, (long long)nlevels);
	snprintf(what, sizeof(what), "%s[%lld]", name, (long long)l);
	return mate_replay_tensor_ints(c, mate_value_get_tensor(it), what, out, n);
}

/* Level l's page table into lv, checked as a paged prefill plan's. */
static int
plan_level(mate_replay_call *c, const struct batch_state *st, int64_t l, struct batch_state *lv)
{
	int64_t *last = NULL, nq, n, nlast;
	int rc;

	int64_t L = st->nlevels;

	if ((rc = level_ints(c, 1, "qo_indptr_arr", l, L, &lv->qo_indptr, &nq)) != MATE_OK ||
	    (rc = level_ints(c, 2, "paged_kv_indptr_arr", l, L, &lv->kv_indptr, &n)) != MATE_OK ||
	    (rc = level_ints(c, 3, "paged_kv_indices_arr", l, L, &lv->kv_indices,
	    &lv->n_indices)) != MATE_OK ||
	    (rc = level_ints(c, 4, "paged_kv_last_page_len", l, L, &last, &nlast)) != MATE_OK ||
	    (rc = mate_replay_check_indptr(c, "qo_indptr_arr", lv->qo_indptr, nq)) != MATE_OK ||
	    (rc = mate_replay_check_indptr(c, "paged_kv_indptr_arr", lv->kv_indptr, n)) != MATE_OK)
		goto out;
	if (nq != n || lv->kv_indptr[n - 1] > lv->n_indices) {
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: level %lld: qo_indptr has %lld "
		    "elements, paged_kv_indptr %lld ending at %lld of %lld indices", fname(c),
		    (long long)l, (long long)nq, (long long)n, (long long)lv->kv_indptr[n - 1],
		    (long long)lv->n_indices);
		goto out;
	}
	lv->batch = n - 1;
	lv->page_size = st->page_size;
	rc = paged_lengths(c, lv, last, nlast);
out:
	free(last);
	return rc;
}

static int
op_cascade_plan(mate_replay_call *c, void *unused)
{
	int64_t dims[4];
	int rc;
	struct batch_state *st = state_of(c, W_CASCADE, 0, &rc);

	(void)unused;
	if (st == NULL)
		return rc;
	state_clear_plan(st);
	if ((rc = mate_replay_only_known(c, 18, cascade_plan_kw)) != MATE_OK ||
	    (rc = plan_ints(c, (int[]){ 5, 6, 7, 8 }, (const char *[]){ "num_qo_heads",
	    "num_kv_heads", "head_dim", "page_size" }, 4, dims)) != MATE_OK ||
	    (rc = plan_params(c, st, &cascade_plan_pos)) != MATE_OK)
		goto out;
	st->Hq = dims[0], st->Hk = dims[1], st->D = st->Dv = dims[2], st->page_size = dims[3];
	if (st->Hq % st->Hk != 0) {
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld query heads are not a multiple "
		    "of %lld kv heads", fname(c), (long long)st->Hq, (long long)st->Hk);
		goto out;
	}
	for (int64_t l = 0; l < st->nlevels && rc == MATE_OK; l++)
		rc = plan_level(c, st, l, &st->levels[l]);
	if (rc == MATE_OK) {
		st->planned = 1;
		rc = mate_replay_return(c, mate_value_none());
	}
out:
	if (rc != MATE_OK)
		state_clear_plan(st);
	st->plan_unsupported = rc == MATE_ERR_UNSUPPORTED;
	return rc;
}

/* Level l's attention of q on the cache: a new output of q's dtype and a float32 LSE. */
static int
cascade_level(mate_replay_call *c, const struct batch_state *st, int64_t l, const mate_tensor *q,
    const mate_tensor *kc, const mate_tensor *vc, mate_value **o, mate_value **s, mate_error *err)
{
	const struct batch_state *lv = &st->levels[l];
	mate_attn_params p = st->p;
	mate_batch_attn a;
	int rc;

	*o = *s = NULL;
	if (lv->qo_indptr[lv->batch] != q->shape[0])
		return mate_set_error(err, MATE_ERR_ARGUMENT, "level %lld's qo_indptr ends at %lld, "
		    "q has %lld rows", (long long)l, (long long)lv->qo_indptr[lv->batch],
		    (long long)q->shape[0]);
	if ((rc = output(c, -1, NULL, q->dtype, 3, q->shape, o)) != MATE_OK ||
	    (rc = output(c, -1, NULL, MATE_F32, 2, q->shape, s)) != MATE_OK)
		return mate_set_error(err, rc, "out of memory");
	p.causal = l == st->nlevels - 1 ? st->p.causal : 0;
	a = (mate_batch_attn){ .batch = lv->batch, .qo_indptr = lv->qo_indptr,
		.kv_indptr = lv->kv_indptr, .kv_indices = lv->kv_indices, .n_indices = lv->n_indices,
		.kv_len = lv->kv_len, .page_size = st->page_size, .q = q, .k = kc, .v = vc,
		.out = tensor_of(*o), .lse = tensor_of(*s) };
	return mate_batch_attention(mate_replay_kernels(c), &a, &p, err);
}

/* run(self, q, paged_kv_cache): the last level's output and LSE, then each other level's
 * merged into them in order, as FlashInfer's merge_state_in_place does (in q's dtype). */
static int
op_cascade_run(mate_replay_call *c, void *unused)
{
	static const char *const run_known[] = { "q", "paged_kv_cache", NULL };
	mate_value *out = NULL, *lse = NULL, *oi = NULL, *si = NULL, *mo = NULL, *ms = NULL;
	const mate_tensor *q;
	mate_tensor kc, vc, vs[2], ss[2];
	mate_error err;
	int64_t kmax = 0;
	int rc;
	struct batch_state *st = state_of(c, W_CASCADE, 1, &rc);

	(void)unused;
	if (st == NULL)
		return rc;
	if ((rc = mate_replay_only_known(c, 2, run_known)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "q", 0, &q)) != MATE_OK ||
	    (rc = mate_replay_split_cache(c, 2, "paged_kv_cache", 0, &kc, &vc)) != MATE_OK)
		return rc;
	if (q->ndim != 3 || q->shape[1] != st->Hq || q->shape[2] != st->D)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q (%d-D) does not fit the plan "
		    "(%lld heads of %lld)", fname(c), q->ndim, (long long)st->Hq, (long long)st->D);
	if (q->dtype != st->q_dtype || kc.dtype != st->kv_dtype)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q and k are %s and %s, the plan's "
		    "q_data_type and kv_data_type %s and %s", fname(c), mate_dtype_name(q->dtype),
		    mate_dtype_name(kc.dtype), mate_dtype_name(st->q_dtype), mate_dtype_name(st->kv_dtype));
	if (kc.ndim != 4 || kc.shape[2 - (st->kv_layout == MATE_KV_HND)] != st->Hk)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the cache (%d-D) does not have the "
		    "plan's %lld kv heads", fname(c), kc.ndim, (long long)st->Hk);
	for (int64_t l = 0; l < st->nlevels; l++) {   /* a sum over every level's keys */
		int64_t m = 0;

		for (int64_t b = 0; b < st->levels[l].batch; b++)
			m = st->levels[l].kv_len[b] > m ? st->levels[l].kv_len[b] : m;
		kmax += m;
	}
	mate_replay_attention_bound(c, kmax, q, &kc, NULL, NULL, &vc, &st->p);
	rc = cascade_level(c, st, st->nlevels - 1, q, &kc, &vc, &out, &lse, &err);
	for (int64_t l = 0; rc == MATE_OK && l + 1 < st->nlevels; l++) {
		if ((rc = cascade_level(c, st, l, q, &kc, &vc, &oi, &si, &err)) != MATE_OK)
			break;
		if ((rc = output(c, -1, NULL, q->dtype, 3, q->shape, &mo)) != MATE_OK ||
		    (rc = output(c, -1, NULL, MATE_F32, 2, q->shape, &ms)) != MATE_OK) {
			mate_set_error(&err, rc, "out of memory");
			break;
		}
		vs[0] = *tensor_of(out), vs[1] = *tensor_of(oi);
		ss[0] = *tensor_of(lse), ss[1] = *tensor_of(si);
		rc = mate_merge_states(vs, ss, 2, tensor_of(mo), tensor_of(ms), &err);
		mate_value_free(out), mate_value_free(lse), mate_value_free(oi), mate_value_free(si);
		out = mo, lse = ms, oi = si = mo = ms = NULL;
	}
	mate_value_free(lse), mate_value_free(oi), mate_value_free(si), mate_value_free(mo);
	mate_value_free(ms);
	if (rc != MATE_OK) {
		mate_value_free(out);
		out = NULL;
	}
	return mate_replay_kernel_done(c, rc, &err, out);
}

/* ---- merging states ---------------------------------------------------------------- */

/* merge_state(v_a, s_a, v_b, s_b) -> (V, S) and merge_states(v, s) -> (V, S):
 * base-2 LSEs; V has v's dtype, S is float32 */
static int
op_merge(mate_replay_call *c, void *many)
{
	const mate_tensor *va, *sa, *vb = NULL, *sb = NULL;
	mate_tensor vs[2], ss[2], *v = vs, *s = ss;
	mate_value *outv = NULL, *lsev = NULL;
	int64_t n = 2;
	mate_error err;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, many ? "v" : "v_a", 0, &va)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, many ? "s" : "s_a", 0, &sa)) != MATE_OK ||
	    (!many && ((rc = mate_replay_arg_tensor(c, 2, "v_b", 0, &vb)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "s_b", 0, &sb)) != MATE_OK)))
		return rc;
	if (va->ndim != (many ? 4 : 3) || sa->ndim != (many ? 3 : 2) ||
	    (many && (sa->shape[0] != va->shape[0] || sa->shape[1] != va->shape[1])))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: v and s have the wrong shapes", fname(c));
	if (many) {
		n = va->shape[1];
		if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL ||
		    (s = calloc((size_t)n + 1, sizeof(*s))) == NULL) {
			free(v);
			return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
		}
		for (int64_t i = 0; i < n; i++) {  /* slice i of dim 1 */
			v[i] = *va, s[i] = *sa;
			v[i].ndim = 3, s[i].ndim = 2;
			v[i].offset += i * va->stride[1], s[i].offset += i * sa->stride[1];
			for (int d = 1; d < 3; d++)
				v[i].shape[d] = va->shape[d + 1], v[i].stride[d] = va->stride[d + 1];
			s[i].shape[1] = sa->shape[2], s[i].stride[1] = sa->stride[2];
		}
	} else {
		vs[0] = *va, vs[1] = *vb, ss[0] = *sa, ss[1] = *sb;
	}
	rc = output(c, -1, NULL, va->dtype, 3, v[0].shape, &outv);
	if (rc == MATE_OK)
		rc = output(c, -1, NULL, MATE_F32, 2, s[0].shape, &lsev);
	if (rc == MATE_OK) {
		/* V = sum of n states weighted by 2^(s_i - max) / sum: an n-term sum, |V| <= max |v|,
		 * each weight off by u |s| */
		double mv = mate_replay_max_abs(va), ms = mate_replay_max_abs(sa);

		if (!many) {
			double b = mate_replay_max_abs(vb), sbm = mate_replay_max_abs(sb);

			mv = b > mv ? b : mv;
			ms = sbm > ms ? sbm : ms;
		}
		mate_replay_set_reduction_sum(c, n, (mv > 1.5 ? mv : 1.5) * (1 + 2 * ms), 0,
		    va->dtype == MATE_F64 ? MATE_F64 : MATE_F32);
		rc = mate_merge_states(v, s, n, tensor_of(outv), tensor_of(lsev), &err);
	}
	else
		mate_set_error(&err, rc, "out of memory");
	if (many) {
		free(v);
		free(s);
	}
	return mate_replay_kernel_done_pair(c, rc, &err, outv, lsev);
}

/* merge_state_in_place(v, s, v_other, s_other, mask=None) -> None: (v, s)
 * becomes the merge of itself and (v_other, s_other), row i only where
 * mask[i] is true (all rows without a mask); s is written when it is
 * float32 (FlashInfer merges into s.to(float32), a copy otherwise). */
static int
op_merge_in_place(mate_replay_call *c, void *unused)
{
	const mate_tensor *v, *s, *vo, *so, *mask;
	mate_tensor vs[2], ss[2];
	mate_value *outv = NULL, *lsev = NULL;
	const mate_tensor *ov, *os;
	mate_error err;
	size_t ve, se;
	int64_t n, H, D;
	int rc;

	(void)unused;
	if ((rc = mate_replay_arg_tensor(c, 0, "v", 0, &v)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "s", 0, &s)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "v_other", 0, &vo)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "s_other", 0, &so)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 4, "mask", 1, &mask)) != MATE_OK)
		return rc;
	if (v->ndim != 3 || s->ndim != 2 || vo->ndim != 3 || so->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: v and v_other must be (seq_len, "
		    "num_heads, head_dim), s and s_other (seq_len, num_heads)", fname(c));
	n = v->shape[0], H = v->shape[1], D = v->shape[2];
	if (vo->shape[0] != n || vo->shape[1] != H || vo->shape[2] != D || s->shape[0] != n ||
	    s->shape[1] != H || so->shape[0] != n || so->shape[1] != H)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the states' shapes differ", fname(c));
	if (mask != NULL && (mask->ndim != 1 || mask->shape[0] != n))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: mask must be (seq_len) = (%lld)",
		    fname(c), (long long)n);
	vs[0] = *v, vs[1] = *vo, ss[0] = *s, ss[1] = *so;
	if ((rc = output(c, -1, NULL, v->dtype, 3, v->shape, &outv)) != MATE_OK ||
	    (rc = output(c, -1, NULL, MATE_F32, 2, s->shape, &lsev)) != MATE_OK) {
		mate_value_free(outv);
		return rc;
	}
	{
		double mv = mate_replay_max_abs(v), ms = mate_replay_max_abs(s);
		double b = mate_replay_max_abs(vo), sbm = mate_replay_max_abs(so);

		mv = b > mv ? b : mv;
		ms = sbm > ms ? sbm : ms;
		mate_replay_set_reduction_sum(c, 2, (mv > 1.5 ? mv : 1.5) * (1 + 2 * ms), 0,
		    v->dtype == MATE_F64 ? MATE_F64 : MATE_F32);
	}
	ov = tensor_of(outv), os = tensor_of(lsev);
	rc = mate_merge_states(vs, ss, 2, ov, os, &err);
	ve = mate_dtype_size(v->dtype), se = mate_dtype_size(s->dtype);
	for (int64_t i = 0; rc == MATE_OK && i < n; i++) {
		if (mask != NULL && mate_load_f64(mask->dtype, (const char *)mask->data + (mask->offset +
		    i * mask->stride[0]) * (int64_t)mate_dtype_size(mask->dtype)) == 0)
			continue;   /* not merged: the row stays as it was */
		for (int64_t h = 0; h < H; h++) {
			for (int64_t d = 0; d < D; d++)
				memcpy((char *)v->data + (v->offset + i * v->stride[0] + h * v->stride[1] +
				    d * v->stride[2]) * (int64_t)ve, mate_tensor_element(ov, (i * H + h) * D + d),
				    ve);
			if (s->dtype == MATE_F32)
				memcpy((char *)s->data + (s->offset + i * s->stride[0] + h * s->stride[1]) *
				    (int64_t)se, mate_tensor_element(os, i * H + h), se);
		}
	}
	mate_value_free(outv);
	mate_value_free(lsev);
	return mate_replay_kernel_done(c, rc, &err, NULL);
}

/* ---- the KV cache ------------------------------------------------------------------ */

/* Stores v in element i of an integer tensor. */
static void
store_int(const mate_tensor *t, int64_t i, int64_t v)
{
	void *p = mate_tensor_element(t, i);

	if (mate_dtype_size(t->dtype) == 4) {
		int32_t x = (int32_t)v;
		memcpy(p, &x, 4);
	} else {
		memcpy(p, &v, 8);
	}
}

/* get_batch_indices_positions(append_indptr, seq_lens, nnz, batch_indices=None,
 * positions=None) -> (batch_indices, positions), int32: row j of request b
 * is at position seq_lens[b] - (append_indptr[b+1] - append_indptr[b]) +
 * (j - append_indptr[b]); rows past append_indptr[-1] of new outputs hold
 * batch -1 and position 0 */
static int
op_batch_indices(mate_replay_call *c, void *ctx)
{
	int64_t *indptr = NULL, *lens = NULL, n, nl, nnz;
	mate_value *bv = NULL, *pv = NULL;
	const mate_tensor *bt, *pt;
	int rc, given;

	if ((rc = mate_replay_arg_ints(c, 0, "append_indptr", 0, &indptr, &n)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 1, "seq_lens", 0, &lens, &nl)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 2, "nnz", 0, &nnz)) != MATE_OK)
		goto out;
	if ((rc = mate_replay_check_indptr(c, "append_indptr", indptr, n)) != MATE_OK)
		goto out;
	if (nl < n - 1 || nnz < 0 || indptr[n - 1] > nnz) {
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld seq_lens for %lld requests, "
		    "nnz %lld", fname(c), (long long)nl, (long long)(n - 1), (long long)nnz);
		goto out;
	}
	for (int64_t b = 0; b + 1 < n; b++)   /* int32 positions, computed without overflow */
		if (lens[b] < 0 || lens[b] > INT32_MAX || indptr[b + 1] - indptr[b] > INT32_MAX) {
			rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: seq_lens[%lld] = %lld is not a "
			    "length in int32's range", fname(c), (long long)b, (long long)lens[b]);
			goto out;
		}
	given = mate_value_kind_of(mate_replay_arg(c, 3, "batch_indices")) == MATE_V_TENSOR;
	if ((rc = output(c, 3, "batch_indices", MATE_I32, 1, &nnz, &bv)) != MATE_OK ||
	    (rc = output(c, 4, "positions", MATE_I32, 1, &nnz, &pv)) != MATE_OK)
		goto out;
	bt = tensor_of(bv), pt = tensor_of(pv);
	if (bt->ndim != 1 || pt->ndim != 1 || bt->shape[0] < nnz || pt->shape[0] < nnz ||
	    mate_dtype_kind(bt->dtype) != MATE_KIND_INT || mate_dtype_kind(pt->dtype) != MATE_KIND_INT) {
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: batch_indices and positions must be "
		    "integer tensors of nnz elements", fname(c));
		goto out;
	}
	for (int64_t i = indptr[n - 1]; i < nnz && !given; i++)
		store_int(bt, i, -1);
	for (int64_t b = 0; b + 1 < n; b++)
		for (int64_t j = indptr[b]; j < indptr[b + 1]; j++) {
			store_int(bt, j, b);
			store_int(pt, j, lens[b] - (indptr[b + 1] - indptr[b]) + (j - indptr[b]));
		}
	{
		mate_value *ret = mate_value_tuple();

		mate_value_append(ret, bv);
		mate_value_append(ret, pv);
		bv = pv = NULL;
		rc = mate_replay_return(c, ret);
	}
out:
	mate_value_free(bv);
	mate_value_free(pv);
	free(indptr);
	free(lens);
	return rc;
}

/* append_paged_kv_cache(append_key, append_value, batch_indices, positions,
 * paged_kv_cache, kv_indices, kv_indptr, kv_last_page_len, kv_layout='NHD')
 * and append_paged_mla_kv_cache(append_ckv, append_kpe, batch_indices,
 * positions, ckv_cache, kpe_cache, kv_indices, kv_indptr, kv_last_page_len):
 * in place, return None */
static int
op_append(mate_replay_call *c, void *mla)
{
	static const char *const layouts[] = { "NHD", "HND", NULL };
	int64_t *bi = NULL, *pos = NULL, *indices = NULL, *indptr = NULL, nb, np, ni, n;
	const mate_tensor *ak, *av, *ckv = NULL, *kpe = NULL;
	int hnd = 0, rc, o = mla ? 1 : 0;
	mate_tensor kc, vc;
	mate_error err;

	if ((rc = mate_replay_arg_tensor(c, 0, mla ? "append_ckv" : "append_key", 0, &ak)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, mla ? "append_kpe" : "append_value", 0, &av)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 2, "batch_indices", 0, &bi, &nb)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 3, "positions", 0, &pos, &np)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 5 + o, "kv_indices", 0, &indices, &ni)) != MATE_OK ||
	    (rc = mate_replay_arg_ints(c, 6 + o, "kv_indptr", 0, &indptr, &n)) != MATE_OK ||
	    (!mla && (rc = mate_replay_arg_choice(c, 8, "kv_layout", "NHD", layouts, &hnd)) != MATE_OK))
		goto out;
	if (mla) {
		if ((rc = mate_replay_arg_tensor(c, 4, "ckv_cache", 1, &ckv)) != MATE_OK ||
		    (rc = mate_replay_arg_tensor(c, 5, "kpe_cache", 1, &kpe)) != MATE_OK)
			goto out;
	} else if ((rc = mate_replay_split_cache(c, 4, "paged_kv_cache", 0, &kc, &vc)) != MATE_OK) {
		goto out;
	}
	if ((rc = mate_replay_check_indptr(c, "kv_indptr", indptr, n)) != MATE_OK)
		goto out;
	if (nb < ak->shape[0] || np < ak->shape[0] || av->shape[0] != ak->shape[0]) {
		rc = mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %lld rows with %lld batch indices and "
		    "%lld positions", fname(c), (long long)ak->shape[0], (long long)nb, (long long)np);
		goto out;
	}
	rc = mate_append_paged_kv(ak, mla ? ckv : &kc, hnd, bi, pos, indptr, n - 1, indices, ni, &err);
	if (rc == MATE_OK)
		rc = mate_append_paged_kv(av, mla ? kpe : &vc, hnd, bi, pos, indptr, n - 1, indices, ni, &err);
	if (rc != MATE_OK)
		rc = mate_replay_fail(c, rc, "%s: %s", fname(c), err.message);
	else
		rc = mate_replay_return(c, mate_value_none());
out:
	free(bi);
	free(pos);
	free(indices);
	free(indptr);
	return rc;
}

#define SIG_APPEND "(append_key, append_value, batch_indices, positions, paged_kv_cache, " \
	"kv_indices, kv_indptr, kv_last_page_len, kv_layout='NHD')"
#define SIG_APPEND_MLA "(append_ckv, append_kpe, batch_indices, positions, ckv_cache, " \
	"kpe_cache, kv_indices, kv_indptr, kv_last_page_len)"

int
mate_replay_register_attn(mate_replay *r, mate_error *err)
{
	/* sig NULL: the wrappers' *args and **kwargs forms */
	static const struct mate_replay_op_def ops[] = {
		{ "BatchDecodeWithPagedKVCacheWrapper.__init__", NULL, op_wrapper_init, W_DECODE, NULL },
		{ "BatchDecodeWithPagedKVCacheWrapper.plan", NULL, op_batch_plan, W_DECODE, NULL },
		{ "BatchDecodeWithPagedKVCacheWrapper.run", NULL, op_batch_run, W_DECODE, "@paged" },
		{ "BatchPrefillWithPagedKVCacheWrapper.__init__", NULL, op_wrapper_init, W_PAGED, NULL },
		{ "BatchPrefillWithPagedKVCacheWrapper.plan", NULL, op_batch_plan, W_PAGED, NULL },
		{ "BatchPrefillWithPagedKVCacheWrapper.run", NULL, op_batch_run, W_PAGED, "@prefill" },
		{ "BatchPrefillWithRaggedKVCacheWrapper.__init__", NULL, op_wrapper_init, W_RAGGED, NULL },
		{ "BatchPrefillWithRaggedKVCacheWrapper.plan", NULL, op_batch_plan, W_RAGGED, NULL },
		{ "BatchPrefillWithRaggedKVCacheWrapper.run", NULL, op_batch_run, W_RAGGED, "@ragged" },
		{ "BatchMLAPagedAttentionWrapper.__init__", NULL, op_wrapper_init, W_MLA, NULL },
		{ "BatchMLAPagedAttentionWrapper.plan", NULL, op_mla_plan, 0, NULL },
		{ "BatchMLAPagedAttentionWrapper.run", NULL, op_mla_run, 0, "@mla" },
		{ "MultiLevelCascadeAttentionWrapper.__init__", NULL, op_cascade_init, 0, NULL },
		{ "MultiLevelCascadeAttentionWrapper.plan", NULL, op_cascade_plan, 0, NULL },
		{ "MultiLevelCascadeAttentionWrapper.run", NULL, op_cascade_run, 0, NULL },
		{ "merge_state", "(v_a, s_a, v_b, s_b)", op_merge, 0,
		    "token:v_a.0 s_a.0 v_b.0 s_b.0 result.0" },
		{ "merge_states", "(v, s)", op_merge, 1, "token:v.0 s.0 result.0" },
		{ "merge_state_in_place", "(v, s, v_other, s_other, mask=None)", op_merge_in_place, 0,
		    "token:v.0 s.0 v_other.0 s_other.0 mask.0" },
		{ "get_batch_indices_positions", "(append_indptr, seq_lens, nnz, batch_indices=None, "
		    "positions=None)", op_batch_indices, 0, NULL },
		{ "append_paged_kv_cache", SIG_APPEND, op_append, 0, NULL },
		{ "append_paged_mla_kv_cache", SIG_APPEND_MLA, op_append, 1, NULL },
	};
	return mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err);
}
