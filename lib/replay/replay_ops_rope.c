/* replay_ops_rope.c: replay handlers of FlashInfer's rotary embeddings (rope.py), on kernels_cpu_rope.c. */
#include "mate_private.h"
#include "kernels_fi.h"
#include "replay_private.h"

#include <stdint.h>

#include <stdlib.h>
#include <string.h>

/* Registers the RoPE handlers on r (called by mate_replay_register_builtins()). */
int mate_replay_register_rope(mate_replay *r, mate_error *err);

/* How a call gives its positions, and its variants (the handler's ctx). */
enum {
	ROPE_INDPTR = 0,      /* (q, k, indptr, offsets, ...): token offsets[b] + i of segment b */
	ROPE_POS_IDS = 1,     /* (q, k, pos_ids, ...) */
	ROPE_CACHE = 2,       /* (positions, query, key, head_size, cos_sin_cache, is_neox) */
	ROPE_KIND = 3,
	ROPE_LLAMA31 = 4,
	ROPE_INPLACE = 8
};

/* t as (nnz, heads, head_size): FlashInfer's view(nnz, -1, head_size). */
static int
view3(mate_replay_call *c, const mate_tensor *t, const char *what, int64_t hs, mate_tensor *v)
{
	*v = *t;
	if (t->ndim == 3 && (hs <= 0 || t->shape[2] == hs))
		return MATE_OK;
	if (t->ndim != 2 || hs <= 0 || t->shape[1] % hs != 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s is %d-D with last dimension %lld: "
		    "expected (nnz, heads, head_dim) or (nnz, heads * %lld)", mate_replay_call_function(c),
		    what, t->ndim, (long long)(t->ndim > 0 ? t->shape[t->ndim - 1] : 0), (long long)hs);
	v->ndim = 3;
	v->shape[1] = t->shape[1] / hs;
	v->shape[2] = hs;
	v->stride[1] = hs * t->stride[1];
	v->stride[2] = t->stride[1];
	return MATE_OK;
}

/* The position of each of the nnz tokens, from pos_ids or indptr and offsets. */
static int
positions(mate_replay_call *c, const mate_tensor *pos_ids, const mate_tensor *indptr,
    const mate_tensor *offsets, int64_t nnz, int64_t **out)
{
	mate_error err;
	int64_t *pos, nb;
	int rc;

	*out = NULL;
	if (pos_ids != NULL) {
		if ((rc = mate_kernel_check_ints(pos_ids, "pos_ids", nnz, &err)) != MATE_OK)
			return mate_replay_kernel_done(c, rc, &err, NULL);
	} else {
		nb = indptr->ndim == 1 ? indptr->shape[0] - 1 : -1;
		if (nb < 0 || (rc = mate_kernel_check_ints(indptr, "indptr", nb + 1, &err)) != MATE_OK ||
		    (rc = mate_kernel_check_ints(offsets, "offsets", nb, &err)) != MATE_OK)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: indptr (batch_size + 1) and "
			    "offsets (batch_size) must be 1-D integer tensors", mate_replay_call_function(c));
		if (mate_kernel_int_at(indptr, 0) != 0 || mate_kernel_int_at(indptr, nb) != nnz)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: indptr must run from 0 to nnz "
			    "(%lld)", mate_replay_call_function(c), (long long)nnz);
	}
	if ((pos = calloc((size_t)(nnz > 0 ? nnz : 1), sizeof(*pos))) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", mate_replay_call_function(c));
	if (pos_ids != NULL) {
		for (int64_t t = 0; t < nnz; t++)
			pos[t] = mate_kernel_int_at(pos_ids, t);
	} else {
		for (int64_t b = 0; b < indptr->shape[0] - 1; b++) {
			int64_t s = mate_kernel_int_at(indptr, b), e = mate_kernel_int_at(indptr, b + 1);
			int64_t off = mate_kernel_int_at(offsets, b);

			if (s < 0 || e < s || e > nnz) {
				free(pos);
				return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: indptr[%lld..%lld] = %lld, "
				    "%lld is not a segment of nnz %lld", mate_replay_call_function(c),
				    (long long)b, (long long)b + 1, (long long)s, (long long)e, (long long)nnz);
			}
			if (off < INT32_MIN || off > INT32_MAX) {  /* FlashInfer's offsets are int32 */
				free(pos);
				return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: offsets[%lld] = %lld is "
				    "beyond int32's range", mate_replay_call_function(c), (long long)b,
				    (long long)off);
			}
			for (int64_t t = s; t < e; t++)
				pos[t] = off + (t - s);
		}
	}
	*out = pos;
	return MATE_OK;
}

/* The rope parameters after the positions (from position `at`). */
static int
rope_params(mate_replay_call *c, int at, int llama, int64_t D, mate_rope_params *p)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->llama31 = llama;
	if ((rc = mate_replay_arg_int(c, at, "rotary_dim", D, &p->rotary_dim)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, at + 1, "interleave", 0, &p->interleave)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, at + 2, "rope_scale", llama ? 8 : 1, &p->rope_scale)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, at + 3, "rope_theta", llama ? 5e5 : 1e4, &p->rope_theta)) != MATE_OK)
		return rc;
	if (llama &&
	    ((rc = mate_replay_arg_float(c, at + 4, "low_freq_factor", 1, &p->low_freq_factor)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, at + 5, "high_freq_factor", 4, &p->high_freq_factor)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, at + 6, "old_context_len", 8192, &p->old_context_len)) != MATE_OK))
		return rc;
	return MATE_OK;
}

/* Rotates q and k (3-D views); the results are new tensors of the shapes
 * of qa and ka, returned as a tuple, or q and k themselves (None). */
static int
rope_run(mate_replay_call *c, const mate_tensor *qa, const mate_tensor *ka, const mate_tensor *q,
    const mate_tensor *k, int64_t hs, const int64_t *pos, const mate_rope_params *p, int inplace)
{
	mate_value *qo = NULL, *ko = NULL;
	mate_tensor qv = *q, kv = *k;
	mate_error err;
	int rc;

	if (!inplace) {
		if ((qo = mate_replay_new_tensor(c, qa->dtype, qa->ndim, qa->shape)) == NULL ||
		    (ko = mate_replay_new_tensor(c, ka->dtype, ka->ndim, ka->shape)) == NULL) {
			mate_value_free(qo);
			return MATE_ERR_NOMEM;
		}
		if ((rc = view3(c, mate_value_get_tensor(qo), "query", hs, &qv)) != MATE_OK ||
		    (rc = view3(c, mate_value_get_tensor(ko), "key", hs, &kv)) != MATE_OK)
			goto out;
	}
	if ((rc = mate_cpu_rope(q, &qv, pos, p, &err)) == MATE_OK)
		rc = mate_cpu_rope(k, &kv, pos, p, &err);
	return mate_replay_kernel_done_pair(c, rc, &err, qo, ko);   /* in place: None */
out:
	mate_value_free(qo);
	mate_value_free(ko);
	return rc;
}

/* apply_rope[_inplace], apply_rope_pos_ids[_inplace], apply_llama31_rope*,
 * apply_rope_with_cos_sin_cache[_inplace]: signatures in the table below */
static int
op_rope(mate_replay_call *c, void *ctx)
{
	int f = (int)(intptr_t)ctx, kind = f & ROPE_KIND, at;
	const mate_tensor *q, *k, *pidx = NULL, *indptr = NULL, *offsets = NULL;
	mate_tensor qv, kv;
	mate_rope_params p;
	int64_t *pos, hs = 0;
	int rc, neox;

	if (kind == ROPE_CACHE) {
		const mate_tensor *cache;

		if ((rc = mate_replay_arg_tensor(c, 0, "positions", 0, &pidx)) != MATE_OK ||
		    (rc = mate_replay_arg_tensor(c, 1, "query", 0, &q)) != MATE_OK ||
		    (rc = mate_replay_arg_tensor(c, 2, "key", 0, &k)) != MATE_OK ||
		    (rc = mate_replay_arg_int(c, 3, "head_size", 0, &hs)) != MATE_OK ||
		    (rc = mate_replay_arg_tensor(c, 4, "cos_sin_cache", 0, &cache)) != MATE_OK ||
		    (rc = mate_replay_arg_bool(c, 5, "is_neox", 1, &neox)) != MATE_OK)
			return rc;
		memset(&p, 0, sizeof(p));
		p.cos_sin_cache = cache;
		p.interleave = !neox;
		p.rotary_dim = cache->ndim == 2 ? cache->shape[1] : 0;
		if (hs <= 0)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: head_size must be > 0",
			    mate_replay_call_function(c));
	} else {
		if ((rc = mate_replay_arg_tensor(c, 0, "q", 0, &q)) != MATE_OK ||
		    (rc = mate_replay_arg_tensor(c, 1, "k", 0, &k)) != MATE_OK)
			return rc;
		if (kind == ROPE_INDPTR)
			rc = mate_replay_arg_tensor(c, 2, "indptr", 0, &indptr) != MATE_OK ? -1 :
			    mate_replay_arg_tensor(c, 3, "offsets", 0, &offsets);
		else
			rc = mate_replay_arg_tensor(c, 2, "pos_ids", 0, &pidx);
		if (rc != MATE_OK)
			return rc < 0 ? MATE_ERR_ARGUMENT : rc;
		at = kind == ROPE_INDPTR ? 4 : 3;
		if (q->ndim != 3 || k->ndim != 3)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q and k must be (nnz, heads, "
			    "head_dim)", mate_replay_call_function(c));
		if ((rc = rope_params(c, at, f & ROPE_LLAMA31, q->shape[2], &p)) != MATE_OK)
			return rc;
	}
	if ((rc = view3(c, q, "query", hs, &qv)) != MATE_OK ||
	    (rc = view3(c, k, "key", hs, &kv)) != MATE_OK)
		return rc;
	if (kv.shape[0] != qv.shape[0] || kv.shape[2] != qv.shape[2])
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: q (%lld tokens, head_dim %lld) and k "
		    "(%lld, %lld) do not match", mate_replay_call_function(c), (long long)qv.shape[0],
		    (long long)qv.shape[2], (long long)kv.shape[0], (long long)kv.shape[2]);
	if ((rc = positions(c, pidx, indptr, offsets, qv.shape[0], &pos)) != MATE_OK)
		return rc;
	rc = rope_run(c, q, k, &qv, &kv, qv.shape[2], pos, &p, f & ROPE_INPLACE);
	free(pos);
	return rc;
}

#define SIG_ROPE "(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=1, " \
	"rope_theta=10000.0)"
#define SIG_ROPE_POS "(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=1, " \
	"rope_theta=10000.0)"
#define SIG_LLAMA31 "(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=8, " \
	"rope_theta=500000.0, low_freq_factor=1, high_freq_factor=4, old_context_len=8192)"
#define SIG_LLAMA31_POS "(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=8, " \
	"rope_theta=500000.0, low_freq_factor=1, high_freq_factor=4, old_context_len=8192)"
#define SIG_COS_SIN "(positions, query, key, head_size, cos_sin_cache, is_neox=True)"

/* How mate-replay --shrink cuts them: by token, with its position; the segment
 * forms by request (indptr's segments), with its offset, indptr rebuilt. */
#define SLICE_POS "token:q.0 k.0 pos_ids.0 result.0"
#define SLICE_INDPTR "request:#indptr q.0+ k.0+ result.0+ offsets.0"
#define SLICE_COS_SIN "token:positions.0 query.0 key.0 result.0"

int
mate_replay_register_rope(mate_replay *r, mate_error *err)
{
	static const struct mate_replay_op_def ops[] = {
		{ "apply_rope", SIG_ROPE, op_rope, ROPE_INDPTR, SLICE_INDPTR },
		{ "apply_rope_inplace", SIG_ROPE, op_rope, ROPE_INDPTR | ROPE_INPLACE, SLICE_INDPTR },
		{ "apply_rope_pos_ids", SIG_ROPE_POS, op_rope, ROPE_POS_IDS, SLICE_POS },
		{ "apply_rope_pos_ids_inplace", SIG_ROPE_POS, op_rope, ROPE_POS_IDS | ROPE_INPLACE,
		    SLICE_POS },
		{ "apply_llama31_rope", SIG_LLAMA31, op_rope, ROPE_INDPTR | ROPE_LLAMA31, SLICE_INDPTR },
		{ "apply_llama31_rope_inplace", SIG_LLAMA31, op_rope,
		    ROPE_INDPTR | ROPE_LLAMA31 | ROPE_INPLACE, SLICE_INDPTR },
		{ "apply_llama31_rope_pos_ids", SIG_LLAMA31_POS, op_rope, ROPE_POS_IDS | ROPE_LLAMA31,
		    SLICE_POS },
		{ "apply_llama31_rope_pos_ids_inplace", SIG_LLAMA31_POS, op_rope,
		    ROPE_POS_IDS | ROPE_LLAMA31 | ROPE_INPLACE, SLICE_POS },
		{ "apply_rope_with_cos_sin_cache", SIG_COS_SIN, op_rope, ROPE_CACHE, SLICE_COS_SIN },
		{ "apply_rope_with_cos_sin_cache_inplace", SIG_COS_SIN, op_rope,
		    ROPE_CACHE | ROPE_INPLACE, SLICE_COS_SIN },
	};

	return mate_replay_register_ops(r, ops, sizeof(ops) / sizeof(ops[0]), err);
}
