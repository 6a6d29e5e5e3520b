/* mate_monitor.h: live events for tools: find and subscribe to the publishers of monitored processes, merge their events in time order, and aggregate worker activity. */
#ifndef MATE_MONITOR_H_INCLUDED
#define MATE_MONITOR_H_INCLUDED

#include <stdint.h>

#include "mate.h"
#include "mate_events.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Subscribing ------------------------------------------------------------
 * A process recorded with MATE_MONITOR publishes its events on a ZeroMQ PUB
 * socket, one JSON frame per event with GT's keys (seq, timestamp, event,
 * client, command, details, size_bytes) and mate's (pid, start: its start in
 * seconds since the epoch, dropped: frames it could not send so far,
 * program). Locally it binds ipc://DIR/PID.ipc and describes it in
 * DIR/PID.info, DIR being the runtime directory (MATE_MONITOR_DIR, else
 * $XDG_RUNTIME_DIR/mate, else /tmp/mate-UID). A monitor subscribes to
 * publishers and returns their events merged in time order: events are held
 * for a short lag (MATE_MONITOR_LAG_MS, 100 ms) so that a slower publisher's
 * earlier events can be put first. */
typedef struct mate_monitor mate_monitor;

typedef struct mate_live_event {
	mate_event ev;       /* time: seconds since the monitor's base (the
	                      * earliest start of the publishers it knows);
	                      * seq: the publisher's; strings borrowed until
	                      * the next mate_monitor_next() */
	int publisher;       /* index for mate_monitor_publisher() */
	uint64_t dropped;    /* the publisher's drop count with this frame */
} mate_live_event;

typedef struct mate_publisher_info {
	long pid;            /* 0 until known (a tcp endpoint before its first frame) */
	const char *program; /* "" until known */
	const char *endpoint;
	double start;        /* seconds since the epoch; 0 until known */
	uint64_t events;     /* frames received */
	uint64_t dropped;    /* frames it dropped (its latest count) */
	uint64_t lost;       /* sequence gaps its drop count does not explain */
	uint64_t first_seq, last_seq;
	int ended;           /* it said DISCONNECT, or its endpoint went away */
} mate_publisher_info;

/*! mate_monitor_new() : an empty monitor. @return NULL with err set on failure. */
mate_monitor *mate_monitor_new(mate_error *err);
/*! mate_monitor_add_pid() : follows the local process pid: subscribes as
 * soon as its endpoint appears (checked at every mate_monitor_next()). */
int mate_monitor_add_pid(mate_monitor *m, long pid, mate_error *err);
/*! mate_monitor_add_endpoint() : subscribes to a ZeroMQ endpoint
 * ("tcp://host:port", "ipc://path"). */
int mate_monitor_add_endpoint(mate_monitor *m, const char *url, mate_error *err);
/*! mate_monitor_watch_local() : follows every local publisher, present and
 * to come (used when neither pids nor endpoints are given). Endpoints of
 * processes that no longer run are skipped and their files removed. */
int mate_monitor_watch_local(mate_monitor *m, mate_error *err);
/*! mate_monitor_next() : the next event in time order, waiting up to
 * timeout_ms (-1: forever). @return 1 with *ev filled, 0 when none came in
 * time, or a negative mate_status. */
int mate_monitor_next(mate_monitor *m, mate_live_event *ev, int timeout_ms, mate_error *err);
/*! mate_monitor_flush() : stops waiting for late events: what is held comes
 * out of mate_monitor_next() at once (call it when a capture ends). */
void mate_monitor_flush(mate_monitor *m);
/*! mate_monitor_publishers() : how many publishers were seen so far. */
int mate_monitor_publishers(const mate_monitor *m);
/*! mate_monitor_publisher() : the i-th one (strings borrowed until the next
 * call on m). @return 0, or -1 past the last. */
int mate_monitor_publisher(const mate_monitor *m, int i, mate_publisher_info *info);
/*! mate_monitor_base() : the base of event times, seconds since the epoch
 * (0 before the first event). */
double mate_monitor_base(const mate_monitor *m);
/*! mate_monitor_free() : closes the sockets and frees m (NULL ok). */
void mate_monitor_free(mate_monitor *m);

#ifdef __cplusplus
}
#endif
#endif /* MATE_MONITOR_H_INCLUDED */
