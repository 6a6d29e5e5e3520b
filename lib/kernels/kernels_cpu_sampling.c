/* kernels_cpu_sampling.c: CPU kernels of FlashInfer's sampling filters (top-k/top-p renorm, top-k mask) and the property checks of its random samplers, chain speculative sampling, top_k and its ragged and page-table transforms. */
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

/* ---- chain_speculative_sampling ------------------------------------------ */

/* Whether t is a host integer tensor of shape (d0) or (d0, d1) (d1 < 0: 1-D). */
static int
int_shape(const mate_tensor *t, int64_t d0, int64_t d1)
{
	int nd = d1 < 0 ? 1 : 2;

	return t != NULL && t->device_type == MATE_DEVICE_CPU && t->ndim == nd &&
	    mate_dtype_kind(t->dtype) == MATE_KIND_INT && t->shape[0] == d0 &&
	    (nd == 1 || t->shape[1] == d1) && mate_tensor_storage_extent(t) >= 0 &&
	    (t->data != NULL || mate_tensor_numel(t) == 0);
}

/* Element (r, j) of a 3-D float tensor, rows r being its first two dimensions flattened,
 * as the float32 the kernel reads. */
static float
prob_at(const mate_tensor *t, int64_t r, int64_t j)
{
	return (float)mate_load_f64(t->dtype, kc_at(t, kc_row_offset(t, 2, r) + j * t->stride[2]));
}

/* Whether token t can be drawn from row rt of relu(target - draft) (draft NULL: the
 * target alone; rd the draft's row), in float32: a positive value, or any token where
 * no value of the row is positive. */
static int
redraw_ok(const mate_tensor *target, int64_t rt, const mate_tensor *draft, int64_t rd,
    int64_t V, int64_t t)
{
	int any = 0;

	for (int64_t j = 0; j < V && !any; j++)
		any = prob_at(target, rt, j) - (draft != NULL ? prob_at(draft, rd, j) : 0.0f) > 0;
	if (t < 0 || t >= V)
		return 0;
	/* no mass anywhere: FlashInfer's kernel then takes its last valid index */
	return !any || prob_at(target, rt, t) - (draft != NULL ? prob_at(draft, rd, t) : 0.0f) > 0;
}

int
mate_cpu_chain_spec_check(const mate_chain_spec *s, const mate_tensor *out_ids,
    const mate_tensor *out_acc, const mate_tensor *out_emi, mate_error *err)
{
	const mate_tensor *dp = s->draft_probs, *tp = s->target_probs, *ids = s->draft_ids;
	const mate_tensor *rec, *racc;
	int64_t B, n, V;
	int rc;

	if ((rc = kc_check(dp, "draft_probs", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(tp, "target_probs", 3, 0, err)) != MATE_OK)
		return rc;
	B = dp->shape[0];
	n = dp->shape[1];
	V = dp->shape[2];
	if (V <= 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "draft_probs: an empty vocabulary");
	if (tp->shape[0] != B || tp->shape[1] != n + 1 || tp->shape[2] != V)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "target_probs: (%lld, %lld, %lld), expected "
		    "(%lld, %lld, %lld) after draft_probs", (long long)tp->shape[0], (long long)tp->shape[1],
		    (long long)tp->shape[2], (long long)B, (long long)n + 1, (long long)V);
	if (!int_shape(ids, B, n))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "draft_token_ids: expected (%lld, %lld) "
		    "host integers", (long long)B, (long long)n);
	if (!int_shape(out_ids, B, n + 1) || !int_shape(out_acc, B, -1) || !int_shape(out_emi, B, -1))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "chain_speculative_sampling: outputs of "
		    "the wrong shape");
	if (s->accepted_in != NULL && !int_shape(s->accepted_in, B, -1))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "maybe_output_accepted_token_num: "
		    "expected (%lld) host integers", (long long)B);
	if (s->emitted_in != NULL && !int_shape(s->emitted_in, B, -1))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "maybe_output_emitted_draft_token_num: "
		    "expected (%lld) host integers", (long long)B);
	for (int64_t i = 0; i < B * n; i++) {
		int64_t d = mate_kernel_int_at(ids, i);

		if (d < 0 || d >= V)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "draft_token_ids[%lld, %lld] = %lld: "
			    "the vocabulary has %lld tokens", (long long)(i / n), (long long)(i % n),
			    (long long)d, (long long)V);
	}
	rec = int_shape(s->rec_ids, B, n + 1) ? s->rec_ids : NULL;
	racc = int_shape(s->rec_accepted, B, -1) ? s->rec_accepted : NULL;
	for (int64_t b = 0; b < B; b++) {
		int64_t pos = 0, lo, hi, got, acc0, emi0;

		/* the drafts kept end at the last token that is not -1 */
		for (int64_t i = 0; rec != NULL && i <= n; i++)
			if (mate_kernel_int_at(rec, b * (n + 1) + i) != -1)
				pos = i;
		for (int64_t i = 0; i <= n; i++) {
			int64_t r = rec != NULL ? mate_kernel_int_at(rec, b * (n + 1) + i) : -1, v = -1;

			if (i < pos) {
				int64_t d = mate_kernel_int_at(ids, b * n + i);

				v = prob_at(tp, b * (n + 1) + i, d) > 0 ? d : -1;
			} else if (i == pos && pos < n) {
				int64_t d = mate_kernel_int_at(ids, b * n + pos);
				int rejectable = !(prob_at(dp, b * n + pos, d) < prob_at(tp, b * (n + 1) + pos, d));

				v = rejectable && redraw_ok(tp, b * (n + 1) + pos, dp, b * n + pos, V, r) ? r : -1;
			} else if (i == pos) {
				v = redraw_ok(tp, b * (n + 1) + n, NULL, 0, V, r) ? r : -1;
			}
			if (i <= pos && v == -1 && r == -1)
				v = V;   /* a token belongs here: the recorded -1 must not match */
			set_int(out_ids, b * (n + 1) + i, v);
		}
		/* accepted: the kept drafts, then each from pos on again with a fresh draw */
		lo = hi = pos;
		for (int64_t i = pos; i < n; i++) {
			int64_t d = mate_kernel_int_at(ids, b * n + i);
			float q = prob_at(tp, b * (n + 1) + i, d), p = prob_at(dp, b * n + i, d);

			lo += p < q;
			hi += q > 0;
		}
		acc0 = s->accepted_in != NULL ? mate_kernel_int_at(s->accepted_in, b) : 0;
		emi0 = s->emitted_in != NULL ? mate_kernel_int_at(s->emitted_in, b) : 0;
		if (racc == NULL || acc0 == INT64_MIN || !mate_add_ok(mate_kernel_int_at(racc, b), -acc0, &got))
			got = lo;
		got = got < lo ? lo : got > hi ? hi : got;
		if (!mate_add_ok(acc0, got, &acc0) || !mate_add_ok(emi0, pos, &emi0))
			return mate_set_error(err, MATE_ERR_ARGUMENT, "maybe_output_*_token_num[%lld]: "
			    "a counter past int64", (long long)b);
		set_int(out_acc, b, acc0);
		set_int(out_emi, b, emi0);
	}
	return MATE_OK;
}

/* ---- top_k_ragged_transform, top_k_page_table_transform ----------------- */

/* Row r's score at column j, NaN as -inf (the smallest). */
static double
score_at(const mate_tensor *x, int64_t r, int64_t j)
{
	double v = mate_load_f64(x->dtype, kc_at(x, kc_row_offset(x, 1, r) + j * x->stride[1]));

	return isnan(v) ? -INFINITY : v;
}

static int
by_int(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* One row's window and where its positions go. */
struct tk_row {
	int64_t r, start, len, off, batch, pt_start;
};

/* What window position l of row w becomes: l plus the offset, or through the page table. */
static int64_t
tk_map(const mate_topk_ragged *a, const struct tk_row *w, int64_t l)
{
	int64_t ps = a->page_size;

	if (a->page_table == NULL)
		return l + w->off;
	return mate_kernel_int_at(a->page_table, w->batch * a->page_table->shape[1] +
	    w->pt_start + l / ps) * ps + l % ps;
}

/* Takes one v from the sorted multiset vals[0..n) (cnt: how many of each first copy
 * are taken). @return whether one was left. */
static int
take(const int64_t *vals, int64_t n, int64_t *cnt, int64_t v)
{
	int64_t lo = 0, hi = n, end;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (vals[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < n && vals[end] == v; end++)
		;
	if (lo == end || cnt[lo] >= end - lo)
		return 0;
	cnt[lo]++;
	return 1;
}

/* Scratch of one row: the ranking, the values the top positions map to (those above the
 * k-th score, then those tied with it) and the counts taken. */
struct tk_scratch {
	struct ranked *rk;
	int64_t *must, *tied, *cnt_must, *cnt_tied;
};

/* The first bad place of row w of the recorded indices, or -1: min(k, len) of them the
 * top positions' values (each above the k-th score, then as many tied with it as are
 * left), -1 in the others. */
static int64_t
tk_row_bad(const mate_topk_ragged *a, const struct tk_row *w, struct tk_scratch *sc)
{
	int64_t k = a->k, kk = w->len < k ? w->len : k, nm = 0, nt = 0, quota, got = 0, first_neg = -1;

	for (int64_t l = 0; l < w->len; l++) {
		sc->rk[l].v = score_at(a->input, w->r, w->start + l);
		sc->rk[l].i = l;
	}
	qsort(sc->rk, (size_t)w->len, sizeof(*sc->rk), by_value_desc);
	for (int64_t l = 0; l < w->len && kk > 0; l++) {
		if (sc->rk[l].v > sc->rk[kk - 1].v)
			sc->must[nm++] = tk_map(a, w, sc->rk[l].i);
		else if (sc->rk[l].v == sc->rk[kk - 1].v)
			sc->tied[nt++] = tk_map(a, w, sc->rk[l].i);
	}
	quota = kk - nm;
	qsort(sc->must, (size_t)nm, sizeof(int64_t), by_int);
	qsort(sc->tied, (size_t)nt, sizeof(int64_t), by_int);
	memset(sc->cnt_must, 0, (size_t)(nm > 0 ? nm : 1) * sizeof(int64_t));
	memset(sc->cnt_tied, 0, (size_t)(nt > 0 ? nt : 1) * sizeof(int64_t));
	for (int64_t j = 0; j < k; j++) {
		int64_t v = mate_kernel_int_at(a->rec, w->r * k + j);

		if (v == -1) {
			first_neg = first_neg < 0 ? j : first_neg;
			continue;
		}
		if (got == kk)
			return j;
		if (!take(sc->must, nm, sc->cnt_must, v)) {
			if (quota == 0 || !take(sc->tied, nt, sc->cnt_tied, v))
				return j;
			quota--;
		}
		got++;
	}
	return got < kk ? first_neg : -1;
}

/* Row r's window, checked against the input's columns and the page table. */
static int
tk_window(const mate_topk_ragged *a, int64_t r, struct tk_row *w, mate_error *err)
{
	int64_t L = a->input->shape[1], ps = a->page_size;
	const mate_tensor *pt = a->page_table;

	w->r = r;
	w->start = a->row_starts != NULL ? mate_kernel_int_at(a->row_starts, r) : 0;
	w->len = mate_kernel_int_at(a->lengths, r);
	w->off = a->offsets != NULL ? mate_kernel_int_at(a->offsets, r) : 0;
	if (w->start < 0 || w->start > L)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "row_starts[%lld] = %lld: input has "
		    "%lld columns", (long long)r, (long long)w->start, (long long)L);
	if (w->len < 0 || w->len > L - w->start)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "lengths[%lld] = %lld: the row's "
		    "window from %lld passes input's %lld columns", (long long)r, (long long)w->len,
		    (long long)w->start, (long long)L);
	if (a->offsets != NULL && (w->off < -(INT64_C(1) << 62) || w->off > INT64_C(1) << 62))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "offsets[%lld] = %lld: out of range",
		    (long long)r, (long long)w->off);
	if (pt == NULL)
		return MATE_OK;
	w->batch = a->row_to_batch != NULL ? mate_kernel_int_at(a->row_to_batch, r) : r;
	w->pt_start = a->pt_starts != NULL ? mate_kernel_int_at(a->pt_starts, r) : w->start;
	if (w->batch < 0 || w->batch >= pt->shape[0])
		return mate_set_error(err, MATE_ERR_ARGUMENT, "row_to_batch[%lld] = %lld: "
		    "src_page_table has %lld rows", (long long)r, (long long)w->batch,
		    (long long)pt->shape[0]);
	if (w->pt_start < 0 || w->pt_start > pt->shape[1] ||
	    (w->len + ps - 1) / ps > pt->shape[1] - w->pt_start)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "page_table_row_starts[%lld] = %lld: "
		    "%lld pages from there pass src_page_table's %lld columns", (long long)r,
		    (long long)w->pt_start, (long long)((w->len + ps - 1) / ps),
		    (long long)pt->shape[1]);
	for (int64_t c = w->pt_start; c < w->pt_start + (w->len + ps - 1) / ps; c++) {
		int64_t page = mate_kernel_int_at(pt, w->batch * pt->shape[1] + c);

		if (page < -(INT64_C(1) << 32) || page > INT64_C(1) << 32)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "src_page_table[%lld, %lld] = %lld: "
			    "not a page", (long long)w->batch, (long long)c, (long long)page);
	}
	return MATE_OK;
}

int
mate_cpu_top_k_ragged_check(const mate_topk_ragged *a, const mate_tensor *out, mate_error *err)
{
	int64_t R, L, k = a->k;
	struct tk_scratch sc;
	struct tk_row w;
	int rc = MATE_OK;

	if ((rc = kc_check(a->input, "input", 2, 0, err)) != MATE_OK)
		return rc;
	R = a->input->shape[0];
	L = a->input->shape[1];
	if (k < 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "k = %lld: expected >= 0", (long long)k);
	if ((a->offsets != NULL &&
	    (rc = mate_kernel_check_ints(a->offsets, "offsets", R, err)) != MATE_OK) ||
	    (rc = mate_kernel_check_ints(a->lengths, "lengths", R, err)) != MATE_OK ||
	    (a->row_starts != NULL &&
	    (rc = mate_kernel_check_ints(a->row_starts, "row_starts", R, err)) != MATE_OK) ||
	    (a->row_to_batch != NULL &&
	    (rc = mate_kernel_check_ints(a->row_to_batch, "row_to_batch", R, err)) != MATE_OK) ||
	    (a->pt_starts != NULL &&
	    (rc = mate_kernel_check_ints(a->pt_starts, "page_table_row_starts", R, err)) != MATE_OK))
		return rc;
	if (a->page_table != NULL && (a->page_table->ndim != 2 || !int_shape(a->page_table,
	    a->page_table->shape[0], a->page_table->shape[1])))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "src_page_table: expected a 2-D integer "
		    "host tensor");
	if (a->page_table != NULL && (a->page_size < 1 || a->page_size > (INT64_C(1) << 30) ||
	    (a->page_size & (a->page_size - 1)) != 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "page_size = %lld: expected a power of "
		    "two up to 2**30", (long long)a->page_size);
	if ((a->rec != NULL && !int_shape(a->rec, R, k)) || !int_shape(out, R, k))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "the recorded indices: expected (%lld, "
		    "%lld) host integers", (long long)R, (long long)k);
	for (int64_t r = 0; r < R; r++)
		if ((rc = tk_window(a, r, &w, err)) != MATE_OK)
			return rc;
	memset(&sc, 0, sizeof(sc));
	if ((sc.rk = kc_alloc(L > 0 ? L : 1, sizeof(*sc.rk), err)) == NULL ||
	    (sc.must = kc_alloc(L > 0 ? L : 1, sizeof(int64_t), err)) == NULL ||
	    (sc.tied = kc_alloc(L > 0 ? L : 1, sizeof(int64_t), err)) == NULL ||
	    (sc.cnt_must = kc_alloc(L > 0 ? L : 1, sizeof(int64_t), err)) == NULL ||
	    (sc.cnt_tied = kc_alloc(L > 0 ? L : 1, sizeof(int64_t), err)) == NULL) {
		rc = MATE_ERR_NOMEM;
		goto done;
	}
	for (int64_t r = 0; r < R; r++) {
		int64_t bad;

		tk_window(a, r, &w, err);
		if (a->rec == NULL) {   /* the top positions themselves, largest score first */
			for (int64_t l = 0; l < w.len; l++) {
				sc.rk[l].v = score_at(a->input, r, w.start + l);
				sc.rk[l].i = l;
			}
			qsort(sc.rk, (size_t)w.len, sizeof(*sc.rk), by_value_desc);
			for (int64_t j = 0; j < k; j++)
				set_int(out, r * k + j, j < w.len ? tk_map(a, &w, sc.rk[j].i) : -1);
			continue;
		}
		bad = tk_row_bad(a, &w, &sc);
		for (int64_t j = 0; j < k; j++) {
			int64_t v = mate_kernel_int_at(a->rec, r * k + j);

			set_int(out, r * k + j, j != bad ? v : v != -1 ? -1 : -2);
		}
	}
done:
	free(sc.rk);
	free(sc.must);
	free(sc.tied);
	free(sc.cnt_must);
	free(sc.cnt_tied);
	return rc;
}
