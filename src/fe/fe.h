/* fe.h: helpers shared by mate's command-line frontends (not installed), like libarchive_fe. */
#ifndef MATE_FE_H_INCLUDED
#define MATE_FE_H_INCLUDED

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses shared by the tools (documented in each man page). */
enum {
	MATE_EXIT_OK = 0,
	MATE_EXIT_FAIL = 1,    /* the tool ran and found problems */
	MATE_EXIT_USAGE = 2    /* usage error or unreadable input */
};

/* Sets the program name used in messages (basename of argv0, less libtool's
 * .libs/lt- prefix) and turns getopt's messages off (opterr). */
void mate_fe_set_progname(const char *argv0);
const char *mate_fe_progname(void);

/* "progname: message\n" on stderr (warnx style). */
void mate_fe_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, then exit(status) (errx style). */
void mate_fe_errx(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* "progname: message\nTry 'progname --help'.\n" then exit(2). */
void mate_fe_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* After getopt_long() returned '?' (mate_fe_set_progname() turns getopt's
 * own message off): one line naming the unknown option or the one that
 * lacks its value, the --help hint, exit(2). */
void mate_fe_bad_option(char *const argv[], const char *optstring) __attribute__((noreturn));
/* getopt_long() for a tool's options, with what every tool does the
 * same way: -h/--help prints usage() and exits 0, -V/--version prints the
 * version and exits 0, an unknown option or one that lacks its value is
 * mate_fe_bad_option(). Returns the other options' values, -1 at the end.
 * longopts ends with MATE_FE_LONGOPTS_END. */
struct option;
int mate_fe_getopt(int argc, char *argv[], const char *optstring,
    const struct option *longopts, void (*usage)(void));
#define MATE_FE_LONGOPTS_END \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }, \
	{ NULL, 0, NULL, 0 }
/* "s" unless n is 1, for counts in messages: "%llu event%s", n, mate_fe_s(n). */
const char *mate_fe_s(unsigned long long n);
/* n with a comma every three digits ("9,876"), into buf of cap bytes (32 hold any). */
const char *mate_fe_grouped(unsigned long long n, char *buf, size_t cap);
/* Prints "progname (mate) X.Y.Z" and "libmate X.Y.Z" lines to stdout. */
void mate_fe_print_version(void);

/* --shard K/N: a stable share of a set of dumps, by name (Slurm array tasks, GNU
 * parallel jobs). n is 0 when not given. */
#define MATE_FE_SHARD_MAX 1000000
struct mate_fe_shard {
	unsigned long k, n;
};
/* Parses opt's argument "K/N" (0 <= K < N <= MATE_FE_SHARD_MAX, decimal digits
 * only) into *s; anything else is a usage error. */
void mate_fe_opt_shard(const char *opt, const char *arg, struct mate_fe_shard *s);
/* The share a dump named name (a directory's last component) falls in:
 * FNV-1a 64 of the name, mod n. The same on every machine and whatever
 * order the directory is read in. */
unsigned long mate_fe_shard_of(const char *name, unsigned long n);
/* FNV-1a 64 of p[0..n), going on from h (MATE_FE_FNV1A64_BASIS to start). */
#define MATE_FE_FNV1A64_BASIS 14695981039346656037ULL
uint64_t mate_fe_fnv1a64(const void *p, size_t n, uint64_t h);
/* Whether the dump named name is in s's share (always, when s->n is 0). */
int mate_fe_shard_has(const struct mate_fe_shard *s, const char *name);

/* Seconds of the monotonic clock (for intervals and deadlines) and of the wall clock
 * (seconds since the epoch, as live events' times are), as libmate reads them. */
double mate_fe_mono_seconds(void);
double mate_fe_real_seconds(void);

/* Whether colour may be used on f: a terminal and NO_COLOR unset. */
int mate_fe_use_color(FILE *f);
/* Whether f is a terminal with a UTF-8 locale (for emoji and symbols). */
int mate_fe_use_utf8(FILE *f);

/* Progress of long work on a terminal: "progname: WHAT 1,204/9,876 (12%), 350/s, 25 s
 * left", one line on standard error, redrawn at most five times a second, from half a
 * second in (MATE_PROGRESS_AFTER=SECONDS changes that), and erased at the end. Nothing at
 * all when standard error is not a terminal, or quiet. A tool printing lines on the same
 * terminal erases it first (mate_fe_progress_clear()); the next step redraws it. */
struct mate_fe_progress {
	const char *what;
	uint64_t total, done;
	double t0, last, after;
	int on, shown;
};
void mate_fe_progress_start(struct mate_fe_progress *p, const char *what, uint64_t total,
    int quiet);
void mate_fe_progress_step(struct mate_fe_progress *p, uint64_t done);
void mate_fe_progress_clear(struct mate_fe_progress *p);
void mate_fe_progress_end(struct mate_fe_progress *p);

/* "progname: message: strerror(errno)" (warn), and the same then exit. */
void mate_fe_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mate_fe_err(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Parses a non-negative decimal (or a float for the _double form) option
 * argument; on error prints "progname: bad value for OPT: ARG" and exits 2. */
long long mate_fe_parse_count(const char *opt, const char *arg);
double mate_fe_parse_double(const char *opt, const char *arg);
/* The same with a range [lo, hi]; a finite value is required. */
double mate_fe_opt_double(const char *opt, const char *arg, double lo, double hi);
long mate_fe_opt_long(const char *opt, const char *arg, long lo, long hi);

/* Warns once when MATE_MAX_MEMORY is set to something that is not a size
 * (the library then uses its default). */
void mate_fe_check_memory_cap(void);
/* A size option argument (mate_size_parse()); a bad one is a usage error. */
uint64_t mate_fe_opt_size(const char *opt, const char *arg);

/* --pid's argument: a process id above 0; else "bad value for --pid: 'ARG'"
 * and exit(2). */
long mate_fe_opt_pid(const char *arg);
/* p (n elements of size bytes) reallocated for n + 1; out of memory is
 * "progname: out of memory" and exit(1). */
void *mate_fe_grow(void *p, size_t n, size_t size);

/* b bytes for a person: "512 B", "1.5 MiB" (binary units up to TiB, one
 * decimal). Returns buf. */
const char *mate_fe_human_bytes(uint64_t b, char *buf, size_t len);

/* s seconds for a person: "12.3 us", "4.56 ms", "1.23 s" (three
 * significant digits). Returns buf. */
const char *mate_fe_duration(double s, char *buf, size_t len);

/* --device's argument: cpu, cuda or auto, as MATE_REPLAY_DEVICE_*; anything
 * else is a usage error. */
int mate_fe_opt_device(const char *arg);

/* The extension of path after its last '.', lower-cased into buf ("" if
 * none); ".gz" is looked through: "a.json.gz" gives "json.gz". */
const char *mate_fe_extension(const char *path, char *buf, size_t cap);

/* s as a person may read it on a terminal or in a line-based report:
 * mate_text_escape()'d, so a name with a newline or ESC cannot forge a
 * line or drive the terminal. NULL gives "(null)". The result lives until
 * the eighth call after this one (so that one printf can take several);
 * for one thread, the one that prints. */
const char *mate_fe_safe(const char *s);

/* For an output named path: when it is a FIFO or character device (also
 * through a symlink: /dev/stdout, /dev/null), the descriptor to write into
 * it, opened without truncation, as '-o -' writes stdout; -1 with errno 0
 * when it is anything else (the caller writes a new file atomically), -1
 * with errno set when it cannot be opened. */
int mate_fe_open_special(const char *path);

/* ---- the processes a live tool follows (mate-top, mate-trace) ---------- */

/* --pid, --endpoint and --endpoints, each repeatable; none: every local publisher. */
struct mate_fe_follow {
	long *pids;
	int npids;
	const char **endpoints;
	int nendpoints;
	char **owned;          /* the endpoints read from files */
	int nowned;
};
/* getopt_long()'s values for them, above any other option's. */
enum { MATE_FE_OPT_PID = 0x1000, MATE_FE_OPT_ENDPOINT, MATE_FE_OPT_ENDPOINTS };
/* Their entries in a struct option table, and their lines of --help. */
#define MATE_FE_FOLLOW_LONGOPTS \
	{ "pid", required_argument, NULL, MATE_FE_OPT_PID }, \
	{ "endpoint", required_argument, NULL, MATE_FE_OPT_ENDPOINT }, \
	{ "endpoints", required_argument, NULL, MATE_FE_OPT_ENDPOINTS }
#define MATE_FE_FOLLOW_HELP \
	"      --pid PID        follow process PID (repeatable)\n" \
	"      --endpoint URL   subscribe to URL, e.g. tcp://host:5555 (repeatable)\n" \
	"      --endpoints FILE subscribe to the URLs in FILE, one a line\n" \
	"                       (none of these: every local publisher, present and to come)\n"
/* Takes the value arg of --pid (c is MATE_FE_OPT_PID; a bad pid is a usage
 * error), --endpoint (MATE_FE_OPT_ENDPOINT) or --endpoints (MATE_FE_OPT_ENDPOINTS: a
 * file it cannot read, or a line that is not an endpoint, is a usage error). */
void mate_fe_follow_option(struct mate_fe_follow *f, int c, const char *arg);
/* A monitor (its settings' warning printed) that follows f: a pid it
 * cannot follow exits 1, an endpoint it cannot take exits 2. With neither,
 * it watches every local publisher; a failure to do so exits 1 when
 * local_required, else the monitor starts with none. */
struct mate_monitor *mate_fe_follow_open(const struct mate_fe_follow *f, int local_required);
void mate_fe_follow_free(struct mate_fe_follow *f);
/* Whether every publisher followed has ended (0 when f names none). */
int mate_fe_follow_all_ended(const struct mate_monitor *m, const struct mate_fe_follow *f);
/* Says once (*told) about a --pid with no publisher after a second (not
 * run with MATE_MONITOR); @return 1 when every --pid is gone without one
 * and f names no endpoint: nothing more can come. */
int mate_fe_follow_pids_gone(const struct mate_monitor *m, const struct mate_fe_follow *f,
    double waited, int *told);

/* Set by SIGINT and SIGTERM once mate_fe_catch_interrupts() has run. */
extern volatile sig_atomic_t mate_fe_interrupted;
void mate_fe_catch_interrupts(void);

#endif /* MATE_FE_H_INCLUDED */
