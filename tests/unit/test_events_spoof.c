/* test_events_spoof.c: another publisher cannot speak for a real one: its frames under the real one's pid and start, a DISCONNECT among them, are not taken (issue 19, item 9); the real DISCONNECT still is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_live.h"

static void
calls(int n)
{
	for (int i = 0; i < n; i++) {
		mate_call *c = mate_call_begin("op", "spoof", NULL);
		mate_call_end(c);
	}
}

/* The start= line of the real publisher's .info file: what any process
 * can learn of it from its frames or /proc. */
static double
info_start(const char *dir)
{
	char path[400], line[256];
	double start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%ld.info", dir, (long)getpid());
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "start=", 6) == 0)
			start = strtod(line + 6, NULL);
	fclose(f);
	return start;
}

struct seen {
	uint64_t events, disconnects, spoofed;
};

/* Reads for ms milliseconds: events of the real publisher (by index). */
static void
drain(mate_monitor *m, int real, int ms, struct seen *s)
{
	mate_live_event le;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			return;
		if (mate_monitor_next(m, &le, 20, NULL) <= 0)
			continue;
		if (le.publisher != real)
			continue;
		s->events++;
		if (strcmp(le.ev.event, "DISCONNECT") == 0)
			s->disconnects++;
		if (strcmp(le.ev.command, "forged") == 0)
			s->spoofed++;
	}
}

DEFINE_TEST(forged)
{
	char dir[64], url[300], frame[1024], sub[64];
	mate_publisher_info pi;
	mate_error err;
	struct seen s = { 0, 0, 0 };
	void *ctx, *pub;
	mate_monitor *m;
	double start;
	int real = -1, n;

	test_live_start(dir, sizeof(dir), "spoof");
	calls(10);
	start = info_start(dir);
	CHECK(start > 0);

	/* the hostile publisher, on an endpoint of its own */
	snprintf(url, sizeof(url), "ipc://%s/hostile", dir);
	ctx = zmq_ctx_new();
	pub = zmq_socket(ctx, ZMQ_XPUB);
	CHECK_EQ_INT(zmq_bind(pub, url), 0);

	/* no holding back for late frames (mate_monitor_flush() would also end the
	 * reading after one lag: that is for the end of a capture) */
	setenv("MATE_MONITOR_LAG_MS", "0", 1);
	m = mate_monitor_new(&err);
	CHECK(m != NULL);
	CHECK_EQ_INT(mate_monitor_add_pid(m, (long)getpid(), &err), MATE_OK);
	CHECK_EQ_INT(mate_monitor_add_endpoint(m, url, &err), MATE_OK);
	{
		zmq_pollitem_t it = { pub, 0, ZMQ_POLLIN, 0 };
		CHECK(zmq_poll(&it, 1, 10000) == 1 && zmq_recv(pub, sub, sizeof(sub), 0) >= 1);
	}
	/* events of the real publisher flow */
	for (int i = 0; i < 200 && s.events == 0; i++) {
		calls(10);
		drain(m, real, 20, &s);
		for (int k = 0; real < 0 && k < mate_monitor_publishers(m); k++)
			if (mate_monitor_publisher(m, k, &pi) == 0 && pi.pid == (long)getpid() && pi.events > 0)
				real = k;
	}
	CHECK(real >= 0);
	drain(m, real, 100, &s);
	CHECK(s.events > 0);
	mate_monitor_publisher(m, real, &pi);

	/* the hostile one speaks for it: a forged call and a DISCONNECT, with
	 * its pid, start, program and next sequence numbers; without a session,
	 * then with a wrong one */
	for (int variant = 0; variant < 2; variant++) {
		const char *ev[2] = { "RECV", "DISCONNECT" };
		for (int e = 0; e < 2; e++) {
			n = snprintf(frame, sizeof(frame), "{\"seq\":%llu,\"timestamp\":1.0,\"event\":\"%s\","
			    "\"client\":\"1\",\"command\":\"forged\",\"details\":\"\",\"size_bytes\":0,%s"
			    "\"pid\":%ld,\"start\":%.6f,\"dropped\":0,\"program\":\"%s\"}",
			    (unsigned long long)pi.last_seq + 1 + (unsigned)e, ev[e],
			    variant ? "\"session\":\"0123456789abcdef\"," : "", (long)getpid(), start,
			    pi.program);
			CHECK(zmq_send(pub, frame, (size_t)n, 0) == n);
		}
	}
	calls(10);
	drain(m, real, 300, &s);
	mate_monitor_publisher(m, real, &pi);
	printf("real publisher: %llu events taken, %llu forged, %llu DISCONNECT; ended %d\n",
	    (unsigned long long)s.events, (unsigned long long)s.spoofed,
	    (unsigned long long)s.disconnects, pi.ended);
	CHECK_EQ_INT(s.spoofed, 0);
	CHECK_EQ_INT(s.disconnects, 0);
	CHECK_EQ_INT(pi.ended, 0);
	/* it goes on being followed */
	uint64_t before = s.events;
	calls(10);
	drain(m, real, 300, &s);
	CHECK(s.events > before);

	/* the real DISCONNECT is taken */
	test_record(0, NULL, NULL);
	drain(m, real, 500, &s);
	mate_monitor_publisher(m, real, &pi);
	CHECK_EQ_INT(s.disconnects, 1);
	CHECK_EQ_INT(pi.ended, 1);
	mate_monitor_free(m);
	zmq_close(pub);
	zmq_ctx_term(ctx);
	unlink(url + 6);
	rmdir(dir);
}

TEST_MAIN()
