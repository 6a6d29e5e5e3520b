/* mate-trace.c: captures the live events of monitored processes for a while into a GT-format instruction log. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fe.h"
#include "mate_events.h"

struct options {
	double seconds;
	long long max_events;
	const char *dir, *out;
	struct mate_fe_follow follow;
	int quiet;
	int desync;
	char **logs;          /* --desync's instruction logs */
	int nlogs;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS]\n"
	    "Capture the live events of processes recorded with MATE_MONITOR into an\n"
	    "instruction log (GT's line format), merged in time order.\n\n"
	    "  -s, --seconds S      capture for S seconds (default 5; 0: until interrupted)\n"
	    "  -n, --max-events N   stop after N events\n"
	    MATE_FE_FOLLOW_HELP
	    "      --dir DIR        write DIR/trace_YYYYMMDD_HHMMSS.log, a new file (_2, _3, ...\n"
	    "                       when that name is taken; default: .)\n"
	    "  -o, --output FILE    write FILE instead ('-': standard output)\n"
	    "  -q, --quiet          no summary on standard error\n"
	    "      --desync [LOG...]  name the rank out of step: match the ranks' calls, live\n"
	    "                       (until every process followed ends; -s to stop sooner) or\n"
	    "                       in instruction logs; prints nothing when they agree\n"
	    "  -h, --help           this help\n"
	    "  -V, --version        the version\n", mate_fe_progname());
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_DIR = 256, OPT_DESYNC };
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "max-events", required_argument, NULL, 'n' },
		MATE_FE_FOLLOW_LONGOPTS,
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "desync", no_argument, NULL, OPT_DESYNC },
		MATE_FE_LONGOPTS_END
	};
	int c, seconds_set = 0;

	memset(o, 0, sizeof(*o));
	o->seconds = 5;
	o->max_events = -1;
	while ((c = mate_fe_getopt(argc, argv, "s:n:o:qhV", longopts, usage)) != -1) {
		switch (c) {
		case 's':
			o->seconds = mate_fe_parse_double("--seconds", optarg);
			if (o->seconds < 0)
				mate_fe_usage_error("bad value for --seconds: '%s' (want >= 0)", optarg);
			seconds_set = 1;
			break;
		case 'n':
			o->max_events = mate_fe_parse_count("--max-events", optarg);
			break;
		case OPT_DIR: o->dir = optarg; break;
		case 'o': o->out = optarg; break;
		case 'q': o->quiet = 1; break;
		case OPT_DESYNC: o->desync = 1; break;
		case MATE_FE_OPT_PID:
		case MATE_FE_OPT_ENDPOINT:
		case MATE_FE_OPT_ENDPOINTS: mate_fe_follow_option(&o->follow, c, optarg); break;
		}
	}
	if (optind < argc && !o->desync)
		mate_fe_usage_error("unexpected argument '%s'", argv[optind]);
	o->logs = argv + optind;
	o->nlogs = argc - optind;
	if (o->desync && (o->dir != NULL || o->out != NULL || o->max_events >= 0))
		mate_fe_usage_error("--desync writes no log: no --dir, --output or --max-events");
	if (o->desync && o->nlogs > 0 && (o->follow.npids > 0 || o->follow.nendpoints > 0 ||
	    seconds_set))
		mate_fe_usage_error("--desync with logs follows no process: no --pid, --endpoint or "
		    "--seconds");
	if (o->desync && !seconds_set)
		o->seconds = 0;
	if (o->dir != NULL && o->out != NULL)
		mate_fe_usage_error("--dir and --output exclude each other");
}

/* The folders make_dirs() made, outermost first: removed again with an empty capture. */
static char *made[64];
static int nmade;

static void
make_one(const char *p)
{
	if (mkdir(p, 0777) == 0) {
		if (nmade < (int)(sizeof(made) / sizeof(made[0])) && (made[nmade] = strdup(p)) != NULL)
			nmade++;
	} else if (errno != EEXIST)
		mate_fe_errx(MATE_EXIT_FAIL, "%s: %s", p, strerror(errno));
}

/* Removes the folders make_dirs() made, innermost first (one that holds something now, such
 * as another capture's file, stays). */
static void
unmake_dirs(void)
{
	while (nmade > 0) {
		rmdir(made[--nmade]);
		free(made[nmade]);
	}
}

/* mkdir -p */
static void
make_dirs(const char *dir)
{
	char *p = strdup(dir), *s;

	if (p == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	for (s = p + 1; *s != '\0'; s++)
		if (*s == '/') {
			*s = '\0';
			make_one(p);
			*s = '/';
		}
	make_one(p);
	free(p);
}

/* Opens the log; *created says whether the file is new (removed again
 * when nothing was captured). */
static FILE *
open_output(const struct options *o, time_t now, char *path, size_t cap, int *created)
{
	struct tm tm;
	struct stat st;
	FILE *f;

	*created = 0;
	if (o->out != NULL && strcmp(o->out, "-") == 0) {
		snprintf(path, cap, "<stdout>");
		return stdout;
	}
	if (o->out != NULL)
		snprintf(path, cap, "%s", o->out);
	else {
		/* a name of its own: made exclusively, so that two captures started in the same
		 * second (or a file planted at the name) are never written over: _2, _3, ... */
		const char *dir = o->dir != NULL ? o->dir : ".";
		char stamp[32];
		int fd = -1;

		make_dirs(dir);
		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm);
		for (int k = 1; k <= 1000 && fd < 0; k++) {
			if (k == 1)
				snprintf(path, cap, "%s/trace_%s.log", dir, stamp);
			else
				snprintf(path, cap, "%s/trace_%s_%d.log", dir, stamp, k);
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0 && errno != EEXIST)
				break;
		}
		if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
			mate_fe_errx(MATE_EXIT_FAIL, "%s: %s", path, strerror(errno));
		*created = 1;
		return f;
	}
	*created = lstat(path, &st) != 0 && errno == ENOENT;
	if ((f = fopen(path, "w")) == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "%s: %s", path, strerror(errno));
	return f;
}

/* The program time a publisher's captured events cover. */
struct span {
	double first, last;
	uint64_t n;
};

struct writer {
	FILE *f;
	uint64_t seq;
	double last_t;
	char *line;
	size_t cap;
	struct span *spans;   /* by publisher index */
	int nspans;
	char **hosts;         /* the other machines written so far */
	int nhosts;
	int unflushed;        /* written since the last fflush */
};

/* " clock=+30.000" on the first event written from a host whose clock the monitor
 * moved onto this machine's, so that a reader of the log (mate-visualize) can say so. */
static int
clock_note(struct writer *w, const mate_monitor *m, const char *host, char *buf, size_t cap)
{
	mate_endpoint_info e;
	int i;

	for (i = 0; i < w->nhosts; i++)
		if (strcmp(w->hosts[i], host) == 0)
			return 0;
	if (w->nhosts < 4096) {
		w->hosts = mate_fe_grow(w->hosts, (size_t)w->nhosts + 1, sizeof(*w->hosts));
		if ((w->hosts[w->nhosts] = strdup(host)) == NULL)
			mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
		w->nhosts++;
	}
	for (i = 0; i < mate_monitor_endpoints(m); i++)
		if (mate_monitor_endpoint(m, i, &e) == 0 && e.clock_known && e.clock_offset != 0 &&
		    strcmp(e.host, host) == 0)
			return snprintf(buf, cap, " clock=%+.3f", e.clock_offset);
	return 0;
}

static void
write_event(struct writer *w, const mate_monitor *m, const mate_live_event *le)
{
	mate_event ev = le->ev;
	char details[8192];
	int n;

	ev.seq = ++w->seq;
	if (le->publisher >= 0 && le->publisher < 1 << 20) {
		struct span *sp;
		if (le->publisher >= w->nspans) {
			int want = le->publisher + 16;
			w->spans = mate_fe_grow(w->spans, (size_t)want, sizeof(*w->spans));
			memset(w->spans + w->nspans, 0, sizeof(*w->spans) * (size_t)(want - w->nspans));
			w->nspans = want;
		}
		sp = &w->spans[le->publisher];
		if (sp->n++ == 0)
			sp->first = ev.time;
		sp->last = ev.time;
	}
	if (ev.time < w->last_t)
		ev.time = w->last_t;
	w->last_t = ev.time;
	if (mate_monitor_publishers(m) > 1) {
		mate_publisher_info pi;
		mate_monitor_publisher(m, le->publisher, &pi);
		const char *host = mate_monitor_publisher_host(m, le->publisher);
		int k = snprintf(details, sizeof(details), "%s%spid=%ld", ev.details,
		    ev.details[0] != '\0' ? " " : "", pi.pid);
		/* another machine's: its host (as --endpoint named it), its pid being its own */
		if (host[0] != '\0' && k > 0 && (size_t)k < sizeof(details))
			k += snprintf(details + k, sizeof(details) - (size_t)k, " host=%s", host);
		if (host[0] != '\0' && k > 0 && (size_t)k < sizeof(details))
			k += clock_note(w, m, host, details + k, sizeof(details) - (size_t)k);
		if (pi.rank >= 0 && k > 0 && (size_t)k < sizeof(details))
			snprintf(details + k, sizeof(details) - (size_t)k, " rank=%d", pi.rank);
		ev.details = details;
	}
	n = mate_ilog_format(w->line, w->cap, &ev);
	if (n >= (int)w->cap) {
		w->line = mate_fe_grow(w->line, (size_t)n, 1);
		w->cap = (size_t)n + 1;
		n = mate_ilog_format(w->line, w->cap, &ev);
	}
	fwrite(w->line, 1, (size_t)n, w->f);
}

/* The summary: events, and for each process the time its events cover; a
 * capture of S seconds whose events cover much less of a process that ran
 * on (it lagged, or started late) is said. */
static void
summary(const mate_monitor *m, const struct writer *w, double secs, const char *path,
    const struct options *o, int whole)
{
	mate_publisher_info pi;
	int n = mate_monitor_publishers(m), nproc = 0;

	/* an endpoint named that no frame came from is no process: said below */
	for (int i = 0; i < n; i++)
		nproc += mate_monitor_publisher(m, i, &pi) == 0 && (pi.pid > 0 || pi.events > 0);
	fprintf(stderr, "%s: %llu event%s in %.2f s from %d process%s -> %s\n",
	    mate_fe_progname(), (unsigned long long)w->seq, mate_fe_s(w->seq), secs, nproc,
	    nproc == 1 ? "" : "es", path);
	for (int i = 0; i < n; i++) {
		const struct span *sp = i < w->nspans ? &w->spans[i] : NULL;
		double covered = sp != NULL && sp->n > 0 ? sp->last - sp->first : -1;
		char cov[48] = "";
		mate_monitor_publisher(m, i, &pi);
		if (pi.pid <= 0 && pi.events == 0 && mate_monitor_endpoints(m) > 0)
			continue;
		if (covered >= 0)
			snprintf(cov, sizeof(cov), ", covering %.2f s", covered);
		const char *host = mate_monitor_publisher_host(m, i);
		fprintf(stderr, "  pid %ld%s%s %s: %llu event%s, %llu dropped, %llu lost%s%s\n", pi.pid,
		    host[0] != '\0' ? " on " : "", mate_fe_safe(host),
		    mate_fe_safe(pi.program[0] != '\0' ? pi.program : pi.endpoint),
		    (unsigned long long)pi.events, mate_fe_s(pi.events), (unsigned long long)pi.dropped,
		    (unsigned long long)pi.lost, cov, pi.ended ? ", exited" : "");
		if (whole && covered >= 0 && !pi.ended && o->seconds >= 0.5 && covered < 0.8 * o->seconds)
			mate_fe_warnx("pid %ld's events cover %.2f s of the %.2f s capture: it started "
			    "late or its events came late (a loaded machine); MATE_MONITOR_WAIT=S in "
			    "it waits for the capture", pi.pid, covered, o->seconds);
	}
	/* the endpoints named: the silent, those that speak something else, other clocks */
	for (int i = 0; i < mate_monitor_endpoints(m); i++) {
		mate_endpoint_info e;
		if (mate_monitor_endpoint(m, i, &e) != 0)
			continue;
		if (e.frames == 0)
			mate_fe_warnx("%s: silent: nothing came from it%s", mate_fe_safe(e.url),
			    e.foreign > 0 ? " that mate reads" : "");
		if (e.foreign > 0)
			mate_fe_warnx("%s: %llu frame%s that are not mate's events (skipped)",
			    mate_fe_safe(e.url), (unsigned long long)e.foreign, mate_fe_s(e.foreign));
		/* a host's clock once, on its first endpoint (its endpoints share it) */
		int said = 0;
		for (int j = 0; j < i && !said; j++) {
			mate_endpoint_info f;
			said = mate_monitor_endpoint(m, j, &f) == 0 && strcmp(f.host, e.host) == 0;
		}
		if (!said && e.clock_offset != 0)
			fprintf(stderr, "  host %s: its clock is %.1f s %s this machine's; its times "
			    "are moved by that (each host's events keep their order)\n",
			    mate_fe_safe(e.host), fabs(e.clock_offset),
			    e.clock_offset > 0 ? "behind" : "ahead of");
		if (!said && e.clock_moved > 0)
			fprintf(stderr, "  host %s: its clock moved by %+.1f s since its first "
			    "process; %d process%s started after keep%s its own\n",
			    mate_fe_safe(e.host), -e.clock_moved_by, e.clock_moved,
			    e.clock_moved == 1 ? "" : "es", e.clock_moved == 1 ? "s" : "");
	}
}

/* Whether every --pid has gone without publishing (said): nothing more can come. */
static int
pids_gone(const mate_monitor *m, const struct options *o, double waited, int *told)
{
	if (!mate_fe_follow_pids_gone(m, &o->follow, waited, told))
		return 0;
	mate_fe_warnx("%s ended without publishing events",
	    o->follow.npids == 1 ? "the process" : "every process");
	return 1;
}

static void
capture(mate_monitor *m, const struct options *o, struct writer *w)
{
	double t0 = mate_fe_mono_seconds(), end = o->seconds > 0 ? t0 + o->seconds : 1e300;
	double next_check = t0;
	mate_live_event le;
	mate_error err;
	int rc, told = 0;

	while (!mate_fe_interrupted && (o->max_events < 0 || w->seq < (uint64_t)o->max_events)) {
		double now = mate_fe_mono_seconds();
		if (now >= end || mate_fe_follow_all_ended(m, &o->follow))
			break;
		/* a few times a second, not once an event */
		if (now >= next_check) {
			next_check = now + 0.2;
			if (pids_gone(m, o, now - t0, &told))
				break;
		}
		/* nothing ready: what was written goes out before the wait, so that a reader
		 * of the log as it grows (-o - | grep) sees each event when it comes */
		rc = mate_monitor_next(m, &le, 0, &err);
		if (rc == 0 && w->unflushed) {
			fflush(w->f);
			w->unflushed = 0;
		}
		if (rc == 0)
			rc = mate_monitor_next(m, &le,
			    (int)((end - now) * 1000 > 200 ? 200 : (end - now) * 1000), &err);
		if (rc < 0)
			mate_fe_errx(MATE_EXIT_FAIL, "%s", err.message);
		if (rc > 0) {
			write_event(w, m, &le);
			w->unflushed = 1;
		}
	}
	/* what was received before the end, in order */
	mate_monitor_flush(m);
	while ((o->max_events < 0 || w->seq < (uint64_t)o->max_events) &&
	    mate_monitor_next(m, &le, 0, &err) > 0)
		write_event(w, m, &le);
}

/* ---- --desync ---------------------------------------------------------------------- */

/* Prints every new verdict: @return how many. */
static int
report(mate_desync *d, double now, int final)
{
	mate_desync_verdict v;
	int n = 0, rc;

	while ((rc = mate_desync_check(d, now, final, &v)) == 1) {
		printf("%s\n", v.text);
		n++;
	}
	if (rc < 0)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	fflush(stdout);
	return n;
}

static void
take(mate_desync *d, const mate_event *ev, long pid, int rank, const char *where)
{
	mate_error err;
	int rc = mate_desync_event(d, ev, pid, rank, &err);

	static int limit_told;

	if (rc == MATE_ERR_NOMEM)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	if (rc == MATE_ERR_LIMIT && limit_told++ > 0)
		return;   /* said once */
	if (rc != MATE_OK)
		mate_fe_warnx("%s: %s", where, err.message);
}

static void
unranked_note(const mate_desync *d)
{
	uint64_t n = mate_desync_unranked(d);

	if (n > 0)
		mate_fe_warnx("%llu call%s of processes with no rank (no RANK, OMPI_COMM_WORLD_RANK, "
		    "PMI_RANK or SLURM_PROCID in their environment, and no ncclCommInitRank yet) "
		    "not compared",
		    (unsigned long long)n, mate_fe_s(n));
}

/* The ranks' instruction logs (one per process, or mate-trace captures). */
static int
desync_logs(const struct options *o)
{
	mate_desync *d = mate_desync_new();
	int found, bad = 0;

	if (d == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	for (int i = 0; i < o->nlogs; i++) {
		mate_error err;
		mate_ilog *r = mate_ilog_open(o->logs[i], &err);
		mate_event ev;
		long file_pid = -1;
		int rc;
		if (r == NULL) {
			mate_fe_warnx("%s", err.message);
			bad = 1;
			continue;
		}
		while ((rc = mate_ilog_next(r, &ev, &err)) > 0) {
			char pid[24], where[4096 + 32];
			long p = -1;
			if (mate_ilog_detail(ev.details, "pid", pid, sizeof(pid)) > 0)
				p = strtol(pid, NULL, 10);
			/* a process's own log (or logs concatenated): its RECV lines say no pid */
			if (p >= 0 && strcmp(ev.event, "CONNECT") == 0)
				file_pid = p;
			snprintf(where, sizeof(where), "%s:%llu", mate_ilog_name(r),
			    (unsigned long long)ev.line);
			take(d, &ev, p >= 0 ? p : file_pid, -1, where);
		}
		if (rc < 0) {
			mate_fe_warnx("%s", err.message);
			bad = 1;
		}
		mate_ilog_free(r);
	}
	unranked_note(d);
	found = report(d, 0, 1);
	mate_desync_free(d);
	return bad ? MATE_EXIT_USAGE : found > 0 ? MATE_EXIT_FAIL : MATE_EXIT_OK;
}

/* Seconds on the live events' base now (what the newest events can say). */
static double
live_now(const mate_monitor *m)
{
	return mate_fe_real_seconds() - mate_monitor_base(m) - mate_monitor_lag(m);
}

static int
desync_live(const struct options *o)
{
	mate_monitor *m = mate_fe_follow_open(&o->follow, 1);
	mate_desync *d = mate_desync_new();
	double t0 = mate_fe_mono_seconds(), end = o->seconds > 0 ? t0 + o->seconds : 1e300;
	double next_check = t0;
	mate_live_event le;
	mate_publisher_info pi;
	mate_error err;
	int rc, found = 0, told = 0, all_ended = 0;

	if (d == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	mate_fe_catch_interrupts();
	while (!mate_fe_interrupted) {
		double now = mate_fe_mono_seconds();
		if (now >= end || (all_ended = mate_fe_follow_all_ended(m, &o->follow)))
			break;
		if (now >= next_check) {
			next_check = now + 0.25;
			if (pids_gone(m, o, now - t0, &told))
				break;
			if (mate_monitor_base(m) > 0)
				found += report(d, live_now(m), 0);
		}
		rc = mate_monitor_next(m, &le, 200, &err);
		if (rc < 0)
			mate_fe_errx(MATE_EXIT_FAIL, "%s", err.message);
		if (rc > 0 && mate_monitor_publisher(m, le.publisher, &pi) == 0) {
			char where[64];
			snprintf(where, sizeof(where), "pid %ld", pi.pid);
			take(d, &le.ev, pi.pid, pi.rank, where);
		}
	}
	mate_monitor_flush(m);
	while (mate_monitor_next(m, &le, 0, &err) > 0)
		if (mate_monitor_publisher(m, le.publisher, &pi) == 0)
			take(d, &le.ev, pi.pid, pi.rank, "late event");
	/* a process whose endpoint went away before its DISCONNECT came may have lost its
	 * last events (or crashed): its end is not certain */
	for (int i = 0; mate_monitor_publisher(m, i, &pi) == 0; i++)
		if (pi.ended && pi.rank >= 0) {
			if (mate_monitor_publisher_cut(m, i))
				mate_desync_end_cut(d, pi.rank);
			else
				mate_desync_end(d, pi.rank);
		}
	unranked_note(d);
	/* the whole of every rank only when every process followed ended */
	found += report(d, 0, all_ended);
	mate_desync_free(d);
	mate_monitor_free(m);
	return found > 0 ? MATE_EXIT_FAIL : MATE_EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct writer w = { .f = NULL };
	int created;
	char path[4096], head[4096];
	mate_monitor *m;
	time_t now = time(NULL);
	double t0;
	int n;

	mate_fe_set_progname(argv[0]);
	parse_options(argc, argv, &o);
	if (o.desync) {
		int rc = o.nlogs > 0 ? desync_logs(&o) : desync_live(&o);
		mate_fe_follow_free(&o.follow);
		return rc;
	}
	m = mate_fe_follow_open(&o.follow, 1);
	mate_fe_catch_interrupts();
	w.f = open_output(&o, now, path, sizeof(path), &created);
	if ((w.line = malloc(w.cap = 4096)) == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	n = mate_ilog_format_header(head, sizeof(head), "mate Trace", now);
	if (n > 0 && (size_t)n < sizeof(head))
		fwrite(head, 1, (size_t)n, w.f);
	t0 = mate_fe_mono_seconds();
	capture(m, &o, &w);
	if (fflush(w.f) != 0 || (w.f != stdout && fclose(w.f) != 0))
		mate_fe_errx(MATE_EXIT_FAIL, "%s: %s", path, strerror(errno));
	/* a log of a header alone is no trace: the next mate-visualize would fail on it */
	if (w.seq == 0 && created && unlink(path) != 0)
		mate_fe_warn("%s", path);
	else if (w.seq == 0 && created)
		unmake_dirs();  /* and the folders --dir made for it */
	if (!o.quiet)
		summary(m, &w, mate_fe_mono_seconds() - t0, w.seq == 0 && created ? "no file" : path, &o,
		    !mate_fe_interrupted && (o.max_events < 0 || w.seq < (uint64_t)o.max_events));
	mate_monitor_free(m);
	free(w.line);
	free(w.spans);
	for (int i = 0; i < w.nhosts; i++)
		free(w.hosts[i]);
	free(w.hosts);
	mate_fe_follow_free(&o.follow);
	if (w.seq == 0) {
		mate_fe_warnx("no events captured%s", mate_fe_interrupted ? " (interrupted)" : "");
		return MATE_EXIT_FAIL;
	}
	return MATE_EXIT_OK;
}
