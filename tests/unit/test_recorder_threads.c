/* test_recorder_threads.c: 16 threads x 2,000 level-10 calls give exactly 32,000 dumps and 64,000 valid lines.
 *
 * usage: test_recorder_threads [safetensors|pt] [-l | CASE...]
 *
 * Runs on /dev/shm (tmpfs); without it the test is skipped (77), since
 * 96,000 files on a disk take too long for make check, unless
 * MATE_TEST_SLOW=1 asks for it. Every dump is checked by dumpcheck.c:
 * records whole, every session.jsonl line equal to a metadata.jsonl line,
 * and the tensor files parsed with their call's exact values (for .pt
 * files and under sanitizers, those of 1 dump in 8).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dumpcheck.h"
#include "recstress.h"
#include "test.h"

#define THREADS 16
#define CALLS 2000
#define TOTAL (THREADS * CALLS)

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#if !defined(SANITIZED) && defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Every call number 1..TOTAL names exactly one directory. */
static int
call_numbers_exact(const char *root)
{
	static unsigned char seen[TOTAL + 1];
	DIR *d = opendir(root);
	struct dirent *e;
	long n, dup = 0, bad = 0, count = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		const char *c = strrchr(e->d_name, '_');
		if (e->d_name[0] == '.' || strcmp(e->d_name, "session.jsonl") == 0)
			continue;
		if (c == NULL || strncmp(c, "_call", 5) != 0 || (n = strtol(c + 5, NULL, 10)) < 1 || n > TOTAL) {
			bad++;
			continue;
		}
		dup += seen[n]++ > 0;
		count++;
	}
	closedir(d);
	if (dup || bad || count != TOTAL)
		fprintf(stderr, "call numbers: %ld directories, %ld duplicates, %ld out of range\n",
		    count, dup, bad);
	return dup == 0 && bad == 0 && count == TOTAL;
}

static int pt;   /* .pt dumps, else safetensors: the first argument */

DEFINE_TEST(dumps)
{
	struct dc_stats st;
	char root[600];
	const char *dir = rs_shm_usable() ? "/dev/shm" :
	    getenv("top_builddir") ? getenv("top_builddir") : ".";
	double t0, t1;
	long failures;
	int sample;

	snprintf(root, sizeof(root), "%s/mate-test-threads.%ld", dir, (long)getpid());
	rs_configure(root, pt);
	t0 = test_seconds(CLOCK_MONOTONIC);
	failures = rs_run_threads(THREADS, CALLS);
	t1 = test_seconds(CLOCK_MONOTONIC);
	printf("%d threads x %d calls (%s) in %.2f s: %.0f calls/s in all\n", THREADS, CALLS,
	    pt ? ".pt" : "safetensors", t1 - t0, TOTAL / (t1 - t0));
	CHECK_EQ_INT(failures, 0);
	/* every file parsed, but for .pt files (slower to read; the crash
	 * test reads all of its own) and under sanitizers: 1 dump in 8 */
	sample = SANITIZED || pt;
	dc_check_root(root, sample ? DC_SAMPLE_FILES : 0, 0, rs_check_tensor, NULL, &st);
	printf("checked in %.2f s%s\n", test_seconds(CLOCK_MONOTONIC) - t1,
	    sample ? " (the tensor files of 1 dump in 8 parsed)" : "");
	CHECK_EQ_INT(st.errors, 0);
	CHECK_EQ_INT(st.dirs, TOTAL);
	CHECK_EQ_INT(st.completed, TOTAL);
	CHECK_EQ_INT(st.tensor_files, sample ? 2 * (TOTAL / 8) : 2 * TOTAL);
	CHECK_EQ_INT(st.metadata_lines, 2 * TOTAL);
	CHECK_EQ_INT(st.session_lines, 2 * TOTAL);
	CHECK_EQ_INT(st.temp_files, 0);
	CHECK(call_numbers_exact(root));
	t1 = test_seconds(CLOCK_MONOTONIC);
	test_rmtree(root);
	printf("removed in %.2f s\n", test_seconds(CLOCK_MONOTONIC) - t1);
}

int
main(int argc, char **argv)
{
	const char *slow = getenv("MATE_TEST_SLOW");

	pt = rs_format_arg(&argc, &argv);
	if (!rs_shm_usable() && (slow == NULL || strcmp(slow, "1") != 0)) {
		printf("SKIP: no writable tmpfs at /dev/shm; 96,000 files on a disk take too long"
		    " (MATE_TEST_SLOW=1 runs it anyway)\n");
		return 77;
	}
	return test_main(argc, argv);
}
