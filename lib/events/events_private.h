/* events_private.h: libmate's live events inside the library: emission (recorder, interposer), the instruction-log writer and the ZeroMQ publisher. */
#ifndef MATE_EVENTS_PRIVATE_H_INCLUDED
#define MATE_EVENTS_PRIVATE_H_INCLUDED

#include "mate_private.h"

#include <stdint.h>
#include <sys/types.h>

/* ---- configuration (events.c) --------------------------------------------
 * Events are on when the recorder is (MATE_LOGLEVEL >= 1) and an instruction
 * log (MATE_INSTRUCTION_LOG) or monitoring (MATE_MONITOR) is configured.
 * mate_ev_configure() is called by the recorder's configuration (config.c)
 * with the strings of struct mate_config (NULL or "" for off); it stops
 * what runs (flushing it) and starts what is asked. */
void mate_ev_configure(int level, const char *ilog, const char *monitor) MATE_HIDDEN;

/* Non-zero while events are on: the recorder keeps call ids and depths. */
extern int mate_ev_on_ MATE_HIDDEN;
/* Non-zero while someone takes events now: an instruction log is written or
 * a subscriber is attached. Emitting costs nothing otherwise. */
extern int mate_ev_wanted_ MATE_HIDDEN;

#define MATE_EV_ON() MATE_UNLIKELY(__atomic_load_n(&mate_ev_on_, __ATOMIC_RELAXED) != 0)
#define MATE_EV_WANTED() MATE_UNLIKELY(__atomic_load_n(&mate_ev_wanted_, __ATOMIC_RELAXED) != 0)

/* ---- emission ----------------------------------------------------------------
 * Every function is thread-safe, never blocks on the stream (only on a full
 * queue while an instruction log is written, and in a forked child on
 * writing its event to the log), never fails the caller, and copies its
 * strings (truncated to the sizes below). */
#define MATE_EV_SOURCE_MAX 48   /* source id (client thread or worker) */
#define MATE_EV_COMMAND_MAX 48
#define MATE_EV_DETAILS_MAX 256
/* A call's argument shapes in its RECV ("args=F32:4x64;F32:64"): longer lists keep
 * what fits and end in "~" and the FNV-1a 32 of the whole, so that equal texts are
 * equal lists. */
#define MATE_EV_ARGS_MAX 72

enum mate_ev_type {
	MATE_EV_CONNECT,
	MATE_EV_DISCONNECT,
	MATE_EV_RECV,          /* a call entered */
	MATE_EV_SEND,          /* a call returned */
	MATE_EV_WORKER_SEND,   /* work handed to a worker */
	MATE_EV_WORKER_RECV,   /* the worker finished it */
	MATE_EV_MEM_ALLOC,
	MATE_EV_MEM_FREE,
	MATE_EV_MEM_FAIL,      /* an allocation failed */
	MATE_EV_ERROR,
	MATE_EV_CUSTOM,        /* event name in details' first word (see mate_event_emit) */
	MATE_EV_TYPE_COUNT
};

/* The calling thread's source id ("12345", its OS thread id). Static per thread. */
const char *mate_ev_thread_id(void) MATE_HIDDEN;

/* A new call id (1, 2, ...; unique in the process). */
uint64_t mate_ev_next_id(void) MATE_HIDDEN;

/* ---- the calling thread's own block ------------------------------------------
 * Its open calls (events_call.c) and the whole calls it dropped (events.c),
 * on the heap, reached through one thread-local pointer: one access to TLS
 * in each hook. Reaching the call stack and the drop counter as TLS of
 * their own took 4-5 calls into the dynamic linker for each level-1 call (a
 * shared library's TLS; initial-exec TLS, which needs none, would put all of
 * libmate's TLS in the static block, and a dlopen() of libmate then fails).
 * The thread's first call allocates the block, its exit frees it. */
#define MATE_EV_FRAMES 32

/* An open call of the thread. Level-1 calls share one handle, so a call
 * is found by its handle from the innermost frame outwards. */
struct mate_ev_frame {
	const mate_call *c;
	uint64_t id;               /* 0: not tracked (no one listened, or dropped) */
	int64_t in_bytes, out_bytes;
	int recv_sent;
	char name[MATE_EV_COMMAND_MAX];
	uint32_t args_hash;        /* of every piece, once the list is cut */
	uint8_t args_len, args_cut;
	char args[MATE_EV_ARGS_MAX];
};

struct mate_ev_thread {
	uint64_t drops;            /* events of whole calls dropped; written by the thread only */
	struct mate_ev_thread *next; /* the blocks of live threads (events.c, under its lock) */
	int depth;                 /* open calls, tracked or not */
	struct mate_ev_frame f[MATE_EV_FRAMES];
};

extern __thread struct mate_ev_thread *mate_ev_me_ MATE_HIDDEN;

/* Allocates the calling thread's block: @return it, or NULL (no memory:
 * the thread's calls are not tracked, and nothing fails). */
struct mate_ev_thread *mate_ev_thread_new(void) MATE_HIDDEN;

static inline struct mate_ev_thread *
mate_ev_me(void)
{
	struct mate_ev_thread *t = mate_ev_me_;

	return MATE_LIKELY(t != NULL) ? t : mate_ev_thread_new();
}

/* A call of a thread that has no block (no memory): its RECV and SEND
 * are counted as dropped, a gap in the numbering like any drop. */
void mate_ev_drop_untracked(void) MATE_HIDDEN;

/* Non-zero while the stream's queue is full and whole calls are dropped
 * (no instruction log, not closing): set by a producer the queue refused,
 * cleared by the events thread as it takes events. */
extern int mate_ev_shed_ MATE_HIDDEN;

/* Non-zero when the stream's queue is full: the call's RECV and SEND are
 * counted as dropped now (on t), and the call is not tracked. */
static inline int
mate_ev_drop_call(struct mate_ev_thread *t)
{
	if (MATE_LIKELY(!__atomic_load_n(&mate_ev_shed_, __ATOMIC_RELAXED)))
		return 0;
	__atomic_store_n(&t->drops, t->drops + 2, __ATOMIC_RELAXED);
	return 1;
}

/* A call entered or returned: RECV/SEND from the calling thread, details
 * "call=N op=NAME depth=D" (+ " args=SHAPES" on RECV when args is not empty,
 * + " success=True|False" on SEND, + " error=..."). */
void mate_ev_call(int type, uint64_t call, const char *op, int depth, int64_t bytes,
    int ok, const char *error, const char *args) MATE_HIDDEN;

/* A call that ended before it was ready: its RECV (in_bytes) and SEND
 * (out_bytes), as two mate_ev_call()s would send them, stamped with one
 * reading of the clock. */
void mate_ev_call_pair(uint64_t call, const char *op, int depth, int64_t in_bytes,
    int64_t out_bytes, int ok, const char *error, const char *args) MATE_HIDDEN;

/* Work of a call on a worker: WORKER_SEND/WORKER_RECV with details
 * "call=N id=M op=NAME worker=W" (+ " success=True|False" on RECV). */
void mate_ev_work(int type, uint64_t call, uint64_t id, const char *worker,
    const char *op, int64_t bytes, int ok) MATE_HIDDEN;

/* Device memory (the interposer's allocations): MEM_ALLOC, MEM_FREE or
 * MEM_FAIL from the calling thread, command "cudaMalloc"-like (NULL:
 * "alloc"/"free"), size bytes, details "device=DEV ptr=0x.. stream=0x..
 * in_use=B peak=B". The per-device statistics (current, peak) are kept
 * here; dev is a short name ("cuda:0"). */
void mate_event_memory(int type, const char *dev, const char *command, uint64_t ptr,
    int64_t bytes, uint64_t stream);
/* mate_event_memory_source() is public (mate_record.h): the interposer calls it. */

/* Any other event: name (e.g. "KERNEL_LAUNCH"; a name with WORKER in it
 * gets a WORKER source), source (NULL: the calling thread), command, size,
 * free-text details. */
void mate_event_emit(const char *name, const char *source, const char *command,
    int64_t bytes, const char *details);

/* ---- the recorder's hooks (events_call.c), called while MATE_EV_ON() ----
 * A call's events: RECV at mate_call_ready() (or its end), with the input
 * bytes; SEND at its end, with the result and in-place bytes. A call no
 * one takes (no one listens, or the queue is full) only keeps its depth:
 * that is done inline, in the recorder's own call; the rest out of line. */
void mate_ev_call_begin_slow(const mate_call *c, const char *name) MATE_HIDDEN;
void mate_ev_call_track(struct mate_ev_frame *f, const char *name) MATE_HIDDEN;
void mate_ev_call_tensor(const mate_call *c, int flags, const mate_tensor *t) MATE_HIDDEN;
void mate_ev_call_ready(const mate_call *c) MATE_HIDDEN;
void mate_ev_call_end_slow(const mate_call *c, int ok, const char *error) MATE_HIDDEN;

static inline void
mate_ev_call_begin(const mate_call *c, const char *name)
{
	struct mate_ev_thread *t = mate_ev_me_;
	struct mate_ev_frame *f;

	if (MATE_UNLIKELY(t == NULL || t->depth >= MATE_EV_FRAMES)) {
		mate_ev_call_begin_slow(c, name);
		return;
	}
	f = &t->f[t->depth++];
	f->c = c;
	if (!MATE_EV_WANTED() || mate_ev_drop_call(t))
		f->id = 0;   /* no one listens, or the queue is full: the call keeps its depth, no id */
	else
		mate_ev_call_track(f, name);
}

static inline void
mate_ev_call_end(const mate_call *c, int ok, const char *error)
{
	struct mate_ev_thread *t = mate_ev_me_;

	/* the innermost call, untracked: it only leaves */
	if (MATE_LIKELY(t != NULL && t->depth > 0 && t->depth <= MATE_EV_FRAMES &&
	    t->f[t->depth - 1].c == c && t->f[t->depth - 1].id == 0)) {
		t->depth--;
		return;
	}
	mate_ev_call_end_slow(c, ok, error);
}

/* ---- fork (events.c; from the recorder's pthread_atfork child handler) ---- */
extern int mate_ev_restart_ MATE_HIDDEN;
void mate_ev_atfork_child(void) MATE_HIDDEN;
/* Starts the child's own session at its first call after fork. */
void mate_ev_restart_child(void) MATE_HIDDEN;

/* ---- the record handed to the writer (events.c -> monitor.c) ------------- */
struct mate_ev_rec {
	uint64_t seq;          /* from 1, no gaps among events taken */
	uint64_t t_ns;         /* since the session's start */
	int64_t size;          /* bytes, 0 for none */
	char event[24];
	char source[MATE_EV_SOURCE_MAX];
	char command[MATE_EV_COMMAND_MAX];
	char details[MATE_EV_DETAILS_MAX];
};

/* A program name for line-based files and terminals (the .info file, the
 * frames, summaries, mate-top's header): a hostile argv[0]'s control
 * characters (a newline, an escape) become '?'. */
static inline void
mate_clean_name(char *name)
{
	for (char *c = name; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/* Bounded text appenders for the events thread's per-event formatting
 * (snprintf's cost dominated it). Each writes what fits before end and
 * returns the new position; *end is never written. */
static inline char *
mate_put_str(char *o, const char *end, const char *s)
{
	while (o < end && *s != '\0')
		*o++ = *s++;
	return o;
}

static inline char *
mate_put_u64(char *o, const char *end, uint64_t v)
{
	char b[20];
	int n = 0;

	do {
		b[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0 && o < end)
		*o++ = b[--n];
	return o;
}

static inline char *
mate_put_i64(char *o, const char *end, int64_t v)
{
	if (v < 0 && o < end) {
		*o++ = '-';
		return mate_put_u64(o, end, (uint64_t)0 - (uint64_t)v);
	}
	return mate_put_u64(o, end, (uint64_t)v);
}

/* A key then its value ("call=" and the number) in one call. */
static inline char *
mate_put_key_str(char *o, const char *end, const char *key, const char *s)
{
	return mate_put_str(mate_put_str(o, end, key), end, s);
}

static inline char *
mate_put_key_u64(char *o, const char *end, const char *key, uint64_t v)
{
	return mate_put_u64(mate_put_str(o, end, key), end, v);
}

static inline char *
mate_put_key_i64(char *o, const char *end, const char *key, int64_t v)
{
	return mate_put_i64(mate_put_str(o, end, key), end, v);
}

/* ---- the rank (rank.c) ----------------------------------------------------------------
 * A process's place in a distributed job, from its launcher's variables: torchrun's
 * RANK, WORLD_SIZE and LOCAL_RANK, else Open MPI's OMPI_COMM_WORLD_*, else PMI_RANK,
 * PMI_SIZE and MPI_LOCALRANKID, else srun's SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID.
 * rank and local are -1, world 0, where unknown; a bad value is warned and gives no rank. */
#define MATE_EV_RANK_MAX (1 << 24)
struct mate_ev_rank {
	int rank, world, local;
};
void mate_ev_rank_from_env(struct mate_ev_rank *r) MATE_HIDDEN;

/* ---- the publisher (monitor.c) ------------------------------------------------
 * Owned by the events thread: every function but mate_mon_parse_spec() is
 * called from that thread only. */
struct mate_mon;

/* Parses MATE_MONITOR: "1"/"ipc" (ipc only), "tcp", "tcp:PORT",
 * "tcp://HOST:PORT" (plus the ipc endpoint). Fills tcp (cap bytes, "" for
 * none) with a zmq endpoint bound to loopback unless a host is named.
 * @return 0, or -1 when spec is not understood. */
int mate_mon_parse_spec(const char *spec, char *tcp, size_t cap) MATE_HIDDEN;
/* Binds the publisher (ipc endpoint in the runtime directory, tcp when
 * given). start_real is the session's start, seconds since the epoch; a known rank
 * goes in every frame ("rank", "world") and in the .info file.
 * @return the publisher, or NULL (warned once). */
struct mate_mon *mate_mon_start(const char *tcp, double start_real,
    const struct mate_ev_rank *rank) MATE_HIDDEN;
/* Reads subscription changes: @return 1 while at least one subscriber is
 * attached. Waits up to timeout_ms for a change or for wake_fd (-1: none)
 * to become readable (0: no wait). */
int mate_mon_poll(struct mate_mon *m, int wake_fd, int timeout_ms) MATE_HIDDEN;
/* Sends one event as a JSON frame, never blocking; a frame refused at the
 * high-water mark is dropped and counted. The last frame (DISCONNECT)
 * waits up to 200 ms for room. */
void mate_mon_send(struct mate_mon *m, const struct mate_ev_rec *r, int last) MATE_HIDDEN;
/* The process learnt its rank late (mate_event_rank()): the frames from now on and the
 * .info file say it (nothing when one is known already). */
void mate_mon_set_rank(struct mate_mon *m, const struct mate_ev_rank *rank) MATE_HIDDEN;
/* After a frame was refused, the next few are dropped (and counted)
 * without being formatted: @return 1 when this one is. */
int mate_mon_skip(struct mate_mon *m) MATE_HIDDEN;
/* Drops counted here and before (queue full), as the frames carry them. */
void mate_mon_add_drops(struct mate_mon *m, uint64_t n) MATE_HIDDEN;
uint64_t mate_mon_drops(const struct mate_mon *m) MATE_HIDDEN;
/* Closes the sockets (lingering briefly for the last frames) and removes
 * the endpoint files. */
void mate_mon_stop(struct mate_mon *m) MATE_HIDDEN;
/* In a forked child: forgets the parent's publisher without touching it. */
void mate_mon_forget(struct mate_mon *m) MATE_HIDDEN;

/* The per-user runtime directory for endpoints (MATE_MONITOR_DIR, else
 * $XDG_RUNTIME_DIR/mate, else /tmp/mate-UID), created mode 0700 when create
 * is set and checked to belong to the user with no group or other access.
 * @return 0 with the path in buf, or -errno. */
int mate_mon_runtime_dir(char *buf, size_t cap, int create) MATE_HIDDEN;
/* The start time of process pid (clock ticks since boot, /proc/PID/stat
 * field 22), or 0 when it is not running or cannot be read. */
uint64_t mate_proc_start_ticks(pid_t pid) MATE_HIDDEN;

/* ---- the subscriber (subscribe.c) ---------------------------------------------
 * Takes one received frame as if it had come from the socket (fuzzing):
 * @return MATE_OK, or a negative mate_status. */
struct mate_monitor;
int mate_mon_take_frame(struct mate_monitor *m, const char *buf, size_t len) MATE_HIDDEN;

/* ---- an event's details, indexed once (ilog.c) --------------------------------
 * The key=value pairs of one details string, found in one pass and in order,
 * so that a reader asking for several keys (a timeline asks for up to ten)
 * walks the text once: mate_ilog_details_get() answers exactly as
 * mate_ilog_detail() on the same text would. The index borrows the text. */
#define MATE_ILOG_PAIRS 24
struct mate_ilog_details {
	const char *text;
	int n, more;           /* more: pairs past the last one kept */
	struct {
		const char *key, *value;
		size_t klen;
	} kv[MATE_ILOG_PAIRS];
};
void mate_ilog_details_index(struct mate_ilog_details *d, const char *details) MATE_HIDDEN;
int mate_ilog_details_get(const struct mate_ilog_details *d, const char *key, char *buf,
    size_t cap) MATE_HIDDEN;
/* mate_ilog_op() with its op= value already looked up (NULL: none). */
const char *mate_ilog_op_of(const mate_event *ev, const char *op, char *buf, size_t cap) MATE_HIDDEN;

#endif /* MATE_EVENTS_PRIVATE_H_INCLUDED */
