/* replay-blas-call.c: benchmark: a recorded Fortran sgemm_ (x @ w1 of a torch MLP, [64, 512] @ [512, 1024] as the column-major call) timed through mate_bench_run(), the whole replay handler, against OpenBLAS's sgemm_ called directly on the same buffers; with the tensors as a .pt dump keeps them (the call's strides) and as a safetensors dump does (contiguous, laid out again per run). */
#include "mate.h"
#include "bench_util.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
    const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
    const float *beta, float *c, const int *ldc);

/* The median seconds of reps direct calls. */
static double
direct(int m, int n, int k, int reps)
{
	float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n);
	float *c = malloc(sizeof(float) * (size_t)m * n), one = 1, zero = 0;
	double *t = malloc(sizeof(double) * (size_t)reps), med;

	if (a == NULL || b == NULL || c == NULL || t == NULL) {
		fprintf(stderr, "replay-blas-call: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (float)(i % 97) / 97.0f - 0.5f;
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = (float)(i % 89) / 89.0f - 0.5f;
	for (int r = -2; r < reps; r++) {       /* two warm-ups, as mate-bench's */
		double t0 = mate_mono_seconds();

		sgemm_("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m);
		if (r >= 0)
			t[r] = mate_mono_seconds() - t0;
	}
	med = bench_median(t, reps);
	free(a);
	free(b);
	free(c);
	free(t);
	return med;
}

/* The median seconds of the recorded call through mate_bench_run(); strided: the
 * tensors with the call's strides (a .pt dump), else contiguous (safetensors). */
static double
replayed(int m, int n, int k, int reps, int strided)
{
	char w[6][80], *words[13];
	const char *fixed[] = { "arg_0=\"N\"", "arg_1=\"N\"", "arg_5=1", "arg_10=0" };
	struct mate_bench_result res;
	mate_bench_entry *e;
	mate_replay *r;
	mate_error err;
	int nw = 0;

	if (strided) {
		snprintf(w[0], sizeof(w[0]), "arg_6=float32[%d,%d]@[1,%d]", m, k, m);
		snprintf(w[1], sizeof(w[1]), "arg_8=float32[%d,%d]@[1,%d]", k, n, k);
		snprintf(w[2], sizeof(w[2]), "arg_11=float32[%d,%d]@[1,%d]", m, n, m);
	} else {
		snprintf(w[0], sizeof(w[0]), "arg_6=float32[%d,%d]", m, k);
		snprintf(w[1], sizeof(w[1]), "arg_8=float32[%d,%d]", k, n);
		snprintf(w[2], sizeof(w[2]), "arg_11=float32[%d,%d]", m, n);
	}
	snprintf(w[3], sizeof(w[3]), "arg_2=%d arg_7=%d arg_12=%d", m, m, m);
	snprintf(w[4], sizeof(w[4]), "arg_3=%d", n);
	snprintf(w[5], sizeof(w[5]), "arg_4=%d arg_9=%d", k, k);
	for (int i = 0; i < 3; i++)
		words[nw++] = w[i];
	words[nw++] = strtok(w[3], " ");
	words[nw++] = strtok(NULL, " ");
	words[nw++] = strtok(NULL, " ");
	words[nw++] = w[4];
	words[nw++] = strtok(w[5], " ");
	words[nw++] = strtok(NULL, " ");
	for (int i = 0; i < 4; i++)
		words[nw++] = (char *)fixed[i];
	if ((r = mate_replay_new(&err)) == NULL ||
	    (e = mate_bench_entry_from_words("blas", "sgemm_", nw, words, &err)) == NULL) {
		fprintf(stderr, "replay-blas-call: %s\n", err.message);
		exit(1);
	}
	mate_replay_set_bench(r, reps);
	mate_bench_run(r, e, 1, &res);
	if (res.status != MATE_OK) {
		fprintf(stderr, "replay-blas-call: sgemm_: %s\n", res.message);
		exit(1);
	}
	mate_bench_entry_free(e);
	mate_replay_free(r);
	return res.median;
}

int
main(int argc, char **argv)
{
	int m = 1024, n = 64, k = 512, reps = argc > 1 ? atoi(argv[1]) : 30;
	double d, s, c;

	if (reps < 1) {
		fprintf(stderr, "usage: replay-blas-call [REPS]\n");
		return 2;
	}
	/* the anchor both before and after: the machine may be shared */
	d = direct(m, n, k, reps);
	s = replayed(m, n, k, reps, 1);
	c = replayed(m, n, k, reps, 0);
	d = (d + direct(m, n, k, reps)) / 2;
	printf("sgemm_ %dx%dx%d, median of %d: direct %.3f ms; replayed with the call's strides "
	    "%.3f ms, ratio %.3f (target >= 0.8); contiguous %.3f ms, ratio %.3f (target >= 0.5)\n",
	    m, n, k, reps, d * 1e3, s * 1e3, d / s, c * 1e3, d / c);
	return 0;
}
