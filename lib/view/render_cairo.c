/* render_cairo.c: draws a timeline as PNG, SVG or PDF through cairo: lanes, bars by op, coverage shading, markers, flows, signals, axis, legend. */
#include "mate_private.h"
#include "timeline_private.h"

#include <cairo.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FONT "DejaVu Sans"
#define MAX_PIXELS (50.0 * 1000 * 1000)
#define MAX_SIDE 32767
#define MAX_ARROWS 400
#define MAX_SIGNALS_DRAWN 200

struct rtext {               /* text drawn, for the SVG's text layer */
	double x, y, size;
	int bold;
	char *s;
};

struct render {
	cairo_t *cr;
	mate_timeline *tl;
	const mate_render_options *o;
	double W, H;             /* page, points */
	double px;               /* one pixel, points */
	double f;                /* font scale */
	double x0, x1, y0, y1;   /* plot area */
	double v0, v1;           /* times at x0 and x1 */
	int ncols;
	int order[TL_MAX_LANES + 4];
	int nl;
	double lx0, ly0, lx1, ly1; /* legend box */
	int flows_hidden;        /* too many arrows to draw */
	int svg;
	int bold;                /* the font chosen last */
	struct rtext *texts;
	size_t ntexts, captexts;
	/* output */
	int fd;
	int werr;
	char hold[16];           /* SVG: the tail held back for the text layer */
	size_t nhold;
};

/* ---- Output ------------------------------------------------------------------ */

static cairo_status_t
write_fd(void *closure, const unsigned char *data, unsigned int len)
{
	struct render *R = closure;
	int rc;

	if (R->werr != 0)
		return CAIRO_STATUS_WRITE_ERROR;
	if (R->svg) {   /* hold back the last bytes: "</svg>\n" goes after the text layer */
		size_t keep = sizeof(R->hold), total = R->nhold + len, out;
		if (total <= keep) {
			memcpy(R->hold + R->nhold, data, len);
			R->nhold = total;
			return CAIRO_STATUS_SUCCESS;
		}
		out = total - keep;
		if (out >= R->nhold) {
			if ((rc = mate_write_all(R->fd, R->hold, R->nhold)) == 0)
				rc = mate_write_all(R->fd, data, out - R->nhold);
			memcpy(R->hold, data + (out - R->nhold), keep);
		} else {
			char tmp[sizeof(R->hold) * 2];
			memcpy(tmp, R->hold, R->nhold);
			memcpy(tmp + R->nhold, data, len);
			rc = mate_write_all(R->fd, tmp, out);
			memcpy(R->hold, tmp + out, keep);
		}
		R->nhold = keep;
	} else {
		rc = mate_write_all(R->fd, data, len);
	}
	if (rc != 0) {
		R->werr = -rc;
		return CAIRO_STATUS_WRITE_ERROR;
	}
	return CAIRO_STATUS_SUCCESS;
}

static void
out_str(struct render *R, const char *s)
{
	int rc;

	if (R->werr == 0 && (rc = mate_write_all(R->fd, s, strlen(s))) != 0)
		R->werr = -rc;
}

static void
out_xml(struct render *R, const char *s)
{
	char buf[512];
	size_t n = 0;

	for (; *s != '\0'; s++) {
		const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" :
		    *s == '"' ? "&quot;" : NULL;
		if (n + 8 >= sizeof(buf)) {
			buf[n] = '\0';
			out_str(R, buf);
			n = 0;
		}
		if (e != NULL) {
			memcpy(buf + n, e, strlen(e));
			n += strlen(e);
		} else {
			buf[n++] = *s;
		}
	}
	buf[n] = '\0';
	out_str(R, buf);
}

/* The SVG's text layer: the words drawn, invisible, so they can be found. */
static void
svg_text_layer(struct render *R)
{
	char *end = NULL, tmp[160];
	size_t i;

	if (R->nhold > 0) {
		R->hold[R->nhold < sizeof(R->hold) ? R->nhold : sizeof(R->hold) - 1] = '\0';
	}
	for (i = 0; i + 6 <= R->nhold; i++)
		if (memcmp(R->hold + i, "</svg>", 6) == 0)
			end = R->hold + i;
	if (end == NULL) {   /* not what cairo writes: pass it through */
		if (R->werr == 0 && mate_write_all(R->fd, R->hold, R->nhold) != 0)
			R->werr = EIO;
		return;
	}
	if (R->werr == 0 && mate_write_all(R->fd, R->hold, (size_t)(end - R->hold)) != 0)
		R->werr = EIO;
	out_str(R, "<g id=\"mate-text\" fill-opacity=\"0\" font-family=\"DejaVu Sans, sans-serif\">\n");
	for (i = 0; i < R->ntexts; i++) {
		snprintf(tmp, sizeof(tmp), "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.2f\"%s>",
		    R->texts[i].x, R->texts[i].y, R->texts[i].size,
		    R->texts[i].bold ? " font-weight=\"bold\"" : "");
		out_str(R, tmp);
		out_xml(R, R->texts[i].s);
		out_str(R, "</text>\n");
	}
	out_str(R, "</g>\n");
	out_str(R, end);
}

/* ---- Text ------------------------------------------------------------------------ */

/* Copies s as valid UTF-8 (bad bytes become '?'), at most cap-1 bytes. */
static void
utf8_clean(char *dst, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	while (*p != '\0' && o + 5 < cap) {
		int n = 1, i;
		if (*p >= 0x80) {
			n = (*p >= 0xC2 && *p <= 0xDF) ? 2 : (*p >= 0xE0 && *p <= 0xEF) ? 3 :
			    (*p >= 0xF0 && *p <= 0xF4) ? 4 : 0;
			for (i = 1; i < n; i++)
				if ((p[i] & 0xC0) != 0x80)
					n = 0;
		} else if (*p < 0x20) {
			n = 0;
		}
		if (n == 0) {
			dst[o++] = '?';
			p++;
			continue;
		}
		memcpy(dst + o, p, (size_t)n);
		o += (size_t)n;
		p += n;
	}
	dst[o] = '\0';
}

static void
font(struct render *R, double size, int bold)
{
	cairo_select_font_face(R->cr, FONT, CAIRO_FONT_SLANT_NORMAL,
	    bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(R->cr, size * R->f);
	R->bold = bold;
}

static double
text_w(struct render *R, const char *s)
{
	cairo_text_extents_t te;

	cairo_text_extents(R->cr, s, &te);
	return te.x_advance;
}

/* Shortens s (clean UTF-8, in place) with an ellipsis to fit maxw. */
static void
ellipsize(struct render *R, char *s, double maxw)
{
	size_t n = strlen(s);

	if (text_w(R, s) <= maxw)
		return;
	while (n > 0) {
		do
			n--;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80);
		memcpy(s + n, "\xe2\x80\xa6", 4);
		if (text_w(R, s) <= maxw)
			return;
	}
}

/* Draws s with its anchor at x (align: 0 left, 0.5 centre, 1 right) and
 * its baseline at y; records it for the SVG text layer. */
static double
text(struct render *R, double x, double y, double align, const char *s, double maxw)
{
	char buf[512];
	double w;

	utf8_clean(buf, sizeof(buf), s);
	if (maxw > 0)
		ellipsize(R, buf, maxw);
	w = text_w(R, buf);
	cairo_move_to(R->cr, x - align * w, y);
	cairo_show_text(R->cr, buf);
	cairo_new_path(R->cr);
	if (R->svg && R->ntexts < 100000) {
		if (mate_array_grow(&R->texts, R->ntexts, &R->captexts, sizeof(*R->texts), 256) != 0)
			return w;
		R->texts[R->ntexts].x = x - align * w;
		R->texts[R->ntexts].y = y;
		{
			cairo_matrix_t m;
			cairo_get_font_matrix(R->cr, &m);
			R->texts[R->ntexts].size = m.xx;
		}
		R->texts[R->ntexts].bold = R->bold;
		if ((R->texts[R->ntexts].s = strdup(buf)) != NULL)
			R->ntexts++;
	}
	return w;
}

static void
rgb(struct render *R, uint32_t c, double a)
{
	cairo_set_source_rgba(R->cr, ((c >> 16) & 255) / 255.0, ((c >> 8) & 255) / 255.0,
	    (c & 255) / 255.0, a);
}

static uint32_t
darker(uint32_t c, double k)
{
	return (uint32_t)(((c >> 16) & 255) * k) << 16 | (uint32_t)(((c >> 8) & 255) * k) << 8 |
	    (uint32_t)((c & 255) * k);
}

static int
is_dark(uint32_t c)
{
	double l = 0.299 * ((c >> 16) & 255) + 0.587 * ((c >> 8) & 255) + 0.114 * (c & 255);
	return l < 150;
}

/* ---- Geometry ------------------------------------------------------------------ */

static double
X(const struct render *R, double t)
{
	return R->x0 + (t - R->v0) / (R->v1 - R->v0) * (R->x1 - R->x0);
}

static double
snap(const struct render *R, double v)
{
	return floor(v / R->px + 0.5) * R->px;
}

static double
lane_weight(const struct tl_lane *L)
{
	return L->kind == MATE_LANE_MEMORY ? 0.6 : 1.0;
}

/* The band of a lane where bars go, and the height of one depth row. */
static void
band(const struct tl_lane *L, double *top, double *h, double *row)
{
	int rows = L->maxdepth + 1 > 6 ? 6 : L->maxdepth + 1;

	*h = (L->y1 - L->y0) * 0.72;
	*top = L->y0 + (L->y1 - L->y0) * 0.14;
	*row = *h / rows;
}

static void
view_range(struct render *R)
{
	mate_timeline_stats st;
	double span, pad;

	mate_timeline_get_stats(R->tl, &st);
	if (st.t1 < st.t0) {
		st.t0 = 0;
		st.t1 = 1;
	}
	R->v0 = st.t0;
	R->v1 = st.t1;
	if (R->tl->o.has_from && R->tl->o.has_to)
		return;
	span = st.t1 - st.t0;
	pad = span > 0 ? span * 0.01 : 0.001;
	if (!R->tl->o.has_from)
		R->v0 -= pad;
	if (!R->tl->o.has_to)
		R->v1 += pad;
	if (R->v0 < 0 && st.t0 >= 0)
		R->v0 = 0;   /* no negative times */
}

static double
label_column(struct render *R)
{
	double w = 0;
	int i;

	font(R, 9, 0);
	for (i = 0; i < R->nl; i++) {
		char buf[300], lab[300];
		const struct tl_lane *L = R->tl->lanes[R->order[i]];
		if (R->tl->nlogs > 1)
			snprintf(lab, sizeof(lab), "%s: %s", tl_log_name(R->tl, L->log), L->label);
		else
			snprintf(lab, sizeof(lab), "%s", L->label);
		utf8_clean(buf, sizeof(buf), lab);
		if (text_w(R, buf) > w)
			w = text_w(R, buf);
	}
	w += 12 * R->f;
	if (w > R->W * 0.22)
		w = R->W * 0.22;
	return w < 40 * R->f ? 40 * R->f : w;
}

static void
layout(struct render *R)
{
	double outer = 16 * R->f, legend_w = 150 * R->f, util_w = 70 * R->f;
	double total = 0, lh, y;
	int i;

	R->nl = tl_lane_order(R->tl, R->order);
	R->x0 = snap(R, outer + label_column(R));
	R->x1 = snap(R, R->W - outer - legend_w - util_w);
	if (R->x1 - R->x0 < 40 * R->px)
		R->x1 = R->x0 + 40 * R->px;
	R->y0 = snap(R, outer + (R->tl->nhosts > 0 ? 58 : 46) * R->f);  /* the hosts' line */
	R->y1 = snap(R, R->H - outer - 36 * R->f);
	if (R->y1 - R->y0 < 20 * R->px)
		R->y1 = R->y0 + 20 * R->px;
	R->ncols = (int)floor((R->x1 - R->x0) / R->px + 0.5);
	if (R->ncols < 1)
		R->ncols = 1;
	R->lx0 = R->x1 + util_w;
	R->lx1 = R->W - outer;
	for (i = 0; i < R->nl; i++)
		total += lane_weight(R->tl->lanes[R->order[i]]);
	lh = total > 0 ? (R->y1 - R->y0) / total : 0;
	if (lh > 160 * R->f) {   /* few lanes: keep them a sensible height */
		lh = 160 * R->f;
		R->y1 = snap(R, R->y0 + lh * total);
	}
	for (i = 0, y = R->y0; i < R->nl; i++) {
		struct tl_lane *L = R->tl->lanes[R->order[i]];
		L->y0 = y;
		y += lh * lane_weight(L);
		L->y1 = y;
	}
	view_range(R);
}

/* ---- Lanes: background, coverage, bars -------------------------------------------- */

static void
draw_backgrounds(struct render *R)
{
	int i;

	for (i = 0; i < R->nl; i++) {
		const struct tl_lane *L = R->tl->lanes[R->order[i]];
		rgb(R, i % 2 ? 0xeceff3 : 0xf6f7f9, 1);
		cairo_rectangle(R->cr, R->x0, L->y0, R->x1 - R->x0, L->y1 - L->y0);
		cairo_fill(R->cr);
		if (i > 0 && L->kind != R->tl->lanes[R->order[i - 1]]->kind) {
			rgb(R, 0x95a5a6, 1);   /* between kinds of lanes */
			cairo_set_line_width(R->cr, 0.8 * R->f);
			cairo_move_to(R->cr, R->x0 - 6 * R->f, L->y0);
			cairo_line_to(R->cr, R->x1, L->y0);
			cairo_stroke(R->cr);
		}
	}
}

/* Where spans are too narrow to draw one by one, a lane shows what it did
 * per pixel column as a stack of op shares on a white "idle" band: an op's
 * height is the share of the column's time it ran (ops in palette order,
 * from the bottom), and what is left white is idle. On a dense lane the
 * shares are averaged over a few columns, so that the band reads as an
 * area rather than as noise. */
#define COVER_OPS 64

/* Each op's share of column c's time, for every column; smoothed over
 * +-r columns. @return the number of ops (rows of v), or -1. */
static int
coverage_shares(struct render *R, const struct tl_lane *L, float *v, int *ops, int r)
{
	double dt = (R->v1 - R->v0) / R->ncols;
	float *tmp;
	int n = L->nob < COVER_OPS ? L->nob : COVER_OPS, j, k, c;

	for (j = 0; j < n; j++)   /* insertion sort by op index: palette order */
		for (ops[j] = j, k = j; k > 0 && L->ob[ops[k]].op < L->ob[ops[k - 1]].op; k--) {
			int t = ops[k];
			ops[k] = ops[k - 1], ops[k - 1] = t;
		}
	for (c = 0; c < R->ncols; c++) {
		double a = R->v0 + c * dt, total = 0;
		for (j = 0; j < n; j++)
			total += v[(size_t)j * R->ncols + c] =
			    (float)(tl_bins_sum(R->tl, L->ob[ops[j]].busy, a, a + dt) / dt);
		for (j = 0; total > 1 && j < n; j++)   /* overlapping spans */
			v[(size_t)j * R->ncols + c] /= (float)total;
	}
	if (r <= 0 || (tmp = malloc((size_t)R->ncols * sizeof(*tmp))) == NULL)
		return n;
	for (j = 0; j < n; j++) {   /* a running box average */
		float *row = v + (size_t)j * R->ncols;
		double sum = 0;
		int lo = 0, hi = -1;
		for (c = 0; c < R->ncols; c++) {
			while (hi < c + r && hi + 1 < R->ncols)
				sum += row[++hi];
			while (lo < c - r)
				sum -= row[lo++];
			tmp[c] = (float)(sum / (hi - lo + 1));
		}
		memcpy(row, tmp, (size_t)R->ncols * sizeof(*tmp));
	}
	free(tmp);
	return n;
}

static void
draw_coverage(struct render *R, const struct tl_lane *L)
{
	double top, h, row, base;
	float *v, *cum;
	int ops[COVER_OPS], n, j, c, r = 0;

	band(L, &top, &h, &row);
	base = top + row;
	rgb(R, 0xffffff, 1);   /* idle */
	cairo_rectangle(R->cr, R->x0, top, R->x1 - R->x0, row);
	cairo_fill(R->cr);
	if (L->nob == 0)
		return;
	if (tl_counts_sum(R->tl, L->count, R->v0, R->v1) > R->ncols / 8.0)
		r = (int)floor(2.4 * R->f / R->px);   /* dense: a few columns */
	v = malloc((size_t)COVER_OPS * R->ncols * sizeof(*v));
	cum = calloc((size_t)R->ncols, sizeof(*cum));
	if (v == NULL || cum == NULL || (n = coverage_shares(R, L, v, ops, r)) < 0) {
		free(v);
		free(cum);
		return;
	}
	for (j = 0; j < n; j++) {   /* one area per op, on top of those before */
		const float *sh = v + (size_t)j * R->ncols;
		int any = 0;
		for (c = 0; c < R->ncols && !any; c++)
			any = sh[c] > 1e-4f;
		if (any) {
			cairo_new_path(R->cr);
			for (c = 0; c < R->ncols; c++) {
				double y = base - row * fmin(1, cum[c] + sh[c]);
				cairo_line_to(R->cr, R->x0 + c * R->px, y);
				cairo_line_to(R->cr, R->x0 + (c + 1) * R->px, y);
			}
			for (c = R->ncols; c-- > 0;) {
				double y = base - row * fmin(1, cum[c]);
				cairo_line_to(R->cr, R->x0 + (c + 1) * R->px, y);
				cairo_line_to(R->cr, R->x0 + c * R->px, y);
			}
			cairo_close_path(R->cr);
			rgb(R, R->tl->ops[L->ob[ops[j]].op].rgb, 1);
			cairo_fill(R->cr);
		}
		for (c = 0; c < R->ncols; c++)
			cum[c] += sh[c];
	}
	free(v);
	free(cum);
}

static void
draw_memory(struct render *R, const struct tl_lane *L)
{
	double dt = (R->v1 - R->v0) / R->ncols, top, h, row, last = -1, base;
	int c;

	band(L, &top, &h, &row);
	base = top + h;
	if (!(L->mem_peak > 0))
		return;
	cairo_new_path(R->cr);
	cairo_move_to(R->cr, R->x0, base);
	for (c = 0; c < R->ncols; c++) {
		float v = tl_mem_max(R->tl, L->mem, R->v0 + c * dt, R->v0 + (c + 1) * dt);
		double x = R->x0 + c * R->px;
		if (v >= 0)
			last = v;
		cairo_line_to(R->cr, x, last >= 0 ? base - h * last / L->mem_peak : base);
		cairo_line_to(R->cr, x + R->px, last >= 0 ? base - h * last / L->mem_peak : base);
	}
	cairo_line_to(R->cr, R->x1, base);
	cairo_close_path(R->cr);
	rgb(R, 0x8e44ad, 0.3);
	cairo_fill_preserve(R->cr);
	rgb(R, 0x6c3483, 0.9);
	cairo_set_line_width(R->cr, 0.8 * R->f);
	cairo_stroke(R->cr);
}

static void
bar_label(struct render *R, const struct tl_bar *b, double x, double w, double y, double h)
{
	const char *name = R->tl->ops[b->op].name;
	double fs = h * 0.62 / R->f;

	if (fs > 8)
		fs = 8;
	if (fs < 5.5 || w < 14 * R->f)
		return;
	font(R, fs, 1);
	if (text_w(R, name) + 6 * R->f > w)
		return;
	rgb(R, is_dark(R->tl->ops[b->op].rgb) ? 0xffffff : 0x1b2631, 1);
	text(R, x + w / 2, y + h / 2 + fs * R->f * 0.36, 0.5, name, 0);
}

/* A span that reported a failure: a red frame, at least 4 pixels wide. */
static void
failed_mark(struct render *R, double x, double y, double w, double h)
{
	double lw = 1.4 * R->f;

	if (w < 4 * R->px) {
		x -= (4 * R->px - w) / 2;
		w = 4 * R->px;
	}
	rgb(R, 0xc0392b, 1);
	cairo_set_line_width(R->cr, lw);
	cairo_rectangle(R->cr, x - lw / 2, y - lw / 2, w + lw, h + lw);
	cairo_stroke(R->cr);
}

/* Marks columns [a, b) of a row covered; @return 1 if any was not yet. */
static int
cover(uint8_t *row, int ncols, double a, double b)
{
	int i = (int)floor(a), j = (int)ceil(b), fresh = 0;

	if (i < 0)
		i = 0;
	if (j > ncols)
		j = ncols;
	for (; i < j; i++)
		if (!row[i])
			row[i] = 1, fresh = 1;
	return fresh;
}

/* Spans kept one by one. On a lane with few of them, even the shortest is
 * drawn (at least 2 pixels); on a busy lane, those under a pixel are left
 * to the coverage shading. Later bars only hidden under earlier ones on the
 * same row are skipped, so piles of overlapping spans cost little. */
static void
draw_bars(struct render *R)
{
	const mate_timeline *tl = R->tl;
	uint64_t *nlane = calloc((size_t)tl->nlanes, sizeof(*nlane));
	uint8_t *covered = calloc((size_t)tl->nlanes * 6, (size_t)R->ncols);
	size_t i;

	if (nlane == NULL || covered == NULL) {
		free(nlane);
		free(covered);
		return;
	}
	for (i = 0; i < tl->nbars; i++)
		if (tl->bars[i].e >= R->v0 && tl->bars[i].s <= R->v1)
			nlane[tl->bars[i].lane]++;
	for (i = 0; i < (size_t)tl->nlanes; i++)   /* busy lanes: high bit */
		if (tl_counts_sum(tl, tl->lanes[i]->count, R->v0, R->v1) > R->ncols / 8.0)
			nlane[i] |= (uint64_t)1 << 63;
	cairo_save(R->cr);
	cairo_rectangle(R->cr, R->x0, R->y0, R->x1 - R->x0, R->y1 - R->y0);
	cairo_clip(R->cr);
	for (i = tl->nbars; i-- > 0;) {   /* latest on top */
		const struct tl_bar *b = &tl->bars[i];
		const struct tl_lane *L = tl->lanes[b->lane];
		double x = X(R, b->s), w = X(R, b->e) - x, top, h, row, y, bh;
		int busy = (nlane[b->lane] >> 63) != 0;
		int sparse = !tl->bars_pruned && !busy &&
		    (nlane[b->lane] & ~((uint64_t)1 << 63)) <= (uint64_t)R->ncols / 3;
		int d = b->depth < 6 ? b->depth : 5;
		if (L->hidden || b->e < R->v0 || b->s > R->v1)
			continue;
		if (w < (busy ? 4 : 1) * R->px && !sparse && !b->failed)
			continue;   /* the coverage shading shows it */
		if (w < 2 * R->px) {
			x -= (2 * R->px - w) / 2;
			w = 2 * R->px;
		}
		if (!cover(covered + ((size_t)b->lane * 6 + d) * R->ncols, R->ncols,
		    (x - R->x0) / R->px, (x + w - R->x0) / R->px) && !sparse && !b->failed)
			continue;
		band(L, &top, &h, &row);
		y = top + d * row;
		bh = b->depth == 0 ? row : row * 0.9;
		rgb(R, tl->ops[b->op].rgb, 1);
		cairo_rectangle(R->cr, x, y, w, bh);
		cairo_fill(R->cr);
		if (w >= 4 * R->px) {
			rgb(R, darker(tl->ops[b->op].rgb, 0.6), 1);
			cairo_set_line_width(R->cr, 0.5 * R->f);
			cairo_rectangle(R->cr, x + 0.25 * R->f, y + 0.25 * R->f, w - 0.5 * R->f,
			    bh - 0.5 * R->f);
			cairo_stroke(R->cr);
			bar_label(R, b, x, w, y, bh);
		}
		if (b->failed)
			failed_mark(R, x, y, w, bh);
	}
	cairo_restore(R->cr);
	free(covered);
	free(nlane);
}

/* ---- Markers, labels, flows, signals ---------------------------------------------- */

static double
marker_size(struct render *R, const struct tl_lane *L, int64_t bytes)
{
	double b = bytes > 1 ? (double)bytes : 1.0;
	double d = sqrt(50 + fmin(200, 20 * log10(b)));   /* GT's points squared */
	double cap = (L->y1 - L->y0) * 0.5;

	return d * R->f > cap ? cap : d * R->f;
}

static void
shape(struct render *R, int type, double x, double y, double d)
{
	cairo_t *cr = R->cr;
	double r = d / 2;
	int i;

	cairo_new_path(cr);
	switch (type) {
	case TL_MARK_RECV:
	case TL_MARK_OTHER:
		cairo_arc(cr, x, y, type == TL_MARK_OTHER ? r * 0.6 : r, 0, 2 * M_PI);
		break;
	case TL_MARK_WSEND:
		cairo_move_to(cr, x - r * 0.8, y - r);
		cairo_line_to(cr, x + r, y);
		cairo_line_to(cr, x - r * 0.8, y + r);
		break;
	case TL_MARK_WRECV:
		cairo_move_to(cr, x + r * 0.8, y - r);
		cairo_line_to(cr, x - r, y);
		cairo_line_to(cr, x + r * 0.8, y + r);
		break;
	case TL_MARK_SIGNAL:
		for (i = 0; i < 10; i++) {
			double a = -M_PI / 2 + i * M_PI / 5, rr = i % 2 ? r * 0.45 : r * 1.15;
			if (i == 0)
				cairo_move_to(cr, x + rr * cos(a), y + rr * sin(a));
			else
				cairo_line_to(cr, x + rr * cos(a), y + rr * sin(a));
		}
		break;
	case TL_MARK_INJECT:
		cairo_move_to(cr, x, y - r);
		cairo_line_to(cr, x + r * 0.75, y);
		cairo_line_to(cr, x, y + r);
		cairo_line_to(cr, x - r * 0.75, y);
		break;
	case TL_MARK_CONNECT:
		cairo_rectangle(cr, x - r * 0.8, y - r * 0.8, r * 1.6, r * 1.6);
		break;
	default:   /* error: a cross */
		cairo_move_to(cr, x - r, y - r * 0.6);
		cairo_line_to(cr, x - r * 0.6, y - r);
		cairo_line_to(cr, x, y - r * 0.4);
		cairo_line_to(cr, x + r * 0.6, y - r);
		cairo_line_to(cr, x + r, y - r * 0.6);
		cairo_line_to(cr, x + r * 0.4, y);
		cairo_line_to(cr, x + r, y + r * 0.6);
		cairo_line_to(cr, x + r * 0.6, y + r);
		cairo_line_to(cr, x, y + r * 0.4);
		cairo_line_to(cr, x - r * 0.6, y + r);
		cairo_line_to(cr, x - r, y + r * 0.6);
		cairo_line_to(cr, x - r * 0.4, y);
		break;
	}
	cairo_close_path(cr);
}

/* Markers sort by lane (drawing order), time, sequence. */
struct mark_key {
	int rank;
	double t;
	uint64_t seq;
	size_t i;
};

static int
mark_cmp(const void *pa, const void *pb)
{
	const struct mark_key *a = pa, *b = pb;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static double
mark_y(const struct tl_lane *L)
{
	double top, h, row;

	band(L, &top, &h, &row);
	return L->kind == MATE_LANE_WORKER ? top : (L->y0 + L->y1) / 2;
}

/* "#id" above the marker, else below, else nowhere: never on top of the
 * lane's previous label at that level. */
static void
id_label(struct render *R, const struct tl_mark *m, double x, double y, double d,
    double *last_end)
{
	const struct tl_lane *L = R->tl->lanes[m->lane];
	char s[32];
	double w, fs = 6.5, ys[2];
	int lvl;

	if (m->type != TL_MARK_RECV && m->type != TL_MARK_SIGNAL && m->bytes <= 100000)
		return;
	snprintf(s, sizeof(s), "#%llu", (unsigned long long)m->seq);
	font(R, fs, 0);
	w = text_w(R, s);
	ys[0] = y - d / 2 - 1.5 * R->f;
	ys[1] = y + d / 2 + fs * R->f;
	for (lvl = 0; lvl < 2; lvl++) {
		if (ys[lvl] - fs * R->f * 0.8 < L->y0 || ys[lvl] > L->y1 + 0.5 * R->f)
			continue;
		if (x - w / 2 < last_end[lvl] + 2 * R->f)
			continue;
		rgb(R, 0x34495e, 0.75);
		text(R, x, ys[lvl], 0.5, s, 0);
		last_end[lvl] = x + w / 2;
		return;
	}
}

static int
bytes_desc(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	return a > b ? -1 : a < b;
}

/* On a lane too busy to show every event, the bytes a marker needs: those
 * of its 24th largest transfer in view (and at least 100 KB). */
static int64_t
dense_threshold(const mate_timeline *tl, const struct mark_key *key, size_t from, size_t n)
{
	int64_t *b = malloc((n - from) * sizeof(*b)), t;
	size_t i, k = 0;

	if (b == NULL)
		return INT64_MAX;
	for (i = from; i < n && key[i].rank == key[from].rank; i++)
		b[k++] = tl->marks[key[i].i].bytes;
	qsort(b, k, sizeof(*b), bytes_desc);
	t = b[k > 24 ? 23 : k - 1];
	free(b);
	return t > 100000 ? t : 100000;
}

/* Worth a marker on a lane too busy to show every event? */
static int
notable(const struct tl_mark *m, int64_t threshold)
{
	return m->type == TL_MARK_SIGNAL || m->type == TL_MARK_ERROR ||
	    m->type == TL_MARK_CONNECT || m->bytes >= threshold;
}

static void
draw_marks(struct render *R)
{
	const mate_timeline *tl = R->tl;
	struct mark_key *key = malloc((tl->nmarks + 1) * sizeof(*key));
	int rank[TL_MAX_LANES + 4], lane = -1, k, dense = 0;
	double last_x[TL_MARK_TYPES], last_end[2];
	int64_t threshold = 0;
	size_t i, n = 0;

	if (key == NULL)
		return;
	for (k = 0; k < tl->nlanes; k++)
		rank[k] = 1 << 20;
	for (k = 0; k < R->nl; k++)
		rank[R->order[k]] = k;
	for (i = 0; i < tl->nmarks; i++) {
		const struct tl_mark *m = &tl->marks[i];
		if (m->t < R->v0 || m->t > R->v1 || tl->lanes[m->lane]->hidden)
			continue;
		key[n].rank = rank[m->lane];
		key[n].t = m->t;
		key[n].seq = m->seq;
		key[n++].i = i;
	}
	qsort(key, n, sizeof(*key), mark_cmp);
	cairo_set_line_width(R->cr, 0.5 * R->f);
	for (i = 0; i < n; i++) {
		const struct tl_mark *m = &tl->marks[key[i].i];
		const struct tl_lane *L = tl->lanes[m->lane];
		double x = X(R, m->t), y = mark_y(L), d = marker_size(R, L, m->bytes);
		if (m->lane != lane) {
			lane = m->lane;
			for (k = 0; k < TL_MARK_TYPES; k++)
				last_x[k] = -1e9;
			last_end[0] = last_end[1] = -1e9;
			/* more than one event per 8 pixels: only the notable ones */
			dense = tl_counts_sum(tl, L->count, R->v0, R->v1) > R->ncols / 8.0;
			if (dense)
				threshold = dense_threshold(tl, key, i, n);
		}
		if (dense && !notable(m, threshold))
			continue;
		if (x - last_x[m->type] < d * (dense ? 1.5 : 0.6))
			continue;   /* too close to the last one: thin out */
		last_x[m->type] = x;
		shape(R, m->type, x, y, d);
		rgb(R, m->type == TL_MARK_SIGNAL ? 0xe74c3c : m->type == TL_MARK_ERROR ?
		    0xc0392b : tl->ops[m->op].rgb, 0.85);
		cairo_fill_preserve(R->cr);
		rgb(R, 0x17202a, 0.9);
		cairo_stroke(R->cr);
		id_label(R, m, x, y, d, last_end);
	}
	free(key);
}

static void
arrow(struct render *R, double xa, double ya, double xb, double yb)
{
	double a = atan2(yb - ya, xb - xa), s = 4 * R->f;

	cairo_new_path(R->cr);
	cairo_move_to(R->cr, xa, ya);
	cairo_line_to(R->cr, xb - cos(a) * s * 0.8, yb - sin(a) * s * 0.8);
	cairo_stroke(R->cr);
	cairo_move_to(R->cr, xb, yb);
	cairo_line_to(R->cr, xb - s * cos(a - 0.4), yb - s * sin(a - 0.4));
	cairo_line_to(R->cr, xb - s * cos(a + 0.4), yb - s * sin(a + 0.4));
	cairo_close_path(R->cr);
	cairo_fill(R->cr);
}

/* Arrows from each call to the work it caused (at most MAX_ARROWS). */
static void
draw_flows(struct render *R)
{
	const mate_timeline *tl = R->tl;
	size_t i, n = 0, step;

	for (i = 0; i < tl->nflows; i++)
		n += tl->flows[i].t1 >= R->v0 && tl->flows[i].t0 <= R->v1;
	if (tl->flow_cell > 0 || n > MAX_ARROWS) {
		R->flows_hidden = 1;   /* a thicket, not a picture: say so in the legend */
		return;
	}
	step = 1;
	cairo_set_line_width(R->cr, 0.6 * R->f);
	rgb(R, 0x566573, 0.5);
	for (i = 0, n = 0; i < tl->nflows; i++) {
		const struct tl_flow *fl = &tl->flows[i];
		const struct tl_lane *A = tl->lanes[fl->lane0], *B = tl->lanes[fl->lane1];
		double top, h, row;
		if (fl->t1 < R->v0 || fl->t0 > R->v1 || A->hidden || B->hidden)
			continue;
		if (n++ % step != 0)
			continue;
		band(B, &top, &h, &row);
		arrow(R, X(R, fl->t0), (A->y0 + A->y1) / 2, X(R, fl->t1),
		    B->y0 > A->y0 ? top : top + row);
	}
}

static void
draw_signals(struct render *R)
{
	const mate_timeline *tl = R->tl;
	double dashes[2] = { 4 * R->f, 3 * R->f }, last = -1e9;
	size_t i;
	int drawn = 0;

	for (i = 0; i < tl->nsignals && drawn < MAX_SIGNALS_DRAWN; i++) {
		double x = X(R, tl->signals[i].t);
		if (tl->signals[i].t < R->v0 || tl->signals[i].t > R->v1 || x - last < 3 * R->px)
			continue;
		last = x;
		drawn++;
		cairo_save(R->cr);
		rgb(R, 0xe74c3c, 0.9);
		cairo_set_line_width(R->cr, 1.4 * R->f);
		cairo_set_dash(R->cr, dashes, 2, 0);
		cairo_move_to(R->cr, x, R->y0);
		cairo_line_to(R->cr, x, R->y1);
		cairo_stroke(R->cr);
		cairo_restore(R->cr);
		font(R, 7.5, 1);
		rgb(R, 0xc0392b, 0.9);
		cairo_save(R->cr);
		cairo_move_to(R->cr, x - 2 * R->f, R->y0 + 3 * R->f);
		cairo_rotate(R->cr, M_PI / 2);
		{
			double px0, py0;
			cairo_get_current_point(R->cr, &px0, &py0);
			text(R, px0, py0, 0, tl->signals[i].name, 120 * R->f);
		}
		cairo_restore(R->cr);
	}
}

/* ---- Axis, labels, margins, legend, title ------------------------------------------ */

static double
nice_step(double raw)
{
	double p = pow(10, floor(log10(raw))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Round ticks: 1, 2 or 5 times a power of ten, in s, ms or us. */
struct ticks {
	double step, unit;
	const char *uname;
	int dec;
};

static void
ticks(const struct render *R, struct ticks *tk)
{
	double span = R->v1 - R->v0, far = fmax(fabs(R->v0), fabs(R->v1));

	tk->step = nice_step(span / fmax(2, (R->x1 - R->x0) / (95 * R->f)));
	tk->unit = 1;
	tk->uname = "s";
	if (tk->step < 1e-3 && far < 1e-1)
		tk->unit = 1e-6, tk->uname = "\xc2\xb5s";
	else if (tk->step < 1 && far < 100)
		tk->unit = 1e-3, tk->uname = "ms";
	tk->dec = (int)fmax(0, -floor(log10(tk->step / tk->unit) + 1e-9));
}

static void
draw_grid(struct render *R)
{
	struct ticks tk;
	double t;

	ticks(R, &tk);
	rgb(R, 0x000000, 0.10);
	cairo_set_line_width(R->cr, 0.5 * R->f);
	for (t = ceil(R->v0 / tk.step - 1e-9) * tk.step; t <= R->v1 + tk.step * 1e-9; t += tk.step) {
		cairo_move_to(R->cr, snap(R, X(R, t)) + R->px / 2, R->y0);
		cairo_line_to(R->cr, snap(R, X(R, t)) + R->px / 2, R->y1);
	}
	cairo_stroke(R->cr);
}

static void
draw_axis(struct render *R)
{
	struct ticks tk;
	double t;
	char s[64];

	ticks(R, &tk);
	cairo_set_line_width(R->cr, 0.8 * R->f);
	rgb(R, 0x2c3e50, 1);
	cairo_move_to(R->cr, R->x0, R->y1 + 0.4 * R->f);
	cairo_line_to(R->cr, R->x1, R->y1 + 0.4 * R->f);
	cairo_stroke(R->cr);
	font(R, 8, 0);
	for (t = ceil(R->v0 / tk.step - 1e-9) * tk.step; t <= R->v1 + tk.step * 1e-9; t += tk.step) {
		double x = X(R, t), v = t / tk.unit;
		rgb(R, 0x2c3e50, 1);
		cairo_move_to(R->cr, x, R->y1);
		cairo_line_to(R->cr, x, R->y1 + 4 * R->f);
		cairo_stroke(R->cr);
		snprintf(s, sizeof(s), "%.*f %s", tk.dec, fabs(v) < 1e-9 ? 0.0 : v, tk.uname);
		text(R, x, R->y1 + 13 * R->f, 0.5, s, 0);
	}
	font(R, 8.5, 1);
	/* what zero is: the log's clock, which --from/--to use too */
	text(R, (R->x0 + R->x1) / 2, R->y1 + 27 * R->f, 0.5,
	    "time since the recording started (the log's clock, as --from/--to take it)", 0);
}

static void
human_bytes(char *s, size_t n, double b)
{
	if (b >= 1024.0 * 1024 * 1024)
		snprintf(s, n, "%.2f GB", b / (1024.0 * 1024 * 1024));
	else if (b >= 1024.0 * 1024)
		snprintf(s, n, "%.1f MB", b / (1024.0 * 1024));
	else if (b >= 1024)
		snprintf(s, n, "%.1f KB", b / 1024);
	else
		snprintf(s, n, "%.0f B", b);
}

/* Lane labels on the left; utilisation on the right, with a small gauge. */
static void
draw_margins(struct render *R)
{
	mate_timeline_stats st;
	double span, every = 1;
	int i;

	mate_timeline_get_stats(R->tl, &st);
	span = st.t1 - st.t0;   /* as mate_timeline_lane() counts */
	if (R->nl > 0 && (R->y1 - R->y0) / R->nl < 6 * R->f)
		every = ceil(6 * R->f / ((R->y1 - R->y0) / R->nl));
	font(R, 7.5, 1);
	rgb(R, 0x7f8c8d, 1);
	text(R, R->x1 + 62 * R->f, R->y0 - 4 * R->f, 1, "busy", 0);
	for (i = 0; i < R->nl; i++) {
		const struct tl_lane *L = R->tl->lanes[R->order[i]];
		double cy = (L->y0 + L->y1) / 2, lh = L->y1 - L->y0;
		double fs = fmin(9, fmax(5, lh * 0.6 / R->f)), busy;
		char s[300];
		if (i % (int)every != 0)
			continue;
		font(R, fs, L->kind == MATE_LANE_DISPATCHER);
		rgb(R, 0x17202a, 1);
		if (R->tl->nlogs > 1)
			snprintf(s, sizeof(s), "%s: %s", tl_log_name(R->tl, L->log), L->label);
		else
			snprintf(s, sizeof(s), "%s", L->label);
		text(R, R->x0 - 6 * R->f, cy + fs * R->f * 0.35, 1, s, R->x0 - 20 * R->f);
		font(R, fmin(8, fs), 0);
		if (L->kind == MATE_LANE_MEMORY) {
			char b[32];
			human_bytes(b, sizeof(b), L->mem_peak);
			snprintf(s, sizeof(s), "peak %s", b);
			rgb(R, 0x6c3483, 1);
			text(R, R->x1 + 62 * R->f, cy + fs * R->f * 0.35, 1, s, 66 * R->f);
			continue;
		}
		if (L->kind == MATE_LANE_DISPATCHER) {
			/* no spans of its own: a call open is not the dispatcher busy */
			snprintf(s, sizeof(s), "%llu event%s", (unsigned long long)L->events,
			    L->events == 1 ? "" : "s");
			rgb(R, 0x566573, 1);
			text(R, R->x1 + 62 * R->f, cy + fs * R->f * 0.35, 1, s, 66 * R->f);
			continue;
		}
		busy = span > 0 ? fmin(1, L->busy / span) : 0;
		rgb(R, 0xdfe3e8, 1);
		cairo_rectangle(R->cr, R->x1 + 6 * R->f, cy - 2.5 * R->f, 22 * R->f, 5 * R->f);
		cairo_fill(R->cr);
		rgb(R, 0x34495e, 1);
		cairo_rectangle(R->cr, R->x1 + 6 * R->f, cy - 2.5 * R->f, 22 * R->f * busy, 5 * R->f);
		cairo_fill(R->cr);
		snprintf(s, sizeof(s), "%.1f%%", busy * 100);
		rgb(R, 0x17202a, 1);
		text(R, R->x1 + 62 * R->f, cy + fs * R->f * 0.35, 1, s, 0);
	}
}

/* Legend entries: most busy time first. */
struct op_key {
	double busy;
	uint64_t spans;
	const char *name;
	int i;
};

static int
legend_cmp(const void *pa, const void *pb)
{
	const struct op_key *a = pa, *b = pb;

	if (a->busy != b->busy)
		return a->busy > b->busy ? -1 : 1;
	if (a->spans != b->spans)
		return a->spans > b->spans ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The ops present, most busy first, with their share of the busy time;
 * @return the y below them. */
static double
legend_ops(struct render *R, double x, double y, double lh, double w)
{
	const mate_timeline *tl = R->tl;
	struct op_key idx[TL_MAX_OPS];
	int n = 0, i, shown = 0;
	double total = 0;
	char s[96];

	for (i = 0; i < tl->nops; i++)
		if (tl->ops[i].spans > 0) {
			idx[n].busy = tl->ops[i].busy;
			idx[n].spans = tl->ops[i].spans;
			idx[n].name = tl->ops[i].name;
			idx[n++].i = i;
			total += tl->ops[i].busy;
		}
	qsort(idx, (size_t)n, sizeof(*idx), legend_cmp);
	font(R, 9, 1);
	rgb(R, 0x17202a, 1);
	text(R, x, y + 6 * R->f, 0, "ops", 0);
	y += lh;
	for (i = 0; i < n && y < R->H * 0.62; i++, shown++) {
		const struct tl_op *op = &tl->ops[idx[i].i];
		rgb(R, op->rgb, 1);
		cairo_rectangle(R->cr, x, y, 10 * R->f, 9 * R->f);
		cairo_fill_preserve(R->cr);
		rgb(R, darker(op->rgb, 0.6), 1);
		cairo_set_line_width(R->cr, 0.5 * R->f);
		cairo_stroke(R->cr);
		font(R, 8.5, 0);
		rgb(R, 0x17202a, 1);
		if (total > 0)
			snprintf(s, sizeof(s), "%s  %.0f%%", op->name, 100 * op->busy / total);
		else
			snprintf(s, sizeof(s), "%s", op->name);
		text(R, x + 14 * R->f, y + 8 * R->f, 0, s, w - 14 * R->f);
		y += lh;
	}
	if (shown < n) {
		snprintf(s, sizeof(s), "+%d more", n - shown);
		text(R, x + 14 * R->f, y + 8 * R->f, 0, s, 0);
		y += lh;
	}
	rgb(R, 0xffffff, 1);   /* the band's idle part */
	cairo_rectangle(R->cr, x, y, 10 * R->f, 9 * R->f);
	cairo_fill_preserve(R->cr);
	rgb(R, 0x95a5a6, 1);
	cairo_set_line_width(R->cr, 0.5 * R->f);
	cairo_stroke(R->cr);
	font(R, 8.5, 0);
	rgb(R, 0x17202a, 1);
	text(R, x + 14 * R->f, y + 8 * R->f, 0, "idle", w - 14 * R->f);
	return y + lh;
}

/* One legend line: the symbol is drawn by the caller at (x, y). */
static double
legend_line(struct render *R, double x, double y, double lh, double w, const char *s)
{
	rgb(R, 0x17202a, 1);
	font(R, 8.5, 0);
	text(R, x + 14 * R->f, y + 8 * R->f, 0, s, w - 14 * R->f);
	return y + lh;
}

/* The kinds of events drawn, failures, flows. */
static double
legend_events(struct render *R, double x, double y, double lh, double w)
{
	static const char *const mark_names[TL_MARK_TYPES] = { "request (RECV)",
	    "work sent", "work done", "signal", "injected", "connect", "error", "other event" };
	const mate_timeline *tl = R->tl;
	char s[64];
	int i;

	font(R, 9, 1);
	rgb(R, 0x17202a, 1);
	text(R, x, y + 6 * R->f, 0, "events", 0);
	y += lh;
	for (i = 0; i < TL_MARK_TYPES; i++) {
		if (!tl->mark_seen[i])
			continue;
		cairo_set_line_width(R->cr, 0.5 * R->f);
		shape(R, i, x + 5 * R->f, y + 4.5 * R->f, 9 * R->f);
		rgb(R, i == TL_MARK_SIGNAL ? 0xe74c3c : 0xaab7b8, 1);
		cairo_fill_preserve(R->cr);
		rgb(R, 0x17202a, 1);
		cairo_stroke(R->cr);
		y = legend_line(R, x, y, lh, w, mark_names[i]);
	}
	if (tl->st.failed > 0) {
		rgb(R, 0xffffff, 1);
		cairo_rectangle(R->cr, x + 1 * R->f, y + 1 * R->f, 8 * R->f, 7 * R->f);
		cairo_fill(R->cr);
		failed_mark(R, x + 1 * R->f, y + 1 * R->f, 8 * R->f, 7 * R->f);
		snprintf(s, sizeof(s), "failed (%llu)", (unsigned long long)tl->st.failed);
		y = legend_line(R, x, y, lh, w, s);
	}
	if (tl->nflows > 0) {
		rgb(R, 0x566573, 0.8);
		cairo_set_line_width(R->cr, 0.6 * R->f);
		arrow(R, x, y + 4.5 * R->f, x + 11 * R->f, y + 4.5 * R->f);
		y = legend_line(R, x, y, lh, w, R->flows_hidden ?
		    "call \xe2\x86\x92 work (too dense)" : "call \xe2\x86\x92 its work");
	}
	return y;
}

static void
draw_legend(struct render *R)
{
	double y = R->y0 + 4 * R->f, x = R->lx0, lh = 13 * R->f, w = R->lx1 - R->lx0;

	R->ly0 = y - 4 * R->f;
	y = legend_ops(R, x, y, lh, w);
	y = legend_events(R, x, y + lh * 0.6, lh, w);
	font(R, 7, 0);
	rgb(R, 0x7f8c8d, 1);
	text(R, x, y + 10 * R->f, 0, "marker area ~ log(bytes)", w);
	R->ly1 = y + 14 * R->f;
}

static void
duration_str(char *s, size_t n, double d)
{
	if (d >= 100)
		snprintf(s, n, "%.1f s", d);
	else if (d >= 1)
		snprintf(s, n, "%.3f s", d);
	else if (d >= 1e-3)
		snprintf(s, n, "%.3f ms", d * 1e3);
	else
		snprintf(s, n, "%.3f \xc2\xb5s", d * 1e6);
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s != NULL && s[1] != '\0' ? s + 1 : path;
}

static void
draw_title(struct render *R)
{
	mate_timeline_stats st;
	char title[300], sub[400], dur[48];
	double outer = 16 * R->f;

	mate_timeline_get_stats(R->tl, &st);
	if (R->o->title != NULL)
		snprintf(title, sizeof(title), "%s", R->o->title);
	else if (R->tl->nlogs > 1)
		snprintf(title, sizeof(title), "mate timeline: %s and %d more",
		    base_name(tl_log_name(R->tl, 0)), R->tl->nlogs - 1);
	else
		snprintf(title, sizeof(title), "mate timeline: %s", base_name(tl_log_name(R->tl, 0)));
	duration_str(dur, sizeof(dur), st.t1 >= st.t0 ? st.t1 - st.t0 : 0);
	snprintf(sub, sizeof(sub), "%llu op%s on %d worker%s  \xc2\xb7  %llu call%s from %d client%s  "
	    "\xc2\xb7  %d op type%s  \xc2\xb7  %s  \xc2\xb7  %llu event%s",
	    (unsigned long long)st.ops, st.ops == 1 ? "" : "s", st.workers,
	    st.workers == 1 ? "" : "s", (unsigned long long)st.calls, st.calls == 1 ? "" : "s",
	    st.clients, st.clients == 1 ? "" : "s", st.op_types, st.op_types == 1 ? "" : "s", dur,
	    (unsigned long long)st.events, st.events == 1 ? "" : "s");
	font(R, 15, 1);
	rgb(R, 0x17202a, 1);
	text(R, outer, outer + 14 * R->f, 0, title, R->W - 2 * outer);
	font(R, 9.5, 0);
	rgb(R, 0x566573, 1);
	text(R, outer, outer + 30 * R->f, 0, sub, R->W - 2 * outer);
	if (R->tl->nhosts > 0) {
		struct mate_buf b;
		mate_buf_init(&b);
		tl_hosts_line(R->tl, &b);
		if (mate_buf_str(&b) != NULL)
			text(R, outer, outer + 43 * R->f, 0, mate_buf_str(&b), R->W - 2 * outer);
		mate_buf_free(&b);
	}
}

static void
draw_empty(struct render *R)
{
	font(R, 12, 0);
	rgb(R, 0x7f8c8d, 1);
	text(R, (R->x0 + R->x1) / 2, (R->y0 + R->y1) / 2, 0.5, "no events to show", 0);
}

/* ---- The picture --------------------------------------------------------------------- */

static void
draw(struct render *R)
{
	int i;

	rgb(R, 0xffffff, 1);
	cairo_paint(R->cr);
	cairo_set_line_join(R->cr, CAIRO_LINE_JOIN_ROUND);
	layout(R);
	draw_title(R);
	if (R->nl == 0) {
		draw_empty(R);
		return;
	}
	draw_backgrounds(R);
	draw_grid(R);
	cairo_save(R->cr);
	cairo_rectangle(R->cr, R->x0, R->y0, R->x1 - R->x0, R->y1 - R->y0);
	cairo_clip(R->cr);
	for (i = 0; i < R->nl; i++) {
		const struct tl_lane *L = R->tl->lanes[R->order[i]];
		if (L->kind == MATE_LANE_MEMORY)
			draw_memory(R, L);
		else if (L->kind != MATE_LANE_DISPATCHER)   /* markers only */
			draw_coverage(R, L);
	}
	cairo_restore(R->cr);
	draw_bars(R);
	draw_signals(R);
	cairo_save(R->cr);
	cairo_rectangle(R->cr, R->x0 - 20 * R->f, R->y0 - 10 * R->f, R->x1 - R->x0 + 40 * R->f,
	    R->y1 - R->y0 + 12 * R->f);
	cairo_clip(R->cr);
	draw_flows(R);
	draw_marks(R);
	cairo_restore(R->cr);
	draw_axis(R);
	draw_margins(R);
	draw_legend(R);
}

void
mate_render_options_init(mate_render_options *o)
{
	memset(o, 0, sizeof(*o));
	o->format = MATE_RENDER_PNG;
	o->dpi = 150;
	o->width = 16;
	o->height = 10;
}

static int
check_size(const mate_render_options *o, int *wpx, int *hpx, mate_error *err)
{
	double w = o->width * o->dpi, h = o->height * o->dpi;

	if (!(o->dpi >= 10 && o->dpi <= 2400))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "dpi %g: must be 10 to 2400", o->dpi);
	if (!(o->width >= 1 && o->width <= 400 && o->height >= 1 && o->height <= 400))
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "size %g x %g in: each side must be 1 to 400 inches", o->width, o->height);
	*wpx = (int)floor(w + 0.5);
	*hpx = (int)floor(h + 0.5);
	if (*wpx > MAX_SIDE || *hpx > MAX_SIDE || (double)*wpx * *hpx > MAX_PIXELS)
		return mate_set_error(err, MATE_ERR_LIMIT,
		    "picture too large: %d x %d pixels (at most %d a side, %.0f megapixels)",
		    *wpx, *hpx, MAX_SIDE, MAX_PIXELS / 1e6);
	return MATE_OK;
}

static cairo_surface_t *
surface_new(struct render *R, int wpx, int hpx)
{
	switch (R->o->format) {
	case MATE_RENDER_SVG:
		R->svg = 1;
		return cairo_svg_surface_create_for_stream(write_fd, R, R->W, R->H);
	case MATE_RENDER_PDF:
		return cairo_pdf_surface_create_for_stream(write_fd, R, R->W, R->H);
	default:
		return cairo_image_surface_create(CAIRO_FORMAT_RGB24, wpx, hpx);
	}
}

static void
fill_info(const struct render *R, int wpx, int hpx, mate_render_info *info)
{
	double k = 1 / R->px;
	int i;

	if (info != NULL) {
		info->width_px = wpx;
		info->height_px = hpx;
		info->plot_x0 = R->x0 * k;
		info->plot_y0 = R->y0 * k;
		info->plot_x1 = R->x1 * k;
		info->plot_y1 = R->y1 * k;
		info->legend_x0 = R->lx0 * k;
		info->legend_y0 = R->ly0 * k;
		info->legend_x1 = R->lx1 * k;
		info->legend_y1 = R->ly1 * k;
		info->t0 = R->v0;
		info->t1 = R->v1;
	}
	for (i = 0; i < R->nl; i++) {   /* lanes remember their rows in pixels */
		struct tl_lane *L = R->tl->lanes[R->order[i]];
		L->y0 *= k;
		L->y1 *= k;
	}
}

int
mate_timeline_render_fd(mate_timeline *tl, const mate_render_options *o, int fd,
    mate_render_info *info, mate_error *err)
{
	struct render R;
	cairo_surface_t *surf;
	cairo_status_t cs;
	int wpx = 0, hpx = 0, rc;
	size_t i;

	if ((rc = check_size(o, &wpx, &hpx, err)) != MATE_OK)
		return rc;
	memset(&R, 0, sizeof(R));
	R.tl = tl;
	R.o = o;
	R.fd = fd;
	R.W = o->width * 72;
	R.H = o->height * 72;
	R.px = 72.0 / o->dpi;
	R.f = fmin(1.5, fmax(0.55, sqrt(fmin(o->width / 16, o->height / 10))));
	surf = surface_new(&R, wpx, hpx);
	if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(surf);
		return mate_set_error(err, MATE_ERR_NOMEM, "cairo: cannot create the surface");
	}
	R.cr = cairo_create(surf);
	if (o->format == MATE_RENDER_PNG)
		cairo_scale(R.cr, wpx / R.W, hpx / R.H);
	draw(&R);
	cs = cairo_status(R.cr);
	cairo_destroy(R.cr);
	if (o->format == MATE_RENDER_PNG && cs == CAIRO_STATUS_SUCCESS)
		cs = cairo_surface_write_to_png_stream(surf, write_fd, &R);
	cairo_surface_finish(surf);
	if (cs == CAIRO_STATUS_SUCCESS)
		cs = cairo_surface_status(surf);
	cairo_surface_destroy(surf);
	if (R.svg && cs == CAIRO_STATUS_SUCCESS)
		svg_text_layer(&R);
	for (i = 0; i < R.ntexts; i++)
		free(R.texts[i].s);
	free(R.texts);
	fill_info(&R, wpx, hpx, info);
	if (R.werr != 0)
		return mate_set_errno(err, R.werr, "cannot write the picture", NULL);
	if (cs != CAIRO_STATUS_SUCCESS)
		return mate_set_error(err, MATE_ERR_IO, "cairo: %s", cairo_status_to_string(cs));
	return MATE_OK;
}

int
mate_timeline_render(mate_timeline *tl, const mate_render_options *o, const char *path,
    mate_render_info *info, mate_error *err)
{
	mate_atomic_file af;
	int rc;

	if ((rc = mate_atomic_open(&af, path, err)) != MATE_OK)
		return rc;
	if ((rc = mate_timeline_render_fd(tl, o, af.fd, info, err)) != MATE_OK) {
		mate_atomic_abort(&af);
		return rc;
	}
	return mate_atomic_commit(&af, err);
}
