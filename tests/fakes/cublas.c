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

static float
bf16_to_float(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* f to a 16-bit type's bits, to nearest, ties to even (as cuBLAS stores a 16-bit C). */
static uint16_t
float_to_16(float f, int type)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if (type == CUDA_R_16F) {   /* by hand: not every compiler here has _Float16 */
		uint32_t sign = (u >> 16) & 0x8000, a = u & 0x7fffffff;
		int e = (int)(a >> 23) - 127 + 15;
		uint32_t m = a & 0x7fffff, h, rest, halfway;

		if (a > 0x7f800000)
			return (uint16_t)(sign | 0x7e00);            /* NaN */
		if (e >= 31)
			return (uint16_t)(sign | 0x7c00);            /* too large: infinity */
		if (e <= 0) {                                    /* subnormal, or zero */
			int shift = 14 - e;
			if (shift > 24)
				return (uint16_t)sign;
			m |= 0x800000;
			h = m >> shift;
			rest = m & ((1u << shift) - 1);
			halfway = 1u << (shift - 1);
		} else {
			h = (uint32_t)e << 10 | m >> 13;
			rest = m & 0x1fff;
			halfway = 0x1000;
		}
		if (rest > halfway || (rest == halfway && (h & 1)))
			h++;                                         /* may carry into infinity */
		return (uint16_t)(sign | h);
	}
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40);   /* a NaN stays one */
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* A stored matrix as f32 (a copy when it is f16 or bf16); NULL for other types. */
static const float *
as_f32(const void *p, int type, int64_t n, float **owned)
{
	*owned = NULL;
	if (type == CUDA_R_32F)
		return p;
	if ((type != CUDA_R_16F && type != CUDA_R_16BF) ||
	    (*owned = malloc((size_t)(n > 0 ? n : 1) * sizeof(float))) == NULL)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		(*owned)[i] = type == CUDA_R_16F ? half_to_float(((const uint16_t *)p)[i]) :
		    bf16_to_float(((const uint16_t *)p)[i]);
	return *owned;
}

static int64_t
extent(int trans, int rows, int cols, int ld)
{
	int64_t r = trans ? cols : rows, c = trans ? rows : cols;

	return r == 0 || c == 0 ? 0 : (c - 1) * (int64_t)ld + r;
}

/* x rounded to TF32 (10 bits of mantissa, to nearest, ties away from zero), as the
 * tensor cores take FP32 operands under CUBLAS_COMPUTE_32F_FAST_TF32. */
static float
to_tf32(float x)
{
	uint32_t u;

	memcpy(&u, &x, 4);
	if ((u & 0x7f800000u) != 0x7f800000u)   /* not inf or NaN */
		u = (u + 0x1000u) & ~0x1fffu;
	memcpy(&x, &u, 4);
	return x;
}

/* p's n elements as TF32 (a copy in *owned). */
static const float *
as_tf32(const float *p, int64_t n, float **owned)
{
	float *q = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));

	if (q == NULL)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		q[i] = to_tf32(p[i]);
	free(*owned);
	*owned = q;
	return q;
}

/* One product of a GemmEx-style call (CUBLAS_COMPUTE_32F_FAST_TF32: its operands rounded to
 * TF32 first, the sum in FP32, as the hardware does it). */
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
	if ((compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32) ||
	    (ct != CUDA_R_32F && ct != CUDA_R_16F && ct != CUDA_R_16BF))
		return STATUS_NOT_SUPPORTED;
	fa = as_f32(a, at, extent(ta != CUBLAS_OP_N, m, k, lda), &oa);
	fb = as_f32(b, bt, extent(tb != CUBLAS_OP_N, k, n, ldb), &ob);
	if (compute == CUBLAS_COMPUTE_32F_FAST_TF32 && fa != NULL && fb != NULL) {
		fa = as_tf32(fa, extent(ta != CUBLAS_OP_N, m, k, lda), &oa);
		fb = as_tf32(fb, extent(tb != CUBLAS_OP_N, k, n, ldb), &ob);
	}
	if (fa == NULL || fb == NULL) {
		free(oa);
		free(ob);
		return STATUS_NOT_SUPPORTED;
	}
	{
		/* a 16-bit C: summed in float, stored rounded */
		int64_t nc = extent(0, m, n, ldc);
		float *oc = NULL, *fc = c;
		if (ct != CUDA_R_32F)
			fc = (float *)as_f32(c, ct, nc, &oc);
		if (fc == NULL) {
			free(oa);
			free(ob);
			return STATUS_NOT_SUPPORTED;
		}
		cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, *(const float *)alpha, fa, lda,
		    fb, ldb, *(const float *)beta, fc, ldc);
		for (int64_t i = 0; oc != NULL && i < nc; i++)
			((uint16_t *)c)[i] = float_to_16(oc[i], ct);
		free(oc);
	}
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
