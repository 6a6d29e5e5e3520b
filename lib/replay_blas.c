/* replay_blas.c: replay handlers for the BLAS and cuBLAS calls mate-record records (cblas_?gemm, ?gemm_, cublasSgemm_v2, cublasGemmEx, cublasGemmStridedBatchedEx). */
#include "mate_private.h"
#include "kernels.h"
#include "replay_blas.h"

#include <stdlib.h>
#include <string.h>

/* A recorded operand laid out again as the buffer the library saw: the
 * view's elements at their strided places in a zeroed buffer, so that the
 * recorded leading dimensions apply. */
struct flat {
	mate_tensor view;       /* the recorded view, on the flat buffer */
	mate_tensor buf;        /* the flat buffer as a 1-D tensor */
	void *data;
};

static int
flat_make(mate_replay_call *c, const mate_tensor *t, const char *what, struct flat *f)
{
	size_t es = mate_dtype_size(t->dtype);
	int64_t extent, numel = mate_tensor_numel(t);
	void *tmp;

	memset(f, 0, sizeof(*f));
	f->view = *t;
	f->view.offset = 0;
	if (es == 0 || numel < 0 || (extent = mate_tensor_storage_extent(&f->view)) < 0 ||
	    t->device_type != MATE_DEVICE_CPU)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: not a usable host tensor", what);
	if ((f->data = calloc((size_t)(extent > 0 ? extent : 1), es)) == NULL ||
	    (tmp = malloc((size_t)(numel > 0 ? numel : 1) * es)) == NULL) {
		free(f->data);
		f->data = NULL;
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", what);
	}
	mate_tensor_copy_contiguous(t, tmp);
	f->view.data = f->data;
	mate_tensor_scatter(&f->view, tmp);
	free(tmp);
	mate_tensor_init(&f->buf, t->dtype, 1, &extent, NULL, f->data);
	return MATE_OK;
}

/* Copies the result back into the recorded argument (compared in place). */
static int
flat_put(mate_replay_call *c, const struct flat *f, const mate_tensor *arg)
{
	size_t es = mate_dtype_size(arg->dtype);
	int64_t numel = mate_tensor_numel(arg);
	void *tmp = malloc((size_t)(numel > 0 ? numel : 1) * es);

	if (tmp == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "C: out of memory");
	mate_tensor_copy_contiguous(&f->view, tmp);
	mate_tensor_scatter(arg, tmp);
	free(tmp);
	return MATE_OK;
}

/* Where each argument of a recorded GEMM is: positions and keyword names. */
struct layout {
	int order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc;
	int sa, sb, sc, batch;          /* -1: not batched */
	const char *na, *nb, *nc;       /* keyword names of the operands */
	int fortran, cublas;
};

static int
get_trans(mate_replay_call *c, const struct layout *l, int pos, const char *name, int *out)
{
	const char *s;
	int64_t v;
	int rc;

	if (l->fortran) {
		if ((rc = mate_replay_arg_str(c, pos, name, NULL, &s)) != MATE_OK)
			return rc;
		if (s == NULL || strchr("NnTtCc", s[0]) == NULL || s[0] == '\0')
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: expected 'N', 'T' or 'C'", name);
		*out = s[0] >= 'a' ? s[0] - 'a' + 'A' : s[0];
		return MATE_OK;
	}
	if ((rc = mate_replay_arg_int(c, pos, name, -1, &v)) != MATE_OK)
		return rc;
	if (l->cublas && v >= 0 && v <= 2)
		*out = "NTC"[v];
	else if (!l->cublas && v >= MATE_BLAS_NO_TRANS && v <= MATE_BLAS_CONJ_TRANS)
		*out = (int)v;
	else
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: bad value %lld", name, (long long)v);
	return MATE_OK;
}

static int
get_ints(mate_replay_call *c, const struct layout *l, mate_gemm_call *g)
{
	int64_t order = MATE_BLAS_COL_MAJOR;
	int rc;

	if (l->order >= 0 && (rc = mate_replay_arg_int(c, l->order, "Order", -1, &order)) != MATE_OK)
		return rc;
	g->order = (int)order;
	if ((rc = get_trans(c, l, l->ta, l->fortran ? "transa" : "TransA", &g->transa)) != MATE_OK ||
	    (rc = get_trans(c, l, l->tb, l->fortran ? "transb" : "TransB", &g->transb)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->m, "m", -1, &g->m)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->n, "n", -1, &g->n)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->k, "k", -1, &g->k)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->lda, "lda", -1, &g->lda)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->ldb, "ldb", -1, &g->ldb)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->ldc, "ldc", -1, &g->ldc)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, l->alpha, "alpha", 1.0, &g->alpha)) != MATE_OK ||
	    (rc = mate_replay_arg_float(c, l->beta, "beta", 0.0, &g->beta)) != MATE_OK)
		return rc;
	if (l->batch >= 0 &&
	    ((rc = mate_replay_arg_int(c, l->sa, "strideA", 0, &g->stride_a)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->sb, "strideB", 0, &g->stride_b)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->sc, "strideC", 0, &g->stride_c)) != MATE_OK ||
	    (rc = mate_replay_arg_int(c, l->batch, "batchCount", 1, &g->batch)) != MATE_OK))
		return rc;
	return MATE_OK;
}

static const mate_kernels *
kernels_for(mate_replay_call *c, const struct layout *l)
{
#ifdef HAVE_CUDA
	if (l->cublas && mate_replay_call_device(c) == MATE_REPLAY_DEVICE_CUDA)
		return mate_kernels_cuda();
#else
	(void)c;
	(void)l;
#endif
	return mate_kernels_cpu();   /* BLAS calls replay bit-exactly on the CPU's BLAS */
}

static int
replay_gemm(mate_replay_call *c, void *ctx)
{
	const struct layout *l = ctx;
	const mate_tensor *a, *b, *cc;
	struct flat fa, fb, fc;
	mate_gemm_call g;
	mate_error err;
	int rc;

	memset(&g, 0, sizeof(g));
	g.fortran = l->fortran;
	if ((rc = get_ints(c, l, &g)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, l->a, l->na, 0, &a)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, l->b, l->nb, 0, &b)) != MATE_OK ||
	    (rc = mate_replay_arg_tensor(c, l->c, l->nc, 0, &cc)) != MATE_OK)
		return rc;
	if ((rc = flat_make(c, a, "A", &fa)) != MATE_OK)
		return rc;
	if ((rc = flat_make(c, b, "B", &fb)) != MATE_OK)
		goto out_a;
	if ((rc = flat_make(c, cc, "C", &fc)) != MATE_OK)
		goto out_b;
	g.a = &fa.buf;
	g.b = &fb.buf;
	g.c = &fc.buf;
	if ((rc = kernels_for(c, l)->gemm(&g, &err)) != MATE_OK)
		rc = mate_replay_fail(c, rc, "%s", err.message);
	else
		rc = flat_put(c, &fc, cc);
	free(fc.data);
out_b:
	free(fb.data);
out_a:
	free(fa.data);
	return rc;
}

/* cblas: (Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
static const struct layout cblas_layout = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1, "A", "B", "C", 0, 0,
};
/* Fortran: (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) */
static const struct layout f77_layout = {
	-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -1, -1, -1, "a", "b", "c", 1, 0,
};
/* (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) */
static const struct layout sgemm_layout = {
	-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1, "A", "B", "C", 0, 1,
};
/* (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
 *  ldc, computeType, algo) */
static const struct layout gemmex_layout = {
	-1, 1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 14, 16, -1, -1, -1, -1, "A", "B", "C", 0, 1,
};
/* (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
 *  beta, C, Ctype, ldc, strideC, batchCount, computeType, algo) */
static const struct layout batched_layout = {
	-1, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15, 16, 18, 10, 14, 19, 20, "A", "B", "C", 0, 1,
};

int
mate_replay_register_blas(mate_replay *r, mate_error *err)
{
	static const struct { const char *name; const struct layout *l; } h[] = {
		{ "cblas_sgemm", &cblas_layout }, { "cblas_dgemm", &cblas_layout },
		{ "sgemm_", &f77_layout }, { "dgemm_", &f77_layout },
		{ "cublasSgemm_v2", &sgemm_layout }, { "cublasGemmEx", &gemmex_layout },
		{ "cublasGemmStridedBatchedEx", &batched_layout },
	};
	int rc;

	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		if ((rc = mate_replay_register(r, NULL, h[i].name, replay_gemm, (void *)h[i].l, err))
		    != MATE_OK)
			return rc;
	return MATE_OK;
}
