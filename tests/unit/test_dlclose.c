/* test_dlclose.c: a host that dlopen()s libmate, records from a thread and dlclose()s it before the thread exits is not crashed (libmate's per-thread destructors stay mapped: it is linked -z nodelete). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mate_record.h"
#include "test.h"

static struct {
	void (*config_default)(struct mate_config *);
	int (*configure)(const struct mate_config *, mate_error *);
	mate_call *(*begin)(const char *, const char *, const char *);
	void (*str)(mate_call *, int, const char *, const char *);
	void (*ready)(mate_call *);
	void (*end)(mate_call *);
} M;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int recorded, closed;

/* Records level-3 calls whose log lines need large buffers (libmate keeps
 * those per thread, with a destructor), then waits for the dlclose() and
 * exits: its destructors run after it. */
static void *
recorder(void *arg)
{
	char *big = malloc(20000);

	(void)arg;
	memset(big, 'x', 19999);
	big[19999] = '\0';
	for (int i = 0; i < 10; i++) {
		mate_call *c = M.begin("op", "dlclose", NULL);
		M.str(c, MATE_ARG, "text", big);
		M.ready(c);
		M.end(c);
	}
	free(big);
	pthread_mutex_lock(&mu);
	recorded = 1;
	pthread_cond_broadcast(&cv);
	while (!closed)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static int
host(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	struct mate_config cfg;
	pthread_t th;

	if (h == NULL) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 3;
	}
	*(void **)&M.config_default = dlsym(h, "mate_config_default");
	*(void **)&M.configure = dlsym(h, "mate_configure");
	*(void **)&M.begin = dlsym(h, "mate_call_begin");
	*(void **)&M.str = dlsym(h, "mate_call_str");
	*(void **)&M.ready = dlsym(h, "mate_call_ready");
	*(void **)&M.end = dlsym(h, "mate_call_end");
	if (!M.config_default || !M.configure || !M.begin || !M.str || !M.ready || !M.end)
		return 4;
	M.config_default(&cfg);
	cfg.level = 3;
	cfg.logdest = "/dev/null";
	if (M.configure(&cfg, NULL) != MATE_OK)
		return 5;
	pthread_create(&th, NULL, recorder, NULL);
	pthread_mutex_lock(&mu);
	while (!recorded)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	cfg.level = 0;
	M.configure(&cfg, NULL);
	dlclose(h);
	pthread_mutex_lock(&mu);
	closed = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	return 0;
}

static char lib[4096];   /* libmate.so of the build, found by main() */

/* The host runs in a child, so that a crash is a status to report. */
DEFINE_TEST(thread_after_dlclose)
{
	pid_t pid;
	int status;

	if ((pid = fork()) == 0)
		_exit(host(lib));
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		printf("the host died of signal %d after dlclose(libmate)\n", WTERMSIG(status));
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
	if (test_failures == 0)
		printf("recorded from a thread, dlclose()d libmate, the thread exited cleanly\n");
}

int
main(int argc, char **argv)
{
	const char *top = getenv("top_builddir");

	snprintf(lib, sizeof(lib), "%s/.libs/libmate.so", top != NULL ? top : ".");
	if (access(lib, R_OK) != 0) {
		printf("SKIP: no %s (a static-only build)\n", lib);
		return 77;
	}
	return test_main(argc, argv);
}
