/* ring-threads.c: 16 threads racing a crash with MATE_RING's ring on: recstress's add() calls (each tensor's values encode its call's tag) recorded at level 10 by 16 threads; the main thread dies by abort() after a delay, or waits to be killed; and the check of the dumps written from the ring (every tensor the values of its tag).
 *
 * usage: ring-threads run ROOT DELAY_MS abort|abort2|wait   (MATE_RING and the rest from the environment)
 * abort2: two threads call abort() at once (a barrier), so that the second fatal signal
 * comes while the first one's helper writes the ring.
 *        ring-threads check ROOT
 * Exit status: check: 0 every dump holds together, 1 a violation (printed), 2 usage.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dumpcheck.h"
#include "recstress.h"

static void *
calls(void *arg)
{
	(void)arg;
	rs_run_threads(16, -1);
	return NULL;
}

static pthread_barrier_t both;

static void *
second_abort(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&both);
	abort();
}

int
main(int argc, char **argv)
{
	pthread_t t;
	struct dc_stats st;

	if (argc == 3 && strcmp(argv[1], "check") == 0) {
		int rc = dc_check_root(argv[2], 0, 0, rs_check_tensor, NULL, &st);

		printf("ring-threads: %s checked\n", argv[2]);
		return rc == 0 ? 0 : 1;
	}
	if (argc != 5 || strcmp(argv[1], "run") != 0 || (strcmp(argv[4], "abort") != 0 &&
	    strcmp(argv[4], "abort2") != 0 && strcmp(argv[4], "wait") != 0)) {
		fprintf(stderr, "usage: ring-threads run ROOT DELAY_MS abort|abort2|wait | check ROOT\n");
		return 2;
	}
	rs_configure(argv[2], 1);
	if (pthread_create(&t, NULL, calls, NULL) != 0)
		return 2;
	nanosleep(&(struct timespec){ atol(argv[3]) / 1000, atol(argv[3]) % 1000 * 1000000L }, NULL);
	if (strcmp(argv[4], "abort2") == 0) {
		pthread_t t2;

		pthread_barrier_init(&both, NULL, 2);
		if (pthread_create(&t2, NULL, second_abort, NULL) != 0)
			return 2;
		pthread_barrier_wait(&both);
		abort();
	}
	if (strcmp(argv[4], "abort") == 0)
		abort();
	for (;;)
		pause();
}
