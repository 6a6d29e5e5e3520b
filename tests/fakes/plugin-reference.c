/* plugin-reference.c: a mate-replay plugin for the MATE reference fixture's functions (gemm, rmsnorm, silu_and_mul, configure, no_args, int_ops, crashes). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mate_replay.h"


/* Element (i, j) of a 2-D view, or element i of the last dim of row r. */
static const void *
at2(const mate_tensor *t, int64_t i, int64_t j)
{
	return (const char *)t->data +
	    (t->offset + i * t->stride[0] + j * t->stride[1]) * (int64_t)mate_dtype_size(t->dtype);
}

static void
store(mate_dtype dt, void *p, double v)
{
	switch (dt) {
	case MATE_F64: *(double *)p = v; break;
	case MATE_F32: *(float *)p = (float)v; break;
	case MATE_F16: *(uint16_t *)p = mate_f32_to_f16((float)v); break;
	case MATE_BF16: *(uint16_t *)p = mate_f32_to_bf16((float)v); break;
	case MATE_I32: *(int32_t *)p = (int32_t)v; break;
	case MATE_I64: *(int64_t *)p = (int64_t)v; break;
	default: break;
	}
}

/* gemm(a, b, out_dtype=torch.float32): (a.float() @ b.float()).to(out_dtype) */
static int
gemm(mate_replay_call *c, void *ctx)
{
	const mate_tensor *a, *b, *o;
	mate_dtype dt;
	mate_value *out;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "a", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "b", 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_dtype(c, 2, "out_dtype", MATE_F32, &dt)) != MATE_OK)
		return rc;
	if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0])
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "gemm: shapes do not fit");
	if ((out = mate_replay_new_tensor(c, dt, 2, (int64_t[]){ a->shape[0], b->shape[1] })) == NULL)
		return MATE_ERR_NOMEM;
	o = mate_value_get_tensor(out);
	for (int64_t i = 0; i < a->shape[0]; i++)
		for (int64_t j = 0; j < b->shape[1]; j++) {
			float acc = 0;

			for (int64_t k = 0; k < a->shape[1]; k++)
				acc += (float)mate_load_f64(a->dtype, at2(a, i, k)) *
				    (float)mate_load_f64(b->dtype, at2(b, k, j));
			store(dt, (void *)at2(o, i, j), acc);
		}
	return mate_replay_return(c, out);
}

/* Rows of the last dimension: calls fn(row in, row out, n) per row. */
static int
rows(mate_replay_call *c, const mate_tensor *in, int64_t out_last, mate_value **outv)
{
	int64_t shape[MATE_MAX_DIMS];

	if (in->ndim < 1)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: a 0-d input",
		    mate_replay_call_function(c));
	memcpy(shape, in->shape, sizeof(shape));
	shape[in->ndim - 1] = out_last;
	*outv = mate_replay_new_tensor(c, in->dtype, in->ndim, shape);
	return *outv != NULL ? MATE_OK : MATE_ERR_NOMEM;
}

/* The address of element k of row r (rows: every index but the last). */
static void *
row_elem(const mate_tensor *t, int64_t r, int64_t k)
{
	int64_t off = t->offset + k * t->stride[t->ndim - 1];

	for (int d = t->ndim - 2; d >= 0; d--) {
		off += (r % t->shape[d]) * t->stride[d];
		r /= t->shape[d];
	}
	return (char *)t->data + off * (int64_t)mate_dtype_size(t->dtype);
}

static int64_t
nrows(const mate_tensor *t)
{
	int64_t n = 1;

	for (int d = 0; d < t->ndim - 1; d++)
		n *= t->shape[d];
	return n;
}

/* rmsnorm(input, weight, eps=1e-6, out=None), computed in float32. */
static int
rmsnorm(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x, *w, *o, *out_arg;
	mate_value *outv = NULL;
	double eps;
	int64_t h;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "weight", 0, &w)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 2, "eps", 1e-6, &eps)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 3, "out", 1, &out_arg)) != MATE_OK)
		return rc;
	h = x->shape[x->ndim - 1];
	if (w->ndim != 1 || w->shape[0] != h)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "rmsnorm: weight does not fit");
	if (out_arg == NULL && (rc = rows(c, x, h, &outv)) != MATE_OK)
		return rc;
	o = out_arg != NULL ? out_arg : mate_value_get_tensor(outv);
	for (int64_t r = 0; r < nrows(x); r++) {
		float ss = 0, inv;

		for (int64_t k = 0; k < h; k++) {
			float v = (float)mate_load_f64(x->dtype, row_elem(x, r, k));
			ss += v * v;
		}
		inv = 1.0f / sqrtf(ss / (float)h + (float)eps);
		for (int64_t k = 0; k < h; k++) {
			float v = (float)mate_load_f64(x->dtype, row_elem(x, r, k));
			float wk = (float)mate_load_f64(w->dtype, (const char *)w->data +
			    (w->offset + k * w->stride[0]) * (int64_t)mate_dtype_size(w->dtype));
			store(o->dtype, row_elem(o, r, k), v * inv * wk);
		}
	}
	if (outv == NULL)
		return MATE_OK;  /* written into out= (the recorder's in-place output) */
	return mate_replay_return(c, outv);
}

/* silu_and_mul(input): silu(x[..., :d]) * x[..., d:] */
static int
silu_and_mul(mate_replay_call *c, void *ctx)
{
	const mate_tensor *x, *o;
	mate_value *outv;
	int64_t d;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "input", 0, &x)) != MATE_OK)
		return rc;
	d = x->shape[x->ndim - 1] / 2;
	if ((rc = rows(c, x, d, &outv)) != MATE_OK)
		return rc;
	o = mate_value_get_tensor(outv);
	for (int64_t r = 0; r < nrows(x); r++)
		for (int64_t k = 0; k < d; k++) {
			float a = (float)mate_load_f64(x->dtype, row_elem(x, r, k));
			float b = (float)mate_load_f64(x->dtype, row_elem(x, r, k + d));

			store(o->dtype, row_elem(o, r, k), a / (1.0f + expf(-a)) * b);
		}
	return mate_replay_return(c, outv);
}

/* Whether v is a list or tuple (kind) of exactly these ints. */
static int
check_int_list(const mate_value *v, mate_value_kind kind, const int64_t *want, size_t n)
{
	if (mate_value_kind_of(v) != kind || mate_value_len(v) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (mate_value_kind_of(mate_value_item(v, i)) != MATE_V_INT ||
		    mate_value_get_int(mate_value_item(v, i)) != want[i])
			return 0;
	return 1;
}

static int
check_opts(const mate_value *v)
{
	const mate_value *k = mate_value_lookup(v, "k"), *l = mate_value_lookup(v, "v");

	return mate_value_kind_of(v) == MATE_V_DICT && mate_value_len(v) == 2 &&
	    mate_value_kind_of(k) == MATE_V_INT && mate_value_get_int(k) == 1 &&
	    check_int_list(l, MATE_V_LIST, (const int64_t[]){ 2 }, 1);
}

/* configure(n, scale, flag, name, nothing, sizes, shape, opts, mode=Mode.FAST,
 * tail=3) -> (n*2, [scale, flag]); checks that every argument decoded. */
static int
configure(mate_replay_call *c, void *ctx)
{
	int64_t n, tail;
	double scale;
	int flag;
	const char *name, *mode;
	mate_value *ret, *lst;
	int rc;

	if ((rc = mate_replay_arg_int(c, 0, "n", 0, &n)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, 1, "scale", 0, &scale)) != MATE_OK ||
	    (rc = mate_replay_arg_bool(c, 2, "flag", 0, &flag)) != MATE_OK ||
	    (rc = mate_replay_arg_str(c, 3, "name", "", &name)) != MATE_OK ||
	    (rc = mate_replay_arg_str(c, 8, "mode", "Mode.FAST", &mode)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, 9, "tail", 3, &tail)) != MATE_OK)
		return rc;
	if (strcmp(name, "bf16") != 0 || tail != 9 || strcmp(mode, "Mode.FAST") != 0 ||
	    mate_value_kind_of(mate_replay_arg(c, 4, "nothing")) != MATE_V_NONE)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "configure: scalar arguments decoded wrong");
	if (!check_int_list(mate_replay_arg(c, 5, "sizes"), MATE_V_LIST, (const int64_t[]){ 1, 2, 3 }, 3) ||
	    !check_int_list(mate_replay_arg(c, 6, "shape"), MATE_V_TUPLE, (const int64_t[]){ 4, 5 }, 2) ||
	    !check_opts(mate_replay_arg(c, 7, "opts")))
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "configure: container arguments decoded wrong");
	ret = mate_value_tuple();
	lst = mate_value_list();
	mate_value_append(lst, mate_value_float(scale));
	mate_value_append(lst, mate_value_bool(flag));
	mate_value_append(ret, mate_value_int(n * 2));
	mate_value_append(ret, lst);
	return mate_replay_return(c, ret);
}

static int
no_args(mate_replay_call *c, void *ctx)
{
	return mate_replay_return(c, mate_value_none());
}

/* int_ops(idx, counts): idx + counts, promoted to int64. */
static int
int_ops(mate_replay_call *c, void *ctx)
{
	const mate_tensor *a, *b, *o;
	mate_value *outv;
	int rc;

	if ((rc = mate_replay_arg_tensor(c, 0, "idx", 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, 1, "counts", 0, &b)) != MATE_OK)
		return rc;
	if (a->ndim != 1 || b->ndim != 1 || a->shape[0] != b->shape[0])
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "int_ops: shapes differ");
	if ((outv = mate_replay_new_tensor(c, MATE_I64, 1, a->shape)) == NULL)
		return MATE_ERR_NOMEM;
	o = mate_value_get_tensor(outv);
	for (int64_t i = 0; i < a->shape[0]; i++)
		((int64_t *)o->data)[i] = (int64_t)mate_load_f64(a->dtype, mate_tensor_element(a, i)) +
		    (int64_t)mate_load_f64(b->dtype, mate_tensor_element(b, i));
	return mate_replay_return(c, outv);
}

/* crashes(x, code): raises, as it did when recorded. */
static int
crashes(mate_replay_call *c, void *ctx)
{
	int64_t code;
	int rc;

	if ((rc = mate_replay_arg_int(c, 1, "code", 0, &code)) != MATE_OK)
		return rc;
	return mate_replay_fail(c, MATE_ERR_ARGUMENT, "RuntimeError: crashes with code %lld",
	    (long long)code);
}

int
mate_replay_plugin_init(mate_replay *r, mate_error *err)
{
	static const struct {
		const char *name;
		mate_replay_handler fn;
	} fns[] = {
		{ "gemm", gemm }, { "rmsnorm", rmsnorm }, { "silu_and_mul", silu_and_mul },
		{ "configure", configure }, { "no_args", no_args }, { "int_ops", int_ops },
		{ "crashes", crashes },
	};
	int rc;

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if ((rc = mate_replay_register(r, "__main__", fns[i].name, fns[i].fn, NULL, err)) != MATE_OK)
			return rc;
	return MATE_OK;
}
