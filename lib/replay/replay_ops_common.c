/* replay_ops_common.c: what the built-in replay handlers (replay_ops*.c) share: the kernels a call runs on, the handler tables, the arguments of the attention handlers. */
#include "mate_private.h"
#include "kernels.h"
#include "kernels_fi.h"
#include "replay_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const mate_kernels *
mate_replay_kernels(const mate_replay_call *c)
{
#ifdef HAVE_CUDA
	if (mate_replay_call_device(c) == MATE_REPLAY_DEVICE_CUDA)
		return mate_kernels_cuda();
#else
	(void)c;
#endif
	return mate_kernels_cpu();
}

int
mate_replay_mm_shape(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b, int nd,
    int64_t *shape)
{
	if (a->ndim != nd || b->ndim != nd)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: operands must be %d-D",
		    mate_replay_call_function(c), nd);
	for (int i = 0; i < nd - 1; i++)
		shape[i] = a->shape[i];
	shape[nd - 1] = b->shape[nd - 1];
	return MATE_OK;
}

int
mate_replay_kernel_done_pair(mate_replay_call *c, int rc, const mate_error *err,
    mate_value *v1, mate_value *v2)
{
	mate_value *ret;

	if (rc != MATE_OK || v2 == NULL) {
		mate_value_free(v2);
		return mate_replay_kernel_done(c, rc, err, v1);
	}
	ret = mate_value_tuple();
	mate_value_append(ret, v1);
	mate_value_append(ret, v2);
	return mate_replay_return(c, ret);
}

int
mate_replay_register_ops(mate_replay *r, const struct mate_replay_op_def *ops, size_t n, mate_error *err)
{
	int rc;

	for (size_t i = 0; i < n; i++)
	{
		if ((rc = mate_replay_register_signature(r, NULL, ops[i].name, ops[i].sig, ops[i].fn,
		    (void *)ops[i].ctx, err)) != MATE_OK)
			return rc;
		mate_replay_set_slice(r, ops[i].slice);
	}
	return MATE_OK;
}

/* The largest sum of |elements| along the last dimension of a host floating tensor (a
 * query row's); NaN for any other. */
double
mate_replay_max_row_l1(const mate_tensor *t)
{
	int64_t n = mate_tensor_numel(t), d = t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
	double m = 0, row = 0;

	if (t->device_type != MATE_DEVICE_CPU || mate_dtype_kind(t->dtype) != MATE_KIND_FLOAT)
		return NAN;
	for (int64_t i = 0; d > 0 && i < n; i++) {
		double x = fabs(mate_load_f64(t->dtype, mate_tensor_element(t, i)));

		row += isfinite(x) ? x : 0;
		if ((i + 1) % d == 0) {
			m = row > m ? row : m;
			row = 0;
		}
	}
	return m;
}

void
mate_replay_attention_bound(mate_replay_call *c, int64_t kv_len, const mate_tensor *q,
    const mate_tensor *k, const mate_tensor *q2, const mate_tensor *k2, const mate_tensor *v,
    const mate_attn_params *p)
{
	int64_t D = q->shape[q->ndim - 1] + (q2 != NULL ? q2->shape[q2->ndim - 1] : 0);
	double sm = (p->sm_scale > 0 ? p->sm_scale : 1.0 / sqrt((double)D)) * fabs(p->q_scale) *
	    fabs(p->k_scale);
	double S = mate_replay_max_row_l1(q) * mate_replay_max_abs(k), M = mate_replay_max_abs(v) * fabs(p->v_scale);

	if (q2 != NULL && k2 != NULL)
		S += mate_replay_max_row_l1(q2) * mate_replay_max_abs(k2);
	if (p->pos_encoding_mode != MATE_POS_NONE)
		S *= 4;     /* RoPE turns pairs: each factor grows by at most sqrt(2) per element */
	S *= sm;
	/* an output is a K-term sum of probabilities times values, |sum| <= M, each probability
	 * off by the error of its score (a D-term dot product, |terms| <= S): 2 u M (K + 2 D S);
	 * the LSE's error in log2 units is within the same with M at least 1.5 */
	if (kv_len < 1 || !isfinite(S) || !isfinite(M))
		return;
	M = M > 1.5 ? M : 1.5;
	mate_replay_set_reduction_sum(c, kv_len, M * (1 + 2.0 * (double)D * S / (double)kv_len), 0,
	    q->dtype == MATE_F64 ? MATE_F64 : MATE_F32);
}

/* "float32[2, 4, 64]" of t's dtype and shape (the first 8 dimensions) into buf. */
static void
describe(mate_dtype dt, int ndim, const int64_t *shape, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "%s[", mate_dtype_name(dt));

	for (int i = 0; i < ndim && i < 8 && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (o < len)
		snprintf(buf + o, len - o, "%s]", ndim > 8 ? ", ..." : "");
}

int
mate_replay_output(mate_replay_call *c, int pos, const char *name, mate_dtype dt, int any_dtype,
    int ndim, const int64_t *shape, mate_value **outv)
{
	const mate_value *given = mate_replay_arg(c, pos, name);
	const mate_tensor *t;
	char want[160], got[160];
	int same;

	*outv = NULL;
	if (mate_value_kind_of(given) != MATE_V_TENSOR) {
		*outv = mate_replay_new_tensor(c, dt, ndim, shape);
		return *outv != NULL ? MATE_OK : MATE_ERR_NOMEM;
	}
	/* FlashInfer's check_shape_dtype_device (and torch's out=): a buffer of exactly the
	 * result's shape and dtype; a kernel writes the whole result into it */
	t = mate_value_get_tensor(given);
	same = t->ndim == ndim && (any_dtype || t->dtype == dt);
	for (int d = 0; same && d < ndim; d++)
		same = t->shape[d] == shape[d];
	if (!same) {
		describe(any_dtype ? t->dtype : dt, ndim, shape, want, sizeof(want));
		describe(t->dtype, t->ndim, t->shape, got, sizeof(got));
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s is %s; the result is %s",
		    mate_replay_call_function(c), name != NULL ? name : "out", got, want);
	}
	*outv = mate_value_copy(given);  /* shares the argument's storage */
	return *outv != NULL ? MATE_OK : mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory",
	    mate_replay_call_function(c));
}

/* ---- arguments the attention handlers share ---------------------------------------- */

#define ABSENT(v) ((v) == NULL || mate_value_kind_of(v) == MATE_V_NONE)

static const char *
fname(const mate_replay_call *c)
{
	return mate_replay_call_function(c);
}

static const mate_tensor *
item_tensor(const mate_value *v, size_t i)
{
	return mate_value_get_tensor(mate_value_item(v, i));
}

int
mate_replay_arg_ints(mate_replay_call *c, int pos, const char *name, int optional, int64_t **out,
    int64_t *n)
{
	const mate_tensor *t;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = mate_replay_arg_tensor(c, pos, name, optional, &t)) != MATE_OK || t == NULL)
		return rc;
	return mate_replay_tensor_ints(c, t, name, out, n);
}

int
mate_replay_tensor_ints(mate_replay_call *c, const mate_tensor *t, const char *name, int64_t **out,
    int64_t *n)
{
	int kind;

	*out = NULL;
	*n = 0;
	kind = mate_dtype_kind(t->dtype);
	if (t->device_type != MATE_DEVICE_CPU || t->ndim != 1 || (kind != MATE_KIND_INT &&
	    kind != MATE_KIND_UINT) || (t->data == NULL && t->shape[0] > 0))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s: expected a 1-D integer host "
		    "tensor (%s, %d-D)", fname(c), name, mate_dtype_name(t->dtype), t->ndim);
	if ((*out = malloc((size_t)(t->shape[0] + 1) * sizeof(int64_t))) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", fname(c));
	for (int64_t i = 0; i < t->shape[0]; i++)
		(*out)[i] = mate_kernel_int_at(t, i);
	*n = t->shape[0];
	return MATE_OK;
}

int
mate_replay_only_known(mate_replay_call *c, int maxpos, const char *const *known)
{
	const mate_value *args = mate_replay_call_args(c);

	for (size_t i = 0; i < mate_value_len(args); i++) {
		const char *k = mate_value_get_str(mate_value_key(args, i), NULL);
		const mate_value *v = mate_value_item(args, i);
		int ok = ABSENT(v) || k == NULL;

		if (!ok && strncmp(k, "arg_", 4) == 0)
			ok = atoi(k + 4) <= maxpos;
		for (size_t j = 0; !ok && known[j] != NULL; j++)
			ok = strncmp(k, "kwarg_", 6) == 0 && strcmp(k + 6, known[j]) == 0;
		if (!ok)
			return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: argument %s is not replayed",
			    fname(c), k);
	}
	return MATE_OK;
}

int
mate_replay_arg_choice(mate_replay_call *c, int pos, const char *name, const char *def,
    const char *const *allowed, int *which)
{
	const char *s;
	int rc;

	if ((rc = mate_replay_arg_str(c, pos, name, def, &s)) != MATE_OK)
		return rc;
	for (*which = 0; allowed[*which] != NULL; (*which)++)
		if (strcmp(s, allowed[*which]) == 0)
			return MATE_OK;
	return mate_replay_fail(c, MATE_ERR_UNSUPPORTED, "%s: %s=%s is not replayed", fname(c), name, s);
}

int
mate_replay_check_indptr(mate_replay_call *c, const char *what, const int64_t *p, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (p[i] < (i > 0 ? p[i - 1] : 0))
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s is not a non-decreasing "
			    "offset array from 0 (element %lld)", fname(c), what, (long long)i);
	return n > 0 ? MATE_OK : mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s is empty", fname(c), what);
}

int
mate_replay_split_cache(mate_replay_call *c, int pos, const char *name, int one_ok, mate_tensor *k,
    mate_tensor *v)
{
	const mate_value *cv = mate_replay_arg(c, pos, name);
	const mate_tensor *t;

	if (mate_value_kind_of(cv) == MATE_V_TUPLE || mate_value_kind_of(cv) == MATE_V_LIST) {
		if (mate_value_len(cv) != 2 || (t = item_tensor(cv, 0)) == NULL ||
		    item_tensor(cv, 1) == NULL)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s: expected (k_cache, v_cache)",
			    fname(c), name);
		*k = *t;
		*v = *item_tensor(cv, 1);
		return MATE_OK;
	}
	if (mate_value_kind_of(cv) != MATE_V_TENSOR || (t = mate_value_get_tensor(cv))->ndim != 5 ||
	    (t->shape[1] != 2 && (!one_ok || t->shape[1] != 1)))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: %s: expected a (pages, %s, ...) tensor "
		    "or a (k_cache, v_cache) tuple", fname(c), name,
		    one_ok ? "1 or 2" : "2");
	*k = *t;
	k->ndim = 4;
	k->shape[0] = t->shape[0], k->stride[0] = t->stride[0];
	for (int d = 1; d < 4; d++)
		k->shape[d] = t->shape[d + 1], k->stride[d] = t->stride[d + 1];
	*v = *k;
	if (t->shape[1] == 2)   /* else K and V are the same entries */
		v->offset += t->stride[1];
	return MATE_OK;
}
