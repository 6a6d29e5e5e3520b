/* replay_ops_sampling.c: replay handlers of FlashInfer's sampling APIs (sampling.py, topk.py): the filters recomputed, the random samplers (chain_speculative_sampling too), top_k and its ragged and page-table transforms checked by property. */
#include "mate_private.h"
#include "kernels_fi.h"
#include "replay_private.h"

#include <string.h>

/* Registers the sampling handlers on r (called by mate_replay_register_builtins()). */
int mate_replay_register_sampling(mate_replay *r, mate_error *err);

/* A per-row parameter given as a number or a tensor (top_k int32, top_p float32). */
static int
arg_row_param(mate_replay_call *c, int pos, const char *name, double def, mate_row_param *p)
{
	const mate_value *v = mate_replay_arg(c, pos, name);

	p->t = NULL;
	if (mate_value_kind_of(v) == MATE_V_TENSOR && mate_tensor_numel(mate_value_get_tensor(v)) != 1) {
		p->t = mate_value_get_tensor(v);
		p->v = def;
		return MATE_OK;
	}
	return mate_replay_arg_float(c, pos, name, def, &p->v);
}

enum { TOP_K_RENORM, TOP_P_RENORM, TOP_K_MASK };

/* top_k_renorm_probs(probs, top_k, is_deterministic=False),
 * top_p_renorm_probs(probs, top_p, is_deterministic=False),
 * top_k_mask_logits(logits, top_k) */
static int
op_filter(mate_replay_call *c, void *ctx)
{
	int kind = (int)(intptr_t)ctx;
	const mate_tensor *x;
	mate_row_param prm;
	mate_value *outv;
	mate_error err;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, kind == TOP_K_MASK ? "logits" : "probs", 0, &x)) != MATE_OK ||
	    (rc = arg_row_param(c, 1, kind == TOP_P_RENORM ? "top_p" : "top_k", 0, &prm)) != MATE_OK)
		return rc;
	if (x->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: expected (batch_size, num_classes)",
		    mate_replay_call_function(c));
	if ((outv = mate_replay_new_tensor(c, x->dtype, 2, x->shape)) == NULL)
		return MATE_ERR_NOMEM;
	rc = (kind == TOP_K_RENORM ? mate_cpu_top_k_renorm : kind == TOP_P_RENORM ?
	    mate_cpu_top_p_renorm : mate_cpu_top_k_mask_logits)(x, &prm, mate_value_get_tensor(outv), &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* The samplers' arguments: which come before `indices`, and the filters. */
enum {
	S_LOGITS = 1, S_TOP_K = 2, S_TOP_P = 4, S_MIN_P = 8, S_ORDER = 16, S_VALID = 32
};

/* sampling_from_probs, sampling_from_logits, top_k_sampling_from_probs,
 * top_p_sampling_from_probs, min_p_sampling_from_probs,
 * top_k_top_p_sampling_from_probs, top_k_top_p_sampling_from_logits
 * (signatures below): the recorded samples are a random draw, so each is
 * checked against the filter; one the filter forbids replays as -1 */
static int
op_sampler(mate_replay_call *c, void *ctx)
{
	int f = (int)(intptr_t)ctx, at = 1, ret_valid = 0;
	const mate_tensor *x, *indices, *rec = NULL;
	const mate_value *recv;
	mate_sample_filter flt;
	mate_value *outv;
	const char *order;
	mate_dtype dt = MATE_I32;
	mate_error err;
	int64_t n, bad;
	int rc;

	memset(&flt, 0, sizeof(flt));
	flt.from_logits = f & S_LOGITS;
	flt.top_p.v = 1;
	if ((rc = mate_replay_arg_tensor(c, 0, flt.from_logits ? "logits" : "probs", 0, &x)) != MATE_OK)
		return rc;
	if ((f & S_TOP_K) && (rc = arg_row_param(c, at++, "top_k", 0, &flt.top_k)) != MATE_OK)
		return rc;
	if ((f & S_TOP_P) && (rc = arg_row_param(c, at++, "top_p", 1, &flt.top_p)) != MATE_OK)
		return rc;
	if ((f & S_MIN_P) && (rc = arg_row_param(c, at++, "min_p", 0, &flt.min_p)) != MATE_OK)
		return rc;
	if ((rc = mate_replay_arg_tensor(c, at++, "indices", 1, &indices)) != MATE_OK)
		return rc;
	if ((f & S_ORDER) && (rc = mate_replay_arg_str(c, at++, "filter_apply_order", "top_k_first",
	    &order)) != MATE_OK)
		return rc;
	if ((f & S_ORDER) && strcmp(order, "joint") != 0 && strcmp(order, "top_k_first") != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: filter_apply_order '%s' is neither "
		    "'top_k_first' nor 'joint'", mate_replay_call_function(c), order);
	flt.joint = (f & S_ORDER) && strcmp(order, "joint") == 0;
	/* deterministic, generator, check_nan, seed, offset change the draw only */
	if ((f & S_VALID) && (rc = mate_replay_arg_bool(c, at + 5, "return_valid", 0, &ret_valid)) != MATE_OK)
		return rc;
	if (ret_valid)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: return_valid=True is not replayed",
		    mate_replay_call_function(c));
	if (x->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: expected (batch_size, num_classes)",
		    mate_replay_call_function(c));
	if (indices != NULL)
		dt = indices->dtype;
	n = indices != NULL && indices->ndim == 1 ? indices->shape[0] : x->shape[0];
	if (mate_value_kind_of(recv = mate_replay_call_recorded(c, "result")) == MATE_V_TENSOR)
		rec = mate_value_get_tensor(recv);
	if (rec != NULL && mate_dtype_kind(rec->dtype) != MATE_KIND_INT)
		rec = NULL;
	if ((outv = mate_replay_new_tensor(c, dt, 1, &n)) == NULL)
		return MATE_ERR_NOMEM;
	rc = mate_cpu_sample_check(x, indices, &flt, rec, mate_value_get_tensor(outv), &bad, &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

/* top_k(input, k, sorted=False, deterministic=False, tie_break=0,
 * dsa_graph_safe=False) -> (values, indices): any order of a true top-k
 * set is FlashInfer's answer, so the recorded indices are checked */
static int
op_top_k(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x, *rec = NULL;
	const mate_value *recv;
	mate_value *vals, *idx;
	mate_error err;
	int64_t k, shape[2];
	int rc, sorted;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 1, "k", 0, &k)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 2, "sorted", 0, &sorted)) != MATE_OK)
		return rc;
	if (x->ndim != 2 || k < 0 || k > x->shape[1])
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "top_k: input must be (batch_size, d) "
		    "with 0 <= k <= d");
	if (mate_value_kind_of(recv = mate_replay_call_recorded(c, "result_1")) == MATE_V_TENSOR)
		rec = mate_value_get_tensor(recv);
	if (rec == NULL)
		return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "top_k: no recorded indices to check "
		    "(its order is the kernel's own)");
	shape[0] = x->shape[0];
	shape[1] = k;
	if ((vals = mate_replay_new_tensor(c, x->dtype, 2, shape)) == NULL)
		return MATE_ERR_NOMEM;
	if ((idx = mate_replay_new_tensor(c, MATE_I64, 2, shape)) == NULL) {
		mate_value_free(vals);
		return MATE_ERR_NOMEM;
	}
	rc = mate_cpu_top_k_check(x, rec, sorted, mate_value_get_tensor(vals),
	    mate_value_get_tensor(idx), &err);
	return mate_replay_kernel_done_pair(c, rc, &err, vals, idx);
}

/* The recorded tensor key if it is one, else NULL. */
static const mate_tensor *
recorded_tensor(mate_replay_call *c, const char *key)
{
	const mate_value *v = mate_replay_call_recorded(c, key);

	return mate_value_kind_of(v) == MATE_V_TENSOR ? mate_value_get_tensor(v) : NULL;
}

/* chain_speculative_sampling(draft_probs, draft_token_ids, target_probs,
 * maybe_output_accepted_token_num=None, maybe_output_emitted_draft_token_num=None,
 * deterministic=True, generator=None, seed=None, offset=None) -> (output_token_ids,
 * accepted, emitted): the accept/reject draws are random, so the recorded tokens and
 * accepted counts are checked by property, the emitted counts recomputed from the
 * tokens (mate_cpu_chain_spec_check()) */
static int
op_chain_spec(mate_replay_call *c, void *ctx)
{
	mate_chain_spec s;
	mate_value *ids, *acc, *emi, *ret;
	mate_error err;
	int64_t shape[2];
	int rc;

	(void)ctx;
	memset(&s, 0, sizeof(s));
	if ((rc = mate_replay_arg_tensor(c, 0, "draft_probs", 0, &s.draft_probs)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "draft_token_ids", 0, &s.draft_ids)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "target_probs", 0, &s.target_probs)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "maybe_output_accepted_token_num", 1,
	    &s.accepted_in)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 4, "maybe_output_emitted_draft_token_num", 1,
	    &s.emitted_in)) != MATE_OK)
		return rc;
	if (s.draft_probs->ndim != 3 || s.draft_ids->ndim != 2)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "chain_speculative_sampling: expected "
		    "draft_probs (batch_size, num_speculate_tokens, vocab_size) and draft_token_ids "
		    "(batch_size, num_speculate_tokens)");
	s.rec_ids = recorded_tensor(c, "result_0");
	s.rec_accepted = recorded_tensor(c, "result_1");
	shape[0] = s.draft_probs->shape[0];
	shape[1] = s.draft_probs->shape[1] + 1;
	ids = mate_replay_new_tensor(c, MATE_I32, 2, shape);
	acc = mate_replay_new_tensor(c, s.accepted_in != NULL ? s.accepted_in->dtype : MATE_I32, 1, shape);
	emi = mate_replay_new_tensor(c, s.emitted_in != NULL ? s.emitted_in->dtype : MATE_I32, 1, shape);
	ret = mate_value_tuple();
	if (ids == NULL || acc == NULL || emi == NULL || ret == NULL) {
		mate_value_free(ids);
		mate_value_free(acc);
		mate_value_free(emi);
		mate_value_free(ret);
		return MATE_ERR_NOMEM;
	}
	mate_value_append(ret, ids);
	mate_value_append(ret, acc);
	mate_value_append(ret, emi);
	rc = mate_cpu_chain_spec_check(&s, mate_value_get_tensor(ids), mate_value_get_tensor(acc),
	    mate_value_get_tensor(emi), &err);
	return mate_replay_kernel_done(c, rc, &err, ret);
}

/* top_k_ragged_transform(input, offsets, lengths, k, deterministic=False, tie_break=0,
 * dsa_graph_safe=False, row_starts=None) and top_k_page_table_transform(input,
 * src_page_table, lengths, k, row_to_batch=None, deterministic=False, tie_break=0,
 * dsa_graph_safe=False, row_starts=None, page_table_row_starts=None, *, page_size=1,
 * out=None, out_raw_indices=None): a top-k of each row's window in the kernel's own
 * order, so the recorded indices are checked (mate_cpu_top_k_ragged_check()) */
static int
op_top_k_transform(mate_replay_call *c, void *ctx)
{
	int paged = ctx != NULL, rs = paged ? 8 : 7;
	const char *fn = mate_replay_call_function(c);
	mate_topk_ragged a;
	mate_value *outv;
	mate_error err;
	int64_t shape[2];
	int rc;

	memset(&a, 0, sizeof(a));
	a.page_size = 1;
	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &a.input)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, paged ? "src_page_table" : "offsets", 0,
	    paged ? &a.page_table : &a.offsets)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 2, "lengths", 0, &a.lengths)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 3, "k", 0, &a.k)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, rs, "row_starts", 1, &a.row_starts)) != MATE_OK)
		return rc;
	if (paged && ((rc = mate_replay_arg_tensor(c, 4, "row_to_batch", 1, &a.row_to_batch)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 9, "page_table_row_starts", 1, &a.pt_starts)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, -1, "page_size", 1, &a.page_size)) != MATE_OK))
		return rc;
	if (a.input->ndim != 2 || a.k < 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: input must be (num_rows, max_len) "
		    "and k >= 0", fn);
	/* without recorded indices (a profile's problem) the top positions are the answer */
	a.rec = recorded_tensor(c, "result");
	shape[0] = a.input->shape[0];
	shape[1] = a.k;
	if (a.rec != NULL && (a.rec->ndim != 2 || a.rec->shape[0] != shape[0] ||
	    a.rec->shape[1] != a.k))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the recorded indices are not "
		    "(%lld, k = %lld)", fn, (long long)shape[0], (long long)a.k);
	if ((outv = mate_replay_new_tensor(c, a.rec != NULL ? a.rec->dtype : MATE_I32, 2,
	    shape)) == NULL)
		return MATE_ERR_NOMEM;
	rc = mate_cpu_top_k_ragged_check(&a, mate_value_get_tensor(outv), &err);
	return mate_replay_kernel_done(c, rc, &err, outv);
}

#define SIG_TAIL "deterministic=True, generator=None, check_nan=False, seed=None, offset=None"

int
mate_replay_register_sampling(mate_replay *r, mate_error *err)
{
	static const struct mate_replay_op_def ops[] = {
		{ "top_k_renorm_probs", "(probs, top_k, is_deterministic=False)", op_filter, TOP_K_RENORM,
		    "row:probs.0 top_k.0 result.0" },
		{ "top_p_renorm_probs", "(probs, top_p, is_deterministic=False)", op_filter, TOP_P_RENORM,
		    "row:probs.0 top_p.0 result.0" },
		{ "top_k_mask_logits", "(logits, top_k)", op_filter, TOP_K_MASK,
		    "row:logits.0 top_k.0 result.0" },
		{ "top_k", "(input, k, sorted=False, deterministic=False, tie_break=0, "
		    "dsa_graph_safe=False)", op_top_k, 0, "row:input.0 result.0" },
		{ "sampling_from_probs", "(probs, indices=None, " SIG_TAIL ", return_valid=False)",
		    op_sampler, S_VALID,
		    "row:probs.0 result.0 ?indices=None" },
		{ "sampling_from_logits", "(logits, indices=None, " SIG_TAIL ")", op_sampler, S_LOGITS,
		    "row:logits.0 result.0 ?indices=None" },
		{ "top_k_sampling_from_probs", "(probs, top_k, indices=None, " SIG_TAIL
		    ", return_valid=False)", op_sampler, S_TOP_K | S_VALID,
		    "row:probs.0 top_k.0 result.0 ?indices=None" },
		{ "top_p_sampling_from_probs", "(probs, top_p, indices=None, " SIG_TAIL
		    ", return_valid=False)", op_sampler, S_TOP_P | S_VALID,
		    "row:probs.0 top_p.0 result.0 ?indices=None" },
		{ "min_p_sampling_from_probs", "(probs, min_p, indices=None, " SIG_TAIL
		    ", return_valid=False)", op_sampler, S_MIN_P | S_VALID,
		    "row:probs.0 min_p.0 result.0 ?indices=None" },
		{ "top_k_top_p_sampling_from_probs", "(probs, top_k, top_p, indices=None, "
		    "filter_apply_order='top_k_first', " SIG_TAIL ", return_valid=False)", op_sampler,
		    S_TOP_K | S_TOP_P | S_ORDER | S_VALID,
		    "row:probs.0 top_k.0 top_p.0 result.0 ?indices=None" },
		{ "top_k_top_p_sampling_from_logits", "(logits, top_k, top_p, indices=None, "
		    "filter_apply_order='top_k_first', " SIG_TAIL ")", op_sampler,
		    S_LOGITS | S_TOP_K | S_TOP_P | S_ORDER,
		    "row:logits.0 top_k.0 top_p.0 result.0 ?indices=None" },
		{ "chain_speculative_sampling", "(draft_probs, draft_token_ids, target_probs, "
		    "maybe_output_accepted_token_num=None, maybe_output_emitted_draft_token_num=None, "
		    "deterministic=True, generator=None, seed=None, offset=None)", op_chain_spec, 0,
		    "row:draft_probs.0 draft_token_ids.0 target_probs.0 result_0.0 result_1.0 "
		    "result_2.0 maybe_output_accepted_token_num.0 "
		    "maybe_output_emitted_draft_token_num.0" },
		{ "top_k_ragged_transform", "(input, offsets, lengths, k, deterministic=False, "
		    "tie_break=0, dsa_graph_safe=False, row_starts=None)", op_top_k_transform, 0,
		    "row:input.0 offsets.0 lengths.0 row_starts.0 result.0" },
		{ "top_k_page_table_transform", "(input, src_page_table, lengths, k, "
		    "row_to_batch=None, deterministic=False, tie_break=0, dsa_graph_safe=False, "
		    "row_starts=None, page_table_row_starts=None, *, page_size=1, out=None, "
		    "out_raw_indices=None)", op_top_k_transform, 1,
		    "row:input.0 src_page_table.0 lengths.0 row_starts.0 page_table_row_starts.0 "
		    "out.0 out_raw_indices.0 result.0 ?row_to_batch=None" },
	};
	return mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err);
}
