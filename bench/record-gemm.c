/* record-gemm.c: a GEMM-heavy program for the interposer overhead benchmark: N products of 256x256 f32 matrices through cblas_sgemm; prints the CPU and wall seconds they took. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, size = argc > 2 ? atoi(argv[2]) : 256;
	float *a = malloc((size_t)size * size * sizeof(float));
	float *b = malloc((size_t)size * size * sizeof(float));
	float *c = malloc((size_t)size * size * sizeof(float));
	struct timespec t0, t1, c0, c1;

	if (a == NULL || b == NULL || c == NULL || n <= 0 || size <= 0)
		return 2;
	for (int i = 0; i < size * size; i++) {
		a[i] = (float)(i % 13) / 13.0f;
		b[i] = (float)(i % 7) / 7.0f;
		c[i] = 0;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size, 1.0f, a, size,
	    b, size, 0.0f, c, size);     /* warm up: threads, caches */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size, 1.0f, a,
		    size, b, size, 0.5f, c, size);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	printf("%.6f %.6f\n", (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9,
	    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	free(a);
	free(b);
	free(c);
	return 0;
}
