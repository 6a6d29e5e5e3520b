/* record-blas-prog.c: a C program linked against CBLAS and Fortran BLAS for the mate-record tests: sgemm/dgemm through both interfaces, with transposes, padded leading dimensions and beta != 0; "nan": one sgemm with beta 0 into a buffer of NaNs (the output holds none). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

/* The Fortran entry points as C callers usually declare them. */
void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
    const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
    const float *beta, float *c, const int *ldc);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
    const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
    const double *beta, double *c, const int *ldc);

static unsigned state = 12345;

static double
rnd(void)
{
	state = state * 1103515245u + 12345u;
	return ((state >> 8) & 0xffff) / 65536.0 - 0.5;
}

static float *
fmat(int n)
{
	float *v = malloc((size_t)n * sizeof(*v));
	for (int i = 0; v != NULL && i < n; i++)
		v[i] = (float)rnd();
	return v;
}

static double *
dmat(int n)
{
	double *v = malloc((size_t)n * sizeof(*v));
	for (int i = 0; v != NULL && i < n; i++)
		v[i] = rnd();
	return v;
}

/* C = A B with beta 0 into C of NaNs (an uninitialised buffer): the call
 * writes every element; before it 27 are NaN, after it none. */
static int
nan_mode(void)
{
	float *a = fmat(3 * 4), *b = fmat(4 * 9), c[27];
	double sum = 0;

	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return 1;
	}
	for (int i = 0; i < 27; i++)
		c[i] = NAN;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 3, 9, 4, 1.0f, a, 4, b, 9, 0.0f, c, 9);
	for (int i = 0; i < 27; i++)
		sum += c[i];
	printf("checksum %.17g\n", sum);
	free(a);
	free(b);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "nan") == 0)
		return nan_mode();
	float *a = fmat(40 * 36), *b = fmat(36 * 30), *c = fmat(40 * 33);
	double *da = dmat(50 * 50), *db = dmat(50 * 50), *dc = dmat(50 * 50);
	int m = 17, n = 23, k = 29, lda = 40, ldb = 31, ldc = 33;
	float fa = 1.25f, fb = -0.5f;
	double ga = 0.75, gb = 2.0, sum = 0;

	if (a == NULL || b == NULL || c == NULL || da == NULL || db == NULL || dc == NULL)
		return 1;
	/* row major, padded leading dimensions, beta != 0 */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 30, 25, 36, 0.5f, a, 36, b, 30,
	    -1.0f, c, 33);
	/* column major, A transposed, B conjugate-transposed */
	cblas_sgemm(CblasColMajor, CblasTrans, CblasConjTrans, 20, 15, 12, 1.0f, a, 36, b, 30,
	    0.0f, c + 5, 40);
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 21, 19, 44, -1.5, da, 50, db, 50,
	    0.25, dc, 50);
	cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, 33, 47, 8, 1.0, da + 3, 50, db, 50,
	    1.0, dc + 100, 50);
	sgemm_("T", "N", &m, &n, &k, &fa, a, &lda, b, &ldb, &fb, c, &ldc);
	dgemm_("n", "t", &m, &n, &k, &ga, da, &lda, db, &ldb, &gb, dc, &ldc);
	for (int i = 0; i < 40 * 33; i++)
		sum += c[i];
	for (int i = 0; i < 50 * 50; i++)
		sum += dc[i];
	printf("checksum %.17g\n", sum);
	free(a);
	free(b);
	free(c);
	free(da);
	free(db);
	free(dc);
	return 0;
}
