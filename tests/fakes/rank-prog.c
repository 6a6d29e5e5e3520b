/* rank-prog.c: one rank of a made-up data-parallel job, for tests/cli/test_trace_desync.sh: it
 * records its calls through libmate as a library using mate would (its rank comes from the
 * launcher's variables, as mate reads them). Each step calls mm(a, b) then all_reduce(grad),
 * and rank 0 alone calls log_metrics(loss) every third step.
 *
 *   rank-prog STEPS [skip=R:S] [shape=R:S] [wide=R:S] [stall=R:S:FILE] [hold=FILE] [pace=US]
 *       [mark=FILE] [start=FILE]
 *
 * skip=R:S: rank R leaves out step S's all_reduce; shape=R:S: rank R's all_reduce of step S
 * takes 2048 elements, not 4096; wide=R:S: every step ends with concat(12 tensors), whose
 * last takes 2048 elements on rank R at step S (past what an event's args= shows); stall=R:S:FILE: rank R stops before step S until FILE
 * exists, and the others make steps (past STEPS) until then; hold=FILE: every rank waits
 * for FILE before it exits (its last call made); pace=US: a step every US microseconds
 * at most (a training step's pace, for bench/desync-latency.py); mark=FILE: the rank
 * that skips or changes a call writes FILE (via FILE.tmp) with the CLOCK_MONOTONIC
 * seconds just before that step's calls; start=FILE: every rank waits for FILE before its
 * first step (so that subscribers that came late miss nothing). Exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mate_record.h>

static float a[16 * 32], b[32 * 8], grad[4096], loss[1];

static void
call(const char *name, int ntensors, const int64_t (*shapes)[2], const int *ndims,
    float *const *data)
{
	mate_call *c = mate_call_begin(name, "rankprog", NULL);

	for (int i = 0; i < ntensors; i++) {
		mate_tensor t;
		mate_tensor_init(&t, MATE_F32, ndims[i], shapes[i], NULL, data[i]);
		mate_call_tensor(c, MATE_ARG, NULL, &t);
	}
	mate_call_ready(c);
	mate_call_end(c);
}

static double
mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* FILE holds the time now, whole when it appears. */
static void
mark_now(const char *file)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	if ((f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "%.6f\n", mono());
	if (fclose(f) == 0)
		rename(tmp, file);
}

/* "R:S" (and ":FILE") after a prefix: @return 1 when arg is one. */
static int
spec(const char *arg, const char *prefix, int *r, int *s, const char **file)
{
	size_t n = strlen(prefix);
	int used = 0;

	if (strncmp(arg, prefix, n) != 0 || sscanf(arg + n, "%d:%d%n", r, s, &used) != 2)
		return 0;
	if (file != NULL)
		*file = arg[n + (size_t)used] == ':' ? arg + n + used + 1 : NULL;
	return 1;
}

int
main(int argc, char **argv)
{
	const char *rk = getenv("RANK"), *stall_file = NULL, *hold = NULL;
	int rank = rk != NULL ? atoi(rk) : -1, steps = argc > 1 ? atoi(argv[1]) : 10;
	int skip_r = -1, skip_s = -1, shape_r = -1, shape_s = -1, stall_r = -1, stall_s = -1;
	int wide_r = -1, wide_s = -1, wide = 0;
	long pace = 0;
	const char *mark = NULL, *start = NULL;
	double next = 0;

	for (int i = 2; i < argc; i++)
		if (!spec(argv[i], "skip=", &skip_r, &skip_s, NULL) &&
		    !spec(argv[i], "shape=", &shape_r, &shape_s, NULL) &&
		    !(spec(argv[i], "wide=", &wide_r, &wide_s, NULL) && (wide = 1)) &&
		    !spec(argv[i], "stall=", &stall_r, &stall_s, &stall_file)) {
			if (strncmp(argv[i], "hold=", 5) == 0) {
				hold = argv[i] + 5;
				continue;
			}
			if (strncmp(argv[i], "pace=", 5) == 0) {
				pace = atol(argv[i] + 5);
				continue;
			}
			if (strncmp(argv[i], "mark=", 5) == 0) {
				mark = argv[i] + 5;
				continue;
			}
			if (strncmp(argv[i], "start=", 6) == 0) {
				start = argv[i] + 6;
				continue;
			}
			fprintf(stderr, "rank-prog: bad argument '%s'\n", argv[i]);
			return 2;
		}
	while (start != NULL && access(start, F_OK) != 0)
		usleep(1000);
	for (int step = 0; step < steps || (stall_file != NULL && access(stall_file, F_OK) != 0);
	    step++) {
		const int64_t mm_shapes[2][2] = { { 16, 32 }, { 32, 8 } };
		const int mm_ndims[2] = { 2, 2 };
		float *mm_data[2] = { a, b };
		int64_t ar_shape[1][2] = { { rank == shape_r && step == shape_s ? 2048 : 4096, 0 } };
		const int one[1] = { 1 };
		float *ar_data[1] = { grad }, *loss_data[1] = { loss };
		const int64_t loss_shape[1][2] = { { 1, 0 } };

		if (rank == stall_r && step == stall_s) {
			while (stall_file != NULL && access(stall_file, F_OK) != 0)
				usleep(10000);
			break;
		}
		if (step >= steps)
			usleep(10000);   /* waiting for a stalled rank: a step every 10 ms */
		if (pace > 0) {
			double now = mono();
			if (next > now)
				usleep((useconds_t)((next - now) * 1e6));
			next = (next > now ? next : now) + pace * 1e-6;
		}
		if (mark != NULL && ((rank == skip_r && step == skip_s) ||
		    (rank == shape_r && step == shape_s)))
			mark_now(mark);
		call("mm", 2, mm_shapes, mm_ndims, mm_data);
		if (!(rank == skip_r && step == skip_s))
			call("all_reduce", 1, (const int64_t (*)[2])ar_shape, one, ar_data);
		if (rank == 0 && step % 3 == 0)
			call("log_metrics", 1, loss_shape, one, loss_data);
		if (wide) {
			int64_t w_shapes[12][2];
			int w_ndims[12];
			float *w_data[12];
			for (int i = 0; i < 12; i++) {
				w_shapes[i][0] = i == 11 && rank == wide_r && step == wide_s ? 2048 : 4096;
				w_shapes[i][1] = 0;
				w_ndims[i] = 1;
				w_data[i] = grad;
			}
			call("concat", 12, (const int64_t (*)[2])w_shapes, w_ndims, w_data);
		}
	}
	while (hold != NULL && access(hold, F_OK) != 0)
		usleep(10000);
	return 0;
}
