/* perfetto.c: Chrome/Perfetto trace JSON streamed out while a timeline pairs events, gzip-compressed through zlib on request. */
#include "mate_private.h"
#include "timeline_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define PF_BUF (64 * 1024)
#define PF_MAX_TRACKS 32
#define PF_CAT "mate"          /* every slice's and flow's category: a flow binds
                                * only to slices of its own category */
#define PF_CAUSES (1 << 16)    /* calls with work remembered per log (a ring) */
#define PF_PENDING_MAX (1 << 20) /* work slices waiting for their call's slice */

/* A work slice written before the slice of the call that caused it. */
struct pf_end {
	struct pf_end *next;
	int pid, tid;
	double ts;
};

/* A call that caused work: where its slice was written, once it was. */
struct pf_cause {
	uint64_t seq;          /* the call's opening event */
	int lane;              /* -1: a free slot */
	int written;
	int pid, tid;
	double ts;
	struct pf_end *pending;
	int hnext;             /* its hash chain, -1 at the end */
};

struct mate_perfetto {
	int fd;
	mate_atomic_file af;
	int atomic;
	int gzip;
	z_stream z;
	int z_ready;
	char *buf;             /* JSON text not yet written */
	size_t len;
	unsigned char *zbuf;
	uint64_t events;
	uint64_t next_flow;
	unsigned char *named; /* processes named so far, by log */
	size_t nnamed;
	struct pf_cause *causes; /* PF_CAUSES slots, allocated with the first flow */
	int *heads;            /* hash chains into causes */
	uint64_t ncauses;      /* added in this log: the ring's position */
	uint64_t npending, flows;
	uint64_t unended, forgotten; /* flows dropped: call never ended, or forgotten */
	mate_error err;        /* the first error */
};

/* ---- Output ------------------------------------------------------------------------ */

static void
pf_fail_errno(mate_perfetto *pf, int e)
{
	if (pf->err.code == MATE_OK)
		mate_set_errno(&pf->err, e, "cannot write", pf->atomic ? pf->af.path : "trace");
}

static void
pf_write(mate_perfetto *pf, const void *p, size_t n)
{
	int rc;

	if (pf->err.code != MATE_OK || n == 0)
		return;
	if ((rc = mate_write_all(pf->fd, p, n)) != 0)
		pf_fail_errno(pf, -rc);
}

/* Sends buffered text on, through deflate when compressing. */
static void
pf_flush(mate_perfetto *pf, int finish)
{
	if (!pf->gzip) {
		pf_write(pf, pf->buf, pf->len);
		pf->len = 0;
		return;
	}
	pf->z.next_in = (unsigned char *)pf->buf;
	pf->z.avail_in = (uInt)pf->len;
	do {
		int rc;
		pf->z.next_out = pf->zbuf;
		pf->z.avail_out = PF_BUF;
		rc = deflate(&pf->z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (rc == Z_STREAM_ERROR) {
			if (pf->err.code == MATE_OK)
				mate_set_error(&pf->err, MATE_ERR_IO, "gzip: deflate failed");
			break;
		}
		pf_write(pf, pf->zbuf, PF_BUF - pf->z.avail_out);
	} while (pf->z.avail_out == 0 || (finish && pf->z.avail_in > 0));
	pf->len = 0;
}

static void
pf_raw(mate_perfetto *pf, const char *s, size_t n)
{
	while (n > 0) {
		size_t room = PF_BUF - pf->len, c = n < room ? n : room;
		memcpy(pf->buf + pf->len, s, c);
		pf->len += c;
		s += c;
		n -= c;
		if (pf->len == PF_BUF)
			pf_flush(pf, 0);
	}
}

static void
pf_puts(mate_perfetto *pf, const char *s)
{
	pf_raw(pf, s, strlen(s));
}

static void MATE_PRINTF(2, 3)
pf_printf(mate_perfetto *pf, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		pf_raw(pf, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void
pf_put(void *pf, const char *s, size_t n)
{
	pf_raw(pf, s, n);
}

/* A JSON string: quotes, escapes, invalid UTF-8 as U+FFFD. */
static void
pf_str(mate_perfetto *pf, const char *s)
{
	if (s == NULL)
		s = "";
	mate_json_string(s, strlen(s), MATE_JSON_UTF8, pf_put, pf);
}

static void
pf_begin(mate_perfetto *pf)
{
	pf_puts(pf, pf->events++ > 0 ? ",\n" : "\n");
}

/* ---- Open and close ----------------------------------------------------------------- */

static mate_perfetto *
pf_new(int gzip, mate_error *err)
{
	mate_perfetto *pf = calloc(1, sizeof(*pf));

	if (pf == NULL || (pf->buf = malloc(PF_BUF)) == NULL ||
	    (gzip && (pf->zbuf = malloc(PF_BUF)) == NULL)) {
		if (pf != NULL)
			free(pf->buf);
		free(pf);
		mate_set_error(err, MATE_ERR_NOMEM, "trace: out of memory");
		return NULL;
	}
	pf->fd = -1;
	pf->af.fd = -1;
	pf->gzip = gzip;
	pf->next_flow = 1;
	if (gzip) {
		if (deflateInit2(&pf->z, 5, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
			free(pf->zbuf);
			free(pf->buf);
			free(pf);
			mate_set_error(err, MATE_ERR_NOMEM, "gzip: cannot start deflate");
			return NULL;
		}
		pf->z_ready = 1;
	}
	pf_puts(pf, "{\"traceEvents\":[");
	return pf;
}

mate_perfetto *
mate_perfetto_open_fd(int fd, int gzip, mate_error *err)
{
	mate_perfetto *pf = pf_new(gzip, err);

	if (pf != NULL)
		pf->fd = fd;
	return pf;
}

mate_perfetto *
mate_perfetto_open(const char *path, int gzip, mate_error *err)
{
	mate_perfetto *pf = pf_new(gzip, err);

	if (pf == NULL)
		return NULL;
	if (mate_atomic_open(&pf->af, path, err) != MATE_OK) {
		pf->atomic = 0;
		mate_perfetto_abort(pf);
		return NULL;
	}
	pf->atomic = 1;
	pf->fd = pf->af.fd;
	return pf;
}

uint64_t
mate_perfetto_events(const mate_perfetto *pf)
{
	return pf->events;
}

void
mate_perfetto_flows(const mate_perfetto *pf, uint64_t *written, uint64_t *unended,
    uint64_t *forgotten)
{
	if (written != NULL)
		*written = pf->flows;
	if (unended != NULL)
		*unended = pf->unended + pf->npending;
	if (forgotten != NULL)
		*forgotten = pf->forgotten;
}

static void pf_causes_clear(mate_perfetto *pf);

static void
pf_free(mate_perfetto *pf)
{
	pf_causes_clear(pf);
	free(pf->causes);
	free(pf->heads);
	if (pf->z_ready)
		deflateEnd(&pf->z);
	free(pf->named);
	free(pf->zbuf);
	free(pf->buf);
	free(pf);
}

void
mate_perfetto_abort(mate_perfetto *pf)
{
	if (pf == NULL)
		return;
	if (pf->atomic)
		mate_atomic_abort(&pf->af);
	pf_free(pf);
}

int
mate_perfetto_close(mate_perfetto *pf, mate_error *err)
{
	int rc;

	pf_puts(pf, "\n],\"displayTimeUnit\":\"ns\"}\n");
	pf_flush(pf, 1);
	if ((rc = pf->err.code) != MATE_OK) {
		if (err != NULL)
			*err = pf->err;
		mate_perfetto_abort(pf);
		return rc;
	}
	if (pf->atomic && (rc = mate_atomic_commit(&pf->af, err)) != MATE_OK) {
		pf->atomic = 0;
		pf_free(pf);
		return rc;
	}
	pf_free(pf);
	return MATE_OK;
}

/* ---- Events -------------------------------------------------------------------------- */

static int
pid_of(const struct tl_lane *L)
{
	return L->log + 1;
}

static int
tid_of(const struct tl_lane *L, int track)
{
	return L->index * PF_MAX_TRACKS + track + 1;
}

static void
pf_ts(mate_perfetto *pf, const char *key, double seconds)
{
	pf_printf(pf, ",\"%s\":%.3f", key, seconds * 1e6);
}

static void
pf_thread_name(mate_perfetto *pf, const struct tl_lane *L, int track)
{
	char name[300];
	static const int rank[] = { 0, 1, 2, 3 };

	if (track == 0)
		snprintf(name, sizeof(name), "%s", L->label);
	else
		snprintf(name, sizeof(name), "%s (%d)", L->label, track + 1);
	pf_begin(pf);
	pf_printf(pf, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
	    pid_of(L), tid_of(L, track));
	pf_str(pf, name);
	pf_puts(pf, "}}");
	pf_begin(pf);
	pf_printf(pf, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
	    "\"args\":{\"sort_index\":%d}}", pid_of(L), tid_of(L, track),
	    rank[L->kind] * 100000 + L->index * PF_MAX_TRACKS + track);
}

void
tl_pf_lane(mate_perfetto *pf, const mate_timeline *tl, struct tl_lane *L)
{
	if ((size_t)L->log >= pf->nnamed) {
		size_t n = (size_t)L->log + 64;
		unsigned char *p = realloc(pf->named, n);
		if (p == NULL)
			return;
		memset(p + pf->nnamed, 0, n - pf->nnamed);
		pf->named = p;
		pf->nnamed = n;
	}
	if (!pf->named[L->log]) {
		pf->named[L->log] = 1;
		pf_begin(pf);
		pf_printf(pf, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":",
		    pid_of(L));
		pf_str(pf, tl_log_name(tl, L->log));
		pf_puts(pf, "}}");
		pf_begin(pf);
		pf_printf(pf, "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,"
		    "\"args\":{\"sort_index\":%d}}", pid_of(L), L->log);
	}
	if (L->kind != MATE_LANE_MEMORY)
		pf_thread_name(pf, L, 0);
}

void
tl_pf_lane_renamed(mate_perfetto *pf, struct tl_lane *L)
{
	if (L->kind != MATE_LANE_MEMORY)
		pf_thread_name(pf, L, 0);
}

/* Can [s, e] join track t without breaking nesting? Spans arrive in
 * (nearly) end order; t keeps its top-level slices, disjoint, in order. */
static int
track_fits(const struct tl_track *t, double s, double e)
{
	int i;

	if (s < t->floor)
		return 0;
	if (t->n > 0 && e < t->e[t->n - 1])    /* ends early: must sit inside */
		return s >= t->s[t->n - 1];
	for (i = t->n - 1; i >= 0 && t->e[i] > s; i--)
		if (t->s[i] < s)
			return 0;
	return 1;
}

static void
track_push(struct tl_track *t, double s, double e)
{
	int i;

	if (t->n > 0 && e < t->e[t->n - 1])
		return;                 /* a child of the last slice */
	for (i = t->n - 1; i >= 0 && t->e[i] > s; i--)
		;
	t->n = i + 1;                   /* those inside become children */
	if (t->n == 16) {
		if (t->e[0] > t->floor)
			t->floor = t->e[0];
		memmove(t->s, t->s + 1, 15 * sizeof(double));
		memmove(t->e, t->e + 1, 15 * sizeof(double));
		t->n--;
	}
	t->s[t->n] = s;
	t->e[t->n++] = e;
}

static int
track_pick(mate_perfetto *pf, struct tl_lane *L, double s, double e)
{
	int i;

	for (i = 0; i < L->ntracks; i++)
		if (track_fits(&L->tracks[i], s, e))
			break;
	if (i == L->ntracks) {
		if (L->tracks == NULL &&
		    (L->tracks = calloc(PF_MAX_TRACKS, sizeof(*L->tracks))) == NULL)
			return 0;
		if (L->ntracks == PF_MAX_TRACKS)
			i = PF_MAX_TRACKS - 1;  /* give up on nesting */
		else if (L->ntracks++ > 0)
			pf_thread_name(pf, L, i);
	}
	track_push(&L->tracks[i], s, e);
	return i;
}

/* ---- Flows ----------------------------------------------------------------------------
 * Chrome's trace engine binds a flow event to the slice of its pid, tid and
 * category that holds its ts (DevTools: the slice that starts at that very
 * ts); "s" binds to the enclosing slice, "f" with "bp":"e" too. So a flow's
 * two events are written only once both slices are, each with its slice's
 * pid, tid, start and category; a flow whose call never got a slice (still
 * open at the log's end, forgotten) is dropped and counted. */

static unsigned
cause_hash(int lane, uint64_t seq)
{
	uint64_t h = (seq ^ (uint64_t)(unsigned)lane << 40) * UINT64_C(0x9e3779b97f4a7c15);

	return (unsigned)(h >> 40) & (PF_CAUSES - 1);
}

static int
cause_find(const mate_perfetto *pf, int lane, uint64_t seq)
{
	int i;

	if (pf->causes == NULL)
		return -1;
	for (i = pf->heads[cause_hash(lane, seq)]; i >= 0; i = pf->causes[i].hnext)
		if (pf->causes[i].lane == lane && pf->causes[i].seq == seq)
			return i;
	return -1;
}

/* Frees slot i; the flows still waiting on it are dropped, their call
 * never ended (at the log's end) or forgotten (an older slot reused). */
static void
cause_drop(mate_perfetto *pf, int i, int at_end)
{
	struct pf_cause *c = &pf->causes[i];
	int *p = &pf->heads[cause_hash(c->lane, c->seq)];

	while (c->pending != NULL) {
		struct pf_end *n = c->pending->next;
		free(c->pending);
		c->pending = n;
		pf->npending--;
		if (at_end)
			pf->unended++;
		else
			pf->forgotten++;
	}
	while (*p >= 0 && *p != i)
		p = &pf->causes[*p].hnext;
	if (*p == i)
		*p = c->hnext;
	c->lane = -1;
}

static void
pf_causes_clear(mate_perfetto *pf)
{
	int i;

	for (i = 0; pf->causes != NULL && i < PF_CAUSES; i++)
		if (pf->causes[i].lane >= 0)
			cause_drop(pf, i, 1);
	pf->ncauses = 0;
}

void
tl_pf_cause(mate_perfetto *pf, const struct tl_lane *C, uint64_t seq)
{
	struct pf_cause *c;
	unsigned h;
	int i;

	if (cause_find(pf, C->index, seq) >= 0)
		return;
	if (pf->causes == NULL) {
		pf->causes = malloc(PF_CAUSES * sizeof(*pf->causes));
		pf->heads = malloc(PF_CAUSES * sizeof(*pf->heads));
		if (pf->causes == NULL || pf->heads == NULL) {
			free(pf->causes);
			free(pf->heads);
			pf->causes = NULL;
			pf->heads = NULL;
			return;         /* its flows will count as dropped */
		}
		for (i = 0; i < PF_CAUSES; i++) {
			pf->causes[i].lane = -1;
			pf->heads[i] = -1;
		}
	}
	i = (int)(pf->ncauses++ % PF_CAUSES);
	if (pf->causes[i].lane >= 0)
		cause_drop(pf, i, 0);  /* the oldest */
	c = &pf->causes[i];
	memset(c, 0, sizeof(*c));
	c->seq = seq;
	c->lane = C->index;
	h = cause_hash(c->lane, seq);
	c->hnext = pf->heads[h];
	pf->heads[h] = i;
}

void
tl_pf_end_log(mate_perfetto *pf)
{
	pf_causes_clear(pf);
}

static void
pf_flow(mate_perfetto *pf, const struct pf_cause *c, int pid, int tid, double ts)
{
	pf_begin(pf);
	pf_printf(pf, "{\"name\":\"call\",\"cat\":\"" PF_CAT "\",\"ph\":\"s\",\"id\":%llu",
	    (unsigned long long)pf->next_flow);
	pf_ts(pf, "ts", c->ts);
	pf_printf(pf, ",\"pid\":%d,\"tid\":%d}", c->pid, c->tid);
	pf_begin(pf);
	pf_printf(pf, "{\"name\":\"call\",\"cat\":\"" PF_CAT "\",\"ph\":\"f\",\"bp\":\"e\","
	    "\"id\":%llu", (unsigned long long)pf->next_flow++);
	pf_ts(pf, "ts", ts);
	pf_printf(pf, ",\"pid\":%d,\"tid\":%d}", pid, tid);
	pf->flows++;
}

/* The slice of a call was written at (pid, tid, ts): its waiting flows go out. */
static void
flow_call(mate_perfetto *pf, const struct tl_lane *L, uint64_t seq, int tid, double ts)
{
	int i = cause_find(pf, L->index, seq);
	struct pf_cause *c;

	if (i < 0)
		return;
	c = &pf->causes[i];
	c->written = 1;
	c->pid = pid_of(L);
	c->tid = tid;
	c->ts = ts;
	while (c->pending != NULL) {
		struct pf_end *n = c->pending->next;
		pf_flow(pf, c, c->pending->pid, c->pending->tid, c->pending->ts);
		free(c->pending);
		c->pending = n;
		pf->npending--;
	}
}

/* The slice of work caused by call seq on lane `from` was written. */
static void
flow_work(mate_perfetto *pf, const struct tl_lane *from, uint64_t seq, int pid, int tid,
    double ts)
{
	int i = cause_find(pf, from->index, seq);
	struct pf_cause *c;
	struct pf_end *e;

	if (i < 0) {
		pf->forgotten++;
		return;
	}
	c = &pf->causes[i];
	if (c->written) {
		pf_flow(pf, c, pid, tid, ts);
		return;
	}
	if (pf->npending >= PF_PENDING_MAX || (e = malloc(sizeof(*e))) == NULL) {
		pf->forgotten++;
		return;
	}
	e->pid = pid;
	e->tid = tid;
	e->ts = ts;
	e->next = c->pending;
	c->pending = e;
	pf->npending++;
}

void
tl_pf_span(mate_perfetto *pf, struct tl_lane *L, const char *name, int is_call,
    int failed, double s, double e, const struct tl_open *o, const struct tl_lane *from)
{
	int track = track_pick(pf, L, s, e);

	pf_begin(pf);
	pf_puts(pf, "{\"name\":");
	pf_str(pf, name);
	pf_puts(pf, ",\"cat\":\"" PF_CAT "\",\"ph\":\"X\"");
	pf_ts(pf, "ts", s);
	pf_ts(pf, "dur", e - s);
	pf_printf(pf, ",\"pid\":%d,\"tid\":%d,\"args\":{\"kind\":\"%s\",\"seq\":%llu,"
	    "\"depth\":%d", pid_of(L), tid_of(L, track), is_call ? "call" : "work",
	    (unsigned long long)o->seq, o->depth);
	if (o->bytes >= 0)
		pf_printf(pf, ",\"bytes\":%lld", (long long)o->bytes);
	if (failed)
		pf_puts(pf, ",\"failed\":true");
	if (o->command != NULL) {
		pf_puts(pf, ",\"command\":");
		pf_str(pf, o->command);
	}
	if (o->details != NULL && o->details[0] != '\0') {
		pf_puts(pf, ",\"details\":");
		pf_str(pf, o->details);
	}
	pf_puts(pf, "}}");
	if (is_call)
		flow_call(pf, L, o->seq, tid_of(L, track), s);
	else if (from != NULL)
		flow_work(pf, from, o->flow_seq, pid_of(L), tid_of(L, track), s);
}

void
tl_pf_instant(mate_perfetto *pf, const struct tl_lane *L, const char *event, double t,
    const mate_event *ev)
{
	int global = strcmp(event, "signal") == 0;

	pf_begin(pf);
	pf_puts(pf, "{\"name\":");
	pf_str(pf, global ? ev->event : event);
	pf_printf(pf, ",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"%s\"", global ? "signal" : "event",
	    global ? "g" : "t");
	pf_ts(pf, "ts", t);
	pf_printf(pf, ",\"pid\":%d,\"tid\":%d,\"args\":{\"seq\":%llu,\"command\":",
	    pid_of(L), tid_of(L, 0), (unsigned long long)ev->seq);
	pf_str(pf, ev->command);
	if (ev->size >= 0)
		pf_printf(pf, ",\"bytes\":%lld", (long long)ev->size);
	if (ev->details[0] != '\0') {
		pf_puts(pf, ",\"details\":");
		pf_str(pf, ev->details);
	}
	pf_puts(pf, "}}");
}

void
tl_pf_counter(mate_perfetto *pf, const struct tl_lane *L, double t, double value)
{
	pf_begin(pf);
	pf_puts(pf, "{\"name\":");
	pf_str(pf, L->label);
	pf_puts(pf, ",\"cat\":\"memory\",\"ph\":\"C\"");
	pf_ts(pf, "ts", t);
	pf_printf(pf, ",\"pid\":%d,\"args\":{\"bytes\":%.0f}}", pid_of(L), value);
}
