/* kernels_cpu_sampling.c: CPU kernels of FlashInfer's sampling filters (top-k/top-p renorm, top-k mask) and the property checks of its random samplers and top_k. */
#include "kernels_cpu.h"
#include "kernels_fi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative margin at the top-p and min-p boundaries for recorded samples:
 * the recording kernel summed in another order. */
#define MARGIN 1e-5

struct ranked {
	double v;
	int64_t i;
};

/* Descending by value, then ascending by index. */
static int
by_value_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

static int
check_2d(const mate_tensor *t, const char *what, mate_error *err)
{
	int rc;

	if ((rc = kc_check(t, what, 2, 0, err)) != MATE_OK)
		return rc;
	if (t->shape[1] <= 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: no columns", what);
	return MATE_OK;
}

/* Row r's value of a per-row parameter. */
static int
row_param(const mate_row_param *p, int64_t r, int64_t rows, const char *what, double *v,
    mate_error *err)
{
	int64_t n;

	if (p->t == NULL) {
		*v = p->v;
		return MATE_OK;
	}
	n = mate_tensor_numel(p->t);
	if (p->t->device_type != MATE_DEVICE_CPU || (n != 1 && n != rows) || p->t->data == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: a tensor of %lld elements, expected "
		    "1 or %lld (one per row)", what, (long long)n, (long long)rows);
	*v = mate_load_f64(p->t->dtype, mate_tensor_element(p->t, n == 1 ? 0 : r));
	return MATE_OK;
}

/* Row r of x (V values) into v, as probabilities when softmax. */
static void
load_row(const mate_tensor *x, int64_t r, int softmax, double *v)
{
	int64_t V = x->shape[1];
	double mx = -INFINITY, s = 0;

	kc_load_d(x->dtype, kc_at(x, kc_row_offset(x, 1, r)), x->stride[1], V, v);
	if (!softmax)
		return;
	for (int64_t j = 0; j < V; j++)
		mx = fmax(mx, v[j]);
	for (int64_t j = 0; j < V; j++)
		s += (v[j] = isinf(mx) && mx < 0 ? 0 : exp(v[j] - mx));
	for (int64_t j = 0; j < V; j++)
		v[j] = s > 0 ? v[j] / s : 0;
}

/* rk[0..V) of v ranked largest first. */
static void
rank(const double *v, int64_t V, struct ranked *rk)
{
	for (int64_t j = 0; j < V; j++) {
		rk[j].v = isnan(v[j]) ? -INFINITY : v[j];
		rk[j].i = j;
	}
	qsort(rk, (size_t)V, sizeof(*rk), by_value_desc);
}

/* One row's values and their ranking, V each; MATE_ERR_NOMEM (err set)
 * when either cannot be had. */
static int
row_bufs(int64_t V, double **v, struct ranked **rk, mate_error *err)
{
	if ((*v = kc_alloc(V, sizeof(**v), err)) == NULL)
		return MATE_ERR_NOMEM;
	if ((*rk = kc_alloc(V, sizeof(**rk), err)) == NULL) {
		free(*v);
		return MATE_ERR_NOMEM;
	}
	return MATE_OK;
}

/* The k-th largest value (k clamped to [1, V]; k < 1, NaN included, keeps all; a
 * fraction, which only a hostile dump records, is taken down to a whole k). */
static double
pivot_k(const struct ranked *rk, int64_t V, double k)
{
	if (!(k >= 1) || k >= (double)V)
		return -INFINITY;
	return rk[(int64_t)k - 1].v;
}

enum { F_TOPK_RENORM, F_TOPP_RENORM, F_TOPK_MASK };

static int
filter_rows(const mate_tensor *x, const mate_row_param *prm, const mate_tensor *out, int kind,
    mate_error *err)
{
	const char *what = kind == F_TOPP_RENORM ? "top_p" : "top_k";
	int64_t B, V;
	struct ranked *rk;
	double *v;
	int rc;

	if ((rc = check_2d(x, kind == F_TOPK_MASK ? "logits" : "probs", err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, x->shape[0], err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, x->shape[1], err)) != MATE_OK)
		return rc;
	B = x->shape[0];
	V = x->shape[1];
	if ((rc = row_bufs(V, &v, &rk, err)) != MATE_OK)
		return rc;
	for (int64_t r = 0; r < B; r++) {
		double p, piv = -INFINITY, sum = 0, kept = 0, above = 0;

		if ((rc = row_param(prm, r, B, what, &p, err)) != MATE_OK)
			break;
		load_row(x, r, 0, v);
		rank(v, V, rk);
		if (kind != F_TOPP_RENORM) {
			piv = pivot_k(rk, V, p);
		} else {
			for (int64_t j = 0; j < V; j++)
				sum += rk[j].v > 0 ? rk[j].v : 0;
			/* keep the largest values while the mass above them is below p */
			for (int64_t j = 0; j < V && above < p * sum; j++) {
				piv = rk[j].v;
				above += rk[j].v;
			}
			if (!(p < 1))
				piv = -INFINITY;
		}
		for (int64_t j = 0; j < V; j++)
			if (v[j] >= piv)
				kept += v[j];
		for (int64_t j = 0; j < V; j++) {
			if (kind == F_TOPK_MASK)
				v[j] = v[j] >= piv ? v[j] : -INFINITY;
			else
				v[j] = v[j] >= piv && kept > 0 ? v[j] / kept : 0;
		}
		kc_store_d(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], V, v);
	}
	free(v);
	free(rk);
	return rc;
}

int
mate_cpu_top_k_renorm(const mate_tensor *probs, const mate_row_param *top_k,
    const mate_tensor *out, mate_error *err)
{
	return filter_rows(probs, top_k, out, F_TOPK_RENORM, err);
}

int
mate_cpu_top_p_renorm(const mate_tensor *probs, const mate_row_param *top_p,
    const mate_tensor *out, mate_error *err)
{
	return filter_rows(probs, top_p, out, F_TOPP_RENORM, err);
}

int
mate_cpu_top_k_mask_logits(const mate_tensor *logits, const mate_row_param *top_k,
    const mate_tensor *out, mate_error *err)
{
	return filter_rows(logits, top_k, out, F_TOPK_MASK, err);
}

static void
set_int(const mate_tensor *t, int64_t i, int64_t v)
{
	void *p = mate_tensor_element(t, i);

	switch (mate_dtype_size(t->dtype)) {
	case 1: *(int8_t *)p = (int8_t)v; break;
	case 2: *(int16_t *)p = (int16_t)v; break;
	case 4: *(int32_t *)p = (int32_t)v; break;
	default: *(int64_t *)p = v; break;
	}
}

static int
check_int_out(const mate_tensor *t, const char *what, int ndim, mate_error *err)
{
	if (t->device_type != MATE_DEVICE_CPU || t->ndim != ndim || t->data == NULL ||
	    mate_dtype_kind(t->dtype) != MATE_KIND_INT)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: expected a %d-D signed integer host "
		    "tensor", what, ndim);
	return MATE_OK;
}

/* Whether token s of probabilities v (ranked rk) passes filter f with
 * row parameters k, p, m. */
static int
allowed(const double *v, const struct ranked *rk, int64_t V, int64_t s, double k, double p,
    double m, int joint)
{
	double piv = pivot_k(rk, V, k), mass = 0, above = 0;

	if (s < 0 || s >= V || !(v[s] > 0) || v[s] < piv)
		return 0;
	if (m > 0 && v[s] < m * rk[0].v * (1 - MARGIN))
		return 0;
	if (!(p < 1))
		return 1;
	/* top-p over the top-k survivors (top_k_first) or the whole row (joint) */
	for (int64_t j = 0; j < V; j++)
		if (rk[j].v > 0 && (joint || rk[j].v >= piv))
			mass += rk[j].v;
	for (int64_t j = 0; j < V && rk[j].v > v[s]; j++)
		above += rk[j].v;
	return above < p * mass * (1 + MARGIN);
}

int
mate_cpu_sample_check(const mate_tensor *x, const mate_tensor *indices,
    const mate_sample_filter *f, const mate_tensor *samples, const mate_tensor *out,
    int64_t *first_bad, mate_error *err)
{
	int64_t B, V, n;
	struct ranked *rk;
	double *v;
	int rc;

	*first_bad = -1;
	if ((rc = check_2d(x, f->from_logits ? "logits" : "probs", err)) != MATE_OK ||
	    (rc = check_int_out(out, "samples", 1, err)) != MATE_OK)
		return rc;
	B = x->shape[0];
	V = x->shape[1];
	n = out->shape[0];
	if (indices != NULL && (rc = mate_kernel_check_ints(indices, "indices", n, err)) != MATE_OK)
		return rc;
	if (indices == NULL && n != B)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%lld samples of %lld rows",
		    (long long)n, (long long)B);
	if ((rc = row_bufs(V, &v, &rk, err)) != MATE_OK)
		return rc;
	for (int64_t i = 0; i < n; i++) {
		int64_t r = indices != NULL ? mate_kernel_int_at(indices, i) : i;
		int64_t s = samples != NULL && i < mate_tensor_numel(samples) ?
		    mate_kernel_int_at(samples, i) : -1;
		double k, p, m;

		if (r < 0 || r >= B) {
			rc = mate_set_error(err, MATE_ERR_ARGUMENT, "indices[%lld] = %lld: probs has %lld "
			    "rows", (long long)i, (long long)r, (long long)B);
			break;
		}
		if ((rc = row_param(&f->top_k, i, n, "top_k", &k, err)) != MATE_OK ||
		    (rc = row_param(&f->top_p, i, n, "top_p", &p, err)) != MATE_OK ||
		    (rc = row_param(&f->min_p, i, n, "min_p", &m, err)) != MATE_OK)
			break;
		load_row(x, r, f->from_logits, v);
		rank(v, V, rk);
		if (!allowed(v, rk, V, s, k, p, m, f->joint)) {
			if (*first_bad < 0)
				*first_bad = i;
			s = -1;
		}
		set_int(out, i, s);
	}
	free(v);
	free(rk);
	return rc;
}

int
mate_cpu_top_k_check(const mate_tensor *in, const mate_tensor *idx, int sorted,
    const mate_tensor *out_val, const mate_tensor *out_idx, mate_error *err)
{
	int64_t B, V, K;
	double *v;
	uint8_t *seen;
	int rc;

	if ((rc = check_2d(in, "input", err)) != MATE_OK ||
	    (rc = check_int_out(out_idx, "indices", 2, err)) != MATE_OK ||
	    (rc = kc_check(out_val, "values", 2, 1, err)) != MATE_OK)
		return rc;
	B = in->shape[0];
	V = in->shape[1];
	K = out_idx->shape[1];
	if (idx->device_type != MATE_DEVICE_CPU || idx->ndim != 2 || idx->shape[0] != B ||
	    idx->shape[1] != K || mate_dtype_kind(idx->dtype) != MATE_KIND_INT || K > V)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "indices: expected (%lld, %lld) integers",
		    (long long)B, (long long)K);
	if ((v = kc_alloc(V, sizeof(*v), err)) == NULL)
		return MATE_ERR_NOMEM;
	if ((seen = kc_alloc(V, 1, err)) == NULL) {
		free(v);
		return MATE_ERR_NOMEM;
	}
	for (int64_t r = 0; r < B; r++) {
		int64_t bad = -1;
		double best_out = -INFINITY, prev = INFINITY;

		load_row(in, r, 0, v);
		memset(seen, 0, (size_t)V);
		for (int64_t j = 0; j < K; j++) {
			int64_t s = mate_kernel_int_at(idx, r * K + j);

			if (s < 0 || s >= V || seen[s] || (sorted && v[s] > prev)) {
				bad = bad < 0 ? j : bad;
				continue;
			}
			seen[s] = 1;
			prev = v[s];
		}
		for (int64_t j = 0; j < V; j++)
			if (!seen[j] && v[j] > best_out)
				best_out = v[j];
		for (int64_t j = 0; j < K; j++) {
			int64_t s = mate_kernel_int_at(idx, r * K + j);
			int ok = s >= 0 && s < V;
			double x = ok ? v[s] : NAN;

			/* a token left out that beats a chosen one: the first chosen below it */
			if (bad < 0 && ok && x < best_out)
				bad = j;
			set_int(out_idx, r * K + j, j == bad ? -1 : s);
			kc_store_d(out_val->dtype, kc_at(out_val, kc_row_offset(out_val, 1, r) +
			    j * out_val->stride[1]), 1, 1, &x);
		}
	}
	free(v);
	free(seen);
	return MATE_OK;
}
