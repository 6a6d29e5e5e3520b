/* mate-top.c: live per-worker activity of monitored processes, on an ncurses screen or as plain tables (batch mode). */
#include "config.h"

#include <ctype.h>
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fe.h"
#include "mate_record.h"
#include "mate_events.h"
#include "top_nvml.h"

enum sort_key { SORT_NAME, SORT_BUSY, SORT_OPS, SORT_BYTES, SORT_COUNT };
static const char *const sort_name[SORT_COUNT] = { "worker", "busy", "ops/s", "bytes/s" };

struct options {
	double delay, smooth, linger;
	long long iterations;     /* -1: forever */
	int batch, ascii;
	int all;                  /* --all: other users' processes too */
	struct mate_fe_follow follow;
};

#define LETTERS_MAX 62      /* ops given a letter of their own without colour */

struct view {
	int sort, reverse, paused, help, scroll, color;
	int *order;               /* row indices in display order */
	int norder;
	char letter_op[LETTERS_MAX][64];  /* without colour: the op (name cut at 63) of each letter */
	char letter[LETTERS_MAX];
	int nletters;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS]\n"
	    "Show live per-worker activity of processes recorded with MATE_MONITOR.\n\n"
	    "  -d, --delay S        refresh every S seconds (default 1)\n"
	    "  -n, --iterations N   stop after N refreshes\n"
	    "  -b, --batch          print plain tables (the default when stdout is not a terminal)\n"
	    "  -t, --smooth S       time constant of the moving averages (default 1 s)\n"
	    "      --linger S       an exited process's rows stay S seconds (default 10)\n"
	    "      --all            other users' processes too (their folders: root only)\n"
	    MATE_FE_FOLLOW_HELP
	    "                       (--pid: mate-top ends when every process followed has)\n"
	    "      --ascii          no colour, no line drawing (also NO_COLOR)\n"
	    "  -h, --help           this help\n"
	    "  -V, --version        the version\n\n"
	    "Keys: q quit, s sort key, r reverse, p pause, h help, arrows and PgUp/PgDn scroll.\n",
	    mate_fe_progname());
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_ASCII = 256, OPT_LINGER, OPT_ALL };
	static const struct option longopts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "batch", no_argument, NULL, 'b' },
		{ "smooth", required_argument, NULL, 't' },
		{ "linger", required_argument, NULL, OPT_LINGER },
		{ "all", no_argument, NULL, OPT_ALL },
		MATE_FE_FOLLOW_LONGOPTS,
		{ "ascii", no_argument, NULL, OPT_ASCII },
		MATE_FE_LONGOPTS_END
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->delay = 1;
	o->smooth = 1;
	o->linger = 10;
	o->iterations = -1;
	while ((c = mate_fe_getopt(argc, argv, "d:n:bt:hV", longopts, usage)) != -1) {
		switch (c) {
		case 'd':
			o->delay = mate_fe_parse_double("--delay", optarg);
			if (!(o->delay >= 0.01) || o->delay > 3600)
				mate_fe_usage_error("bad value for --delay: '%s' (want 0.01..3600)", optarg);
			break;
		case 'n': o->iterations = mate_fe_parse_count("--iterations", optarg); break;
		case 'b': o->batch = 1; break;
		case 't':
			o->smooth = mate_fe_parse_double("--smooth", optarg);
			if (!(o->smooth > 0))
				mate_fe_usage_error("bad value for --smooth: '%s' (want > 0)", optarg);
			break;
		case OPT_LINGER:
			o->linger = mate_fe_parse_double("--linger", optarg);
			if (!(o->linger >= 0) || o->linger > 86400)
				mate_fe_usage_error("bad value for --linger: '%s' (want 0..86400)", optarg);
			break;
		case OPT_ASCII: o->ascii = 1; break;
		case OPT_ALL: o->all = 1; break;
		case MATE_FE_OPT_PID:
		case MATE_FE_OPT_ENDPOINT:
		case MATE_FE_OPT_ENDPOINTS: mate_fe_follow_option(&o->follow, c, optarg); break;
		}
	}
	if (optind < argc)
		mate_fe_usage_error("unexpected argument '%s'", argv[optind]);
	if (o->all && (o->follow.npids > 0 || o->follow.nendpoints > 0))
		mate_fe_usage_error("--all is not for use with --pid or --endpoint");
	if (!isatty(STDOUT_FILENO))
		o->batch = 1;
}

static double
real_now(void)
{
	return mate_fe_real_seconds();
}

/* "123B", "4.5KB", "6.78MB", "1.2GB" */
static void
fmt_bytes(char *out, size_t cap, double b)
{
	if (b < 1024)
		snprintf(out, cap, "%.0fB", b);
	else if (b < 1024.0 * 1024)
		snprintf(out, cap, "%.1fKB", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(out, cap, "%.2fMB", b / (1024.0 * 1024));
	else
		snprintf(out, cap, "%.2fGB", b / (1024.0 * 1024 * 1024));
}

/* ---- the processes' CPU and memory (local ones, from /proc) ------------------------ */

#define MAX_PSTAT 256

/* CPU share since the previous sample (100% = one core) and resident size,
 * of a process on this machine; cpu < 0 until two samples were taken. */
struct pstat {
	long pid;
	double ticks, at;      /* utime + stime (clock ticks), when (monotonic s) */
	double cpu;
	double rss;            /* bytes; < 0: unknown */
	int seen;
	long uid;              /* its owner (/proc/PID's); -1: unknown */
	int rank, world;       /* as its publisher said; rank -1: none */
};

static int show_user;      /* --all: each process line names its user */

/* A process is known by a key: its pid, and above bit 32 the number of its host
 * (hosts[KEY - 1]: the host part of a tcp endpoint named) where it is another
 * machine's: two hosts may each have a process of one pid. */
#define HOSTS_MAX 1024
#define KEY_PID(k) ((long)((unsigned long)(k) & 0xffffffffUL))
#define KEY_HOST(k) ((int)((unsigned long)(k) >> 32))
static const char *hosts[HOSTS_MAX];
static int nhosts;

static long
proc_key(const mate_monitor *m, int publisher, long pid)
{
	const char *h = mate_monitor_publisher_host(m, publisher);
	int i;

	if (h[0] == '\0')
		return pid;
	for (i = 0; i < nhosts; i++)
		if (strcmp(hosts[i], h) == 0)
			break;
	if (i == nhosts) {
		if (nhosts == HOSTS_MAX)
			return pid;
		hosts[nhosts++] = h;     /* borrowed until the monitor is freed: ours is */
	}
	return (long)(((unsigned long)(i + 1) << 32) | ((unsigned long)pid & 0xffffffffUL));
}

/* An endpoint that sent nothing for this long is said to be silent. */
#define SILENT_S 2.0

/* Ranks out of step (as mate-trace --desync names them): the live events go to the
 * analyser too; each verdict is kept and shown from then on, the last VERDICTS_MAX. */
#define VERDICTS_MAX 8
static mate_desync *desync;
static char *verdicts[VERDICTS_MAX];
static int nverdicts;

static struct pstat pstats[MAX_PSTAT];
static int npstats;

static struct pstat *
pstat_of(long pid)
{
	for (int i = 0; i < npstats; i++)
		if (pstats[i].pid == pid)
			return &pstats[i];
	return NULL;
}

/* utime + stime of /proc/PID/stat (fields 14 and 15, after the command in
 * parentheses, which may hold spaces) and the resident pages of statm. */
static int
read_proc(long pid, double *ticks, double *rss)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, pages_total, pages_res;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	*ticks = (double)ut + (double)st;
	*rss = -1;
	snprintf(path, sizeof(path), "/proc/%ld/statm", pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%llu %llu", &pages_total, &pages_res) == 2)
			*rss = (double)pages_res * (double)sysconf(_SC_PAGESIZE);
		fclose(f);
	}
	return 0;
}

/* Each process's rank, as its publisher said, and one sample of every local process
 * the monitor follows (its endpoint an ipc socket: a tcp publisher's pid is another
 * machine's). */
static void
sample_procs(const mate_monitor *m)
{
	static double hz;
	mate_publisher_info pi;
	double now = mate_fe_mono_seconds(), ticks, rss;

	if (hz <= 0)
		hz = sysconf(_SC_CLK_TCK) > 0 ? (double)sysconf(_SC_CLK_TCK) : 100;
	for (int i = 0; i < mate_monitor_publishers(m); i++) {
		struct pstat *ps;
		if (mate_monitor_publisher(m, i, &pi) != 0 || pi.pid <= 0 || pi.ended)
			continue;
		long key = proc_key(m, i, pi.pid);
		if ((ps = pstat_of(key)) == NULL) {
			if (npstats == MAX_PSTAT)
				continue;
			ps = &pstats[npstats++];
			memset(ps, 0, sizeof(*ps));
			ps->pid = key;
			ps->cpu = ps->rss = -1;
			ps->uid = -1;
		}
		ps->rank = pi.rank;
		ps->world = pi.world;
		if (strncmp(pi.endpoint, "ipc://", 6) != 0 || KEY_HOST(key) != 0)
			continue;       /* another machine's pid: no /proc figures */
		if (ps->uid < 0) {
			char path[64];
			struct stat st;

			snprintf(path, sizeof(path), "/proc/%ld", pi.pid);
			if (stat(path, &st) == 0)
				ps->uid = (long)st.st_uid;
		}
		if (read_proc(pi.pid, &ticks, &rss) != 0) {
			ps->cpu = -1;
			continue;
		}
		if (ps->seen && now - ps->at > 0.05)
			ps->cpu = (ticks - ps->ticks) / hz / (now - ps->at);
		ps->ticks = ticks;
		ps->at = now;
		ps->rss = rss;
		ps->seen = 1;
	}
}

/* " cpu 190%  rss 12.3MB  gpu0 37% 1.2GB" of a process (empty where unknown; the GPU
 * figures where NVML is there: each device the process holds memory on). */
static void
fmt_pstat(char *out, size_t cap, long pid, int ended)
{
	const struct pstat *ps = pstat_of(pid);
	const struct top_gpu *g[4];
	char bytes[16];
	size_t len = 0;
	int ng;

	out[0] = '\0';
	if (KEY_HOST(pid) > 0)      /* the host, exited or not */
		len += (size_t)snprintf(out, cap, "host %s", hosts[KEY_HOST(pid) - 1]);
	if (ps == NULL || ended || len >= cap)
		return;
	if (ps->rank >= 0 && ps->world > 0)
		len += (size_t)snprintf(out + len, cap - len, "%srank %d/%d", len ? "  " : "",
		    ps->rank, ps->world);
	else if (ps->rank >= 0)
		len += (size_t)snprintf(out + len, cap - len, "%srank %d", len ? "  " : "", ps->rank);
	if (show_user && ps->uid >= 0 && len < cap) {
		struct passwd *pw = getpwuid((uid_t)ps->uid);

		if (pw != NULL)
			len += (size_t)snprintf(out + len, cap - len, "%suser %.32s", len ? "  " : "",
			    pw->pw_name);
		else
			len += (size_t)snprintf(out + len, cap - len, "%suser %ld", len ? "  " : "",
			    ps->uid);
	}
	if (ps->cpu >= 0 && len < cap)
		len += (size_t)snprintf(out + len, cap - len, "%scpu %.0f%%", len ? "  " : "",
		    ps->cpu * 100);
	if (ps->rss >= 0 && len < cap) {
		fmt_bytes(bytes, sizeof(bytes), ps->rss);
		len += (size_t)snprintf(out + len, cap - len, "%srss %s", len ? "  " : "", bytes);
	}
	ng = KEY_HOST(pid) == 0 ? top_nvml_of(pid, g, 4) : 0;
	for (int i = 0; i < ng && len < cap; i++) {
		fmt_bytes(bytes, sizeof(bytes), g[i]->memory);
		if (g[i]->util >= 0)
			len += (size_t)snprintf(out + len, cap - len, "%sgpu%d %d%% %s", len ? "  " : "",
			    g[i]->device, g[i]->util, bytes);
		else
			len += (size_t)snprintf(out + len, cap - len, "%sgpu%d %s", len ? "  " : "",
			    g[i]->device, bytes);
	}
}

/* ---- feeding ------------------------------------------------------------------------- */

/* Whether feeding should stop: interrupted, past the deadline, or a key
 * waiting (left for the caller to read). */
static int
time_to_stop(double deadline, int interactive)
{
	int ch;

	if (mate_fe_interrupted || mate_fe_mono_seconds() >= deadline)
		return 1;
	if (!interactive || (ch = getch()) == ERR)
		return 0;
	ungetch(ch);
	return 1;
}

/* Takes events until the deadline (monotonic seconds) or a key press, or,
 * with first, until the first event comes out (after the monitor's lag, so
 * that an interval opened then starts at its time). A flood faster
 * than mate-top reads never leaves the queue empty, so the clock and the
 * keyboard are looked at every 256 events too. */
static int
feed(mate_monitor *m, mate_activity *a, double deadline, int interactive, int first)
{
	mate_live_event le;
	mate_publisher_info pi;
	mate_error err;
	unsigned taken = 0;
	int rc;

	for (;;) {
		if ((++taken & 255) == 0 && time_to_stop(deadline, interactive))
			return 0;
		double left = deadline - mate_fe_mono_seconds();
		int wait = left <= 0 ? 0 : (int)(left * 1000) + 1;
		if ((interactive || first) && wait > 50)
			wait = 50;
		rc = mate_monitor_next(m, &le, wait, &err);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			double base = mate_monitor_base(m);
			mate_monitor_publisher(m, le.publisher, &pi);
			/* when it came, on the events' time base, as tick() reckons now */
			if (base > 0)
				mate_activity_set_now(a, real_now() - base - mate_monitor_lag(m));
			long key = proc_key(m, le.publisher, pi.pid);
			mate_activity_add(a, key, pi.program, &le);
			if (desync != NULL) {
				mate_error derr;     /* a lying rank is left out, as --desync says */
				mate_desync_event(desync, &le.ev, key, pi.rank, &derr);
			}
		}
		if (first && rc > 0)
			return 0;
		if (rc == 0 && time_to_stop(deadline, interactive))
			return 0;
	}
}

/* New verdicts on the ranks at now (the events' time): kept, the oldest dropped past
 * VERDICTS_MAX. */
static void
check_ranks(double now)
{
	mate_desync_verdict v;

	while (desync != NULL && mate_desync_check(desync, now, 0, &v) == 1) {
		char *t = strdup(v.text);

		if (t == NULL)
			return;
		if (nverdicts == VERDICTS_MAX) {
			free(verdicts[0]);
			memmove(verdicts, verdicts + 1, (VERDICTS_MAX - 1) * sizeof(*verdicts));
			nverdicts--;
		}
		verdicts[nverdicts++] = t;
	}
}

/* Closes the interval; the first call after the first event opens the
 * first one. @return whether the figures now cover a whole interval. */
static int
tick(mate_monitor *m, mate_activity *a, int *started)
{
	double base = mate_monitor_base(m);

	mate_publisher_info pi;
	double now;

	if (base <= 0)
		return 0;
	now = real_now() - base - mate_monitor_lag(m);
	/* a process killed said no DISCONNECT: its endpoint went away */
	for (int i = 0; i < mate_monitor_publishers(m); i++)
		if (mate_monitor_publisher(m, i, &pi) == 0 && pi.ended && pi.pid > 0) {
			mate_activity_end(a, proc_key(m, i, pi.pid), now);
			/* gone before its DISCONNECT came: its last events may be lost */
			if (desync != NULL && pi.rank >= 0 && mate_monitor_publisher_cut(m, i))
				mate_desync_end_cut(desync, pi.rank);
			else if (desync != NULL && pi.rank >= 0)
				mate_desync_end(desync, pi.rank);
		}
	check_ranks(now);
	sample_procs(m);
	top_nvml_sample();
	mate_activity_tick(a, now);
	if (*started)
		return 1;
	*started = 1;
	return 0;
}

/* ---- ordering ---------------------------------------------------------------------- */

static const mate_activity *sort_act;
static int sort_by, sort_rev;

static double
sort_value(const mate_worker_row *r)
{
	switch (sort_by) {
	case SORT_BUSY: return r->busy;
	case SORT_OPS: return r->ops_per_s;
	case SORT_BYTES: return r->bytes_per_s;
	default: return 0;
	}
}

/* Grouped by process; within a group by the key, ties in first-seen order. */
static int
cmp_rows(const void *pa, const void *pb)
{
	int ia = *(const int *)pa, ib = *(const int *)pb;
	mate_worker_row a, b;
	mate_process_row qa, qb;

	mate_activity_row(sort_act, ia, &a);
	mate_activity_row(sort_act, ib, &b);
	if (a.process != b.process) {
		mate_activity_process(sort_act, a.process, &qa);
		mate_activity_process(sort_act, b.process, &qb);
		return qa.pid < qb.pid ? -1 : qa.pid > qb.pid;
	}
	if (sort_by != SORT_NAME) {
		/* coarse steps keep rows from swapping on noise */
		double va = floor(sort_value(&a) * 100), vb = floor(sort_value(&b) * 100);
		if (va != vb)
			return (va > vb ? -1 : 1) * (sort_rev ? -1 : 1);
	} else {
		/* by name, numbers in names by value: worker_2 before worker_10 */
		int c = strverscmp(a.worker, b.worker);
		if (c != 0)
			return sort_rev ? -c : c;
	}
	return ia - ib;
}

static void
order_rows(const mate_activity *a, struct view *v)
{
	int n = mate_activity_rows(a);

	v->order = realloc(v->order, (size_t)(n > 0 ? n : 1) * sizeof(int));
	if (v->order == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	for (int i = 0; i < n; i++)
		v->order[i] = i;
	sort_act = a;
	sort_by = v->sort;
	sort_rev = v->reverse;
	qsort(v->order, (size_t)n, sizeof(int), cmp_rows);
	v->norder = n;
}

/* ---- batch mode -------------------------------------------------------------------- */

/* A share of the time as GT's top writes it: one decimal below 10%. */
static void
fmt_pct(char *out, size_t cap, double share)
{
	snprintf(out, cap, share < 0.0995 ? "%.1f%%" : "%.0f%%", share * 100);
}

/* The busiest ops and the idle time, as shares of the time (they add up to
 * 100% as in GT's top), "op:12% op:3.5% idle:84%"; shares under 0.5% are
 * left out. */
static void
top_ops(const mate_worker_row *r, char *out, size_t cap)
{
	char pct[16];
	size_t len = 0;

	out[0] = '\0';
	for (int k = 0; k < r->nops && k < 3 && len < cap; k++) {
		if (r->op_busy[k] < 0.005)
			break;
		fmt_pct(pct, sizeof(pct), r->op_busy[k]);
		len += (size_t)snprintf(out + len, cap - len, "%s%s:%s", k ? " " : "", r->op[k], pct);
	}
	if (1 - r->busy >= 0.005 && len < cap) {
		fmt_pct(pct, sizeof(pct), 1 - r->busy);
		snprintf(out + len, cap - len, "%sidle:%s", len ? " " : "", pct);
	}
}

/* The notes on the endpoints named (--endpoint): those silent for SILENT_S, those that
 * send what is not mate's, and each host whose clock differs from this one's. With
 * note NULL: how many; else the i-th, in note (600 bytes). */
static int
endpoint_notes(const mate_monitor *m, char *note, int want)
{
	mate_endpoint_info e;
	int n = 0;

	for (int i = 0; i < mate_monitor_endpoints(m); i++) {
		char text[600];
		int said = 0, said_moved = 0;

		if (mate_monitor_endpoint(m, i, &e) != 0)
			continue;
		for (int j = 0; j < i; j++) {
			mate_endpoint_info o;
			if (mate_monitor_endpoint(m, j, &o) != 0 || strcmp(o.host, e.host) != 0)
				continue;
			said |= o.clock_offset != 0;   /* one clock line per host */
			said_moved |= o.clock_moved > 0;
		}
		for (int k = 0; k < 4; k++) {
			text[0] = '\0';
			if (k == 0 && e.silent_for >= SILENT_S && e.frames == 0 && e.foreign == 0)
				snprintf(text, sizeof(text), "silent: %s (nothing since it was named, "
				    "%.0f s)", mate_fe_safe(e.url), e.silent_for);
			else if (k == 0 && e.silent_for >= SILENT_S && e.frames > 0)
				snprintf(text, sizeof(text), "silent: %s (nothing for %.0f s)",
				    mate_fe_safe(e.url), e.silent_for);
			else if (k == 1 && e.foreign > 0)
				snprintf(text, sizeof(text), "not mate's: %s sent %llu frame%s mate-top "
				    "cannot read", mate_fe_safe(e.url), (unsigned long long)e.foreign,
				    mate_fe_s(e.foreign));
			else if (k == 2 && e.clock_offset != 0 && !said)
				snprintf(text, sizeof(text), "clock: host %s is %.1f s %s this machine; "
				    "its times are moved by that", mate_fe_safe(e.host),
				    fabs(e.clock_offset), e.clock_offset > 0 ? "behind" : "ahead of");
			else if (k == 3 && e.clock_moved > 0 && !said_moved)
				snprintf(text, sizeof(text), "clock: host %s's clock moved by %+.1f s "
				    "since its first process; %d process%s started after keep%s its own",
				    mate_fe_safe(e.host), -e.clock_moved_by, e.clock_moved,
				    e.clock_moved == 1 ? "" : "es", e.clock_moved == 1 ? "s" : "");
			if (text[0] == '\0')
				continue;
			if (note != NULL && n == want) {
				snprintf(note, 600, "%s", text);
				return n + 1;
			}
			n++;
		}
	}
	return n;
}

static void
print_batch(mate_monitor *m, const mate_activity *a, struct view *v)
{
	mate_process_row p;
	char when[32], bytes[16], ops[160], mem[96], name[128];
	time_t now = time(NULL);
	struct tm tm;
	uint64_t drops = 0, events = 0;
	int np = mate_activity_processes(a);

	order_rows(a, v);
	for (int i = 0; i < np; i++) {
		mate_activity_process(a, i, &p);
		drops += p.dropped;
		events += p.events;
	}
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("mate-top: %s, %d process%s, %llu event%s, %llu dropped\n", when, np,
	    np == 1 ? "" : "es", (unsigned long long)events, mate_fe_s(events),
	    (unsigned long long)drops);
	printf("%-8s %-16s %-20s %6s %9s %10s %10s %s\n", "PID", "PROCESS", "WORKER", "BUSY",
	    "OPS/S", "BYTES/S", "OPS", "TOP OPS");
	for (int i = 0; i < v->norder; i++) {
		mate_worker_row r;
		mate_activity_row(a, v->order[i], &r);
		mate_activity_process(a, r.process, &p);
		fmt_bytes(bytes, sizeof(bytes), r.bytes_per_s);
		top_ops(&r, ops, sizeof(ops));
		/* blanks in a name ("thread 4711") become '_': one column each */
		snprintf(name, sizeof(name), "%s", r.worker);
		for (char *c = name; *c != '\0'; c++)
			if (isspace((unsigned char)*c))
				*c = '_';
		printf("%-8ld %-16.16s %-20s %5.1f%% %9.1f %8s/s %10llu %s\n", KEY_PID(p.pid), p.program,
		    name, r.busy * 100, r.ops_per_s, bytes, (unsigned long long)r.ops, ops);
	}
	for (int i = 0; i < np; i++) {
		char ps[160];
		mate_activity_process(a, i, &p);
		fmt_pstat(ps, sizeof(ps), p.pid, p.ended);
		if (p.ended || ps[0] != '\0')
			printf("%-8ld %-16.16s process %s%s%s\n", KEY_PID(p.pid), p.program,
			    p.ended ? "exited" : ps, p.ended && ps[0] != '\0' ? "  " : "",
			    p.ended ? ps : "");
		for (int d = 0; d < p.ndevices; d++) {
			char cur[16], peak[16];
			fmt_bytes(cur, sizeof(cur), (double)p.mem_current[d]);
			fmt_bytes(peak, sizeof(peak), (double)p.mem_peak[d]);
			snprintf(mem, sizeof(mem), "%s %s (peak %s)", p.device[d], cur, peak);
			printf("%-8ld %-16.16s memory %s\n", KEY_PID(p.pid), p.program, mem);
		}
	}
	for (int i = 0; i < nverdicts; i++)
		printf("out of step: %s\n", verdicts[i]);
	for (int i = 0; i < endpoint_notes(m, NULL, 0); i++) {
		char note[600];
		endpoint_notes(m, note, i);
		printf("%s\n", note);
	}
	printf("\n");
	/* a script reads these tables: a write that fails (a full disk, a
	 * closed pipe) ends mate-top with an error, not a silent exit 0 */
	if (fflush(stdout) != 0 || ferror(stdout))
		mate_fe_err(MATE_EXIT_FAIL, "standard output");
	(void)m;
}

/* ---- the screen ---------------------------------------------------------------------- */

/* Columns of the screen for a width: at 80 the bar keeps 18 cells and the
 * shares keep their room; BYTES/S and long worker names need 100 and 120. */
struct layout {
	int name, bar, bytes;
};

static void
layout_for(int cols, struct layout *l)
{
	int fixed, room;

	l->name = cols >= 120 ? 18 : 12;
	l->bytes = cols >= 100;
	fixed = 2 + l->name + 1 + 2 + 6 + 9 + (l->bytes ? 11 : 0) + 2;
	room = cols - fixed;
	l->bar = room * 2 / 5;
	if (l->bar < 10)
		l->bar = 10;
	if (l->bar > 50)
		l->bar = 50;
}

static short pair_of_color[512];
static short next_pair = 3;

/* A colour pair with the op's colour as background. */
static int
op_attr(const struct view *v, const char *op)
{
	uint32_t rgb = mate_op_color(op);
	int r = (rgb >> 16) & 255, g = (rgb >> 8) & 255, b = rgb & 255, c;

	if (!v->color)
		return A_REVERSE;
	if (COLORS >= 256)
		c = 16 + 36 * (r * 6 / 256) + 6 * (g * 6 / 256) + (b * 6 / 256);
	else
		c = (r > 127 ? COLOR_RED : 0) | (g > 127 ? COLOR_GREEN : 0) | (b > 127 ? COLOR_BLUE : 0);
	if (c == 0)
		c = COLOR_BLUE;
	if (c >= 512)
		return A_REVERSE;
	if (pair_of_color[c] == 0) {
		if (next_pair >= COLOR_PAIRS)
			return A_REVERSE;
		init_pair(next_pair, COLOR_BLACK, (short)c);
		pair_of_color[c] = next_pair++;
	}
	return COLOR_PAIR(pair_of_color[c]);
}

/* Without colour, each op's letter: its first letter, else another of its
 * name, else a free one; kept for the session so that no two ops share one. */
static char
op_letter(struct view *v, const char *op)
{
	static const char spare[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char c = 0;

	for (int i = 0; i < v->nletters; i++)
		if (strcmp(v->letter_op[i], op) == 0)
			return v->letter[i];
	if (v->nletters == LETTERS_MAX)
		return '#';
	for (const char *p = op; *p != '\0' && c == 0; p++) {
		char want = (char)tolower((unsigned char)*p);
		if (isalnum((unsigned char)want) && memchr(v->letter, want, (size_t)v->nletters) == NULL)
			c = want;
	}
	for (const char *p = op; *p != '\0' && c == 0; p++) {
		char want = (char)toupper((unsigned char)*p);
		if (isalpha((unsigned char)want) && memchr(v->letter, want, (size_t)v->nletters) == NULL)
			c = want;
	}
	for (const char *p = spare; *p != '\0' && c == 0; p++)
		if (memchr(v->letter, *p, (size_t)v->nletters) == NULL)
			c = *p;
	snprintf(v->letter_op[v->nletters], sizeof(v->letter_op[0]), "%s", op);
	v->letter[v->nletters++] = c;
	return c;
}

/* Idle cells: dots, dim where there is colour (GT draws them grey). */
static void
idle_cells(const struct view *v, int n)
{
	if (v->color)
		attron(A_DIM);
	for (int c = 0; c < n; c++)
		addch('.');
	if (v->color)
		attroff(A_DIM);
}

/* The bar: ops' cells by cumulative rounding, so that small shares add up
 * instead of each rounding to nothing; work of a cell's half or more shows. */
static void
draw_bar(struct view *v, const mate_worker_row *r, int width)
{
	int used = 0;
	double cum = 0;

	addch('[');
	for (int k = 0; k < r->nops && used < width; k++) {
		int end, cells, attr = op_attr(v, r->op[k]);
		cum += r->op_busy[k];
		end = (int)lround(cum * width);
		if (k == 0 && end == 0 && r->busy * width >= 0.5)
			end = 1;
		if (end > width)
			end = width;
		cells = end - used;
		for (int c = 0; c < cells; c++) {
			if (v->color) {
				attron(attr);
				addch(' ');
				attroff(attr);
			} else
				addch((chtype)(unsigned char)op_letter(v, r->op[k]));
		}
		used += cells > 0 ? cells : 0;
	}
	idle_cells(v, width - used);
	addch(']');
}

/* printw that stops at the right edge instead of wrapping onto the next line. */
static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
put(const char *fmt, ...)
{
	char buf[1024];
	int room = COLS - getcurx(stdscr);
	va_list ap;

	if (room <= 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	addnstr(buf, room);
}

/* The shares after the numbers: the busiest ops (each in its colour, or
 * with its letter), then idle, as GT's top shows them; ops that do not fit
 * give way to the idle share. */
static void
draw_shares(struct view *v, const mate_worker_row *r)
{
	char pct[16], idle[24] = "";
	int room = COLS - getcurx(stdscr), len;

	if (1 - r->busy >= 0.005) {
		fmt_pct(pct, sizeof(pct), 1 - r->busy);
		snprintf(idle, sizeof(idle), "idle %s", pct);
	}
	len = (int)strlen(idle);
	for (int k = 0; k < r->nops && k < 3; k++) {
		if (r->op_busy[k] < 0.005)
			break;
		fmt_pct(pct, sizeof(pct), r->op_busy[k]);
		/* "op pct  " in colour, "c=op pct  " without */
		int w = (int)strlen(r->op[k]) + (int)strlen(pct) + 3 + (v->color ? 0 : 2);
		if (len + w > room)
			break;
		if (v->color) {
			int attr = op_attr(v, r->op[k]);
			attron(attr);
			put("%s", r->op[k]);
			attroff(attr);
			put(" %s  ", pct);
		} else
			put("%c=%s %s  ", op_letter(v, r->op[k]), r->op[k], pct);
		len += w;
	}
	put("%s", idle);
}

/* Numbers as "564k": the first line fits 80 columns. */
static void
fmt_count(char *out, size_t cap, uint64_t n)
{
	if (n < 10000)
		snprintf(out, cap, "%llu", (unsigned long long)n);
	else if (n < 10000000)
		snprintf(out, cap, "%lluk", (unsigned long long)(n / 1000));
	else
		snprintf(out, cap, "%lluM", (unsigned long long)(n / 1000000));
}

static void
draw_header(mate_monitor *m, const mate_activity *a, const struct view *v)
{
	mate_process_row p;
	uint64_t drops = 0, events = 0;
	int np = mate_activity_processes(a), attached = 0, wide;
	char when[16], ev[24], dr[24], sort[48];
	time_t now = time(NULL);
	struct tm tm;

	for (int i = 0; i < np; i++) {
		mate_activity_process(a, i, &p);
		drops += p.dropped;
		events += p.events;
		attached += !p.ended;
	}
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	/* the long form where it fits, else short numbers and no publisher count */
	wide = COLS >= 110;
	if (wide) {
		snprintf(ev, sizeof(ev), "%llu", (unsigned long long)events);
		snprintf(dr, sizeof(dr), "%llu", (unsigned long long)drops);
	} else {
		fmt_count(ev, sizeof(ev), events);
		fmt_count(dr, sizeof(dr), drops);
	}
	snprintf(sort, sizeof(sort), "sort: %s%s%s", sort_name[v->sort],
	    v->reverse ? (wide ? " (reversed)" : " rev") : "", v->paused ? "  PAUSED" : "");
	attron(A_BOLD);
	move(0, 0);
	put("mate-top %s  %d attached", when, attached);
	if (wide)
		put(" (%d seen, %d publishers)", np, mate_monitor_publishers(m));
	put("  %s event%s", ev, mate_fe_s(events));
	attroff(A_BOLD);
	if (drops > 0) {
		attron(v->color ? COLOR_PAIR(1) | A_BOLD : A_BOLD);
		put("  %s DROPPED", dr);
		attroff(v->color ? COLOR_PAIR(1) | A_BOLD : A_BOLD);
	}
	put("  %s", sort);
	clrtoeol();
}

static void
draw_help(void)
{
	static const char *const lines[] = {
		"mate-top keys",
		"",
		"  q         quit",
		"  s         next sort key (worker, busy, ops/s, bytes/s)",
		"  r         reverse the order",
		"  p         pause / resume the display",
		"  h or ?    this help (any key closes it)",
		"  Up/Down   scroll a row",
		"  PgUp/PgDn scroll a page; Home/End",
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0]));

	/* whole lines: nothing of the table shows through */
	for (int i = 0; i < n && i + 2 < LINES; i++) {
		move(i + 2, 0);
		clrtoeol();
		put("  %s", lines[i]);
	}
	if (n + 2 < LINES) {
		move(n + 2, 0);
		clrtoeol();
	}
}

/* One text line per row of the table: process headers and workers. */
static void
draw_rows(const mate_activity *a, struct view *v)
{
	int y = 2, last_proc = -1, line = 0;
	struct layout l;
	mate_process_row p;
	char bytes[16];

	layout_for(COLS, &l);
	attron(A_REVERSE);
	move(1, 0);
	put("  %-*s %-*s %5s %8s", l.name, "WORKER", l.bar + 2, "ACTIVITY", "BUSY", "OPS/S");
	if (l.bytes)
		put(" %10s", "BYTES/S");
	put("  %s", "TOP OPS");
	clrtoeol();
	attroff(A_REVERSE);
	if (v->scroll > v->norder - 1)
		v->scroll = v->norder > 0 ? v->norder - 1 : 0;
	for (int i = 0; i < v->norder && y < LINES; i++) {
		mate_worker_row r;
		mate_activity_row(a, v->order[i], &r);
		if (r.process != last_proc) {
			last_proc = r.process;
			mate_activity_process(a, r.process, &p);
			if (line++ >= v->scroll && y < LINES) {
				move(y++, 0);
				attron(A_BOLD);
				char ps[160];
				fmt_pstat(ps, sizeof(ps), p.pid, p.ended);
				put("%ld %s%s  %s%sevents %llu  dropped %llu", KEY_PID(p.pid), p.program,
				    p.ended ? " (exited)" : "", ps, ps[0] != '\0' ? "  " : "",
				    (unsigned long long)p.events, (unsigned long long)p.dropped);
				for (int d = 0; d < p.ndevices; d++) {
					char cur[16], peak[16];
					fmt_bytes(cur, sizeof(cur), (double)p.mem_current[d]);
					fmt_bytes(peak, sizeof(peak), (double)p.mem_peak[d]);
					put("  %s %s (peak %s)", p.device[d], cur, peak);
				}
				attroff(A_BOLD);
				clrtoeol();
			}
		}
		if (line++ < v->scroll || y >= LINES)
			continue;
		move(y++, 0);
		put("  %-*.*s ", l.name, l.name, r.worker);
		if (COLS - getcurx(stdscr) > l.bar + 2)
			draw_bar(v, &r, l.bar);
		put(" %4.0f%% %8.1f", r.busy * 100, r.ops_per_s);
		if (l.bytes) {
			fmt_bytes(bytes, sizeof(bytes), r.bytes_per_s);
			put(" %8s/s", bytes);
		}
		put("  ");
		draw_shares(v, &r);
		clrtoeol();
	}
	if (v->norder == 0 && y < LINES)
		move(y++, 2), put("waiting for events (MATE_MONITOR=1 MATE_LOGLEVEL=1 in the program)");
	move(y, 0);
	clrtobot();
}

static void
draw(mate_monitor *m, const mate_activity *a, struct view *v)
{
	int notes = endpoint_notes(m, NULL, 0), y = LINES - 1;

	order_rows(a, v);
	draw_header(m, a, v);
	draw_rows(a, v);
	/* the endpoints' notes above the last line's verdict, as many as fit below the
	 * header and a row */
	for (int i = notes - 1; i >= 0 && y - (nverdicts > 0) > 3; i--, y--) {
		char note[600];
		endpoint_notes(m, note, i);
		move(y - (nverdicts > 0), 0);
		put("%s", note);
		clrtoeol();
	}
	if (nverdicts > 0 && LINES > 3) {    /* the newest, on the last line */
		move(LINES - 1, 0);
		attron(v->color ? COLOR_PAIR(1) | A_BOLD : A_REVERSE);
		put("out of step: %s", verdicts[nverdicts - 1]);
		attroff(v->color ? COLOR_PAIR(1) | A_BOLD : A_REVERSE);
		clrtoeol();
	}
	if (v->help)
		draw_help();
	refresh();
}

/* @return 1 to quit. */
static int
handle_key(int ch, struct view *v)
{
	int page = LINES > 4 ? LINES - 3 : 1;

	if (v->help && ch != ERR && ch != KEY_RESIZE) {
		v->help = 0;
		return 0;
	}
	switch (ch) {
	case 'q': case 'Q': return 1;
	case 's': v->sort = (v->sort + 1) % SORT_COUNT; break;
	case 'r': v->reverse = !v->reverse; break;
	case 'p': case ' ': v->paused = !v->paused; break;
	case 'h': case '?': v->help = 1; break;
	case KEY_UP: case 'k': v->scroll = v->scroll > 0 ? v->scroll - 1 : 0; break;
	case KEY_DOWN: case 'j': v->scroll++; break;
	case KEY_PPAGE: v->scroll = v->scroll > page ? v->scroll - page : 0; break;
	case KEY_NPAGE: v->scroll += page; break;
	case KEY_HOME: v->scroll = 0; break;
	case KEY_END: v->scroll = 1 << 30; break;
	case KEY_RESIZE: clear(); break;
	default: break;
	}
	return 0;
}

static void
screen_start(struct view *v, const struct options *o)
{
	setlocale(LC_ALL, "");
	if (initscr() == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "cannot start the terminal screen");
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	v->color = !o->ascii && mate_fe_use_color(stdout) && has_colors();
	if (v->color) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_RED, -1);
	}
}

/* With --pid or --endpoint: every process followed has ended (or, never
 * seen, is gone). */
static int
followed_gone(const mate_monitor *m, const struct options *o, double t0, int *told)
{
	return mate_fe_follow_all_ended(m, &o->follow) ||
	    mate_fe_follow_pids_gone(m, &o->follow, mate_fe_mono_seconds() - t0, told);
}

static void
say_gone(const struct options *o)
{
	mate_fe_warnx("%s followed ended", o->follow.npids + o->follow.nendpoints == 1 ?
	    "the process" : "every process");
}

static void
run_interactive(mate_monitor *m, mate_activity *a, const struct options *o, struct view *v)
{
	double next = mate_fe_mono_seconds(), t0 = next;
	long long done = 0;
	int started = 0, told = 0, gone = 0;

	screen_start(v, o);
	draw(m, a, v);
	while (!mate_fe_interrupted) {
		int ch, quit = 0, redraw = 0;
		if (feed(m, a, next, 1, !started) < 0)
			break;
		while ((ch = getch()) != ERR) {
			quit |= handle_key(ch, v);
			redraw = 1;
		}
		if (quit)
			break;
		if (!started && mate_monitor_base(m) > 0) {
			tick(m, a, &started);   /* the first interval starts with the first event */
			next = mate_fe_mono_seconds() + o->delay;
		} else if (mate_fe_mono_seconds() >= next) {
			tick(m, a, &started);
			next += o->delay;
			if (next < mate_fe_mono_seconds())
				next = mate_fe_mono_seconds() + o->delay;
			redraw = !v->paused;
			if (o->iterations >= 0 && ++done >= o->iterations)
				break;
			if ((gone = followed_gone(m, o, t0, &told)) != 0)
				break;
		}
		if (redraw)
			draw(m, a, v);
	}
	endwin();
	if (gone)
		say_gone(o);
}

/* A table every delay. The first interval starts with the first event and
 * its table comes a whole interval later: a script that reads one table
 * (-n 1) gets real figures, not the zeros of an interval never seen. */
static void
run_batch(mate_monitor *m, mate_activity *a, const struct options *o, struct view *v)
{
	double next = mate_fe_mono_seconds() + o->delay, t0 = mate_fe_mono_seconds();
	long long done = 0;
	int started = 0, told = 0;

	while (!mate_fe_interrupted && (o->iterations < 0 || done < o->iterations)) {
		if (feed(m, a, next, 0, !started) < 0 || mate_fe_interrupted)
			break;
		if (!started && mate_monitor_base(m) > 0) {
			tick(m, a, &started);
			next = mate_fe_mono_seconds() + o->delay;
			continue;
		}
		tick(m, a, &started);
		print_batch(m, a, v);
		done++;
		next += o->delay;
		if (followed_gone(m, o, t0, &told)) {
			say_gone(o);
			break;
		}
	}
}

int
main(int argc, char **argv)
{
	struct options o;
	struct view v;
	mate_monitor *m;
	mate_activity *a;

	mate_fe_set_progname(argv[0]);
	parse_options(argc, argv, &o);
	memset(&v, 0, sizeof(v));
	/* 0: failing to watch local publishers is no error for mate-top */
	m = mate_fe_follow_open(&o.follow, 0);
	if (o.all) {
		mate_error err;
		int unreadable = 0;

		show_user = 1;
		if (mate_monitor_watch_all_users(m, &unreadable, &err) != MATE_OK)
			mate_fe_errx(MATE_EXIT_FAIL, "%s", err.message);
		if (unreadable > 0)
			mate_fe_warnx("--all: %d other %s cannot be read (only root can): their "
			    "processes are not shown", unreadable, unreadable == 1 ? "user's folder" :
			    "users' folders");
	}
	if ((a = mate_activity_new(o.smooth)) == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	mate_activity_set_linger(a, o.linger);
	desync = mate_desync_new();    /* NULL (out of memory): no ranks verdicts */
	top_nvml_open();   /* GPU columns where NVML is there */
	mate_fe_catch_interrupts();
	if (o.batch)
		run_batch(m, a, &o, &v);
	else
		run_interactive(m, a, &o, &v);
	free(v.order);
	mate_activity_free(a);
	mate_desync_free(desync);
	for (int i = 0; i < nverdicts; i++)
		free(verdicts[i]);
	mate_monitor_free(m);
	mate_fe_follow_free(&o.follow);
	return MATE_EXIT_OK;
}
