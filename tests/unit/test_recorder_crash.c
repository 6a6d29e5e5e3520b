/* test_recorder_crash.c: crash safety of level-10 dumps: abort() inside an API, kill -9 of a 16-thread run at random instants, fork() in the host.
 *
 * usage: test_recorder_crash [safetensors|pt] [-l | CASE...]
 *
 * Every case runs its recording program in a forked child (the test itself
 * never records) and checks the dump root with dumpcheck.c, which parses
 * every file under a final name and every record. Dumps go to /dev/shm
 * when it is a tmpfs (quick), else under the build directory.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "dumpcheck.h"
#include "recstress.h"
#include "test.h"

#define KILL_TRIALS 50
#define KILL_THREADS 16
#define CHILD_LIMIT 120 /* seconds a child may run before it counts as hung */

/*
 * clang 14's AddressSanitizer does not lock its allocator around fork(): a
 * child forked while another thread is inside malloc() waits forever for
 * that lock (seen in CI: the fork case hung in the sanitizer build). glibc's
 * malloc, which every real host uses, is fork-safe, and LLVM 15 fixed ASan.
 */
#if defined(__clang__) && __clang_major__ < 15 && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_UNSAFE_MALLOC "clang < 15 AddressSanitizer's allocator is not fork-safe"
#endif
#endif

static char base[512];
static int use_pt;
static int hung; /* children killed after CHILD_LIMIT */

/* Runs fn(arg) in a child; returns its wait status. A child still
 * running after CHILD_LIMIT seconds is killed and reported as hung. */
static int
in_child(void (*fn)(const char *), const char *root, pid_t *pid_out, double kill_after)
{
	pid_t pid;
	int status;
	double deadline;

	fflush(NULL);
	if ((pid = fork()) < 0) {
		perror("fork");
		exit(99);
	}
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		setpgid(0, 0);
		fn(root);
		_exit(0);
	}
	setpgid(pid, pid); /* as the child does: whichever runs first */
	if (pid_out != NULL)
		*pid_out = pid;
	if (kill_after > 0) {
		struct timespec ts = { (time_t)kill_after, (long)((kill_after - (double)(time_t)kill_after) * 1e9) };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
	}
	deadline = test_seconds(CLOCK_MONOTONIC) + CHILD_LIMIT;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		struct timespec tick = { 0, 2000000 };
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR) {
			perror("waitpid");
			exit(99);
		}
		if (test_seconds(CLOCK_MONOTONIC) > deadline) {
			fprintf(stderr, "FAIL: the child for %s still runs after %d s: killed\n", root,
			    CHILD_LIMIT);
			kill(-pid, SIGKILL); /* its process group: a hung grandchild too */
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			hung++;
			return status;
		}
		nanosleep(&tick, NULL);
	}
}

/* ---- abort() inside an API after its inputs were saved ------------------------------ */

static void
abort_child(const char *root)
{
	mate_call *c;

	rs_configure(root, use_pt);
	for (long i = 1; i <= 3; i++)
		if (rs_call(i) != 0)
			_exit(3);
	c = rs_begin(4);
	(void)c;
	abort(); /* inside the "API": the inputs are saved, the call never returns */
}

DEFINE_TEST(abort)
{
	char root[600];
	struct dc_stats st;
	int status;

	snprintf(root, sizeof(root), "%s/abort", base);
	status = in_child(abort_child, root, NULL, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	dc_check_root(root, 0, 0, rs_check_tensor, NULL, &st);
	CHECK_EQ_INT(st.errors, 0);
	CHECK_EQ_INT(st.dirs, 4);
	CHECK_EQ_INT(st.completed, 3);
	CHECK_EQ_INT(st.inputs_saved, 1);   /* the aborted call: inputs file and its record */
	CHECK_EQ_INT(st.tensor_files, 7);
	CHECK_EQ_INT(st.session_lines, 7);
	CHECK_EQ_INT(st.temp_files, 0);
	test_rmtree(root);
	CHECK_EQ_INT(hung, 0);
}

/* ---- kill -9 at random instants ----------------------------------------------------------- */

static void
kill_child(const char *root)
{
	rs_configure(root, use_pt);
	rs_run_threads(KILL_THREADS, -1);
}

DEFINE_TEST(kill)
{
	struct dc_stats st, sum;
	char root[600];
	double t0 = test_seconds(CLOCK_MONOTONIC), delay;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int status, killed = 0, torn_trials = 0;

	memset(&sum, 0, sizeof(sum));
	printf("kill -9: seed %u\n", seed);
	srand(seed);
	for (int trial = 0; trial < KILL_TRIALS; trial++) {
		snprintf(root, sizeof(root), "%s/kill-%d", base, trial);
		/* 0.2 to 8 ms after fork: before the first dump, or in the middle of them */
		delay = (double)(rand() % 7801) * 1e-6 + 0.2e-3;
		status = in_child(kill_child, root, NULL, delay);
		killed += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		if (access(root, F_OK) != 0)
			continue; /* killed before the dump root was made */
		dc_check_root(root, DC_TORN_LAST_OK | DC_QUIET, KILL_THREADS, rs_check_tensor, NULL, &st);
		if (st.errors > 0)
			fprintf(stderr, "kill -9 trial %d (after %.1f ms): %ld violations\n", trial,
			    delay * 1e3, st.errors);
		torn_trials += st.session_torn_last > 0;
		sum.dirs += st.dirs, sum.completed += st.completed, sum.inputs_saved += st.inputs_saved;
		sum.no_record += st.no_record, sum.empty += st.empty, sum.failed += st.failed;
		sum.tensor_files += st.tensor_files, sum.temp_files += st.temp_files;
		sum.metadata_lines += st.metadata_lines, sum.session_lines += st.session_lines;
		sum.session_torn_last += st.session_torn_last, sum.errors += st.errors;
		test_rmtree(root);
	}
	dc_print("kill -9, all trials", &sum);
	printf("kill -9: %d trials in %.2f s, %d with a torn last line in session.jsonl\n",
	    KILL_TRIALS, test_seconds(CLOCK_MONOTONIC) - t0, torn_trials);
	CHECK_EQ_INT(killed, KILL_TRIALS);
	CHECK_EQ_INT(sum.errors, 0);
	CHECK_EQ_INT(sum.failed, 0);
	/* the kills landed while dumps were being written, not only before or after */
	CHECK(sum.completed > 0);
	CHECK(sum.inputs_saved + sum.no_record + sum.empty > 0);
	CHECK_EQ_INT(hung, 0);
}

/* ---- fork() in the host ------------------------------------------------------------------- */

static void *
background(void *arg)
{
	long first = (long)(intptr_t)arg;

	for (long i = 0; i < 200; i++)
		rs_call(first + i);
	return NULL;
}

static void
fork_child(const char *root)
{
	pthread_t th[2];
	mate_call *x;
	pid_t pid;
	int status, bad = 0;

	rs_configure(root, use_pt);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, background, (void *)(intptr_t)((i + 1) * 1000000));
	bad |= rs_call(1) | rs_call(2);
	x = rs_begin(3); /* in flight across the fork */
	if ((pid = fork()) == 0) {
		/* the child: its own dumps, and it must not finish the parent's call */
		bad = rs_end(x, 3);
		for (long i = 0; i < 3; i++)
			bad |= rs_call(5000000 + i);
		_exit(bad ? 4 : 0);
	}
	waitpid(pid, &status, 0);
	bad |= rs_end(x, 3) | rs_call(4) | rs_call(5);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	_exit(bad || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? 5 : 0);
}

/* Counts the dumps of each pid in root: the first two pids seen. */
static void
count_by_pid(const char *root, long *pid, long *count)
{
	char cmd[700], *out, *line;
	int st;

	snprintf(cmd, sizeof(cmd), "ls '%s' | sed -n 's/.*_pid\\([0-9]*\\)_.*/\\1/p' | sort | uniq -c", root);
	out = test_capture(cmd, &st);
	line = out;
	for (int i = 0; i < 2 && line != NULL && *line != '\0'; i++) {
		sscanf(line, "%ld %ld", &count[i], &pid[i]);
		line = strchr(line, '\n');
		line = line != NULL ? line + 1 : NULL;
	}
	free(out);
}

DEFINE_TEST(fork)
{
	char root[600];
	struct dc_stats st;
	long pids[2] = { 0, 0 }, counts[2] = { 0, 0 }, mine, theirs;
	pid_t parent;
	int status;

#ifdef FORK_UNSAFE_MALLOC
	printf("fork: skipped: %s\n", FORK_UNSAFE_MALLOC);
	return;
#endif
	snprintf(root, sizeof(root), "%s/fork", base);
	status = in_child(fork_child, root, &parent, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	dc_check_root(root, 0, 0, rs_check_tensor, NULL, &st);
	CHECK_EQ_INT(st.errors, 0);
	CHECK_EQ_INT(st.dirs, 5 + 400 + 3);
	CHECK_EQ_INT(st.completed, 5 + 400 + 3);
	CHECK_EQ_INT(st.session_lines, 2 * (5 + 400 + 3));
	count_by_pid(root, pids, counts);
	mine = pids[0] == parent ? counts[0] : counts[1];
	theirs = pids[0] == parent ? counts[1] : counts[0];
	CHECK(pids[0] != pids[1] && (pids[0] == parent || pids[1] == parent));
	CHECK_EQ_INT(mine, 405);   /* the parent's call 3 completed by the parent alone */
	CHECK_EQ_INT(theirs, 3);   /* the child's own dumps, numbered from 1 under its pid */
	test_rmtree(root);
	CHECK_EQ_INT(hung, 0);
}

/* ---- main ----------------------------------------------------------------------------------- */

static void
make_base(void)
{
	const char *dir = getenv("top_builddir");

	if (rs_shm_usable())
		dir = "/dev/shm";
	else if (dir == NULL)
		dir = ".";
	snprintf(base, sizeof(base), "%s/mate-test-crash.%ld", dir, (long)getpid());
	if (mkdir(base, 0755) != 0) {
		fprintf(stderr, "cannot create %s: %s\n", base, strerror(errno));
		exit(99);
	}
}

int
main(int argc, char **argv)
{
	int st;

	/* the format comes first: test_recorder_crash [safetensors|pt] [CASE...] */
	use_pt = rs_format_arg(&argc, &argv);
	make_base();
	fprintf(stderr, "format: %s, dumps under %s\n", use_pt ? ".pt" : "safetensors", base);
	/* The backend is chosen before the children are forked, as in a CUDA
	 * program, whose first device call comes before its first recorded
	 * one: choosing it opens the CUDA module (a tenth of a second and more,
	 * the whole window of the kills below) in a build with CUDA. */
	(void)mate_backend_get();
	st = test_main(argc, argv);
	test_rmtree(base);
	return st;
}
