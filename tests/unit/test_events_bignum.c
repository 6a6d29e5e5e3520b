/* test_events_bignum.c: a subscriber takes frames whose pid, seq, size or dropped count no integer holds (1e300) without undefined behaviour: such a pid is skipped, the counts saturate. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_live.h"

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

DEFINE_TEST(saturate)
{
	struct test_pub p;
	char pid[32];
	mate_live_event le;
	mate_publisher_info pi;
	int got = 0;

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	test_pub_open(&p, "bignum", 0);

	/* no process has these ids: the frames are not mate's */
	send_frame(p.pub, "1e300", "1", "1", "0");
	send_frame(p.pub, "-1e300", "1", "1", "0");
	send_frame(p.pub, "3e9", "1", "1", "0");
	/* counts past 2^64 (and past 2^63 for the size) saturate */
	send_frame(p.pub, pid, "1", "1e300", "0");
	send_frame(p.pub, pid, "1e300", "1", "1e300");
	send_frame(p.pub, pid, "2e19", "9.3e18", "-1e300");
	while (mate_monitor_next(p.m, &le, got < 3 ? 5000 : 200, NULL) > 0) {
		CHECK_EQ_INT(mate_monitor_publisher(p.m, le.publisher, &pi), 0);
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
	CHECK_EQ_INT(mate_monitor_publishers(p.m), 1);
	test_pub_close(&p);
}

TEST_MAIN()
