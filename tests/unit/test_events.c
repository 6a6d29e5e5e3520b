/* test_events.c: the recorder's events in an instruction log: call/work/memory events, ids, depths, sizes, sequence and time order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mate_record.h"
#include "mate_events.h"
#include "events_private.h"
#include "test.h"

#define MAX_EV 64

struct logged {
	char event[32], source[64], command[64], details[256];
	int64_t size;
	uint64_t seq;
	double time;
};

static struct logged evs[MAX_EV];
static int nev;

static void
read_log(const char *path)
{
	mate_error err;
	mate_ilog *r = mate_ilog_open(path, &err);
	mate_event ev;
	mate_ilog_stats st;

	nev = 0;
	CHECK(r != NULL);
	if (r == NULL)
		return;
	while (mate_ilog_next(r, &ev, &err) == 1 && nev < MAX_EV) {
		struct logged *l = &evs[nev++];
		snprintf(l->event, sizeof(l->event), "%s", ev.event);
		snprintf(l->source, sizeof(l->source), "%s", ev.source);
		snprintf(l->command, sizeof(l->command), "%s", ev.command);
		snprintf(l->details, sizeof(l->details), "%s", ev.details);
		l->size = ev.size;
		l->seq = ev.seq;
		l->time = ev.time;
	}
	mate_ilog_get_stats(r, &st);
	CHECK_EQ_INT(st.malformed, 0);
	mate_ilog_free(r);
}

static const char *
detail(int i, const char *key)
{
	static char buf[8][128];
	static int k;
	char *b = buf[k++ & 7];

	if (i < 0 || i >= nev || mate_ilog_detail(evs[i].details, key, b, 128) < 0)
		return "(none)";
	return b;
}

static int
find(const char *event, const char *command, int from)
{
	for (int i = from; i < nev; i++)
		if (strcmp(evs[i].event, event) == 0 && (command == NULL || strcmp(evs[i].command, command) == 0))
			return i;
	return -1;
}

struct work_arg {
	uint64_t call;
};

static void *
worker(void *p)
{
	struct work_arg *a = p;
	mate_work w;

	mate_work_begin(&w, a->call, "worker_7", "gemm", 4096);
	mate_work_end(&w, 1024, 1);
	return NULL;
}

/* Starts a level-lvl session logging to DIR/NAME_%i.log; path gets the
 * log's name in this process. */
static void
log_start(const char *dir, const char *name, int lvl, char *path, size_t cap)
{
	char tmpl[256];

	snprintf(tmpl, sizeof(tmpl), "%s/%s_%%i.log", dir, name);
	snprintf(path, cap, "%s/%s_%ld.log", dir, name, (long)getpid());
	test_record(lvl, tmpl, NULL);
}

/* Stops the session and opens its log: NULL (a failed check) if it cannot. */
static mate_ilog *
log_stop_open(const char *path)
{
	mate_error err;
	mate_ilog *r;

	test_record(0, NULL, NULL);
	r = mate_ilog_open(path, &err);
	CHECK(r != NULL);
	return r;
}

/* A nested call, work on another thread, a failure, memory: level lvl. */
static void
record_session(int lvl, const char *path)
{
	float data[256] = { 0 };
	int64_t shape[1] = { 256 }, shape_small[1] = { 16 };
	mate_tensor t, small;
	struct work_arg wa;
	pthread_t th;
	mate_call *outer, *inner;

	mate_tensor_init(&t, MATE_F32, 1, shape, NULL, data);
	mate_tensor_init(&small, MATE_F32, 1, shape_small, NULL, data);
	test_record(lvl, path, NULL);
	outer = mate_call_begin("gemm", "test", "(a)");
	CHECK(outer != NULL);
	mate_call_tensor(outer, MATE_ARG, NULL, &t);
	mate_call_ready(outer);
	inner = mate_call_begin("helper", "test", "()");
	mate_call_end(inner);
	/* never ready and failed: its RECV and SEND are queued together */
	inner = mate_call_begin("quick", "test", "()");
	mate_call_tensor(inner, MATE_ARG, NULL, &t);
	mate_call_tensor(inner, MATE_RESULT, NULL, &small);
	mate_call_fail(inner, "nope");
	wa.call = mate_call_id(outer);
	CHECK(wa.call != 0);
	pthread_create(&th, NULL, worker, &wa);
	pthread_join(th, NULL);
	mate_event_memory(MATE_EV_MEM_ALLOC, "cuda:0", "cudaMalloc", 0x1000, 3000, 0);
	mate_event_memory(MATE_EV_MEM_ALLOC, "cuda:0", "cudaMalloc", 0x2000, 1000, 0);
	mate_event_memory(MATE_EV_MEM_FREE, "cuda:0", "cudaFree", 0x1000, 3000, 0);
	mate_event_emit("KERNEL_LAUNCH", "cuda:0/stream 7", "k", 0, "grid=1 ok");
	mate_call_fail(outer, "bad shape");
	test_record(0, NULL, NULL);   /* stops the session: DISCONNECT, flushed */
	CHECK_EQ_INT(mate_call_id(outer), 0);
}

static void
check_session(int lvl)
{
	int c, r1, r2, s2, q1, q2, ws, wr, s1, ma, mf, k, d;
	char self[32];

	snprintf(self, sizeof(self), "%s", "");
	CHECK(nev >= 11);
	for (int i = 0; i < nev; i++) {
		CHECK_EQ_INT(evs[i].seq, i + 1);
		if (i > 0)
			CHECK(evs[i].time >= evs[i - 1].time);
	}
	c = find("CONNECT", NULL, 0);
	r1 = find("RECV", "gemm", 0);
	r2 = find("RECV", "helper", 0);
	s2 = find("SEND", "helper", 0);
	ws = find("WORKER_SEND", NULL, 0);
	wr = find("WORKER_RECV", NULL, 0);
	ma = find("MEM_ALLOC", NULL, 0);
	mf = find("MEM_FREE", NULL, 0);
	k = find("KERNEL_LAUNCH", NULL, 0);
	s1 = find("SEND", "gemm", 0);
	d = find("DISCONNECT", NULL, 0);
	CHECK_EQ_INT(c, 0);
	CHECK(c < r1 && r1 < r2 && r2 < s2 && s2 < ws && ws < wr && wr < ma && ma < mf &&
	    mf < k && k < s1 && s1 < d);
	CHECK_EQ_INT(d, nev - 1);
	if (r1 < 0 || s1 < 0 || ws < 0 || wr < 0 || ma < 0 || mf < 0)
		return;
	CHECK_STR(detail(r1, "op"), "gemm");
	CHECK_STR(detail(r1, "depth"), "0");
	CHECK_STR(detail(r2, "depth"), "1");
	CHECK_EQ_INT(evs[r1].size, 1024);            /* the tensor argument */
	CHECK_STR(evs[r1].source, evs[s1].source);   /* the calling thread */
	CHECK_STR(detail(s1, "call"), detail(r1, "call"));
	CHECK(strcmp(detail(r2, "call"), detail(r1, "call")) != 0);
	CHECK_STR(detail(s1, "success"), "False");
	CHECK_CONTAINS(evs[s1].details, "error=bad shape");
	CHECK_STR(detail(s2, "success"), "True");
	CHECK_STR(detail(s2, "error"), "(none)");
	/* a call that was never ready: RECV, then SEND with the next number,
	 * the same time and its own bytes, depth and error */
	q1 = find("RECV", "quick", 0);
	q2 = find("SEND", "quick", 0);
	CHECK(q1 > s2 && q2 == q1 + 1 && q2 < ws);
	if (q1 >= 0 && q2 >= 0) {
		CHECK(evs[q1].time == evs[q2].time);
		CHECK_EQ_INT(evs[q1].size, 1024);   /* the input */
		CHECK_EQ_INT(evs[q2].size, 64);     /* the result */
		CHECK_STR(detail(q1, "depth"), "1");
		CHECK_STR(detail(q2, "depth"), "1");
		CHECK_STR(detail(q2, "call"), detail(q1, "call"));
		CHECK_STR(detail(q1, "error"), "(none)");
		CHECK_STR(detail(q2, "success"), "False");
		CHECK_STR(detail(q2, "error"), "nope");
		CHECK_STR(evs[q2].source, evs[q1].source);
	}
	/* the work joins the call by call=, its two halves by id= */
	CHECK_STR(detail(ws, "call"), detail(r1, "call"));
	CHECK_STR(detail(wr, "id"), detail(ws, "id"));
	CHECK_STR(detail(ws, "worker"), "worker_7");
	CHECK_STR(evs[ws].source, "worker_7");
	CHECK_STR(evs[ws].command, "gemm");
	CHECK_EQ_INT(evs[ws].size, 4096);
	CHECK_EQ_INT(evs[wr].size, 1024);
	/* device memory in use after each event, and its peak */
	CHECK_STR(detail(ma, "in_use"), "3000");
	CHECK_STR(detail(ma, "device"), "cuda:0");
	CHECK_STR(detail(mf, "in_use"), "1000");
	CHECK_STR(detail(mf, "peak"), "4000");
	CHECK_STR(evs[k].source, "cuda:0/stream 7");
	CHECK_STR(evs[k].details, "grid=1 ok");
	(void)lvl;
}

/*
 * The memory log's API (what the interposer and a library's own allocator
 * call) emits the memory events: sizes, pointers, streams, the device and
 * function the interposer names, defaults otherwise; a free of an unknown
 * pointer emits nothing. With events off, naming the source keeps nothing.
 */
static void
check_memlog(const char *dir)
{
	char path[256];
	mate_memlog *m = mate_memlog_new(NULL, NULL);
	int a1, a2, a3, f1, x;

	CHECK(m != NULL);
	log_start(dir, "memlog", 1, path, sizeof(path));
	mate_memlog_allocate(m, 0x1000, 4096, 0);
	CHECK_EQ_INT(mate_event_memory_source("cuda:1", "cudaMallocAsync"), 1);
	mate_memlog_allocate(m, 0x3000, 100, 0x5);
	mate_memlog_allocate(m, 0x4000, 50, 0);
	CHECK_EQ_INT(mate_memlog_deallocate(m, 0x1000, 0), 4096);
	CHECK_EQ_INT(mate_memlog_deallocate(m, 0x9999, 0), -1);
	mate_memlog_failure(m, (uint64_t)1 << 40, 0x7);
	test_record(0, NULL, NULL);
	CHECK_EQ_INT(mate_event_memory_source("cuda:2", "cudaMalloc"), 0);
	mate_memlog_free(m);
	read_log(path);
	unlink(path);
	a1 = find("MEM_ALLOC", NULL, 0);
	a2 = find("MEM_ALLOC", NULL, a1 + 1);
	a3 = find("MEM_ALLOC", NULL, a2 + 1);
	f1 = find("MEM_FREE", NULL, 0);
	x = find("MEM_FAIL", NULL, 0);
	CHECK(a1 >= 0 && a2 > a1 && a3 > a2 && f1 > a3 && x > f1);
	CHECK_EQ_INT(find("MEM_FREE", NULL, f1 + 1), -1);
	if (a1 < 0 || a2 < 0 || a3 < 0 || f1 < 0 || x < 0)
		return;
	CHECK_STR(evs[a1].command, "alloc");
	CHECK_STR(detail(a1, "device"), "cuda:0");
	CHECK_STR(detail(a1, "ptr"), "0x1000");
	CHECK_EQ_INT(evs[a1].size, 4096);
	CHECK_STR(evs[a2].command, "cudaMallocAsync");   /* as named */
	CHECK_STR(detail(a2, "device"), "cuda:1");
	CHECK_STR(detail(a2, "stream"), "0x5");
	CHECK_STR(detail(a2, "in_use"), "100");
	CHECK_STR(evs[a3].command, "alloc");             /* named once only */
	CHECK_STR(detail(a3, "device"), "cuda:0");
	CHECK_STR(detail(a3, "in_use"), "4146");
	CHECK_STR(evs[f1].command, "free");
	CHECK_STR(detail(f1, "ptr"), "0x1000");
	CHECK_STR(detail(f1, "in_use"), "50");
	CHECK_STR(detail(f1, "peak"), "4146");
	CHECK_STR(detail(x, "stream"), "0x7");
	CHECK_STR(detail(x, "in_use"), "50");
}

/*
 * The queue's slots are reused without being cleared: after failed calls
 * (an error in their SEND) and memory events (a device name in the same
 * field) have passed through every slot, a call that succeeds must not
 * show an error, whatever its slot held before.
 */
static void
check_reuse(const char *dir)
{
	char path[256], line[512];
	long fails = 0, errors = 0, sends = 0, bad = 0;
	FILE *f;

	log_start(dir, "reuse", 1, path, sizeof(path));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 12000; i++) {
			mate_call *c = mate_call_begin("f", NULL, NULL);
			mate_call_fail(c, "an error long enough to reach the slot's later lines");
			fails++;
			mate_event_memory(MATE_EV_MEM_ALLOC, "cuda:0", NULL, 0x10, 8, 0x20);
		}
		for (int i = 0; i < 20000; i++) {
			mate_call *c = mate_call_begin("ok", NULL, NULL);
			mate_work w;
			mate_work_begin(&w, mate_call_id(c), "w", "ok", 1);
			mate_work_end(&w, 1, 1);
			mate_call_end(c);
		}
	}
	test_record(0, NULL, NULL);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, " SEND ") != NULL)
			sends++;
		if (strstr(line, "error=") != NULL) {
			errors++;
			bad += strstr(line, " SEND ") == NULL || strstr(line, "op=f ") == NULL;
		}
	}
	fclose(f);
	unlink(path);
	CHECK_EQ_INT(sends, fails + 3 * 20000);
	CHECK_EQ_INT(errors, fails);
	CHECK_EQ_INT(bad, 0);
}

/*
 * Four threads make never-ready calls into one instruction log: the log
 * holds every call, numbered without a gap, and each call's RECV is
 * followed at once by its SEND (the two are claimed together, so no other
 * thread's event comes between them, even while the queue is full).
 */
#define THREAD_CALLS 20000

static void *
caller(void *arg)
{
	(void)arg;
	for (int i = 0; i < THREAD_CALLS; i++)
		mate_call_end(mate_call_begin("t", NULL, NULL));
	return NULL;
}

static void
check_threads(const char *dir)
{
	char path[256], call[32] = "", c2[32];
	pthread_t th[4];
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	long recvs = 0, sends = 0, apart = 0;
	uint64_t seq = 0;
	int gaps = 0, open_recv = 0;

	log_start(dir, "threads", 1, path, sizeof(path));
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, caller, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if ((r = log_stop_open(path)) == NULL)
		return;
	while (mate_ilog_next(r, &ev, &err) == 1) {
		gaps += ev.seq != ++seq;
		if (strcmp(ev.event, "RECV") == 0) {
			recvs++;
			apart += open_recv;   /* two RECVs in a row */
			open_recv = 1;
			mate_ilog_detail(ev.details, "call", call, sizeof(call));
		} else if (strcmp(ev.event, "SEND") == 0) {
			sends++;
			mate_ilog_detail(ev.details, "call", c2, sizeof(c2));
			apart += !open_recv || strcmp(call, c2) != 0;
			open_recv = 0;
		} else
			apart += open_recv;   /* something between a RECV and its SEND */
	}
	mate_ilog_free(r);
	unlink(path);
	CHECK_EQ_INT(gaps, 0);
	CHECK_EQ_INT(recvs, 4 * THREAD_CALLS);
	CHECK_EQ_INT(sends, 4 * THREAD_CALLS);
	CHECK_EQ_INT(apart, 0);
}

/*
 * Calls nested deeper than the thread's 32 frames: the outer 32 have their
 * RECV and SEND with depths 0-31, the deeper ones are not tracked, and
 * once all have ended the next call is at depth 0 again.
 */
#define DEEP 40

static void
check_deep(const char *dir)
{
	char path[256], v[32];
	mate_call *c[DEEP];
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	int recv_depth[DEEP] = { 0 }, send_depth[DEEP] = { 0 }, after = -1, other = 0;

	log_start(dir, "deep", 3, path, sizeof(path));
	for (int i = 0; i < DEEP; i++) {
		c[i] = mate_call_begin("deep", NULL, NULL);
		mate_call_ready(c[i]);
	}
	for (int i = DEEP - 1; i >= 0; i--)
		mate_call_end(c[i]);
	mate_call_end(mate_call_begin("after", NULL, NULL));
	if ((r = log_stop_open(path)) == NULL)
		return;
	while (mate_ilog_next(r, &ev, &err) == 1) {
		int d;
		if (strcmp(ev.event, "RECV") != 0 && strcmp(ev.event, "SEND") != 0)
			continue;
		d = mate_ilog_detail(ev.details, "depth", v, sizeof(v)) < 0 ? -1 : atoi(v);
		if (strcmp(ev.command, "after") == 0 && strcmp(ev.event, "RECV") == 0)
			after = d;
		else if (strcmp(ev.command, "deep") == 0 && d >= 0 && d < DEEP)
			(ev.event[0] == 'R' ? recv_depth : send_depth)[d]++;
		else if (strcmp(ev.command, "after") != 0)
			other++;
	}
	mate_ilog_free(r);
	unlink(path);
	for (int d = 0; d < DEEP; d++) {
		if (recv_depth[d] != (d < 32) || send_depth[d] != (d < 32))
			printf("depth %d: %d RECV, %d SEND\n", d, recv_depth[d], send_depth[d]);
		CHECK_EQ_INT(recv_depth[d], d < 32);
		CHECK_EQ_INT(send_depth[d], d < 32);
	}
	CHECK_EQ_INT(other, 0);
	CHECK_EQ_INT(after, 0);
}

/*
 * A thread whose events block cannot be allocated (calloc fails) makes its
 * calls untracked: they are missing from the log, but counted, as a gap in
 * the numbering of 2 for each call (its RECV and SEND), like any drop.
 * (The test's calloc refuses the block's size while told to; not under a
 * sanitizer, which has its own calloc.)
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_CALLOC_OVERRIDE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define NO_CALLOC_OVERRIDE 1
#endif
#endif

#ifndef NO_CALLOC_OVERRIDE
static volatile int refuse_block;

extern void *__libc_calloc(size_t n, size_t size);

void *
calloc(size_t n, size_t size)
{
	if (refuse_block && n * size == sizeof(struct mate_ev_thread))
		return NULL;
	return __libc_calloc(n, size);
}

static void *
starved(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++)
		mate_call_end(mate_call_begin("starved", NULL, NULL));
	return NULL;
}

static void
check_nomem(const char *dir)
{
	char path[256];
	pthread_t th;
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	uint64_t seq = 0, gaps = 0;
	int fed = 0, starved_seen = 0;

	log_start(dir, "nomem", 1, path, sizeof(path));
	mate_call_end(mate_call_begin("fed", NULL, NULL));
	refuse_block = 1;
	pthread_create(&th, NULL, starved, NULL);
	pthread_join(th, NULL);
	refuse_block = 0;
	mate_call_end(mate_call_begin("fed", NULL, NULL));
	if ((r = log_stop_open(path)) == NULL)
		return;
	while (mate_ilog_next(r, &ev, &err) == 1) {
		gaps += ev.seq - seq - 1;
		seq = ev.seq;
		fed += strcmp(ev.command, "fed") == 0;
		starved_seen += strcmp(ev.command, "starved") == 0;
	}
	mate_ilog_free(r);
	unlink(path);
	CHECK_EQ_INT(fed, 4);
	CHECK_EQ_INT(starved_seen, 0);
	CHECK_EQ_INT(gaps, 20);
}
#endif

/* The folder of the logs the cases write, made and removed by main(). */
static char *tmp;

/* Levels 1 and 3: the stream of a recorded session, read back from its log. */
DEFINE_TEST(session)
{
	char path[512];

	for (int lvl = 1; lvl <= 3; lvl += 2) {
		snprintf(path, sizeof(path), "%s/il_%%i.log", tmp);
		record_session(lvl, path);
		snprintf(path, sizeof(path), "%s/il_%ld.log", tmp, (long)getpid());
		read_log(path);
		check_session(lvl);
		unlink(path);
	}
}

DEFINE_TEST(memlog)
{
	check_memlog(tmp);
}

DEFINE_TEST(reuse)
{
	check_reuse(tmp);
}

DEFINE_TEST(threads)
{
	check_threads(tmp);
}

DEFINE_TEST(deep)
{
	check_deep(tmp);
}

#ifndef NO_CALLOC_OVERRIDE
DEFINE_TEST(nomem)
{
	check_nomem(tmp);
}
#endif

/* Events off: no ids, work not recorded. */
DEFINE_TEST(events_off)
{
	mate_call *c;
	mate_work w;

	test_record(1, NULL, NULL);
	c = mate_call_begin("x", NULL, NULL);
	CHECK_EQ_INT(mate_call_id(c), 0);
	mate_work_begin(&w, 0, "w", "x", 1);
	CHECK_EQ_INT(w.id, 0);
	mate_call_end(c);
	test_record(0, NULL, NULL);
}

TEST_MAIN_TMPDIR("events", tmp)
