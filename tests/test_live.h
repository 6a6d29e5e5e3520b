/* test_live.h: what the C tests of live events share: this process's own events to subscribe to, a plain ZeroMQ publisher a monitor follows, the numbers of a frame. */
#ifndef MATE_TEST_LIVE_H_INCLUDED
#define MATE_TEST_LIVE_H_INCLUDED

#include <zmq.h>

#include "mate_record.h"
#include "mate_events.h"
#include "test.h"

/* Makes the folder /tmp/mate-TAG-XXXXXX (its path in dir, cap bytes; exits
 * 99 when it cannot), publishes this process's live events there
 * (MATE_MONITOR_DIR) and records at level 1. */
static inline void
test_live_start(char *dir, size_t cap, const char *tag)
{
	snprintf(dir, cap, "/tmp/mate-%s-XXXXXX", tag);
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "mkdtemp %s: %s\n", dir, strerror(errno));
		exit(99);
	}
	setenv("MATE_MONITOR_DIR", dir, 1);
	test_record(1, NULL, "1");
}

/* A SUB socket of ctx on this process's events in dir, every topic, the
 * socket option opt set to val first (none when opt is 0). */
static inline void *
test_live_subscribe(void *ctx, const char *dir, int opt, int val)
{
	void *sub = zmq_socket(ctx, ZMQ_SUB);
	char ep[300];

	if (opt != 0)
		zmq_setsockopt(sub, opt, &val, sizeof(val));
	zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
	snprintf(ep, sizeof(ep), "ipc://%s/%ld.ipc", dir, (long)getpid());
	CHECK_EQ_INT(zmq_connect(sub, ep), 0);
	return sub;
}

/* The number after key in a frame's text, 0 without one. */
static inline unsigned long long
test_frame_num(const char *frame, const char *key)
{
	const char *p = strstr(frame, key);

	return p != NULL ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* A plain ZeroMQ publisher (no recorder behind it) and a monitor that
 * follows it. */
struct test_pub {
	char dir[64];           /* /tmp/mate-TAG-XXXXXX */
	char url[128];          /* ipc://DIR/pub */
	void *ctx, *pub;        /* the XPUB socket */
	mate_monitor *m;
};

/* Binds the publisher (send high-water mark hwm, ZeroMQ's own when 0) and
 * subscribes the monitor; returns once the subscription has reached the
 * publisher (frames before it are lost). The monitor is not flushed: a
 * flushed monitor reads its socket for one lag and then no more, so frames
 * sent after a slow start (a loaded machine, a sanitizer build) were never
 * read; held for the lag, every frame comes out of mate_monitor_next() in
 * its time. Exits 99 when it cannot bind. */
static inline void
test_pub_open(struct test_pub *p, const char *tag, int hwm)
{
	zmq_pollitem_t it;
	char sub[64];

	snprintf(p->dir, sizeof(p->dir), "/tmp/mate-%s-XXXXXX", tag);
	if (mkdtemp(p->dir) == NULL)
		exit(99);
	snprintf(p->url, sizeof(p->url), "ipc://%s/pub", p->dir);
	p->ctx = zmq_ctx_new();
	p->pub = zmq_socket(p->ctx, ZMQ_XPUB);
	if (hwm != 0)
		zmq_setsockopt(p->pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	if (zmq_bind(p->pub, p->url) != 0) {
		fprintf(stderr, "bind %s: %s\n", p->url, zmq_strerror(zmq_errno()));
		exit(99);
	}
	p->m = mate_monitor_new(NULL);
	CHECK(p->m != NULL);
	CHECK_EQ_INT(mate_monitor_add_endpoint(p->m, p->url, NULL), MATE_OK);
	it = (zmq_pollitem_t){ .socket = p->pub, .events = ZMQ_POLLIN };
	CHECK(zmq_poll(&it, 1, 10000) == 1 && zmq_recv(p->pub, sub, sizeof(sub), 0) >= 1);
}

/* Frees the monitor, closes the publisher and removes its folder. */
static inline void
test_pub_close(struct test_pub *p)
{
	char path[80];

	mate_monitor_free(p->m);
	zmq_close(p->pub);
	zmq_ctx_term(p->ctx);
	snprintf(path, sizeof(path), "%s/pub", p->dir);
	unlink(path);
	rmdir(p->dir);
}

#endif /* MATE_TEST_LIVE_H_INCLUDED */
