/* slow-thread-shim.c: an LD_PRELOAD library for tests that holds up the thread that calls pthread_create(), as a loaded machine's scheduler may, while the new thread runs.
 *
 *   MATE_TEST_THREAD_HOLD=FILE    after a pthread_create() that succeeds, called from a
 *                                 library whose path holds MATE_TEST_THREAD_FROM (default
 *                                 "libmate."), the caller waits until FILE exists (120 s
 *                                 at most)
 *
 * Unset, pthread_create() is the C library's. A test makes a window that is microseconds
 * wide in a real run as wide as it needs; the threads of other libraries (ZeroMQ's) are
 * not held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int
pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static create_fn real;
	const char *hold = getenv("MATE_TEST_THREAD_HOLD"), *from = getenv("MATE_TEST_THREAD_FROM");
	Dl_info caller;
	int rc;

	if (real == NULL && (real = (create_fn)dlsym(RTLD_NEXT, "pthread_create")) == NULL)
		abort();
	rc = real(t, attr, fn, arg);
	if (rc == 0 && hold != NULL && *hold != '\0' &&
	    dladdr(__builtin_return_address(0), &caller) != 0 && caller.dli_fname != NULL &&
	    strstr(caller.dli_fname, from != NULL && *from != '\0' ? from : "libmate.") != NULL) {
		struct timespec ten_ms = { 0, 10000000 };

		for (int i = 0; i < 12000 && access(hold, F_OK) != 0; i++)
			nanosleep(&ten_ms, NULL);
	}
	return rc;
}
