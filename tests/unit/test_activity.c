/* test_activity.c: mate-top's aggregate: busy time by op with its moving average, rates, calls without work, threads busy while workers work, memory, gaps, ended processes leaving. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mate_record.h"
#include "mate_events.h"
#include "test.h"

static void
add_pid(mate_activity *a, long pid, double t, const char *event, const char *source,
    const char *details)
{
	mate_live_event le;

	memset(&le, 0, sizeof(le));
	le.ev.time = t;
	le.ev.event = event;
	le.ev.source = source;
	le.ev.command = "cmd";
	le.ev.details = details;
	mate_activity_add(a, pid, "prog", &le);
}

static void
add(mate_activity *a, double t, const char *event, const char *source, int64_t size,
    const char *details, uint64_t missed)
{
	mate_live_event le;

	memset(&le, 0, sizeof(le));
	le.ev.time = t;
	le.ev.event = event;
	le.ev.source = source;
	le.ev.command = "cmd";
	le.ev.size = size;
	le.ev.details = details;
	le.missed = missed;
	mate_activity_add(a, 10, "prog", &le);
}

static int
row_named(const mate_activity *a, const char *name, mate_worker_row *r)
{
	for (int i = 0; i < mate_activity_rows(a); i++)
		if (mate_activity_row(a, i, r) == 0 && strcmp(r->worker, name) == 0)
			return 1;
	return 0;
}

#define NEAR(x, y) (fabs((x) - (y)) < 1e-9)

/* Two intervals of a worker's and a thread's calls, then a disconnect:
 * busy time per op, rates and averages, a process's memory and end. */
DEFINE_TEST(intervals)
{
	mate_activity *a = mate_activity_new(1.0);
	double alpha = 1.0 - exp(-1.0);
	mate_worker_row r;
	mate_process_row p;

	CHECK(a != NULL);
	mate_activity_tick(a, 0.0);
	add(a, 0.0, "WORKER_SEND", "worker_0", 1000, "call=1 id=2 op=mm worker=worker_0", 0);
	add(a, 0.5, "WORKER_RECV", "worker_0", 24, "call=1 id=2 op=mm worker=worker_0 success=True", 0);
	add(a, 0.6, "WORKER_SEND", "worker_0", 0, "call=3 id=4 op=add worker=worker_0", 0);
	/* a call without work counts on its thread; a nested one does not */
	add(a, 0.2, "RECV", "77", 8, "call=5 op=norm depth=0", 0);
	add(a, 0.25, "RECV", "77", 8, "call=6 op=inner depth=1", 0);
	add(a, 0.3, "SEND", "77", 8, "call=6 op=inner depth=1 success=True", 0);
	add(a, 0.4, "SEND", "77", 8, "call=5 op=norm depth=0 success=True", 0);
	add(a, 0.7, "MEM_ALLOC", "77", 4096, "device=cuda:0 ptr=0x1 stream=0x0 in_use=4096 peak=4096", 0);
	add(a, 0.8, "MEM_FREE", "77", 4096, "device=cuda:0 ptr=0x1 stream=0x0 in_use=0 peak=4096", 0);
	mate_activity_tick(a, 1.0);

	CHECK_EQ_INT(mate_activity_rows(a), 2);
	CHECK(row_named(a, "worker_0", &r));
	/* mm 0.5 s finished, add running since 0.6: 0.4 s so far; the first
	 * interval's figures are its own, not a climb from zero */
	CHECK_EQ_INT(r.nops, 2);
	CHECK_STR(r.op[0], "mm");
	CHECK(NEAR(r.op_busy[0], 0.5));
	CHECK_STR(r.op[1], "add");
	CHECK(NEAR(r.op_busy[1], 0.4));
	CHECK(NEAR(r.busy, 0.9));
	CHECK(NEAR(r.ops_per_s, 1.0));
	CHECK_EQ_INT(r.ops, 1);
	CHECK_EQ_INT(r.bytes, 1024);
	CHECK(row_named(a, "thread 77", &r));
	CHECK_EQ_INT(r.nops, 1);
	CHECK_STR(r.op[0], "norm");
	CHECK(NEAR(r.busy, 0.2));
	CHECK_EQ_INT(mate_activity_processes(a), 1);
	CHECK_EQ_INT(mate_activity_process(a, 0, &p), 0);
	CHECK_EQ_INT(p.pid, 10);
	CHECK_STR(p.program, "prog");
	CHECK_EQ_INT(p.ndevices, 1);
	CHECK_STR(p.device[0], "cuda:0");
	CHECK_EQ_INT(p.mem_current[0], 0);
	CHECK_EQ_INT(p.mem_peak[0], 4096);
	CHECK_EQ_INT(p.ended, 0);

	/* the second interval: add ends at 1.5; then frames are missed: an
	 * open span whose end may be lost is forgotten, not busy for ever */
	add(a, 1.5, "WORKER_RECV", "worker_0", 0, "call=3 id=4 op=add worker=worker_0 success=True", 0);
	add(a, 1.6, "WORKER_SEND", "worker_0", 0, "call=7 id=8 op=mm worker=worker_0", 0);
	add(a, 1.7, "RECV", "77", 0, "call=9 op=norm depth=0", 3);
	mate_activity_tick(a, 2.0);
	CHECK(row_named(a, "worker_0", &r));
	CHECK_EQ_INT(r.nops, 2);
	/* averages over the intervals seen, weighted 1 - alpha and alpha */
	double w2 = 1 - (1 - alpha) * (1 - alpha);
	for (int k = 0; k < r.nops; k++)
		if (strcmp(r.op[k], "add") == 0)   /* 0.5 s of this interval */
			CHECK(NEAR(r.op_busy[k], (alpha * 0.4 + alpha * (0.5 - alpha * 0.4)) / w2));
		else   /* mm: decayed, nothing added */
			CHECK(NEAR(r.op_busy[k], alpha * 0.5 * (1 - alpha) / w2));
	add(a, 2.5, "DISCONNECT", "77", 0, "pid=10", 0);
	mate_activity_process(a, 0, &p);
	CHECK_EQ_INT(p.ended, 1);
	mate_activity_free(a);
}

/* A thread is busy for the whole of its calls, waiting for the worker
 * that does their work included (the timeline draws it so): the demo's
 * client threads were at 0% while the timeline showed them 94% busy. */
DEFINE_TEST(thread_busy_while_worker_works)
{
	mate_activity *a = mate_activity_new(1.0);
	mate_worker_row r;

	CHECK(a != NULL);
	mate_activity_tick(a, 0.0);
	add_pid(a, 10, 0.1, "RECV", "77", "call=1 op=mm depth=0");
	add_pid(a, 10, 0.2, "WORKER_SEND", "worker_0", "call=1 id=2 op=mm worker=worker_0");
	add_pid(a, 10, 0.4, "WORKER_RECV", "worker_0", "call=1 id=2 op=mm worker=worker_0 success=True");
	add_pid(a, 10, 0.5, "SEND", "77", "call=1 op=mm depth=0 success=True");
	/* still running at the tick: counts up to it */
	add_pid(a, 10, 0.6, "RECV", "77", "call=3 op=norm depth=0");
	mate_activity_tick(a, 1.0);
	CHECK(row_named(a, "thread 77", &r));
	CHECK(NEAR(r.busy, 0.8));
	CHECK_EQ_INT(r.nops, 2);
	CHECK_STR(r.op[0], "mm");
	CHECK(NEAR(r.op_busy[0], 0.4));
	CHECK_STR(r.op[1], "norm");
	CHECK(NEAR(r.op_busy[1], 0.4));
	CHECK_EQ_INT(r.ops, 1);
	CHECK(row_named(a, "worker_0", &r));
	CHECK(NEAR(r.busy, 0.2));
	mate_activity_free(a);
}

/* Frames the publisher dropped may hold a thread's SEND: its call is not
 * forgotten (under load that emptied busy threads' rows: CI saw 1% beside
 * 100%), the thread's next outermost call closes it. */
DEFINE_TEST(thread_call_whose_end_was_dropped)
{
	mate_activity *a = mate_activity_new(1.0);
	mate_worker_row r;
	mate_live_event le;

	CHECK(a != NULL);
	mate_activity_tick(a, 0.0);
	add_pid(a, 10, 0.1, "RECV", "77", "call=1 op=mm depth=0");
	/* its SEND is lost; the next frame says two were missed */
	memset(&le, 0, sizeof(le));
	le.ev.time = 0.3;
	le.ev.event = "WORKER_SEND";
	le.ev.source = "worker_0";
	le.ev.command = "cmd";
	le.ev.details = "call=1 id=2 op=mm worker=worker_0";
	le.missed = 2;
	mate_activity_add(a, 10, "prog", &le);
	add_pid(a, 10, 0.4, "RECV", "77", "call=3 op=norm depth=0");
	add_pid(a, 10, 0.6, "SEND", "77", "call=3 op=norm depth=0 success=True");
	mate_activity_tick(a, 1.0);
	CHECK(row_named(a, "thread 77", &r));
	CHECK(NEAR(r.busy, 0.5));
	CHECK_EQ_INT(r.ops, 2);
	mate_activity_free(a);
}

/* A thread's outermost call whose RECV was lost: its SEND counts it from the
 * end of the thread's previous call (a thread does one at a time). */
DEFINE_TEST(thread_call_whose_start_was_lost)
{
	mate_activity *a = mate_activity_new(1e-3);
	mate_worker_row r;

	CHECK(a != NULL);
	mate_activity_tick(a, 0.0);
	add_pid(a, 10, 0.1, "RECV", "77", "call=1 op=mm depth=0 thread=loader");
	add_pid(a, 10, 0.2, "SEND", "77", "call=1 op=mm depth=0 success=True");
	/* call 3's RECV is lost */
	add_pid(a, 10, 0.6, "SEND", "77", "call=3 op=norm depth=0 success=True");
	/* a SEND of a thread never seen: no row made for it */
	add_pid(a, 10, 0.7, "SEND", "88", "call=5 op=norm depth=0 success=True");
	mate_activity_tick(a, 1.0);
	CHECK(row_named(a, "thread loader (77)", &r));
	CHECK(NEAR(r.busy, 0.1 + 0.4));
	CHECK_EQ_INT(r.ops, 2);
	CHECK_EQ_INT(mate_activity_rows(a), 1);
	mate_activity_free(a);
}

/* A publisher that lags: a tick counts open work up to now, and its end,
 * coming after the tick with an earlier time, takes the excess back (each
 * interval had kept it: CI saw a worker at 45% that the timeline drew 13%).
 * tau 1 ms: each figure is its interval's own. */
DEFINE_TEST(late_end_gives_back)
{
	mate_activity *a = mate_activity_new(1e-3);
	mate_worker_row r;

	CHECK(a != NULL);
	mate_activity_tick(a, 0.0);
	add_pid(a, 10, 0.9, "WORKER_SEND", "worker_0", "call=1 id=2 op=mm worker=worker_0");
	mate_activity_tick(a, 1.0);                /* 0.1 s counted: the end is still to come */
	CHECK(row_named(a, "worker_0", &r));
	CHECK(NEAR(r.busy, 0.1));
	add_pid(a, 10, 0.91, "WORKER_RECV", "worker_0", "call=1 id=2 op=mm worker=worker_0 success=True");
	add_pid(a, 10, 1.5, "WORKER_SEND", "worker_0", "call=3 id=4 op=mm worker=worker_0");
	add_pid(a, 10, 1.6, "WORKER_RECV", "worker_0", "call=3 id=4 op=mm worker=worker_0 success=True");
	mate_activity_tick(a, 2.0);                /* 0.1 s, less the 0.09 s counted too many */
	CHECK(row_named(a, "worker_0", &r));
	CHECK(fabs(r.busy - 0.01) < 1e-6);
	CHECK_EQ_INT(r.ops, 2);
	mate_activity_free(a);
}

/* A publisher that lags 0.5 s behind (a busy program's sending thread at a
 * tenth of a core): each event comes 0.5 s after its time. Its interval
 * closes at its latest event, so that the figures are the run's (the thread
 * in its calls 60% of the time, the worker 20%), not open calls counted busy
 * up to now and the rest still on its way (CI saw 40% for a worker the
 * timeline drew 12%). A process silent for a whole interval is counted up
 * to now: a call that goes on shows busy. tau 1 ms: each figure its own. */
static void
late_by(mate_activity *a, double lag, double t, const char *event, const char *source,
    const char *details)
{
	mate_activity_set_now(a, t + lag);
	add_pid(a, 10, t, event, source, details);
}

DEFINE_TEST(lagging_publisher)
{
	mate_activity *a = mate_activity_new(1e-3);
	mate_worker_row r;
	char call[64], work[80], done[96];

	CHECK(a != NULL);
	mate_activity_set_now(a, 0.0);
	mate_activity_tick(a, 0.0);
	/* a call every 0.5 s, 0.3 s long; its work on the worker 0.1 s */
	for (int k = 0; k < 4; k++) {
		double t = 0.5 * k;
		snprintf(call, sizeof(call), "call=%d op=mm depth=0", 2 * k + 1);
		snprintf(work, sizeof(work), "call=%d id=%d op=mm worker=worker_0", 2 * k + 1, 2 * k + 2);
		snprintf(done, sizeof(done), "%s success=True", work);
		late_by(a, 0.5, t, "RECV", "77", call);
		if (k == 1) {   /* what came by 1.0: the events of times up to 0.5 */
			mate_activity_tick(a, 1.0);
			CHECK(row_named(a, "thread 77", &r));
			CHECK(NEAR(r.busy, 0.6));
			CHECK(row_named(a, "worker_0", &r));
			CHECK(NEAR(r.busy, 0.2));
		}
		if (k == 3) {   /* by 2.0: up to 1.5 */
			mate_activity_tick(a, 2.0);
			CHECK(row_named(a, "thread 77", &r));
			CHECK(NEAR(r.busy, 0.6));
			CHECK(row_named(a, "worker_0", &r));
			CHECK(NEAR(r.busy, 0.2));
			break;
		}
		late_by(a, 0.5, t + 0.1, "WORKER_SEND", "worker_0", work);
		late_by(a, 0.5, t + 0.2, "WORKER_RECV", "worker_0", done);
		snprintf(done, sizeof(done), "%s success=True", call);
		late_by(a, 0.5, t + 0.3, "SEND", "77", done);
	}
	/* nothing more comes: the call open since 1.5 is busy up to now */
	mate_activity_tick(a, 3.0);
	CHECK(row_named(a, "thread 77", &r));
	CHECK(NEAR(r.busy, 1.0));
	CHECK(row_named(a, "worker_0", &r));
	CHECK(NEAR(r.busy, 0.0));
	mate_activity_free(a);
}

/* A call open at the first tick whose end comes after it, with an earlier
 * time (a lagging publisher), gives back nothing: nothing was counted (the
 * end took 0.4 s off the next call: CI saw client threads at 12-26% that
 * the timeline drew 99%). */
DEFINE_TEST(late_end_before_the_first_tick)
{
	mate_activity *a = mate_activity_new(1e-3);
	mate_worker_row r;

	CHECK(a != NULL);
	add_pid(a, 10, 0.5, "RECV", "77", "call=1 op=mm depth=0");
	mate_activity_tick(a, 1.0);
	add_pid(a, 10, 0.6, "SEND", "77", "call=1 op=mm depth=0 success=True");
	add_pid(a, 10, 1.1, "RECV", "77", "call=3 op=mm depth=0");
	add_pid(a, 10, 1.9, "SEND", "77", "call=3 op=mm depth=0 success=True");
	mate_activity_tick(a, 2.0);
	CHECK(row_named(a, "thread 77", &r));
	CHECK(NEAR(r.busy, 0.8));
	mate_activity_free(a);
}

/* A worker does one piece of work at a time: work whose end was lost (the
 * publisher dropped it; the drop may be told before the work's start comes
 * out) is closed by the next work's start, not left busy until it is stale;
 * a row whose work does overlap (an async stream) is left alone after the
 * first overlap shows. */
DEFINE_TEST(worker_work_whose_end_was_lost)
{
	mate_activity *a = mate_activity_new(1e-3);
	mate_worker_row r;

	CHECK(a != NULL);
	mate_activity_tick(a, 0.0);
	add_pid(a, 10, 0.1, "WORKER_SEND", "worker_0", "call=1 id=2 op=mm worker=worker_0");
	add_pid(a, 10, 0.3, "WORKER_SEND", "worker_0", "call=3 id=4 op=mm worker=worker_0");
	add_pid(a, 10, 0.4, "WORKER_RECV", "worker_0", "call=3 id=4 op=mm worker=worker_0 success=True");
	mate_activity_tick(a, 1.0);
	CHECK(row_named(a, "worker_0", &r));
	CHECK(NEAR(r.busy, 0.3));
	/* a stream: its first overlap is miscounted once, then it overlaps freely */
	add_pid(a, 10, 1.1, "WORKER_SEND", "stream_1", "call=5 id=6 op=k worker=stream_1");
	add_pid(a, 10, 1.2, "WORKER_SEND", "stream_1", "call=7 id=8 op=k worker=stream_1");
	add_pid(a, 10, 1.5, "WORKER_RECV", "stream_1", "call=5 id=6 op=k worker=stream_1 success=True");
	add_pid(a, 10, 1.6, "WORKER_RECV", "stream_1", "call=7 id=8 op=k worker=stream_1 success=True");
	add_pid(a, 10, 2.1, "WORKER_SEND", "stream_1", "call=9 id=10 op=k worker=stream_1");
	add_pid(a, 10, 2.2, "WORKER_SEND", "stream_1", "call=11 id=12 op=k worker=stream_1");
	add_pid(a, 10, 2.5, "WORKER_RECV", "stream_1", "call=9 id=10 op=k worker=stream_1 success=True");
	add_pid(a, 10, 2.6, "WORKER_RECV", "stream_1", "call=11 id=12 op=k worker=stream_1 success=True");
	mate_activity_tick(a, 3.0);
	CHECK(row_named(a, "stream_1", &r));
	/* from 1.0 to 3.0: 6 closed at 8's start (0.1 s, its 0.3 s after it lost), 8
	 * whole (0.4 s), then 10 and 12 overlapping, whole (0.4 s each) */
	CHECK(NEAR(r.busy, (0.1 + 0.4 + 0.4 + 0.4) / 2.0));
	CHECK_EQ_INT(r.ops, 4);
	mate_activity_free(a);
}

/* A process that ended stays (marked) for the linger time, then leaves with
 * its rows; another's rows keep their open work. An end without a
 * DISCONNECT (killed) is told by mate_activity_end(). */
DEFINE_TEST(ended_processes_leave)
{
	mate_activity *a = mate_activity_new(1.0);
	mate_worker_row r;
	mate_process_row p;

	CHECK(a != NULL);
	mate_activity_set_linger(a, 0.5);
	mate_activity_tick(a, 0.0);
	add_pid(a, 10, 0.1, "WORKER_SEND", "worker_0", "call=1 id=2 op=mm worker=worker_0");
	add_pid(a, 20, 0.1, "WORKER_SEND", "worker_9", "call=1 id=2 op=add worker=worker_9");
	add_pid(a, 30, 0.1, "RECV", "5", "call=1 op=norm depth=0");
	add_pid(a, 10, 0.2, "DISCONNECT", "77", "pid=10");
	mate_activity_end(a, 30, 0.3);
	mate_activity_tick(a, 0.6);
	CHECK_EQ_INT(mate_activity_processes(a), 3);
	CHECK_EQ_INT(mate_activity_rows(a), 3);
	mate_activity_process(a, 2, &p);
	CHECK_EQ_INT(p.pid, 30);
	CHECK_EQ_INT(p.ended, 1);
	mate_activity_tick(a, 1.0);
	/* 10 and 30 are gone; 20's worker is still busy with the same work */
	CHECK_EQ_INT(mate_activity_processes(a), 1);
	CHECK_EQ_INT(mate_activity_rows(a), 1);
	mate_activity_process(a, 0, &p);
	CHECK_EQ_INT(p.pid, 20);
	CHECK_EQ_INT(p.ended, 0);
	mate_activity_tick(a, 2.0);
	CHECK(mate_activity_row(a, 0, &r) == 0);
	CHECK_STR(r.worker, "worker_9");
	CHECK_EQ_INT(r.process, 0);
	CHECK(r.busy > 0.95);   /* its work counted through the tick at 2.0 (0.98) */
	add_pid(a, 20, 2.5, "WORKER_RECV", "worker_9", "call=1 id=2 op=add worker=worker_9 success=True");
	mate_activity_tick(a, 3.0);
	CHECK(mate_activity_row(a, 0, &r) == 0);
	CHECK_EQ_INT(r.ops, 1);
	mate_activity_free(a);
}

TEST_MAIN()
