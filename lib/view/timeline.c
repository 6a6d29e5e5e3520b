/* timeline.c: pairs instruction-log events into calls and work on lanes (explicit ids first, GT's rules as the fallback). */
#include "mate_private.h"
#include "timeline_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ev_type { EV_RECV, EV_SEND, EV_WSEND, EV_WRECV, EV_INJECT, EV_CONNECT,
	EV_ERROR, EV_OTHER };

static int
nomem(mate_error *err)
{
	return mate_set_error(err, MATE_ERR_NOMEM, "timeline: out of memory");
}

/* ---- Options, new, free --------------------------------------------------- */

void
mate_timeline_options_init(mate_timeline_options *o)
{
	memset(o, 0, sizeof(*o));
}

mate_timeline *
mate_timeline_new(const mate_timeline_options *o, mate_error *err)
{
	mate_timeline *tl = calloc(1, sizeof(*tl));
	int i, rc;

	if (tl == NULL)
		return nomem(err), NULL;
	if (o != NULL)
		tl->o = *o;
	tl->o.lanes = NULL;
	if (o != NULL && o->lanes != NULL) {
		if ((rc = regcomp(&tl->re, o->lanes, REG_EXTENDED | REG_NOSUB)) != 0) {
			char msg[200];
			regerror(rc, &tl->re, msg, sizeof(msg));
			mate_set_error(err, MATE_ERR_ARGUMENT, "lanes regex: %s: %s", o->lanes, msg);
			free(tl);
			return NULL;
		}
		tl->has_re = 1;
	}
	if (tl->o.has_from && tl->o.has_to && !(tl->o.to > tl->o.from)) {
		mate_set_error(err, MATE_ERR_ARGUMENT, "time range: --to must be after --from");
		mate_timeline_free(tl);
		return NULL;
	}
	tl->lanes = calloc(TL_MAX_LANES + 4, sizeof(*tl->lanes));
	tl->lane_hash = malloc(2 * TL_MAX_LANES * sizeof(int));
	if (tl->lanes == NULL || tl->lane_hash == NULL) {
		mate_timeline_free(tl);
		return nomem(err), NULL;
	}
	for (i = 0; i < 2 * TL_MAX_LANES; i++)
		tl->lane_hash[i] = -1;
	for (i = 0; i < 2 * TL_MAX_OPS; i++)
		tl->op_hash[i] = -1;
	for (i = 0; i < 4; i++)
		tl->overflow[i] = -1;
	tl->st.t0 = tl->st.first = INFINITY;
	tl->st.t1 = tl->st.last = -INFINITY;
	return tl;
}

static void
open_free(struct tl_open *o)
{
	free(o->command);
	free(o->details);
	o->command = o->details = NULL;
}

static void
lane_free(struct tl_lane *L)
{
	int i;

	if (L == NULL)
		return;
	for (i = 0; i < L->nstack; i++)
		open_free(&L->stack[i]);
	for (i = 0; i < L->fcount; i++)
		open_free(&L->fifo[(L->fhead + i) % TL_FIFO_MAX]);
	free(L->stack);
	free(L->fifo);
	free(L->tracks);
	tl_agg_free_lane(L);
	free(L->name);
	free(L->label);
	free(L);
}

static void
ids_clear(mate_timeline *tl)
{
	size_t i;

	for (i = 0; i < tl->ids_cap; i++)
		if (tl->ids[i].key != 0) {
			open_free(&tl->ids[i].o);
			tl->ids[i].key = 0;
		}
	tl->ids_n = 0;
}

void
mate_timeline_free(mate_timeline *tl)
{
	int i;

	if (tl == NULL)
		return;
	for (i = 0; i < tl->nlanes; i++)
		lane_free(tl->lanes[i]);
	ids_clear(tl);
	free(tl->ids);
	for (i = 0; i < tl->nlogs; i++)
		free(tl->logs[i].name);
	free(tl->logs);
	free(tl->lanes);
	free(tl->lane_hash);
	free(tl->bars);
	free(tl->marks);
	free(tl->flows);
	free(tl->signals);
	if (tl->has_re)
		regfree(&tl->re);
	free(tl);
}

void
mate_timeline_set_perfetto(mate_timeline *tl, mate_perfetto *pf)
{
	int i;

	tl->pf = pf;
	for (i = 0; pf != NULL && i < tl->nlanes; i++)
		if (!tl->lanes[i]->hidden)
			tl_pf_lane(pf, tl, tl->lanes[i]);
}

/* ---- Logs -------------------------------------------------------------------- */

int
mate_timeline_begin_log(mate_timeline *tl, const char *name, mate_error *err)
{
	struct tl_log *lg;

	if (tl->in_log)
		mate_timeline_end_log(tl, NULL);
	if (tl->nlogs >= 65535)
		return mate_set_error(err, MATE_ERR_LIMIT, "timeline: too many logs");
	lg = realloc(tl->logs, (size_t)(tl->nlogs + 1) * sizeof(*lg));
	if (lg == NULL)
		return nomem(err);
	tl->logs = lg;
	lg = &tl->logs[tl->nlogs];
	memset(lg, 0, sizeof(*lg));
	if ((lg->name = strdup(name != NULL ? name : "<log>")) == NULL)
		return nomem(err);
	lg->dispatcher = lg->cur_client = lg->ctx_op = -1;
	tl->nlogs++;
	tl->st.logs = tl->nlogs;
	tl->in_log = 1;
	return MATE_OK;
}

const char *
tl_log_name(const mate_timeline *tl, int log)
{
	return log >= 0 && log < tl->nlogs ? tl->logs[log].name : "";
}

/* ---- Ops ----------------------------------------------------------------------- */

/* Ops take these in order of first appearance: Okabe and Ito's colour-blind
 * safe set, then Tol's "muted" darks; a hash of the name only past them. */
static const uint32_t op_palette[] = { 0x0072b2, 0xe69f00, 0x009e73, 0xcc79a7,
	0x56b4e9, 0xd55e00, 0xf0e442, 0x332288, 0x882255, 0x999933 };

static uint32_t
op_colour(mate_timeline *tl, const char *name)
{
	int n = (int)(sizeof(op_palette) / sizeof(op_palette[0]));

	if (strcmp(name, "other") == 0)
		return 0x7f8c8d;
	if (tl->npalette < n)
		return op_palette[tl->npalette++];
	return mate_op_color(name);
}

static int
op_index(mate_timeline *tl, const char *name)
{
	size_t n = strlen(name);
	unsigned h = (unsigned)mate_fnv1a64(name, n) % (2 * TL_MAX_OPS);
	struct tl_op *op;

	for (;;) {
		int i = tl->op_hash[h];
		if (i < 0)
			break;
		if (strcmp(tl->ops[i].name, name) == 0)
			return i;
		h = (h + 1) % (2 * TL_MAX_OPS);
	}
	if (tl->nops >= TL_MAX_OPS)
		return strcmp(name, "other") == 0 ? 0 : op_index(tl, "other");
	op = &tl->ops[tl->nops];
	snprintf(op->name, sizeof(op->name), "%s", name);
	op->rgb = op_colour(tl, op->name);
	tl->op_hash[h] = tl->nops;
	return tl->nops++;
}

/* The current event's details value of key, as mate_ilog_detail() gives it. */
static int
detail(mate_timeline *tl, const char *key, char *buf, size_t cap)
{
	return mate_ilog_details_get(&tl->det, key, buf, cap);
}

static int
event_op(mate_timeline *tl, const mate_event *ev)
{
	char op[256], buf[TL_OP_NAME];

	return op_index(tl, mate_ilog_op_of(ev, detail(tl, "op", op, sizeof(op)) > 0 ? op : NULL,
	    buf, sizeof(buf)));
}

/* ---- Hosts ------------------------------------------------------------------- */

/* Another machine's event (host=): its host kept, and on the first event mate-trace
 * wrote from it, the seconds it moved that host's times by (clock=+30.000). */
static void
host_note(mate_timeline *tl)
{
	char host[64], clock[32], *end;
	struct tl_host *h = NULL;
	double c;
	int i;

	if (detail(tl, "host", host, sizeof(host)) <= 0)
		return;
	for (i = 0; i < tl->nhosts && h == NULL; i++)
		if (strcmp(tl->hosts[i].name, host) == 0)
			h = &tl->hosts[i];
	if (h == NULL) {
		if (tl->nhosts == TL_MAX_HOSTS)
			return;
		h = &tl->hosts[tl->nhosts++];
		snprintf(h->name, sizeof(h->name), "%s", host);
		tl->st.hosts = tl->nhosts;
	}
	if (detail(tl, "clock", clock, sizeof(clock)) <= 0)
		return;
	c = strtod(clock, &end);
	if (end == clock || (*end != '\0' && strcmp(end, "s") != 0) || !isfinite(c) || c == 0)
		return;
	tl->st.hosts_moved += !h->moved;
	h->moved = 1;
	h->clock = c;
}

int
mate_timeline_host(const mate_timeline *tl, int i, const char **name, double *clock)
{
	if (i < 0 || i >= tl->nhosts)
		return -1;
	if (name != NULL)
		*name = tl->hosts[i].name;
	if (clock != NULL)
		*clock = tl->hosts[i].moved ? tl->hosts[i].clock : 0;
	return tl->hosts[i].moved;
}

/* ---- Lanes ------------------------------------------------------------------- */

const char *const tl_kind_word[] = { "client", "dispatcher", "worker", "memory" };

static int
lane_visible(mate_timeline *tl, const char *label, const char *logname)
{
	char both[512];

	if (!tl->has_re)
		return 1;
	if (regexec(&tl->re, label, 0, NULL, 0) == 0)
		return 1;
	snprintf(both, sizeof(both), "%s: %s", logname, label);
	return regexec(&tl->re, both, 0, NULL, 0) == 0;
}

static struct tl_lane *
lane_create(mate_timeline *tl, int kind, const char *name, int slot, mate_error *err)
{
	struct tl_lane *L = calloc(1, sizeof(*L));
	char label[256];
	int i;

	if (L == NULL)
		return nomem(err), NULL;
	if (kind == MATE_LANE_DISPATCHER)
		snprintf(label, sizeof(label), "dispatcher");
	else if (kind == MATE_LANE_WORKER)
		snprintf(label, sizeof(label), "%.200s", name);
	else
		snprintf(label, sizeof(label), "%s %.200s", tl_kind_word[kind], name);
	L->name = strdup(name);
	L->label = strdup(label);
	if (L->name == NULL || L->label == NULL) {
		lane_free(L);
		return nomem(err), NULL;
	}
	L->kind = kind;
	L->log = tl->nlogs - 1;
	L->index = tl->nlanes;
	L->first = INFINITY;
	L->last = -INFINITY;
	for (i = 0; i < TL_MARK_TYPES; i++)
		L->mk_last[i] = -1;
	L->fl_last = -1;
	L->hidden = !lane_visible(tl, label, tl->logs[L->log].name);
	tl->lanes[tl->nlanes++] = L;
	if (slot >= 0)
		tl->lane_hash[slot] = L->index;
	if (tl->pf != NULL && !L->hidden)
		tl_pf_lane(tl->pf, tl, L);
	return L;
}

/* The lane of (current log, kind, name), created on first use. An event from another
 * host (mate-trace's host= after pid=) has lanes of that host's own: "worker_0 @node7". */
static struct tl_lane *
lane_get(mate_timeline *tl, int kind, const char *name, mate_error *err)
{
	int log = tl->nlogs - 1;
	char host[64], hosted[256];
	uint64_t h;
	unsigned slot;

	if (detail(tl, "host", host, sizeof(host)) > 0) {
		snprintf(hosted, sizeof(hosted), "%s @%s", name, host);
		name = hosted;
	}
	h = mate_fnv1a64(name, strlen(name));

	h = mate_fnv1a(&log, sizeof(log), h, MATE_FNV1A64_PRIME);
	h = mate_fnv1a(&kind, sizeof(kind), h, MATE_FNV1A64_PRIME);
	slot = (unsigned)(h % (2 * TL_MAX_LANES));
	for (;;) {
		int i = tl->lane_hash[slot];
		if (i < 0)
			break;
		if (tl->lanes[i]->kind == kind && tl->lanes[i]->log == log &&
		    strcmp(tl->lanes[i]->name, name) == 0)
			return tl->lanes[i];
		slot = (slot + 1) % (2 * TL_MAX_LANES);
	}
	if (tl->nlanes < TL_MAX_LANES)
		return lane_create(tl, kind, name, (int)slot, err);
	if (tl->overflow[kind] < 0) {   /* lanes past the limit share one */
		struct tl_lane *L = lane_create(tl, kind, "(more lanes)", -1, err);
		if (L == NULL)
			return NULL;
		tl->overflow[kind] = L->index;
	}
	return tl->lanes[tl->overflow[kind]];
}

static struct tl_lane *
dispatcher_lane(mate_timeline *tl, mate_error *err)
{
	struct tl_log *lg = &tl->logs[tl->nlogs - 1];
	struct tl_lane *L;

	if (lg->dispatcher >= 0)
		return tl->lanes[lg->dispatcher];
	if ((L = lane_get(tl, MATE_LANE_DISPATCHER, "dispatcher", err)) != NULL)
		lg->dispatcher = L->index;
	return L;
}

/* A client's lane name: the source id without GT's repeated CLIENT word. */
static const char *
client_name(const char *src)
{
	while (strncmp(src, "CLIENT ", 7) == 0)
		src += 7;
	return src[0] != '\0' ? src : "?";
}

/* Natural order: "w2" before "w10". */
static int
natcmp(const char *a, const char *b)
{
	while (*a != '\0' && *b != '\0') {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			const char *x = a, *y = b;
			size_t nx, ny;
			while (*x == '0')
				x++;
			while (*y == '0')
				y++;
			nx = strspn(x, "0123456789");
			ny = strspn(y, "0123456789");
			if (nx != ny)
				return nx < ny ? -1 : 1;
			if (memcmp(x, y, nx) != 0)
				return memcmp(x, y, nx);
			a = x + nx;
			b = y + ny;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++, b++;
	}
	return *a == *b ? 0 : (*a == '\0' ? -1 : 1);
}

/* Drawing order: by log, then clients (as they came), the dispatcher,
 * workers and memory (by name, naturally). */
static int
lane_before(const struct tl_lane *a, const struct tl_lane *b)
{
	int c;

	if (a->log != b->log)
		return a->log < b->log;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	if (a->kind != MATE_LANE_CLIENT && (c = natcmp(a->name, b->name)) != 0)
		return c < 0;
	return a->index < b->index;
}

int
tl_lane_shown(const struct tl_lane *L)
{
	return !L->hidden && L->acts > 0;
}

int
tl_lane_order(const mate_timeline *tl, int *order)
{
	int i, j, n = 0;

	for (i = 0; i < tl->nlanes; i++) {   /* insertion sort: few lanes, no globals */
		if (!tl_lane_shown(tl->lanes[i]))
			continue;
		for (j = n; j > 0 && lane_before(tl->lanes[i], tl->lanes[order[j - 1]]); j--)
			order[j] = order[j - 1];
		order[j] = i;
		n++;
	}
	return n;
}

/* ---- Ids ------------------------------------------------------------------------ */

static uint64_t
id_key(int what, int lane, const char *id)
{
	uint64_t h = mate_fnv1a64(&what, sizeof(what));

	h = mate_fnv1a(&lane, sizeof(lane), h, MATE_FNV1A64_PRIME);
	h = mate_fnv1a(id, strlen(id), h, MATE_FNV1A64_PRIME);
	return h != 0 ? h : 1;
}

static struct tl_id *
ids_find(mate_timeline *tl, uint64_t key)
{
	size_t i;

	if (tl->ids_cap == 0)
		return NULL;
	for (i = key & (tl->ids_cap - 1); tl->ids[i].key != 0; i = (i + 1) & (tl->ids_cap - 1))
		if (tl->ids[i].key == key)
			return &tl->ids[i];
	return NULL;
}

static int
ids_grow(mate_timeline *tl)
{
	size_t cap = tl->ids_cap ? tl->ids_cap * 2 : 1024, i, j;
	struct tl_id *n = calloc(cap, sizeof(*n));

	if (n == NULL)
		return -1;
	for (i = 0; i < tl->ids_cap; i++) {
		if (tl->ids[i].key == 0)
			continue;
		for (j = tl->ids[i].key & (cap - 1); n[j].key != 0; j = (j + 1) & (cap - 1))
			;
		n[j] = tl->ids[i];
	}
	free(tl->ids);
	tl->ids = n;
	tl->ids_cap = cap;
	return 0;
}

static int ids_put_new(mate_timeline *tl, uint64_t key, const struct tl_open *o);

static int
seq_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* The table is full of calls and work that never ended (killed clients):
 * forgets the older half, so that what comes later still pairs. Work
 * forgotten counts as unpaired (calls are counted by their client's
 * stack). Amortised over TL_IDS_MAX / 2 puts. @return 0, or -1. */
static int
ids_forget_older(mate_timeline *tl)
{
	uint64_t *seqs = malloc(tl->ids_n * sizeof(*seqs)), cut;
	struct tl_id *n = calloc(tl->ids_cap, sizeof(*n));
	size_t i, j, k = 0, mask = tl->ids_cap - 1;

	if (seqs == NULL || n == NULL) {
		free(seqs);
		free(n);
		return -1;
	}
	for (i = 0; i < tl->ids_cap; i++)
		if (tl->ids[i].key != 0)
			seqs[k++] = tl->ids[i].o.seq;
	qsort(seqs, k, sizeof(*seqs), seq_cmp);
	cut = seqs[k / 2];
	free(seqs);
	tl->ids_n = 0;
	for (i = 0; i < tl->ids_cap; i++) {   /* a fresh table: no broken chains */
		struct tl_id *e = &tl->ids[i];
		if (e->key == 0)
			continue;
		if (e->o.seq < cut) {
			if (e->o.lane >= 0 && tl->lanes[e->o.lane]->kind == MATE_LANE_WORKER)
				tl->st.unpaired++;
			open_free(&e->o);
			continue;
		}
		for (j = e->key & mask; n[j].key != 0; j = (j + 1) & mask)
			;
		n[j] = *e;
		tl->ids_n++;
	}
	free(tl->ids);
	tl->ids = n;
	return 0;
}

/* Stores o under key (replacing an entry with that key). 0, or -1 when full. */
static int
ids_put(mate_timeline *tl, uint64_t key, const struct tl_open *o)
{
	struct tl_id *e = ids_find(tl, key);

	if (e != NULL) {
		open_free(&e->o);
		e->o = *o;
		return 0;
	}
	if (tl->ids_n >= TL_IDS_MAX && ids_forget_older(tl) != 0)
		return -1;
	return ids_put_new(tl, key, o);
}

/* Stores o under key, not yet in the table. 0, or -1 on no memory. */
static int
ids_put_new(mate_timeline *tl, uint64_t key, const struct tl_open *o)
{
	size_t i;

	if ((tl->ids_n + 1) * 2 > tl->ids_cap && ids_grow(tl) != 0)
		return -1;
	for (i = key & (tl->ids_cap - 1); tl->ids[i].key != 0; i = (i + 1) & (tl->ids_cap - 1))
		;
	tl->ids[i].key = key;
	tl->ids[i].o = *o;
	tl->ids_n++;
	return 0;
}

/* Removes e (backward-shift deletion keeps probing chains intact). */
static void
ids_del(mate_timeline *tl, struct tl_id *e)
{
	size_t mask = tl->ids_cap - 1, i = (size_t)(e - tl->ids), j = i;

	tl->ids[i].key = 0;
	tl->ids_n--;
	for (;;) {
		size_t home;
		j = (j + 1) & mask;
		if (tl->ids[j].key == 0)
			return;
		home = tl->ids[j].key & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			tl->ids[i] = tl->ids[j];
			tl->ids[j].key = 0;
			i = j;
		}
	}
}

/* ---- Spans ---------------------------------------------------------------------- */

static void
note_time(mate_timeline *tl, struct tl_lane *L, double t)
{
	if (t < tl->st.t0)
		tl->st.t0 = t;
	if (t > tl->st.t1)
		tl->st.t1 = t;
	if (t < L->first)
		L->first = t;
	if (t > L->last)
		L->last = t;
}

static int
in_window(const mate_timeline *tl, double t)
{
	return (!tl->o.has_from || t >= tl->o.from) && (!tl->o.has_to || t <= tl->o.to);
}

static void
add_busy(struct tl_lane *L, double s, double e)
{
	if (e <= L->covered)
		return;
	L->busy += e - (s > L->covered ? s : L->covered);
	L->covered = e;
}

/* Did the event that closes a span report a failure (GT's success=False,
 * an error=, a status= other than ok)? */
static int
reports_failure(mate_timeline *tl)
{
	char v[16];

	if (detail(tl, "success", v, sizeof(v)) > 0)
		return strcmp(v, "False") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0;
	if (detail(tl, "error", v, sizeof(v)) >= 0)
		return 1;
	if (detail(tl, "status", v, sizeof(v)) > 0)
		return strcmp(v, "ok") != 0 && strcmp(v, "0") != 0 && strcmp(v, "success") != 0;
	return 0;
}

/* Work o, [s, e] inside the window, was done for the call it is joined to
 * (its flow): credited to the outermost call open around that one on its
 * client's lane, which waited the rest of its time. Work that ends after
 * its call did was not waited for. */
static void
credit_work(mate_timeline *tl, const struct tl_open *o, double s, double e)
{
	struct tl_lane *C;
	int i;

	if (o->flow_lane < 0 || o->flow_lane >= tl->nlanes)
		return;
	C = tl->lanes[o->flow_lane];
	for (i = C->nstack - 1; i >= 0 && C->stack[i].seq != o->flow_seq; i--)
		;
	if (i < 0)
		return;
	while (i > 0 && C->stack[i].depth > 0)
		i--;
	C->stack[i].work += e - s;
	C->stack[i].has_work = 1;
}

/* A closed call or piece of work, from o's start to end. */
static int
emit_span(mate_timeline *tl, struct tl_lane *L, const struct tl_open *o, double end,
    int is_call, int failed, mate_error *err)
{
	double s = o->t, e = end;
	struct tl_op *op = &tl->ops[o->op];

	if (e < s)
		e = s;
	L->acts++;
	if ((tl->o.has_from && e < tl->o.from) || (tl->o.has_to && s > tl->o.to))
		return MATE_OK;
	if (tl->o.has_from && s < tl->o.from)
		s = tl->o.from;
	if (tl->o.has_to && e > tl->o.to)
		e = tl->o.to;
	if (!is_call)   /* a hidden worker's work still shortens its call's wait */
		credit_work(tl, o, s, e);
	if (L->hidden)
		return MATE_OK;
	tl->st.shown++;
	if (is_call) {
		tl->st.calls++;
		op->ncalls++;
		op->calls += e - s;
		op->call_max = e - s > op->call_max ? e - s : op->call_max;
	} else {
		tl->st.ops++;
		op->nwork++;
		op->work += e - s;
		op->work_max = e - s > op->work_max ? e - s : op->work_max;
	}
	L->spans++;
	op->spans++;
	if (o->depth > L->maxdepth)
		L->maxdepth = o->depth > 255 ? 255 : o->depth;
	note_time(tl, L, s);
	note_time(tl, L, e);
	if (o->depth == 0) {
		op->busy += e - s;
		add_busy(L, s, e);
		if (is_call && o->has_work && e - s > o->work)
			L->wait += e - s - o->work;
	}
	if (tl->pf != NULL) {
		const struct tl_lane *from = NULL;
		if (o->flow_lane >= 0 && o->flow_lane < tl->nlanes &&
		    !tl->lanes[o->flow_lane]->hidden && in_window(tl, o->flow_t))
			from = tl->lanes[o->flow_lane];
		tl_pf_span(tl->pf, L, op->name, is_call, failed, s, e, o, from);
	}
	if (failed)
		tl->st.failed++;
	if (tl_agg_span(tl, L, o->op, s, e, o->depth, is_call | (failed ? 2 : 0), o->seq) != 0)
		return nomem(err);
	return MATE_OK;
}

static int
mark(mate_timeline *tl, struct tl_lane *L, int type, int op, const mate_event *ev,
    mate_error *err)
{
	L->events++;
	L->acts += type != TL_MARK_CONNECT;
	if (L->hidden || !in_window(tl, ev->time))
		return MATE_OK;
	tl->st.shown++;
	note_time(tl, L, ev->time);
	tl->mark_seen[type] = 1;
	if (tl_agg_mark(tl, L, type, op, ev->time, ev->size, ev->seq) != 0)
		return nomem(err);
	return MATE_OK;
}

static void
open_init(mate_timeline *tl, struct tl_open *o, const mate_event *ev, int op, int lane)
{
	memset(o, 0, sizeof(*o));
	o->t = ev->time;
	o->seq = ev->seq;
	o->bytes = ev->size;
	o->op = op;
	o->lane = lane;
	o->flow_lane = -1;
	if (tl->pf != NULL) {   /* the JSON shows what opened the span */
		o->command = strndup(ev->command, TL_DETAIL_KEEP);
		o->details = strndup(ev->details, TL_DETAIL_KEEP);
	}
}

static int
detail_int(mate_timeline *tl, const char *key, int lo, int hi, int *out)
{
	char buf[24];
	char *end;
	long v;

	if (detail(tl, key, buf, sizeof(buf)) <= 0)
		return 0;
	v = strtol(buf, &end, 10);
	if (*end != '\0' || v < lo || v > hi)
		return 0;
	*out = (int)v;
	return 1;
}

/* ---- Calls: RECV .. SEND ------------------------------------------------------- */

/* A client lane of a thread the program named (a call's thread= detail):
 * "client NAME (TID)" rather than "client TID". */
static void
lane_name_thread(mate_timeline *tl, struct tl_lane *L, const char *tname)
{
	char label[256], *p;

	snprintf(label, sizeof(label), "client %.64s (%.120s)", tname, L->name);
	if ((p = strdup(label)) == NULL)
		return;
	free(L->label);
	L->label = p;
	L->named = 1;
	if (L->spans == 0)
		L->hidden = !lane_visible(tl, label, tl->logs[L->log].name);
	if (tl->pf != NULL && !L->hidden)
		tl_pf_lane_renamed(tl->pf, L);
}

static int
call_open(mate_timeline *tl, const mate_event *ev, mate_error *err)
{
	struct tl_log *lg = &tl->logs[tl->nlogs - 1];
	struct tl_lane *L = lane_get(tl, MATE_LANE_CLIENT, client_name(ev->source), err);
	struct tl_lane *D;
	char id[64], tname[64];
	struct tl_open o;
	int op, has_id = detail(tl, "call", id, sizeof(id)) > 0;

	if (L != NULL && !L->named && detail(tl, "thread", tname, sizeof(tname)) > 0)
		lane_name_thread(tl, L, tname);

	/* GT's requests go through its dispatcher; a call with its own id
	 * (mate's recorder) went through none: its marker stays on its lane */
	D = has_id ? L : dispatcher_lane(tl, err);
	if (L == NULL || D == NULL)
		return MATE_ERR_NOMEM;
	op = event_op(tl, ev);
	if (L->stack == NULL && (L->stack = calloc(TL_STACK_MAX, sizeof(*L->stack))) == NULL)
		return nomem(err);
	if (L->nstack == TL_STACK_MAX) {   /* forget the oldest */
		open_free(&L->stack[0]);
		memmove(L->stack, L->stack + 1, (TL_STACK_MAX - 1) * sizeof(*L->stack));
		L->nstack--;
		tl->st.unpaired++;
	}
	open_init(tl, &o, ev, op, L->index);
	if (!detail_int(tl, "depth", 0, 1000, &o.depth))
		o.depth = L->nstack;
	if (has_id) {
		struct tl_open copy = o;
		o.key = id_key(0, -1 - L->log, id);
		copy.command = copy.details = NULL;
		copy.key = o.key;
		if (ids_put(tl, o.key, &copy) != 0)
			tl->st.unpaired++;
	}
	L->stack[L->nstack++] = o;
	L->acts++;   /* a call, even one that never ends */
	if (D != L)
		L->events++;
	lg->cur_client = L->index;
	lg->ctx_op = op;
	snprintf(lg->ctx_cmd, sizeof(lg->ctx_cmd), "%s", ev->command);
	return mark(tl, D, TL_MARK_RECV, op, ev, err);
}

static int
call_close(mate_timeline *tl, const mate_event *ev, mate_error *err)
{
	struct tl_log *lg = &tl->logs[tl->nlogs - 1];
	struct tl_lane *L = lane_get(tl, MATE_LANE_CLIENT, client_name(ev->source), err);
	struct tl_open o;
	char id[64];
	int i = -1, rc;

	if (L == NULL)
		return MATE_ERR_NOMEM;
	L->events++;
	if (detail(tl, "call", id, sizeof(id)) > 0) {
		uint64_t key = id_key(0, -1 - L->log, id);
		struct tl_id *e = ids_find(tl, key);
		if (e != NULL)
			ids_del(tl, e);
		for (i = L->nstack - 1; i >= 0 && L->stack[i].key != key; i--)
			;
	} else if (L->nstack > 0) {
		i = L->nstack - 1;
	}
	if (i < 0) {
		tl->st.unpaired++;
		return MATE_OK;
	}
	o = L->stack[i];
	memmove(L->stack + i, L->stack + i + 1, (size_t)(L->nstack - i - 1) * sizeof(o));
	L->nstack--;
	rc = emit_span(tl, L, &o, ev->time, 1, reports_failure(tl), err);
	open_free(&o);
	if (lg->cur_client == L->index && L->nstack == 0) {
		lg->cur_client = -1;
		lg->ctx_op = -1;
	}
	return rc;
}

/* ---- Work: WORKER_SEND .. WORKER_RECV ------------------------------------------------ */

static struct tl_lane *
worker_lane(mate_timeline *tl, const mate_event *ev, mate_error *err)
{
	char w[128];

	if (detail(tl, "worker", w, sizeof(w)) > 0)
		return lane_get(tl, MATE_LANE_WORKER, w, err);
	return lane_get(tl, MATE_LANE_WORKER, ev->source[0] != '\0' ? ev->source : "?", err);
}

/* The call that caused this work: by call=, else (GT) the log's open call. */
static const struct tl_open *
work_cause(mate_timeline *tl, const mate_event *ev)
{
	struct tl_log *lg = &tl->logs[tl->nlogs - 1];
	char id[64];

	if (detail(tl, "call", id, sizeof(id)) > 0) {
		struct tl_id *e = ids_find(tl, id_key(0, -1 - (tl->nlogs - 1), id));
		return e != NULL ? &e->o : NULL;
	}
	if (lg->cur_client >= 0 && tl->lanes[lg->cur_client]->nstack > 0) {
		struct tl_lane *C = tl->lanes[lg->cur_client];
		return &C->stack[C->nstack - 1];
	}
	return NULL;
}

/* Work's op: its op=, else that of the call it names, else (GT) that of
 * the latest MODIFIER_INJECT or RECV, else derived from its command. */
static int
work_op(mate_timeline *tl, const mate_event *ev, const struct tl_open *cause)
{
	char buf[TL_OP_NAME];

	if (detail(tl, "op", buf, sizeof(buf)) > 0)
		return event_op(tl, ev);
	if (cause != NULL && detail(tl, "call", buf, sizeof(buf)) > 0)
		return cause->op;
	if (tl->logs[tl->nlogs - 1].ctx_op >= 0)
		return tl->logs[tl->nlogs - 1].ctx_op;
	if (cause != NULL)
		return cause->op;
	return event_op(tl, ev);
}

/* Joins work o (starting at t on W) to the call that caused it. */
static int
flow(mate_timeline *tl, const struct tl_open *cause, struct tl_lane *W, double t,
    struct tl_open *o)
{
	struct tl_lane *C;

	if (cause == NULL || cause->lane < 0 || cause->lane >= tl->nlanes)
		return 0;
	C = tl->lanes[cause->lane];
	o->flow_lane = C->index;
	o->flow_t = cause->t;
	o->flow_seq = cause->seq;
	if (tl->pf != NULL && !C->hidden)
		tl_pf_cause(tl->pf, C, cause->seq);
	if (C->hidden || W->hidden || !in_window(tl, cause->t) || !in_window(tl, t))
		return 0;
	tl->flows_total++;
	return tl_agg_flow(tl, C->index, cause->t, W->index, t);
}

static int
fifo_push(mate_timeline *tl, struct tl_lane *W, const struct tl_open *o)
{
	if (W->fifo == NULL && (W->fifo = calloc(TL_FIFO_MAX, sizeof(*W->fifo))) == NULL)
		return -1;
	if (W->fcount == TL_FIFO_MAX) {   /* forget the oldest */
		open_free(&W->fifo[W->fhead]);
		W->fhead = (W->fhead + 1) % TL_FIFO_MAX;
		W->fcount--;
		tl->st.unpaired++;
	}
	W->fifo[(W->fhead + W->fcount++) % TL_FIFO_MAX] = *o;
	return 0;
}

static int
work_send(mate_timeline *tl, const mate_event *ev, mate_error *err)
{
	struct tl_lane *W = worker_lane(tl, ev, err);
	const struct tl_open *cause;
	struct tl_open o;
	char id[64];
	int has_id, rc;

	if (W == NULL)
		return MATE_ERR_NOMEM;
	cause = work_cause(tl, ev);
	open_init(tl, &o, ev, work_op(tl, ev, cause), W->index);
	has_id = detail(tl, "id", id, sizeof(id)) > 0;
	if (!has_id && W->has_orphan && strcmp(W->orphan.command, ev->command) == 0 &&
	    ev->time - W->orphan.t <= TL_BATCH_WINDOW) {
		/* GT's WorkerBatch: the reply was logged first */
		W->has_orphan = 0;
		o.t = W->orphan.start;
		if (flow(tl, cause, W, o.t, &o) != 0) {
			open_free(&o);
			return nomem(err);
		}
		rc = mark(tl, W, TL_MARK_WSEND, o.op, ev, err);
		if (rc == 0)
			rc = emit_span(tl, W, &o, W->orphan.t, 0, W->orphan.failed, err);
		open_free(&o);
		return rc;
	}
	if (flow(tl, cause, W, ev->time, &o) != 0) {
		open_free(&o);
		return nomem(err);
	}
	if (has_id) {
		o.key = id_key(1, W->index, id);
		if (ids_put(tl, o.key, &o) != 0) {
			tl->st.unpaired++;
			open_free(&o);
		}
	} else if (fifo_push(tl, W, &o) != 0) {
		open_free(&o);
		return nomem(err);
	}
	return mark(tl, W, TL_MARK_WSEND, o.op, ev, err);
}

static int
work_recv(mate_timeline *tl, const mate_event *ev, mate_error *err)
{
	struct tl_log *lg = &tl->logs[tl->nlogs - 1];
	struct tl_lane *W = worker_lane(tl, ev, err);
	struct tl_open o;
	char id[64];
	int rc = MATE_OK, op = -1;

	if (W == NULL)
		return MATE_ERR_NOMEM;
	if (detail(tl, "id", id, sizeof(id)) > 0) {
		struct tl_id *e = ids_find(tl, id_key(1, W->index, id));
		if (e == NULL) {
			tl->st.unpaired++;
		} else {
			o = e->o;
			ids_del(tl, e);
			op = o.op;
			rc = emit_span(tl, W, &o, ev->time, 0, reports_failure(tl), err);
			open_free(&o);
		}
	} else if (W->fcount > 0) {
		o = W->fifo[W->fhead];
		W->fhead = (W->fhead + 1) % TL_FIFO_MAX;
		W->fcount--;
		op = o.op;
		rc = emit_span(tl, W, &o, ev->time, 0, reports_failure(tl), err);
		open_free(&o);
	} else {
		if (W->has_orphan)
			tl->st.unpaired++;
		W->has_orphan = 1;
		W->orphan.t = ev->time;
		W->orphan.start = lg->has_prev && lg->prev_time <= ev->time ? lg->prev_time : ev->time;
		W->orphan.seq = ev->seq;
		W->orphan.bytes = ev->size;
		W->orphan.failed = reports_failure(tl);
		snprintf(W->orphan.command, sizeof(W->orphan.command), "%s", ev->command);
	}
	if (rc != MATE_OK)
		return rc;
	if (op < 0)
		op = work_op(tl, ev, work_cause(tl, ev));
	return mark(tl, W, TL_MARK_WRECV, op, ev, err);
}

/* ---- Other events ------------------------------------------------------------------ */

static const struct {
	const char *name;
	int type;
} ev_types[] = {
	{ "RECV", EV_RECV },
	{ "SEND", EV_SEND },
	{ "WORKER_SEND", EV_WSEND },
	{ "WORKER_RECV", EV_WRECV },
	{ "MODIFIER_INJECT", EV_INJECT },
	{ "CONNECT", EV_CONNECT },
	{ "DISCONNECT", EV_CONNECT },
	{ "ERROR", EV_ERROR },
};

static int
ev_type(const char *e)
{
	for (size_t i = 0; i < sizeof(ev_types) / sizeof(ev_types[0]); i++)
		if (e[0] == ev_types[i].name[0] && strcmp(e, ev_types[i].name) == 0)
			return ev_types[i].type;
	return EV_OTHER;
}

/* strstr(s, w) != NULL, for the short words of an event line (the library's
 * strstr() costs more in setting up than these take). */
static int
contains(const char *s, const char *w)
{
	size_t n = strlen(w);

	for (; *s != '\0'; s++)
		if (*s == w[0] && strncmp(s, w, n) == 0)
			return 1;
	return 0;
}

static int
is_signal(mate_timeline *tl, const mate_event *ev, char *name, size_t cap)
{
	if (detail(tl, "signal", name, cap) > 0)
		return 1;
	if (contains(ev->event, "SIGNAL") || contains(ev->command, "Signal") ||
	    contains(ev->command, "signal") || contains(ev->command, "SIGNAL")) {
		snprintf(name, cap, "%s", ev->command[0] != '\0' ? ev->command : ev->event);
		return 1;
	}
	return 0;
}

static int
signal_add(mate_timeline *tl, const mate_event *ev, const char *name, mate_error *err)
{
	struct tl_lane *D = dispatcher_lane(tl, err);

	if (D == NULL)
		return MATE_ERR_NOMEM;
	if (!in_window(tl, ev->time) || D->hidden)
		return mark(tl, D, TL_MARK_SIGNAL, op_index(tl, "other"), ev, err);
	tl->st.signals++;
	if (tl->signals == NULL &&
	    (tl->signals = calloc(TL_SIGNAL_CAP, sizeof(*tl->signals))) == NULL)
		return nomem(err);
	if (tl->nsignals < TL_SIGNAL_CAP) {
		tl->signals[tl->nsignals].t = ev->time;
		snprintf(tl->signals[tl->nsignals++].name, sizeof(tl->signals[0].name), "%s", name);
	}
	if (tl->pf != NULL)
		tl_pf_instant(tl->pf, D, "signal", ev->time, ev);
	return mark(tl, D, TL_MARK_SIGNAL, op_index(tl, "other"), ev, err);
}

static int
memory_add(mate_timeline *tl, const mate_event *ev, mate_error *err)
{
	char dev[64], val[32];
	struct tl_lane *M;
	char *end;
	double v;

	if (detail(tl, "in_use", val, sizeof(val)) <= 0)
		return MATE_OK;
	v = strtod(val, &end);
	if (*end != '\0' || !(v >= 0) || v > 1e18)
		return MATE_OK;
	if (detail(tl, "device", dev, sizeof(dev)) <= 0)
		snprintf(dev, sizeof(dev), "%s", client_name(ev->source));
	if ((M = lane_get(tl, MATE_LANE_MEMORY, dev, err)) == NULL)
		return MATE_ERR_NOMEM;
	M->events++;
	M->acts++;
	if (M->hidden || !in_window(tl, ev->time))
		return MATE_OK;
	tl->st.shown++;
	note_time(tl, M, ev->time);
	if (tl->pf != NULL)
		tl_pf_counter(tl->pf, M, ev->time, v);
	return tl_agg_memory(tl, M, ev->time, v) != 0 ? nomem(err) : MATE_OK;
}

/* An event that is neither half of a call nor of work: a marker. */
static int
other_event(mate_timeline *tl, const mate_event *ev, int type, mate_error *err)
{
	struct tl_log *lg = &tl->logs[tl->nlogs - 1];
	struct tl_lane *L;
	int op = event_op(tl, ev), mt;

	if (type == EV_CONNECT || type == EV_ERROR) {
		L = lane_get(tl, MATE_LANE_CLIENT, client_name(ev->source), err);
		mt = type == EV_CONNECT ? TL_MARK_CONNECT : TL_MARK_ERROR;
	} else if (ev->source_kind == MATE_SOURCE_WORKER && type != EV_INJECT) {
		L = worker_lane(tl, ev, err);
		mt = TL_MARK_OTHER;
	} else {
		L = dispatcher_lane(tl, err);
		mt = type == EV_INJECT ? TL_MARK_INJECT : TL_MARK_OTHER;
	}
	if (L == NULL)
		return MATE_ERR_NOMEM;
	if (type == EV_INJECT && lg->cur_client >= 0) {
		char v[TL_OP_NAME];
		/* work that follows does this op, if the inject names one or is
		 * another command than the request (GatherShards in a matmul) */
		if (detail(tl, "op", v, sizeof(v)) > 0 ||
		    strncmp(ev->command, lg->ctx_cmd, sizeof(lg->ctx_cmd) - 1) != 0)
			lg->ctx_op = op;
	}
	if (tl->pf != NULL && !L->hidden && in_window(tl, ev->time))
		tl_pf_instant(tl->pf, L, ev->event, ev->time, ev);
	return mark(tl, L, mt, op, ev, err);
}

int
mate_timeline_add(mate_timeline *tl, const mate_event *ev_in, mate_error *err)
{
	const mate_event *ev;
	mate_event copy;
	struct tl_log *lg;
	char name[32];
	int type, rc;

	if (!tl->in_log && (rc = mate_timeline_begin_log(tl, "<log>", err)) != 0)
		return rc;
	if (!(ev_in->time >= 0) || ev_in->time > 1e9)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "timeline: event time out of range");
	ev = &copy;   /* callers may leave strings NULL */
	copy = *ev_in;
	copy.event = copy.event != NULL ? copy.event : "";
	copy.source = copy.source != NULL ? copy.source : "";
	copy.command = copy.command != NULL ? copy.command : "";
	copy.details = copy.details != NULL ? copy.details : "";
	mate_ilog_details_index(&tl->det, copy.details);
	host_note(tl);
	lg = &tl->logs[tl->nlogs - 1];
	tl->st.events++;
	tl->st.first = ev->time < tl->st.first ? ev->time : tl->st.first;
	tl->st.last = ev->time > tl->st.last ? ev->time : tl->st.last;
	type = ev_type(ev->event);
	rc = MATE_OK;
	if (is_signal(tl, ev, name, sizeof(name))) {
		/* a line across the picture; a signal-only event is just that */
		rc = signal_add(tl, ev, name, err);
		if (type == EV_OTHER || rc != MATE_OK)
			type = -1;
	}
	if (type == -1)
		;
	else if (type == EV_RECV)
		rc = call_open(tl, ev, err);
	else if (type == EV_SEND)
		rc = call_close(tl, ev, err);
	else if (type == EV_WSEND)
		rc = work_send(tl, ev, err);
	else if (type == EV_WRECV)
		rc = work_recv(tl, ev, err);
	else
		rc = other_event(tl, ev, type, err);
	if (rc == MATE_OK)
		rc = memory_add(tl, ev, err);
	lg->prev_time = ev->time;
	lg->has_prev = 1;
	return rc;
}

int
mate_timeline_end_log(mate_timeline *tl, mate_error *err)
{
	int i, j;

	(void)err;
	if (!tl->in_log)
		return MATE_OK;
	for (i = 0; i < tl->nlanes; i++) {
		struct tl_lane *L = tl->lanes[i];
		if (L->log != tl->nlogs - 1)
			continue;
		tl->st.unpaired += (uint64_t)L->nstack + (uint64_t)L->fcount + (uint64_t)L->has_orphan;
		for (j = 0; j < L->nstack; j++)
			open_free(&L->stack[j]);
		for (j = 0; j < L->fcount; j++)
			open_free(&L->fifo[(L->fhead + j) % TL_FIFO_MAX]);
		L->nstack = L->fcount = L->fhead = L->has_orphan = 0;
	}
	for (i = 0; (size_t)i < tl->ids_cap; i++)
		if (tl->ids[i].key != 0 && tl->ids[i].o.key != 0 && tl->ids[i].o.lane >= 0 &&
		    tl->lanes[tl->ids[i].o.lane]->kind == MATE_LANE_WORKER)
			tl->st.unpaired++;
	ids_clear(tl);
	if (tl->pf != NULL)
		tl_pf_end_log(tl->pf);
	tl->in_log = 0;
	return MATE_OK;
}

/* ---- Results ---------------------------------------------------------------------- */

void
mate_timeline_get_stats(const mate_timeline *tl, mate_timeline_stats *st)
{
	int i;

	*st = tl->st;
	st->lanes = st->clients = st->workers = st->memory_lanes = st->op_types = 0;
	for (i = 0; i < tl->nlanes; i++) {
		const struct tl_lane *L = tl->lanes[i];
		if (!tl_lane_shown(L))
			continue;
		st->lanes++;
		st->clients += L->kind == MATE_LANE_CLIENT;
		st->workers += L->kind == MATE_LANE_WORKER;
		st->memory_lanes += L->kind == MATE_LANE_MEMORY;
	}
	for (i = 0; i < tl->nops; i++)
		st->op_types += tl->ops[i].spans > 0;
	if (tl->o.has_from)
		st->t0 = tl->o.from;
	if (tl->o.has_to)
		st->t1 = tl->o.to;
}

int
mate_timeline_lane(const mate_timeline *tl, int i, mate_lane_info *li)
{
	int order[TL_MAX_LANES + 4], n = tl_lane_order(tl, order);
	const struct tl_lane *L;
	mate_timeline_stats st;
	double span;

	if (i < 0 || i >= n)
		return -1;
	L = tl->lanes[order[i]];
	mate_timeline_get_stats(tl, &st);
	span = st.t1 - st.t0;
	li->label = L->label;
	li->kind = L->kind;
	li->busy = span > 0 ? L->busy / span : 0.0;
	if (li->busy > 1.0)
		li->busy = 1.0;
	li->spans = L->spans;
	li->wait = L->busy > 0 ? L->wait / L->busy : 0.0;
	if (li->wait > 1.0)
		li->wait = 1.0;
	li->y0 = L->y0;
	li->y1 = L->y1;
	return 0;
}

/* The ops with spans of the kind asked for, most time first (then by name):
 * their indexes into order. @return how many. */
static int
op_order(const mate_timeline *tl, int calls, int *order)
{
	int i, j, n = 0;

	for (i = 0; i < tl->nops; i++) {   /* insertion sort: at most TL_MAX_OPS */
		const struct tl_op *a = &tl->ops[i];
		double ta = calls ? a->calls : a->work;
		if ((calls ? a->ncalls : a->nwork) == 0)
			continue;
		for (j = n; j > 0; j--) {
			const struct tl_op *b = &tl->ops[order[j - 1]];
			double tb = calls ? b->calls : b->work;
			if (ta < tb || (ta == tb && strcmp(a->name, b->name) > 0))
				break;
			order[j] = order[j - 1];
		}
		order[j] = i;
		n++;
	}
	return n;
}

int
mate_timeline_op(const mate_timeline *tl, int calls, int i, mate_op_info *oi)
{
	int order[TL_MAX_OPS], n = op_order(tl, calls, order);
	const struct tl_op *op;

	if (i < 0 || i >= n)
		return -1;
	op = &tl->ops[order[i]];
	oi->name = op->name;
	oi->count = calls ? op->ncalls : op->nwork;
	oi->total = calls ? op->calls : op->work;
	oi->max = calls ? op->call_max : op->work_max;
	return 0;
}
