/* bench_util.h: what mate's C benchmarks share beyond util.h's clocks: the thread's CPU time and the median of their runs. */
#ifndef MATE_BENCH_UTIL_H_INCLUDED
#define MATE_BENCH_UTIL_H_INCLUDED

#include <stdlib.h>
#include <time.h>

#include "util.h"

/* CPU seconds of the calling thread: what a run costs with a core to
 * itself, whatever the machine's load. */
static inline double
bench_thread_cpu(void)
{
	return mate_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

/* qsort()'s ascending order of doubles. */
static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns its median (the mean of the middle two when n
 * is even). */
static inline double
bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* MATE_BENCH_UTIL_H_INCLUDED */
