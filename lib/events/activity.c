/* activity.c: live events aggregated per worker (busy time by op, smoothed rates, bytes) and per process (device memory), for mate-top. */
#include "events_private.h"
#include "mate_record.h"
#include "mate_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPS_PER_ROW 16
#define OPEN_CAP 16384        /* open spans followed at once (power of two) */
#define MAX_ROWS 4096
#define MAX_PROCS 256
#define MAX_DEVICES 4
#define STALE_S 30.0          /* open spans older than this are forgotten */
#define LINGER_S 10.0         /* an exited process's rows stay this long (default) */
#define LAG_SLACK_S 0.1       /* a process whose events come later than this lags */

struct op_acc {
	char name[MATE_EV_COMMAND_MAX];
	double acc;       /* busy seconds in the current interval */
	double ema;       /* smoothed busy fraction */
};

struct row {
	int proc;
	char worker[MATE_EV_SOURCE_MAX + 8 + 40];   /* "thread NAME (TID)" fits */
	struct op_acc ops[OPS_PER_ROW];
	int nops;
	uint64_t ops_total, bytes_total;
	uint64_t ops_iv, bytes_iv;    /* in the current interval */
	double ops_ema, bytes_ema;
	uint64_t open_call;  /* a thread's row: the key of its open outermost call, or 0 */
	double last_end;     /* a thread's row: when its latest outermost call ended */
	uint64_t open_work;  /* a worker's row: the key of its latest open work, or 0 */
	uint64_t closed_early; /* work closed by the next work's start (its end lost?) */
	int overlaps;        /* its work was seen to overlap (async streams): no closing */
	double weight;    /* the averages' weight so far (1 - (1 - alpha)^n):
	                   * they are divided by it, so that the first interval
	                   * gives its own figures rather than a climb from 0 */
};

struct proc {
	long pid;
	char program[64];
	uint64_t events, dropped;
	int ended;
	double ended_at;  /* the time of its DISCONNECT */
	double iv_start;  /* its current interval starts here */
	double seen;      /* its latest event's time */
	double late;      /* how much later than its time its latest event came */
	int arrived;      /* events came in the current interval */
	int ndev;
	char dev[MAX_DEVICES][24];
	int64_t cur[MAX_DEVICES], peak[MAX_DEVICES];
};

/* An open span: work (by id) or a call (by call id) not yet ended. A
 * thread is busy for the whole of its outermost calls (waiting for a worker
 * included), as the timeline draws it; a worker for its work. */
struct open {
	long pid;
	uint64_t key;     /* (id << 1) | is_call; 0: free slot */
	double t0;
	double from;      /* its busy time is counted from here (t0, or its interval's start) */
	double upto;      /* and up to here (from, then each tick) */
	int proc;         /* its process's index */
	int row;          /* the row it is counted on; -1: none (a nested call) */
	int op;           /* index in the row's ops */
	char op_name[MATE_EV_COMMAND_MAX];
};

struct mate_activity {
	double tau, last_tick, linger;
	double now;       /* mate_activity_set_now()'s; < 0: not told */
	int ticked;
	struct row *rows;
	int nrows;
	struct proc procs[MAX_PROCS];
	int nprocs;
	struct open *open;
};

mate_activity *
mate_activity_new(double tau)
{
	mate_activity *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->tau = tau > 0 ? tau : 1.0;
	a->linger = LINGER_S;
	a->now = -1;
	a->rows = calloc(MAX_ROWS, sizeof(*a->rows));
	a->open = calloc(OPEN_CAP, sizeof(*a->open));
	if (a->rows == NULL || a->open == NULL) {
		mate_activity_free(a);
		return NULL;
	}
	return a;
}

void
mate_activity_free(mate_activity *a)
{
	if (a == NULL)
		return;
	free(a->rows);
	free(a->open);
	free(a);
}

static void
copy(char *dst, size_t cap, const char *s)
{
	snprintf(dst, cap, "%s", s != NULL ? s : "");
}

static int
proc_get(mate_activity *a, long pid, const char *program)
{
	struct proc *p;

	for (int i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == pid) {
			if (a->procs[i].program[0] == '\0' && program != NULL)
				copy(a->procs[i].program, sizeof(a->procs[i].program), program);
			return i;
		}
	if (a->nprocs == MAX_PROCS)
		return -1;
	p = &a->procs[a->nprocs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->iv_start = a->last_tick;   /* first seen after a tick: its interval starts there */
	copy(p->program, sizeof(p->program), program);
	return a->nprocs++;
}

static int
row_get(mate_activity *a, int proc, const char *worker)
{
	struct row *r;

	for (int i = 0; i < a->nrows; i++)
		if (a->rows[i].proc == proc && strcmp(a->rows[i].worker, worker) == 0)
			return i;
	if (a->nrows == MAX_ROWS)
		return -1;
	r = &a->rows[a->nrows];
	memset(r, 0, sizeof(*r));
	r->proc = proc;
	copy(r->worker, sizeof(r->worker), worker);
	return a->nrows++;
}

static int
op_get(struct row *r, const char *name)
{
	int min = 0;

	for (int i = 0; i < r->nops; i++)
		if (strcmp(r->ops[i].name, name) == 0)
			return i;
	if (r->nops < OPS_PER_ROW) {
		memset(&r->ops[r->nops], 0, sizeof(r->ops[0]));
		copy(r->ops[r->nops].name, sizeof(r->ops[0].name), name);
		return r->nops++;
	}
	/* full: the quietest op gives its place */
	for (int i = 1; i < r->nops; i++)
		if (r->ops[i].ema + r->ops[i].acc < r->ops[min].ema + r->ops[min].acc)
			min = i;
	memset(&r->ops[min], 0, sizeof(r->ops[0]));
	copy(r->ops[min].name, sizeof(r->ops[0].name), name);
	return min;
}

/* ---- open spans (open addressing on (pid, key)) ---------------------------------- */

static struct open *
open_find(mate_activity *a, long pid, uint64_t key, int create)
{
	uint64_t h = (key * 0x9E3779B97F4A7C15ull) ^ (uint64_t)pid;

	for (int probe = 0; probe < 64; probe++) {
		struct open *o = &a->open[(h + (uint64_t)probe) & (OPEN_CAP - 1)];
		if (o->key == key && o->pid == pid)
			return o;
		if (o->key == 0) {
			if (!create)
				return NULL;
			memset(o, 0, sizeof(*o));
			o->key = key;
			o->pid = pid;
			return o;
		}
	}
	return NULL;   /* crowded: the span is not followed */
}

/* Removing from linear probing: re-seat the entries after the hole. */
static void
open_remove(mate_activity *a, struct open *o)
{
	size_t i = (size_t)(o - a->open);

	o->key = 0;
	for (size_t j = (i + 1) & (OPEN_CAP - 1); a->open[j].key != 0; j = (j + 1) & (OPEN_CAP - 1)) {
		struct open e = a->open[j], *n;
		a->open[j].key = 0;
		n = open_find(a, e.pid, e.key, 1);
		if (n != NULL)
			*n = e;
	}
}

static uint64_t
detail_u64(const char *details, const char *key)
{
	char v[32];

	if (mate_ilog_detail(details, key, v, sizeof(v)) <= 0)
		return 0;
	return strtoull(v, NULL, 10);
}

/* A span ended at t1: the busy time not counted yet (from o->upto); a tick
 * that counted it past t1 (its end came late: the publisher lagged, CI saw a
 * worker at 45% for 13%) gives the excess back, and no more than was
 * counted (a span that ended before its interval began counts nothing). */
static void
work_done(struct row *r, int op, const struct open *o, double t1)
{
	r->ops[op].acc += (t1 > o->from ? t1 : o->from) - o->upto;
	r->ops_total++;
	r->ops_iv++;
}

/* A span opened at t, counted from t (or from its process's interval's
 * start: a time closed already is not counted again). */
static void
open_start(mate_activity *a, struct open *o, int proc, double t)
{
	o->t0 = t;
	o->from = a->ticked && t < a->procs[proc].iv_start ? a->procs[proc].iv_start : t;
	o->upto = o->from;
	o->proc = proc;
}

static void
on_work(mate_activity *a, int proc, const mate_live_event *le, int send)
{
	const mate_event *ev = &le->ev;
	uint64_t id = detail_u64(ev->details, "id");
	long pid = a->procs[proc].pid;
	char opname[MATE_EV_COMMAND_MAX];
	struct open *o;
	struct row *r;
	int ri = row_get(a, proc, ev->source);

	if (ri < 0)
		return;
	r = &a->rows[ri];
	r->bytes_total += (uint64_t)(ev->size > 0 ? ev->size : 0);
	r->bytes_iv += (uint64_t)(ev->size > 0 ? ev->size : 0);
	if (id == 0)
		id = (uint64_t)ri + (1ull << 40);   /* no id: one open span per worker (GT) */
	if (send) {
		struct open *prev;
		if (mate_ilog_detail(ev->details, "op", opname, sizeof(opname)) <= 0)
			copy(opname, sizeof(opname), ev->command);
		/* a worker (a thread, a stream) does one piece of work at a time: one
		 * still open lost its end among the frames a publisher dropped (they
		 * stayed open, 100% busy, until the next gap: CI saw a worker at 45%
		 * the timeline drew 13%); it ended by now. A row whose work is seen
		 * to overlap is left alone from then on. */
		if (!r->overlaps && r->open_work != 0 && r->open_work != id << 1 &&
		    (prev = open_find(a, pid, r->open_work, 0)) != NULL && prev->row == ri) {
			if (strcmp(r->ops[prev->op].name, prev->op_name) == 0)
				work_done(r, prev->op, prev, ev->time);
			r->closed_early = r->open_work;
			open_remove(a, prev);
		}
		if ((o = open_find(a, pid, id << 1, 1)) == NULL)
			return;
		open_start(a, o, proc, ev->time);
		o->row = ri;
		o->op = op_get(r, opname);
		copy(o->op_name, sizeof(o->op_name), opname);
		r->open_work = id << 1;
		return;
	}
	if (r->closed_early == id << 1) {
		/* the end of work closed early did come: this row's work overlaps */
		r->overlaps = 1;
		r->closed_early = 0;
	}
	if (r->open_work == id << 1)
		r->open_work = 0;
	if ((o = open_find(a, pid, id << 1, 0)) == NULL)
		return;
	if (o->row == ri && strcmp(r->ops[o->op].name, o->op_name) == 0)
		work_done(r, o->op, o, ev->time);
	open_remove(a, o);
}

/* The row of the thread source ("thread TID", or "thread NAME (TID)"), or -1. */
static int
thread_row(const mate_activity *a, int proc, const char *source)
{
	size_t n = strlen(source);

	for (int i = 0; i < a->nrows; i++) {
		const char *w = a->rows[i].worker;
		size_t len = strlen(w);
		if (a->rows[i].proc != proc || strncmp(w, "thread ", 7) != 0)
			continue;
		if (strcmp(w + 7, source) == 0 || (len > n + 3 && w[len - 1] == ')' &&
		    w[len - n - 2] == '(' && w[len - n - 3] == ' ' &&
		    strncmp(w + len - n - 1, source, n) == 0))
			return i;
	}
	return -1;
}

/* A call: its thread's row ("thread TID") is busy from RECV to SEND of the
 * outermost call, whether workers did its work or the thread itself. */
static void
on_call(mate_activity *a, int proc, const mate_live_event *le, int recv)
{
	const mate_event *ev = &le->ev;
	uint64_t call = detail_u64(ev->details, "call");
	long pid = a->procs[proc].pid;
	char name[MATE_EV_SOURCE_MAX + 8 + 40], opname[MATE_EV_COMMAND_MAX], tname[32];
	struct open *o;
	struct row *r;
	int ri;

	if (call == 0)
		return;
	/* a thread the program named: "thread NAME (TID)" */
	if (recv && mate_ilog_detail(ev->details, "thread", tname, sizeof(tname)) > 0)
		snprintf(name, sizeof(name), "thread %s (%s)", tname, ev->source);
	else
		snprintf(name, sizeof(name), "thread %s", ev->source);
	if (recv) {
		struct open *prev;
		if ((o = open_find(a, pid, call << 1 | 1, 1)) == NULL)
			return;
		open_start(a, o, proc, ev->time);
		o->row = -1;
		if (detail_u64(ev->details, "depth") != 0 || (ri = row_get(a, proc, name)) < 0)
			return;
		r = &a->rows[ri];
		/* a thread makes one outermost call at a time: one still open lost its
		 * SEND among frames the publisher dropped; it ended by now */
		if (r->open_call != 0 && r->open_call != (call << 1 | 1) &&
		    (prev = open_find(a, pid, r->open_call, 0)) != NULL) {
			if (prev->row == ri && strcmp(r->ops[prev->op].name, prev->op_name) == 0)
				work_done(r, prev->op, prev, ev->time);
			open_remove(a, prev);
			o = open_find(a, pid, call << 1 | 1, 0);   /* the removal may move it */
			if (o == NULL)
				return;
		}
		r->open_call = call << 1 | 1;
		r->bytes_total += (uint64_t)(ev->size > 0 ? ev->size : 0);
		r->bytes_iv += (uint64_t)(ev->size > 0 ? ev->size : 0);
		if (mate_ilog_detail(ev->details, "op", opname, sizeof(opname)) <= 0)
			copy(opname, sizeof(opname), ev->command);
		o->row = ri;
		o->op = op_get(r, opname);
		copy(o->op_name, sizeof(o->op_name), opname);
		return;
	}
	if ((o = open_find(a, pid, call << 1 | 1, 0)) == NULL) {
		/* an outermost call whose RECV was lost (dropped, or before this reader
		 * came): its thread was in it since its previous call ended, at most
		 * (a thread at 74% the timeline drew 97%, under a sanitizer build) */
		if (a->ticked && detail_u64(ev->details, "depth") == 0 &&
		    (ri = thread_row(a, proc, ev->source)) >= 0 && a->rows[ri].open_call == 0) {
			struct open gone = { .t0 = ev->time };
			r = &a->rows[ri];
			double from = a->procs[proc].iv_start;
			gone.from = gone.upto = r->last_end > from ? r->last_end : from;
			if (mate_ilog_detail(ev->details, "op", opname, sizeof(opname)) <= 0)
				copy(opname, sizeof(opname), ev->command);
			if (ev->time > gone.upto)
				work_done(r, op_get(r, opname), &gone, ev->time);
			r->last_end = ev->time;
		}
		return;
	}
	if (o->row >= 0 && o->row < a->nrows) {
		r = &a->rows[o->row];
		if (r->open_call == (call << 1 | 1))
			r->open_call = 0;
		r->last_end = ev->time;
		r->bytes_total += (uint64_t)(ev->size > 0 ? ev->size : 0);
		r->bytes_iv += (uint64_t)(ev->size > 0 ? ev->size : 0);
		if (strcmp(r->ops[o->op].name, o->op_name) == 0)
			work_done(r, o->op, o, ev->time);
	}
	open_remove(a, o);
}

static void
on_memory(struct proc *p, const mate_event *ev)
{
	char dev[24], v[32];
	int i;

	if (mate_ilog_detail(ev->details, "in_use", v, sizeof(v)) <= 0)
		return;
	if (mate_ilog_detail(ev->details, "device", dev, sizeof(dev)) <= 0)
		copy(dev, sizeof(dev), "device");
	for (i = 0; i < p->ndev && strcmp(p->dev[i], dev) != 0; i++)
		;
	if (i == p->ndev) {
		if (p->ndev == MAX_DEVICES)
			return;
		copy(p->dev[p->ndev++], sizeof(p->dev[0]), dev);
	}
	p->cur[i] = strtoll(v, NULL, 10);
	if (mate_ilog_detail(ev->details, "peak", v, sizeof(v)) > 0 && strtoll(v, NULL, 10) > p->peak[i])
		p->peak[i] = strtoll(v, NULL, 10);
	if (p->cur[i] > p->peak[i])
		p->peak[i] = p->cur[i];
}

/* Forgets the open spans of pid (calls_too 0: not the threads' outermost
 * calls, which the thread's next call closes if their end was lost). */
static void
forget_open(mate_activity *a, long pid, int calls_too)
{
	for (size_t k = 0; k < OPEN_CAP; k++)
		if (a->open[k].key != 0 && a->open[k].pid == pid &&
		    (calls_too || (a->open[k].key & 1) == 0 || a->open[k].row < 0)) {
			open_remove(a, &a->open[k]);
			k--;   /* an entry may have moved into this slot */
		}
}

void
mate_activity_add(mate_activity *a, long pid, const char *program, const mate_live_event *le)
{
	const char *e = le->ev.event;
	int proc = proc_get(a, pid, program);
	struct proc *p;

	if (proc < 0)
		return;
	p = &a->procs[proc];
	p->events++;
	if (le->ev.time > p->seen)
		p->seen = le->ev.time;
	p->late = a->now >= 0 ? a->now - le->ev.time : 0;
	p->arrived = 1;
	if (le->missed > 0)
		forget_open(a, pid, 0);   /* their ends may be among the frames lost */
	if (le->dropped > p->dropped)
		p->dropped = le->dropped;
	if (strcmp(e, "WORKER_SEND") == 0)
		on_work(a, proc, le, 1);
	else if (strcmp(e, "WORKER_RECV") == 0)
		on_work(a, proc, le, 0);
	else if (strcmp(e, "RECV") == 0)
		on_call(a, proc, le, 1);
	else if (strcmp(e, "SEND") == 0)
		on_call(a, proc, le, 0);
	else if (strcmp(e, "DISCONNECT") == 0) {
		p->ended = 1;
		p->ended_at = le->ev.time;
		forget_open(a, pid, 1);
	}
	else if (strcmp(e, "CONNECT") == 0)
		p->ended = 0;
	if (strstr(e, "MEM") != NULL)
		on_memory(p, &le->ev);
}

void
mate_activity_end(mate_activity *a, long pid, double now)
{
	for (int i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == pid && !a->procs[i].ended) {
			a->procs[i].ended = 1;
			a->procs[i].ended_at = now;
			forget_open(a, pid, 1);
		}
}

void
mate_activity_set_linger(mate_activity *a, double seconds)
{
	a->linger = seconds;
}

/* Processes that ended more than linger seconds ago leave, with their rows;
 * the rows that stay keep their order (and the open spans their rows). */
static void
expire(mate_activity *a, double now)
{
	int pmap[MAX_PROCS], np = 0, nr = 0, gone = 0;
	int *rmap;

	if (!(a->linger >= 0))
		return;
	for (int i = 0; i < a->nprocs; i++) {
		struct proc *p = &a->procs[i];
		pmap[i] = p->ended && now - p->ended_at > a->linger ? -1 : np++;
		gone |= pmap[i] < 0;
	}
	if (!gone || (rmap = malloc(sizeof(int) * (size_t)(a->nrows > 0 ? a->nrows : 1))) == NULL)
		return;
	for (int i = 0; i < a->nprocs; i++)
		if (pmap[i] >= 0 && pmap[i] != i)
			a->procs[pmap[i]] = a->procs[i];
	a->nprocs = np;
	for (int i = 0; i < a->nrows; i++) {
		int p = pmap[a->rows[i].proc];
		rmap[i] = p < 0 ? -1 : nr;
		if (p < 0)
			continue;
		if (nr != i)
			a->rows[nr] = a->rows[i];
		a->rows[nr++].proc = p;
	}
	a->nrows = nr;
	for (size_t k = 0; k < OPEN_CAP; k++) {
		if (a->open[k].key == 0)
			continue;
		if (a->open[k].row >= 0)
			a->open[k].row = rmap[a->open[k].row];
		if (a->open[k].proc >= 0 && a->open[k].proc < MAX_PROCS)
			a->open[k].proc = pmap[a->open[k].proc];
	}
	free(rmap);
}

/* ---- the interval ------------------------------------------------------------------ */

void
mate_activity_set_now(mate_activity *a, double now)
{
	a->now = now;
}

/* Where process p's interval ends at a tick at now: now, unless its
 * publisher lags (its latest event came more than the slack after its
 * time, in this interval): then at that event, since what happened after
 * it is still on its way (CI saw a worker at 40% that the timeline drew
 * 12%: open work counted busy up to now, threads between calls idle). A
 * process that said nothing for a whole interval does not lag (a lone long
 * kernel shows busy). */
static double
interval_end(const struct proc *p, double now)
{
	if (!p->ended && p->arrived && p->late > LAG_SLACK_S && p->seen < now)
		return p->seen > p->iv_start ? p->seen : p->iv_start;
	return now;
}

void
mate_activity_tick(mate_activity *a, double now)
{
	double end[MAX_PROCS], dt[MAX_PROCS];

	if (!a->ticked) {
		a->ticked = 1;
		a->last_tick = now;
		for (int i = 0; i < a->nprocs; i++) {
			a->procs[i].iv_start = now;   /* the first interval starts now */
			a->procs[i].arrived = 0;
		}
		for (size_t k = 0; k < OPEN_CAP; k++)
			if (a->open[k].key != 0 && a->open[k].upto < now)
				a->open[k].from = a->open[k].upto = now;
		for (int i = 0; i < a->nrows; i++) {
			struct row *r = &a->rows[i];
			for (int j = 0; j < r->nops; j++)
				r->ops[j].acc = 0;
			r->ops_iv = r->bytes_iv = 0;
		}
		return;
	}
	if (!(now - a->last_tick > 1e-6))
		return;
	for (int i = 0; i < a->nprocs; i++) {
		end[i] = interval_end(&a->procs[i], now);
		dt[i] = end[i] - a->procs[i].iv_start;
	}
	/* work still running counts up to its process's interval's end (its end,
	 * when it comes earlier than that, takes the excess back); spans open for
	 * long lost their end */
	for (size_t k = 0; k < OPEN_CAP; k++) {
		struct open *o = &a->open[k];
		double e;
		if (o->key == 0)
			continue;
		if (o->t0 < now - STALE_S) {
			open_remove(a, o);
			k--;   /* an entry may have moved into this slot */
			continue;
		}
		e = o->proc >= 0 && o->proc < a->nprocs ? end[o->proc] : now;
		if (o->row >= 0 && o->row < a->nrows && e > o->upto) {
			a->rows[o->row].ops[o->op].acc += e - o->upto;
			o->upto = e;
		}
	}
	for (int i = 0; i < a->nrows; i++) {
		struct row *r = &a->rows[i];
		double total = 0, scale, d = dt[r->proc], alpha;
		if (!(d > 1e-6))
			continue;   /* its process's interval goes on */
		alpha = 1.0 - exp(-d / a->tau);
		for (int j = 0; j < r->nops; j++)
			total += r->ops[j].acc > 0 ? r->ops[j].acc : 0;
		/* overlapping work (async streams) saturates the row, no more */
		scale = total > d ? d / total : 1.0;
		for (int j = 0; j < r->nops; j++) {
			double frac = r->ops[j].acc * scale / d;
			frac = frac > 1 ? 1 : frac < 0 ? 0 : frac;
			r->ops[j].ema += alpha * (frac - r->ops[j].ema);
			r->ops[j].acc = 0;
		}
		r->ops_ema += alpha * ((double)r->ops_iv / d - r->ops_ema);
		r->bytes_ema += alpha * ((double)r->bytes_iv / d - r->bytes_ema);
		r->ops_iv = r->bytes_iv = 0;
		r->weight += alpha * (1 - r->weight);
	}
	for (int i = 0; i < a->nprocs; i++) {
		if (dt[i] > 1e-6)
			a->procs[i].iv_start = end[i];
		a->procs[i].arrived = 0;
	}
	a->last_tick = now;
	expire(a, now);
}

int
mate_activity_rows(const mate_activity *a)
{
	return a->nrows;
}

int
mate_activity_row(const mate_activity *a, int i, mate_worker_row *out)
{
	const struct row *r;
	int idx[OPS_PER_ROW], n;
	double w;

	if (i < 0 || i >= a->nrows)
		return -1;
	r = &a->rows[i];
	w = r->weight > 0 ? r->weight : 1;
	memset(out, 0, sizeof(*out));
	out->process = r->proc;
	out->worker = r->worker;
	for (n = 0; n < r->nops; n++) {
		/* insertion by smoothed busy time, busiest first */
		int k = n;
		while (k > 0 && r->ops[idx[k - 1]].ema < r->ops[n].ema) {
			idx[k] = idx[k - 1];
			k--;
		}
		idx[k] = n;
		out->busy += r->ops[n].ema / w;
	}
	if (out->busy > 1)
		out->busy = 1;
	for (int k = 0; k < n && k < MATE_ACTIVITY_OPS; k++) {
		out->op[k] = r->ops[idx[k]].name;
		out->op_busy[k] = r->ops[idx[k]].ema / w;
		if (out->op_busy[k] > 1)
			out->op_busy[k] = 1;
		out->nops++;
	}
	out->ops_per_s = r->ops_ema / w;
	out->bytes_per_s = r->bytes_ema / w;
	out->ops = r->ops_total;
	out->bytes = r->bytes_total;
	return 0;
}

int
mate_activity_processes(const mate_activity *a)
{
	return a->nprocs;
}

int
mate_activity_process(const mate_activity *a, int i, mate_process_row *out)
{
	const struct proc *p;

	if (i < 0 || i >= a->nprocs)
		return -1;
	p = &a->procs[i];
	memset(out, 0, sizeof(*out));
	out->pid = p->pid;
	out->program = p->program;
	out->events = p->events;
	out->dropped = p->dropped;
	out->ended = p->ended;
	out->ndevices = p->ndev;
	for (int k = 0; k < p->ndev; k++) {
		out->device[k] = p->dev[k];
		out->mem_current[k] = p->cur[k];
		out->mem_peak[k] = p->peak[k];
	}
	return 0;
}
