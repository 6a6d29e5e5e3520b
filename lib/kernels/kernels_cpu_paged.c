/* kernels_cpu_paged.c: batch attention on paged and ragged KV caches, MLA, state merges and KV-cache appends (kernels_paged.h). */
#include "kernels_cpu.h"
#include "kernels_paged.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The request's query rows, checked against q's rows. */
static int
query_rows(const int64_t *qo_indptr, int64_t b, int64_t nq, int64_t *q0, int64_t *q1,
    mate_error *err)
{
	*q0 = qo_indptr != NULL ? qo_indptr[b] : b;
	*q1 = qo_indptr != NULL ? qo_indptr[b + 1] : b + 1;
	if (*q0 < 0 || *q1 < *q0 || *q1 > nq)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "request %lld: query rows [%lld, %lld) "
		    "outside q's %lld", (long long)b, (long long)*q0, (long long)*q1, (long long)nq);
	return MATE_OK;
}

/* Checks the page table of every request against a cache of npages pages. */
static int
check_pages(int64_t batch, const int64_t *indptr, const int64_t *indices, int64_t n_indices,
    const int64_t *kv_len, int64_t page_size, int64_t npages, mate_error *err)
{
	for (int64_t b = 0; b < batch; b++) {
		int64_t p0 = indptr[b], p1 = indptr[b + 1];

		if (p0 < 0 || p1 < p0 || p1 > n_indices)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "request %lld: pages [%lld, %lld) "
			    "outside the %lld indices", (long long)b, (long long)p0, (long long)p1,
			    (long long)n_indices);
		if (kv_len[b] < 0 || kv_len[b] > (p1 - p0) * page_size ||
		    (p1 > p0 && kv_len[b] <= (p1 - p0 - 1) * page_size))
			return mate_set_error(err, MATE_ERR_ARGUMENT, "request %lld: %lld keys do not fill "
			    "%lld pages of %lld", (long long)b, (long long)kv_len[b], (long long)(p1 - p0),
			    (long long)page_size);
		for (int64_t i = p0; i < p1; i++)
			if (indices[i] < 0 || indices[i] >= npages)
				return mate_set_error(err, MATE_ERR_ARGUMENT, "request %lld: page %lld of a "
				    "cache of %lld", (long long)b, (long long)indices[i], (long long)npages);
	}
	return MATE_OK;
}

/* The cache as (pages, page_size, H, D) whatever its layout. */
static void
nhd_view(const mate_tensor *cache, int hnd, mate_tensor *t)
{
	*t = *cache;
	if (hnd) {
		t->shape[1] = cache->shape[2], t->stride[1] = cache->stride[2];
		t->shape[2] = cache->shape[1], t->stride[2] = cache->stride[1];
	}
}

/* Copies the first len keys of a request's pages (c: NHD view) into dst,
 * contiguous (len, H, D) rows of `width` elements starting at col. */
static void
gather_pages(const mate_tensor *c, const int64_t *pages, int64_t len, char *dst,
    int64_t width, int64_t col)
{
	size_t es = (size_t)mate_dtype_size(c->dtype);
	int64_t H = c->shape[2], D = c->shape[3], P = c->shape[1];

	for (int64_t t = 0; t < len; t++)
		for (int64_t h = 0; h < H; h++) {
			int64_t off = c->offset + pages[t / P] * c->stride[0] + (t % P) * c->stride[1] +
			    h * c->stride[2];
			char *d = dst + ((t * H + h) * width + col) * (int64_t)es;

			if (c->stride[3] == 1) {
				memcpy(d, kc_at(c, off), (size_t)D * es);
				continue;
			}
			for (int64_t i = 0; i < D; i++)
				memcpy(d + i * (int64_t)es, kc_at(c, off + i * c->stride[3]), es);
		}
}

/* A view of rows [r0, r1) of dim 0 of t. */
static void
rows_view(const mate_tensor *t, int64_t r0, int64_t r1, mate_tensor *v)
{
	*v = *t;
	v->shape[0] = r1 - r0;
	v->offset = t->offset + r0 * t->stride[0];
}

/* The contiguous tensor (L, H, D) of dtype dt at buf. */
static void
buf_tensor(mate_tensor *t, mate_dtype dt, int64_t L, int64_t H, int64_t D, void *buf)
{
	mate_tensor_init(t, dt, 3, (int64_t[]){ L, H, D }, NULL, buf);
}

static int
check_batch(const mate_batch_attn *a, const mate_attn_params *p, mate_error *err)
{
	int hnd = p->kv_layout == MATE_KV_HND, paged = a->page_size > 0, rc;
	int nd = paged ? 4 : 3;

	if (p->custom_mask != NULL || p->packed_custom_mask != NULL)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "custom masks of a batch are not replayed");
	if ((rc = kc_check(a->q, "q", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(a->k, "k", nd, 0, err)) != MATE_OK ||
	    (rc = kc_check(a->v, "v", nd, 0, err)) != MATE_OK ||
	    (rc = kc_check(a->out, "out", 3, 1, err)) != MATE_OK ||
	    (a->lse != NULL && (rc = kc_check(a->lse, "lse", 2, 1, err)) != MATE_OK))
		return rc;
	for (int d = 0; d < nd - 1; d++)
		if ((rc = kc_check_dim(a->v, "v", d, a->k->shape[d], err)) != MATE_OK)
			return rc;
	if (paged && (a->k->shape[hnd ? 2 : 1] != a->page_size))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "the cache's pages hold %lld entries, "
		    "page_size is %lld", (long long)a->k->shape[hnd ? 2 : 1], (long long)a->page_size);
	if (paged)
		return check_pages(a->batch, a->kv_indptr, a->kv_indices, a->n_indices, a->kv_len,
		    a->page_size, a->k->shape[0], err);
	for (int64_t b = 0; b < a->batch; b++)
		if (a->kv_indptr[b] < 0 || a->kv_indptr[b + 1] < a->kv_indptr[b] ||
		    a->kv_indptr[b + 1] > a->k->shape[hnd ? 1 : 0])
			return mate_set_error(err, MATE_ERR_ARGUMENT, "request %lld: keys [%lld, %lld) "
			    "outside k's %lld", (long long)b, (long long)a->kv_indptr[b],
			    (long long)a->kv_indptr[b + 1], (long long)a->k->shape[hnd ? 1 : 0]);
	return MATE_OK;
}

/* Query rows [q0, q1) of out (and of lse when it is not NULL) from one
 * request's q, k and v, on k's single_prefill. */
static int
prefill_rows(const mate_kernels *k, const mate_tensor *qt, const mate_tensor *kt,
    const mate_tensor *vt, const mate_attn_params *rp, const mate_tensor *out,
    const mate_tensor *lse, int64_t q0, int64_t q1, mate_error *err)
{
	mate_tensor ot, lt;

	rows_view(out, q0, q1, &ot);
	if (lse != NULL)
		rows_view(lse, q0, q1, &lt);
	return k->single_prefill(qt, kt, vt, rp, &ot, lse != NULL ? &lt : NULL, err);
}

/* The batch, one request at a time on k's single_prefill. */
static int
per_request(const mate_kernels *k, const mate_batch_attn *a, const mate_attn_params *p,
    mate_error *err)
{
	int hnd = p->kv_layout == MATE_KV_HND, paged = a->page_size > 0, rc;
	mate_attn_params rp = *p;
	mate_tensor kc, vc, kt, vt, qt;
	int64_t maxlen = 0, H, D, Dv;
	char *kbuf = NULL, *vbuf = NULL;

	if ((rc = check_batch(a, p, err)) != MATE_OK)
		return rc;
	if (paged) {
		nhd_view(a->k, hnd, &kc);
		nhd_view(a->v, hnd, &vc);
		H = kc.shape[2], D = kc.shape[3], Dv = vc.shape[3];
		for (int64_t b = 0; b < a->batch; b++)
			maxlen = a->kv_len[b] > maxlen ? a->kv_len[b] : maxlen;
		if ((kbuf = kc_alloc(maxlen * H + 1, (size_t)D * mate_dtype_size(kc.dtype), err)) == NULL ||
		    (vbuf = kc_alloc(maxlen * H + 1, (size_t)Dv * mate_dtype_size(vc.dtype), err)) == NULL) {
			free(kbuf);
			return MATE_ERR_NOMEM;
		}
		rp.kv_layout = MATE_KV_NHD;
	}
	for (int64_t b = 0; b < a->batch && rc == MATE_OK; b++) {
		int64_t q0, q1;

		if ((rc = query_rows(a->qo_indptr, b, a->q->shape[0], &q0, &q1, err)) != MATE_OK ||
		    q0 == q1)
			continue;
		if (paged) {
			const int64_t *pages = a->kv_indices + a->kv_indptr[b];

			gather_pages(&kc, pages, a->kv_len[b], kbuf, D, 0);
			gather_pages(&vc, pages, a->kv_len[b], vbuf, Dv, 0);
			buf_tensor(&kt, kc.dtype, a->kv_len[b], H, D, kbuf);
			buf_tensor(&vt, vc.dtype, a->kv_len[b], H, Dv, vbuf);
		} else if (hnd) {  /* rows along dim 1 */
			kt = *a->k, vt = *a->v;
			kt.shape[1] = vt.shape[1] = a->kv_indptr[b + 1] - a->kv_indptr[b];
			kt.offset += a->kv_indptr[b] * kt.stride[1];
			vt.offset += a->kv_indptr[b] * vt.stride[1];
		} else {
			rows_view(a->k, a->kv_indptr[b], a->kv_indptr[b + 1], &kt);
			rows_view(a->v, a->kv_indptr[b], a->kv_indptr[b + 1], &vt);
		}
		rows_view(a->q, q0, q1, &qt);
		rc = prefill_rows(k, &qt, &kt, &vt, &rp, a->out, a->lse, q0, q1, err);
	}
	free(kbuf);
	free(vbuf);
	return rc;
}

int
mate_cpu_batch_attention(const mate_batch_attn *a, const mate_attn_params *p, mate_error *err)
{
	return per_request(mate_kernels_cpu(), a, p, err);
}

int
mate_batch_attention(const mate_kernels *k, const mate_batch_attn *a, const mate_attn_params *p,
    mate_error *err)
{
	return k->batch_attention != NULL ? k->batch_attention(a, p, err) : per_request(k, a, p, err);
}

/* ---- MLA -------------------------------------------------------------------------- */

static int
check_mla(const mate_batch_mla_args *a, mate_error *err)
{
	const mate_tensor *qn = a->q_nope, *qp = a->q_pe;
	int rc;

	if ((rc = kc_check(qn, "q_nope", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(qp, "q_pe", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(a->ckv, "ckv_cache", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(a->kpe, "kpe_cache", 3, 0, err)) != MATE_OK ||
	    (rc = kc_check(a->out, "out", 3, 1, err)) != MATE_OK ||
	    (a->lse != NULL && (rc = kc_check(a->lse, "lse", 2, 1, err)) != MATE_OK) ||
	    (rc = kc_check_dim(qp, "q_pe", 0, qn->shape[0], err)) != MATE_OK ||
	    (rc = kc_check_dim(qp, "q_pe", 1, qn->shape[1], err)) != MATE_OK ||
	    (rc = kc_check_dim(a->ckv, "ckv_cache", 2, qn->shape[2], err)) != MATE_OK ||
	    (rc = kc_check_dim(a->kpe, "kpe_cache", 2, qp->shape[2], err)) != MATE_OK ||
	    (rc = kc_check_dim(a->kpe, "kpe_cache", 0, a->ckv->shape[0], err)) != MATE_OK ||
	    (rc = kc_check_dim(a->kpe, "kpe_cache", 1, a->page_size, err)) != MATE_OK ||
	    (rc = kc_check_dim(a->ckv, "ckv_cache", 1, a->page_size, err)) != MATE_OK ||
	    (rc = kc_check_dim(a->out, "out", 2, qn->shape[2], err)) != MATE_OK)
		return rc;
	if (qn->dtype != qp->dtype || a->ckv->dtype != a->kpe->dtype)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "MLA: q_nope %s with q_pe %s, ckv %s "
		    "with kpe %s: mixed dtypes are not replayed", mate_dtype_name(qn->dtype),
		    mate_dtype_name(qp->dtype), mate_dtype_name(a->ckv->dtype), mate_dtype_name(a->kpe->dtype));
	return check_pages(a->batch, a->kv_indptr, a->kv_indices, a->n_indices, a->kv_len,
	    a->page_size, a->ckv->shape[0], err);
}

/* The (P, 1, D) head view of an MLA cache (pages, P, D). */
static void
mla_view(const mate_tensor *c, mate_tensor *t)
{
	*t = *c;
	t->ndim = 4;
	t->shape[3] = c->shape[2], t->stride[3] = c->stride[2];
	t->shape[2] = 1, t->stride[2] = 0;
}

/* Rows [q0, q1) of q_nope and q_pe side by side into buf (L, H, Dc + Dp). */
static void
gather_q(const mate_batch_mla_args *a, int64_t q0, int64_t q1, char *buf)
{
	const mate_tensor *parts[2] = { a->q_nope, a->q_pe };
	size_t es = (size_t)mate_dtype_size(a->q_nope->dtype);
	int64_t H = a->q_nope->shape[1], W = a->q_nope->shape[2] + a->q_pe->shape[2];

	for (int64_t i = q0; i < q1; i++)
		for (int64_t h = 0; h < H; h++)
			for (int s = 0, col = 0; s < 2; col += (int)parts[s]->shape[2], s++) {
				const mate_tensor *t = parts[s];
				int64_t off = t->offset + i * t->stride[0] + h * t->stride[1];
				char *d = buf + (((i - q0) * H + h) * W + col) * (int64_t)es;

				for (int64_t e = 0; e < t->shape[2]; e++)
					memcpy(d + e * (int64_t)es, kc_at(t, off + e * t->stride[2]), es);
			}
}

int
mate_batch_mla(const mate_kernels *k, const mate_batch_mla_args *a, const mate_attn_params *p,
    mate_error *err)
{
	mate_attn_params rp = *p;
	mate_tensor cv, pv, kt, vt, qt;
	int64_t maxlen = 0, maxq = 0, H, Dc, W;
	char *kbuf = NULL, *qbuf = NULL;
	size_t kes, qes;
	int rc;

	if ((rc = check_mla(a, err)) != MATE_OK)
		return rc;
	H = a->q_nope->shape[1], Dc = a->q_nope->shape[2], W = Dc + a->q_pe->shape[2];
	kes = (size_t)mate_dtype_size(a->ckv->dtype);
	qes = (size_t)mate_dtype_size(a->q_nope->dtype);
	for (int64_t b = 0; b < a->batch; b++) {
		int64_t q0, q1;

		if ((rc = query_rows(a->qo_indptr, b, a->q_nope->shape[0], &q0, &q1, err)) != MATE_OK)
			return rc;
		maxlen = a->kv_len[b] > maxlen ? a->kv_len[b] : maxlen;
		maxq = q1 - q0 > maxq ? q1 - q0 : maxq;
	}
	if ((kbuf = kc_alloc(maxlen + 1, (size_t)W * kes, err)) == NULL ||
	    (qbuf = kc_alloc(maxq * H + 1, (size_t)W * qes, err)) == NULL) {
		free(kbuf);
		return MATE_ERR_NOMEM;
	}
	mla_view(a->ckv, &cv);
	mla_view(a->kpe, &pv);
	rp.kv_layout = MATE_KV_NHD;
	rp.pos_encoding_mode = MATE_POS_NONE;
	for (int64_t b = 0; b < a->batch && rc == MATE_OK; b++) {
		const int64_t *pages = a->kv_indices + a->kv_indptr[b];
		int64_t q0, q1, L = a->kv_len[b];

		query_rows(a->qo_indptr, b, a->q_nope->shape[0], &q0, &q1, err);
		if (q0 == q1)
			continue;
		gather_pages(&cv, pages, L, kbuf, W, 0);
		gather_pages(&pv, pages, L, kbuf, W, Dc);
		gather_q(a, q0, q1, qbuf);
		buf_tensor(&kt, a->ckv->dtype, L, 1, W, kbuf);
		vt = kt;          /* the first Dc columns: ckv */
		vt.shape[2] = Dc;
		buf_tensor(&qt, a->q_nope->dtype, q1 - q0, H, W, qbuf);
		rc = prefill_rows(k, &qt, &kt, &vt, &rp, a->out, a->lse, q0, q1, err);
	}
	free(kbuf);
	free(qbuf);
	return rc;
}

/* ---- merging attention states -------------------------------------------------- */

int
mate_merge_states(const mate_tensor *v, const mate_tensor *s, int64_t nstates,
    const mate_tensor *vo, const mate_tensor *so, mate_error *err)
{
	int64_t n = vo->shape[0], H = vo->shape[1], D = vo->shape[2];
	float *acc, *row;
	int rc;

	if ((rc = kc_check(vo, "v_merged", 3, 1, err)) != MATE_OK ||
	    (rc = kc_check(so, "s_merged", 2, 1, err)) != MATE_OK)
		return rc;
	for (int64_t i = 0; i < nstates; i++) {
		if ((rc = kc_check(&v[i], "v", 3, 0, err)) != MATE_OK ||
		    (rc = kc_check(&s[i], "s", 2, 0, err)) != MATE_OK)
			return rc;
		for (int d = 0; d < 3; d++)
			if ((rc = kc_check_dim(&v[i], "v", d, vo->shape[d], err)) != MATE_OK ||
			    (d < 2 && (rc = kc_check_dim(&s[i], "s", d, vo->shape[d], err)) != MATE_OK))
				return rc;
	}
	if ((acc = kc_alloc(2 * D + 1, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	row = acc + D;
	for (int64_t r = 0; r < n; r++)
		for (int64_t h = 0; h < H; h++) {
			float m = -INFINITY, sum = 0, lse;

			for (int64_t i = 0; i < nstates; i++) {
				float x;
				kc_load_f(s[i].dtype, kc_at(&s[i], s[i].offset + r * s[i].stride[0] +
				    h * s[i].stride[1]), 1, 1, &x);
				m = x > m ? x : m;
			}
			memset(acc, 0, (size_t)D * sizeof(float));
			for (int64_t i = 0; i < nstates && m != -INFINITY; i++) {
				float x, w;
				kc_load_f(s[i].dtype, kc_at(&s[i], s[i].offset + r * s[i].stride[0] +
				    h * s[i].stride[1]), 1, 1, &x);
				w = exp2f(x - m);
				sum += w;
				kc_load_f(v[i].dtype, kc_at(&v[i], v[i].offset + r * v[i].stride[0] +
				    h * v[i].stride[1]), v[i].stride[2], D, row);
				for (int64_t d = 0; d < D; d++)
					acc[d] += w * row[d];
			}
			for (int64_t d = 0; d < D && sum > 0; d++)
				acc[d] /= sum;
			lse = sum > 0 ? m + log2f(sum) : -INFINITY;
			kc_store_f(vo->dtype, kc_at(vo, vo->offset + r * vo->stride[0] + h * vo->stride[1]),
			    vo->stride[2], D, acc);
			kc_store_f(so->dtype, kc_at(so, so->offset + r * so->stride[0] + h * so->stride[1]),
			    1, 1, &lse);
		}
	free(acc);
	return MATE_OK;
}

/* ---- appending to a paged cache --------------------------------------------------- */

int
mate_append_paged_kv(const mate_tensor *append, const mate_tensor *cache, int hnd,
    const int64_t *batch_indices, const int64_t *positions, const int64_t *kv_indptr,
    int64_t batch, const int64_t *kv_indices, int64_t n_indices, mate_error *err)
{
	int64_t nnz = append->shape[0], P;
	mate_tensor c;
	size_t es;
	int rc;

	if (cache == NULL)
		return MATE_OK;
	if ((rc = kc_check(append, "append", cache->ndim - 1, 0, err)) != MATE_OK ||
	    (rc = kc_check(cache, "cache", cache->ndim == 3 ? 3 : 4, 1, err)) != MATE_OK)
		return rc;
	if (cache->ndim == 3)
		mla_view(cache, &c);
	else
		nhd_view(cache, hnd, &c);
	if (append->dtype != c.dtype)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "append: %s rows into a %s cache are "
		    "not replayed", mate_dtype_name(append->dtype), mate_dtype_name(c.dtype));
	for (int d = 1; d < append->ndim; d++)
		if ((rc = kc_check_dim(append, "append", d, c.shape[d + 4 - append->ndim], err)) != MATE_OK)
			return rc;
	P = c.shape[1];
	if (P <= 0 && nnz > 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "append: the cache's pages have no slots "
		    "(a page size of %lld)", (long long)P);
	for (int64_t i = 0; i < nnz; i++) {
		int64_t b = batch_indices[i], pos = positions[i];

		if (b < 0 || b >= batch || pos < 0 || kv_indptr[b] < 0 ||
		    kv_indptr[b + 1] > n_indices || pos / P >= kv_indptr[b + 1] - kv_indptr[b] ||
		    kv_indices[kv_indptr[b] + pos / P] < 0 || kv_indices[kv_indptr[b] + pos / P] >= c.shape[0])
			return mate_set_error(err, MATE_ERR_ARGUMENT, "append row %lld: request %lld, "
			    "position %lld is outside its pages", (long long)i, (long long)b, (long long)pos);
	}
	es = (size_t)mate_dtype_size(c.dtype);
	for (int64_t i = 0; i < nnz; i++) {
		int64_t pos = positions[i], page = kv_indices[kv_indptr[batch_indices[i]] + pos / P];

		for (int64_t h = 0; h < c.shape[2]; h++) {
			int64_t co = c.offset + page * c.stride[0] + (pos % P) * c.stride[1] + h * c.stride[2];
			int64_t ao = append->offset + i * append->stride[0] +
			    (append->ndim == 3 ? h * append->stride[1] : 0);
			int64_t as = append->stride[append->ndim - 1];

			for (int64_t e = 0; e < c.shape[3]; e++)
				memcpy(kc_at(&c, co + e * c.stride[3]), kc_at(append, ao + e * as), es);
		}
	}
	return MATE_OK;
}
