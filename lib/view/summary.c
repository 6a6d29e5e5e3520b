/* summary.c: a timeline as plain text: the header, the top ops by time, each lane's busy share and waiting, and where the time went. */
#include "mate_private.h"
#include "timeline_private.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TOP_OPS 10           /* ops listed one by one; the rest on one line */
#define WHERE_OPS 3          /* ops named on the "where the time went" line */

static const char *
plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* A duration in a unit that suits it: "  812.4 us", "   3.21 ms", "  1.250 s ". */
static void
put_secs(struct mate_buf *b, double s)
{
	if (s < 999.95e-6)   /* what would round to 1000.0 us is 1.00 ms */
		mate_buf_printf(b, "%8.1f us", s * 1e6);
	else if (s < 0.999995)
		mate_buf_printf(b, "%8.2f ms", s * 1e3);
	else
		mate_buf_printf(b, "%8.3f s ", s);
}

/* The time the lanes' busy shares are shares of (as mate_timeline_lane()). */
static double
shown_span(const mate_timeline_stats *st)
{
	return st->t1 > st->t0 ? st->t1 - st->t0 : 0.0;
}

static void
put_header(struct mate_buf *b, const mate_timeline *tl, const mate_timeline_stats *st)
{
	int i;

	for (i = 0; i < tl->nlogs; i++)
		mate_buf_printf(b, "%s%s", i > 0 ? ", " : "", tl_log_name(tl, i));
	mate_buf_printf(b, ": %llu event%s, %llu op%s and %llu call%s of %d op type%s, %d lane%s "
	    "(%d client%s, %d worker%s), %.3f s (%.3f s to %.3f s)\n",
	    (unsigned long long)st->events, plural(st->events), (unsigned long long)st->ops,
	    plural(st->ops), (unsigned long long)st->calls, plural(st->calls), st->op_types,
	    plural((uint64_t)st->op_types), st->lanes, plural((uint64_t)st->lanes), st->clients,
	    plural((uint64_t)st->clients), st->workers, plural((uint64_t)st->workers),
	    shown_span(st), st->t1 >= st->t0 ? st->t0 : 0.0, st->t1 >= st->t0 ? st->t1 : 0.0);
	if (tl->nhosts > 0) {
		tl_hosts_line(tl, b);
		mate_buf_putc(b, '\n');
	}
}

/* Events of other machines (mate-trace's host=): which, that each keeps its own order,
 * and whose clock mate-trace moved onto this machine's (clock=). */
void
tl_hosts_line(const mate_timeline *tl, struct mate_buf *b)
{
	const char *name;
	double c;
	int i, k, shown = 0;

	mate_buf_printf(b, "%d host%s: ", tl->nhosts, tl->nhosts == 1 ? "" : "s");
	for (i = 0; mate_timeline_host(tl, i, &name, NULL) >= 0; i++)
		if (i < 4)
			mate_buf_printf(b, "%s%s", i > 0 ? ", " : "", name);
	if (i > 4)
		mate_buf_printf(b, " and %d more", i - 4);
	mate_buf_puts(b, "  \xc2\xb7  each host's events in their own order");
	for (i = 0; (k = mate_timeline_host(tl, i, &name, &c)) >= 0; i++) {
		if (k == 0)
			continue;
		if (shown++ == 3) {
			mate_buf_puts(b, "; more clocks moved");
			break;
		}
		mate_buf_printf(b, "; %s's clock was %.1f s %s, its times moved by %+.1f s", name,
		    fabs(c), c > 0 ? "behind" : "ahead", c);
	}
	if (shown == 0)
		mate_buf_puts(b, ", on clocks within a second of this machine's");
}

/* The seconds of all ops of a kind (work, or calls). */
static double
ops_total(const mate_timeline *tl, int calls)
{
	mate_op_info oi;
	double sum = 0;
	int i;

	for (i = 0; mate_timeline_op(tl, calls, i, &oi) == 0; i++)
		sum += oi.total;
	return sum;
}

/* The work shown by op, or the calls where no work is shown. */
static void
put_ops(struct mate_buf *b, const mate_timeline *tl, int calls)
{
	double all = ops_total(tl, calls), rest = 0;
	uint64_t rest_n = 0;
	mate_op_info oi;
	int i;

	mate_buf_printf(b, "\n%s\n", calls ? "top calls by time (no work on workers shown):" :
	    "top ops by time (work on workers):");
	if (mate_timeline_op(tl, calls, 0, &oi) != 0) {
		mate_buf_puts(b, "  none: no call or work shown\n");
		return;
	}
	mate_buf_printf(b, "  %-24s %9s %11s %7s %11s %11s\n", "op", "count", "total", "share",
	    "mean", "max");
	for (i = 0; mate_timeline_op(tl, calls, i, &oi) == 0; i++) {
		if (i >= TOP_OPS) {
			rest += oi.total;
			rest_n += oi.count;
			continue;
		}
		mate_buf_printf(b, "  %-24s %9llu ", oi.name, (unsigned long long)oi.count);
		put_secs(b, oi.total);
		mate_buf_printf(b, " %6.1f%% ", all > 0 ? 100 * oi.total / all : 0.0);
		put_secs(b, oi.count > 0 ? oi.total / (double)oi.count : 0.0);
		mate_buf_putc(b, ' ');
		put_secs(b, oi.max);
		mate_buf_putc(b, '\n');
	}
	if (i > TOP_OPS) {
		mate_buf_printf(b, "  ... %d more op%s: %llu span%s, ", i - TOP_OPS,
		    plural((uint64_t)(i - TOP_OPS)), (unsigned long long)rest_n, plural(rest_n));
		mate_buf_printf(b, "%.6f s, %.1f%%\n", rest, all > 0 ? 100 * rest / all : 0.0);
	}
}

static void
put_lanes(struct mate_buf *b, const mate_timeline *tl, const mate_timeline_stats *st)
{
	mate_lane_info li;
	int i;

	mate_buf_printf(b, "\nlanes (busy: share of the %.3f s shown; waiting: share of busy time "
	    "waiting on workers):\n", shown_span(st));
	mate_buf_printf(b, "  %7s %9s %8s  %-10s %s\n", "busy", "spans", "waiting", "kind", "lane");
	for (i = 0; mate_timeline_lane(tl, i, &li) == 0; i++) {
		mate_buf_printf(b, "  %6.1f%% %9llu ", li.busy * 100, (unsigned long long)li.spans);
		if (li.kind == MATE_LANE_CLIENT)
			mate_buf_printf(b, "%7.1f%%", li.wait * 100);
		else
			mate_buf_printf(b, "%8s", "-");
		mate_buf_printf(b, "  %-10s %s\n", tl_kind_word[li.kind & 3], li.label);
	}
}

/* Sums the busy seconds (and clients' waiting) of the lanes of one kind.
 * @return how many lanes. */
static int
kind_busy(const mate_timeline *tl, int kind, double span, double *busy, double *wait)
{
	mate_lane_info li;
	int i, n = 0;

	*busy = *wait = 0;
	for (i = 0; mate_timeline_lane(tl, i, &li) == 0; i++) {
		if (li.kind != kind)
			continue;
		*busy += li.busy * span;
		*wait += li.wait * li.busy * span;
		n++;
	}
	return n;
}

/* "where the time went: clients 96% busy, of which 86% waiting on workers;
 * workers 13% busy (rmsnorm 31%, mm 30%, ...)", from the figures above. */
static void
put_where(struct mate_buf *b, const mate_timeline *tl, const mate_timeline_stats *st)
{
	double span = shown_span(st), cb, cw, wb, ww, all = ops_total(tl, 0);
	int nc = kind_busy(tl, MATE_LANE_CLIENT, span, &cb, &cw);
	int nw = kind_busy(tl, MATE_LANE_WORKER, span, &wb, &ww);
	mate_op_info oi;
	int i;

	mate_buf_puts(b, "\nwhere the time went:");
	if ((nc == 0 && nw == 0) || span <= 0) {
		mate_buf_puts(b, " no client or worker busy in the time shown\n");
		return;
	}
	if (nc > 0) {
		mate_buf_printf(b, " clients %.0f%% busy", 100 * cb / (nc * span));
		if (nw > 0 || cw > 0)
			mate_buf_printf(b, ", of which %.0f%% waiting on workers",
			    cb > 0 ? 100 * cw / cb : 0.0);
	}
	if (nw > 0) {
		mate_buf_printf(b, "%s workers %.0f%% busy", nc > 0 ? ";" : "", 100 * wb / (nw * span));
		for (i = 0; all > 0 && mate_timeline_op(tl, 0, i, &oi) == 0; i++) {
			if (i == WHERE_OPS) {
				mate_buf_puts(b, ", ...");
				break;
			}
			mate_buf_printf(b, "%s%s %.0f%%", i == 0 ? " (" : ", ", oi.name,
			    100 * oi.total / all);
		}
		if (i > 0)
			mate_buf_putc(b, ')');
	}
	mate_buf_putc(b, '\n');
}

int
mate_timeline_write_text_fd(const mate_timeline *tl, int fd, mate_error *err)
{
	mate_timeline_stats st;
	struct mate_buf b;
	const char *text;
	int rc;

	mate_timeline_get_stats(tl, &st);
	mate_buf_init(&b);
	put_header(&b, tl, &st);
	put_ops(&b, tl, st.ops == 0 && st.calls > 0);
	put_lanes(&b, tl, &st);
	put_where(&b, tl, &st);
	if ((text = mate_buf_str(&b)) == NULL) {
		mate_buf_free(&b);
		return mate_set_error(err, MATE_ERR_NOMEM, "text summary: out of memory");
	}
	rc = mate_write_all(fd, text, b.len);
	mate_buf_free(&b);
	return rc != 0 ? mate_set_errno(err, -rc, "cannot write the summary", NULL) : MATE_OK;
}

int
mate_timeline_write_text(const mate_timeline *tl, const char *path, mate_error *err)
{
	mate_atomic_file af;
	int rc;

	if ((rc = mate_atomic_open(&af, path, err)) != MATE_OK)
		return rc;
	if ((rc = mate_timeline_write_text_fd(tl, af.fd, err)) != MATE_OK) {
		mate_atomic_abort(&af);
		return rc;
	}
	return mate_atomic_commit(&af, err);
}
