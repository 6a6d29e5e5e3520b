/* cublas.c: a test-only libcublas.so.13 computing on the CPU through CBLAS (column major), so that a replay through the same BLAS is bit-exact. */
#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

enum { STATUS_SUCCESS = 0, STATUS_INVALID_VALUE = 7, STATUS_NOT_SUPPORTED = 15 };

struct fake_cublas {
	cudaStream_t stream;
	int mode;
};

cublasStatus_t
cublasCreate_v2(cublasHandle_t *h)
{
	return (*h = calloc(1, sizeof(**h))) != NULL ? STATUS_SUCCESS : 3;
}

cublasStatus_t
cublasDestroy_v2(cublasHandle_t h)
{
	free(h);
	return STATUS_SUCCESS;
}

cublasStatus_t
cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
	h->stream = s;
	return STATUS_SUCCESS;
}

cublasStatus_t
cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s)
{
	*s = h->stream;
	return STATUS_SUCCESS;
}

cublasStatus_t
cublasSetPointerMode_v2(cublasHandle_t h, int mode)
{
	h->mode = mode;
	return STATUS_SUCCESS;
}

cublasStatus_t
cublasGetPointerMode_v2(cublasHandle_t h, int *mode)
{
	*mode = h->mode;
	return STATUS_SUCCESS;
}

static CBLAS_TRANSPOSE
op(int t)
{
	return t == CUBLAS_OP_N ? CblasNoTrans : t == CUBLAS_OP_T ? CblasTrans : CblasConjTrans;
}

cublasStatus_t
cublasSgemm_v2(cublasHandle_t h, int ta, int tb, int m, int n, int k, const float *alpha,
    const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc)
{
	(void)h;
	if (m < 0 || n < 0 || k < 0)
		return STATUS_INVALID_VALUE;
	cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
	return STATUS_SUCCESS;
}

static float
half_to_float(uint16_t v)
{
	int e = (v >> 10) & 0x1f, m = v & 0x3ff;
	float f = e == 0 ? m * 0x1p-24f : e == 31 ? (m ? __builtin_nanf("") : __builtin_inff())
	    : (float)((1024 + m) * 0x1p-25 * (double)(1u << e));

	return (v & 0x8000) ? -f : f;
}

/* A stored matrix as f32 (a copy when it is f16); NULL for other types. */
static const float *
as_f32(const void *p, int type, int64_t n, float **owned)
{
	*owned = NULL;
	if (type == CUDA_R_32F)
		return p;
	if (type != CUDA_R_16F || (*owned = malloc((size_t)(n > 0 ? n : 1) * sizeof(float))) == NULL)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		(*owned)[i] = half_to_float(((const uint16_t *)p)[i]);
	return *owned;
}

static int64_t
extent(int trans, int rows, int cols, int ld)
{
	int64_t r = trans ? cols : rows, c = trans ? rows : cols;

	return r == 0 || c == 0 ? 0 : (c - 1) * (int64_t)ld + r;
}

/* One product of a GemmEx-style call. */
static cublasStatus_t
gemm_ex(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha,
    const void *a, int at, int lda, const void *b, int bt, int ldb, const void *beta, void *c,
    int ct, int ldc, int compute)
{
	float *oa, *ob;
	const float *fa, *fb;

	if (h == NULL || (h->mode != CUBLAS_POINTER_MODE_HOST && h->mode != CUBLAS_POINTER_MODE_DEVICE))
		return STATUS_INVALID_VALUE;
	if (compute == CUBLAS_COMPUTE_64F && at == CUDA_R_64F && bt == CUDA_R_64F && ct == CUDA_R_64F) {
		cblas_dgemm(CblasColMajor, op(ta), op(tb), m, n, k, *(const double *)alpha, a, lda, b,
		    ldb, *(const double *)beta, c, ldc);
		return STATUS_SUCCESS;
	}
	if (compute != CUBLAS_COMPUTE_32F || ct != CUDA_R_32F)
		return STATUS_NOT_SUPPORTED;
	fa = as_f32(a, at, extent(ta != CUBLAS_OP_N, m, k, lda), &oa);
	fb = as_f32(b, bt, extent(tb != CUBLAS_OP_N, k, n, ldb), &ob);
	if (fa == NULL || fb == NULL) {
		free(oa);
		free(ob);
		return STATUS_NOT_SUPPORTED;
	}
	cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, *(const float *)alpha, fa, lda, fb, ldb,
	    *(const float *)beta, c, ldc);
	free(oa);
	free(ob);
	return STATUS_SUCCESS;
}

cublasStatus_t
cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha,
    const void *a, int at, int lda, const void *b, int bt, int ldb, const void *beta, void *c,
    int ct, int ldc, int compute, int algo)
{
	(void)algo;
	return gemm_ex(h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute);
}

static size_t
type_size(int t)
{
	return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const void *alpha, const void *a, int at, int lda, long long sa, const void *b, int bt,
    int ldb, long long sb, const void *beta, void *c, int ct, int ldc, long long sc, int batch,
    int compute, int algo)
{
	(void)algo;
	for (int i = 0; i < batch; i++) {
		cublasStatus_t st = gemm_ex(h, ta, tb, m, n, k, alpha,
		    (const char *)a + i * sa * (long long)type_size(at), at, lda,
		    (const char *)b + i * sb * (long long)type_size(bt), bt, ldb, beta,
		    (char *)c + i * sc * (long long)type_size(ct), ct, ldc, compute);
		if (st != STATUS_SUCCESS)
			return st;
	}
	return STATUS_SUCCESS;
}
