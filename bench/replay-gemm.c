/* replay-gemm.c: benchmark: a 2048^3 f32 GEMM through libmate's mm kernel against OpenBLAS's cblas_sgemm called directly. */
#include "config.h"
#include "kernels.h"
#include "util.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* the kernels timed; tests/replay-gemm-fail builds this file with a table
 * whose mm fails after the warm-up */
#ifndef BENCH_KERNELS
#define BENCH_KERNELS mate_kernels_cpu()
#endif

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2048, reps = argc > 2 ? atoi(argv[2]) : 10;
	int64_t shape[2] = { n, n };
	float *a, *b, *c;
	mate_tensor ta, tb, tc;
	mate_error err;
	double best_mate = 1e30, best_blas = 1e30, flop = 2.0 * n * n * (double)n;

	if (n < 1 || reps < 1) {
		fprintf(stderr, "usage: replay-gemm [N [REPS]]\n");
		return 2;
	}
	a = malloc(sizeof(float) * (size_t)n * n);
	b = malloc(sizeof(float) * (size_t)n * n);
	c = malloc(sizeof(float) * (size_t)n * n);
	if (a == NULL || b == NULL || c == NULL) {
		fprintf(stderr, "replay-gemm: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < (size_t)n * n; i++) {
		a[i] = (float)(i % 97) / 97.0f - 0.5f;
		b[i] = (float)(i % 89) / 89.0f - 0.5f;
	}
	mate_tensor_init(&ta, MATE_F32, 2, shape, NULL, a);
	mate_tensor_init(&tb, MATE_F32, 2, shape, NULL, b);
	mate_tensor_init(&tc, MATE_F32, 2, shape, NULL, c);
	/* warm up both paths (OpenBLAS starts its threads on first use) */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
	if (BENCH_KERNELS->mm(&ta, &tb, &tc, &err) != MATE_OK) {
		fprintf(stderr, "replay-gemm: %s\n", err.message);
		return 1;
	}
	/* alternate which goes first, keep the best of each: the machine may be shared */
	for (int r = 0; r < reps; r++) {
		for (int w = 0; w < 2; w++) {
			double t0 = mate_mono_seconds(), t;
			int rc = MATE_OK;

			if ((w ^ r) & 1)
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
				    a, n, b, n, 0.0f, c, n);
			else
				rc = BENCH_KERNELS->mm(&ta, &tb, &tc, &err);
			t = mate_mono_seconds() - t0;
			if (rc != MATE_OK) {  /* a failing kernel is no speed-up */
				fprintf(stderr, "replay-gemm: mm, repetition %d: %s\n", r + 1, err.message);
				free(a);
				free(b);
				free(c);
				return 1;
			}
			if ((w ^ r) & 1)
				best_blas = t < best_blas ? t : best_blas;
			else
				best_mate = t < best_mate ? t : best_mate;
		}
	}
	printf("f32 GEMM %dx%dx%d, best of %d: mate mm %.1f GFLOP/s, cblas_sgemm %.1f GFLOP/s, "
	    "ratio %.3f (target >= 0.9)\n", n, n, n, reps, flop / best_mate * 1e-9,
	    flop / best_blas * 1e-9, best_blas / best_mate);
	free(a);
	free(b);
	free(c);
	return 0;
}
