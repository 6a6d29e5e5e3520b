/* parallel.c: a small pthread parallel-for (no OpenMP): threads per call, chunks handed out in order. */
#include "mate_private.h"
#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256
/* Below this much work (rough flops) a thread start costs more than it saves. */
#define MIN_WORK_PER_THREAD (1 << 16)

struct job {
	mate_parallel_fn fn;
	void *ctx;
	int64_t n, chunk;
	int64_t next;              /* next chunk start, taken atomically */
};

static int
env_threads(void)
{
	long v;

	return mate_env_long("MATE_NUM_THREADS", 1, MAX_THREADS, &v) > 0 ? (int)v : 0;
}

int
mate_parallel_threads(void)
{
	int n = env_threads();
	long cpus;

	if (n > 0)
		return n;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		return 1;
	return cpus > 64 ? 64 : (int)cpus;
}

static void *
worker(void *arg)
{
	struct job *j = arg;

	for (;;) {
		int64_t b = __atomic_fetch_add(&j->next, j->chunk, __ATOMIC_RELAXED);
		if (b >= j->n)
			break;
		j->fn(j->ctx, b, b + j->chunk < j->n ? b + j->chunk : j->n);
	}
	return NULL;
}

/* How many threads the work is worth. */
static int
threads_for(int64_t n, int64_t cost)
{
	int64_t work, t;
	int max = mate_parallel_threads();

	if (cost < 1)
		cost = 1;
	if (!mate_mul_ok(n, cost, &work))
		work = INT64_MAX;
	t = work / MIN_WORK_PER_THREAD;
	if (t > n)
		t = n;
	if (t > max)
		t = max;
	return t < 1 ? 1 : (int)t;
}

void
mate_parallel_for(int64_t n, int64_t cost_per_item, mate_parallel_fn fn, void *ctx)
{
	pthread_t tid[MAX_THREADS];
	int nt, started = 0;
	struct job j;

	if (n <= 0)
		return;
	nt = threads_for(n, cost_per_item);
	if (nt == 1) {
		fn(ctx, 0, n);
		return;
	}
	j.fn = fn;
	j.ctx = ctx;
	j.n = n;
	/* a few chunks per thread balance uneven rows (causal attention) */
	j.chunk = (n + (int64_t)nt * 4 - 1) / ((int64_t)nt * 4);
	j.next = 0;
	for (int i = 1; i < nt; i++) {
		if (pthread_create(&tid[started], NULL, worker, &j) != 0)
			break;  /* fewer threads: the caller does the rest */
		started++;
	}
	worker(&j);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}
