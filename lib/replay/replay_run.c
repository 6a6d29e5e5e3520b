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

struct runner {
	mate_replay *r;
	const struct mate_dump_info *const *dumps;
	size_t ndumps;
	struct unit *units;
	size_t nunits, next;
	size_t *order;
	struct mate_replay_result **results;
	pthread_mutex_t lock;
	pthread_cond_t done;
};

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

static void *
worker(void *arg)
{
	struct runner *ru = arg;

	for (;;) {
		struct unit *u;

		pthread_mutex_lock(&ru->lock);
		u = ru->next < ru->nunits ? &ru->units[ru->next++] : NULL;
		pthread_mutex_unlock(&ru->lock);
		if (u == NULL)
			return NULL;
		for (size_t k = 0; k < u->n; k++) {
			size_t i = ru->order[u->start + k];
			struct mate_replay_result *res = malloc(sizeof(*res));

			if (res != NULL)
				mate_replay_dump(ru->r, ru->dumps[i]->path, res);
			pthread_mutex_lock(&ru->lock);
			ru->results[i] = res != NULL ? res : (struct mate_replay_result *)-1;
			pthread_cond_broadcast(&ru->done);
			pthread_mutex_unlock(&ru->lock);
		}
	}
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

/* Waits for each result in order and reports it. */
static void
report_in_order(struct runner *ru, mate_replay_report_fn report, void *ctx)
{
	for (size_t i = 0; i < ru->ndumps; i++) {
		struct mate_replay_result *res;

		pthread_mutex_lock(&ru->lock);
		while ((res = ru->results[i]) == NULL)
			pthread_cond_wait(&ru->done, &ru->lock);
		pthread_mutex_unlock(&ru->lock);
		if (res == (struct mate_replay_result *)-1) {
			report_nomem(i, ru->dumps[i], report, ctx);
		} else {
			report(i, ru->dumps[i], res, ctx);
			free(res);
		}
	}
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
	ru.results = calloc(n, sizeof(*ru.results));
	th = calloc((size_t)jobs, sizeof(*th));
	if (ru.results == NULL || th == NULL || make_units(&ru) != MATE_OK) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_init(&ru.lock, NULL);
	pthread_cond_init(&ru.done, NULL);
	for (; started < jobs && (size_t)started < ru.nunits; started++)
		if ((errno = pthread_create(&th[started], NULL, worker, &ru)) != 0)
			break;
	if (started == 0) {
		rc = mate_set_errno(err, errno, "cannot start replay threads", NULL);
	} else {
		report_in_order(&ru, report, ctx);
		for (int t = 0; t < started; t++)
			pthread_join(th[t], NULL);
	}
	pthread_cond_destroy(&ru.done);
	pthread_mutex_destroy(&ru.lock);
out:
	free(th);
	free(ru.results);
	free(ru.units);
	free(ru.order);
	return rc;
}
