/* fe.c: progname, err(3)-style messages, terminal checks and option parsing for mate's tools. */
#include "config.h"
#include "fe.h"
#include "mate_core.h"
#include "mate_events.h"
#include "mate_replay.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>


static const char *progname = "mate";

/* Standard output and error into one file (`2>&1 | cat`): stdout goes line by line, so that
 * a warning or summary on stderr never lands inside a line still in stdout's buffer. Each
 * tool calls this (through mate_fe_set_progname()) before it prints anything. */
static void
same_output(void)
{
	struct stat so, se;

	if (fstat(STDOUT_FILENO, &so) == 0 && fstat(STDERR_FILENO, &se) == 0 &&
	    so.st_dev == se.st_dev && so.st_ino == se.st_ino && !isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOLBF, 0);
}

void
mate_fe_set_progname(const char *argv0)
{
	const char *slash;

	opterr = 0;     /* mate_fe_bad_option() says it once, with this name */
	same_output();
	if (argv0 == NULL || *argv0 == '\0')
		return;
	slash = strrchr(argv0, '/');
	progname = slash != NULL ? slash + 1 : argv0;
	/* libtool's uninstalled program runs as .libs/lt-NAME */
	if (slash != NULL && slash - argv0 >= 5 && strncmp(slash - 5, ".libs", 5) == 0 &&
	    strncmp(progname, "lt-", 3) == 0 && progname[3] != '\0')
		progname += 3;
}

const char *
mate_fe_progname(void)
{
	return progname;
}

/* "progname: message[: strerror(e)]\n", the message escaped (mate_fe_safe):
 * names from dumps and streams cannot forge a line or drive the terminal. */
static void
vmessage(const char *fmt, va_list ap, int e)
{
	char *text = NULL;

	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	fprintf(stderr, "%s: %s", progname, text != NULL ? mate_fe_safe(text) : fmt);
	if (e >= 0)
		fprintf(stderr, ": %s", strerror(e));
	fputc('\n', stderr);
	free(text);
}

static void
vwarnx(const char *fmt, va_list ap)
{
	vmessage(fmt, ap, -1);
}

void
mate_fe_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx(fmt, ap);
	va_end(ap);
}

void
mate_fe_warn(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap, e);
	va_end(ap);
}

void
mate_fe_err(int status, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap, e);
	va_end(ap);
	exit(status);
}

void
mate_fe_errx(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx(fmt, ap);
	va_end(ap);
	exit(status);
}

void
mate_fe_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", progname);
	exit(MATE_EXIT_USAGE);
}

void
mate_fe_bad_option(char *const argv[], const char *optstring)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	const char *p;

	if (optopt == 0)        /* an unknown (or ambiguous) long option */
		mate_fe_usage_error("unknown option '%s'", arg);
	if (strncmp(arg, "--", 2) == 0)
		mate_fe_usage_error(strchr(arg, '=') != NULL ? "option '%.*s' takes no value" :
		    "option '%.*s' needs a value", (int)strcspn(arg, "="), arg);
	if (optopt < 256 && (p = strchr(optstring, optopt)) != NULL && p[1] == ':')
		mate_fe_usage_error("option '-%c' needs a value", optopt);
	if (optopt > 0 && optopt < 256 && isgraph(optopt))
		mate_fe_usage_error("unknown option '-%c'", optopt);
	mate_fe_usage_error("unknown option '%s'", arg);
}

int
mate_fe_getopt(int argc, char *argv[], const char *optstring, const struct option *longopts,
    void (*usage)(void))
{
	int c = getopt_long(argc, argv, optstring, longopts, NULL);

	switch (c) {
	case 'h':
		usage();
		exit(MATE_EXIT_OK);
	case 'V':
		mate_fe_print_version();
		exit(MATE_EXIT_OK);
	case '?':
		mate_fe_bad_option(argv, optstring);
	default:
		return c;
	}
}

const char *
mate_fe_s(unsigned long long n)
{
	return n == 1 ? "" : "s";
}

const char *
mate_fe_grouped(unsigned long long n, char *buf, size_t cap)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%llu", n), o = 0;

	if (cap == 0)
		return buf;
	for (int i = 0; i < len && (size_t)o + 2 < cap; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

void
mate_fe_print_version(void)
{
	printf("%s (mate) %s\nlibmate %s\n", progname, PACKAGE_VERSION, mate_version_string());
}

int
mate_fe_use_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	if (nc != NULL && *nc != '\0')
		return 0;
	if (term != NULL && strcmp(term, "dumb") == 0)
		return 0;
	return isatty(fileno(f));
}

int
mate_fe_use_utf8(FILE *f)
{
	const char *cs;

	if (!isatty(fileno(f)))
		return 0;
	setlocale(LC_CTYPE, "");
	cs = nl_langinfo(CODESET);
	return cs != NULL && strcmp(cs, "UTF-8") == 0;
}

/* Whether all of arg is one decimal integer (strtoll: leading white space
 * allowed) that fits, into *v. */
static int
whole_integer(const char *arg, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(arg, &end, 10);
	return errno == 0 && end != arg && *end == '\0';
}

/* The same for a number as strtod() reads it (NaN and infinities too). */
static int
whole_number(const char *arg, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(arg, &end);
	return errno == 0 && end != arg && *end == '\0';
}

long long
mate_fe_parse_count(const char *opt, const char *arg)
{
	long long v;

	if (!whole_integer(arg, &v) || v < 0)
		mate_fe_usage_error("bad value for %s: '%s' (want a non-negative integer)", opt, arg);
	return v;
}

double
mate_fe_parse_double(const char *opt, const char *arg)
{
	double v;

	if (!whole_number(arg, &v) || v != v)
		mate_fe_usage_error("bad value for %s: '%s' (want a number)", opt, arg);
	return v;
}

double
mate_fe_opt_double(const char *opt, const char *arg, double lo, double hi)
{
	double v;

	if (isspace((unsigned char)*arg) || !whole_number(arg, &v) || !isfinite(v) ||
	    v < lo || v > hi)
		mate_fe_usage_error("%s: '%s': expected a number from %g to %g", opt, arg, lo, hi);
	return v;
}

long
mate_fe_opt_long(const char *opt, const char *arg, long lo, long hi)
{
	long long v;

	if (isspace((unsigned char)*arg) || !whole_integer(arg, &v) || v < lo || v > hi)
		mate_fe_usage_error("%s: '%s': expected a whole number from %ld to %ld", opt, arg, lo, hi);
	return (long)v;
}

/* Digits only ("007" is 7), at most 9 of them, into *v; @return the end, or NULL. */
static const char *
shard_number(const char *p, unsigned long *v)
{
	size_t n = 0;

	for (*v = 0; p[n] >= '0' && p[n] <= '9'; n++) {
		if (n == 9)
			return NULL;
		*v = *v * 10 + (unsigned long)(p[n] - '0');
	}
	return n > 0 ? p + n : NULL;
}

void
mate_fe_opt_shard(const char *opt, const char *arg, struct mate_fe_shard *s)
{
	const char *p = shard_number(arg, &s->k);

	if (p == NULL || *p != '/' || (p = shard_number(p + 1, &s->n)) == NULL || *p != '\0' ||
	    s->n == 0 || s->n > MATE_FE_SHARD_MAX || s->k >= s->n)
		mate_fe_usage_error("bad value for %s: '%s' (want K/N, share K of N: 0 <= K < N <= %d)",
		    opt, arg, MATE_FE_SHARD_MAX);
}

uint64_t
mate_fe_fnv1a64(const void *p, size_t n, uint64_t h)
{
	return mate_fnv1a(p, n, h, MATE_FNV1A64_PRIME);
}

double
mate_fe_mono_seconds(void)
{
	return mate_mono_seconds();
}

double
mate_fe_real_seconds(void)
{
	return mate_clock_seconds(CLOCK_REALTIME);
}

unsigned long
mate_fe_shard_of(const char *name, unsigned long n)
{
	return (unsigned long)(mate_fe_fnv1a64(name, strlen(name), MATE_FE_FNV1A64_BASIS) % n);
}

int
mate_fe_shard_has(const struct mate_fe_shard *s, const char *name)
{
	return s->n == 0 || mate_fe_shard_of(name, s->n) == s->k;
}

long
mate_fe_opt_pid(const char *arg)
{
	long pid = (long)mate_fe_parse_count("--pid", arg);

	if (pid <= 0)
		mate_fe_usage_error("bad value for --pid: '%s'", arg);
	return pid;
}

void *
mate_fe_grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n + 1) * size);

	if (q == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
	return q;
}

const char *
mate_fe_human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

const char *
mate_fe_duration(double s, char *buf, size_t len)
{
	if (s < 1e-3)
		snprintf(buf, len, "%.3g us", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.3g ms", s * 1e3);
	else
		snprintf(buf, len, "%.3g s", s);
	return buf;
}

int
mate_fe_opt_device(const char *arg)
{
	if (strcmp(arg, "cpu") == 0)
		return MATE_REPLAY_DEVICE_CPU;
	if (strcmp(arg, "cuda") == 0)
		return MATE_REPLAY_DEVICE_CUDA;
	if (strcmp(arg, "auto") == 0)
		return MATE_REPLAY_DEVICE_AUTO;
	mate_fe_usage_error("bad value for --device: %s (cpu, cuda or auto)", arg);
}

const char *
mate_fe_extension(const char *path, char *buf, size_t cap)
{
	const char *base = strrchr(path, '/'), *dot;
	size_t i, n;

	base = base != NULL ? base + 1 : path;
	dot = strrchr(base, '.');
	if (dot != NULL && dot > base && strcasecmp(dot, ".gz") == 0) {
		const char *p = dot - 1;
		while (p > base && *p != '.')
			p--;
		if (*p == '.' && p > base)
			dot = p;
	}
	if (cap == 0)
		return buf;
	if (dot == NULL || dot == base) {
		buf[0] = '\0';
		return buf;
	}
	n = strlen(dot + 1);
	for (i = 0; i < n && i + 1 < cap; i++)
		buf[i] = (char)tolower((unsigned char)dot[1 + i]);
	buf[i] = '\0';
	return buf;
}

void
mate_fe_check_memory_cap(void)
{
	const char *s = getenv("MATE_MAX_MEMORY");
	uint64_t v;

	if (s != NULL && mate_size_parse(s, &v) != MATE_OK)
		mate_fe_warnx("bad MATE_MAX_MEMORY value '%s' (a size such as 512M or 4G); "
		    "using %llu MiB", s, (unsigned long long)(mate_memory_cap() >> 20));
}

uint64_t
mate_fe_opt_size(const char *opt, const char *arg)
{
	uint64_t v;

	if (mate_size_parse(arg, &v) != MATE_OK)
		mate_fe_usage_error("bad value for %s: %s (a size such as 512M or 4G)", opt, arg);
	return v;
}

int
mate_fe_open_special(const char *path)
{
	struct stat sb;
	int fd;

	if (stat(path, &sb) != 0 || !(S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode))) {
		errno = 0;
		return -1;
	}
	if ((fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC)) < 0)
		return -1;
	/* replaced by a regular file since the stat(): write that as a new file */
	if (fstat(fd, &sb) == 0 && !(S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode))) {
		close(fd);
		errno = 0;
		return -1;
	}
	return fd;
}

const char *
mate_fe_safe(const char *s)
{
	static char *ring[8];
	static unsigned next;
	char **slot = &ring[next++ % 8];
	const char *p;

	if (s == NULL)
		return "(null)";
	for (p = s; *p >= 0x20 && *p < 0x7f && *p != '\\'; p++)
		;
	if (*p == '\0')  /* printable ASCII, no backslash: escaping keeps it as it is */
		return s;
	free(*slot);
	if ((*slot = mate_text_escape(s, strlen(s))) == NULL)
		return "(out of memory)";
	return *slot;
}

/* --endpoints FILE: a URL a line; blanks around it, blank lines and '#' comments
 * are skipped. */
static void
follow_file(struct mate_fe_follow *f, const char *path)
{
	FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char line[1024];
	int n = 0, lineno = 0;

	if (in == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "--endpoints %s: %s", mate_fe_safe(path),
		    strerror(errno));
	while (fgets(line, sizeof(line), in) != NULL) {
		char *s = line, *e;
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(in))
			mate_fe_errx(MATE_EXIT_USAGE, "--endpoints %s:%d: a line of more than %zu "
			    "characters", mate_fe_safe(path), lineno, sizeof(line) - 2);
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (*s == '\0' || *s == '#')
			continue;
		if (strncmp(s, "tcp://", 6) != 0 && strncmp(s, "ipc://", 6) != 0)
			mate_fe_errx(MATE_EXIT_USAGE, "--endpoints %s:%d: '%s' is not a tcp:// or "
			    "ipc:// endpoint", mate_fe_safe(path), lineno, mate_fe_safe(s));
		f->owned = mate_fe_grow(f->owned, (size_t)f->nowned, sizeof(*f->owned));
		if ((f->owned[f->nowned] = strdup(s)) == NULL)
			mate_fe_errx(MATE_EXIT_FAIL, "out of memory");
		f->endpoints = mate_fe_grow(f->endpoints, (size_t)f->nendpoints,
		    sizeof(*f->endpoints));
		f->endpoints[f->nendpoints++] = f->owned[f->nowned++];
		n++;
	}
	if (ferror(in))
		mate_fe_errx(MATE_EXIT_USAGE, "--endpoints %s: %s", mate_fe_safe(path),
		    strerror(errno));
	if (in != stdin)
		fclose(in);
	if (n == 0)
		mate_fe_errx(MATE_EXIT_USAGE, "--endpoints %s: no endpoint in it",
		    mate_fe_safe(path));
}

void
mate_fe_follow_option(struct mate_fe_follow *f, int c, const char *arg)
{
	if (c == MATE_FE_OPT_PID) {
		f->pids = mate_fe_grow(f->pids, (size_t)f->npids, sizeof(*f->pids));
		f->pids[f->npids++] = mate_fe_opt_pid(arg);
	} else if (c == MATE_FE_OPT_ENDPOINT) {
		f->endpoints = mate_fe_grow(f->endpoints, (size_t)f->nendpoints,
		    sizeof(*f->endpoints));
		f->endpoints[f->nendpoints++] = arg;
	} else
		follow_file(f, arg);
}

mate_monitor *
mate_fe_follow_open(const struct mate_fe_follow *f, int local_required)
{
	mate_monitor *m;
	mate_error err;

	if ((m = mate_monitor_new(&err)) == NULL)
		mate_fe_errx(MATE_EXIT_FAIL, "%s", err.message);
	if (mate_monitor_warning(m) != NULL)
		mate_fe_warnx("%s", mate_monitor_warning(m));
	for (int i = 0; i < f->npids; i++)
		if (mate_monitor_add_pid(m, f->pids[i], &err) != MATE_OK)
			mate_fe_errx(MATE_EXIT_FAIL, "%s", err.message);
	for (int i = 0; i < f->nendpoints; i++)
		if (mate_monitor_add_endpoint(m, f->endpoints[i], &err) != MATE_OK)
			mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
	if (f->npids == 0 && f->nendpoints == 0 && mate_monitor_watch_local(m, &err) != MATE_OK &&
	    local_required)
		mate_fe_errx(MATE_EXIT_FAIL, "%s", err.message);
	return m;
}

void
mate_fe_follow_free(struct mate_fe_follow *f)
{
	free(f->pids);
	free(f->endpoints);
	for (int i = 0; i < f->nowned; i++)
		free(f->owned[i]);
	free(f->owned);
	f->pids = NULL;
	f->endpoints = NULL;
	f->owned = NULL;
	f->npids = f->nendpoints = f->nowned = 0;
}

int
mate_fe_follow_all_ended(const mate_monitor *m, const struct mate_fe_follow *f)
{
	mate_publisher_info pi;
	int n = mate_monitor_publishers(m), seen = 0;

	if (f->npids == 0 && f->nendpoints == 0)
		return 0;
	for (int i = 0; i < n; i++) {
		mate_monitor_publisher(m, i, &pi);
		if (pi.events > 0)
			seen++;
		if (!pi.ended)
			return 0;
	}
	return seen > 0 && seen >= f->npids;
}

int
mate_fe_follow_pids_gone(const mate_monitor *m, const struct mate_fe_follow *f, double waited,
    int *told)
{
	mate_publisher_info pi;
	int gone = 0;

	for (int i = 0; i < f->npids; i++) {
		int found = 0;
		for (int k = 0; k < mate_monitor_publishers(m) && !found; k++)
			found = mate_monitor_publisher(m, k, &pi) == 0 && pi.pid == f->pids[i];
		if (found)
			continue;
		if (kill((pid_t)f->pids[i], 0) != 0 && errno == ESRCH) {
			gone++;
			continue;
		}
		if (waited >= 1 && !*told) {
			mate_fe_warnx("pid %ld publishes no events (is it run with MATE_MONITOR=1?); "
			    "waiting", f->pids[i]);
			*told = 1;
		}
	}
	return f->npids > 0 && gone == f->npids && f->nendpoints == 0;
}

volatile sig_atomic_t mate_fe_interrupted;

static void
on_interrupt(int sig)
{
	(void)sig;
	mate_fe_interrupted = 1;
}

void
mate_fe_catch_interrupts(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* ---- progress ---------------------------------------------------------------------------- */

void
mate_fe_progress_start(struct mate_fe_progress *p, const char *what, uint64_t total, int quiet)
{
	const char *after = getenv("MATE_PROGRESS_AFTER");

	memset(p, 0, sizeof(*p));
	p->what = what;
	p->total = total;
	p->on = !quiet && total > 0 && isatty(STDERR_FILENO);
	p->t0 = mate_mono_seconds();
	p->after = after != NULL && *after != '\0' ? atof(after) : 0.5;
}

void
mate_fe_progress_step(struct mate_fe_progress *p, uint64_t done)
{
	char a[32], b[32], left[48] = "";
	double now, rate;

	p->done = done;
	if (!p->on || (now = mate_mono_seconds()) - p->t0 < p->after ||
	    (p->shown && now - p->last < 0.2))
		return;
	p->last = now;
	rate = now > p->t0 ? (double)done / (now - p->t0) : 0;
	if (rate > 0 && done < p->total)
		snprintf(left, sizeof(left), ", %.0f s left", (double)(p->total - done) / rate);
	fprintf(stderr, "\r\033[K%s: %s %s/%s (%.0f%%), %.0f/s%s", progname, p->what,
	    mate_fe_grouped(done, a, sizeof(a)), mate_fe_grouped(p->total, b, sizeof(b)),
	    100.0 * (double)done / (double)p->total, rate, left);
	fflush(stderr);
	p->shown = 1;
}

void
mate_fe_progress_clear(struct mate_fe_progress *p)
{
	if (!p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = 0;
}

void
mate_fe_progress_end(struct mate_fe_progress *p)
{
	mate_fe_progress_clear(p);
	p->on = 0;
}
