/* kernels_cuda_gemm.cu: CUDA matrix products through cuBLAS: mm, bmm, the fp8 GEMMs (cuBLASLt with its scales where the device has fp8) and recorded GEMM calls. */
#include "config.h"
#include "kernels_cuda.h"

#include <cublas_v2.h>
#include <cublasLt.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

/* One cuBLAS handle per thread and device (handles are not thread safe),
 * destroyed when the thread ends; a pthread key keeps libmate free of the
 * C++ runtime. */
struct handles {
	cublasHandle_t h[16];
};
static pthread_key_t handles_key;
static pthread_once_t handles_once = PTHREAD_ONCE_INIT;

static void
handles_free(void *p)
{
	struct handles *hs = (struct handles *)p;

	for (int i = 0; i < 16; i++)
		if (hs->h[i] != NULL)
			cublasDestroy(hs->h[i]);
	free(hs);
}

static void
handles_init(void)
{
	pthread_key_create(&handles_key, handles_free);
}

static cublasHandle_t
handle(kcu_call *c)
{
	struct handles *hs;
	int dev = 0;
	cublasHandle_t *h;

	if (c->rc != MATE_OK)
		return NULL;
	pthread_once(&handles_once, handles_init);
	cudaGetDevice(&dev);
	hs = (struct handles *)pthread_getspecific(handles_key);
	if (hs == NULL) {
		hs = (struct handles *)calloc(1, sizeof(*hs));
		if (hs == NULL || pthread_setspecific(handles_key, hs) != 0) {
			free(hs);
			c->rc = mate_set_error(c->err, MATE_ERR_NOMEM, "out of memory");
			return NULL;
		}
	}
	if (dev < 0 || dev >= 16) {
		c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED, "cuBLAS: device %d", dev);
		return NULL;
	}
	h = &hs->h[dev];
	if (*h == NULL) {
		if (cublasCreate(h) != CUBLAS_STATUS_SUCCESS) {
			*h = NULL;
			c->rc = mate_set_error(c->err, MATE_ERR_IO, "cublasCreate failed");
			return NULL;
		}
		/* no TF32: f32 products stay f32 */
		cublasSetMathMode(*h, CUBLAS_DEFAULT_MATH);
	}
	cublasSetStream(*h, c->stream);
	return *h;
}

static int
blas_ok(kcu_call *c, cublasStatus_t s, const char *what)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 1;
	if (c->rc == MATE_OK)
		c->rc = mate_set_error(c->err, MATE_ERR_IO, "%s: cuBLAS status %d", what, (int)s);
	return 0;
}

static cudaDataType_t
cuda_type(int dt)
{
	switch (dt) {
	case MATE_F16: return CUDA_R_16F;
	case MATE_BF16: return CUDA_R_16BF;
	case MATE_F64: return CUDA_R_64F;
	default: return CUDA_R_32F;
	}
}

/* ---- row-major batched products on staged contiguous tensors ------------------- */

struct rm_gemm {
	const kcu_dev *a, *b, *o;  /* (B, M, K), (B, K, N), (B, M, N) contiguous */
	int64_t batch, M, N, K;
	double alpha;
};

/* Makes x (n elements) an operand of dtype want, converting into scratch. */
static const void *
as_type(kcu_call *c, const kcu_dev *x, int want)
{
	void *p;

	if (x->dtype == want)
		return x->p;
	p = kcu_alloc(c, (size_t)x->n * mate_dtype_size((mate_dtype)want));
	if (p == NULL || !kcu_convert(c, x->p, x->dtype, p, want, x->n))
		return NULL;
	return p;
}

/* C = alpha A B row-major, as column-major C^T = B^T A^T. */
static void
rm_call(kcu_call *c, const rm_gemm *g, int ct, const void *A, const void *B, void *C)
{
	cublasHandle_t h = handle(c);
	int m = (int)g->M, n = (int)g->N, k = (int)g->K, nb = (int)g->batch;
	long long sa = g->M * g->K, sb = g->K * g->N, sc = g->M * g->N;

	if (h == NULL)
		return;
	if (ct == MATE_F64) {
		double al = g->alpha, be = 0;
		blas_ok(c, cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &al,
		    (const double *)B, n, sb, (const double *)A, k, sa, &be, (double *)C, n, sc, nb),
		    "cublasDgemmStridedBatched");
	} else {
		float al = (float)g->alpha, be = 0;
		blas_ok(c, cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &al,
		    B, cuda_type(ct), n, sb, A, cuda_type(ct), k, sa, &be, C, CUDA_R_32F, n, sc, nb,
		    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), "cublasGemmStridedBatchedEx");
	}
}

static int
rm_gemm_run(kcu_call *c, const rm_gemm *g)
{
	int dbl = g->a->dtype == MATE_F64 || g->b->dtype == MATE_F64;
	int acc = dbl ? MATE_F64 : MATE_F32;   /* accumulator / C dtype */
	int ct;                                 /* A and B dtype given to cuBLAS */
	const void *A, *B;
	void *C;

	if (g->M * g->N == 0 || g->batch == 0)
		return MATE_OK;
	if (g->M > INT_MAX || g->N > INT_MAX || g->K > INT_MAX || g->batch > INT_MAX)
		return c->rc = mate_set_error(c->err, MATE_ERR_LIMIT, "matrix too large for cuBLAS");
	if (!dbl && g->a->dtype == g->b->dtype &&
	    (g->a->dtype == MATE_F16 || g->a->dtype == MATE_BF16 || g->a->dtype == MATE_F32))
		ct = g->a->dtype;  /* cuBLAS takes these as they are */
	else
		ct = acc;
	A = as_type(c, g->a, ct);
	B = as_type(c, g->b, ct);
	C = g->o->dtype == acc ? g->o->p : kcu_alloc(c, (size_t)g->o->n * (dbl ? 8 : 4));
	if (A == NULL || B == NULL || C == NULL)
		return c->rc;
	if (g->K == 0)
		kcu_ok(c, cudaMemsetAsync(C, 0, (size_t)g->o->n * (dbl ? 8 : 4), c->stream), "cudaMemset");
	else
		rm_call(c, g, ct, A, B, C);
	if (C != g->o->p)
		kcu_convert(c, C, acc, g->o->p, g->o->dtype, g->o->n);
	return c->rc;
}

/* ---- fp8 through cuBLASLt ------------------------------------------------------ */

static int
is_fp8(int dt)
{
	return dt == MATE_F8_E4M3FN || dt == MATE_F8_E5M2;
}

static cudaDataType_t
lt_type(int dt)
{
	switch (dt) {
	case MATE_F8_E4M3FN: return CUDA_R_8F_E4M3;
	case MATE_F8_E5M2: return CUDA_R_8F_E5M2;
	default: return cuda_type(dt);
	}
}

/* A column-major layout rows x cols (ld rows) of batch matrices. */
static cublasLtMatrixLayout_t
lt_layout(int dt, int64_t rows, int64_t cols, int64_t batch)
{
	cublasLtMatrixLayout_t l = NULL;
	int32_t nb = (int32_t)batch;
	int64_t stride = rows * cols;

	if (cublasLtMatrixLayoutCreate(&l, lt_type(dt), (uint64_t)rows, (uint64_t)cols, rows) !=
	    CUBLAS_STATUS_SUCCESS)
		return NULL;
	if (batch > 1 &&
	    (cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb,
	    sizeof(nb)) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
	    &stride, sizeof(stride)) != CUBLAS_STATUS_SUCCESS)) {
		cublasLtMatrixLayoutDestroy(l);
		return NULL;
	}
	return l;
}

#define LT_WORKSPACE (4u << 20)

/* out (B, M, N) = (sa * A) (B, M, K) @ (sb * B) with B given transposed,
 * bt (B, N, K), all staged contiguous, sa and sb device floats: cuBLASLt's
 * fp8 "TN" product with its A and B scale pointers, as FlashInfer's cublas
 * backend calls it: in column major, out (N x M) = op_T(bt, K x N) times
 * a (K x M). 1 when done; 0 when cuBLASLt declines
 * (a device without fp8, a shape or alignment it does not take), with
 * nothing written and no error, so the caller computes it another way. */
static int
lt_fp8(kcu_call *c, const kcu_dev *a, const kcu_dev *bt, const kcu_dev *o, int64_t batch,
    int64_t M, int64_t N, int64_t K, const float *sa, const float *sb)
{
	cublasLtHandle_t lt = NULL;
	cublasLtMatmulDesc_t op = NULL;
	cublasLtMatrixLayout_t lx = NULL, ly = NULL, ld = NULL;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur;
	cublasOperation_t tt = CUBLAS_OP_T, tn = CUBLAS_OP_N;
	uint64_t wsize = LT_WORKSPACE;
	float one = 1, zero = 0;
	int found = 0, done = 0;
	void *ws;

	if (c->rc != MATE_OK || (ws = kcu_alloc(c, LT_WORKSPACE)) == NULL)
		return 0;
	if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS)
		return 0;
	if (cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tt, sizeof(tt)) ==
	    CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tn, sizeof(tn)) ==
	    CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sb,
	    sizeof(sb)) == CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sa,
	    sizeof(sa)) == CUBLAS_STATUS_SUCCESS &&
	    (lx = lt_layout(bt->dtype, K, N, batch)) != NULL &&
	    (ly = lt_layout(a->dtype, K, M, batch)) != NULL &&
	    (ld = lt_layout(o->dtype, N, M, batch)) != NULL &&
	    cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
	    &wsize, sizeof(wsize)) == CUBLAS_STATUS_SUCCESS &&
	    cublasLtMatmulAlgoGetHeuristic(lt, op, lx, ly, ld, ld, pref, 1, &heur, &found) ==
	    CUBLAS_STATUS_SUCCESS && found > 0)
		done = cublasLtMatmul(lt, op, &one, bt->p, lx, a->p, ly, &zero, o->p, ld, o->p, ld,
		    &heur.algo, ws, LT_WORKSPACE, c->stream) == CUBLAS_STATUS_SUCCESS;
	if (pref != NULL)
		cublasLtMatmulPreferenceDestroy(pref);
	if (ld != NULL)
		cublasLtMatrixLayoutDestroy(ld);
	if (ly != NULL)
		cublasLtMatrixLayoutDestroy(ly);
	if (lx != NULL)
		cublasLtMatrixLayoutDestroy(lx);
	if (op != NULL)
		cublasLtMatmulDescDestroy(op);
	cublasLtDestroy(lt);
	return done;
}

/* The fp8 product through cuBLASLt when a and b are fp8 (not both e5m2)
 * and out is bf16, f16 or f32: 1 when done, 0 to compute it otherwise. */
static int
try_lt_fp8(kcu_call *c, const mate_tensor *a, const mate_tensor *b, const kcu_dev *da,
    const kcu_dev *o, int nd, double x, double y)
{
	mate_tensor bt = *b;
	const kcu_dev *dbt;
	int d = nd - 2;
	int64_t batch = nd == 3 ? a->shape[0] : 1, M = a->shape[d], K = a->shape[d + 1];
	int64_t N = b->shape[d + 1];
	float sc[2] = { (float)x, (float)y };
	const float *dsc;

	if (!is_fp8(a->dtype) || !is_fp8(b->dtype) ||
	    (a->dtype == MATE_F8_E5M2 && b->dtype == MATE_F8_E5M2) ||
	    (o->dtype != MATE_BF16 && o->dtype != MATE_F16 && o->dtype != MATE_F32) ||
	    M * N * K == 0 || batch == 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX ||
	    batch > INT_MAX || K % 16 != 0 || N % 16 != 0)
		return 0;
	bt.shape[d] = b->shape[d + 1], bt.stride[d] = b->stride[d + 1];   /* (.., N, K) */
	bt.shape[d + 1] = b->shape[d], bt.stride[d + 1] = b->stride[d];
	if ((dbt = kcu_stage(c, &bt, 1, 0, "b^T")) == NULL ||
	    (dsc = (const float *)kcu_upload(c, sc, sizeof(sc))) == NULL)
		return 0;
	return lt_fp8(c, da, dbt, o, batch, M, N, K, dsc, dsc + 1);
}

/* Checks (.., M, K) @ (.., K, N) -> (.., M, N) with nd dims. */
static int
check_mm(kcu_call *c, const mate_tensor *a, const mate_tensor *b, const mate_tensor *o, int nd)
{
	const mate_tensor *ts[3] = { a, b, o };
	const char *names[3] = { "a", "b", "out" };
	int x = nd - 2;

	for (int i = 0; i < 3; i++) {
		if (ts[i] == NULL || ts[i]->ndim != nd)
			return KCU_ARG(c, "%s: expected %d dimensions", names[i], nd);
		if (!kcu_dtype_ok(ts[i]->dtype))
			return c->rc = mate_set_error(c->err, MATE_ERR_UNSUPPORTED,
			    "%s: dtype %s not supported", names[i], mate_dtype_name(ts[i]->dtype));
	}
	if ((nd == 3 && (b->shape[0] != a->shape[0] || o->shape[0] != a->shape[0])) ||
	    b->shape[x] != a->shape[x + 1] || o->shape[x] != a->shape[x] ||
	    o->shape[x + 1] != b->shape[x + 1])
		return KCU_ARG(c, "mm: shapes do not fit together");
	return MATE_OK;
}

static int
matmul(const mate_tensor *a, const mate_tensor *b, const mate_tensor *o, int nd,
    const mate_tensor *s1, const mate_tensor *s2, mate_error *err)
{
	kcu_call c;
	rm_gemm g;
	double x = 1, y = 1;
	int d = nd - 2;

	if (kcu_begin(&c, a, err) != MATE_OK || check_mm(&c, a, b, o, nd) != MATE_OK ||
	    !kcu_scalar(&c, s1, 1.0, &x, nd == 3 ? "A_scale" : "alpha") ||
	    !kcu_scalar(&c, s2, 1.0, &y, "B_scale"))
		return kcu_finish(&c);
	g.a = kcu_stage(&c, a, 1, 0, "a");
	g.o = kcu_stage(&c, o, 0, 1, "out");
	if (g.a != NULL && g.o != NULL && try_lt_fp8(&c, a, b, g.a, g.o, nd, x, y))
		return kcu_finish(&c);
	g.b = kcu_stage(&c, b, 1, 0, "b");
	g.batch = nd == 3 ? a->shape[0] : 1;
	g.M = a->shape[d], g.K = a->shape[d + 1], g.N = b->shape[d + 1];
	g.alpha = (double)((float)x * (float)y);
	if (c.rc == MATE_OK)
		rm_gemm_run(&c, &g);
	return kcu_finish(&c);
}

int
mate_cuda_mm(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out, mate_error *err)
{
	return matmul(a, b, out, 2, NULL, NULL, err);
}

int
mate_cuda_bmm(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out, mate_error *err)
{
	return matmul(a, b, out, 3, NULL, NULL, err);
}

int
mate_cuda_bmm_fp8(const mate_tensor *A, const mate_tensor *B, const mate_tensor *sa,
    const mate_tensor *sb, const mate_tensor *out, mate_error *err)
{
	return matmul(A, B, out, 3, sa, sb, err);
}

int
mate_cuda_mm_fp8(const mate_tensor *a, const mate_tensor *b, const mate_tensor *alpha,
    const mate_tensor *out, mate_error *err)
{
	return matmul(a, b, out, 2, alpha, NULL, err);
}

/* ---- recorded GEMM calls (column major as cuBLAS; row major swapped) ------------- */

static const cublasOperation_t ops[3] = { CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C };

/* The call on buffers of compute dtype ct (A, B) and C dtype cdt. */
static void
gemm_call(kcu_call *c, const mate_gemm_call *g, int ta, int tb, int ct, int cdt,
    const void *A, const void *B, void *C)
{
	cublasHandle_t h = handle(c);
	int rm = g->order == MATE_BLAS_ROW_MAJOR;
	int m = (int)(rm ? g->n : g->m), n = (int)(rm ? g->m : g->n), k = (int)g->k;
	int lda = (int)(rm ? g->ldb : g->lda), ldb = (int)(rm ? g->lda : g->ldb);
	long long sa = rm ? g->stride_b : g->stride_a, sb = rm ? g->stride_a : g->stride_b;
	const void *pa = rm ? B : A, *pb = rm ? A : B;
	cublasOperation_t oa = ops[rm ? tb : ta], ob = ops[rm ? ta : tb];
	int nb = (int)(g->batch > 1 ? g->batch : 1);

	if (h == NULL)
		return;
	if (ct == MATE_F64) {
		double al = g->alpha, be = g->beta;
		blas_ok(c, cublasDgemmStridedBatched(h, oa, ob, m, n, k, &al, (const double *)pa, lda,
		    sa, (const double *)pb, ldb, sb, &be, (double *)C, (int)g->ldc, g->stride_c, nb),
		    "cublasDgemmStridedBatched");
	} else {
		float al = (float)g->alpha, be = (float)g->beta;
		blas_ok(c, cublasGemmStridedBatchedEx(h, oa, ob, m, n, k, &al, pa, cuda_type(ct), lda,
		    sa, pb, cuda_type(ct), ldb, sb, &be, C, cuda_type(cdt), (int)g->ldc, g->stride_c,
		    nb, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), "cublasGemmStridedBatchedEx");
	}
}

int
mate_cuda_gemm(const mate_gemm_call *g, mate_error *err)
{
	kcu_call c;
	int ta, tb, ct, cdt;
	int64_t need[3];
	const kcu_dev *da, *db, *dc;
	const void *A, *B;
	void *C;

	if (kcu_begin(&c, g->a, err) != MATE_OK)
		return kcu_finish(&c);
	if ((c.rc = mate_gemm_check(g, &ta, &tb, need, err)) != MATE_OK)
		return kcu_finish(&c);
	if (g->a == NULL || g->b == NULL || g->c == NULL || !kcu_dtype_ok(g->a->dtype) ||
	    !kcu_dtype_ok(g->b->dtype) || !kcu_dtype_ok(g->c->dtype)) {
		KCU_ARG(&c, "gemm: A, B and C must be float tensors");
		return kcu_finish(&c);
	}
	if (g->fortran) {
		c.rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "gemm: Fortran BLAS is a CPU call");
		return kcu_finish(&c);
	}
	da = kcu_stage(&c, g->a, 1, 0, "A");
	db = kcu_stage(&c, g->b, 1, 0, "B");
	dc = kcu_stage(&c, g->c, 1, 1, "C");
	if (c.rc != MATE_OK)
		return kcu_finish(&c);
	if (da->n < need[0] || db->n < need[1] || dc->n < need[2]) {
		KCU_ARG(&c, "gemm: a buffer is shorter than its leading dimension needs");
		return kcu_finish(&c);
	}
	if (da->dtype == MATE_F64 || db->dtype == MATE_F64 || dc->dtype == MATE_F64)
		ct = cdt = MATE_F64;
	else if (da->dtype == db->dtype && (da->dtype == MATE_F16 || da->dtype == MATE_BF16 ||
	    da->dtype == MATE_F32) && (dc->dtype == da->dtype || dc->dtype == MATE_F32))
		ct = da->dtype, cdt = dc->dtype;   /* what cublasGemmEx takes as is */
	else
		ct = cdt = MATE_F32;
	A = as_type(&c, da, ct);
	B = as_type(&c, db, ct);
	C = (void *)as_type(&c, dc, cdt);
	if (c.rc == MATE_OK && g->m > 0 && g->n > 0)
		gemm_call(&c, g, ta, tb, ct, cdt, A, B, C);
	if (c.rc == MATE_OK && C != dc->p)
		kcu_convert(&c, C, cdt, dc->p, dc->dtype, dc->n);
	return kcu_finish(&c);
}
