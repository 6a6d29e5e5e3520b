/* test_events_frames.c: a subscriber reads the numbers of live-event frames exactly as strtod() would, from a plain ZeroMQ publisher. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_live.h"

#define FRAMES 3000

static char stamp[FRAMES][40];
static char size[FRAMES][24];

/* A decimal of 1-7 integer digits and 1-12 fraction digits: up to 19 in
 * all, so both the short (15 digits or fewer) and the long path are taken. */
static void
random_decimal(char *s, size_t cap, unsigned *seed)
{
	int whole = 1 + rand_r(seed) % 7, frac = 1 + rand_r(seed) % 12, n = 0;

	n += snprintf(s + n, cap - (size_t)n, "%d", 1 + rand_r(seed) % 9);
	for (int i = 1; i < whole; i++)
		s[n++] = (char)('0' + rand_r(seed) % 10);
	s[n++] = '.';
	for (int i = 0; i < frac; i++)
		s[n++] = (char)('0' + rand_r(seed) % 10);
	s[n] = '\0';
}

DEFINE_TEST(as_strtod)
{
	struct test_pub p;
	char frame[512];
	mate_live_event le;
	unsigned seed = 20261122;
	int got = 0, n, seen[FRAMES] = { 0 };

	test_pub_open(&p, "frames", FRAMES * 2);
	for (int i = 0; i < FRAMES; i++) {
		random_decimal(stamp[i], sizeof(stamp[i]), &seed);
		/* sizes of 1 to 16 digits (past 2^53 a double rounds them:
		 * as strtod() does) */
		n = snprintf(size[i], sizeof(size[i]), "%d", 1 + rand_r(&seed) % 9);
		for (int k = rand_r(&seed) % 16; k > 0; k--)
			size[i][n++] = (char)('0' + rand_r(&seed) % 10);
		size[i][n] = '\0';
		/* a mate publisher's frame; start has a point too, and the
		 * monitor's base is that start: time = 0.0 + timestamp */
		n = snprintf(frame, sizeof(frame), "{\"seq\":%d,\"timestamp\":%s,\"event\":\"RECV\","
		    "\"client\":\"1\",\"command\":\"op\",\"details\":\"\",\"size_bytes\":%s,"
		    "\"pid\":%ld,\"start\":1763782000.25,\"dropped\":0,\"program\":\"frames\"}",
		    i + 1, stamp[i], size[i], (long)getpid());
		CHECK(zmq_send(p.pub, frame, (size_t)n, 0) == n);
	}
	while (got < FRAMES && mate_monitor_next(p.m, &le, 5000, NULL) > 0) {
		int i = (int)le.ev.seq - 1;
		got++;
		if (i < 0 || i >= FRAMES || seen[i]++) {
			CHECK(!"a sequence number sent once");
			continue;
		}
		if (le.ev.time != strtod(stamp[i], NULL))
			fprintf(stderr, "timestamp %s read as %.17g, strtod: %.17g\n", stamp[i],
			    le.ev.time, strtod(stamp[i], NULL));
		CHECK(le.ev.time == strtod(stamp[i], NULL));
		if (le.ev.size != (int64_t)strtod(size[i], NULL))
			fprintf(stderr, "size %s read as %lld\n", size[i], (long long)le.ev.size);
		CHECK(le.ev.size == (int64_t)strtod(size[i], NULL));
	}
	CHECK_EQ_INT(got, FRAMES);
	CHECK(mate_monitor_base(p.m) == 1763782000.25);
	test_pub_close(&p);
}

TEST_MAIN()
