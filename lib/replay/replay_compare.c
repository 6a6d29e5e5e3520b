/* replay_compare.c: comparing replayed outputs with recorded ones under spec/ops.md's tolerance rules. */
#include "mate_private.h"
#include "dump_private.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
mate_replay_default_tolerance(mate_dtype dt, double *rtol, double *atol)
{
	double r = 0, a = 0;

	switch (dt) {
	case MATE_F64: case MATE_C128: r = 1e-12; a = 1e-12; break;
	case MATE_F32: case MATE_C64: r = 1e-5; a = 1e-6; break;
	case MATE_F16: case MATE_C32: r = 1e-3; a = 1e-5; break;
	case MATE_BF16: r = 8e-3; a = 1e-5; break;
	/* one unit in the last place; atol: the smallest subnormal */
	case MATE_F8_E4M3FN: r = 0.125; a = 0x1p-9; break;
	case MATE_F8_E4M3FNUZ: r = 0.125; a = 0x1p-10; break;
	case MATE_F8_E5M2: r = 0.25; a = 0x1p-16; break;
	case MATE_F8_E5M2FNUZ: r = 0.25; a = 0x1p-17; break;
	default: break;  /* integers, bool and e8m0 (powers of two): exact */
	}
	if (rtol != NULL)
		*rtol = r;
	if (atol != NULL)
		*atol = a;
}

/* The real component dtype of a complex dtype (else dt itself). */
static mate_dtype
component(mate_dtype dt)
{
	return dt == MATE_C32 ? MATE_F16 : dt == MATE_C64 ? MATE_F32 : dt == MATE_C128 ? MATE_F64 : dt;
}

static void
format_dims(char *buf, size_t len, const int64_t *d, int n, char open, char close)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, len - o, "%c", open);
	for (int i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, i ? ", %" PRId64 : "%" PRId64, d[i]);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "%s%c", n == 1 && open == '(' ? "," : "", close);
}

/* "[3, 7]" for linear index i of shape. */
static void
format_index(char *buf, size_t len, const mate_tensor *t, int64_t i)
{
	int64_t idx[MATE_MAX_DIMS] = { 0 };

	for (int d = t->ndim - 1; d >= 0; d--) {
		idx[d] = t->shape[d] > 0 ? i % t->shape[d] : 0;
		i = t->shape[d] > 0 ? i / t->shape[d] : 0;
	}
	format_dims(buf, len, idx, t->ndim, '[', ']');
}

/* A contiguous host copy of t's elements, or t's own data when contiguous. */
static const unsigned char *
contiguous(const mate_tensor *t, void **owned)
{
	int64_t nb = mate_tensor_nbytes(t);

	*owned = NULL;
	if (mate_tensor_is_contiguous(t))
		return (const unsigned char *)t->data + t->offset * (int64_t)mate_dtype_size(t->dtype);
	if (nb < 0 || (*owned = malloc(nb > 0 ? (size_t)nb : 1)) == NULL)
		return NULL;
	mate_tensor_copy_contiguous(t, *owned);
	return *owned;
}

static int
shape_matches(const char *key, const mate_tensor *x, const mate_tensor *y,
    struct mate_replay_result *res)
{
	char a[256], b[256];

	if (x->dtype != y->dtype) {
		snprintf(res->message, sizeof(res->message), "%s: dtype %s, expected %s",
		    key, mate_dtype_name(y->dtype), mate_dtype_name(x->dtype));
		return 0;
	}
	if (x->ndim == y->ndim && memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)) == 0)
		return 1;
	format_dims(a, sizeof(a), y->shape, y->ndim, '(', ')');
	format_dims(b, sizeof(b), x->shape, x->ndim, '(', ')');
	snprintf(res->message, sizeof(res->message), "%s: shape %s, expected %s", key, a, b);
	return 0;
}

static int64_t
load_i64(mate_dtype dt, const unsigned char *p)
{
	switch (dt) {
	case MATE_BOOL: case MATE_U8: return *p;
	case MATE_I8: return *(const int8_t *)p;
	case MATE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case MATE_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case MATE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case MATE_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: { int64_t v; memcpy(&v, p, 8); return v; }
	}
}

/* Integers and bool: exact. */
static void
compare_exact(const mate_tensor *x, const unsigned char *xb, const unsigned char *yb,
    int64_t n, struct mate_replay_result *res)
{
	size_t es = mate_dtype_size(x->dtype);

	for (int64_t i = 0; i < n; i++) {
		if (memcmp(xb + i * es, yb + i * es, es) == 0)
			continue;
		if (res->n_bad++ == 0) {
			res->first_bad = i;
			res->expected = (double)load_i64(x->dtype, xb + i * es);
			res->got = (double)load_i64(x->dtype, yb + i * es);
		}
	}
}

static int
element_bad(double x, double y, double rtol, double atol)
{
	if (isnan(x) || isnan(y))
		return isnan(x) != isnan(y);
	if (isinf(x) || isinf(y))
		return x != y;
	return fabs(y - x) > atol + rtol * fabs(x);
}

/* The elements of host tensor t as |value| in doubles (malloc'd), or NULL. */
static double *
magnitudes(const mate_tensor *t)
{
	int64_t n = mate_tensor_numel(t);
	double *m = n >= 0 ? malloc((size_t)(n > 0 ? n : 1) * sizeof(*m)) : NULL;

	for (int64_t i = 0; m != NULL && i < n; i++)
		m[i] = fabs(mate_load_f64(t->dtype, mate_tensor_element(t, i)));
	return m;
}

/* 2 K u (|a| |b|)ij for each element of x, the output of red (malloc'd);
 * NULL when red does not fit x, is not on the host, or memory is short. */
static double *
reduction_bound(const struct mate_reduction *red, const mate_tensor *x, int64_t *k_out)
{
	const mate_tensor *a = red->a, *b = red->b;
	int nd = x->ndim;
	int64_t bt, m, n, k;
	double *am, *bm, *bound = NULL, u;

	if (a == NULL || b == NULL || (nd != 2 && nd != 3) || a->ndim != nd || b->ndim != nd ||
	    a->device_type != MATE_DEVICE_CPU || b->device_type != MATE_DEVICE_CPU ||
	    mate_dtype_kind(a->dtype) != MATE_KIND_FLOAT || mate_dtype_kind(b->dtype) != MATE_KIND_FLOAT)
		return NULL;
	bt = nd == 3 ? x->shape[0] : 1;
	m = x->shape[nd - 2];
	n = x->shape[nd - 1];
	k = a->shape[nd - 1];
	if (a->shape[nd - 2] != m || b->shape[nd - 2] != k || b->shape[nd - 1] != n ||
	    (nd == 3 && (a->shape[0] != bt || b->shape[0] != bt)))
		return NULL;
	u = a->dtype == MATE_F64 && b->dtype == MATE_F64 ? 0x1p-53 : 0x1p-24;
	if (red->gemm_u > u)
		u = red->gemm_u;
	am = magnitudes(a);
	bm = magnitudes(b);
	if (am != NULL && bm != NULL && (bound = calloc((size_t)(bt * m * n + 1), sizeof(*bound))) != NULL) {
		for (int64_t p = 0; p < bt; p++)
			for (int64_t i = 0; i < m; i++) {
				double *row = bound + (p * m + i) * n;

				for (int64_t q = 0; q < k; q++) {
					double aq = am[(p * m + i) * k + q];
					const double *bq = bm + (p * k + q) * n;

					for (int64_t j = 0; j < n; j++)
						row[j] += aq * bq[j];
				}
				for (int64_t j = 0; j < n; j++) {
					row[j] *= 2 * (double)k * u * (red->scale > 0 ? red->scale : 1);
					if (red->relative)
						row[j] += 2 * (double)k * u * fabs(mate_load_f64(x->dtype,
						    mate_tensor_element(x, (p * m + i) * n + j)));
				}
			}
		*k_out = k;
	}
	free(am);
	free(bm);
	return bound;
}

const char *
mate_reduction_form(const struct mate_reduction *red)
{
	if (red == NULL || (red->a != NULL && red->scale <= 0))
		return "2 K u (|A| |B|)ij";
	if (red->a != NULL)
		return red->relative ? "2 K u (s |A| |B| + |C|)ij" : "2 K u s (|A| |B|)ij";
	return red->relative ? "2 K u |y|" : "2 K u M";
}

/* 2 K u (M + |x|ij where relative) for each element of x, the output of the K-term
 * reduction red (malloc'd); NULL when memory is short. */
static double *
sum_bound(const struct mate_reduction *red, const mate_tensor *x, int64_t *k_out)
{
	int64_t n = mate_tensor_numel(x);
	double *bound = n >= 0 ? malloc((size_t)(n > 0 ? n : 1) * sizeof(*bound)) : NULL, *mx;

	if (bound == NULL)
		return NULL;
	mx = red->relative ? magnitudes(x) : NULL;
	if (red->relative && mx == NULL) {
		free(bound);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		bound[i] = 2 * (double)red->k * red->u * (red->magnitude + (mx != NULL ? mx[i] : 0));
	free(mx);
	*k_out = red->k;
	return bound;
}

/* Floating elements (complex as interleaved parts): tolerance, NaN in the
 * same place, infinities exact. */
static void
compare_float(mate_dtype dt, const unsigned char *xb, const unsigned char *yb, int64_t n,
    double rtol, double atol, const double *bound, struct mate_replay_result *res)
{
	size_t es = mate_dtype_size(dt);
	double sum_abs = 0, sum_rel = 0;
	int64_t n_abs = 0, n_rel = 0;

	for (int64_t i = 0; i < n; i++) {
		double x = mate_load_f64(dt, xb + i * es), y = mate_load_f64(dt, yb + i * es);

		if (isfinite(x) && isfinite(y)) {
			double e = fabs(y - x), r = x != 0 ? e / fabs(x) : (e != 0 ? INFINITY : 0);

			if (e > res->max_abs_err)
				res->max_abs_err = e;
			if (r > res->max_rel_err)
				res->max_rel_err = r;
			sum_abs += e;
			n_abs++;
			if (x != 0) {
				sum_rel += r;
				n_rel++;
			}
		}
		if (bound != NULL && isfinite(x) && isfinite(y)) {
			double tol = atol + rtol * fabs(x) + bound[i], q = fabs(y - x) / tol;

			if (q > res->bound_ratio)
				res->bound_ratio = q;
			if (fabs(y - x) <= tol)
				continue;
		} else if (!element_bad(x, y, rtol, atol)) {
			continue;
		}
		if (res->n_bad++ == 0) {
			res->first_bad = i;
			res->expected = x;
			res->got = y;
		}
		if (isnan(x) || isnan(y)) {
			if (res->n_nan++ == 0)
				res->first_nan = i;
		} else if (isinf(x) || isinf(y)) {
			if (res->n_inf++ == 0)
				res->first_inf = i;
		}
	}
	res->mean_abs_err = n_abs > 0 ? sum_abs / (double)n_abs : 0;
	res->mean_rel_err = n_rel > 0 ? sum_rel / (double)n_rel : 0;
}

/* The element of linear index i (of the interleaved parts when complex_parts)
 * as "[3, 7]" or "[3].imag" in buf; the element's index. */
static int64_t
element_index(char *buf, size_t len, const mate_tensor *x, int complex_parts, int64_t i)
{
	char idx[150];
	int64_t elem = complex_parts ? i / 2 : i;

	format_index(idx, sizeof(idx), x, elem);
	snprintf(buf, len, "%s%s", idx, complex_parts ? (i % 2 ? ".imag" : ".real") : "");
	return elem;
}

/* The float mismatch of an output where NaN or infinities differ: how many
 * of each, where the first one is, and the errors of the finite elements. */
static void
nonfinite_message(const char *key, struct mate_replay_result *res)
{
	char nan[240] = "", inf[240] = "", head[100] = "";
	double e = fabs(res->got - res->expected);

	if (isfinite(e))
		snprintf(head, sizeof(head), " (abs err %.3g, rel err %.3g)", e,
		    res->expected != 0 ? e / fabs(res->expected) : INFINITY);
	if (res->n_nan > 0)
		snprintf(nan, sizeof(nan), "%" PRId64 " NaN where the other is not (first at %s)",
		    res->n_nan, res->first_nan_index);
	if (res->n_inf > 0)
		snprintf(inf, sizeof(inf), "%" PRId64 " infinit%s that differ%s (first at %s)",
		    res->n_inf, res->n_inf == 1 ? "y" : "ies", res->n_inf == 1 ? "s" : "",
		    res->first_inf_index);
	snprintf(res->message, sizeof(res->message),
	    "%s%s: expected %.9g, got %.9g%s; %" PRId64 " of %" PRId64 " elements beyond rtol %g, "
	    "atol %g (%.3g%%), of them %s%s%s; over the finite elements: max abs err %.3g, "
	    "max rel err %.3g, mean abs err %.3g, mean rel err %.3g",
	    key, res->first_bad_index, res->expected, res->got, head, res->n_bad, res->numel,
	    res->rtol, res->atol, 100.0 * (double)res->n_bad / (double)res->numel, nan,
	    nan[0] && inf[0] ? " and " : "", inf, res->max_abs_err, res->max_rel_err,
	    res->mean_abs_err, res->mean_rel_err);
}

static void
mismatch_message(const char *key, const mate_tensor *x, int complex_parts,
    struct mate_replay_result *res, const struct mate_reduction *red)
{
	double e = fabs(res->got - res->expected);
	double r = res->expected != 0 ? e / fabs(res->expected) : INFINITY;

	res->first_bad = element_index(res->first_bad_index, sizeof(res->first_bad_index), x,
	    complex_parts, res->first_bad);
	if (res->n_nan > 0)
		res->first_nan = element_index(res->first_nan_index, sizeof(res->first_nan_index), x,
		    complex_parts, res->first_nan);
	if (res->n_inf > 0)
		res->first_inf = element_index(res->first_inf_index, sizeof(res->first_inf_index), x,
		    complex_parts, res->first_inf);
	if (mate_dtype_kind(x->dtype) != MATE_KIND_FLOAT && mate_dtype_kind(x->dtype) != MATE_KIND_COMPLEX) {
		snprintf(res->message, sizeof(res->message),
		    "%s%s: expected %.17g, got %.17g; %" PRId64 " of %" PRId64 " elements differ "
		    "(exact), %.3g%%", key, res->first_bad_index, res->expected, res->got, res->n_bad,
		    res->numel, 100.0 * (double)res->n_bad / (double)res->numel);
		return;
	}
	if (res->n_nan > 0 || res->n_inf > 0) {
		nonfinite_message(key, res);
		return;
	}
	if (res->reduction_k > 0) {
		snprintf(res->message, sizeof(res->message),
		    "%s%s: expected %.9g, got %.9g (abs err %.3g, rel err %.3g); %" PRId64 " of %"
		    PRId64 " elements beyond rtol %g, atol %g plus the reduction bound %s "
		    "(K %" PRId64 ") (%.3g%%); the worst error %.3g times its "
		    "bound; max abs err %.3g, max rel err %.3g, mean abs err %.3g, mean rel err %.3g",
		    key, res->first_bad_index, res->expected, res->got, e, r, res->n_bad, res->numel,
		    res->rtol, res->atol, mate_reduction_form(red), res->reduction_k,
		    100.0 * (double)res->n_bad / (double)res->numel, res->bound_ratio,
		    res->max_abs_err, res->max_rel_err, res->mean_abs_err, res->mean_rel_err);
		return;
	}
	snprintf(res->message, sizeof(res->message),
	    "%s%s: expected %.9g, got %.9g (abs err %.3g, rel err %.3g); %" PRId64 " of %" PRId64
	    " elements beyond rtol %g, atol %g (%.3g%%); max abs err %.3g, max rel err %.3g, "
	    "mean abs err %.3g, mean rel err %.3g",
	    key, res->first_bad_index, res->expected, res->got, e, r, res->n_bad, res->numel,
	    res->rtol, res->atol, 100.0 * (double)res->n_bad / (double)res->numel,
	    res->max_abs_err, res->max_rel_err, res->mean_abs_err, res->mean_rel_err);
}

int
mate_replay_compare_tensor(const char *key, const mate_tensor *x, const mate_tensor *y,
    double rtol, double atol, struct mate_replay_result *res)
{
	return mate_replay_compare_reduction(key, x, y, rtol, atol, NULL, res);
}

int
mate_replay_compare_reduction(const char *key, const mate_tensor *x, const mate_tensor *y,
    double rtol, double atol, const struct mate_reduction *red, struct mate_replay_result *res)
{
	double *bound = NULL;
	void *xo, *yo;
	const unsigned char *xb, *yb;
	int64_t n;
	int kind = mate_dtype_kind(x->dtype), parts = kind == MATE_KIND_COMPLEX;
	double dr, da;

	res->first_bad = res->first_nan = res->first_inf = -1;
	res->bit_exact = 0;
	mate_replay_default_tolerance(x->dtype, &dr, &da);
	res->rtol = (kind == MATE_KIND_FLOAT || parts) && rtol >= 0 ? rtol : dr;
	res->atol = (kind == MATE_KIND_FLOAT || parts) && atol >= 0 ? atol : da;
	if (!shape_matches(key, x, y, res))
		return 0;
	n = res->numel = mate_tensor_numel(x);
	xb = contiguous(x, &xo);
	yb = contiguous(y, &yo);
	if (n > 0 && (xb == NULL || yb == NULL)) {
		snprintf(res->message, sizeof(res->message), "%s: out of memory comparing", key);
		free(xo);
		free(yo);
		return 0;
	}
	if (n <= 0 || memcmp(xb, yb, (size_t)n * mate_dtype_size(x->dtype)) == 0) {
		res->bit_exact = 1;
	} else if (kind == MATE_KIND_FLOAT || parts) {
		if (red != NULL && kind == MATE_KIND_FLOAT)
			bound = red->a != NULL ? reduction_bound(red, x, &res->reduction_k) :
			    red->k > 0 ? sum_bound(red, x, &res->reduction_k) : NULL;
		compare_float(component(x->dtype), xb, yb, parts ? 2 * n : n, res->rtol, res->atol,
		    bound, res);
		free(bound);
	} else {
		compare_exact(x, xb, yb, n, res);
	}
	free(xo);
	free(yo);
	if (res->n_bad == 0)
		return 1;
	mismatch_message(key, x, parts, res, red);
	return 0;
}

/* ---- non-tensor values ----------------------------------------------------- */

static int
is_number(const mate_value *v)
{
	mate_value_kind k = mate_value_kind_of(v);

	return k == MATE_V_INT || k == MATE_V_FLOAT;
}

static int values_equal(const mate_value *x, const mate_value *y, double rtol, double atol, int depth);

static int
seqs_equal(const mate_value *x, const mate_value *y, double rtol, double atol, int depth)
{
	size_t n = mate_value_len(x);

	if (n != mate_value_len(y))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (mate_value_kind_of(x) == MATE_V_DICT) {
			const char *k = mate_value_get_str(mate_value_key(x, i), NULL);
			const mate_value *yi = k != NULL ? mate_value_lookup(y, k) : NULL;

			if (yi == NULL || !values_equal(mate_value_item(x, i), yi, rtol, atol, depth + 1))
				return 0;
		} else if (!values_equal(mate_value_item(x, i), mate_value_item(y, i), rtol, atol, depth + 1)) {
			return 0;
		}
	}
	return 1;
}

static int
values_equal(const mate_value *x, const mate_value *y, double rtol, double atol, int depth)
{
	mate_value_kind kx = mate_value_kind_of(x), ky = mate_value_kind_of(y);
	struct mate_replay_result sub;
	size_t lx, ly;
	const char *sx, *sy;

	if (depth > 64)
		return 0;
	if (is_number(x) && is_number(y)) {
		if (kx == MATE_V_INT && ky == MATE_V_INT)
			return mate_value_get_int(x) == mate_value_get_int(y);
		return !element_bad(mate_value_get_float(x), mate_value_get_float(y), rtol, atol);
	}
	if ((kx == MATE_V_LIST || kx == MATE_V_TUPLE) && (ky == MATE_V_LIST || ky == MATE_V_TUPLE))
		return seqs_equal(x, y, rtol, atol, depth);
	if (kx != ky)
		return 0;
	switch (kx) {
	case MATE_V_NONE: return 1;
	case MATE_V_BOOL: return mate_value_get_bool(x) == mate_value_get_bool(y);
	case MATE_V_STR:
	case MATE_V_BYTES:
		sx = mate_value_get_str(x, &lx);
		sy = mate_value_get_str(y, &ly);
		return lx == ly && memcmp(sx, sy, lx) == 0;
	case MATE_V_DTYPE: return mate_value_get_dtype(x) == mate_value_get_dtype(y);
	case MATE_V_ENUM: return strcmp(mate_value_enum_name(x), mate_value_enum_name(y)) == 0;
	case MATE_V_OBJECT:
		return strcmp(mate_value_object_type(x), mate_value_object_type(y)) == 0 &&
		    strcmp(mate_value_object_repr(x), mate_value_object_repr(y)) == 0;
	case MATE_V_DICT: return seqs_equal(x, y, rtol, atol, depth);
	case MATE_V_TENSOR:
		memset(&sub, 0, sizeof(sub));
		return mate_replay_compare_tensor("", mate_value_get_tensor(x),
		    mate_value_get_tensor(y), rtol, atol, &sub);
	default: return 0;
	}
}

int
mate_replay_compare_value(const char *key, const mate_value *x, const mate_value *y,
    double rtol, double atol, struct mate_replay_result *res)
{
	char a[256], b[256];
	double dr, da;

	mate_replay_default_tolerance(MATE_F64, &dr, &da);
	if (mate_value_kind_of(x) == MATE_V_TENSOR && mate_value_kind_of(y) == MATE_V_TENSOR)
		return mate_replay_compare_tensor(key, mate_value_get_tensor(x),
		    mate_value_get_tensor(y), rtol, atol, res);
	res->first_bad = -1;
	res->rtol = rtol >= 0 ? rtol : dr;
	res->atol = atol >= 0 ? atol : da;
	if (values_equal(x, y, res->rtol, res->atol, 0)) {
		res->bit_exact = values_equal(x, y, 0, 0, 0);
		return 1;
	}
	mate_value_format_brief(x, a, sizeof(a));
	mate_value_format_brief(y, b, sizeof(b));
	snprintf(res->message, sizeof(res->message), "%s: expected %s, got %s", key, a, b);
	return 0;
}
