/* events.c: live events: a lock-free queue from the recording threads to one events thread, which writes the instruction log and feeds the publisher. */
#include "events_private.h"
#include "logfile.h"
#include "mate_record.h"
#include "mate_events.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int mate_ev_on_;
int mate_ev_wanted_;
int mate_ev_restart_;
int mate_ev_shed_;

#define RING_SLOTS 16384u         /* a power of two */
#define DRAIN_CHUNK 256           /* events between looks at the CPU budget */
#define BUDGET_DEFAULT 0.1        /* MATE_MONITOR_CPU: share of one core */
#define BUDGET_DEFAULT_TEXT "0.1" /* the same, for messages */
#define BUDGET_BURST_NS 20000000  /* CPU the thread may run ahead of its budget */
#define BUDGET_QUANTUM_NS 2000000 /* once out of budget, it rests until it has this much */
#define FLOW_POLL_MS 10           /* between looks at the queue while events flow */
#define OUT_BUF (64 * 1024)
#define MEM_DEVICES 16

/*
 * What a producer stores: raw fields; the events thread formats them. A
 * call's RECV or SEND writes the first two cache lines of its slot and no
 * more (the header, the source and an op name of up to 39 characters); the
 * fields after command are written only by the events that use them, so
 * they are never cleared.
 */
struct ev_raw {
	uint64_t t_ns;
	uint64_t call;
	int64_t size;
	int32_t depth;
	uint8_t type;
	int8_t ok;
	uint8_t has_text;                  /* 1: text holds an error (SEND), 2: the thread's name (RECV) */
	uint8_t has_args;                  /* args holds a RECV's argument shapes (in the header's
	                                    * padding: an event without them writes no more lines) */
	char source[MATE_EV_SOURCE_MAX];
	char command[MATE_EV_COMMAND_MAX];
	/* work, memory and custom events only */
	uint64_t id, ptr, stream;
	int64_t in_use, peak;
	char text[128];                    /* error, device or details */
	char text2[40];                    /* the event name of a custom event */
	char args[MATE_EV_ARGS_MAX];       /* a RECV's argument shapes (when has_args) */
};

struct ev_slot {
	uint64_t turn;
	struct ev_raw r;
} __attribute__((aligned(64)));

struct mem_dev {
	char name[24];
	int64_t in_use, peak;
};

/*
 * The session: everything started by one mate_ev_configure().
 *
 * In a forked child with an instruction log (sync) the emitters write the
 * log themselves: a child such as a multiprocessing worker ends with
 * _exit(2), which runs no handler, so each event is in the kernel before
 * its emitter returns. The queue stays: whoever holds drain_lock takes it
 * in order, and an events thread runs only for a publisher.
 */
static struct {
	/* read by every producer; written when the session starts or stops */
	struct ev_slot *ring;
	int ilog_fd;
	int wake_fd;                 /* eventfd: producers wake the thread */
	int stopping;
	int closing;                 /* the last event is on its way: it waits for room, no budget */
	uint64_t start_mono_ns;
	/* written by producers: a cache line of their own */
	uint64_t enq __attribute__((aligned(64)));  /* shared (CAS) */
	uint64_t queue_drops;        /* events refused by a full queue */
	uint64_t next_id;
	int full;                    /* hint: the queue refused an event; producers drop at once */
	/* the events thread's, from the next line on */
	uint64_t deq __attribute__((aligned(64)));
	uint64_t events;             /* events written or sent */
	uint64_t seq_skew;           /* events refused so far: they take numbers too */
	uint64_t last_t;             /* the events thread's clamp */
	double budget;               /* the thread's CPU for the stream, share of a core (0: none) */
	int64_t budget_ns;           /* CPU it may still use; refilled at budget per wall ns */
	int resting;                 /* out of budget: resting until it has a quantum */
	uint64_t budget_wall, budget_cpu; /* when it was last refilled; its CPU clock then */
	char *out;                   /* the log lines of one pass */
	size_t out_len;
	int out_failed;
	pthread_mutex_t lock;        /* start/stop, memory statistics */
	pthread_cond_t cond;         /* the thread's state changes */
	pthread_t thread;
	int running, subscribed, started_thread;
	int have_thread;             /* the events thread runs (not in a sync child without a publisher) */
	int forked;                  /* this process is a forked child (a grandchild too) */
	int sync;                    /* a forked child's log: emitters write it */
	pthread_mutex_t drain_lock;  /* held by whoever takes the queue */
	char *ilog_path;             /* as configured (%i kept) */
	char *monitor;               /* MATE_MONITOR as configured */
	char tcp[256];
	struct mate_mon *mon;
	int level;
	struct mate_ev_rank rank;    /* from the launcher's variables, read at the session's start,
	                              * else from mate_event_rank() */
	double start_real;
	struct mem_dev mem[MEM_DEVICES];
	int nmem;
	pid_t pid;
	double wait_s;               /* MATE_MONITOR_WAIT */
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	.drain_lock = PTHREAD_MUTEX_INITIALIZER, .ilog_fd = -1, .wake_fd = -1 };

static const char *const type_name[MATE_EV_TYPE_COUNT] = {
	"CONNECT", "DISCONNECT", "RECV", "SEND", "WORKER_SEND", "WORKER_RECV",
	"MEM_ALLOC", "MEM_FREE", "MEM_FAIL", "ERROR", "CUSTOM"
};

static void sync_flush(void);

/* The rank mate_event_rank() gave (rank -1: none), kept across sessions; rank_news: the
 * publisher is yet to say it. */
static struct mate_ev_rank lib_rank = { .rank = -1, .world = 0, .local = -1 };
static int rank_news;

/* In a sync child: the emitter writes what it queued (and what came before). */
#define SYNC_FLUSH() do { if (MATE_UNLIKELY(S.sync)) sync_flush(); } while (0)

static void
copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = 0;

	for (; src != NULL && n + 1 < cap && src[n] != '\0'; n++)
		dst[n] = src[n];
	dst[n] = '\0';
}

/* ---- the queue (bounded MPSC, Vyukov's sequence numbers) ------------------------ */

/* Reserves n (1 or 2) consecutive slots: @return the first, with *seq set
 * to its number (the second's is *seq + 1), or NULL when the queue has no
 * room for them. */
static struct ev_slot *
ring_claim(uint64_t *seq, unsigned n)
{
	uint64_t pos = __atomic_load_n(&S.enq, __ATOMIC_RELAXED);

	for (;;) {
		struct ev_slot *s = &S.ring[pos & (RING_SLOTS - 1)];
		uint64_t turn = __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE);
		int64_t dif = (int64_t)(turn - pos);
		if (dif == 0 && n == 2) {
			turn = __atomic_load_n(&S.ring[(pos + 1) & (RING_SLOTS - 1)].turn,
			    __ATOMIC_ACQUIRE);
			dif = (int64_t)(turn - (pos + 1));
		}
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&S.enq, &pos, pos + n, 1,
			    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				*seq = pos + 1;
				return s;
			}
		} else if (dif < 0)
			return NULL;
		else
			pos = __atomic_load_n(&S.enq, __ATOMIC_RELAXED);
	}
}

/* The slot after s, claimed with it (its number is seq + 1). */
static struct ev_slot *
ring_second(uint64_t seq)
{
	return &S.ring[seq & (RING_SLOTS - 1)];
}

static void
ring_publish(struct ev_slot *s, uint64_t seq)
{
	__atomic_store_n(&s->turn, seq, __ATOMIC_RELEASE);
}

/* Reserves n (1 or 2) slots and stamps them with one reading of the clock.
 * With an instruction log the caller waits for room (the log must be
 * complete); for the stream alone a full queue drops the events. @return
 * the first slot (the second is ring_second(*seq)), to fill and then
 * commit(), or NULL. */
static struct ev_slot *
claim(uint64_t *seq, unsigned n)
{
	struct ev_slot *s;
	uint64_t t;
	int spins = 0;

	if (S.ring == NULL)
		return NULL;
	/* for the stream alone a full queue drops the event (counted): the
	 * program never waits on a subscriber, and a drop costs one add */
	if (__atomic_load_n(&S.full, __ATOMIC_RELAXED) && S.ilog_fd < 0 &&
	    !__atomic_load_n(&S.closing, __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&S.queue_drops, n, __ATOMIC_RELAXED);
		return NULL;
	}
	t = mate_mono_ns() - S.start_mono_ns;
	while ((s = ring_claim(seq, n)) == NULL) {
		if ((S.ilog_fd < 0 && !__atomic_load_n(&S.closing, __ATOMIC_RELAXED)) ||
		    __atomic_load_n(&S.stopping, __ATOMIC_RELAXED)) {
			__atomic_store_n(&S.full, 1, __ATOMIC_RELAXED);
			if (S.ilog_fd < 0 && !__atomic_load_n(&S.closing, __ATOMIC_RELAXED))
				__atomic_store_n(&mate_ev_shed_, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&S.queue_drops, n, __ATOMIC_RELAXED);
			return NULL;
		}
		if (S.sync)
			sync_flush();
		if (++spins > 64) {
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		} else
			sched_yield();
	}
	s->r.t_ns = t;
	if (n == 2)
		ring_second(*seq)->r.t_ns = t;
	return s;
}

/*
 * Calls dropped whole while the queue is full are counted per thread: a
 * plain add on the thread's own counter (an atomic add on a shared one cost
 * the program 2-3% in a flood). The events thread sums the counters of all
 * threads, under S.lock; a thread's count moves to `retired` when it exits.
 */
static struct {
	struct mate_ev_thread *head; /* under S.lock */
	uint64_t retired, seen;      /* under S.lock; seen: counted in the stream */
	pthread_key_t key;
	pthread_once_t once;
	int key_ok;
} D = { .once = PTHREAD_ONCE_INIT };

__thread struct mate_ev_thread *mate_ev_me_;

static void
thread_retire(void *arg)
{
	struct mate_ev_thread *t = arg, **pp;

	pthread_mutex_lock(&S.lock);
	for (pp = &D.head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	D.retired += t->drops;
	pthread_mutex_unlock(&S.lock);
	mate_ev_me_ = NULL;
	free(t);
}

static void
thread_key(void)
{
	D.key_ok = pthread_key_create(&D.key, thread_retire) == 0;
}

struct mate_ev_thread *
mate_ev_thread_new(void)
{
	struct mate_ev_thread *t;

	pthread_once(&D.once, thread_key);
	if (!D.key_ok || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if (pthread_setspecific(D.key, t) != 0) {
		free(t);
		return NULL;
	}
	pthread_mutex_lock(&S.lock);
	t->next = D.head;
	D.head = t;
	pthread_mutex_unlock(&S.lock);
	return mate_ev_me_ = t;
}

/* The whole-call drops of every thread (retired ones included) since the
 * last take; take: mark them as taken. */
static uint64_t
tdrops_new_since(int take)
{
	uint64_t n;

	pthread_mutex_lock(&S.lock);
	n = D.retired;
	for (struct mate_ev_thread *t = D.head; t != NULL; t = t->next)
		n += __atomic_load_n(&t->drops, __ATOMIC_RELAXED);
	n -= D.seen;
	if (take)
		D.seen += n;
	pthread_mutex_unlock(&S.lock);
	return n;
}

void
mate_ev_drop_untracked(void)
{
	if (MATE_EV_WANTED())
		__atomic_add_fetch(&S.queue_drops, 2, __ATOMIC_RELAXED);
}

static void
wake_thread(void)
{
	uint64_t one = 1;

	if (S.wake_fd >= 0)
		(void)!write(S.wake_fd, &one, sizeof(one));
}

static void
commit(struct ev_slot *s, uint64_t seq)
{
	ring_publish(s, seq);
	/* a quarter full: wake the thread rather than wait for its next poll
	 * (the thread's position is read every 256 events, not on each) */
	if ((seq & 255) == 0 && seq - __atomic_load_n(&S.deq, __ATOMIC_RELAXED) - RING_SLOTS / 4 < 256)
		wake_thread();
}

/* ---- producers ---------------------------------------------------------------------- */

static __thread char tid_str[16];   /* cleared in a forked child: a new thread id */

const char *
mate_ev_thread_id(void)
{
	if (tid_str[0] == '\0')
		snprintf(tid_str, sizeof(tid_str), "%ld", (long)syscall(SYS_gettid));
	return tid_str;
}

/* The calling thread's name where the program named it (pthread_setname_np,
 * prctl): "" when it has the main thread's (the process's) name. Read once
 * per thread, on its first call; blanks and '|' (the line's separators)
 * written '_'. */
static __thread char tname[17];
static __thread int tname_read;    /* cleared in a forked child with tid_str */

static const char *
thread_name(void)
{
	char main_name[32] = "", path[64];
	ssize_t n;
	int fd;

	if (tname_read)
		return tname;
	tname_read = 1;
	if (prctl(PR_GET_NAME, tname, 0, 0, 0) != 0) {
		tname[0] = '\0';
		return tname;
	}
	tname[16] = '\0';
	/* the main thread's name, without stdio (no allocation inside a call) */
	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", (long)getpid());
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, main_name, sizeof(main_name) - 1);
		main_name[n > 0 ? n : 0] = '\0';
		main_name[strcspn(main_name, "\n")] = '\0';
		close(fd);
	}
	if ((long)syscall(SYS_gettid) == (long)getpid() || strcmp(tname, main_name) == 0) {
		tname[0] = '\0';
		return tname;
	}
	for (char *c = tname; *c != '\0'; c++)
		if (*c <= ' ' || *c == '|' || *c == '=' || (unsigned char)*c >= 0x7f)
			*c = '_';
	return tname;
}

uint64_t
mate_ev_next_id(void)
{
	return __atomic_add_fetch(&S.next_id, 1, __ATOMIC_RELAXED);
}

/* Fills the fields every event has; the others are the emitter's. */
static void
raw_init(struct ev_raw *r, int type, const char *source)
{
	r->type = (uint8_t)type;
	r->call = 0;
	r->size = 0;
	r->depth = 0;
	r->ok = 1;
	r->has_text = 0;
	r->has_args = 0;
	copy_str(r->source, sizeof(r->source), source != NULL ? source : mate_ev_thread_id());
	r->command[0] = '\0';
}

static void
call_fill(struct ev_raw *r, int type, uint64_t call, const char *op, int depth,
    int64_t bytes, int ok, const char *error, const char *source, const char *args)
{
	raw_init(r, type, source);
	r->call = call;
	r->depth = depth;
	r->size = bytes;
	r->ok = (int8_t)(ok != 0);
	copy_str(r->command, sizeof(r->command), op);
	r->has_args = type == MATE_EV_RECV && args != NULL && args[0] != '\0';
	if (r->has_args) {
		size_t n = strnlen(args, sizeof(r->args) - 1);
		memcpy(r->args, args, n);
		r->args[n] = '\0';
	}
	if (error != NULL) {
		copy_str(r->text, sizeof(r->text), error);
		r->has_text = 1;
	} else if (type == MATE_EV_RECV && depth == 0 && source == NULL && thread_name()[0] != '\0') {
		copy_str(r->text, sizeof(r->text), thread_name());
		r->has_text = 2;   /* the thread's name */
	}
}

void
mate_ev_call(int type, uint64_t call, const char *op, int depth, int64_t bytes, int ok,
    const char *error, const char *args)
{
	struct ev_slot *s;
	uint64_t seq;

	if (!MATE_EV_WANTED() || (s = claim(&seq, 1)) == NULL)
		return;
	call_fill(&s->r, type, call, op, depth, bytes, ok, error, NULL, args);
	commit(s, seq);
	SYNC_FLUSH();
}

void
mate_ev_call_pair(uint64_t call, const char *op, int depth, int64_t in_bytes,
    int64_t out_bytes, int ok, const char *error, const char *args)
{
	struct ev_slot *s, *s2;
	uint64_t seq;

	if (!MATE_EV_WANTED() || (s = claim(&seq, 2)) == NULL)
		return;
	s2 = ring_second(seq);
	call_fill(&s->r, MATE_EV_RECV, call, op, depth, in_bytes, 1, NULL, NULL, args);
	call_fill(&s2->r, MATE_EV_SEND, call, op, depth, out_bytes, ok, error, s->r.source, NULL);
	commit(s, seq);
	commit(s2, seq + 1);
	SYNC_FLUSH();
}

void
mate_ev_work(int type, uint64_t call, uint64_t id, const char *worker, const char *op,
    int64_t bytes, int ok)
{
	struct ev_slot *s;
	uint64_t seq;

	if (!MATE_EV_WANTED() || (s = claim(&seq, 1)) == NULL)
		return;
	raw_init(&s->r, type, worker != NULL ? worker : "worker");
	s->r.call = call;
	s->r.id = id;
	s->r.size = bytes;
	s->r.ok = (int8_t)(ok != 0);
	copy_str(s->r.command, sizeof(s->r.command), op);
	commit(s, seq);
	SYNC_FLUSH();
}

/* Updates the device's statistics: @return its slot, or NULL when the table is full. */
static struct mem_dev *
mem_account(int type, const char *dev, int64_t bytes)
{
	struct mem_dev *d = NULL;

	for (int i = 0; i < S.nmem; i++)
		if (strcmp(S.mem[i].name, dev) == 0)
			d = &S.mem[i];
	if (d == NULL && S.nmem < MEM_DEVICES) {
		d = &S.mem[S.nmem++];
		copy_str(d->name, sizeof(d->name), dev);
		d->in_use = d->peak = 0;
	}
	if (d == NULL)
		return NULL;
	if (type == MATE_EV_MEM_ALLOC)
		d->in_use += bytes;
	else if (type == MATE_EV_MEM_FREE)
		d->in_use = d->in_use > bytes ? d->in_use - bytes : 0;
	if (d->in_use > d->peak)
		d->peak = d->in_use;
	return d;
}

/* What the interposer named for this thread's next memory event. */
static __thread const char *mem_next_dev, *mem_next_cmd;

int
mate_event_memory_source(const char *dev, const char *command)
{
	if (!MATE_EV_ON())
		return 0;
	mem_next_dev = dev;
	mem_next_cmd = command;
	return 1;
}

void
mate_event_memory(int type, const char *dev, const char *command, uint64_t ptr, int64_t bytes,
    uint64_t stream)
{
	struct mem_dev *d;
	int64_t in_use = 0, peak = 0;
	struct ev_slot *s;
	uint64_t seq;

	if (!MATE_EV_ON())
		return;
	if (dev == NULL)
		dev = mem_next_dev;
	if (command == NULL)
		command = mem_next_cmd;
	mem_next_dev = mem_next_cmd = NULL;
	if (dev == NULL || dev[0] == '\0')
		dev = "cuda:0";
	if (bytes < 0)
		bytes = 0;
	pthread_mutex_lock(&S.lock);
	d = mem_account(type, dev, bytes);
	if (d != NULL) {
		in_use = d->in_use;
		peak = d->peak;
	}
	pthread_mutex_unlock(&S.lock);
	if (!MATE_EV_WANTED() || (s = claim(&seq, 1)) == NULL)
		return;
	raw_init(&s->r, type, NULL);
	s->r.in_use = in_use;
	s->r.peak = peak;
	s->r.size = bytes;
	s->r.ptr = ptr;
	s->r.stream = stream;
	copy_str(s->r.command, sizeof(s->r.command), command != NULL ? command :
	    type == MATE_EV_MEM_FREE ? "free" : "alloc");
	copy_str(s->r.text, sizeof(s->r.text), dev);
	commit(s, seq);
	SYNC_FLUSH();
}

void
mate_event_emit(const char *name, const char *source, const char *command, int64_t bytes,
    const char *details)
{
	struct ev_slot *s;
	uint64_t seq;

	if (!MATE_EV_WANTED() || (s = claim(&seq, 1)) == NULL)
		return;
	raw_init(&s->r, MATE_EV_CUSTOM, source);
	s->r.size = bytes;
	copy_str(s->r.text2, sizeof(s->r.text2), name != NULL ? name : "EVENT");
	copy_str(s->r.command, sizeof(s->r.command), command);
	copy_str(s->r.text, sizeof(s->r.text), details);
	commit(s, seq);
	SYNC_FLUSH();
}

int
mate_event_rank(int rank, int world, const char *from)
{
	char details[96];
	int running;

	if (rank < 0 || world <= rank || world > MATE_EV_RANK_MAX)
		return 0;
	pthread_mutex_lock(&S.lock);
	running = S.started_thread && !S.stopping;
	/* a rank known already (the launcher's, or an earlier call's) stays */
	if (lib_rank.rank >= 0 || (running && S.rank.rank >= 0)) {
		pthread_mutex_unlock(&S.lock);
		return 0;
	}
	lib_rank.rank = rank;
	lib_rank.world = world;
	if (running) {
		S.rank = lib_rank;
		__atomic_store_n(&rank_news, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&S.lock);
	if (running) {
		snprintf(details, sizeof(details), "pid=%ld rank=%d world=%d", (long)S.pid, rank,
		    world);
		mate_event_emit("RANK", NULL, from != NULL && from[0] != '\0' ? from : "rank", 0,
		    details);
		wake_thread();
	}
	return 1;
}

/* ---- the events thread: formatting ------------------------------------------------- */

/* The details of a raw event (the line's last field), truncated to fit cap
 * with its NUL: @return their length. */
static int
fmt_details(const struct ev_raw *r, char *d, size_t cap)
{
	const char *okw = r->ok ? "True" : "False";
	char *o = d, *end = d + cap - 1;

	switch (r->type) {
	case MATE_EV_RECV:
	case MATE_EV_SEND:
		o = mate_put_key_u64(o, end, "call=", r->call);
		o = mate_put_key_str(o, end, " op=", r->command);
		o = mate_put_key_i64(o, end, " depth=", r->depth);
		if (r->type == MATE_EV_RECV && r->has_text == 2)
			o = mate_put_key_str(o, end, " thread=", r->text);
		if (r->type == MATE_EV_RECV && r->has_args)
			o = mate_put_key_str(o, end, " args=", r->args);
		if (r->type == MATE_EV_SEND)
			o = mate_put_key_str(o, end, " success=", okw);
		if (r->type == MATE_EV_SEND && r->has_text) {
			/* at most 60 characters of the error */
			char *e60 = o + 7 + 60 < end ? o + 7 + 60 : end;
			o = mate_put_key_str(o, e60, " error=", r->text);
		}
		break;
	case MATE_EV_WORKER_SEND:
	case MATE_EV_WORKER_RECV:
		o = mate_put_key_u64(o, end, "call=", r->call);
		o = mate_put_key_u64(o, end, " id=", r->id);
		o = mate_put_key_str(o, end, " op=", r->command);
		o = mate_put_key_str(o, end, " worker=", r->source);
		if (r->type == MATE_EV_WORKER_RECV)
			o = mate_put_key_str(o, end, " success=", okw);
		break;
	case MATE_EV_MEM_ALLOC:
	case MATE_EV_MEM_FREE:
	case MATE_EV_MEM_FAIL:
		return snprintf(d, cap, "device=%.23s ptr=0x%llx stream=0x%llx in_use=%lld peak=%lld",
		    r->text, (unsigned long long)r->ptr, (unsigned long long)r->stream,
		    (long long)r->in_use, (long long)r->peak);
	default:
		copy_str(d, cap, r->text);
		return (int)strlen(d);
	}
	*o = '\0';
	return (int)(o - d);
}

/* A raw event as the line's fields, its time clamped so time never goes back. */
static void
to_rec(const struct ev_raw *r, uint64_t seq, struct mate_ev_rec *out)
{
	out->seq = seq;
	out->t_ns = r->t_ns > S.last_t ? r->t_ns : S.last_t;
	S.last_t = out->t_ns;
	out->size = r->size > 0 ? r->size : 0;
	copy_str(out->event, sizeof(out->event),
	    r->type == MATE_EV_CUSTOM ? r->text2 : type_name[r->type]);
	copy_str(out->source, sizeof(out->source), r->source);
	copy_str(out->command, sizeof(out->command), r->command);
	fmt_details(r, out->details, sizeof(out->details));
}

static void
out_flush(void)
{
	int rc;

	if (S.out_len == 0 || S.ilog_fd < 0)
		return;
	rc = mate_write_all(S.ilog_fd, S.out, S.out_len);
	S.out_len = 0;
	if (rc != 0 && !S.out_failed) {
		S.out_failed = 1;
		mate_warn("cannot write the instruction log: %s; events are no longer logged",
		    strerror(-rc));
	}
}

static void
log_rec(const struct mate_ev_rec *rec)
{
	mate_event ev;
	int n;

	if (S.ilog_fd < 0 || S.out_failed)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.time = (double)rec->t_ns / 1e9;
	ev.seq = rec->seq;
	ev.event = rec->event;
	ev.source = rec->source;
	ev.command = rec->command;
	ev.size = rec->size;
	ev.details = rec->details;
	if (S.out_len + 1024 > OUT_BUF)
		out_flush();
	n = mate_ilog_format(S.out + S.out_len, OUT_BUF - S.out_len, &ev);
	if (n > 0 && (size_t)n < OUT_BUF - S.out_len)
		S.out_len += (size_t)n;
}

/* Takes what the queue holds, up to max events, under drain_lock: @return
 * the number taken. */
static size_t
drain_queue(size_t max)
{
	size_t n = 0;
	uint64_t drops;

	/* events the full queue refused: counted, and a gap in the sequence
	 * where they were noticed (never with a log: it waits). The queue has
	 * room again once this pass has taken a slot. */
	if (__atomic_load_n(&S.full, __ATOMIC_RELAXED))
		__atomic_store_n(&S.full, 0, __ATOMIC_RELAXED);
	/* on its own: a producer may set it just after this pass cleared full */
	if (__atomic_load_n(&mate_ev_shed_, __ATOMIC_RELAXED))
		__atomic_store_n(&mate_ev_shed_, 0, __ATOMIC_RELAXED);
	drops = __atomic_exchange_n(&S.queue_drops, 0, __ATOMIC_RELAXED);
	drops += tdrops_new_since(1);
	S.seq_skew += drops;
	if (S.mon != NULL && drops > 0)
		mate_mon_add_drops(S.mon, drops);
	if (S.mon != NULL && __atomic_exchange_n(&rank_news, 0, __ATOMIC_ACQUIRE))
		mate_mon_set_rank(S.mon, &lib_rank);
	while (n < max) {
		struct ev_slot *s = &S.ring[S.deq & (RING_SLOTS - 1)];
		struct mate_ev_rec rec;
		int skip, last;
		if (__atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) != S.deq + 1)
			break;
		/* a subscriber lagging: drop without formatting for a while (but
		 * not the last word, which tells subscribers the process is gone) */
		last = s->r.type == MATE_EV_CUSTOM && strcmp(s->r.text2, "DISCONNECT") == 0;
		/* the RANK event's frame is the first to carry the rank */
		if (S.mon != NULL && s->r.type == MATE_EV_CUSTOM && strcmp(s->r.text2, "RANK") == 0 &&
		    __atomic_exchange_n(&rank_news, 0, __ATOMIC_ACQUIRE))
			mate_mon_set_rank(S.mon, &lib_rank);
		skip = S.mon != NULL && !last && mate_mon_skip(S.mon);
		if (!skip || S.ilog_fd >= 0)
			to_rec(&s->r, S.deq + 1 + S.seq_skew, &rec);
		__atomic_store_n(&s->turn, S.deq + RING_SLOTS, __ATOMIC_RELEASE);
		__atomic_store_n(&S.deq, S.deq + 1, __ATOMIC_RELAXED);
		if (S.mon != NULL && !skip)
			mate_mon_send(S.mon, &rec, last);
		if (S.ilog_fd >= 0)
			log_rec(&rec);
		S.events++;
		n++;
	}
	out_flush();
	return n;
}

/* Non-zero when the next event to take is in the queue. */
static int
queue_ready(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&S.ring[S.deq & (RING_SLOTS - 1)].turn, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&S.deq, __ATOMIC_RELAXED) + 1;
}

/*
 * A sync child's emitter takes the queue unless another thread is taking
 * it: that one looks again after it lets go (both sides fence between
 * their store and their look), so an event is never left behind.
 */
static void
sync_flush(void)
{
	if (S.ring == NULL)
		return;
	do {
		if (pthread_mutex_trylock(&S.drain_lock) != 0)
			return;
		drain_queue((size_t)-1);
		pthread_mutex_unlock(&S.drain_lock);
	} while (queue_ready());
}

/* Takes what the queue holds, up to max events: @return the number taken. */
static size_t
drain(size_t max)
{
	size_t n;

	pthread_mutex_lock(&S.drain_lock);
	n = drain_queue(max);
	pthread_mutex_unlock(&S.drain_lock);
	if (S.sync && queue_ready())
		sync_flush();
	return n;
}

/*
 * Drains the queue within the thread's CPU budget (MATE_MONITOR_CPU). The
 * budget holds for the stream alone: an instruction log must be complete,
 * and at the end everything queued goes out. Past the budget the thread
 * rests, the queue fills and producers drop events (counted, as for a slow
 * subscriber), so a flood of events never takes the program's cores.
 * @return the events taken; *rest_ms gets how long to rest (0: no need).
 */
static size_t
drain_budgeted(int stopping, int *rest_ms)
{
	size_t n = 0, k;
	uint64_t wall, cpu;

	*rest_ms = 0;
	if (!(S.budget > 0) || S.ilog_fd >= 0 || stopping ||
	    __atomic_load_n(&S.closing, __ATOMIC_RELAXED))
		return drain((size_t)-1);
	do {
		wall = mate_mono_ns();
		S.budget_ns += (int64_t)((double)(wall - S.budget_wall) * S.budget);
		if (S.budget_ns > BUDGET_BURST_NS)
			S.budget_ns = BUDGET_BURST_NS;
		S.budget_wall = wall;
		/* a few long rests rather than many short ones: each wake-up (and
		 * each timer, which fires on whatever core the thread slept on)
		 * interrupts a core the program may be using */
		if (S.budget_ns <= 0 || (S.resting && S.budget_ns < BUDGET_QUANTUM_NS)) {
			double ms = (double)(BUDGET_QUANTUM_NS - S.budget_ns) / S.budget / 1e6;
			*rest_ms = ms >= 100 ? 100 : (int)ms + 1;
			S.resting = 1;
			break;
		}
		S.resting = 0;
		k = drain(DRAIN_CHUNK);
		n += k;
		cpu = mate_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		S.budget_ns -= (int64_t)(cpu - S.budget_cpu);
		S.budget_cpu = cpu;
	} while (k == DRAIN_CHUNK);
	return n;
}

static void
set_subscribed(int on)
{
	int want = on || S.ilog_fd >= 0;

	__atomic_store_n(&mate_ev_wanted_, want, __ATOMIC_RELAXED);
	if (on != S.subscribed) {
		pthread_mutex_lock(&S.lock);
		S.subscribed = on;
		pthread_cond_broadcast(&S.cond);
		pthread_mutex_unlock(&S.lock);
	}
}

/* Waits for the wake eventfd (and the publisher's subscriptions). */
static void
wait_events(int timeout_ms)
{
	uint64_t v;

	if (S.mon != NULL && S.sync) {
		/* emitters send on the socket too: it is read under their lock,
		 * not waited on */
		struct pollfd p = { S.wake_fd, POLLIN, 0 };
		poll(&p, S.wake_fd >= 0 ? 1 : 0, timeout_ms);
		pthread_mutex_lock(&S.drain_lock);
		set_subscribed(mate_mon_poll(S.mon, -1, 0));
		pthread_mutex_unlock(&S.drain_lock);
	} else if (S.mon != NULL)
		set_subscribed(mate_mon_poll(S.mon, S.wake_fd, timeout_ms));
	else if (S.wake_fd >= 0) {
		struct pollfd p = { S.wake_fd, POLLIN, 0 };
		poll(&p, 1, timeout_ms);
	}
	if (S.wake_fd >= 0)
		(void)!read(S.wake_fd, &v, sizeof(v));
}

static void *
events_thread(void *arg)
{
	int idle_ms = 1, was_wanted = 0;
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), "mate-events");
	S.budget_wall = mate_mono_ns();
	S.budget_cpu = mate_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	S.budget_ns = BUDGET_BURST_NS;
	S.resting = 0;
	for (;;) {
		int stopping = __atomic_load_n(&S.stopping, __ATOMIC_ACQUIRE), rest_ms;
		int wanted = __atomic_load_n(&mate_ev_wanted_, __ATOMIC_RELAXED);
		size_t n = drain_budgeted(stopping, &rest_ms);
		if (stopping && n == 0)
			break;
		/* a new subscriber: look again soon; while events flow, every
		 * FLOW_POLL_MS (producers wake the thread sooner when the queue
		 * fills a quarter); back off to 50 ms while no one listens */
		if (wanted && !was_wanted)
			idle_ms = 1;
		else if (n > 0)
			idle_ms = FLOW_POLL_MS;
		else if (idle_ms < (wanted ? FLOW_POLL_MS : 50))
			idle_ms *= 2;
		was_wanted = wanted;
		wait_events(stopping ? 0 : rest_ms > 0 ? rest_ms : idle_ms);
	}
	return NULL;
}

/* ---- starting and stopping ---------------------------------------------------------- */

static char *
expand_pid(const char *tmpl)
{
	size_t n = strlen(tmpl), cap = n + 1;
	char *out, *o;

	for (const char *p = tmpl; (p = strstr(p, "%i")) != NULL; p += 2)
		cap += 20;
	if ((out = malloc(cap)) == NULL)
		return NULL;
	o = out;
	for (const char *p = tmpl; *p != '\0'; p++) {
		if (p[0] == '%' && p[1] == 'i') {
			o += snprintf(o, cap - (size_t)(o - out), "%ld", (long)S.pid);
			p++;
		} else
			*o++ = *p;
	}
	*o = '\0';
	return out;
}

static void
open_ilog(void)
{
	char *path = expand_pid(S.ilog_path);
	char head[2048];
	int n;

	if (path == NULL)
		return;
	S.ilog_fd = mate_log_open(path, O_CREAT | O_TRUNC, mate_log_name_of(S.ilog_path));
	if (S.ilog_fd < 0) {
		mate_warn("cannot open MATE_INSTRUCTION_LOG '%s': %s; no instruction log",
		    path, mate_log_strerror(S.ilog_fd));
		S.ilog_fd = -1;
		free(path);
		return;
	}
	free(path);
	n = mate_ilog_format_header(head, sizeof(head), "mate Instruction Stream",
	    (time_t)S.start_real);
	if (n > 0 && (size_t)n < sizeof(head) && mate_write_all(S.ilog_fd, head, (size_t)n) != 0) {
		mate_warn("cannot write the instruction log: %s", strerror(errno));
		S.out_failed = 1;
	}
}

static const char *
program_name(void)
{
	extern char *program_invocation_short_name;

	return program_invocation_short_name != NULL ? program_invocation_short_name : "?";
}

static void stop_session(void);

static void
at_exit(void)
{
	stop_session();
}

/* Waits up to MATE_MONITOR_WAIT seconds for a subscriber. */
static void
wait_subscriber(void)
{
	struct timespec ts;

	if (!(S.wait_s > 0) || S.mon == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)S.wait_s;
	ts.tv_nsec += (long)((S.wait_s - (double)(time_t)S.wait_s) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&S.lock);
	while (!S.subscribed)
		if (pthread_cond_timedwait(&S.cond, &S.lock, &ts) != 0)
			break;
	pthread_mutex_unlock(&S.lock);
}

/* A number from the environment in [0, max], else dflt (with a warning
 * naming the variable, what it wants, and what is used instead). */
static double
env_number(const char *name, double max, double dflt, const char *want, const char *instead)
{
	const char *w = getenv(name);
	char *end;
	double v;

	if (w == NULL || *w == '\0')
		return dflt;
	v = strtod(w, &end);
	if (*end == '\0' && v >= 0 && v <= max)
		return v;
	mate_warn("bad %s value '%s' (want %s); %s", name, w, want, instead);
	return dflt;
}

static void
read_tuning(void)
{
	S.wait_s = env_number("MATE_MONITOR_WAIT", 3600, 0, "seconds, 0..3600", "not waiting");
	S.budget = env_number("MATE_MONITOR_CPU", 64, BUDGET_DEFAULT,
	    "a share of one core, 0 for no limit", "using " BUDGET_DEFAULT_TEXT);
}

/* Ends the publisher (stop: mate_mon_stop, or mate_mon_forget in a forked
 * child) and closes the instruction log. */
static void
close_outputs(void (*stop)(struct mate_mon *))
{
	if (S.mon != NULL)
		stop(S.mon);
	S.mon = NULL;
	if (S.ilog_fd >= 0)
		close(S.ilog_fd);
	S.ilog_fd = -1;
}

static void
start_session(void)
{
	static int atexit_done;
	struct timespec real;
	char details[128];
	int n;

	S.pid = getpid();
	S.start_mono_ns = mate_mono_ns();
	clock_gettime(CLOCK_REALTIME, &real);
	S.start_real = (double)real.tv_sec + real.tv_nsec / 1e9;
	S.enq = S.deq = S.queue_drops = S.events = S.last_t = S.seq_skew = 0;
	S.full = 0;
	mate_ev_shed_ = 0;
	(void)tdrops_new_since(1);   /* earlier sessions' drops are not this one's */
	S.nmem = 0;
	S.out_len = 0;
	S.out_failed = 0;
	S.subscribed = 0;
	S.stopping = 0;
	read_tuning();
	mate_ev_rank_from_env(&S.rank);
	pthread_mutex_lock(&S.lock);
	if (S.rank.rank < 0 && lib_rank.rank >= 0)
		S.rank = lib_rank;
	pthread_mutex_unlock(&S.lock);
	if (S.ring == NULL) {
		void *ring = NULL;
		if (posix_memalign(&ring, 64, RING_SLOTS * sizeof(*S.ring)) != 0)
			ring = NULL;
		S.ring = ring;
		S.out = malloc(OUT_BUF);
		if (S.ring == NULL || S.out == NULL) {
			free(S.ring), free(S.out);
			S.ring = NULL, S.out = NULL;
			mate_warn("out of memory; no live events");
			return;
		}
	}
	for (uint64_t i = 0; i < RING_SLOTS; i++)
		S.ring[i].turn = i;
	if (S.wake_fd < 0)
		S.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (S.ilog_path != NULL)
		open_ilog();
	if (S.monitor != NULL)
		S.mon = mate_mon_start(S.tcp, S.start_real, &S.rank);
	if (S.ilog_fd < 0 && S.mon == NULL)
		return;
	S.sync = S.forked && S.ilog_fd >= 0;
	/* before the thread starts: its "a subscriber came" must come after this "nobody yet",
	 * or a subscriber that connects while this thread is held up (a loaded machine) sees
	 * the thread's wanted = 1 overwritten and every event up to its next look lost */
	__atomic_store_n(&mate_ev_wanted_, S.ilog_fd >= 0, __ATOMIC_RELAXED);
	if (S.sync && S.mon == NULL)
		S.have_thread = 0;
	else if (pthread_create(&S.thread, NULL, events_thread, NULL) != 0) {
		mate_warn("cannot start the events thread; no live events");
		close_outputs(mate_mon_stop);
		return;
	} else
		S.have_thread = 1;
	S.started_thread = 1;
	__atomic_store_n(&mate_ev_on_, 1, __ATOMIC_RELEASE);
	if (!atexit_done) {
		atexit_done = 1;
		atexit(at_exit);
	}
	wait_subscriber();
	n = snprintf(details, sizeof(details), "pid=%ld level=%d", (long)S.pid, S.level);
	if (S.rank.rank >= 0)
		n += snprintf(details + n, sizeof(details) - (size_t)n, " rank=%d", S.rank.rank);
	if (S.rank.rank >= 0 && S.rank.world > 0)
		n += snprintf(details + n, sizeof(details) - (size_t)n, " world=%d", S.rank.world);
	if (S.rank.rank >= 0 && S.rank.local >= 0)
		snprintf(details + n, sizeof(details) - (size_t)n, " local_rank=%d", S.rank.local);
	mate_event_emit("CONNECT", NULL, program_name(), 0, details);
}

static void
stop_session(void)
{
	char details[160];

	if (!S.started_thread)
		return;
	/* the last word waits for room in the queue, drained without a budget */
	__atomic_store_n(&S.closing, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&mate_ev_shed_, 0, __ATOMIC_RELAXED);   /* whole calls are not dropped now */
	wake_thread();
	snprintf(details, sizeof(details), "pid=%ld events=%llu dropped=%llu", (long)S.pid,
	    (unsigned long long)S.enq + 1,
	    (unsigned long long)(S.mon != NULL ? mate_mon_drops(S.mon) : 0) +
	    __atomic_load_n(&S.queue_drops, __ATOMIC_RELAXED) + tdrops_new_since(0));
	mate_event_emit("DISCONNECT", NULL, program_name(), 0, details);
	__atomic_store_n(&mate_ev_on_, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mate_ev_wanted_, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&S.lock);
	__atomic_store_n(&S.stopping, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
	wake_thread();
	if (S.have_thread)
		pthread_join(S.thread, NULL);
	S.have_thread = 0;
	S.started_thread = 0;
	S.closing = 0;
	drain((size_t)-1);
	close_outputs(mate_mon_stop);
}

static void
release_settings(void)
{
	free(S.ilog_path);
	free(S.monitor);
	S.ilog_path = S.monitor = NULL;
	S.tcp[0] = '\0';
}

void
mate_ev_configure(int level, const char *ilog, const char *monitor)
{
	stop_session();
	release_settings();
	S.level = level;
	mate_ev_restart_ = 0;
	if (level <= 0)
		return;
	if (monitor != NULL && (monitor[0] == '\0' || strcmp(monitor, "0") == 0))
		monitor = NULL;
	if (monitor != NULL && mate_mon_parse_spec(monitor, S.tcp, sizeof(S.tcp)) != 0) {
		mate_warn("bad MATE_MONITOR value '%s' (want 1, tcp, tcp:PORT or tcp://HOST:PORT); "
		    "not monitoring", monitor);
		monitor = NULL;
	}
	if (ilog != NULL && ilog[0] != '\0')
		S.ilog_path = strdup(ilog);
	if (monitor != NULL)
		S.monitor = strdup(monitor);
	if (S.ilog_path == NULL && S.monitor == NULL)
		return;
	start_session();
}

/* ---- fork ------------------------------------------------------------------------------- */

static pthread_mutex_t restart_lock = PTHREAD_MUTEX_INITIALIZER;


/* The child has no events thread and must not touch the parent's sockets:
 * it starts its own session (own pid, endpoint, %i log) at its next call,
 * and writes its log from the emitting threads (sync). Its one thread has
 * a thread id of its own. */
void
mate_ev_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER, fresh_drain = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t fresh_restart = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;

	tid_str[0] = '\0';
	tname_read = 0;
	memcpy(&S.drain_lock, &fresh_drain, sizeof(fresh_drain));
	memcpy(&restart_lock, &fresh_restart, sizeof(fresh_restart));
	S.forked = 1;
	if (!S.started_thread)
		return;
	memcpy(&S.lock, &fresh, sizeof(fresh));
	memcpy(&S.cond, &fresh_cond, sizeof(fresh_cond));
	__atomic_store_n(&mate_ev_on_, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mate_ev_wanted_, 0, __ATOMIC_RELAXED);
	S.started_thread = 0;
	S.have_thread = 0;
	S.sync = 0;   /* until the child's session starts */
	close_outputs(mate_mon_forget);
	if (S.ilog_path != NULL && strstr(S.ilog_path, "%i") == NULL) {
		free(S.ilog_path);   /* the parent's file stays the parent's */
		S.ilog_path = NULL;
	}
	mate_ev_restart_ = S.ilog_path != NULL || S.monitor != NULL;
}

/* The child's threads that call meanwhile wait for the session, so that
 * their calls are in its log. */
void
mate_ev_restart_child(void)
{
	if (!__atomic_load_n(&mate_ev_restart_, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&restart_lock);
	if (mate_ev_restart_) {
		start_session();
		__atomic_store_n(&mate_ev_restart_, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&restart_lock);
}
