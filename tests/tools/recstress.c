/* recstress.c: the recorded workload of the recorder's crash and stress tests (see recstress.h). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "recstress.h"

#define TMPFS_MAGIC_ 0x01021994

static float
a_of(long tag, int j)
{
	return (float)(tag % 65536) + (float)j * 0.25f;
}

static float
b_of(long tag, int j)
{
	return -(float)(tag % 4096) - (float)j;
}

void
rs_configure(const char *root, int pt)
{
	struct mate_config cfg;
	mate_error err;

	mate_config_default(&cfg);
	cfg.level = 10;
	cfg.logdest = "/dev/null";
	cfg.dump_dir = root;
	cfg.dump_max_count = INT64_MAX;
	cfg.dump_max_size_gb = 1e6;
	cfg.dump_safetensors = !pt;
	if (mate_configure(&cfg, &err) != MATE_OK) {
		fprintf(stderr, "recstress: mate_configure: %s\n", err.message);
		exit(99);
	}
}

struct rs_bufs {
	float a[RS_N], b[RS_N], out[RS_N];
	mate_tensor ta, tb, to;
};

static __thread struct rs_bufs bufs;

mate_call *
rs_begin(long tag)
{
	struct rs_bufs *s = &bufs;
	int64_t n = RS_N;
	mate_call *c = NULL;

	for (int j = 0; j < RS_N; j++) {
		s->a[j] = a_of(tag, j);
		s->b[j] = b_of(tag, j);
		s->out[j] = 0;
	}
	mate_tensor_init(&s->ta, MATE_F32, 1, &n, NULL, s->a);
	mate_tensor_init(&s->tb, MATE_F32, 1, &n, NULL, s->b);
	mate_tensor_init(&s->to, MATE_F32, 1, &n, NULL, s->out);
	if (MATE_ACTIVE()) {
		c = mate_call_begin("add", "recstress", "(a, b, *, tag)");
		mate_call_tensor(c, MATE_ARG, NULL, &s->ta);
		mate_call_tensor(c, MATE_ARG, NULL, &s->tb);
		mate_call_int(c, MATE_KWARG, "tag", tag);
		mate_call_ready(c);
	}
	return c;
}

int
rs_end(mate_call *c, long tag)
{
	struct rs_bufs *s = &bufs;
	int bad = 0;

	for (int j = 0; j < RS_N; j++)
		s->out[j] = s->a[j] + s->b[j];
	if (c != NULL) {
		mate_call_tensor(c, MATE_RESULT, NULL, &s->to);
		mate_call_end(c);
	}
	for (int j = 0; j < RS_N; j++)
		bad |= s->out[j] != a_of(tag, j) + b_of(tag, j);
	return bad;
}

int
rs_call(long tag)
{
	return rs_end(rs_begin(tag), tag);
}

struct rs_thread {
	pthread_t id;
	long first, calls, failures;
};

static void *
rs_thread_main(void *arg)
{
	struct rs_thread *t = arg;

	for (long i = 0; t->calls < 0 || i < t->calls; i++)
		t->failures += rs_call(t->first + i);
	return NULL;
}

long
rs_run_threads(int nthreads, long calls)
{
	struct rs_thread *t = calloc((size_t)nthreads, sizeof(*t));
	long failures = 0;

	if (t == NULL)
		return -1;
	for (int i = 0; i < nthreads; i++) {
		t[i].first = (long)i * 1000000;
		t[i].calls = calls;
		if (pthread_create(&t[i].id, NULL, rs_thread_main, &t[i]) != 0) {
			fprintf(stderr, "recstress: cannot start thread %d\n", i);
			exit(99);
		}
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i].id, NULL);
		failures += t[i].failures;
	}
	free(t);
	return failures;
}

static float
at(const mate_tensor *t, int j)
{
	return ((const float *)t->data)[t->offset + j * (t->ndim > 0 ? t->stride[0] : 1)];
}

int
rs_check_tensor(const cJSON *record, const char *key, const mate_tensor *t, int is_output,
    void *ctx)
{
	const cJSON *tag = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(record, "input_metadata"), "kwarg_tag");
	long g;
	int which = strcmp(key, "arg_0") == 0 ? 0 : strcmp(key, "arg_1") == 0 ? 1 :
	    strcmp(key, "result") == 0 ? 2 : -1;

	(void)ctx;
	if (which < 0 || (which == 2) != is_output || t->dtype != MATE_F32 || t->ndim != 1 ||
	    t->shape[0] != RS_N)
		return -1;
	if (cJSON_IsNumber(tag))
		g = (long)tag->valuedouble;
	else if (which == 0)
		g = (long)at(t, 0);          /* a[0] is tag % 65536 */
	else if (which == 1)
		g = -(long)at(t, 0);         /* -b[0] is tag % 4096 */
	else
		return 0;                     /* a sum alone does not tell its tag */
	for (int j = 0; j < RS_N; j++) {
		float want = which == 0 ? a_of(g, j) : which == 1 ? b_of(g, j) : a_of(g, j) + b_of(g, j);
		if (at(t, j) != want)
			return -1;
	}
	return 0;
}

int
rs_shm_usable(void)
{
	struct statfs sf;

	return statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC_ && access("/dev/shm", W_OK) == 0;
}

int
rs_format_arg(int *argc, char ***argv)
{
	char **av = *argv;
	int pt;

	if (*argc < 2 || (strcmp(av[1], "pt") != 0 && strcmp(av[1], "safetensors") != 0))
		return 0;
	pt = strcmp(av[1], "pt") == 0;
	av[1] = av[0];
	(*argc)--;
	(*argv)++;
	return pt;
}
