/* mate-demo.c: the demo workload: client threads calling the instrumented minilib, recorded by libmate through MATE_* variables.
 *
 * MATE_DEMO_THREADS (default 4) client threads each run rounds of rmsnorm
 * (f32, bf16), fused_add_rmsnorm (bf16, in place), silu_and_mul (f16),
 * softmax (f32), mm (f32, with a transposed operand) and mm (f16), on a pool
 * of MATE_DEMO_WORKERS (default 3) worker threads. One call per thread fails
 * on purpose (rmsnorm with a mis-sized weight). MATE_DEMO_ROUNDS (default 2)
 * rounds, or as many as fit in MATE_DEMO_SECONDS seconds when that is set.
 * MATE_DEMO_CHECKSUM=1 prints a checksum of every result on stdout, to
 * show that recording never changes them. MATE_DEMO_THREAD_NAMES=1 names the
 * client threads client-0, client-1, ... (pthread_setname_np).
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mate_core.h>

#include "minilib.h"

static int rounds = 2;
static double seconds = 0;
static long failures_expected, failures_seen;
static int want_checksum;
static uint64_t sums[1025];  /* per client thread, FNV-1a of its results */
static __thread uint64_t *sum;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

struct buf {
	mate_tensor t;
	void *mem;
};

static uint32_t
next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* A contiguous tensor of random values in [-2, 2). */
static void
make(struct buf *b, mate_dtype dt, int ndim, const int64_t *shape, uint32_t *seed)
{
	int64_t n = 1;

	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	b->mem = calloc((size_t)n, mate_dtype_size(dt));
	if (b->mem == NULL) {
		fprintf(stderr, "mate-demo: out of memory\n");
		exit(1);
	}
	mate_tensor_init(&b->t, dt, ndim, shape, NULL, b->mem);
	for (int64_t i = 0; i < n; i++) {
		float v = (float)(next_rand(seed) % 4096) / 1024.0f - 2.0f;
		void *p = (char *)b->mem + i * (int64_t)mate_dtype_size(dt);
		if (dt == MATE_F16)
			*(uint16_t *)p = mate_f32_to_f16(v);
		else if (dt == MATE_BF16)
			*(uint16_t *)p = mate_f32_to_bf16(v);
		else
			*(float *)p = v;
	}
}

/* Folds a result's bytes into this thread's checksum. */
static void
fold(const struct buf *b)
{
	const unsigned char *p = b->mem;
	size_t n = (size_t)mate_tensor_nbytes(&b->t);

	if (!want_checksum)
		return;
	for (size_t i = 0; i < n; i++)
		*sum = (*sum ^ p[i]) * 1099511628211ull;
}

static void
drop(struct buf *b)
{
	free(b->mem);
	b->mem = NULL;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "mate-demo: %s failed: %s\n", what, mini_last_error());
		exit(1);
	}
}

static void
one_round(uint32_t *seed)
{
	struct buf x, w, o, r, g, go, l, lo, a, b, bt, c;
	int64_t s_x[2] = { 8, 64 }, s_w[1] = { 64 }, s_g[2] = { 8, 128 }, s_go[2] = { 8, 64 };
	int64_t s_l[2] = { 4, 100 }, s_a[2] = { 16, 32 }, s_bt[2] = { 24, 32 }, s_c[2] = { 16, 24 };

	/* rmsnorm, f32 and bf16 */
	make(&x, MATE_F32, 2, s_x, seed);
	make(&w, MATE_F32, 1, s_w, seed);
	make(&o, MATE_F32, 2, s_x, seed);
	check(mini_rmsnorm(&x.t, &w.t, 1e-6, &o.t), "rmsnorm");
	fold(&o);
	drop(&x), drop(&w), drop(&o);
	make(&x, MATE_BF16, 2, s_x, seed);
	make(&w, MATE_BF16, 1, s_w, seed);
	make(&o, MATE_BF16, 2, s_x, seed);
	check(mini_rmsnorm(&x.t, &w.t, 1e-5, &o.t), "rmsnorm");
	fold(&o);
	/* fused_add_rmsnorm, in place on x and the residual */
	make(&r, MATE_BF16, 2, s_x, seed);
	check(mini_fused_add_rmsnorm(&x.t, &r.t, &w.t, 1e-6), "fused_add_rmsnorm");
	fold(&x), fold(&r);
	drop(&x), drop(&w), drop(&o), drop(&r);
	/* silu_and_mul, f16 */
	make(&g, MATE_F16, 2, s_g, seed);
	make(&go, MATE_F16, 2, s_go, seed);
	check(mini_silu_and_mul(&g.t, &go.t), "silu_and_mul");
	fold(&go);
	drop(&g), drop(&go);
	/* softmax, f32 */
	make(&l, MATE_F32, 2, s_l, seed);
	make(&lo, MATE_F32, 2, s_l, seed);
	check(mini_softmax(&l.t, 0.7, &lo.t), "softmax");
	fold(&lo);
	drop(&l), drop(&lo);
	/* mm, f32 with b a transposed view of a (24, 32) buffer, then f16 */
	make(&a, MATE_F32, 2, s_a, seed);
	make(&bt, MATE_F32, 2, s_bt, seed);
	b = bt;
	b.t.shape[0] = 32, b.t.shape[1] = 24, b.t.stride[0] = 1, b.t.stride[1] = 32;
	make(&c, MATE_F32, 2, s_c, seed);
	check(mini_mm(&a.t, &b.t, &c.t), "mm");
	fold(&c);
	drop(&a), drop(&bt), drop(&c);
	make(&a, MATE_F16, 2, s_a, seed);
	make(&bt, MATE_F16, 2, (int64_t[]){ 32, 24 }, seed);
	make(&c, MATE_F16, 2, s_c, seed);
	check(mini_mm(&a.t, &bt.t, &c.t), "mm");
	fold(&c);
	drop(&a), drop(&bt), drop(&c);
}

/* The call that fails on purpose: a weight of the wrong size. */
static void
failing_call(uint32_t *seed)
{
	struct buf x, w, o;
	int64_t s_x[2] = { 2, 64 }, s_w[1] = { 32 };

	make(&x, MATE_F32, 2, s_x, seed);
	make(&w, MATE_F32, 1, s_w, seed);
	make(&o, MATE_F32, 2, s_x, seed);
	if (mini_rmsnorm(&x.t, &w.t, 1e-6, &o.t) != 0) {
		pthread_mutex_lock(&count_lock);
		failures_seen++;
		pthread_mutex_unlock(&count_lock);
	}
	drop(&x), drop(&w), drop(&o);
}

static int name_threads;   /* MATE_DEMO_THREAD_NAMES=1: "client-N", as servers name theirs */

static void *
client(void *arg)
{
	uint32_t seed = 0x9e3779b9u ^ (uint32_t)(uintptr_t)arg * 2654435761u;
	double end = now() + seconds;

	if (name_threads) {
		char name[16];
		snprintf(name, sizeof(name), "client-%u", (unsigned)(uintptr_t)arg - 1);
		pthread_setname_np(pthread_self(), name);
	}
	sum = &sums[(uintptr_t)arg];
	*sum = 1469598103934665603ull;
	for (int i = 0; seconds > 0 ? now() < end : i < rounds; i++) {
		one_round(&seed);
		if (i == 0)
			failing_call(&seed);
	}
	return NULL;
}

static int
env_int(const char *name, int def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return def;
	n = strtol(v, &end, 10);
	if (*end != '\0' || n < 1 || n > 1024) {
		fprintf(stderr, "mate-demo: ignoring %s=%s (want 1..1024)\n", name, v);
		return def;
	}
	return (int)n;
}

static void
usage(FILE *f)
{
	fputs("usage: mate-demo [--help]\n"
	    "The demo workload: MATE_DEMO_THREADS (4) client threads call an instrumented\n"
	    "library (rmsnorm, fused_add_rmsnorm, silu_and_mul, softmax, mm) on\n"
	    "MATE_DEMO_WORKERS (3) worker threads, MATE_DEMO_ROUNDS (2) rounds or for\n"
	    "MATE_DEMO_SECONDS; one call per thread fails on purpose. Recorded as the MATE_*\n"
	    "variables say (mate(7)); MATE_DEMO_CHECKSUM=1 prints a checksum of the results;\n"
	    "MATE_DEMO_THREAD_NAMES=1 names the client threads client-0, client-1, ...\n", f);
}

int
main(int argc, char **argv)
{
	int nthreads = env_int("MATE_DEMO_THREADS", 4);
	int workers = env_int("MATE_DEMO_WORKERS", 3);
	pthread_t *tid = calloc((size_t)nthreads, sizeof(*tid));
	const char *s = getenv("MATE_DEMO_SECONDS"), *cs = getenv("MATE_DEMO_CHECKSUM");
	uint64_t total = 1469598103934665603ull;

	if (argc > 1) {   /* no options but --help: anything else is not run */
		int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;

		usage(help ? stdout : stderr);
		free(tid);
		return help ? 0 : 2;
	}
	rounds = env_int("MATE_DEMO_ROUNDS", 2);
	want_checksum = cs != NULL && strcmp(cs, "1") == 0;
	name_threads = getenv("MATE_DEMO_THREAD_NAMES") != NULL &&
	    strcmp(getenv("MATE_DEMO_THREAD_NAMES"), "1") == 0;
	if (s != NULL && *s != '\0')
		seconds = atof(s);
	if (tid == NULL || mini_init(workers) != 0) {
		fprintf(stderr, "mate-demo: cannot start threads\n");
		return 1;
	}
	failures_expected = nthreads;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&tid[i], NULL, client, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	mini_shutdown();
	free(tid);
	if (want_checksum) {
		for (int i = 1; i <= nthreads; i++)
			for (int k = 0; k < 8; k++)
				total = (total ^ (sums[i] >> (8 * k) & 0xff)) * 1099511628211ull;
		printf("mate-demo: results checksum %016llx\n", (unsigned long long)total);
	}
	if (failures_seen != failures_expected) {
		fprintf(stderr, "mate-demo: %ld of %ld deliberate failures seen\n",
		    failures_seen, failures_expected);
		return 1;
	}
	fprintf(stderr, "mate-demo: %d threads x %s done, %ld deliberate failures\n",
	    nthreads, seconds > 0 ? "timed rounds" : "rounds", failures_seen);
	return 0;
}
