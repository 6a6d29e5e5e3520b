/* desync.c: the rank out of step: every rank's sequence of outermost calls (function and argument shapes) matched against the others', per group of ranks that make a function, and the rank that made no call for long. */
#include "mate_private.h"
#include "mate_events.h"
#include "util.h"
#include "util_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANKS_MAX 4096
#define CALLS_MAX (1u << 22)   /* compared per rank; later calls are counted, not kept */
#define FNS_MAX 65536          /* distinct functions */
#define SIGS_MAX (1u << 20)    /* distinct calls (function and shapes) */
#define SIG_BYTES_MAX (64u << 20)  /* of their shapes' text */
#define GAPS 64                /* the last gaps of a rank, for the median */
#define STALL_MIN 2.0          /* seconds without a call, at least, for a stall */

struct sig {                   /* a function with its argument shapes */
	uint32_t fn;
	char *args;
};

struct fn {
	char *name;
	uint64_t *callers;         /* a bit per rank */
	int group;                 /* its group's index at the last rebuild; -1: one caller */
};

struct rank {
	int used, ended, conflict;
	int cut;                   /* ended without saying so: its last calls may be missing */
	long pid;
	uint32_t *calls;           /* sig ids */
	size_t n, cap;
	uint64_t made;             /* calls made, also those past CALLS_MAX */
	double last, gaps[GAPS];
	int ngaps;
};

struct group {
	uint64_t *bits;
	int *members, nmembers;
	size_t *cursor;            /* per member: its next call not yet matched */
	uint64_t pos;              /* calls matched by every member */
	int done;                  /* reported: compared no further */
};

struct mate_desync {
	struct rank *ranks;
	int nranks;                /* highest rank + 1 */
	size_t words;              /* of a caller bit set */
	struct fn *fns;
	size_t nfns, cap_fns;
	struct sig *sigs;
	size_t nsigs, cap_sigs, sig_bytes;
	struct mate_map fn_map, sig_map;
	struct mate_map pid_rank;  /* pid -> rank + 1, from CONNECT lines */
	uint64_t unranked;         /* calls of processes with no rank */
	int world;                 /* the largest world= of a CONNECT, 0 for none */
	struct group *groups;
	int ngroups;
	int stale;                 /* a caller set changed: groups are rebuilt */
	char *reported;            /* per rank: a verdict on it was given */
	char text[1280], side[2][256];
};

mate_desync *
mate_desync_new(void)
{
	return calloc(1, sizeof(mate_desync));
}

static void
free_groups(mate_desync *d)
{
	for (int i = 0; i < d->ngroups; i++) {
		free(d->groups[i].bits);
		free(d->groups[i].members);
		free(d->groups[i].cursor);
	}
	free(d->groups);
	d->groups = NULL;
	d->ngroups = 0;
}

void
mate_desync_free(mate_desync *d)
{
	if (d == NULL)
		return;
	free_groups(d);
	for (int i = 0; i < d->nranks; i++)
		free(d->ranks[i].calls);
	for (size_t i = 0; i < d->nfns; i++)
		free(d->fns[i].name), free(d->fns[i].callers);
	for (size_t i = 0; i < d->nsigs; i++)
		free(d->sigs[i].args);
	free(d->ranks), free(d->fns), free(d->sigs), free(d->reported);
	mate_map_free(&d->fn_map);
	mate_map_free(&d->pid_rank);
	mate_map_free(&d->sig_map);
	free(d);
}

/* Room for rank r (and the caller bits of every function). */
static int
grow_ranks(mate_desync *d, int r)
{
	size_t words = (size_t)r / 64 + 1;
	struct rank *nr;
	char *rep;

	if (r < d->nranks)
		return 0;
	if ((nr = realloc(d->ranks, (size_t)(r + 1) * sizeof(*nr))) == NULL)
		return -1;
	d->ranks = nr;
	if ((rep = realloc(d->reported, (size_t)r + 1)) == NULL)
		return -1;
	d->reported = rep;
	memset(nr + d->nranks, 0, (size_t)(r + 1 - d->nranks) * sizeof(*nr));
	memset(rep + d->nranks, 0, (size_t)(r + 1 - d->nranks));
	if (words > d->words) {
		for (size_t i = 0; i < d->nfns; i++) {
			uint64_t *b = realloc(d->fns[i].callers, words * sizeof(*b));
			if (b == NULL)
				return -1;
			memset(b + d->words, 0, (words - d->words) * sizeof(*b));
			d->fns[i].callers = b;
		}
		d->words = words;
	}
	d->nranks = r + 1;
	return 0;
}

int
mate_desync_rank(mate_desync *d, int rank, long pid, mate_error *err)
{
	struct rank *r;

	if (rank < 0 || rank >= RANKS_MAX)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "rank %d is out of range (0..%d)", rank,
		    RANKS_MAX - 1);
	if (grow_ranks(d, rank) != 0)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	r = &d->ranks[rank];
	if (r->used && r->pid != pid && !r->conflict) {
		r->conflict = 1;
		d->stale = 1;
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "rank %d is claimed by pids %ld and %ld: not compared", rank, r->pid, pid);
	}
	if (!r->used)
		r->pid = pid;
	r->used = 1;
	return MATE_OK;
}

static uint64_t
text_key(const char *a, const char *b)
{
	uint64_t h = mate_fnv1a(a, strlen(a), MATE_FNV1A64_BASIS, MATE_FNV1A64_PRIME);

	h = mate_fnv1a("\x1f", 1, h, MATE_FNV1A64_PRIME);
	return b != NULL ? mate_fnv1a(b, strlen(b), h, MATE_FNV1A64_PRIME) : h;
}

/* The id of a function (made when new), or -1 out of memory. */
static long
fn_id(mate_desync *d, const char *name)
{
	int found;
	uint64_t *v = mate_map_put(&d->fn_map, text_key(name, NULL), &found);
	struct fn *f;

	if (v == NULL)
		return -1;
	if (found && strcmp(d->fns[*v].name, name) == 0)
		return (long)*v;
	if (d->nfns >= FNS_MAX)
		return -2;
	if (mate_array_grow(&d->fns, d->nfns, &d->cap_fns, sizeof(*d->fns), 16) != 0)
		return -1;
	f = &d->fns[d->nfns];
	f->name = strdup(name);
	f->callers = calloc(d->words > 0 ? d->words : 1, sizeof(uint64_t));
	f->group = -1;
	if (f->name == NULL || f->callers == NULL) {
		free(f->name), free(f->callers);
		return -1;
	}
	if (!found)   /* a colliding name keeps an id of its own, not found again: never equal */
		*v = d->nfns;
	return (long)d->nfns++;
}

static long
sig_id(mate_desync *d, uint32_t fn, const char *name, const char *args)
{
	int found;
	uint64_t *v = mate_map_put(&d->sig_map, text_key(name, args), &found);
	struct sig *s;

	if (v == NULL)
		return -1;
	if (found && d->sigs[*v].fn == fn && strcmp(d->sigs[*v].args, args) == 0)
		return (long)*v;
	if (d->nsigs >= SIGS_MAX || d->sig_bytes + strlen(args) + 1 > SIG_BYTES_MAX)
		return -2;
	d->sig_bytes += strlen(args) + 1;
	if (mate_array_grow(&d->sigs, d->nsigs, &d->cap_sigs, sizeof(*d->sigs), 64) != 0)
		return -1;
	s = &d->sigs[d->nsigs];
	s->fn = fn;
	if ((s->args = strdup(args)) == NULL)
		return -1;
	if (!found)
		*v = d->nsigs;
	return (long)d->nsigs++;
}

int
mate_desync_call(mate_desync *d, int rank, double t, const char *function, const char *args,
    mate_error *err)
{
	struct rank *r;
	long f, s = 0;
	int rc;

	if ((rc = mate_desync_rank(d, rank, rank < d->nranks && d->ranks[rank].used ?
	    d->ranks[rank].pid : 0, err)) != MATE_OK)
		return rc;
	r = &d->ranks[rank];
	if ((f = fn_id(d, function)) < 0 || (s = sig_id(d, (uint32_t)f, function,
	    args != NULL ? args : "")) < 0) {
		if (f == -2 || s == -2)
			return mate_set_error(err, MATE_ERR_LIMIT, "over %d functions or %u distinct "
			    "calls: rank %d's call of %.64s not compared", FNS_MAX, SIGS_MAX, rank,
			    function);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	if (r->made > 0) {
		r->gaps[r->ngaps % GAPS] = t - r->last;
		r->ngaps++;
	}
	r->made++;
	r->last = t;
	if (!(d->fns[f].callers[rank / 64] & (1ull << (rank % 64)))) {
		d->fns[f].callers[rank / 64] |= 1ull << (rank % 64);
		d->stale = 1;
	}
	if (r->n >= CALLS_MAX)
		return MATE_OK;
	if (mate_array_grow(&r->calls, r->n, &r->cap, sizeof(*r->calls), 256) != 0)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	r->calls[r->n++] = (uint32_t)s;
	return MATE_OK;
}

void
mate_desync_end(mate_desync *d, int rank)
{
	if (rank >= 0 && rank < d->nranks)
		d->ranks[rank].ended = 1;
}

void
mate_desync_end_cut(mate_desync *d, int rank)
{
	if (rank >= 0 && rank < d->nranks)
		d->ranks[rank].ended = d->ranks[rank].cut = 1;
}

/* Groups: the distinct caller sets of two ranks or more (conflicting ranks left out). */
static int
rebuild(mate_desync *d)
{
	size_t bytes = d->words * sizeof(uint64_t);

	free_groups(d);
	d->stale = 0;
	for (size_t i = 0; i < d->nfns; i++) {
		struct fn *f = &d->fns[i];
		int n = 0, g;
		for (int r = 0; r < d->nranks; r++)
			if (d->ranks[r].conflict)
				f->callers[r / 64] &= ~(1ull << (r % 64));
		for (size_t w = 0; w < d->words; w++)
			n += __builtin_popcountll(f->callers[w]);
		f->group = -1;
		if (n < 2)
			continue;   /* a group of one: that rank's own calls */
		for (g = 0; g < d->ngroups; g++)
			if (memcmp(d->groups[g].bits, f->callers, bytes) == 0)
				break;
		if (g == d->ngroups) {
			struct group *ng = realloc(d->groups, (size_t)(g + 1) * sizeof(*ng)), *gr;
			if (ng == NULL)
				return -1;
			d->groups = ng;
			gr = &ng[g];
			memset(gr, 0, sizeof(*gr));
			d->ngroups++;
			gr->bits = malloc(bytes);
			gr->members = malloc((size_t)n * sizeof(int));
			gr->cursor = calloc((size_t)n, sizeof(size_t));
			if (gr->bits == NULL || gr->members == NULL || gr->cursor == NULL)
				return -1;
			memcpy(gr->bits, f->callers, bytes);
			for (int r = 0; r < d->nranks; r++)
				if (f->callers[r / 64] & (1ull << (r % 64)))
					gr->members[gr->nmembers++] = r;
		}
		f->group = g;
	}
	return 0;
}

/* The index of member m's next call in group g from its cursor, or -1. */
static long
peek(const mate_desync *d, int g, int m)
{
	const struct rank *r = &d->ranks[d->groups[g].members[m]];

	for (size_t i = d->groups[g].cursor[m]; i < r->n; i++)
		if (d->fns[d->sigs[r->calls[i]].fn].group == g)
			return (long)i;
	return -1;
}

/* "0-2,4-7": the ranks whose flag is set. */
static void
rank_list(const int *ranks, int n, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && o < cap; i++) {
		int j = i;
		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		o += (size_t)snprintf(buf + o, cap - o, "%s%d", o > 0 ? "," : "", ranks[i]);
		if (j > i && o < cap)
			o += (size_t)snprintf(buf + o, cap - o, "-%d", ranks[j]);
		i = j;
	}
}

/* "call 12 all_reduce(F32[4096])", or "calls 12-14 ..." */
static void
call_text(const mate_desync *d, uint32_t sig, uint64_t lo, uint64_t hi, char *buf, size_t cap)
{
	const struct sig *s = &d->sigs[sig];

	if (lo == hi)
		snprintf(buf, cap, "call %llu %s(%s)", (unsigned long long)lo, d->fns[s->fn].name,
		    s->args);
	else
		snprintf(buf, cap, "calls %llu-%llu %s(%s)", (unsigned long long)lo,
		    (unsigned long long)hi, d->fns[s->fn].name, s->args);
}

/* The next calls (at) of group g's members, where its present members disagree or (final)
 * some have ended short: fills v. @return 1 with a verdict, 2 for one given before (its
 * ranks named already), 0 when the members agree so far. */
static int
compare_at(mate_desync *d, int g, const long *at, int final, mate_desync_verdict *v)
{
	struct group *gr = &d->groups[g];
	int n = gr->nmembers, best = -1, bestn = 0, tie = 0, nodd = 0, nmaj = 0, present = 0;
	int cut = 0;   /* an odd rank is short by an end that may have lost its last calls */
	int *odd = malloc((size_t)n * sizeof(int)), *maj = malloc((size_t)n * sizeof(int));
	uint64_t lo = UINT64_MAX, hi = 0;
	char list[2][200];

	if (odd == NULL || maj == NULL) {
		free(odd), free(maj);
		return 0;
	}
	/* the call most members make here */
	for (int m = 0; m < n; m++) {
		int c = 0;
		uint32_t sm;
		if (at[m] < 0)
			continue;
		present++;
		sm = d->ranks[gr->members[m]].calls[at[m]];
		for (int k = 0; k < n; k++)
			c += at[k] >= 0 && d->ranks[gr->members[k]].calls[at[k]] == sm;
		if (c > bestn)
			bestn = c, best = m, tie = 0;
		else if (c == bestn && d->ranks[gr->members[best]].calls[at[best]] != sm)
			tie = 1;
	}
	memset(v, 0, sizeof(*v));
	if (present == 0 || (bestn == present && (!final || present == n))) {
		free(odd), free(maj);
		return 0;
	}
	for (int m = 0; m < n; m++) {
		int same = at[m] >= 0 &&
		    d->ranks[gr->members[m]].calls[at[m]] == d->ranks[gr->members[best]].calls[at[best]];
		if (same) {
			maj[nmaj++] = gr->members[m];
			lo = (uint64_t)at[m] + 1 < lo ? (uint64_t)at[m] + 1 : lo;
			hi = (uint64_t)at[m] + 1 > hi ? (uint64_t)at[m] + 1 : hi;
		} else if (at[m] >= 0 || final) {
			odd[nodd++] = gr->members[m];
			/* its end unsaid (no DISCONNECT: killed, or its last events lost) */
			cut |= at[m] < 0 && (d->ranks[gr->members[m]].cut ||
			    !d->ranks[gr->members[m]].ended);
		}
	}
	{
		int fresh = 0;   /* a rank not named yet (groups rebuilt meet old ones again) */
		for (int k = 0; k < nodd; k++)
			fresh |= !d->reported[odd[k]];
		if (!fresh) {
			free(odd), free(maj);
			return 2;
		}
	}
	rank_list(maj, nmaj, list[0], sizeof(list[0]));
	rank_list(odd, nodd, list[1], sizeof(list[1]));
	call_text(d, d->ranks[gr->members[best]].calls[at[best]], lo, hi, d->side[1],
	    sizeof(d->side[1]));
	v->kind = MATE_DESYNC_CALL;
	v->rank = odd[0];
	v->certain = !tie && nmaj > nodd && !cut;
	{
		int m0 = 0;
		while (gr->members[m0] != odd[0])
			m0++;
		if (at[m0] >= 0) {
			call_text(d, d->ranks[odd[0]].calls[at[m0]], (uint64_t)at[m0] + 1,
			    (uint64_t)at[m0] + 1, d->side[0], sizeof(d->side[0]));
			v->call = (uint64_t)at[m0] + 1;
		} else {
			if (nodd > 1)   /* "ranks 4-5 are at their end, rank 4's after call 1791" */
				snprintf(d->side[0], sizeof(d->side[0]), "their end, rank %d's after "
				    "call %llu", odd[0], (unsigned long long)d->ranks[odd[0]].n);
			else
				snprintf(d->side[0], sizeof(d->side[0]), "its end after call %llu",
				    (unsigned long long)d->ranks[odd[0]].n);
			v->kind = MATE_DESYNC_ENDED;
		}
	}
	v->others_call = lo;
	if (v->certain || (cut && !tie && nmaj > nodd))
		snprintf(d->text, sizeof(d->text), "rank%s %s %s at %s while rank%s %s %s at %s%s",
		    nodd > 1 ? "s" : "", list[1], nodd > 1 ? "are" : "is", d->side[0],
		    nmaj > 1 ? "s" : "", list[0], nmaj > 1 ? "are" : "is", d->side[1],
		    !cut ? "" : nodd > 1 ? " (not certain: their events stopped without their "
		    "DISCONNECT, and the last may be lost)" : " (not certain: its events stopped "
		    "without its DISCONNECT, and the last may be lost)");
	else
		snprintf(d->text, sizeof(d->text), "ranks %s and %s disagree (no majority to tell "
		    "which is out of step): %s against %s", list[0], list[1], d->side[1], d->side[0]);
	v->text = d->text;
	for (int k = 0; k < nodd; k++)
		d->reported[odd[k]] = 1;
	free(odd), free(maj);
	return 1;
}

/* Whether every member present at its next call makes the same one (the common case,
 * in one pass). */
static int
same(const mate_desync *d, int g, const long *at)
{
	const struct group *gr = &d->groups[g];
	long first = -1;

	for (int m = 0; m < gr->nmembers; m++) {
		uint32_t sm;
		if (at[m] < 0)
			continue;
		sm = d->ranks[gr->members[m]].calls[at[m]];
		if (first < 0)
			first = sm;
		else if ((uint32_t)first != sm)
			return 0;
	}
	return 1;
}

/* Walks group g from where it stopped. */
static int
walk(mate_desync *d, int g, int final, mate_desync_verdict *v)
{
	struct group *gr = &d->groups[g];
	long *at = malloc((size_t)gr->nmembers * sizeof(long));
	int found = 0, rc;

	if (at == NULL || gr->done) {
		free(at);
		return 0;
	}
	for (;;) {
		int all = 1, any = 0;
		for (int m = 0; m < gr->nmembers; m++) {
			at[m] = peek(d, g, m);
			all &= at[m] >= 0;
			any |= at[m] >= 0;
		}
		if (!any)
			break;
		if ((rc = same(d, g, at) ? 0 : compare_at(d, g, at, final && !all, v)) != 0 ||
		    (all == 0 && final && (rc = compare_at(d, g, at, 1, v)) != 0)) {
			gr->done = 1;
			found = rc == 1;
			break;
		}
		if (!all)
			break;   /* a member has not got there yet */
		for (int m = 0; m < gr->nmembers; m++)
			gr->cursor[m] = (size_t)at[m] + 1;
		gr->pos++;
	}
	free(at);
	return found;
}

/* Calls of rank r that its groups compare (a group of one's left out). */
static size_t
compared(const mate_desync *d, int r)
{
	const struct rank *x = &d->ranks[r];
	size_t n = 0;

	for (size_t i = 0; i < x->n; i++)
		n += d->fns[d->sigs[x->calls[i]].fn].group >= 0;
	return n;
}

/* A rank that made no call for longer than 10 times the others' median gap (and
 * STALL_MIN s), while most of the others went past it: made calls meanwhile and more compared
 * calls than it (a rank that is ahead, waiting for the others, is not stalled). */
static int
stalled(mate_desync *d, double now, mate_desync_verdict *v)
{
	for (int r = 0; r < d->nranks; r++) {
		struct rank *me = &d->ranks[r];
		double gaps[GAPS * 64], idle, med;
		int ng = 0, others = 0, went_on = 0;
		size_t mine;
		if (!me->used || me->ended || me->conflict || me->made == 0 || d->reported[r] ||
		    (idle = now - me->last) < STALL_MIN)
			continue;
		mine = compared(d, r);
		for (int o = 0; o < d->nranks; o++) {
			struct rank *x = &d->ranks[o];
			if (o == r || !x->used || x->conflict || x->made == 0)
				continue;
			others++;
			went_on += x->last > me->last + idle / 2 && compared(d, o) > mine;
			for (int k = 0; k < x->ngaps && k < GAPS && ng < GAPS * 64; k++)
				gaps[ng++] = x->gaps[k];
		}
		if (others == 0 || ng == 0 || 2 * went_on <= others)
			continue;
		qsort(gaps, (size_t)ng, sizeof(double), mate_cmp_double);
		med = gaps[ng / 2];
		if (idle < 10 * med)
			continue;
		memset(v, 0, sizeof(*v));
		v->kind = MATE_DESYNC_STALL;
		v->rank = r;
		v->call = me->made;
		v->certain = 1;
		v->idle = idle;
		v->median_gap = med;
		snprintf(d->text, sizeof(d->text), "rank %d made no call for %.1f s after its call %llu "
		    "(the other ranks' median gap: %.3g s)", r, idle, (unsigned long long)me->made, med);
		v->text = d->text;
		d->reported[r] = 1;
		return 1;
	}
	return 0;
}

int
mate_desync_check(mate_desync *d, double now, int final, mate_desync_verdict *v)
{
	if (!final && d->world > 0) {
		/* while the job starts, the ranks that called first are not yet the group */
		int calling = 0;
		for (int r = 0; r < d->nranks; r++)
			calling += d->ranks[r].made > 0 && !d->ranks[r].conflict;
		if (calling < d->world)
			return 0;
	}
	if (d->stale && rebuild(d) != 0)
		return MATE_ERR_NOMEM;
	for (int g = 0; g < d->ngroups; g++)
		if (walk(d, g, final, v))
			return 1;
	if (!final && now > 0 && stalled(d, now, v))
		return 1;
	return 0;
}

/* A detail's value as a number in [0, max]: @return it, or -1. */
static long
detail_num(const char *details, const char *key, long max)
{
	char buf[24], *end;
	long v;

	if (mate_ilog_detail(details, key, buf, sizeof(buf)) <= 0)
		return -1;
	v = strtol(buf, &end, 10);
	return *end == '\0' && buf[0] >= '0' && buf[0] <= '9' && v <= max ? v : -1;
}

int
mate_desync_event(mate_desync *d, const mate_event *ev, long pid, int rank, mate_error *err)
{
	char args[MATE_ILOG_LINE_MAX < 4096 ? MATE_ILOG_LINE_MAX : 4096];
	uint64_t *v;
	int rc;

	if (pid < 0)
		pid = detail_num(ev->details, "pid", INT32_MAX);
	/* the rank comes with CONNECT, or later with RANK (from ncclCommInitRank) */
	if (strcmp(ev->event, "CONNECT") == 0 || strcmp(ev->event, "RANK") == 0) {
		long w = detail_num(ev->details, "world", RANKS_MAX);
		if (w > d->world)
			d->world = (int)w;
		if (rank < 0)
			rank = (int)detail_num(ev->details, "rank", RANKS_MAX - 1);
	}
	if (rank < 0 && pid >= 0 && (v = mate_map_get(&d->pid_rank, (uint64_t)pid)) != NULL)
		rank = (int)*v - 1;
	if (rank < 0) {
		if (strcmp(ev->event, "RECV") == 0)
			d->unranked++;
		return MATE_OK;
	}
	if (pid >= 0 && mate_map_get(&d->pid_rank, (uint64_t)pid) == NULL) {
		int found;
		if ((v = mate_map_put(&d->pid_rank, (uint64_t)pid, &found)) == NULL)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		*v = (uint64_t)rank + 1;
		if ((rc = mate_desync_rank(d, rank, pid, err)) != MATE_OK)
			return rc;
	}
	if (strcmp(ev->event, "DISCONNECT") == 0)
		mate_desync_end(d, rank);
	if (strcmp(ev->event, "RECV") != 0 || detail_num(ev->details, "depth", 1 << 30) != 0)
		return MATE_OK;
	if (mate_ilog_detail(ev->details, "args", args, sizeof(args)) < 0)
		args[0] = '\0';
	return mate_desync_call(d, rank, ev->time, ev->command, args, err);
}

uint64_t
mate_desync_unranked(const mate_desync *d)
{
	return d->unranked;
}
