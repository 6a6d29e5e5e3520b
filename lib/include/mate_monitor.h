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
	uint64_t missed;     /* events of this publisher missing just before it
	                      * (a sequence gap or a larger drop count) */
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
/*! mate_monitor_warning() : what was wrong with the settings read from the
 * environment (a bad MATE_MONITOR_LAG_MS: the default is used), for the
 * caller to print; NULL when nothing. Borrowed until mate_monitor_free(). */
const char *mate_monitor_warning(const mate_monitor *m);
/*! mate_monitor_add_pid() : follows the local process pid: subscribes as
 * soon as its endpoint appears (checked at every mate_monitor_next()).
 * @return MATE_ERR_ARGUMENT when no process has that pid. */
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
 * out of mate_monitor_next() at once, and the socket is read for one lag
 * (MATE_MONITOR_LAG_MS) more, then no longer (call it when a capture ends;
 * a flooding publisher cannot keep it going). */
void mate_monitor_flush(mate_monitor *m);
/*! mate_monitor_publishers() : how many publishers were seen so far. */
int mate_monitor_publishers(const mate_monitor *m);
/*! mate_monitor_publisher() : the i-th one (strings borrowed until the next
 * call on m). @return 0, or -1 past the last. */
int mate_monitor_publisher(const mate_monitor *m, int i, mate_publisher_info *info);
/*! mate_monitor_base() : the base of event times, seconds since the epoch
 * (0 before the first event). */
double mate_monitor_base(const mate_monitor *m);
/*! mate_monitor_lag() : how long events are held for ordering, in seconds
 * (MATE_MONITOR_LAG_MS): what has come out covers up to now minus this. */
double mate_monitor_lag(const mate_monitor *m);
/*! mate_monitor_free() : closes the sockets and frees m (NULL ok). */
void mate_monitor_free(mate_monitor *m);

/* ---- Activity (what mate-top shows) ------------------------------------------
 * Aggregates live events into one row per worker of each process: the work
 * it did (WORKER_SEND..WORKER_RECV, paired by id=) as busy time per op,
 * smoothed by an exponential moving average over a time constant (weighted
 * by the intervals a row has seen, so that its first interval gives that
 * interval's figures, not a climb from zero), ops per second and bytes moved. A call that caused no work is counted on a row
 * of its own thread ("thread TID"). Device memory (current and peak) comes
 * from the memory events' in_use= and peak=. */
typedef struct mate_activity mate_activity;

#define MATE_ACTIVITY_OPS 8   /* ops kept per row, busiest first */

typedef struct mate_worker_row {
	int process;         /* index for mate_activity_process() */
	const char *worker;  /* "worker_0", "thread 4711", ... */
	double busy;         /* smoothed busy fraction, 0..1 (sum of the ops') */
	int nops;
	const char *op[MATE_ACTIVITY_OPS];
	double op_busy[MATE_ACTIVITY_OPS]; /* smoothed busy fraction of each op */
	double ops_per_s;    /* smoothed */
	double bytes_per_s;  /* smoothed */
	uint64_t ops;        /* work finished, in all */
	uint64_t bytes;      /* bytes moved (sent and returned), in all */
} mate_worker_row;

typedef struct mate_process_row {
	long pid;
	const char *program;
	uint64_t events;
	uint64_t dropped;    /* as the publisher reports them */
	int ended;
	int ndevices;
	const char *device[4];
	int64_t mem_current[4], mem_peak[4];
} mate_process_row;

/*! mate_activity_new() : an empty aggregate smoothing over tau seconds
 * (tau <= 0: 1 s). @return NULL when out of memory. */
mate_activity *mate_activity_new(double tau);
/*! mate_activity_add() : one event of process pid (program may be NULL). */
void mate_activity_add(mate_activity *a, long pid, const char *program,
    const mate_live_event *le);
/*! mate_activity_tick() : closes the interval that ends at now (seconds on
 * the events' time base) and updates the averages. */
void mate_activity_tick(mate_activity *a, double now);
/*! mate_activity_rows() / mate_activity_row() : rows in a stable order
 * (process, then first appearance); strings borrowed until the next add. */
int mate_activity_rows(const mate_activity *a);
int mate_activity_row(const mate_activity *a, int i, mate_worker_row *row);
int mate_activity_processes(const mate_activity *a);
int mate_activity_process(const mate_activity *a, int i, mate_process_row *p);
/*! mate_activity_free() : frees a (NULL ok). */
void mate_activity_free(mate_activity *a);

#ifdef __cplusplus
}
#endif
#endif /* MATE_MONITOR_H_INCLUDED */
