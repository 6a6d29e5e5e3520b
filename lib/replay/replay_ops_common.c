/* replay_ops_common.c: what the built-in replay handlers (replay_ops*.c) share: the kernels a call runs on, the handler tables. */
#include "mate_private.h"
#include "kernels.h"
#include "replay_private.h"

#include <math.h>
#include <stdio.h>

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
