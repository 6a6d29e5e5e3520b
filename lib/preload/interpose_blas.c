/* interpose_blas.c: the preload's BLAS entry points: cblas_sgemm, cblas_dgemm and Fortran sgemm_, dgemm_, recorded with every argument. */
#include "interpose_private.h"
#include "blas_signatures.h"

#include <stddef.h>

/* CBLAS's enum values (cblas.h), so that the recorded arguments replay as they are. */
enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112, CONJ_TRANS = 113 };

static const char cblas_sig[] = MATE_SIG_CBLAS_GEMM;
static const char f77_sig[] = MATE_SIG_F77_GEMM;

static const char *
trans_name(int t)
{
	return t == NO_TRANS ? "CBLAS_TRANSPOSE.CblasNoTrans" : t == TRANS ?
	    "CBLAS_TRANSPOSE.CblasTrans" : "CBLAS_TRANSPOSE.CblasConjTrans";
}

/* The operands of a GEMM call as strided tensors. */
static void
gemm_operands(mate_dtype dt, int colmajor, int ta, int tb, int64_t m, int64_t n, int64_t k,
    const void *a, int64_t lda, const void *b, int64_t ldb, const void *c, int64_t ldc,
    mate_tensor out[3])
{
	mate_ip_matrix(&out[0], dt, colmajor, ta ? k : m, ta ? m : k, lda, 0, 0, a);
	mate_ip_matrix(&out[1], dt, colmajor, tb ? n : k, tb ? k : n, ldb, 0, 0, b);
	mate_ip_matrix(&out[2], dt, colmajor, m, n, ldc, 0, 0, c);
}

/* alpha or beta, a float or a double by dt. */
static double
scalar(mate_dtype dt, const void *p)
{
	return dt == MATE_F32 ? *(const float *)p : *(const double *)p;
}

/* The arguments both interfaces record after the transposes: m, n, k, alpha, A, lda, B, ldb,
 * beta, C (written in place), ldc; named as the interface's signature names them (M, N, K,
 * A, B, C of CBLAS, m, n, k, a, b, c of Fortran's) for MATE_LOG_EXTRA's log. */
static void
gemm_args(mate_call *c, mate_dtype dt, int cblas, int64_t m, int64_t n, int64_t k,
    const void *alpha, const mate_tensor t[3], int64_t lda, int64_t ldb, const void *beta,
    int64_t ldc)
{
	static const char *const names[2][6] = { { "m", "n", "k", "a", "b", "c" },
	    { "M", "N", "K", "A", "B", "C" } };
	const char *const *nm = names[cblas != 0];
	const struct ip_api *api = &mate_ip_api;

	api->call_int(c, MATE_ARG, nm[0], m);
	api->call_int(c, MATE_ARG, nm[1], n);
	api->call_int(c, MATE_ARG, nm[2], k);
	api->call_float(c, MATE_ARG, "alpha", scalar(dt, alpha));
	api->call_tensor(c, MATE_ARG, nm[3], &t[0]);
	api->call_int(c, MATE_ARG, "lda", lda);
	api->call_tensor(c, MATE_ARG, nm[4], &t[1]);
	api->call_int(c, MATE_ARG, "ldb", ldb);
	api->call_float(c, MATE_ARG, "beta", scalar(dt, beta));
	api->call_tensor(c, MATE_ARG | MATE_INPLACE, nm[5], &t[2]);
	api->call_int(c, MATE_ARG, "ldc", ldc);
}

/* Begins recording a cblas_?gemm call; ic->c stays NULL when it is not recorded. */
static void
cblas_begin(struct ip_call *ic, const char *name, mate_dtype dt, int order, int ta, int tb,
    int m, int n, int k, const void *alpha, const void *a, int lda, const void *b, int ldb,
    const void *beta, const void *c, int ldc)
{
	const struct ip_api *api = &mate_ip_api;
	mate_tensor t[3];
	int cm = order == COL_MAJOR;

	ic->c = NULL;
	ic->lib = "cblas";
	ic->name = name;
	if ((order != ROW_MAJOR && !cm) || ta < NO_TRANS || ta > CONJ_TRANS || tb < NO_TRANS ||
	    tb > CONJ_TRANS || !mate_ip_gemm_valid(cm, ta != NO_TRANS, tb != NO_TRANS, m, n, k,
	    lda, ldb, ldc))
		return;
	mate_ip_call_begin(ic, "cblas", name, cblas_sig);
	if (ic->c == NULL || ic->level < 3)
		return;
	gemm_operands(dt, cm, ta != NO_TRANS, tb != NO_TRANS, m, n, k, a, lda, b, ldb, c, ldc, t);
	mate_ip_args_begin();
	api->call_enum(ic->c, MATE_ARG, "Order", cm ? "CBLAS_ORDER.CblasColMajor" :
	    "CBLAS_ORDER.CblasRowMajor", order);
	api->call_enum(ic->c, MATE_ARG, "TransA", trans_name(ta), ta);
	api->call_enum(ic->c, MATE_ARG, "TransB", trans_name(tb), tb);
	gemm_args(ic->c, dt, 1, m, n, k, alpha, t, lda, ldb, beta, ldc);
	mate_ip_args_end();
}

typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
    const float *, int, float, float *, int);
typedef void (*cblas_dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
    const double *, int, double, double *, int);

/* Records a cblas_?gemm call around the real one, fn, whose scalars and
 * matrices are of type dt; alpha and beta point to the values received. */
static void
cblas_record(const char *name, mate_dtype dt, void *fn, int order, int ta, int tb, int m,
    int n, int k, const void *alpha, const void *a, int lda, const void *b, int ldb,
    const void *beta, void *c, int ldc)
{
	struct ip_call ic;

	cblas_begin(&ic, name, dt, order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	mate_ip_call_ready(&ic);
	mate_ip_call_run(&ic);
	if (dt == MATE_F32)
		((cblas_sgemm_fn)fn)(order, ta, tb, m, n, k, *(const float *)alpha, a, lda, b, ldb,
		    *(const float *)beta, c, ldc);
	else
		((cblas_dgemm_fn)fn)(order, ta, tb, m, n, k, *(const double *)alpha, a, lda, b,
		    ldb, *(const double *)beta, c, ldc);
	mate_ip_call_ran(&ic);
	mate_ip_call_end(&ic, NULL);
}

IP_EXPORT void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
    const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
IP_EXPORT void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha,
    const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc);

IP_EXPORT void
cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	static void *real;
	cblas_sgemm_fn fn = (cblas_sgemm_fn)mate_ip_real(&real, "cblas_sgemm", (void *)cblas_sgemm,
	    __builtin_return_address(0));

	if (IP_UNLIKELY(fn == NULL))
		return;
	if (IP_UNLIKELY(mate_ip_recording()))
		cblas_record("cblas_sgemm", MATE_F32, (void *)fn, order, ta, tb, m, n, k, &alpha, a,
		    lda, b, ldb, &beta, c, ldc);
	else
		fn(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

IP_EXPORT void
cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a,
    int lda, const double *b, int ldb, double beta, double *c, int ldc)
{
	static void *real;
	cblas_dgemm_fn fn = (cblas_dgemm_fn)mate_ip_real(&real, "cblas_dgemm", (void *)cblas_dgemm,
	    __builtin_return_address(0));

	if (IP_UNLIKELY(fn == NULL))
		return;
	if (IP_UNLIKELY(mate_ip_recording()))
		cblas_record("cblas_dgemm", MATE_F64, (void *)fn, order, ta, tb, m, n, k, &alpha, a,
		    lda, b, ldb, &beta, c, ldc);
	else
		fn(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- Fortran: column major, every argument by reference ------------------------------------- */

/* 0 N, 1 T (and C), -1 invalid. */
static int
f77_trans(const char *t)
{
	if (t == NULL)
		return -1;
	switch (*t) {
	case 'N': case 'n': return 0;
	case 'T': case 't': case 'C': case 'c': return 1;
	default: return -1;
	}
}

static void
f77_begin(struct ip_call *ic, const char *name, mate_dtype dt, const char *transa,
    const char *transb, const int *m, const int *n, const int *k, const void *alpha,
    const void *a, const int *lda, const void *b, const int *ldb, const void *beta,
    const void *c, const int *ldc)
{
	char sa[2], sb[2];
	int ta = f77_trans(transa), tb = f77_trans(transb);
	mate_tensor t[3];

	ic->c = NULL;
	ic->lib = "blas";
	ic->name = name;
	if (ta < 0 || tb < 0 || m == NULL || n == NULL || k == NULL || lda == NULL ||
	    ldb == NULL || ldc == NULL || !mate_ip_gemm_valid(1, ta, tb, *m, *n, *k, *lda, *ldb, *ldc))
		return;
	mate_ip_call_begin(ic, "blas", name, f77_sig);
	if (ic->c == NULL || ic->level < 3)
		return;
	gemm_operands(dt, 1, ta, tb, *m, *n, *k, a, *lda, b, *ldb, c, *ldc, t);
	sa[0] = *transa;
	sb[0] = *transb;
	sa[1] = sb[1] = '\0';
	mate_ip_args_begin();
	mate_ip_api.call_str(ic->c, MATE_ARG, "transa", sa);
	mate_ip_api.call_str(ic->c, MATE_ARG, "transb", sb);
	gemm_args(ic->c, dt, 0, *m, *n, *k, alpha, t, *lda, *ldb, beta, *ldc);
	mate_ip_args_end();
}

/* gfortran passes the lengths of the two character arguments last; C
 * callers usually omit them, and BLAS implementations ignore them. They
 * are passed on as received. */
typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *,
    const float *, const float *, const int *, const float *, const int *, const float *,
    float *, const int *, size_t, size_t);
typedef void (*dgemm_fn)(const char *, const char *, const int *, const int *, const int *,
    const double *, const double *, const int *, const double *, const int *, const double *,
    double *, const int *, size_t, size_t);

/* Records a Fortran ?gemm_ call around the real one, fn, of type dt (alpha and beta not NULL). */
static void
f77_record(const char *name, mate_dtype dt, void *fn, const char *transa, const char *transb,
    const int *m, const int *n, const int *k, const void *alpha, const void *a, const int *lda,
    const void *b, const int *ldb, const void *beta, void *c, const int *ldc, size_t la,
    size_t lb)
{
	struct ip_call ic;

	f77_begin(&ic, name, dt, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	mate_ip_call_ready(&ic);
	mate_ip_call_run(&ic);
	if (dt == MATE_F32)
		((sgemm_fn)fn)(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la,
		    lb);
	else
		((dgemm_fn)fn)(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la,
		    lb);
	mate_ip_call_ran(&ic);
	mate_ip_call_end(&ic, NULL);
}

IP_EXPORT void sgemm_(const char *transa, const char *transb, const int *m, const int *n,
    const int *k, const float *alpha, const float *a, const int *lda, const float *b,
    const int *ldb, const float *beta, float *c, const int *ldc, size_t la, size_t lb);
IP_EXPORT void dgemm_(const char *transa, const char *transb, const int *m, const int *n,
    const int *k, const double *alpha, const double *a, const int *lda, const double *b,
    const int *ldb, const double *beta, double *c, const int *ldc, size_t la, size_t lb);

IP_EXPORT void
sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
    const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
    const float *beta, float *c, const int *ldc, size_t la, size_t lb)
{
	static void *real;
	sgemm_fn fn = (sgemm_fn)mate_ip_real(&real, "sgemm_", (void *)sgemm_,
	    __builtin_return_address(0));

	if (IP_UNLIKELY(fn == NULL))
		return;
	if (IP_UNLIKELY(mate_ip_recording()) && alpha != NULL && beta != NULL)
		f77_record("sgemm_", MATE_F32, (void *)fn, transa, transb, m, n, k, alpha, a, lda,
		    b, ldb, beta, c, ldc, la, lb);
	else
		fn(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
}

IP_EXPORT void
dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
    const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
    const double *beta, double *c, const int *ldc, size_t la, size_t lb)
{
	static void *real;
	dgemm_fn fn = (dgemm_fn)mate_ip_real(&real, "dgemm_", (void *)dgemm_,
	    __builtin_return_address(0));

	if (IP_UNLIKELY(fn == NULL))
		return;
	if (IP_UNLIKELY(mate_ip_recording()) && alpha != NULL && beta != NULL)
		f77_record("dgemm_", MATE_F64, (void *)fn, transa, transb, m, n, k, alpha, a, lda,
		    b, ldb, beta, c, ldc, la, lb);
	else
		fn(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
}
