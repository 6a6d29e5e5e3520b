/* replay_blas.c: replay handlers for the BLAS and cuBLAS calls mate-record records (cblas_?gemm, ?gemm_, cublasSgemm_v2, cublasGemmEx, cublasGemmStridedBatchedEx). */
#include "mate_private.h"
#include "kernels.h"
#include "replay_blas.h"
#include "blas_signatures.h"
#include "replay_private.h"

#include <stdlib.h>
#include <string.h>

/* A stored matrix as the call's arguments describe it: rows x cols with
 * leading dimension ld, column or row major, batch copies bstride apart. */
struct stored {
	int64_t rows, cols, ld, batch, bstride;
	int colmajor;
};

/* A recorded operand laid out again as the buffer the library saw: its
 * elements at the places the leading dimensions give, in a zeroed buffer.
 * The layout comes from the arguments, not from the tensor's strides, as
 * safetensors dumps keep contiguous copies. A tensor of another shape is
 * taken as the flat buffer itself (kernels.h's convention). */
struct flat {
	mate_tensor view;       /* the stored matrix, on the flat buffer */
	mate_tensor buf;        /* the flat buffer as a 1-D tensor */
	void *data;             /* NULL: the recorded tensor is used as it is */
	int matrix;             /* the recorded tensor has the stored matrix's shape */
};

static void
stored_view(const struct stored *s, mate_dtype dt, mate_tensor *t)
{
	int d = s->batch > 0;

	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->ndim = 2 + d;
	if (d) {
		t->shape[0] = s->batch;
		t->stride[0] = s->bstride;
	}
	t->shape[d] = s->rows;
	t->shape[d + 1] = s->cols;
	t->stride[d] = s->colmajor ? 1 : s->ld;
	t->stride[d + 1] = s->colmajor ? s->ld : 1;
}

static int
same_shape(const mate_tensor *a, const mate_tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return 0;
	return 1;
}

/* Whether t's elements sit where the stored matrix v puts them (size-1 dimensions'
 * strides aside): t is then the buffer the library saw, from its offset on. */
static int
same_layout(const mate_tensor *t, const mate_tensor *v)
{
	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] > 1 && t->stride[i] != v->stride[i])
			return 0;
	return 1;
}

static int
flat_make(mate_replay_call *c, const mate_tensor *t, const struct stored *s, const char *what,
    struct flat *f)
{
	size_t es = mate_dtype_size(t->dtype);
	int64_t extent, numel = mate_tensor_numel(t);

	memset(f, 0, sizeof(*f));
	if (es == 0 || numel < 0 || t->device_type != MATE_DEVICE_CPU)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: not a usable host tensor", what);
	stored_view(s, t->dtype, &f->view);
	if (s->rows < 0 || s->cols < 0 || s->ld < 0 || s->bstride < 0 || !same_shape(t, &f->view)) {
		f->view = f->buf = *t;
		return MATE_OK;
	}
	f->matrix = 1;
	if ((extent = mate_tensor_storage_extent(&f->view)) < 0)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the leading dimension overflows", what);
	if (same_layout(t, &f->view)) {
		/* a .pt dump keeps the strides: the kernel works on the recorded storage, as
		 * t itself reaches every element it touches (no copy, no first touch) */
		f->view.data = t->data;
		f->view.offset = t->offset;
		mate_tensor_init(&f->buf, t->dtype, 1, &extent, NULL, (char *)t->data +
		    t->offset * (int64_t)es);
		return MATE_OK;
	}
	if ((f->data = calloc((size_t)(extent > 0 ? extent : 1), es)) == NULL)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", what);
	f->view.data = f->data;
	mate_tensor_copy_view(&f->view, t);
	mate_tensor_init(&f->buf, t->dtype, 1, &extent, NULL, f->data);
	return MATE_OK;
}

/* Copies the result back into the recorded argument (compared in place). */
static int
flat_put(mate_replay_call *c, const struct flat *f, const mate_tensor *arg)
{
	if (f->data != NULL)   /* else the kernel wrote into the argument */
		mate_tensor_copy_view(arg, &f->view);
	return MATE_OK;
}

/* Where each argument of a recorded GEMM is: positions and keyword names. */
struct layout {
	int order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc;
	int sa, sb, sc, batch;          /* -1: not batched */
	const char *na, *nb, *nc;       /* keyword names of the operands */
	int fortran, cublas;
	int compute;                    /* cublasComputeType_t's position; -1: none */
};

/* The unit roundoff of the products a cuBLAS compute type makes, where its operands are
 * rounded on the way in or its sum is not FP32 (0: the operands' own): TF32 and FP16 keep
 * 10 bits of mantissa, BF16 7. A GEMM replayed in FP32 against a record made so differs by
 * that much, not by an FP32 sum's order. */
static double
compute_unit(int64_t ct)
{
	switch (ct) {
	case 2:         /* CUDA_R_16F, as CUDA 10 took the compute type */
	case 64:        /* CUBLAS_COMPUTE_16F */
	case 65:        /* CUBLAS_COMPUTE_16F_PEDANTIC */
	case 74:        /* CUBLAS_COMPUTE_32F_FAST_16F */
	case 77:        /* CUBLAS_COMPUTE_32F_FAST_TF32 */
		return 0x1p-11;
	case 75:        /* CUBLAS_COMPUTE_32F_FAST_16BF */
		return 0x1p-8;
	default:
		return 0;
	}
}

/* A transpose argument: 'N'/'T'/'C' (a string, as Fortran takes it), CBLAS's
 * 111..113, or cuBLAS's 0..2; *out gets what mate_gemm_call takes. */
static int
get_trans(mate_replay_call *c, const struct layout *l, int pos, const char *name, int *out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);
	const char *s;
	int64_t i;
	int rc;

	if (mate_value_kind_of(v) == MATE_V_STR) {
		s = mate_value_get_str(v, NULL);
		if (s == NULL || s[0] == '\0' || strchr("NnTtCc", s[0]) == NULL)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: expected 'N', 'T' or 'C'", name);
		*out = s[0] >= 'a' ? s[0] - 'a' + 'A' : s[0];
		return MATE_OK;
	}
	if ((rc = mate_replay_arg_int(c, pos, name, -1, &i)) != MATE_OK)
		return rc;
	if (l->cublas && i >= 0 && i <= 2)
		*out = "NTC"[i];
	else if (i >= MATE_BLAS_NO_TRANS && i <= MATE_BLAS_CONJ_TRANS)
		*out = (int)i;
	else
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: bad value %lld", name, (long long)i);
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

/* The stored shapes of A, B and C from the call's arguments. */
static void
stored_of(const mate_gemm_call *g, int batched, struct stored *a, struct stored *b,
    struct stored *c)
{
	int cm = g->order == MATE_BLAS_COL_MAJOR;
	int ta = g->transa != 'N' && g->transa != MATE_BLAS_NO_TRANS;
	int tb = g->transb != 'N' && g->transb != MATE_BLAS_NO_TRANS;
	int64_t nb = batched ? (g->batch > 0 ? g->batch : 0) : 0;

	*a = (struct stored){ ta ? g->k : g->m, ta ? g->m : g->k, g->lda, nb, g->stride_a, cm };
	*b = (struct stored){ tb ? g->n : g->k, tb ? g->k : g->n, g->ldb, nb, g->stride_b, cm };
	*c = (struct stored){ g->m, g->n, g->ldc, nb, g->stride_c, cm };
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
	struct stored sa[1], sb[1], sc[1];
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
	stored_of(&g, l->batch >= 0, sa, sb, sc);
	if ((rc = flat_make(c, a, sa, "A", &fa)) != MATE_OK)
		return rc;
	if ((rc = flat_make(c, b, sb, "B", &fb)) != MATE_OK)
		goto out_a;
	if ((rc = flat_make(c, cc, sc, "C", &fc)) != MATE_OK)
		goto out_b;
	g.a = &fa.buf;
	g.b = &fb.buf;
	g.c = &fc.buf;
	/* another BLAS (the program's own: torch's, MKL) sums in another order */
	if (fa.matrix && fb.matrix && fc.matrix) {
		int64_t ct = -1;
		mate_replay_set_reduction_gemm(c, a, g.transa != 'N' && g.transa != MATE_BLAS_NO_TRANS,
		    b, g.transb != 'N' && g.transb != MATE_BLAS_NO_TRANS, g.alpha, g.beta);
		/* the record's own arithmetic: TF32, FP16, BF16 products */
		if (l->compute >= 0 && (mate_value_kind_of(mate_replay_arg(c, l->compute,
		    "computeType")) == MATE_V_INT || mate_value_kind_of(mate_replay_arg(c,
		    l->compute, "computeType")) == MATE_V_ENUM))
			ct = mate_value_get_int(mate_replay_arg(c, l->compute, "computeType"));
		mate_replay_set_reduction_unit(c, compute_unit(ct));
	}
	/* C is compared in place: the recorder saved its new value under its key */
	if ((rc = kernels_for(c, l)->gemm(&g, &err)) != MATE_OK)
		rc = mate_replay_fail(c, rc, "%s: %s", mate_replay_call_function(c), err.message);
	else if ((rc = flat_put(c, &fc, cc)) == MATE_OK)
		rc = mate_replay_return(c, mate_value_none());
	free(fc.data);
out_b:
	free(fb.data);
out_a:
	free(fa.data);
	return rc;
}

/* cblas: (Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
static const struct layout cblas_layout = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1, "A", "B", "C", 0, 0, -1,
};
/* Fortran: (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) */
static const struct layout f77_layout = {
	-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -1, -1, -1, "a", "b", "c", 1, 0, -1,
};
/* (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) */
static const struct layout sgemm_layout = {
	-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1, "A", "B", "C", 0, 1, -1,
};
/* (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
 *  ldc, computeType, algo) */
static const struct layout gemmex_layout = {
	-1, 1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 14, 16, -1, -1, -1, -1, "A", "B", "C", 0, 1, 17,
};
/* (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
 *  beta, C, Ctype, ldc, strideC, batchCount, computeType, algo) */
static const struct layout batched_layout = {
	-1, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15, 16, 18, 10, 14, 19, 20, "A", "B", "C", 0, 1, 21,
};

int
mate_replay_register_blas(mate_replay *r, mate_error *err)
{
	/* mate-replay --shrink cuts the GEMMs by rows of A and columns of B, K kept, their
	 * sizes and leading dimensions rebuilt (replay_shrink.c's "@blas"); not a batch */
	static const struct { const char *name, *sig; const struct layout *l; const char *slice; } h[] = {
		{ "cblas_sgemm", MATE_SIG_CBLAS_GEMM, &cblas_layout, "@blas" },
		{ "cblas_dgemm", MATE_SIG_CBLAS_GEMM, &cblas_layout, "@blas" },
		{ "sgemm_", MATE_SIG_F77_GEMM, &f77_layout, "@blas" },
		{ "dgemm_", MATE_SIG_F77_GEMM, &f77_layout, "@blas" },
		{ "cublasSgemm_v2", MATE_SIG_CUBLAS_SGEMM, &sgemm_layout, "@blas" },
		{ "cublasSgemm", MATE_SIG_CUBLAS_SGEMM, &sgemm_layout, "@blas" },
		{ "cublasGemmEx", MATE_SIG_CUBLAS_GEMMEX, &gemmex_layout, "@blas" },
		{ "cublasGemmStridedBatchedEx", MATE_SIG_CUBLAS_BATCHED, &batched_layout, NULL },
	};
	int rc;

	/* the signatures mate-record records them with (blas_signatures.h) */
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		if ((rc = mate_replay_register_signature(r, NULL, h[i].name, h[i].sig, replay_gemm,
		    (void *)h[i].l, err)) != MATE_OK)
			return rc;
		mate_replay_set_slice(r, h[i].slice);
	}
	return MATE_OK;
}
