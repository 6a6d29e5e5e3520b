/* test_events_bignum.c: a subscriber takes frames whose pid, seq, size or dropped count no integer holds (1e300) without undefined behaviour: such a pid is skipped, the counts saturate. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "mate_events.h"
#include "test.h"

/* One frame of pid `pid` with the given seq, size_bytes and dropped texts. */
static void
send_frame(void *pub, const char *pid, const char *seq, const char *size, const char *dropped)
{
	char frame[512];
	int n = snprintf(frame, sizeof(frame), "{\"seq\":%s,\"timestamp\":0.5,\"event\":\"RECV\","
	    "\"client\":\"1\",\"command\":\"op\",\"details\":\"\",\"size_bytes\":%s,"
	    "\"pid\":%s,\"start\":1763782000.25,\"dropped\":%s,\"program\":\"big\"}",
	    seq, size, pid, dropped);

	CHECK(zmq_send(pub, frame, (size_t)n, 0) == n);
}

int
main(void)
{
	char dir[] = "/tmp/mate-bignum-XXXXXX", url[128], sub[64], pid[32];
	void *ctx, *pub;
	mate_monitor *m;
	mate_live_event le;
	mate_publisher_info pi;
	int got = 0;

	if (mkdtemp(dir) == NULL)
		return 99;
	snprintf(url, sizeof(url), "ipc://%s/pub", dir);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	ctx = zmq_ctx_new();
	pub = zmq_socket(ctx, ZMQ_XPUB);
	if (zmq_bind(pub, url) != 0) {
		fprintf(stderr, "bind %s: %s\n", url, zmq_strerror(zmq_errno()));
		return 99;
	}
	m = mate_monitor_new(NULL);
	CHECK(m != NULL);
	CHECK_EQ_INT(mate_monitor_add_endpoint(m, url, NULL), MATE_OK);
	{
		zmq_pollitem_t it = { pub, 0, ZMQ_POLLIN, 0 };
		CHECK(zmq_poll(&it, 1, 10000) == 1 && zmq_recv(pub, sub, sizeof(sub), 0) >= 1);
	}
	mate_monitor_flush(m);

	/* no process has these ids: the frames are not mate's */
	send_frame(pub, "1e300", "1", "1", "0");
	send_frame(pub, "-1e300", "1", "1", "0");
	send_frame(pub, "3e9", "1", "1", "0");
	/* counts past 2^64 (and past 2^63 for the size) saturate */
	send_frame(pub, pid, "1", "1e300", "0");
	send_frame(pub, pid, "1e300", "1", "1e300");
	send_frame(pub, pid, "2e19", "9.3e18", "-1e300");
	while (mate_monitor_next(m, &le, got < 3 ? 5000 : 200, NULL) > 0) {
		CHECK_EQ_INT(mate_monitor_publisher(m, le.publisher, &pi), 0);
		CHECK(pi.pid == (long)getpid());
		switch (got++) {
		case 0:
			CHECK(le.ev.seq == 1);
			CHECK(le.ev.size == INT64_MAX);
			break;
		case 1:
			CHECK(le.ev.seq == UINT64_MAX);
			CHECK(le.ev.size == 1);
			CHECK(le.dropped == UINT64_MAX);
			break;
		case 2:
			CHECK(le.ev.seq == UINT64_MAX);
			CHECK(le.ev.size == INT64_MAX);
			CHECK(le.dropped == 0);
			break;
		}
	}
	CHECK_EQ_INT(got, 3);
	CHECK_EQ_INT(mate_monitor_publishers(m), 1);
	mate_monitor_free(m);
	zmq_close(pub);
	zmq_ctx_term(ctx);
	snprintf(url, sizeof(url), "%s/pub", dir);
	unlink(url);
	rmdir(dir);
	return TEST_DONE();
}
