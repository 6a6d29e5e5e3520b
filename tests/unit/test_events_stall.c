/* test_events_stall.c: a subscriber that stops reading makes the publisher drop and count frames, without slowing the recorded program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "mate_record.h"
#include "test.h"

#define CALLS 100000

/* The calling thread's CPU time: what the calls cost it, whatever else
 * the machine is doing. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Level-1 calls with their work: 4 events each. @return seconds taken. */
static double
calls(int n)
{
	double t0 = now();

	for (int i = 0; i < n; i++) {
		mate_call *c = mate_call_begin("op", "stall", NULL);
		mate_work w;
		mate_work_begin(&w, mate_call_id(c), "worker_0", "op", 64);
		mate_work_end(&w, 64, 1);
		mate_call_end(c);
	}
	return now() - t0;
}

static unsigned long long
num(const char *frame, const char *key)
{
	const char *p = strstr(frame, key);

	return p != NULL ? strtoull(p + strlen(key), NULL, 10) : 0;
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
		seq = num(buf, "\"seq\":");
		/* numbering starts at 1 with the first event after the
		 * subscription: a first frame past 1 follows drops too */
		if (seq > *last_seq + 1)
			*gaps += seq - *last_seq - 1;
		*last_seq = seq;
		*dropped = num(buf, "\"dropped\":");
		(*frames)++;
	}
}

int
main(void)
{
	char dir[] = "/tmp/mate-stall-XXXXXX", ep[300];
	struct mate_config cfg;
	mate_error err;
	void *ctx, *sub;
	int hwm = 500;
	double t_none, t_stalled;
	unsigned long long frames = 0, gaps = 0, dropped = 0, last = 0;

	if (mkdtemp(dir) == NULL)
		return 99;
	setenv("MATE_MONITOR_DIR", dir, 1);
	setenv("MATE_MONITOR_HWM", "500", 1);
	mate_config_default(&cfg);
	cfg.level = 1;
	cfg.logdest = "/dev/null";
	cfg.monitor = "1";
	CHECK_EQ_INT(mate_configure(&cfg, &err), MATE_OK);
	calls(1000);   /* warm up */
	t_none = calls(CALLS);

	ctx = zmq_ctx_new();
	sub = zmq_socket(ctx, ZMQ_SUB);
	zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
	snprintf(ep, sizeof(ep), "ipc://%s/%ld.ipc", dir, (long)getpid());
	CHECK_EQ_INT(zmq_connect(sub, ep), 0);
	/* read until the subscription has reached the publisher and events
	 * flow (a fixed wait was not always enough on a loaded machine) */
	for (int i = 0; i < 1000 && frames == 0; i++) {
		calls(10);
		usleep(10000);
		read_frames(sub, &frames, &gaps, &dropped, &last);
	}
	CHECK(frames > 0);
	t_stalled = calls(CALLS);
	usleep(300000);
	read_frames(sub, &frames, &gaps, &dropped, &last);
	/* now reading again: later frames carry the count */
	calls(10);
	usleep(300000);
	read_frames(sub, &frames, &gaps, &dropped, &last);
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
	cfg.monitor = NULL;
	cfg.level = 0;
	mate_configure(&cfg, &err);
	rmdir(dir);
	return TEST_DONE();
}
