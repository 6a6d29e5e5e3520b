/* test_memlog.c: unit tests of the memory log (CSV rows, statistics, profile), the CSV reader and the allocation replay. */
#include "mate_record.h"
#include "test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The folder of the files the cases write, made and removed by main(). */
static char *dir;

/* m's statistics are want: "current BYTES/COUNT peak BYTES/COUNT total
 * BYTES/COUNT". */
static void
check_stats(mate_memlog *m, const char *want)
{
	struct mate_memlog_stats st;
	char got[160];

	mate_memlog_get_stats(m, &st);
	snprintf(got, sizeof(got), "current %" PRIu64 "/%" PRIu64 " peak %" PRIu64 "/%" PRIu64
	    " total %" PRIu64 "/%" PRIu64, st.current_bytes, st.current_count, st.peak_bytes,
	    st.peak_count, st.total_bytes, st.total_count);
	CHECK_STR(got, want);
}

DEFINE_TEST(writer)
{
	char tmpl[512], path[512];
	mate_memlog *m;
	mate_memlog_trace *t;
	const struct mate_memlog_event *ev;
	size_t n;
	char *text;
	mate_error err;

	snprintf(tmpl, sizeof(tmpl), "%s/mem-%%i.csv", dir);
	snprintf(path, sizeof(path), "%s/mem-%ld.csv", dir, (long)getpid());
	m = mate_memlog_new(tmpl, &err);
	CHECK(m != NULL);
	mate_memlog_allocate(m, 0x1000, 1024, 0);
	mate_memlog_allocate(m, 0x2000, 2048, 0xabc);
	mate_memlog_failure(m, 1 << 30, 0);
	CHECK_EQ_INT(mate_memlog_deallocate(m, 0x1000, 0), 1024);
	CHECK_EQ_INT(mate_memlog_deallocate(m, 0x1000, 0), -1);   /* not live any more */
	CHECK_EQ_INT(mate_memlog_deallocate(m, 0x9999, 0), -1);   /* never allocated */
	mate_memlog_allocate(m, 0x3000, 100, 0);
	check_stats(m, "current 2148/2 peak 3072/2 total 3172/3");
	CHECK(mate_memlog_error(m) == NULL);
	mate_memlog_free(m);

	text = test_slurp(path, NULL);
	CHECK(text != NULL);
	CHECK(text != NULL && strncmp(text, "Thread,Time,Action,Pointer,Size,Stream\n", 39) == 0);
	/* RMM's spelling: "%p,%zu," then the stream as an ostream prints a pointer */
	CHECK_CONTAINS_ALL(text, ",allocate,0x1000,1024,0\n", ",allocate,0x2000,2048,0xabc\n",
	    ",allocate failure,(nil),1073741824,0\n", ",free,0x1000,1024,0\n");
	if (text != NULL) {   /* "<tid>,HH:MM:SS.ffffff," */
		const char *c = strchr(text + 39, ',');
		CHECK(c != NULL && strlen(c) > 17 && c[3] == ':' && c[6] == ':' && c[9] == '.' &&
		    c[16] == ',');
	}
	free(text);

	t = mate_memlog_read(path, &err);
	CHECK(t != NULL);
	ev = mate_memlog_trace_events(t, &n);
	CHECK_EQ_INT(n, 5);
	CHECK_EQ_INT(mate_memlog_trace_threads(t), 1);
	if (n == 5) {
		CHECK_EQ_INT(ev[0].action, MATE_MEMLOG_ALLOCATE);
		CHECK_EQ_INT(ev[1].stream, 0xabc);
		CHECK_EQ_INT(ev[2].action, MATE_MEMLOG_FAILURE);
		CHECK_EQ_INT(ev[3].action, MATE_MEMLOG_DEALLOCATE);
		CHECK_EQ_INT(ev[3].line, 5);
		CHECK(ev[0].time >= 0 && ev[0].time < 86401);   /* a time of day */
	}
	mate_memlog_trace_free(t);
	unlink(path);

	/* the spelling of RMM's documentation page, on request */
	CHECK_EQ_INT(mate_memlog_format_named("epoch"), MATE_MEMLOG_FORMAT_EPOCH);
	CHECK_EQ_INT(mate_memlog_format_named("rmm"), MATE_MEMLOG_FORMAT_RMM);
	CHECK_EQ_INT(mate_memlog_format_named(NULL), MATE_MEMLOG_FORMAT_RMM);
	CHECK_EQ_INT(mate_memlog_format_named("RMM"), -1);
	CHECK_EQ_INT(mate_memlog_set_format(NULL, 7), MATE_ERR_ARGUMENT);
	m = mate_memlog_new(tmpl, &err);
	CHECK_EQ_INT(mate_memlog_set_format(m, MATE_MEMLOG_FORMAT_EPOCH), MATE_OK);
	mate_memlog_allocate(m, 0x1000, 1024, 0);
	mate_memlog_failure(m, 1 << 30, 0);
	mate_memlog_deallocate(m, 0x1000, 0);
	mate_memlog_free(m);
	text = test_slurp(path, NULL);
	CHECK_CONTAINS(text, ",allocate,0x1000,1024,0x0\n");
	CHECK_CONTAINS(text, ",allocate failure,0x0,1073741824,0x0\n");
	CHECK_CONTAINS(text, ",deallocate,0x1000,1024,0x0\n");
	free(text);
	t = mate_memlog_read(path, &err);
	ev = mate_memlog_trace_events(t, &n);
	CHECK_EQ_INT(n, 3);
	if (n == 3) {
		CHECK_EQ_INT(ev[2].action, MATE_MEMLOG_DEALLOCATE);
		CHECK(ev[0].time > 1.6e9);
	}
	mate_memlog_trace_free(t);
	unlink(path);

	/* an unwritable path stops the CSV, not the statistics */
	m = mate_memlog_new("/nonexistent-dir/x.csv", NULL);
	mate_memlog_allocate(m, 0x10, 5, 0);
	check_stats(m, "current 5/1 peak 5/1 total 5/1");
	CHECK_CONTAINS(mate_memlog_error(m), "/nonexistent-dir/x.csv");
	mate_memlog_free(m);
}

/* Many pointers through the live map: growth and backward-shift deletion. */
DEFINE_TEST(live_map)
{
	mate_memlog *m = mate_memlog_new(NULL, NULL);
	int ok = 1;

	for (uint64_t i = 1; i <= 5000; i++)
		mate_memlog_allocate(m, i * 256, i, 0);
	for (uint64_t i = 1; i <= 5000; i += 2)
		ok &= mate_memlog_deallocate(m, i * 256, 0) == (int64_t)i;
	for (uint64_t i = 2; i <= 5000; i += 2)
		ok &= mate_memlog_deallocate(m, i * 256, 0) == (int64_t)i;
	CHECK(ok);
	/* all 5000 live at once before the first free: 1 + 2 + ... + 5000 bytes */
	check_stats(m, "current 0/0 peak 12502500/5000 total 12502500/5000");
	mate_memlog_free(m);
}

static void *
alloc_7_outside(void *arg)
{
	mate_memlog_allocate(arg, 0x600, 7, 0);
	return NULL;
}

DEFINE_TEST(profile)
{
	mate_memlog *m = mate_memlog_new(NULL, NULL);
	char *r;

	/* outer allocates 100, inner allocates 1000 and frees it, twice */
	mate_memlog_push(m, "script.py", 5, "outer");
	mate_memlog_allocate(m, 0x100, 100, 0);
	for (int i = 0; i < 2; i++) {
		mate_memlog_push(m, "script.py", 9, "inner");
		mate_memlog_allocate(m, 0x200, 1000, 0);
		mate_memlog_deallocate(m, 0x200, 0);
		mate_memlog_pop(m);
	}
	mate_memlog_pop(m);
	mate_memlog_allocate(m, 0x300, 5, 0);    /* outside any block */
	mate_memlog_push(m, "big.c", 1, "big");
	mate_memlog_allocate(m, 0x400, 1000016, 0);
	mate_memlog_pop(m);
	/* outside again, on this thread and another: 5 + 20, then 7 after a free */
	mate_memlog_allocate(m, 0x500, 20, 0);
	mate_memlog_deallocate(m, 0x500, 0);
	mate_memlog_deallocate(m, 0x300, 0);
	{
		pthread_t th;
		CHECK(pthread_create(&th, NULL, alloc_7_outside, m) == 0 && pthread_join(th, NULL) == 0);
	}
	r = mate_memlog_profile(m);
	CHECK(r != NULL);
	CHECK(r != NULL && strncmp(r, "Memory Profiling\n================\n\nLegends:\n", 44) == 0);
	CHECK_CONTAINS_ALL(r,
	    "\nOrdered by: memory_peak\n\nncalls     memory_peak    memory_total  filename:lineno(function)\n",
	    "     1       1,000,016       1,000,016  big.c:1(big)\n",
	    /* outer's peak is its 100 plus the inner's 1000; total 100 + 2 * 1000 */
	    "     1           1,100           2,100  script.py:5(outer)\n",
	    "     2           1,000           2,000  script.py:9(inner)\n",
	    /* what no block took: a row of its own, one block over the whole run */
	    "     1              25              32  <outside any call>\n");
	/* ordered by peak: big, outer, inner */
	CHECK(r != NULL && strstr(r, "(big)") < strstr(r, "(outer)") && strstr(r, "(outer)") < strstr(r, "(inner)"));
	free(r);
	mate_memlog_free(m);
}

/* A block pushed again from the same buffer, now holding another name, or
 * at another line: each name its own row. */
DEFINE_TEST(profile_names)
{
	mate_memlog *m = mate_memlog_new(NULL, NULL);
	char fn[16], *r;

	strcpy(fn, "aa");
	for (int i = 0; i < 3; i++) {
		mate_memlog_push(m, "f.c", 1, fn);
		mate_memlog_pop(m);
	}
	strcpy(fn, "bb");
	mate_memlog_push(m, "f.c", 1, fn);
	mate_memlog_pop(m);
	mate_memlog_push(m, "f.c", 12, fn);
	mate_memlog_pop(m);
	mate_memlog_push(m, "g.c", 12, fn);
	mate_memlog_pop(m);
	r = mate_memlog_profile(m);
	CHECK_CONTAINS_ALL(r, "     3               0               0  f.c:1(aa)\n",
	    "     1               0               0  f.c:1(bb)\n",
	    "     1               0               0  f.c:12(bb)\n",
	    "     1               0               0  g.c:12(bb)\n");
	free(r);
	mate_memlog_free(m);
}

DEFINE_TEST(reader_rmm)
{
	static const char rmm[] =
	    "Thread,Time,Action,Pointer,Size,Stream\r\n"
	    "140573312345856,11:52:31.123456,allocate,0x7f8a40000000,1024,7f8a38001020\r\n"
	    "140573312345857,11:52:31.234567,allocate,7f8a40000400,2048,0\r\n"
	    "140573312345856,11:52:31.300000,allocate failure,(nil),99999999999,0\r\n"
	    "140573312345856,11:52:31.345678,free,0x7f8a40000000,1024,7f8a38001020\r\n";
	static const char reordered[] =
	    "Action,Size,Pointer\nallocate,10,0x10\nfree,10,10";
	mate_error err;
	mate_memlog_trace *t = mate_memlog_parse(rmm, sizeof(rmm) - 1, &err);
	const struct mate_memlog_event *ev;
	size_t n;

	CHECK(t != NULL);
	ev = mate_memlog_trace_events(t, &n);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(mate_memlog_trace_threads(t), 2);
	CHECK_EQ_INT(mate_memlog_trace_thread_id(t, 1), 140573312345857ULL);
	if (n == 4) {
		CHECK_EQ_INT(ev[0].stream, 0x7f8a38001020ULL);
		CHECK_EQ_INT(ev[1].ptr, 0x7f8a40000400ULL);
		CHECK_EQ_INT(ev[1].thread, 1);
		CHECK_EQ_INT(ev[2].action, MATE_MEMLOG_FAILURE);
		CHECK_EQ_INT(ev[3].action, MATE_MEMLOG_DEALLOCATE);
		CHECK(ev[0].time > 42751.12 && ev[0].time < 42751.13);
	}
	mate_memlog_trace_free(t);

	t = mate_memlog_parse(reordered, sizeof(reordered) - 1, &err);
	CHECK(t != NULL);
	ev = mate_memlog_trace_events(t, &n);
	CHECK_EQ_INT(n, 2);
	if (n == 2)
		CHECK_EQ_INT(ev[1].ptr, 0x10);
	mate_memlog_trace_free(t);
}

static void
expect_parse_error(const char *text, const char *msg)
{
	mate_error err;
	mate_memlog_trace *t = mate_memlog_parse(text, strlen(text), &err);

	CHECK(t == NULL);
	if (t == NULL)
		CHECK_CONTAINS(err.message, msg);
	mate_memlog_trace_free(t);
}

DEFINE_TEST(reader_errors)
{
	char *long_line = malloc(5000);

	expect_parse_error("1,2.0,allocate,0x10,abc,0\n", "memory log:1: bad Size 'abc'");
	expect_parse_error("Thread,Time,Action,Pointer,Size,Stream\n1,2.0,grab,0x10,1,0\n",
	    ":2: unknown Action 'grab'");
	expect_parse_error("1,2.0,allocate,0x10,1\n", ":1: 5 fields, expected 6");
	expect_parse_error("1,2.0,allocate,0xzz,1,0\n", ":1: bad Pointer '0xzz'");
	expect_parse_error("1,25:00:00.0,allocate,0x10,1,0\n", ":1: bad Time");
	expect_parse_error("1,2.0,allocate,(nil),1,0\n", ":1: allocate of a null Pointer");
	expect_parse_error("1,2.0,allocate,0x10,99999999999999999999999,0\n", "bad Size");
	expect_parse_error("Thread,Time,Pointer\n", "lacks Action");
	memset(long_line, 'x', 4999);
	long_line[4999] = '\0';
	expect_parse_error(long_line, "longer than 4096");
	free(long_line);
}

static mate_memlog_trace *
parse_ok(const char *text)
{
	mate_error err;
	mate_memlog_trace *t = mate_memlog_parse(text, strlen(text), &err);

	if (t == NULL)
		fprintf(stderr, "parse failed: %s\n", err.message);
	CHECK(t != NULL);
	return t;
}

DEFINE_TEST(replay)
{
	/* two threads, a leak, a failure row, a reused pointer, a size mismatch */
	static const char log[] =
	    "1,1.0,allocate,0x1000,1000,0\n"
	    "2,1.1,allocate,0x2000,300000,0x55\n"
	    "1,1.2,allocate failure,0x0,99999999999999,0\n"
	    "2,1.3,deallocate,0x1000,1000,0\n"
	    "1,1.4,allocate,0x1000,5000,0\n"
	    "1,1.5,deallocate,0x2000,7,0x55\n"
	    "2,1.6,allocate,0x3000,64,0\n";
	mate_memlog_trace *t = parse_ok(log);
	struct mate_alloc_replay_result res;
	mate_error err;

	for (size_t i = 0; i < 2; i++) {
		const char *name = mate_alloc_replay_allocator(i);
		int rc = mate_alloc_replay(t, name, &res, &err);
		CHECK_EQ_INT(rc, MATE_OK);
		if (rc != MATE_OK)
			fprintf(stderr, "%s: %s\n", name, err.message);
		CHECK_EQ_INT(res.events, 6);
		CHECK_EQ_INT(res.skipped, 1);
		CHECK_EQ_INT(res.leaked_count, 2);
		CHECK_EQ_INT(res.leaked_bytes, 5064);
		CHECK_EQ_INT(res.size_mismatches, 1);
		CHECK_EQ_INT(res.peak_bytes, 305000);
		CHECK(res.peak_footprint >= 305000);
		CHECK_EQ_INT(res.failed_line, 0);
	}
	CHECK_STR(mate_alloc_replay_allocator(0), "malloc");
	CHECK_STR(mate_alloc_replay_allocator(1), "pool");
	CHECK_STR(mate_alloc_replay_allocator(2), "cuda");
	CHECK_STR(mate_alloc_replay_allocator(3), "cuda-async");
	CHECK(mate_alloc_replay_allocator(4) == NULL);
	CHECK_EQ_INT(mate_alloc_replay(t, "bogus", &res, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "unknown allocator 'bogus'");
	mate_memlog_trace_free(t);
}

static void
expect_replay_error(const char *text, int64_t line, const char *msg)
{
	mate_memlog_trace *t = parse_ok(text);
	struct mate_alloc_replay_result res;
	mate_error err;

	CHECK_EQ_INT(mate_alloc_replay(t, "pool", &res, &err), MATE_ERR_FORMAT);
	CHECK_EQ_INT(res.failed_line, line);
	CHECK_CONTAINS(err.message, msg);
	mate_memlog_trace_free(t);
}

DEFINE_TEST(replay_errors)
{
	mate_memlog_trace *t;
	struct mate_alloc_replay_result res;
	mate_error err;

	expect_replay_error("1,1,allocate,0x10,1,0\n1,1,deallocate,0x20,1,0\n", 2,
	    "line 2: deallocate of 0x20 (1 bytes), which the log never allocated");
	expect_replay_error("1,1,allocate,0x10,1,0\n1,1,deallocate,0x10,1,0\n1,1,free,0x10,1,0\n", 3,
	    "which was already freed");
	expect_replay_error("1,1,allocate,0x10,1,0\n1,1,allocate,0x10,1,0\n", 2,
	    "already allocated");
	/* an allocation the allocator cannot satisfy names its row */
	t = parse_ok("1,1,allocate,0x10,1,0\n1,1,allocate,0x20,2305843009213693952,0\n");
	CHECK_EQ_INT(mate_alloc_replay(t, "pool", &res, &err), MATE_ERR_NOMEM);
	CHECK_EQ_INT(res.failed_line, 2);
	CHECK_CONTAINS(err.message, "line 2: allocate of 2305843009213693952 bytes failed with allocator pool");
	mate_memlog_trace_free(t);
}

/* Many threads interleaved: every event runs on its own thread, in order. */
DEFINE_TEST(replay_threads)
{
	size_t cap = 200000, len = 0;
	char *text = malloc(cap);
	mate_memlog_trace *t;
	struct mate_alloc_replay_result res;
	mate_error err;

	for (int i = 0; i < 2000; i++) {
		int th = i % 7;
		len += (size_t)snprintf(text + len, cap - len, "%d,1,allocate,0x%x,%d,0\n", th,
		    (i + 1) * 16, (i % 50) * 100 + 1);
		if (i >= 3)
			len += (size_t)snprintf(text + len, cap - len, "%d,1,free,0x%x,%d,0\n",
			    (th + 3) % 7, (i - 2) * 16, ((i - 3) % 50) * 100 + 1);
	}
	t = parse_ok(text);
	CHECK_EQ_INT(mate_memlog_trace_threads(t), 7);
	for (int k = 0; k < 2; k++) {
		CHECK_EQ_INT(mate_alloc_replay(t, k ? "pool" : "malloc", &res, &err), MATE_OK);
		CHECK_EQ_INT(res.events, 2000 + 1997);
		CHECK_EQ_INT(res.leaked_count, 3);
	}
	mate_memlog_trace_free(t);
	free(text);
}

TEST_MAIN_TMPDIR("test-memlog", dir)
