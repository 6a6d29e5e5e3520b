/* alloc_replay.c: replays a memory event trace against an allocator (malloc, a size-class pool, CUDA), RMM REPLAY_BENCH style, thread by logged thread. */
#include "alloc_replay_private.h"
#include "util_map.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NO_SLOT SIZE_MAX

/* The trace checked and indexed: each event's allocation slot and stream. */
struct plan {
	const struct mate_memlog_event *ev;
	size_t n;
	size_t *slot;           /* per event: its allocation's slot, NO_SLOT for failures */
	uint32_t *stream;       /* per event: index into streams */
	uint64_t *slot_size;    /* per slot */
	size_t nslots;
	uint64_t *streams;
	size_t nstreams;
	size_t nthreads;
	uint64_t touch_cur;     /* what a host allocator touches for the live allocations */
	int64_t touch_line;     /* the row that takes it past mate_memory_cap(), or 0 */
};

/* The bytes malloc writes for an allocation it never has to touch: its
 * block header, which starts a page of its own in a big block, or all of
 * a small one. The replay itself touches nothing it allocates. */
static uint64_t
host_touch(uint64_t size)
{
	return size < 4096 ? ((size + 15) & ~(uint64_t)15) + 16 : 4096;
}

/* ---- checking ------------------------------------------------------------------------------------ */

static void
plan_free(struct plan *pl)
{
	free(pl->slot);
	free(pl->stream);
	free(pl->slot_size);
	free(pl->streams);
	memset(pl, 0, sizeof(*pl));
}

static int
nomem(mate_error *err)
{
	return mate_set_error(err, MATE_ERR_NOMEM, "allocation replay: out of memory");
}

/* The stream index of event e, adding the stream on first sight. */
static int
stream_of(struct plan *pl, struct mate_map *sm, uint64_t s, uint32_t *out)
{
	int found;
	uint64_t *v = mate_map_put(sm, s, &found);

	if (v == NULL)
		return -1;
	if (!found) {
		uint64_t *n = realloc(pl->streams, (pl->nstreams + 1) * sizeof(*n));
		if (n == NULL)
			return -1;
		pl->streams = n;
		pl->streams[pl->nstreams] = s;
		*v = pl->nstreams++;
	}
	*out = (uint32_t)*v;
	return 0;
}

static int
fail_row(struct mate_alloc_replay_result *res, mate_error *err, const struct mate_memlog_event *e,
    const char *what)
{
	res->failed_line = e->line;
	return mate_set_error(err, MATE_ERR_FORMAT, "line %lld: %s of 0x%" PRIx64 " (%" PRIu64
	    " bytes), %s", (long long)e->line, e->action == MATE_MEMLOG_ALLOCATE ? "allocate" :
	    "deallocate", e->ptr, e->size, what);
}

/* One event of the check; live maps pointers to slot + 1, and a freed one to 0
 * (kept, so that a second free is told from one never allocated). */
static int
check_event(struct plan *pl, struct mate_map *live, size_t i, uint64_t *cur,
    struct mate_alloc_replay_result *res, mate_error *err)
{
	const struct mate_memlog_event *e = &pl->ev[i];
	int found;
	uint64_t *v;

	if (e->action == MATE_MEMLOG_FAILURE) {
		pl->slot[i] = NO_SLOT;
		res->skipped++;
		return MATE_OK;
	}
	if ((v = mate_map_put(live, e->ptr, &found)) == NULL)
		return nomem(err);
	if (e->action == MATE_MEMLOG_ALLOCATE) {
		if (found && *v != 0)
			return fail_row(res, err, e, "which is already allocated (no free in between)");
		*v = pl->nslots + 1;
		pl->slot[i] = pl->nslots;
		pl->slot_size[pl->nslots++] = e->size;
		pl->touch_cur += host_touch(e->size);
		if (pl->touch_line == 0 && pl->touch_cur > mate_memory_cap()) {
			pl->touch_line = e->line;
		}
		*cur += e->size;
		if (*cur > res->peak_bytes)
			res->peak_bytes = *cur;
		return MATE_OK;
	}
	if (!found || *v == 0) {
		if (!found)
			*v = 0;
		return fail_row(res, err, e, found ? "which was already freed" :
		    "which the log never allocated");
	}
	pl->slot[i] = *v - 1;
	if (pl->slot_size[*v - 1] != e->size)
		res->size_mismatches++;
	*cur -= pl->slot_size[*v - 1];
	pl->touch_cur -= host_touch(pl->slot_size[*v - 1]);
	*v = 0;
	return MATE_OK;
}

static int
make_plan(const mate_memlog_trace *t, struct plan *pl, struct mate_alloc_replay_result *res,
    mate_error *err)
{
	struct mate_map live = { 0 }, sm = { 0 };
	uint64_t cur = 0, key, v;
	int rc = MATE_OK;

	memset(pl, 0, sizeof(*pl));
	memset(res, 0, sizeof(*res));
	pl->ev = mate_memlog_trace_events(t, &pl->n);
	pl->nthreads = mate_memlog_trace_threads(t);
	pl->slot = malloc((pl->n ? pl->n : 1) * sizeof(*pl->slot));
	pl->stream = malloc((pl->n ? pl->n : 1) * sizeof(*pl->stream));
	pl->slot_size = malloc((pl->n ? pl->n : 1) * sizeof(*pl->slot_size));
	if (pl->slot == NULL || pl->stream == NULL || pl->slot_size == NULL)
		rc = nomem(err);
	for (size_t i = 0; rc == MATE_OK && i < pl->n; i++) {
		if (stream_of(pl, &sm, pl->ev[i].stream, &pl->stream[i]) != 0)
			rc = nomem(err);
		else
			rc = check_event(pl, &live, i, &cur, res, err);
	}
	for (size_t pos = 0; rc == MATE_OK && mate_map_next(&live, &pos, &key, &v);)
		if (v != 0) {
			res->leaked_count++;
			res->leaked_bytes += pl->slot_size[v - 1];
		}
	res->events = pl->n - res->skipped;
	mate_map_free(&live);
	mate_map_free(&sm);
	if (rc != MATE_OK)
		plan_free(pl);
	return rc;
}

int
mate_alloc_replay_check(const mate_memlog_trace *t, struct mate_alloc_replay_result *res,
    mate_error *err)
{
	struct plan pl;
	int rc = make_plan(t, &pl, res, err);

	if (rc == MATE_OK)
		plan_free(&pl);
	return rc;
}

/* ---- malloc and pool: the host allocators -------------------------------------------------------- */

#define POOL_CLASSES 256
#define POOL_MIN 256

/* The host allocators' state: what they took from malloc, and the pool's
 * cached blocks by size class (empty for malloc). */
struct host_state {
	struct mate_alloc_usage use;
	struct { void **v; size_t n, cap; } cls[POOL_CLASSES];
};

static int
host_available(mate_error *err)
{
	(void)err;
	return MATE_OK;
}

static void *
host_create(const uint64_t *streams, size_t nstreams, mate_error *err)
{
	struct host_state *h = calloc(1, sizeof(*h));

	(void)streams;
	(void)nstreams;
	if (h == NULL)
		nomem(err);
	return h;
}

static int
host_finish(void *st, mate_error *err)
{
	(void)st;
	(void)err;
	return MATE_OK;
}

static uint64_t
host_peak(void *st)
{
	return ((struct host_state *)st)->use.peak;
}

static void
host_destroy(void *st)
{
	struct host_state *h = st;

	for (unsigned c = 0; c < POOL_CLASSES; c++) {
		for (size_t i = 0; i < h->cls[c].n; i++)
			free(h->cls[c].v[i]);
		free(h->cls[c].v);
	}
	free(h);
}

/* ---- malloc -------------------------------------------------------------------------------------- */

static int
malloc_alloc(void *st, uint64_t size, size_t stream, void **out)
{
	struct host_state *h = st;

	(void)stream;
	if (size > SIZE_MAX - 64 || (*out = malloc(size ? (size_t)size : 1)) == NULL)
		return -1;
	mate_alloc_usage_take(&h->use, malloc_usable_size(*out));
	return 0;
}

static void
malloc_release(void *st, void *p, uint64_t size, size_t stream)
{
	struct host_state *h = st;

	(void)size;
	(void)stream;
	h->use.cur -= malloc_usable_size(p);
	free(p);
}

static const struct mate_allocator allocator_malloc = {
	.name = "malloc",
	.available = host_available,
	.create = host_create,
	.alloc = malloc_alloc,
	.release = malloc_release,
	.finish = host_finish,
	.peak_footprint = host_peak,
	.destroy = host_destroy,
};

/* ---- pool: size classes over malloc, blocks cached and reused, never returned ------------------ */

/* Rounds size up to its class: 256 B, then four steps per power of two. */
static unsigned
pool_class(uint64_t size, uint64_t *rounded)
{
	unsigned k;
	uint64_t step;

	if (size <= POOL_MIN) {
		*rounded = POOL_MIN;
		return 0;
	}
	k = 63 - (unsigned)__builtin_clzll(size - 1);    /* 2^k < size <= 2^(k+1) */
	step = UINT64_C(1) << (k - 2);
	*rounded = (size + step - 1) / step * step;
	return (k - 7) * 4 + (unsigned)((*rounded >> (k - 2)) - 4);
}

static int
pool_alloc(void *st, uint64_t size, size_t stream, void **out)
{
	struct host_state *p = st;
	uint64_t rounded;
	unsigned c = pool_class(size > (UINT64_C(1) << 60) ? 0 : size, &rounded);

	(void)stream;
	if (size > (UINT64_C(1) << 60))
		return -1;
	if (p->cls[c].n > 0) {
		*out = p->cls[c].v[--p->cls[c].n];
		return 0;
	}
	if (rounded > SIZE_MAX / 2 || (*out = malloc((size_t)rounded)) == NULL)
		return -1;
	mate_alloc_usage_take(&p->use, rounded);
	return 0;
}

static void
pool_release(void *st, void *ptr, uint64_t size, size_t stream)
{
	struct host_state *p = st;
	uint64_t rounded;
	unsigned c = pool_class(size, &rounded);

	(void)stream;
	if (mate_array_grow(&p->cls[c].v, p->cls[c].n, &p->cls[c].cap, sizeof(void *), 16) != 0) {
		p->use.cur -= rounded;   /* cannot cache it: give it back */
		free(ptr);
		return;
	}
	p->cls[c].v[p->cls[c].n++] = ptr;
}

static const struct mate_allocator allocator_pool = {
	.name = "pool",
	.available = host_available,
	.create = host_create,
	.alloc = pool_alloc,
	.release = pool_release,
	.finish = host_finish,
	.peak_footprint = host_peak,
	.destroy = host_destroy,
};

/* ---- the registry ---------------------------------------------------------------------------------- */

static const struct mate_allocator *const allocators[] = {
	&allocator_malloc,
	&allocator_pool,
};
#define NALLOCATORS (sizeof(allocators) / sizeof(allocators[0]))
static const char *const all_names[] = { "malloc", "pool", "cuda", "cuda-async" };

const char *
mate_alloc_replay_allocator(size_t i)
{
	return i < sizeof(all_names) / sizeof(all_names[0]) ? all_names[i] : NULL;
}

static const struct mate_allocator *
find_allocator(const char *name, mate_error *err)
{
	for (size_t i = 0; i < NALLOCATORS; i++)
		if (strcmp(allocators[i]->name, name) == 0)
			return allocators[i];
	for (size_t i = 0; i < sizeof(all_names) / sizeof(all_names[0]); i++)
		if (strcmp(all_names[i], name) == 0) {
#ifdef HAVE_CUDA
			return mate_alloc_replay_cuda(name, err);  /* the CUDA module's */
#else
			mate_set_error(err, MATE_ERR_UNSUPPORTED,
			    "allocator %s: this libmate was built without CUDA", name);
			return NULL;
#endif
		}
	mate_set_error(err, MATE_ERR_ARGUMENT,
	    "unknown allocator '%s' (known: malloc, pool, cuda, cuda-async)", name);
	return NULL;
}

int
mate_alloc_replay_available(const char *name, mate_error *err)
{
	const struct mate_allocator *a = find_allocator(name, err);

	if (a == NULL)
		return err != NULL ? err->code : MATE_ERR_ARGUMENT;
	return a->available(err);
}

/* ---- running --------------------------------------------------------------------------------------- */

struct run {
	const struct plan *pl;
	const struct mate_allocator *a;
	void *st;
	void **ptrs;                 /* per slot: the replay's pointer */
	size_t **own;                /* per thread: its event indices */
	size_t *nown;
	pthread_mutex_t lock;
	pthread_cond_t *cv;          /* per thread */
	int *sleeping;               /* per thread: blocked on its cv */
	size_t next;                 /* the event whose turn it is (atomic) */
	int failed;                  /* (atomic) */
	int64_t failed_line;
	uint64_t failed_size;
};

/* Runs event i; -1 when the allocator failed. */
static int
run_event(struct run *r, size_t i)
{
	const struct plan *pl = r->pl;
	const struct mate_memlog_event *e = &pl->ev[i];
	size_t s = pl->slot[i];

	if (s == NO_SLOT)
		return 0;
	if (e->action == MATE_MEMLOG_ALLOCATE) {
		if (r->a->alloc(r->st, pl->slot_size[s], pl->stream[i], &r->ptrs[s]) != 0) {
			r->ptrs[s] = NULL;
			r->failed_line = e->line;
			r->failed_size = pl->slot_size[s];
			return -1;
		}
		return 0;
	}
	r->a->release(r->st, r->ptrs[s], pl->slot_size[s], pl->stream[i]);
	r->ptrs[s] = NULL;
	return 0;
}

struct worker {
	struct run *r;
	size_t t;
};

#define SPINS 200       /* busy polls, then ... */
#define YIELDS 64       /* ... yields, then sleep */

static void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static int
failed(struct run *r)
{
	return __atomic_load_n(&r->failed, __ATOMIC_SEQ_CST);
}

/* Waits until event i is next: polls, yields a few times, then sleeps. The
 * sleeping flag and `next` are both seq_cst, so that either the waiter
 * sees the new `next` or the thread passing the turn sees the flag. */
static void
wait_turn(struct run *r, size_t t, size_t i)
{
	for (int spin = 0; __atomic_load_n(&r->next, __ATOMIC_SEQ_CST) != i && !failed(r); spin++) {
		if (spin < SPINS) {
			cpu_relax();
			continue;
		}
		if (spin < SPINS + YIELDS) {
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&r->lock);
		__atomic_store_n(&r->sleeping[t], 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&r->next, __ATOMIC_SEQ_CST) != i && !failed(r))
			pthread_cond_wait(&r->cv[t], &r->lock);
		__atomic_store_n(&r->sleeping[t], 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&r->lock);
	}
}

/* Event i is done: the turn goes to event i + 1's thread. */
static void
pass_turn(struct run *r, size_t i)
{
	size_t u;

	__atomic_store_n(&r->next, i + 1, __ATOMIC_SEQ_CST);
	if (i + 1 >= r->pl->n)
		return;
	u = r->pl->ev[i + 1].thread;
	if (__atomic_load_n(&r->sleeping[u], __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&r->lock);
		pthread_cond_signal(&r->cv[u]);
		pthread_mutex_unlock(&r->lock);
	}
}

static void
stop_all(struct run *r)
{
	__atomic_store_n(&r->failed, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&r->lock);
	for (size_t t = 0; t < r->pl->nthreads; t++)
		pthread_cond_signal(&r->cv[t]);
	pthread_mutex_unlock(&r->lock);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;

	for (size_t j = 0; j < r->nown[w->t]; j++) {
		size_t i = r->own[w->t][j];

		wait_turn(r, w->t, i);
		if (failed(r))
			break;
		if (run_event(r, i) != 0) {
			stop_all(r);
			break;
		}
		pass_turn(r, i);
	}
	return NULL;
}

/* Splits the events by thread. */
static int
assign(struct run *r)
{
	const struct plan *pl = r->pl;
	size_t *fill;

	r->own = calloc(pl->nthreads, sizeof(*r->own));
	r->nown = calloc(pl->nthreads, sizeof(*r->nown));
	r->cv = calloc(pl->nthreads, sizeof(*r->cv));
	r->sleeping = calloc(pl->nthreads, sizeof(*r->sleeping));
	if (r->own == NULL || r->nown == NULL || r->cv == NULL || r->sleeping == NULL)
		return -1;
	for (size_t i = 0; i < pl->n; i++)
		r->nown[pl->ev[i].thread]++;
	for (size_t t = 0; t < pl->nthreads; t++)
		if ((r->own[t] = malloc((r->nown[t] ? r->nown[t] : 1) * sizeof(size_t))) == NULL)
			return -1;
	if ((fill = calloc(pl->nthreads, sizeof(*fill))) == NULL)
		return -1;
	for (size_t i = 0; i < pl->n; i++)
		r->own[pl->ev[i].thread][fill[pl->ev[i].thread]++] = i;
	free(fill);
	return 0;
}

static void
run_free(struct run *r)
{
	for (size_t t = 0; r->own != NULL && t < r->pl->nthreads; t++)
		free(r->own[t]);
	free(r->own);
	free(r->nown);
	free(r->cv);
	free(r->sleeping);
	free(r->ptrs);
}

/* The threaded replay: one thread per logged thread, in the logged order. */
static int
run_threads(struct run *r, mate_error *err)
{
	size_t nt = r->pl->nthreads, started = 0;
	pthread_t *tid = calloc(nt, sizeof(*tid));
	struct worker *w = calloc(nt, sizeof(*w));
	int rc = MATE_OK;

	if (tid == NULL || w == NULL || assign(r) != 0) {
		free(tid);
		free(w);
		return nomem(err);
	}
	pthread_mutex_init(&r->lock, NULL);
	for (size_t t = 0; t < nt; t++)
		pthread_cond_init(&r->cv[t], NULL);
	for (; started < nt; started++) {
		w[started].r = r;
		w[started].t = started;
		if (pthread_create(&tid[started], NULL, worker_main, &w[started]) != 0) {
			stop_all(r);
			rc = mate_set_error(err, MATE_ERR_NOMEM, "allocation replay: cannot start "
			    "thread %zu of %zu", started + 1, nt);
			break;
		}
	}
	for (size_t t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	for (size_t t = 0; t < nt; t++)
		pthread_cond_destroy(&r->cv[t]);
	pthread_mutex_destroy(&r->lock);
	free(tid);
	free(w);
	return rc;
}

/* Replays the plan on a (created) allocator state, then frees the leaks. */
static int
replay_plan(struct run *r, struct mate_alloc_replay_result *res, mate_error *err)
{
	const struct plan *pl = r->pl;
	double t0 = mate_mono_seconds();
	int rc = MATE_OK;

	if (pl->nthreads <= 1) {
		for (size_t i = 0; i < pl->n && !r->failed; i++)
			if (run_event(r, i) != 0)
				r->failed = 1;
	} else {
		rc = run_threads(r, err);
	}
	if (rc == MATE_OK && !r->failed)
		rc = r->a->finish(r->st, err);
	res->seconds = mate_mono_seconds() - t0;
	for (size_t s = 0; s < pl->nslots; s++)
		if (r->ptrs[s] != NULL)
			r->a->release(r->st, r->ptrs[s], pl->slot_size[s], 0);
	res->peak_footprint = r->a->peak_footprint(r->st);
	if (rc == MATE_OK && r->failed) {
		res->failed_line = r->failed_line;
		rc = mate_set_error(err, MATE_ERR_NOMEM, "line %lld: allocate of %" PRIu64
		    " bytes failed with allocator %s", (long long)r->failed_line, r->failed_size,
		    r->a->name);
	}
	return rc;
}

int
mate_alloc_replay(const mate_memlog_trace *t, const char *allocator,
    struct mate_alloc_replay_result *res, mate_error *err)
{
	const struct mate_allocator *a;
	struct plan pl;
	struct run r;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((a = find_allocator(allocator, err)) == NULL)
		return err != NULL ? err->code : MATE_ERR_ARGUMENT;
	if ((rc = a->available(err)) != MATE_OK)
		return rc;
	if ((rc = make_plan(t, &pl, res, err)) != MATE_OK)
		return rc;
	if ((a == &allocator_malloc || a == &allocator_pool) && pl.touch_line != 0) {
		/* a log of many big live blocks: malloc's headers alone, a page
		 * each, would take the host's memory */
		res->failed_line = pl.touch_line;
		rc = mate_set_error(err, MATE_ERR_LIMIT, "line %lld: the live allocations would make "
		    "allocator %s touch more than the memory limit of %" PRIu64 " MiB (a page for "
		    "each big block; --max-memory or MATE_MAX_MEMORY raises it)",
		    (long long)pl.touch_line, a->name, mate_memory_cap() >> 20);
		plan_free(&pl);
		return rc;
	}
	memset(&r, 0, sizeof(r));
	r.pl = &pl;
	r.a = a;
	if ((r.ptrs = calloc(pl.nslots ? pl.nslots : 1, sizeof(*r.ptrs))) == NULL) {
		plan_free(&pl);
		return nomem(err);
	}
	if ((r.st = a->create(pl.streams, pl.nstreams, err)) == NULL) {
		run_free(&r);
		plan_free(&pl);
		return err != NULL && err->code != MATE_OK ? err->code : MATE_ERR_NOMEM;
	}
	rc = replay_plan(&r, res, err);
	a->destroy(r.st);
	run_free(&r);
	plan_free(&pl);
	return rc;
}
