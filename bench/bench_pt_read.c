/* bench_pt_read.c: times mate_pt_read() on a .pt file.
 *
 * usage: bench_pt_read FILE [RUNS] [--meta]
 * Prints the best and the median wall time of RUNS (default 5) reads, one
 * line: "FILE: best S s, median S s, N tensors, B bytes". --meta reads
 * without the storages (load_data = 0).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mate_core.h"
#include "bench_util.h"

static void
count(const mate_value *v, long *tensors, long long *bytes)
{
	if (mate_value_get_tensor(v) != NULL) {
		(*tensors)++;
		*bytes += mate_tensor_nbytes(mate_value_get_tensor(v));
		return;
	}
	for (size_t i = 0; i < mate_value_len(v); i++)
		count(mate_value_item(v, i), tensors, bytes);
}

int
main(int argc, char **argv)
{
	struct mate_pt_read_options opts = { 0, 0, 1 };
	int runs = 5;
	long tensors = 0;
	long long bytes = 0;
	double *t;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: bench_pt_read FILE [RUNS] [--meta]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--meta") == 0)
			opts.load_data = 0;
		else if ((runs = atoi(argv[i])) < 1)
			runs = 1;
	}
	t = calloc((size_t)runs, sizeof(*t));
	if (t == NULL)
		return 1;
	for (int i = 0; i < runs; i++) {
		mate_error err;
		double t0 = mate_mono_seconds();
		mate_value *v = mate_pt_read(argv[1], &opts, &err);

		t[i] = mate_mono_seconds() - t0;
		if (v == NULL) {
			fprintf(stderr, "bench_pt_read: %s\n", err.message);
			free(t);
			return 1;
		}
		if (i == 0)
			count(v, &tensors, &bytes);
		mate_value_free(v);
	}
	qsort(t, (size_t)runs, sizeof(*t), bench_cmp_double);
	printf("%s: best %.3f s, median %.3f s, %ld tensors, %lld bytes\n", argv[1], t[0],
	    t[runs / 2], tensors, bytes);
	free(t);
	return 0;
}
