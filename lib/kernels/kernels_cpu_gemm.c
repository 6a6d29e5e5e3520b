/* kernels_cpu_gemm.c: CPU matrix products through OpenBLAS: mm, bmm, the fp8 GEMMs, the block-scaled GEMMs' row-scaled product and recorded BLAS calls. */
#include "kernels_cpu.h"
#include "kernels_fi.h"
#include "blas.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A rows x cols matrix at base with element strides s0, s1. */
struct mat {
	mate_dtype dt;
	char *base;
	int64_t rows, cols, s0, s1;
};

/* A BLAS operand: row-major data, transposed or not, leading dimension. */
struct opnd {
	void *p;
	int trans;
	int ld;
	void *owned;
};

static struct mat
mat_of(const mate_tensor *t, int64_t off, int d0)
{
	struct mat m = { t->dtype, kc_at(t, off), t->shape[d0], t->shape[d0 + 1],
		t->stride[d0], t->stride[d0 + 1] };
	return m;
}

static int64_t
max1(int64_t v)
{
	return v > 1 ? v : 1;
}

/* Can the matrix go to BLAS as it is (row-major, maybe transposed)? */
static int
blas_view(const struct mat *m, struct opnd *o)
{
	if ((m->s1 == 1 || m->cols == 1) && (m->rows == 1 || m->s0 >= max1(m->cols))) {
		o->trans = 0;
		o->ld = (int)(m->rows == 1 ? max1(m->cols) : m->s0);
		return m->rows == 1 || m->s0 <= INT_MAX;
	}
	if ((m->s0 == 1 || m->rows == 1) && (m->cols == 1 || m->s1 >= max1(m->rows))) {
		o->trans = 1;
		o->ld = (int)(m->cols == 1 ? max1(m->rows) : m->s1);
		return m->cols == 1 || m->s1 <= INT_MAX;
	}
	return 0;
}

/* Makes m a BLAS operand of dtype F32 (dbl: F64), widening into scratch
 * when it is another dtype or a layout BLAS cannot take. */
static int
operand(const struct mat *m, int dbl, struct opnd *o, mate_error *err)
{
	memset(o, 0, sizeof(*o));
	if (m->dt == (dbl ? MATE_F64 : MATE_F32) && blas_view(m, o)) {
		o->p = m->base;
		return MATE_OK;
	}
	o->owned = kc_alloc(m->rows * m->cols, dbl ? 8 : 4, err);
	if (o->owned == NULL)
		return MATE_ERR_NOMEM;
	if (dbl)
		kc_gather_d(m->dt, m->base, m->rows, m->cols, m->s0, m->s1, o->owned);
	else
		kc_gather_f(m->dt, m->base, m->rows, m->cols, m->s0, m->s1, o->owned);
	o->p = o->owned;
	o->trans = 0;
	o->ld = (int)max1(m->cols);
	return MATE_OK;
}

static CBLAS_TRANSPOSE
tr(int t)
{
	return t ? CblasTrans : CblasNoTrans;
}

static void
blas_rm(const struct mate_blas *bl, int dbl, int ta, int tb, int m, int n, int k, double alpha,
    const void *a, int lda, const void *b, int ldb, void *c, int ldc)
{
	if (dbl)
		bl->cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), m, n, k, alpha, a, lda, b, ldb,
		    0.0, c, ldc);
	else
		bl->cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), m, n, k, (float)alpha, a, lda, b, ldb,
		    0.0f, c, ldc);
}

/* c = alpha * a @ b with a (M, K), b (K, N), c (M, N). */
static int
matmul(const struct mat *a, const struct mat *b, const struct mat *c, double alpha,
    mate_error *err)
{
	int dbl = a->dt == MATE_F64 || b->dt == MATE_F64;
	int64_t M = a->rows, K = a->cols, N = b->cols;
	struct opnd oa, ob, oc = { 0 };
	const struct mate_blas *bl;
	int rc;

	if (M == 0 || N == 0)
		return MATE_OK;
	if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
		return mate_set_error(err, MATE_ERR_LIMIT, "matrix too large for BLAS");
	if ((bl = mate_blas(err)) == NULL)
		return MATE_ERR_UNSUPPORTED;
	if ((rc = operand(a, dbl, &oa, err)) != MATE_OK)
		return rc;
	if ((rc = operand(b, dbl, &ob, err)) != MATE_OK) {
		free(oa.owned);
		return rc;
	}
	if (c->dt == (dbl ? MATE_F64 : MATE_F32) && blas_view(c, &oc) && K > 0) {
		if (!oc.trans)  /* C row-major */
			blas_rm(bl, dbl, oa.trans, ob.trans, (int)M, (int)N, (int)K, alpha,
			    oa.p, oa.ld, ob.p, ob.ld, c->base, oc.ld);
		else            /* C column-major: C^T = B^T A^T */
			blas_rm(bl, dbl, !ob.trans, !oa.trans, (int)N, (int)M, (int)K, alpha,
			    ob.p, ob.ld, oa.p, oa.ld, c->base, oc.ld);
	} else if ((oc.owned = kc_alloc(M * N, dbl ? 8 : 4, err)) == NULL) {
		rc = MATE_ERR_NOMEM;
	} else {
		if (K > 0)
			blas_rm(bl, dbl, oa.trans, ob.trans, (int)M, (int)N, (int)K, alpha,
			    oa.p, oa.ld, ob.p, ob.ld, oc.owned, (int)N);
		else
			memset(oc.owned, 0, (size_t)(M * N) * (dbl ? 8 : 4));
		if (dbl)
			kc_scatter_d(c->dt, c->base, M, N, c->s0, c->s1, oc.owned);
		else
			kc_scatter_f(c->dt, c->base, M, N, c->s0, c->s1, oc.owned);
	}
	free(oa.owned);
	free(ob.owned);
	free(oc.owned);
	return rc;
}

/* Checks a (.., M, K) @ b (.., K, N) -> out (.., M, N) with nd dims each. */
static int
check_mm(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out, int nd,
    mate_error *err)
{
	int rc, o = nd - 2;

	if ((rc = kc_check(a, "a", nd, 0, err)) != MATE_OK ||
	    (rc = kc_check(b, "b", nd, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", nd, 1, err)) != MATE_OK)
		return rc;
	if (nd == 3 && ((rc = kc_check_dim(b, "b", 0, a->shape[0], err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, a->shape[0], err)) != MATE_OK))
		return rc;
	if ((rc = kc_check_dim(b, "b", o, a->shape[o + 1], err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", o, a->shape[o], err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", o + 1, b->shape[o + 1], err)) != MATE_OK)
		return rc;
	return MATE_OK;
}

static int
batched(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out, double alpha,
    mate_error *err)
{
	int rc = MATE_OK;

	for (int64_t i = 0; i < a->shape[0] && rc == MATE_OK; i++) {
		struct mat ma = mat_of(a, a->offset + i * a->stride[0], 1);
		struct mat mb = mat_of(b, b->offset + i * b->stride[0], 1);
		struct mat mc = mat_of(out, out->offset + i * out->stride[0], 1);
		rc = matmul(&ma, &mb, &mc, alpha, err);
	}
	return rc;
}

int
mate_cpu_mm(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out,
    mate_error *err)
{
	struct mat ma, mb, mc;
	int rc;

	if ((rc = check_mm(a, b, out, 2, err)) != MATE_OK)
		return rc;
	ma = mat_of(a, a->offset, 0);
	mb = mat_of(b, b->offset, 0);
	mc = mat_of(out, out->offset, 0);
	return matmul(&ma, &mb, &mc, 1.0, err);
}

int
mate_cpu_bmm(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out,
    mate_error *err)
{
	int rc;

	if ((rc = check_mm(a, b, out, 3, err)) != MATE_OK)
		return rc;
	return batched(a, b, out, 1.0, err);
}

int
mate_cpu_bmm_fp8(const mate_tensor *A, const mate_tensor *B, const mate_tensor *sa,
    const mate_tensor *sb, const mate_tensor *out, mate_error *err)
{
	double da, db;
	int rc;

	if ((rc = check_mm(A, B, out, 3, err)) != MATE_OK ||
	    (rc = mate_kernel_scalar(sa, 1.0, &da, "A_scale", err)) != MATE_OK ||
	    (rc = mate_kernel_scalar(sb, 1.0, &db, "B_scale", err)) != MATE_OK)
		return rc;
	/* the scales multiply the f32 accumulator: alpha = A_scale * B_scale */
	return batched(A, B, out, (double)((float)da * (float)db), err);
}

int
mate_cpu_mm_fp8(const mate_tensor *a, const mate_tensor *b, const mate_tensor *alpha,
    const mate_tensor *out, mate_error *err)
{
	struct mat ma, mb, mc;
	double al;
	int rc;

	if ((rc = check_mm(a, b, out, 2, err)) != MATE_OK ||
	    (rc = mate_kernel_scalar(alpha, 1.0, &al, "alpha", err)) != MATE_OK)
		return rc;
	ma = mat_of(a, a->offset, 0);
	mb = mat_of(b, b->offset, 0);
	mc = mat_of(out, out->offset, 0);
	return matmul(&ma, &mb, &mc, (double)(float)al, err);
}

int
mate_cpu_mm_row_scaled(const mate_tensor *a, const mate_tensor *b, const mate_tensor *alpha,
    const mate_tensor *out, mate_error *err)
{
	struct mat ma, mb, mc;
	int64_t M, N, na;
	float *acc;
	int rc;

	if ((rc = check_mm(a, b, out, 2, err)) != MATE_OK)
		return rc;
	M = a->shape[0];
	N = b->shape[1];
	na = alpha != NULL ? mate_tensor_numel(alpha) : 0;
	if (alpha != NULL && (alpha->device_type != MATE_DEVICE_CPU || alpha->data == NULL ||
	    mate_dtype_kind(alpha->dtype) != MATE_KIND_FLOAT || (na != 1 && na != M)))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "alpha: expected a host float tensor of "
		    "one element or of %lld (one a row), got %lld elements of %s", (long long)M,
		    (long long)na, mate_dtype_name(alpha->dtype));
	if ((acc = kc_alloc(M * N > 0 ? M * N : 1, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	ma = mat_of(a, a->offset, 0);
	mb = mat_of(b, b->offset, 0);
	mc = (struct mat){ MATE_F32, (char *)acc, M, N, N, 1 };
	if ((rc = matmul(&ma, &mb, &mc, 1.0, err)) == MATE_OK) {
		if (a->shape[1] == 0)
			memset(acc, 0, (size_t)(M * N) * sizeof(float));
		for (int64_t i = 0; i < M && alpha != NULL; i++) {   /* the epilogue's float product */
			float s = (float)mate_load_f64(alpha->dtype, mate_tensor_element(alpha,
			    na == 1 ? 0 : i));

			for (int64_t j = 0; j < N; j++)
				acc[i * N + j] *= s;
		}
		kc_scatter_f(out->dtype, kc_at(out, out->offset), M, N, out->stride[0],
		    out->stride[1], acc);
	}
	free(acc);
	return rc;
}

/* ---- recorded GEMM calls ---------------------------------------------------- */

/* A recorded buffer as a flat array of the compute dtype. */
struct flat {
	void *p;
	void *owned;
	int64_t n;
};

static int
flat_get(const mate_tensor *t, const char *what, int dbl, int64_t need, struct flat *f,
    mate_error *err)
{
	mate_dtype want = dbl ? MATE_F64 : MATE_F32;
	int64_t n = mate_tensor_numel(t);
	char *src;

	memset(f, 0, sizeof(*f));
	if (t == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: missing buffer", what);
	if (t->device_type != MATE_DEVICE_CPU || !kc_is_float(t->dtype) ||
	    mate_tensor_storage_extent(t) < 0 || (t->data == NULL && n > 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "%s: not a usable host float tensor", what);
	if (n < need)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "%s: %lld elements, the leading dimensions need %lld", what,
		    (long long)n, (long long)need);
	f->n = n;
	if (t->dtype == want && mate_tensor_is_contiguous(t)) {
		f->p = kc_at(t, t->offset);
		return MATE_OK;
	}
	if ((f->owned = kc_alloc(n, dbl ? 8 : 4, err)) == NULL)
		return MATE_ERR_NOMEM;
	src = kc_at(t, t->offset);
	if (!mate_tensor_is_contiguous(t)) {
		if ((src = kc_alloc(n, mate_dtype_size(t->dtype), err)) == NULL) {
			free(f->owned);
			return MATE_ERR_NOMEM;
		}
		mate_tensor_copy_contiguous(t, src);
	}
	if (dbl)
		kc_load_d(t->dtype, src, 1, n, f->owned);
	else
		kc_load_f(t->dtype, src, 1, n, f->owned);
	if (src != kc_at(t, t->offset))
		free(src);
	f->p = f->owned;
	return MATE_OK;
}

/* Writes the computed C back into the recorded tensor when it was copied. */
static int
flat_put(const mate_tensor *t, int dbl, const struct flat *f, mate_error *err)
{
	char *tmp;

	if (f->owned == NULL)
		return MATE_OK;
	if ((tmp = kc_alloc(f->n, mate_dtype_size(t->dtype), err)) == NULL)
		return MATE_ERR_NOMEM;
	if (dbl)
		kc_store_d(t->dtype, tmp, 1, f->n, f->owned);
	else
		kc_store_f(t->dtype, tmp, 1, f->n, f->owned);
	mate_tensor_scatter(t, tmp);
	free(tmp);
	return MATE_OK;
}

static const char trans_char[3] = { 'N', 'T', 'C' };
static const CBLAS_TRANSPOSE trans_cblas[3] = { CblasNoTrans, CblasTrans, CblasConjTrans };

/* One product of the call on flat buffers. */
static void
gemm_one(const struct mate_blas *bl, const mate_gemm_call *g, int dbl, int ta, int tb, const char *a, const char *b,
    char *c)
{
	blasint m = (blasint)g->m, n = (blasint)g->n, k = (blasint)g->k;
	blasint lda = (blasint)g->lda, ldb = (blasint)g->ldb, ldc = (blasint)g->ldc;
	CBLAS_ORDER order = g->order == MATE_BLAS_ROW_MAJOR ? CblasRowMajor : CblasColMajor;
	char cta = trans_char[ta], ctb = trans_char[tb];

	if (dbl && g->fortran) {
		double al = g->alpha, be = g->beta;
		bl->dgemm_(&cta, &ctb, &m, &n, &k, &al, (double *)a, &lda, (double *)b, &ldb, &be,
		    (double *)c, &ldc);
	} else if (dbl) {
		bl->cblas_dgemm(order, trans_cblas[ta], trans_cblas[tb], m, n, k, g->alpha,
		    (const double *)a, lda, (const double *)b, ldb, g->beta, (double *)c, ldc);
	} else if (g->fortran) {
		float al = (float)g->alpha, be = (float)g->beta;
		bl->sgemm_(&cta, &ctb, &m, &n, &k, &al, (float *)a, &lda, (float *)b, &ldb, &be,
		    (float *)c, &ldc);
	} else {
		bl->cblas_sgemm(order, trans_cblas[ta], trans_cblas[tb], m, n, k, (float)g->alpha,
		    (const float *)a, lda, (const float *)b, ldb, (float)g->beta, (float *)c, ldc);
	}
}

int
mate_cpu_gemm(const mate_gemm_call *g, mate_error *err)
{
	int ta, tb, dbl, rc;
	int64_t need[3], nb = g->batch > 1 ? g->batch : 1;
	const struct mate_blas *bl;
	struct flat fa, fb, fc;

	if ((rc = mate_gemm_check(g, &ta, &tb, need, err)) != MATE_OK)
		return rc;
	if (g->c != NULL && !mate_kernel_out_dtype_ok(g->c->dtype))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "C: dtype %s not writable",
		    mate_dtype_name(g->c->dtype));
	if ((bl = mate_blas(err)) == NULL)
		return MATE_ERR_UNSUPPORTED;
	dbl = (g->a != NULL && g->a->dtype == MATE_F64) ||
	    (g->b != NULL && g->b->dtype == MATE_F64) || (g->c != NULL && g->c->dtype == MATE_F64);
	if ((rc = flat_get(g->a, "A", dbl, need[0], &fa, err)) != MATE_OK)
		return rc;
	if ((rc = flat_get(g->b, "B", dbl, need[1], &fb, err)) != MATE_OK)
		goto out_a;
	if ((rc = flat_get(g->c, "C", dbl, need[2], &fc, err)) != MATE_OK)
		goto out_b;
	for (int64_t i = 0; i < nb; i++)
		gemm_one(bl, g, dbl, ta, tb, (char *)fa.p + i * g->stride_a * (dbl ? 8 : 4),
		    (char *)fb.p + i * g->stride_b * (dbl ? 8 : 4),
		    (char *)fc.p + i * g->stride_c * (dbl ? 8 : 4));
	rc = flat_put(g->c, dbl, &fc, err);
	free(fc.owned);
out_b:
	free(fb.owned);
out_a:
	free(fa.owned);
	return rc;
}
