/* first-chain.c: a recorded multi-process run for mate-replay --first: PROCS processes each make CALLS chained minilib calls (rmsnorm, silu_and_mul, mm, fused_add_rmsnorm in place; each one's output the next one's input).
 *
 * usage: first-chain PROCS CALLS   (record with MATE_LOGLEVEL=10 MATE_DUMP_DIR=...)
 * FIRST_CHAIN_HOG=1: in each process a thread allocates and touches up to 512 MiB, again
 * and again, while the calls go on (MATE_RING's simulated OOM kill).
 * Exit status: 0 every process made its calls, 1 one failed, 2 usage.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mate_core.h>

#include "minilib.h"

static uint32_t
next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static float *
filled(size_t n, uint32_t *seed)
{
	float *p = malloc(n * sizeof(*p));

	for (size_t i = 0; p != NULL && i < n; i++)
		p[i] = (float)(next_rand(seed) % 4096) / 1024.0f - 2.0f;
	return p;
}

static void *
hog(void *arg)
{
	static char *p[16];

	(void)arg;
	for (unsigned i = 0;; i = (i + 1) % 16) {
		if (p[i] == NULL)
			p[i] = malloc((size_t)32 << 20);
		if (p[i] != NULL)
			memset(p[i], (int)i + 1, (size_t)32 << 20);
	}
	return NULL;
}

/* One process's chain: x -> rmsnorm -> y -> silu_and_mul -> h -> mm -> x ->
 * fused_add_rmsnorm (x and r in place) -> x -> rmsnorm -> ... */
static int
chain(int calls, uint32_t seed)
{
	int64_t s_x[2] = { 8, 64 }, s_w[1] = { 64 }, s_h[2] = { 8, 32 }, s_b[2] = { 32, 64 };
	float *x = filled(8 * 64, &seed), *w = filled(64, &seed), *y = filled(8 * 64, &seed);
	float *h = filled(8 * 32, &seed), *b = filled(32 * 64, &seed), *r = filled(8 * 64, &seed);
	mate_tensor tx, tw, ty, th, tb, tr;
	int rc = 0;

	if (x == NULL || w == NULL || y == NULL || h == NULL || b == NULL || r == NULL || mini_init(1) != 0)
		return 1;
	for (int i = 0; i < 64; i++)
		b[i] /= 8;  /* keep mm's outputs near 1 */
	mate_tensor_init(&tx, MATE_F32, 2, s_x, NULL, x);
	mate_tensor_init(&tw, MATE_F32, 1, s_w, NULL, w);
	mate_tensor_init(&ty, MATE_F32, 2, s_x, NULL, y);
	mate_tensor_init(&th, MATE_F32, 2, s_h, NULL, h);
	mate_tensor_init(&tb, MATE_F32, 2, s_b, NULL, b);
	mate_tensor_init(&tr, MATE_F32, 2, s_x, NULL, r);
	for (int i = 0; i < calls && rc == 0; i++) {
		switch (i % 4) {
		case 0: rc = mini_rmsnorm(&tx, &tw, 1e-6, &ty); break;
		case 1: rc = mini_silu_and_mul(&ty, &th); break;
		case 2: rc = mini_mm(&th, &tb, &tx); break;
		default: rc = mini_fused_add_rmsnorm(&tx, &tr, &tw, 1e-6); break;
		}
	}
	if (rc != 0)
		fprintf(stderr, "first-chain: %s\n", mini_last_error());
	mini_shutdown();
	free(x);
	free(w);
	free(y);
	free(h);
	free(b);
	free(r);
	return rc != 0;
}

int
main(int argc, char **argv)
{
	int procs, calls, failed = 0;

	if (argc != 3 || (procs = atoi(argv[1])) < 1 || procs > 4096 || (calls = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: first-chain PROCS CALLS\n");
		return 2;
	}
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("first-chain: fork");
			return 1;
		}
		if (pid == 0) {
			pthread_t th;

			if (getenv("FIRST_CHAIN_HOG") != NULL && pthread_create(&th, NULL, hog, NULL) != 0)
				_exit(1);
			_exit(chain(calls, 2463534242u + 7919u * (uint32_t)p));
		}
	}
	for (int p = 0; p < procs; p++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	return failed;
}
