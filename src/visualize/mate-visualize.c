/* mate-visualize.c: draws timelines of instruction logs (mate's and GT's) as PNG, SVG or PDF, exports them as Perfetto JSON, or sums them up as text. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fe.h"
#include "mate_view.h"

enum { FMT_PNG, FMT_SVG, FMT_PDF, FMT_JSON, FMT_TEXT };

struct options {
	const char *output;
	int format;              /* -1: from the output's name */
	int gzip;
	double dpi, width, height;
	const char *title;
	int has_from, has_to;
	double from, to;
	const char *lanes;
	int verbose, quiet;
	char **logs;
	int nlogs;
};

static void
usage(void)
{
	printf("Usage: %s [options] LOG... [--output FILE]\n"
	    "Draws a timeline of instruction logs (mate's or GT's; '-' reads stdin).\n"
	    "\n"
	    "  -o, --output FILE    write FILE (default timeline.png, for text stdout;\n"
	    "                       '-' for stdout)\n"
	    "  -f, --format FMT     png, svg, pdf, json, json.gz or text (default: from\n"
	    "                       FILE's extension, .txt for text); json is\n"
	    "                       Chrome/Perfetto trace JSON; text a summary: top ops\n"
	    "                       by time, each lane's busy share and waiting\n"
	    "  -d, --dpi N          pixels per inch (default 150)\n"
	    "      --width IN       picture width in inches (default 16)\n"
	    "      --height IN      picture height in inches (default 10)\n"
	    "  -t, --title TEXT     title (default: \"mate timeline: LOG\")\n"
	    "      --from SEC       start of the time shown, in the log's clock (seconds\n"
	    "                       since the recording started, as on the axis)\n"
	    "      --to SEC         end of the time shown, in the same clock\n"
	    "  -l, --lanes REGEX    only lanes whose label matches (POSIX extended)\n"
	    "  -v, --verbose        also print the picture's geometry and each lane\n"
	    "  -q, --quiet          print nothing but errors\n"
	    "  -h, --help           show this help and exit\n"
	    "  -V, --version        show the version and exit\n", mate_fe_progname());
}

static int
format_named(const char *s, int *gzip)
{
	static const char *const names[] = { "png", "svg", "pdf", "json", "text" };
	int i;

	*gzip = 0;
	if (strcmp(s, "json.gz") == 0) {
		*gzip = 1;
		return FMT_JSON;
	}
	if (strcmp(s, "txt") == 0)
		return FMT_TEXT;
	for (i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static void
parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_WIDTH = 256, OPT_HEIGHT, OPT_FROM, OPT_TO };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "dpi", required_argument, NULL, 'd' },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "height", required_argument, NULL, OPT_HEIGHT },
		{ "title", required_argument, NULL, 't' },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "lanes", required_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		MATE_FE_LONGOPTS_END
	};
	char ext[16];
	int c;

	while ((c = mate_fe_getopt(argc, argv, "o:f:d:t:l:vqhV", longopts, usage)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'f':
			if ((o->format = format_named(optarg, &o->gzip)) < 0)
				mate_fe_usage_error("--format: '%s': expected png, svg, pdf, json, json.gz "
				    "or text", optarg);
			break;
		case 'd': o->dpi = mate_fe_opt_double("--dpi", optarg, 10, 2400); break;
		case OPT_WIDTH: o->width = mate_fe_opt_double("--width", optarg, 1, 400); break;
		case OPT_HEIGHT: o->height = mate_fe_opt_double("--height", optarg, 1, 400); break;
		case 't': o->title = optarg; break;
		case OPT_FROM: o->from = mate_fe_opt_double("--from", optarg, 0, 1e9); o->has_from = 1; break;
		case OPT_TO: o->to = mate_fe_opt_double("--to", optarg, 0, 1e9); o->has_to = 1; break;
		case 'l': o->lanes = optarg; break;
		case 'v': o->verbose = 1; break;
		case 'q': o->quiet = 1; break;
		}
	}
	o->logs = argv + optind;
	o->nlogs = argc - optind;
	if (o->nlogs == 0)
		mate_fe_usage_error("no instruction log given");
	if (o->has_from && o->has_to && !(o->to > o->from))
		mate_fe_usage_error("--to %g must be after --from %g", o->to, o->from);
	if (o->output == NULL)   /* a summary is read in the terminal */
		o->output = o->format == FMT_TEXT ? "-" : "timeline.png";
	if (o->format < 0 && strcmp(o->output, "-") == 0)
		o->format = FMT_PNG;
	if (o->format < 0 &&
	    (o->format = format_named(mate_fe_extension(o->output, ext, sizeof(ext)), &o->gzip)) < 0)
		mate_fe_usage_error("cannot tell the format of '%s' from its name: use --format", o->output);
	if (o->format != FMT_JSON && o->format != FMT_TEXT && (o->width * o->dpi > 32767 || o->height * o->dpi > 32767 ||
	    o->width * o->dpi * o->height * o->dpi > 50e6))
		mate_fe_usage_error("%g x %g in at %g dpi is too large a picture (at most 32767 pixels "
		    "a side, 50 megapixels)", o->width, o->height, o->dpi);
	if (strcmp(o->output, "-") == 0 && o->format != FMT_SVG && !o->gzip &&
	    o->format != FMT_JSON && o->format != FMT_TEXT && isatty(1))
		mate_fe_usage_error("not writing a binary picture to a terminal: use --output FILE");
}

static void
report_malformed(const struct options *o, mate_ilog *r)
{
	mate_ilog_stats st;
	uint64_t line;
	const char *why;
	int i;

	mate_ilog_get_stats(r, &st);
	if (o->quiet || st.malformed == 0)
		return;
	for (i = 0; mate_ilog_malformed(r, i, &line, &why) == 0; i++)
		mate_fe_warnx("%s:%llu: malformed line skipped: %s", mate_ilog_name(r),
		    (unsigned long long)line, why);
	if (st.malformed > (uint64_t)i)
		mate_fe_warnx("%s: %llu malformed lines skipped in all", mate_ilog_name(r),
		    (unsigned long long)st.malformed);
}

/* Reads one log into tl. @return 0, or 1 on a failure already reported. */
static int
read_log(const struct options *o, mate_timeline *tl, const char *path)
{
	struct mate_fe_progress prog;
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	mate_ilog_stats st;
	struct stat sb;
	uint64_t total, n = 0;
	int rc;

	mate_error_clear(&err);
	if ((r = mate_ilog_open(path, &err)) == NULL) {
		mate_fe_warnx("%s", err.message);
		return 1;
	}
	/* with a second core, the log is parsed there while this one draws */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		(void)mate_ilog_read_ahead(r, NULL);
	if (mate_timeline_begin_log(tl, strcmp(path, "-") == 0 ? "stdin" : path, &err) != 0) {
		mate_fe_warnx("%s", err.message);
		mate_ilog_free(r);
		return 1;
	}
	/* a regular file's size makes a progress line on a terminal (stdin: none) */
	total = strcmp(path, "-") != 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ?
	    (uint64_t)sb.st_size : 0;
	mate_fe_progress_start(&prog, "read bytes of", total, o->quiet);
	while ((rc = mate_ilog_next(r, &ev, &err)) > 0) {
		if (mate_timeline_add(tl, &ev, &err) != 0) {
			rc = -1;
			break;
		}
		if ((++n & 0xffff) == 0)
			mate_fe_progress_step(&prog, mate_ilog_bytes_read(r));
	}
	mate_fe_progress_end(&prog);
	mate_timeline_end_log(tl, NULL);
	report_malformed(o, r);
	mate_ilog_get_stats(r, &st);
	if (rc < 0)
		mate_fe_warnx("%s: %s", mate_ilog_name(r), err.message);
	else if (st.events == 0)
		mate_fe_warnx("%s: no event lines%s; mate-visualize reads instruction logs "
		    "(MATE_INSTRUCTION_LOG=FILE, or mate-trace), not the API log (MATE_LOGDEST)",
		    mate_ilog_name(r),
		    st.malformed > 0 ? " parse (every candidate was malformed)" : " found");
	mate_ilog_free(r);
	return rc < 0 || st.events == 0;
}

/* The summary on stderr; "wrote" only when the output was written. */
static void
print_summary(const struct options *o, const mate_timeline *tl, const mate_render_info *ri,
    const uint64_t flows[3], int written)
{
	mate_timeline_stats st;
	mate_lane_info li;
	int i, text_out = o->format == FMT_TEXT && strcmp(o->output, "-") == 0;

	mate_timeline_get_stats(tl, &st);
	if (o->quiet)
		return;
	if (!written || text_out)   /* the text on stdout says it all */
		;
	else if (o->format == FMT_JSON)
		mate_fe_warnx("wrote %s: Perfetto trace JSON%s, %llu flows from calls to their work",
		    o->output, o->gzip ? " (gzip)" : "", (unsigned long long)flows[0]);
	else if (o->format == FMT_TEXT)
		mate_fe_warnx("wrote %s: text summary", o->output);
	else if (o->format == FMT_PNG)
		mate_fe_warnx("wrote %s: %d x %d pixels (%g dpi, %g x %g in)", o->output,
		    ri->width_px, ri->height_px, o->dpi, o->width, o->height);
	else  /* a vector page has no pixels */
		mate_fe_warnx("wrote %s: %s, %g x %g in (%g x %g pt)", o->output,
		    o->format == FMT_SVG ? "SVG" : "PDF", o->width, o->height, o->width * 72,
		    o->height * 72);
	if (!text_out)
		mate_fe_warnx("%llu event%s, %llu op%s and %llu call%s of %d op type%s, %d lane%s "
		    "(%d client%s, %d worker%s), %.3f s (%.3f s to %.3f s)%s",
		    (unsigned long long)st.events, mate_fe_s(st.events), (unsigned long long)st.ops,
		    mate_fe_s(st.ops), (unsigned long long)st.calls, mate_fe_s(st.calls),
		    st.op_types, mate_fe_s(st.op_types), st.lanes, mate_fe_s(st.lanes), st.clients,
		    mate_fe_s(st.clients), st.workers, mate_fe_s(st.workers),
		    st.t1 >= st.t0 ? st.t1 - st.t0 : 0.0, st.t1 >= st.t0 ? st.t0 : 0.0,
		    st.t1 >= st.t0 ? st.t1 : 0.0, "");
	if (st.unpaired > 0)
		mate_fe_warnx("%llu event%s left unpaired", (unsigned long long)st.unpaired,
		    mate_fe_s(st.unpaired));
	if (st.failed > 0)
		mate_fe_warnx("%llu call%s or op%s reported a failure", (unsigned long long)st.failed,
		    mate_fe_s(st.failed), mate_fe_s(st.failed));
	if (flows[1] > 0)
		mate_fe_warnx("%llu flows dropped: their call never ended in the log",
		    (unsigned long long)flows[1]);
	if (flows[2] > 0)
		mate_fe_warnx("%llu flows dropped: their call was forgotten (too many calls "
		    "with work outstanding)", (unsigned long long)flows[2]);
	if (!o->verbose || o->format == FMT_JSON || o->format == FMT_TEXT || !written)
		return;
	mate_fe_warnx("plot: x %.1f to %.1f, y %.1f to %.1f px; time %.6f to %.6f s",
	    ri->plot_x0, ri->plot_x1, ri->plot_y0, ri->plot_y1, ri->t0, ri->t1);
	mate_fe_warnx("legend: x %.1f to %.1f, y %.1f to %.1f px", ri->legend_x0, ri->legend_x1,
	    ri->legend_y0, ri->legend_y1);
	for (i = 0; mate_timeline_lane(tl, i, &li) == 0; i++)
		mate_fe_warnx("lane %d: y %.1f to %.1f px, busy %.1f%%, %llu spans: %s", i, li.y0, li.y1,
		    li.busy * 100, (unsigned long long)li.spans, li.label);
}

/* --from/--to hold nothing: says so (with where the events are). @return 1. */
static int
empty_window(const struct options *o, const mate_timeline *tl)
{
	mate_timeline_stats st;
	char from[32] = "the start", to[32] = "the end";

	mate_timeline_get_stats(tl, &st);
	if (st.shown > 0)
		return 0;
	if (o->has_from)
		snprintf(from, sizeof(from), "%g s", o->from);
	if (o->has_to)
		snprintf(to, sizeof(to), "%g s", o->to);
	mate_fe_warnx("nothing to draw: no event from %s to %s (seconds since the recording "
	    "started, as in the log's time column); the events run from %.6g s to %.6g s",
	    from, to, st.first, st.last);
	return 1;
}

/* --lanes matched none: says so. @return 1. */
static int
no_lane(const struct options *o, const mate_timeline *tl)
{
	mate_timeline_stats st;

	mate_timeline_get_stats(tl, &st);
	if (st.lanes > 0)
		return 0;
	mate_fe_warnx("nothing to draw: no lane matches --lanes '%s' (labels such as 'client ID', "
	    "'dispatcher' or a worker's name; -v lists them)", mate_fe_safe(o->lanes));
	return 1;
}

static int
write_output(const struct options *o, int fd, mate_timeline *tl, mate_render_info *ri)
{
	mate_render_options ro;
	mate_error err;
	int rc;

	mate_error_clear(&err);
	if (o->format == FMT_TEXT) {
		rc = fd >= 0 ? mate_timeline_write_text_fd(tl, fd, &err) :
		    mate_timeline_write_text(tl, o->output, &err);
		if (rc != 0)
			mate_fe_warnx("%s: %s", o->output, err.message);
		return rc != 0;
	}
	mate_render_options_init(&ro);
	ro.format = o->format == FMT_SVG ? MATE_RENDER_SVG :
	    o->format == FMT_PDF ? MATE_RENDER_PDF : MATE_RENDER_PNG;
	ro.dpi = o->dpi;
	ro.width = o->width;
	ro.height = o->height;
	ro.title = o->title;
	if (fd >= 0)
		rc = mate_timeline_render_fd(tl, &ro, fd, ri, &err);
	else
		rc = mate_timeline_render(tl, &ro, o->output, ri, &err);
	if (rc != 0)
		mate_fe_warnx("%s: %s", o->output, err.message);
	return rc != 0;
}

int
main(int argc, char **argv)
{
	struct options o = { .output = NULL, .format = -1, .dpi = 150, .width = 16,
		.height = 10 };
	mate_timeline_options to;
	mate_timeline *tl;
	mate_perfetto *pf = NULL;
	mate_render_info ri;
	mate_error err;
	uint64_t flows[3] = { 0, 0, 0 };
	int i, failed = 0, ok = 0, bad_write = 0, out_fd;

	mate_fe_set_progname(argv[0]);
	parse_args(argc, argv, &o);
	mate_error_clear(&err);
	mate_timeline_options_init(&to);
	to.has_from = o.has_from, to.from = o.from;
	to.has_to = o.has_to, to.to = o.to;
	to.lanes = o.lanes;
	to.columns = (int)(o.width * o.dpi);
	if ((tl = mate_timeline_new(&to, &err)) == NULL)
		mate_fe_errx(err.code == MATE_ERR_ARGUMENT ? MATE_EXIT_USAGE : MATE_EXIT_FAIL, "%s", err.message);
	/* a FIFO or device (/dev/stdout) is written into like '-', never replaced */
	if ((out_fd = strcmp(o.output, "-") == 0 ? 1 : mate_fe_open_special(o.output)) < 0 &&
	    errno != 0)
		mate_fe_err(MATE_EXIT_FAIL, "%s", o.output);
	if (o.format == FMT_JSON) {
		pf = out_fd >= 0 ? mate_perfetto_open_fd(out_fd, o.gzip, &err) :
		    mate_perfetto_open(o.output, o.gzip, &err);
		if (pf == NULL) {
			mate_timeline_free(tl);
			mate_fe_errx(MATE_EXIT_FAIL, "%s: %s", o.output, err.message);
		}
		mate_timeline_set_perfetto(tl, pf);
	}
	for (i = 0; i < o.nlogs; i++) {
		int bad = read_log(&o, tl, o.logs[i]);
		failed |= bad;
		ok |= !bad;
	}
	memset(&ri, 0, sizeof(ri));
	if (ok && (o.has_from || o.has_to) && empty_window(&o, tl))
		ok = 0;
	else if (ok && o.lanes != NULL && no_lane(&o, tl))
		ok = 0;
	else if (!ok)
		mate_fe_warnx("nothing to draw: no log gave any event");
	if (!ok) {
		mate_perfetto_abort(pf);
		mate_timeline_free(tl);
		return MATE_EXIT_FAIL;
	}
	if (pf != NULL) {
		mate_perfetto_flows(pf, &flows[0], &flows[1], &flows[2]);
		if (mate_perfetto_close(pf, &err) != 0) {
			mate_fe_warnx("%s: %s", o.output, err.message);
			bad_write = 1;
		}
	} else {
		bad_write = write_output(&o, out_fd, tl, &ri);
	}
	if (out_fd > 1 && close(out_fd) != 0) {
		mate_fe_warn("%s", o.output);
		bad_write = 1;
	}
	print_summary(&o, tl, &ri, flows, !bad_write);
	failed |= bad_write;
	mate_timeline_free(tl);
	return failed ? MATE_EXIT_FAIL : MATE_EXIT_OK;
}
