/* test_events_stall.c: a subscriber that stops reading makes the publisher drop and count frames, without slowing the recorded program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_live.h"

#define CALLS 100000

/* Level-1 calls with their work: 4 events each. @return the calling
 * thread's CPU seconds taken: what the calls cost it, whatever else the
 * machine is doing. */
static double
calls(int n)
{
	double t0 = test_seconds(CLOCK_THREAD_CPUTIME_ID);

	for (int i = 0; i < n; i++) {
		mate_call *c = mate_call_begin("op", "stall", NULL);
		mate_work w;
		mate_work_begin(&w, mate_call_id(c), "worker_0", "op", 64);
		mate_work_end(&w, 64, 1);
		mate_call_end(c);
	}
	return test_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* Reads what has arrived: counts frames, gaps in seq and the drop count. */
static void
read_frames(void *sub, unsigned long long *frames, unsigned long long *gaps,
    unsigned long long *dropped, unsigned long long *last_seq)
{
	char buf[4096];
	int n;

	while ((n = zmq_recv(sub, buf, sizeof(buf) - 1, ZMQ_DONTWAIT)) >= 0) {
		unsigned long long seq;
		buf[n < (int)sizeof(buf) - 1 ? n : (int)sizeof(buf) - 1] = '\0';
		seq = test_frame_num(buf, "\"seq\":");
		/* numbering starts at 1 with the first event after the
		 * subscription: a first frame past 1 follows drops too */
		if (seq > *last_seq + 1)
			*gaps += seq - *last_seq - 1;
		*last_seq = seq;
		*dropped = test_frame_num(buf, "\"dropped\":");
		(*frames)++;
	}
}

DEFINE_TEST(stalled)
{
	char dir[64];
	void *ctx, *sub;
	double t_none, t_stalled;
	unsigned long long frames = 0, gaps = 0, dropped = 0, last = 0;

	setenv("MATE_MONITOR_HWM", "500", 1);
	test_live_start(dir, sizeof(dir), "stall");
	calls(1000);   /* warm up */
	t_none = calls(CALLS);

	ctx = zmq_ctx_new();
	sub = test_live_subscribe(ctx, dir, ZMQ_RCVHWM, 500);
	/* read until the subscription has reached the publisher and events
	 * flow (a fixed wait was not always enough on a loaded machine) */
	TEST_WAIT_UNTIL((calls(10), usleep(10000), read_frames(sub, &frames, &gaps, &dropped, &last),
	    frames > 0));
	CHECK(frames > 0);
	t_stalled = calls(CALLS);
	/* now reading again: later frames carry the count; calls and reads until one has
	 * arrived (two fixed waits of 0.3 s were a race on a loaded machine) */
	TEST_WAIT_UNTIL((read_frames(sub, &frames, &gaps, &dropped, &last), dropped > 0 ||
	    (calls(10), usleep(20000), read_frames(sub, &frames, &gaps, &dropped, &last), dropped > 0)));
	printf("per thread-CPU second: no subscriber %.0f calls/s, stalled subscriber %.0f calls/s (ratio %.2f)\n",
	    CALLS / t_none, CALLS / t_stalled, t_none / t_stalled);
	printf("frames read %llu, seq gaps %llu, dropped (from the stream) %llu\n", frames, gaps,
	    dropped);
	CHECK(frames > 0);
	CHECK(dropped > 0);
	CHECK(frames < 4ull * CALLS);
	/* every frame missing was counted by the publisher */
	CHECK(gaps > 0);
	CHECK_EQ_INT(gaps, dropped);
	/* not slowed: generous, the machine may be busy */
	CHECK(t_stalled < 3 * t_none + 0.5);
	zmq_close(sub);
	zmq_ctx_term(ctx);
	test_record(0, NULL, NULL);
	rmdir(dir);
}

TEST_MAIN()
