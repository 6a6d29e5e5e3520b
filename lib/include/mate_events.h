/* mate_events.h: events: GT-compatible instruction log lines (format, parse, read) and live events (subscribe to monitored processes, merge their events, aggregate worker activity). */
#ifndef MATE_EVENTS_H_INCLUDED
#define MATE_EVENTS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "mate_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ownership: readers, monitors and activity aggregates are the caller's,
 * freed with their *_free (NULL ok). An event's strings are borrowed from
 * the reader or monitor that returned it, until its next call; formatting
 * writes into the caller's buffer. */

/* ---- Events --------------------------------------------------------------
 * One line of an instruction log, in the line format of GT's dispatcher
 * instruction stream (fields joined by " | "):
 *
 *   "  0.123s | #0042 | RECV         | CLIENT 4711                | gemm            |     39.3KB | call=7 op=matmul"
 *
 * Details are free text; mate writes key=value pairs that join events:
 *   call=N     the API call (RECV/SEND) and the work it caused (WORKER_*)
 *   id=N       one piece of work: pairs its WORKER_SEND with its WORKER_RECV
 *   op=NAME    the op type used for colouring
 *   worker=ID  the worker lane of a WORKER_* line (else the source id)
 *   depth=N    nesting depth of an API call (0: outermost)
 *   device=ID in_use=BYTES   device memory in use after a memory event
 *   signal=NAME              a signal (also any event whose name has SIGNAL)
 * Without ids, GT's pairing is used (see mate_timeline_add()). */
enum mate_source_kind {
	MATE_SOURCE_CLIENT = 0,
	MATE_SOURCE_WORKER = 1,
	MATE_SOURCE_OTHER = 2   /* neither word: the whole field is the id */
};

typedef struct mate_event {
	double time;          /* seconds since the log's start, >= 0 */
	uint64_t seq;         /* sequence number, from 1 */
	const char *event;    /* "RECV", "SEND", "WORKER_SEND", "WORKER_RECV", ... */
	int source_kind;      /* enum mate_source_kind (parsed; ignored when formatting) */
	const char *source;   /* the id after the CLIENT/WORKER word: "4711",
	                       * "auto_worker_0"; GT's "CLIENT CLIENT 006b8b4568"
	                       * gives "CLIENT 006b8b4568" so lines round-trip */
	const char *command;  /* "BinaryOp", "WorkerBatch", "gemm", ... */
	int64_t size;         /* message bytes; -1 (or 0 when formatting) for none */
	const char *details;  /* free text; "" when the line has none */
	uint64_t line;        /* 1-based line number in its input (reader only) */
} mate_event;

/* Longest line the reader accepts; longer lines count as malformed. */
#define MATE_ILOG_LINE_MAX 65536
/* How many malformed lines the reader remembers for reporting. */
#define MATE_ILOG_MALFORMED_KEEP 5

/*! mate_ilog_format() : formats ev as one log line, '\n' included, as GT's
 * dispatcher does but with microseconds (GT writes "%7.3fs"; its parsers
 * read any number of decimals): "%10.6fs | #%04llu | %-12s | WORD %-20s | %-15s" then
 * " | %10s" for a size (when ev->size > 0) and " | details" (when not empty).
 * WORD is WORKER when ev->event contains "WORKER", else CLIENT. Newlines in
 * fields become spaces, other control characters Python's escapes
 * (mate_text_escape(): "\x1b"), and '|' in the first five fields becomes
 * '!', so every line parses back and none reaches a terminal raw. Writes at most cap bytes, NUL-terminated when cap > 0.
 * @return the line's full length, as snprintf (>= cap means truncated). */
MATE_API int mate_ilog_format(char *buf, size_t cap, const mate_event *ev);

/*! mate_ilog_format_size() : the size field's text: "91B" below 1 KiB,
 * "39.3KB" below 1 MiB, else "4.00MB" (binary units); "" for bytes <= 0.
 * @return its length (at most 15). */
MATE_API int mate_ilog_format_size(char out[16], int64_t bytes);

/*! mate_ilog_format_header() : GT's header block (a rule of 100 '=', title,
 * "Started: YYYY-MM-DD HH:MM:SS" in local time, a rule, a description of
 * the columns, a blank line), which readers skip. title NULL gives
 * "mate Instruction Stream". @return its length, as snprintf. */
MATE_API int mate_ilog_format_header(char *buf, size_t cap, const char *title, time_t started);

/*! mate_ilog_parse_line() : parses one line (without its newline) in place:
 * the fields of *ev point into line, which is modified (line[len] too, which
 * must be writable: it becomes a NUL). Lines that do not
 * start like an event ("^\s*[0-9.]+s\s*\|\s*#[0-9]+") are not events.
 * @return 1 for an event, 0 for a line that is not one (header, blank),
 * -1 for a malformed event line (*why, if not NULL, says why; static). */
MATE_API int mate_ilog_parse_line(char *line, size_t len, mate_event *ev, const char **why);

/*! mate_ilog_detail() : finds "key=value" in details (key at the start or
 * after a space; the value ends at the next space) and copies the value into
 * buf (cap > 0, NUL-terminated, truncated to fit). @return the value's full
 * length, or -1 when the key is absent. */
MATE_API int mate_ilog_detail(const char *details, const char *key, char *buf, size_t cap);

/*! mate_ilog_op() : an event's op type: the op= of its details when present
 * (lower-cased), else derived from the command, or a batch's first command
 * ("[2 cmds: WorkerBinaryOp, ...]"): matmul, add, sub, mul, div, relu,
 * sigmoid, tanh, sum, mean, transpose, getdata, allgather, randn,
 * freetensor, other. Writes into buf (cap >= 2) and returns buf. */
MATE_API const char *mate_ilog_op(const mate_event *ev, char *buf, size_t cap);

/*! mate_op_color() : 0xRRGGBB for an op type: GT's palette (gt.scripts.top)
 * for its sixteen names, a stable colour hashed from the name otherwise. */
MATE_API uint32_t mate_op_color(const char *op);

/* ---- Reading logs ----------------------------------------------------------
 * A streaming reader: it holds one buffer (about 256 KiB), never the file.
 * GT's header block and anything else before an event line is skipped; so is
 * a later header (logs concatenated) and blank lines. After the first event,
 * any other line is malformed: counted, the first few kept for reporting,
 * and skipped. */
typedef struct mate_ilog mate_ilog;

typedef struct mate_ilog_stats {
	uint64_t lines;      /* lines read */
	uint64_t events;     /* event lines returned */
	uint64_t skipped;    /* header and blank lines */
	uint64_t malformed;  /* malformed lines skipped */
} mate_ilog_stats;

/*! mate_ilog_open() : opens the log at path ("-" reads standard input).
 * @return a reader, or NULL with err set. */
MATE_API mate_ilog *mate_ilog_open(const char *path, mate_error *err);
/*! mate_ilog_open_fd() : reads fd (left open) under the name given. */
MATE_API mate_ilog *mate_ilog_open_fd(int fd, const char *name, mate_error *err);
/*! mate_ilog_open_memory() : reads the len bytes at buf (borrowed until
 * mate_ilog_free()). */
MATE_API mate_ilog *mate_ilog_open_memory(const void *buf, size_t len, const char *name, mate_error *err);
/*! mate_ilog_next() : the next event. Its strings are borrowed until the
 * next call. @return 1 with *ev filled, 0 at the end, or a negative
 * mate_status on a read error (message in err). */
MATE_API int mate_ilog_next(mate_ilog *r, mate_event *ev, mate_error *err);
/*! mate_ilog_read_ahead() : reads and parses on a second thread from now on,
 * some thousands of events ahead of mate_ilog_next() (whose answers do not
 * change); asked for before the first event. The counts and bytes read are
 * then those up to the end of the batch being returned, a few thousand
 * lines ahead of it, and final at the end. @return MATE_OK, or a negative
 * mate_status (no thread: r reads as before). */
MATE_API int mate_ilog_read_ahead(mate_ilog *r, mate_error *err);
/*! mate_ilog_stats() : counts so far. */
MATE_API void mate_ilog_get_stats(const mate_ilog *r, mate_ilog_stats *st);
/*! mate_ilog_bytes_read() : bytes read from the source so far (for progress). */
MATE_API uint64_t mate_ilog_bytes_read(const mate_ilog *r);
/*! mate_ilog_malformed() : the i-th remembered malformed line (i from 0):
 * its line number and why. @return 0, or -1 when there is no such line. */
MATE_API int mate_ilog_malformed(const mate_ilog *r, int i, uint64_t *line, const char **why);
/*! mate_ilog_name() : the name given at open ("<stdin>" for "-"). */
MATE_API const char *mate_ilog_name(const mate_ilog *r);
/*! mate_ilog_free() : closes what it opened and frees r (NULL ok). */
MATE_API void mate_ilog_free(mate_ilog *r);

/* ---- Subscribing ------------------------------------------------------------
 * A process recorded with MATE_MONITOR publishes its events on a ZeroMQ PUB
 * socket, one JSON frame per event with GT's keys (seq, timestamp, event,
 * client, command, details, size_bytes) and mate's (pid, start: its start in
 * seconds since the epoch, dropped: frames it could not send so far,
 * program; rank and world where its launcher set them). Locally it binds ipc://DIR/PID.ipc and describes it in
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
	int rank;            /* its rank in a distributed job (from its launcher's
	                      * variables: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
	                      * SLURM_PROCID), as its first frame said; -1 for none */
	int world;           /* the job's size as it said, 0 where not said */
} mate_publisher_info;

/*! mate_monitor_new() : an empty monitor. @return NULL with err set on failure. */
MATE_API mate_monitor *mate_monitor_new(mate_error *err);
/*! mate_monitor_warning() : what was wrong with the settings read from the
 * environment (a bad MATE_MONITOR_LAG_MS: the default is used), for the
 * caller to print; NULL when nothing. Borrowed until mate_monitor_free(). */
MATE_API const char *mate_monitor_warning(const mate_monitor *m);
/*! mate_monitor_add_pid() : follows the local process pid: subscribes as
 * soon as its endpoint appears (checked at every mate_monitor_next()).
 * @return MATE_ERR_ARGUMENT when no process has that pid. */
MATE_API int mate_monitor_add_pid(mate_monitor *m, long pid, mate_error *err);
/*! mate_monitor_add_endpoint() : subscribes to a ZeroMQ endpoint
 * ("tcp://host:port", "ipc://path"). */
MATE_API int mate_monitor_add_endpoint(mate_monitor *m, const char *url, mate_error *err);
/*! mate_monitor_watch_local() : follows every local publisher, present and
 * to come (used when neither pids nor endpoints are given). Endpoints of
 * processes that no longer run are skipped and their files removed. */
MATE_API int mate_monitor_watch_local(mate_monitor *m, mate_error *err);
/*! mate_monitor_watch_all_users() : mate_monitor_watch_local(), and also the
 * publishers in other users' runtime folders: each match of the glob patterns
 * in MATE_MONITOR_ALL (colon-separated; default
 * "/run/user/STAR/mate:/tmp/mate-STAR", STAR being "*") that is a directory, not a
 * link, that nobody but its owner may write, whose .info files are its owner's
 * and name a socket inside it; looked at again every second. Another user's
 * folder is mode 700, so that only root reads it: *unreadable (may be NULL)
 * gets how many matched but could not be read. */
MATE_API int mate_monitor_watch_all_users(mate_monitor *m, int *unreadable, mate_error *err);
/*! mate_monitor_next() : the next event in time order, waiting up to
 * timeout_ms (-1: forever). @return 1 with *ev filled, 0 when none came in
 * time, or a negative mate_status. */
MATE_API int mate_monitor_next(mate_monitor *m, mate_live_event *ev, int timeout_ms, mate_error *err);
/*! mate_monitor_flush() : stops waiting for late events: what is held comes
 * out of mate_monitor_next() at once, and the socket is read for one lag
 * (MATE_MONITOR_LAG_MS) more, then no longer (call it when a capture ends;
 * a flooding publisher cannot keep it going). */
MATE_API void mate_monitor_flush(mate_monitor *m);
/*! mate_monitor_publishers() : how many publishers were seen so far. */
MATE_API int mate_monitor_publishers(const mate_monitor *m);
/*! mate_monitor_publisher() : the i-th one (strings borrowed until the next
 * call on m). @return 0, or -1 past the last. */
MATE_API int mate_monitor_publisher(const mate_monitor *m, int i, mate_publisher_info *info);
/*! mate_monitor_publisher_cut() : whether the i-th publisher ended without its
 * DISCONNECT coming (its endpoint went away first: it crashed, or its last
 * events were lost), so that its stream may lack its end (mate_desync_end_cut()). */
MATE_API int mate_monitor_publisher_cut(const mate_monitor *m, int i);
/*! mate_monitor_publisher_host() : the host of the i-th publisher: the host
 * part of the tcp endpoint it came through, as the caller named it
 * ("node7", "127.0.0.2": never what its frames say), or "" for this machine
 * (local and ipc publishers, tcp://127.0.0.1, localhost and [::1]). Borrowed
 * until mate_monitor_free(). */
MATE_API const char *mate_monitor_publisher_host(const mate_monitor *m, int i);

/* An endpoint named with mate_monitor_add_endpoint(): each has a socket of its
 * own. Times of another host's events are on this machine's clock: its first
 * frame's arrival against the time it says it was sent gives how far its
 * clock is from this one's; a difference over a second is taken as the
 * clock's and added to all of that host's times from then on (fixed, so that
 * the host's own order of events stays), one within a second as the way's
 * (nothing added). Events are in time order within a host; across hosts only
 * as far as that estimate goes. A later process of the host whose own first
 * frame is 5 s or more from that clock started after the host's clock was
 * stepped: it keeps its own offset (clock_moved counts such processes). */
typedef struct mate_endpoint_info {
	const char *url;     /* as named */
	const char *host;    /* of a tcp url; "" for ipc and this machine */
	uint64_t frames;     /* mate's frames taken from it */
	uint64_t foreign;    /* frames it sent that were not mate's (it speaks
	                      * something else) */
	double silent_for;   /* seconds since its last frame (since it was
	                      * named, when none came) */
	double clock_offset; /* seconds added to its times (0: its clock agrees) */
	int clock_known;     /* a frame came: clock_offset is measured */
	int clock_moved;     /* processes of its host that started on a clock 5 s or
	                      * more from clock_offset (stepped since): their own */
	double clock_moved_by; /* the last one's offset less clock_offset */
} mate_endpoint_info;

/*! mate_monitor_endpoints() : how many endpoints were named. */
MATE_API int mate_monitor_endpoints(const mate_monitor *m);
/*! mate_monitor_endpoint() : the i-th one (strings borrowed until
 * mate_monitor_free()). @return 0, or -1 past the last. */
MATE_API int mate_monitor_endpoint(const mate_monitor *m, int i, mate_endpoint_info *info);
/*! mate_monitor_base() : the base of event times, seconds since the epoch
 * (0 before the first event). */
MATE_API double mate_monitor_base(const mate_monitor *m);
/*! mate_monitor_lag() : how long events are held for ordering, in seconds
 * (MATE_MONITOR_LAG_MS): what has come out covers up to now minus this. */
MATE_API double mate_monitor_lag(const mate_monitor *m);
/*! mate_monitor_free() : closes the sockets and frees m (NULL ok). */
MATE_API void mate_monitor_free(mate_monitor *m);

/* ---- Activity (what mate-top shows) ------------------------------------------
 * Aggregates live events into one row per worker of each process: the work
 * it did (WORKER_SEND..WORKER_RECV, paired by id=) as busy time per op,
 * smoothed by an exponential moving average over a time constant (weighted
 * by the intervals a row has seen, so that its first interval gives that
 * interval's figures, not a climb from zero), ops per second and bytes
 * moved. A thread that makes calls has a row of its own ("thread TID"),
 * busy for the whole of its outermost calls (waiting for workers included),
 * as the timeline draws it. Device memory (current and peak) comes from the
 * memory events' in_use= and peak=. */
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
MATE_API mate_activity *mate_activity_new(double tau);
/*! mate_activity_add() : one event of process pid (program may be NULL). */
MATE_API void mate_activity_add(mate_activity *a, long pid, const char *program,
    const mate_live_event *le);
/*! mate_activity_tick() : closes the interval that ends at now (seconds on
 * the events' time base) and updates the averages. A process whose events
 * come late (see mate_activity_set_now()) has its interval closed at its
 * latest event instead, and the next one starts there. */
MATE_API void mate_activity_tick(mate_activity *a, double now);
/*! mate_activity_set_now() : the time now on the events' time base, told
 * before events are added: an event added later than its time by more than
 * 0.1 s marks its publisher as lagging behind (never told: none lags). */
MATE_API void mate_activity_set_now(mate_activity *a, double now);
/*! mate_activity_end() : process pid ended at now (its endpoint went away
 * without a DISCONNECT event): marked ended, as a DISCONNECT does. */
MATE_API void mate_activity_end(mate_activity *a, long pid, double now);
/*! mate_activity_set_linger() : a process that ended leaves, with its rows,
 * this many seconds after its end (default 10; negative: never). */
MATE_API void mate_activity_set_linger(mate_activity *a, double seconds);
/*! mate_activity_rows() / mate_activity_row() : rows in a stable order
 * (process, then first appearance); strings borrowed until the next add. */
MATE_API int mate_activity_rows(const mate_activity *a);
MATE_API int mate_activity_row(const mate_activity *a, int i, mate_worker_row *row);
MATE_API int mate_activity_processes(const mate_activity *a);
MATE_API int mate_activity_process(const mate_activity *a, int i, mate_process_row *p);
/*! mate_activity_free() : frees a (NULL ok). */
MATE_API void mate_activity_free(mate_activity *a);

/* ---- Ranks out of step (mate-trace --desync) ---------------------------------
 * Matches the sequences of outermost calls of the ranks of a distributed job:
 * each call is its function and its argument shapes (the "args=" of its RECV).
 * A function is compared among the ranks that make it (its group: every rank
 * for a collective; a function only one rank makes is that rank's own and not
 * compared). Within a group the ranks' calls must agree in order: at the first
 * call where they do not, the ranks that differ from the most common call are
 * out of step (with no majority, the verdict says so and is not certain). A
 * rank that made no call for 10 times the others' median gap between calls,
 * and at least 2 s, while most others went past it (more compared calls, made
 * since), has stalled. Until the end, no verdict is given before as many
 * ranks as a CONNECT's world= said have made a call (a job starting). Each
 * rank keeps
 * its first 4,194,304 calls for comparing. */
typedef struct mate_desync mate_desync;

enum mate_desync_kind {
	MATE_DESYNC_CALL = 1,   /* a different call where the group's others agree */
	MATE_DESYNC_ENDED,      /* it ended (its log, or it exited) before a call the others made */
	MATE_DESYNC_STALL       /* no call for long */
};

typedef struct mate_desync_verdict {
	int kind;               /* enum mate_desync_kind */
	int rank;               /* the rank out of step (the first, where several are) */
	int certain;            /* 0: no majority tells which side is out of step, or the
	                         * rank said to have ended short did not say it ended */
	uint64_t call;          /* its call there (1: its first outermost call); 0 for ENDED */
	uint64_t others_call;   /* the others' (the lowest, where theirs differ) */
	double idle, median_gap;/* STALL: seconds */
	const char *text;       /* one line ("rank 3 is at call 12 mm(F32[16,32]) while ranks
	                         * 0-2,4-7 are at call 12 all_reduce(F32[4096])"), borrowed
	                         * until the next call on the analyser */
} mate_desync_verdict;

/*! mate_desync_new() : an empty analyser. @return NULL when out of memory. */
MATE_API mate_desync *mate_desync_new(void);
/*! mate_desync_rank() : process pid is rank (0..4095). @return MATE_OK, or
 * MATE_ERR_ARGUMENT (err says why) for a rank out of range or one another
 * pid claimed before: that rank is compared no more. */
MATE_API int mate_desync_rank(mate_desync *d, int rank, long pid, mate_error *err);
/*! mate_desync_call() : rank made an outermost call of function with
 * argument shapes args ("" or NULL for none) at time t (seconds, on one
 * clock for all ranks: used for stalls alone). */
MATE_API int mate_desync_call(mate_desync *d, int rank, double t, const char *function,
    const char *args, mate_error *err);
/*! mate_desync_event() : takes one event of an instruction log or the live
 * stream: a CONNECT's rank= (or rank, when >= 0: the publisher's) names
 * the rank of process pid (-1: the event's pid= detail), an outermost RECV
 * (depth=0) is a call (command and args=), a DISCONNECT ends the rank.
 * Events of a process with no rank are counted (mate_desync_unranked()).
 * @return MATE_OK, or what mate_desync_rank() and mate_desync_call() return. */
MATE_API int mate_desync_event(mate_desync *d, const mate_event *ev, long pid, int rank,
    mate_error *err);
/*! mate_desync_unranked() : outermost calls taken from processes with no rank. */
MATE_API uint64_t mate_desync_unranked(const mate_desync *d);
/*! mate_desync_end() : rank ended (exited, or its log ended). */
MATE_API void mate_desync_end(mate_desync *d, int rank);
/*! mate_desync_end_cut() : rank ended without saying so (its endpoint went away
 * before its DISCONNECT came, or its log has none): its last calls may be missing
 * (or it crashed), so a verdict that it ended short of the others is not certain,
 * and says why. */
MATE_API void mate_desync_end_cut(mate_desync *d, int rank);
/*! mate_desync_check() : looks for a rank out of step, each reported once.
 * now: the time on the calls' clock (0: no stall check); final: every rank
 * has made all its calls (the end of the logs), so a rank that ended short
 * of the others' calls is out of step too. @return 1 with *v filled (call
 * again for more), 0 when none, or a negative mate_status. */
MATE_API int mate_desync_check(mate_desync *d, double now, int final, mate_desync_verdict *v);
/*! mate_desync_free() : frees d (NULL ok). */
MATE_API void mate_desync_free(mate_desync *d);

#ifdef __cplusplus
}
#endif
#endif /* MATE_EVENTS_H_INCLUDED */
