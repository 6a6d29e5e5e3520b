/* replay_run.c: replaying many dumps on worker threads, calls on one object kept in order, results reported in order. */
#include "mate_private.h"
#include "dump_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A unit of work: one dump, or every dump on one object (same process and
 * self_id) in order. Its members are order[start..start+n); head is its
 * first dump's index. */
struct unit {
	size_t head, start, n;
};

/* Each thread reports what is ready in order when it finishes a dump, so no
 * thread waits on another: the one that holds report_lock reports results[]
 * from `reported` on while they are there; a result stored while the lock
 * is held is seen by the holder's second look after it lets go. */
struct runner {
	mate_replay *r;
	const struct mate_dump_info *const *dumps;
	size_t ndumps;
	struct unit *units;
	size_t nunits, next;        /* next: atomic */
	size_t *order;
	struct mate_replay_result **results;  /* atomic; NOMEM_RESULT if no memory */
	size_t reported;            /* written under report_lock, read atomically */
	mate_replay_report_fn report;
	void *ctx;
	pthread_mutex_t report_lock;
};

#define NOMEM_RESULT ((struct mate_replay_result *)-1)

static const struct mate_dump_info *const *sort_dumps;  /* for qsort, single-threaded */

static int
same_object(const struct mate_dump_info *a, const struct mate_dump_info *b)
{
	return a->process_id == b->process_id && strcmp(a->self_id, b->self_id) == 0;
}

static int
cmp_object(const void *pa, const void *pb)
{
	size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
	const struct mate_dump_info *a = sort_dumps[ia], *b = sort_dumps[ib];
	int c;

	if (a->process_id != b->process_id)
		return a->process_id < b->process_id ? -1 : 1;
	if ((c = strcmp(a->self_id, b->self_id)) != 0)
		return c;
	return ia < ib ? -1 : ia > ib;
}

static int
cmp_unit(const void *pa, const void *pb)
{
	const struct unit *a = pa, *b = pb;

	return a->head < b->head ? -1 : a->head > b->head;
}

/* Groups the dumps into units ordered by their first dump. */
static int
make_units(struct runner *ru)
{
	size_t n = ru->ndumps, o = 0, nobj;

	ru->order = malloc((n ? n : 1) * sizeof(size_t));
	ru->units = malloc((n ? n : 1) * sizeof(struct unit));
	if (ru->order == NULL || ru->units == NULL)
		return MATE_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		if (ru->dumps[i]->self_id == NULL) {
			ru->units[ru->nunits++] = (struct unit){ i, o, 1 };
			ru->order[o++] = i;
		}
	nobj = n - o;
	for (size_t i = 0, k = o; i < n; i++)
		if (ru->dumps[i]->self_id != NULL)
			ru->order[k++] = i;
	sort_dumps = ru->dumps;
	qsort(ru->order + o, nobj, sizeof(size_t), cmp_object);
	for (size_t i = o, j; i < n; i = j) {
		for (j = i + 1; j < n && same_object(ru->dumps[ru->order[i]], ru->dumps[ru->order[j]]); j++)
			;
		ru->units[ru->nunits++] = (struct unit){ ru->order[i], i, j - i };
	}
	qsort(ru->units, ru->nunits, sizeof(struct unit), cmp_unit);
	return MATE_OK;
}

static void
report_nomem(size_t i, const struct mate_dump_info *d, mate_replay_report_fn report, void *ctx)
{
	struct mate_replay_result res;

	memset(&res, 0, sizeof(res));
	res.verdict = MATE_REPLAY_ERROR;
	res.first_bad = res.first_nan = res.first_inf = -1;
	strcpy(res.message, "out of memory");
	report(i, d, &res, ctx);
}

static struct mate_replay_result *
ready(struct runner *ru)
{
	size_t i = __atomic_load_n(&ru->reported, __ATOMIC_SEQ_CST);

	return i < ru->ndumps ? __atomic_load_n(&ru->results[i], __ATOMIC_SEQ_CST) : NULL;
}

/* Reports the results that are ready, in order, unless another thread is at it. */
static void
report_ready(struct runner *ru)
{
	struct mate_replay_result *res;

	while (ready(ru) != NULL) {
		/* the fences: a result stored before a failed trylock is seen by
		 * the holder's look after its unlock (store, then load, each side) */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (pthread_mutex_trylock(&ru->report_lock) != 0)
			return;
		while ((res = ready(ru)) != NULL) {
			size_t i = ru->reported;

			if (res == NOMEM_RESULT) {
				report_nomem(i, ru->dumps[i], ru->report, ru->ctx);
			} else {
				ru->report(i, ru->dumps[i], res, ru->ctx);
				free(res);
			}
			__atomic_store_n(&ru->reported, i + 1, __ATOMIC_SEQ_CST);
		}
		pthread_mutex_unlock(&ru->report_lock);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
}

static void *
worker(void *arg)
{
	struct runner *ru = arg;
	size_t k;

	while ((k = __atomic_fetch_add(&ru->next, 1, __ATOMIC_RELAXED)) < ru->nunits) {
		const struct unit *u = &ru->units[k];

		for (size_t j = 0; j < u->n; j++) {
			size_t i = ru->order[u->start + j];
			struct mate_replay_result *res = malloc(sizeof(*res));

			if (res != NULL)
				mate_replay_dump(ru->r, ru->dumps[i]->path, res);
			__atomic_store_n(&ru->results[i], res != NULL ? res : NOMEM_RESULT,
			    __ATOMIC_SEQ_CST);
			report_ready(ru);
		}
	}
	return NULL;
}

int
mate_replay_run(mate_replay *r, const struct mate_dump_info *const *dumps, size_t n,
    int jobs, mate_replay_report_fn report, void *ctx, mate_error *err)
{
	struct runner ru;
	pthread_t *th;
	int started = 0, rc = MATE_OK;

	if (jobs <= 1 || n <= 1) {
		struct mate_replay_result res;

		for (size_t i = 0; i < n; i++) {
			mate_replay_dump(r, dumps[i]->path, &res);
			report(i, dumps[i], &res, ctx);
		}
		return MATE_OK;
	}
	memset(&ru, 0, sizeof(ru));
	ru.r = r;
	ru.dumps = dumps;
	ru.ndumps = n;
	ru.report = report;
	ru.ctx = ctx;
	ru.results = calloc(n, sizeof(*ru.results));
	th = calloc((size_t)jobs, sizeof(*th));
	if (ru.results == NULL || th == NULL || make_units(&ru) != MATE_OK) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_init(&ru.report_lock, NULL);
	/* this thread is one of the jobs */
	for (; started < jobs - 1 && (size_t)started + 1 < ru.nunits; started++)
		if ((errno = pthread_create(&th[started], NULL, worker, &ru)) != 0)
			break;
	worker(&ru);
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	report_ready(&ru);  /* every result is in: reports any a race left */
	pthread_mutex_destroy(&ru.report_lock);
out:
	free(th);
	free(ru.results);
	free(ru.units);
	free(ru.order);
	return rc;
}
