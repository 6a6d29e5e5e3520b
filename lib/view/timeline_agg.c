/* timeline_agg.c: bounded aggregation of a timeline while it streams: per-column sums on a self-widening grid, and thinned lists of bars, markers and flows. */
#include "mate_private.h"
#include "timeline_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GRID_MIN_W 1e-7      /* seconds: the first bins' width */
#define GRID_MAX_BINS (1 << 16)

/* ---- The grid ------------------------------------------------------------------- */

static int
grid_init(mate_timeline *tl, double t)
{
	int cols = tl->o.columns > 0 ? tl->o.columns : 4096, n = 1024;

	if (cols > GRID_MAX_BINS / 2)
		cols = GRID_MAX_BINS / 2;
	if (tl->o.has_from && tl->o.has_to) {
		tl->nbins = 2 * cols;
		tl->origin = tl->o.from;
		tl->w = (tl->o.to - tl->o.from) / tl->nbins;
		tl->grid_fixed = 1;
	} else {
		while (n < 2 * cols)
			n *= 2;
		tl->nbins = n;
		tl->origin = tl->o.has_from ? tl->o.from : t;
		tl->w = GRID_MIN_W;
	}
	tl->grid_set = 1;
	return 0;
}

/* Halves the resolution: pairs of bins merge, the range doubles to the
 * left (left != 0) or to the right. */
static void
merge_f(float *v, int n, int left, int is_max)
{
	int h = n / 2, i, off = left ? h : 0;
	float *tmp = v;

	if (v == NULL)
		return;
	if (left) {
		for (i = h - 1; i >= 0; i--) {
			float a = tmp[2 * i], b = tmp[2 * i + 1];
			v[off + i] = is_max ? (a > b ? a : b) : a + b;
		}
		for (i = 0; i < h; i++)
			v[i] = is_max ? -1.0f : 0.0f;
	} else {
		for (i = 0; i < h; i++) {
			float a = tmp[2 * i], b = tmp[2 * i + 1];
			v[i] = is_max ? (a > b ? a : b) : a + b;
		}
		for (i = h; i < n; i++)
			v[i] = is_max ? -1.0f : 0.0f;
	}
}

static void
merge_u(uint32_t *v, int n, int left)
{
	int h = n / 2, i;

	if (v == NULL)
		return;
	if (left) {
		for (i = h - 1; i >= 0; i--) {
			uint64_t s = (uint64_t)v[2 * i] + v[2 * i + 1];
			v[h + i] = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
		}
		memset(v, 0, (size_t)h * sizeof(*v));
	} else {
		for (i = 0; i < h; i++) {
			uint64_t s = (uint64_t)v[2 * i] + v[2 * i + 1];
			v[i] = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
		}
		memset(v + h, 0, (size_t)h * sizeof(*v));
	}
}

static void
grid_widen(mate_timeline *tl, int left)
{
	int i, j;

	for (i = 0; i < tl->nlanes; i++) {
		struct tl_lane *L = tl->lanes[i];
		for (j = 0; j < L->nob; j++)
			merge_f(L->ob[j].busy, tl->nbins, left, 0);
		merge_u(L->count, tl->nbins, left);
		merge_f(L->mem, tl->nbins, left, 1);
	}
	if (left)
		tl->origin -= tl->nbins * tl->w;
	tl->w *= 2;
}

/* Makes t fall inside the grid. @return 0, or -1 when it cannot (a fixed
 * grid and t outside). */
static int
grid_cover(mate_timeline *tl, double t)
{
	int guard = 0;

	if (!tl->grid_set)
		grid_init(tl, t);
	if (tl->grid_fixed)
		return t >= tl->origin && t <= tl->origin + tl->nbins * tl->w ? 0 : -1;
	while (t < tl->origin && guard++ < 128)
		grid_widen(tl, 1);
	while (t >= tl->origin + tl->nbins * tl->w && guard++ < 128)
		grid_widen(tl, 0);
	return guard < 128 ? 0 : -1;
}

static int
bin_of(const mate_timeline *tl, double t)
{
	double x = (t - tl->origin) / tl->w;
	int i = x < 0 ? 0 : (x >= tl->nbins ? tl->nbins - 1 : (int)x);

	return i;
}

/* An array of nbins, or NULL when the budget is spent. */
static void *
bins_alloc(mate_timeline *tl, size_t elem)
{
	size_t bytes = (size_t)tl->nbins * elem;

	if (tl->bin_bytes + bytes > TL_BIN_BUDGET)
		return NULL;
	tl->bin_bytes += bytes;
	return calloc((size_t)tl->nbins, elem);
}

static float *
lane_op_bins(mate_timeline *tl, struct tl_lane *L, int op)
{
	struct tl_opbins *ob;
	int i;

	for (i = 0; i < L->nob; i++)
		if (L->ob[i].op == op)
			return L->ob[i].busy;
	if ((ob = realloc(L->ob, (size_t)(L->nob + 1) * sizeof(*ob))) == NULL)
		return NULL;
	L->ob = ob;
	ob[L->nob].op = op;
	if ((ob[L->nob].busy = bins_alloc(tl, sizeof(float))) == NULL)
		return L->nob > 0 ? L->ob[0].busy : NULL;  /* over budget: share */
	return ob[L->nob++].busy;
}

static void
count_at(mate_timeline *tl, struct tl_lane *L, double t)
{
	int i;

	if (L->count == NULL && (L->count = bins_alloc(tl, sizeof(uint32_t))) == NULL)
		return;
	i = bin_of(tl, t);
	if (L->count[i] < UINT32_MAX)
		L->count[i]++;
}

/* ---- Bars ------------------------------------------------------------------------- */

static void
bars_prune(mate_timeline *tl)
{
	size_t i, n;

	if (tl->bar_min < tl->w)
		tl->bar_min = tl->w;
	for (;;) {
		for (i = n = 0; i < tl->nbars; i++)
			if (tl->bars[i].e - tl->bars[i].s >= tl->bar_min ||
			    (tl->bars[i].failed && n < TL_BAR_CAP / 4))
				tl->bars[n++] = tl->bars[i];
		tl->nbars = n;
		if (n <= TL_BAR_CAP / 2)
			break;
		tl->bar_min *= 2;
	}
	tl->bars_pruned = 1;
}

static int
bar_add(mate_timeline *tl, struct tl_lane *L, int op, double s, double e, int depth,
    int flags, uint64_t seq)
{
	struct tl_bar *b;

	if (e - s < tl->bar_min && !(flags & 2))   /* failures stay visible */
		return 0;
	if (tl->nbars == tl->capbars) {
		if (tl->capbars == TL_BAR_CAP) {
			bars_prune(tl);
			if (e - s < tl->bar_min && !(flags & 2))
				return 0;
		} else if (mate_array_grow(&tl->bars, tl->nbars, &tl->capbars, sizeof(*b), 1024) != 0) {
			return -1;
		}
	}
	b = &tl->bars[tl->nbars++];
	b->s = s;
	b->e = e;
	b->lane = L->index;
	b->op = (int16_t)op;
	b->depth = (uint8_t)(depth > 255 ? 255 : depth);
	b->is_call = (uint8_t)(flags & 1);
	b->failed = (uint8_t)((flags & 2) != 0);
	b->seq = seq;
	return 0;
}

int
tl_agg_span(mate_timeline *tl, struct tl_lane *L, int op, double s, double e,
    int depth, int flags, uint64_t seq)
{
	if (grid_cover(tl, s) != 0 || grid_cover(tl, e) != 0) {
		if (!tl->grid_fixed)
			return 0;
		s = s < tl->origin ? tl->origin : s;
		e = e > tl->origin + tl->nbins * tl->w ? tl->origin + tl->nbins * tl->w : e;
	}
	count_at(tl, L, s);
	if (depth == 0) {
		float *v = lane_op_bins(tl, L, op);
		int i0 = bin_of(tl, s), i1 = bin_of(tl, e), i;
		if (v != NULL && i0 == i1) {
			v[i0] += (float)(e - s > 1e-9 ? e - s : 1e-9);
		} else if (v != NULL) {
			v[i0] += (float)(tl->origin + (i0 + 1) * tl->w - s);
			for (i = i0 + 1; i < i1; i++)
				v[i] += (float)tl->w;
			v[i1] += (float)(e - (tl->origin + i1 * tl->w));
		}
	}
	return bar_add(tl, L, op, s, e, depth, flags, seq);
}

/* ---- Markers ---------------------------------------------------------------------- */

/* Keeps m unless the lane already has a marker of its type in m's cell
 * (then the one with more bytes stays). */
static void
mark_keep(mate_timeline *tl, struct tl_lane *L, const struct tl_mark *m, size_t *n)
{
	int64_t cell = tl->mark_cell > 0 ? (int64_t)floor(m->t / tl->mark_cell) : -1;
	int64_t last = L->mk_last[m->type];

	if (tl->mark_cell > 0 && last >= 0 && (size_t)last < *n && L->mk_cell[m->type] == cell) {
		if (m->bytes > tl->marks[last].bytes)
			tl->marks[last] = *m;
		return;
	}
	tl->marks[*n] = *m;
	L->mk_last[m->type] = (int64_t)*n;
	L->mk_cell[m->type] = cell;
	(*n)++;
}

static void
marks_prune(mate_timeline *tl)
{
	size_t i, n;
	int j, k;

	do {
		tl->mark_cell = tl->mark_cell > 0 ? tl->mark_cell * 2 : tl->w;
		for (j = 0; j < tl->nlanes; j++)
			for (k = 0; k < TL_MARK_TYPES; k++)
				tl->lanes[j]->mk_last[k] = -1;
		for (i = n = 0; i < tl->nmarks; i++) {
			struct tl_mark m = tl->marks[i];
			mark_keep(tl, tl->lanes[m.lane], &m, &n);
		}
		tl->nmarks = n;
	} while (tl->nmarks > TL_MARK_CAP / 2);
}

int
tl_agg_mark(mate_timeline *tl, struct tl_lane *L, int type, int op, double t,
    int64_t bytes, uint64_t seq)
{
	struct tl_mark m;

	if (grid_cover(tl, t) != 0)
		return 0;
	count_at(tl, L, t);
	if (tl->nmarks == tl->capmarks) {
		if (tl->capmarks == TL_MARK_CAP) {
			marks_prune(tl);
		} else if (mate_array_grow(&tl->marks, tl->nmarks, &tl->capmarks,
		    sizeof(*tl->marks), 1024) != 0) {
			return -1;
		}
	}
	m.t = t;
	m.lane = L->index;
	m.op = (int16_t)op;
	m.type = (uint8_t)type;
	m.bytes = bytes;
	m.seq = seq;
	mark_keep(tl, L, &m, &tl->nmarks);
	return 0;
}

/* ---- Flows -------------------------------------------------------------------------- */

static void
flow_keep(mate_timeline *tl, const struct tl_flow *f, size_t *n)
{
	struct tl_lane *L = tl->lanes[f->lane1];
	int64_t cell = tl->flow_cell > 0 ? (int64_t)floor(f->t1 / tl->flow_cell) : -1;

	if (tl->flow_cell > 0 && L->fl_last >= 0 && (size_t)L->fl_last < *n && L->fl_cell == cell)
		return;
	tl->flows[*n] = *f;
	L->fl_last = (int64_t)*n;
	L->fl_cell = cell;
	(*n)++;
}

int
tl_agg_flow(mate_timeline *tl, int lane0, double t0, int lane1, double t1)
{
	struct tl_flow f = { t0, t1, lane0, lane1 };
	size_t i, n;
	int j;

	if (tl->nflows == tl->capflows) {
		if (tl->capflows == TL_FLOW_CAP) {
			do {
				tl->flow_cell = tl->flow_cell > 0 ? tl->flow_cell * 2 : tl->w;
				for (j = 0; j < tl->nlanes; j++)
					tl->lanes[j]->fl_last = -1;
				for (i = n = 0; i < tl->nflows; i++) {
					struct tl_flow g = tl->flows[i];
					flow_keep(tl, &g, &n);
				}
				tl->nflows = n;
			} while (tl->nflows > TL_FLOW_CAP / 2);
		} else if (mate_array_grow(&tl->flows, tl->nflows, &tl->capflows,
		    sizeof(*tl->flows), 256) != 0) {
			return -1;
		}
	}
	flow_keep(tl, &f, &tl->nflows);
	return 0;
}

/* ---- Memory ----------------------------------------------------------------------- */

int
tl_agg_memory(mate_timeline *tl, struct tl_lane *L, double t, double value)
{
	int i;

	if (value > L->mem_peak)
		L->mem_peak = value;
	L->mem_last = value;
	L->has_mem = 1;
	if (grid_cover(tl, t) != 0)
		return 0;
	if (L->mem == NULL) {
		if ((L->mem = bins_alloc(tl, sizeof(float))) == NULL)
			return 0;
		for (i = 0; i < tl->nbins; i++)
			L->mem[i] = -1.0f;
	}
	i = bin_of(tl, t);
	if ((float)value > L->mem[i])
		L->mem[i] = (float)value;
	count_at(tl, L, t);
	return 0;
}

void
tl_agg_free_lane(struct tl_lane *L)
{
	int i;

	for (i = 0; i < L->nob; i++)
		free(L->ob[i].busy);
	free(L->ob);
	free(L->count);
	free(L->mem);
}

/* ---- Reading the grid back ------------------------------------------------------- */

/* Calls f(k, weight) for each bin k overlapping [a, b), weight = overlap/w. */
#define FOR_BINS(tl, a, b, BODY) do { \
	double x0_ = ((a) - (tl)->origin) / (tl)->w, x1_ = ((b) - (tl)->origin) / (tl)->w; \
	int k_; \
	if (x0_ < 0) x0_ = 0; \
	if (x1_ > (tl)->nbins) x1_ = (tl)->nbins; \
	for (k_ = (int)x0_; k_ < x1_ && k_ < (tl)->nbins; k_++) { \
		double lo_ = k_ > x0_ ? k_ : x0_, hi_ = k_ + 1 < x1_ ? k_ + 1 : x1_; \
		double wt_ = hi_ - lo_; \
		if (wt_ <= 0) continue; \
		BODY; \
	} \
} while (0)

/* The weighted sum over [a, b) of the bins of f (floats) or else u (counts). */
static double
bins_sum(const mate_timeline *tl, const float *f, const uint32_t *u, double a, double b)
{
	double s = 0;

	if ((f == NULL && u == NULL) || !tl->grid_set)
		return 0;
	FOR_BINS(tl, a, b, s += (f != NULL ? (double)f[k_] : (double)u[k_]) * wt_);
	return s;
}

double
tl_bins_sum(const mate_timeline *tl, const float *v, double a, double b)
{
	return bins_sum(tl, v, NULL, a, b);
}

double
tl_counts_sum(const mate_timeline *tl, const uint32_t *v, double a, double b)
{
	return bins_sum(tl, NULL, v, a, b);
}

float
tl_mem_max(const mate_timeline *tl, const float *v, double a, double b)
{
	float m = -1.0f;

	if (v == NULL || !tl->grid_set)
		return m;
	FOR_BINS(tl, a, b, if (v[k_] > m) m = v[k_]);
	return m;
}
