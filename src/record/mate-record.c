/* mate-record.c: runs a program with libmate's interposer preloaded and reports what was recorded. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fe.h"
#include "mate_record.h"
#include "mate_replay.h"

struct options {
	const char *level, *dump_dir, *log, *include, *exclude, *max_count, *max_size_gb;
	const char *memlog, *memlog_format, *profile, *bench_log, *ring;
	const char *identity;    /* PREFIX[:NAME], or NULL: mate's own */
	char prefix[32];         /* the variables' prefix: MATE or the identity's */
	int safetensors, quiet;
	char **argv;             /* the program and its arguments */
};

static volatile sig_atomic_t child_pid;
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
static struct sigaction inherited[NFORWARDED];   /* given back to the program */

static void
usage(void)
{
	printf(
	    "usage: %s [options] [--] PROGRAM [ARGS...]\n"
	    "Runs PROGRAM with libmate's interposer preloaded: BLAS, CUDA runtime, cuBLAS and\n"
	    "NCCL calls are recorded as MATE_LOGLEVEL describes (see mate-record(1), mate(7)).\n"
	    "\n"
	    "  -l, --level N        MATE_LOGLEVEL: 1 names, 3 arguments, 5 statistics, 10 dumps\n"
	    "                       (default: the environment's, else 1)\n"
	    "  -o, --log DEST       MATE_LOGDEST: stdout, stderr (the default here) or a file\n"
	    "                       (%%i: process id)\n"
	    "  -d, --dump-dir DIR   MATE_DUMP_DIR (level 10)\n"
	    "      --include PATS   MATE_DUMP_INCLUDE: comma-separated function patterns\n"
	    "      --exclude PATS   MATE_DUMP_EXCLUDE\n"
	    "      --safetensors    MATE_DUMP_SAFETENSORS=1\n"
	    "      --max-count N    MATE_DUMP_MAX_COUNT\n"
	    "      --max-size-gb X  MATE_DUMP_MAX_SIZE_GB\n"
	    "      --ring N         MATE_RING: keep the last N calls in a ring in shared memory\n"
	    "                       instead of dumping each (with --level 10); after a crash,\n"
	    "                       mate-list-dumps --ring FILE -o DIR writes them as dumps\n"
	    "      --profile FILE   MATE_PROFILE: a JSONL table of the distinct calls (shapes,\n"
	    "                       counts, times) written at exit (%%i: process id)\n"
	    "      --bench-log FILE MATE_BENCH_LOG: a script of one mate-bench line per distinct\n"
	    "                       call, appended as each first appears (%%i: process id)\n"
	    "      --identity PREFIX[:NAME]\n"
	    "                       record as another library's logging: PREFIX_LOGLEVEL,\n"
	    "                       PREFIX_DUMP_DIR, ... and \"NAME API Call\" (FlashInfer's:\n"
	    "                       --identity FLASHINFER:FlashInfer); the options above\n"
	    "                       then set the PREFIX_ variables\n"
	    "      --memlog FILE    log device allocations as CSV (%%i: process id); the\n"
	    "                       memory profile goes to the log at exit\n"
	    "      --memlog-format F\n"
	    "                       the CSV's spelling: rmm (default, as RMM's logging\n"
	    "                       adaptor writes it) or epoch (as RMM's docs show it)\n"
	    "  -q, --quiet          no summary at the end\n"
	    "  -h, --help           this help\n"
	    "  -V, --version        the version\n", mate_fe_progname());
}

static void
set(const char *var, const char *value)
{
	if (value != NULL && setenv(var, value, 1) != 0)
		mate_fe_errx(MATE_EXIT_USAGE, "cannot set %s: %s", var, strerror(errno));
}

/* The recorder's variable PREFIX_suffix (MATE_LOGLEVEL, FLASHINFER_LOGLEVEL, ...). */
static const char *
var(const struct options *o, const char *suffix)
{
	static char name[96];

	snprintf(name, sizeof(name), "%s_%s", o->prefix, suffix);
	return name;
}

/* --identity PREFIX[:NAME]: the prefix as libmate checks it (mate_set_identity()). */
static void
check_identity(struct options *o)
{
	size_t n;

	snprintf(o->prefix, sizeof(o->prefix), "MATE");
	if (o->identity == NULL)
		return;
	n = strcspn(o->identity, ":");
	if (n == 0 || n >= sizeof(o->prefix) ||
	    strspn(o->identity, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n ||
	    (o->identity[n] == ':' && (o->identity[n + 1] == '\0' || strlen(o->identity + n + 1) > 31)))
		mate_fe_usage_error("bad --identity '%s': PREFIX of 1 to 31 of A-Z, 0-9 and _, "
		    "then :NAME of 1 to 31 characters", o->identity);
	memcpy(o->prefix, o->identity, n);
	o->prefix[n] = '\0';
}

/* Checks an option value the way the recorder would read it. */
static void
check_values(const struct options *o)
{
	if (o->level != NULL)
		mate_fe_parse_count("--level", o->level);
	if (o->max_count != NULL)
		mate_fe_parse_count("--max-count", o->max_count);
	if (o->ring != NULL && mate_fe_parse_count("--ring", o->ring) < 1)
		mate_fe_usage_error("bad value for --ring: %s (a number of calls, at least 1)", o->ring);
	if (o->max_size_gb != NULL && mate_fe_parse_double("--max-size-gb", o->max_size_gb) < 0)
		mate_fe_usage_error("bad value for --max-size-gb: %s", o->max_size_gb);
	if ((o->log != NULL && *o->log == '\0') || (o->dump_dir != NULL && *o->dump_dir == '\0') ||
	    (o->memlog != NULL && *o->memlog == '\0') || (o->profile != NULL && *o->profile == '\0') ||
	    (o->bench_log != NULL && *o->bench_log == '\0'))
		mate_fe_usage_error("empty file name");
	if (o->memlog_format != NULL && (*o->memlog_format == '\0' ||
	    mate_memlog_format_named(o->memlog_format) < 0))
		mate_fe_usage_error("bad value for --memlog-format: '%s' (want rmm or epoch)",
		    o->memlog_format);
}

static void
parse(int argc, char **argv, struct options *o)
{
	enum { OPT_INCLUDE = 256, OPT_EXCLUDE, OPT_SAFETENSORS, OPT_MAX_COUNT, OPT_MAX_SIZE, OPT_MEMLOG, OPT_PROFILE,
		OPT_MEMLOG_FORMAT, OPT_IDENTITY, OPT_BENCH_LOG, OPT_RING };
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "log", required_argument, NULL, 'o' },
		{ "dump-dir", required_argument, NULL, 'd' },
		{ "include", required_argument, NULL, OPT_INCLUDE },
		{ "exclude", required_argument, NULL, OPT_EXCLUDE },
		{ "safetensors", no_argument, NULL, OPT_SAFETENSORS },
		{ "max-count", required_argument, NULL, OPT_MAX_COUNT },
		{ "max-size-gb", required_argument, NULL, OPT_MAX_SIZE },
		{ "memlog", required_argument, NULL, OPT_MEMLOG },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "bench-log", required_argument, NULL, OPT_BENCH_LOG },
		{ "ring", required_argument, NULL, OPT_RING },
		{ "identity", required_argument, NULL, OPT_IDENTITY },
		{ "memlog-format", required_argument, NULL, OPT_MEMLOG_FORMAT },
		{ "quiet", no_argument, NULL, 'q' },
		MATE_FE_LONGOPTS_END
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = mate_fe_getopt(argc, argv, "+l:o:d:qhV", longopts, usage)) != -1) {
		switch (c) {
		case 'l': o->level = optarg; break;
		case 'o': o->log = optarg; break;
		case 'd': o->dump_dir = optarg; break;
		case OPT_INCLUDE: o->include = optarg; break;
		case OPT_EXCLUDE: o->exclude = optarg; break;
		case OPT_SAFETENSORS: o->safetensors = 1; break;
		case OPT_MAX_COUNT: o->max_count = optarg; break;
		case OPT_MAX_SIZE: o->max_size_gb = optarg; break;
		case OPT_MEMLOG: o->memlog = optarg; break;
		case OPT_PROFILE: o->profile = optarg; break;
		case OPT_BENCH_LOG: o->bench_log = optarg; break;
		case OPT_RING: o->ring = optarg; break;
		case OPT_IDENTITY: o->identity = optarg; break;
		case OPT_MEMLOG_FORMAT: o->memlog_format = optarg; break;
		case 'q': o->quiet = 1; break;
		}
	}
	if (optind >= argc)
		mate_fe_usage_error("no program to run");
	o->argv = argv + optind;
	check_values(o);
	check_identity(o);
}

/* The default dump folder: "name_dumps", the identity's name in lower case. */
static const char *
default_dumps(const struct options *o, char *buf, size_t len)
{
	const char *name = o->identity ? o->identity + strcspn(o->identity, ":") : "";
	size_t i = 0;

	name = *name == ':' ? name + 1 : o->prefix;
	while (name[i] != '\0' && i + 7 < len) {
		buf[i] = (char)tolower((unsigned char)name[i]);
		i++;
	}
	snprintf(buf + i, len - i, "_dumps");
	return buf;
}

/* The environment the program runs in: the options, the preload library
 * (put first in LD_PRELOAD), libmate's file and the session folder. */
static void
environment(const struct options *o)
{
	char preload[PATH_MAX], lib[PATH_MAX];
	const char *old = getenv("LD_PRELOAD");
	mate_error err;
	char *both;

	if (mate_record_preload_path(preload, sizeof(preload), &err) != MATE_OK ||
	    mate_record_libmate_path(lib, sizeof(lib), &err) != MATE_OK)
		mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
	if (old != NULL && *old != '\0') {
		if ((both = malloc(strlen(preload) + strlen(old) + 2)) == NULL)
			mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
		sprintf(both, "%s:%s", preload, old);
		set("LD_PRELOAD", both);
		free(both);
	} else
		set("LD_PRELOAD", preload);
	set("MATE_RECORD_LIBMATE", lib);
	set("MATE_IDENTITY", o->identity);
	set(var(o, "LOGLEVEL"), o->level ? o->level : getenv(var(o, "LOGLEVEL")) ? NULL : "1");
	/* the program's standard output is its own (`mate-record -- prog | jq`): the log goes to
	 * standard error, as strace's does, unless the option or the environment says where */
	set(var(o, "LOGDEST"), o->log ? o->log : getenv(var(o, "LOGDEST")) ? NULL : "stderr");
	set(var(o, "DUMP_DIR"), o->dump_dir);
	set(var(o, "DUMP_INCLUDE"), o->include);
	set(var(o, "DUMP_EXCLUDE"), o->exclude);
	set(var(o, "DUMP_SAFETENSORS"), o->safetensors ? "1" : NULL);
	set(var(o, "DUMP_MAX_COUNT"), o->max_count);
	set(var(o, "DUMP_MAX_SIZE_GB"), o->max_size_gb);
	set(var(o, "RING"), o->ring);
	set(var(o, "PROFILE"), o->profile);
	set(var(o, "BENCH_LOG"), o->bench_log);
	set("MATE_MEMLOG", o->memlog);
	set("MATE_MEMLOG_FORMAT", o->memlog_format);
}

/* The file execvp() would run, for the static-runtime check. */
static int
find_program(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(name, '/') != NULL)
		return snprintf(out, len, "%s", name) < (int)len && access(out, X_OK) == 0;
	for (p = path ? path : "/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		if (snprintf(out, len, "%.*s/%s", (int)(end - p), p, name) < (int)len &&
		    access(out, X_OK) == 0)
			return 1;
	}
	return 0;
}

static void
check_static_runtime(const char *prog)
{
	char path[PATH_MAX];

	if (find_program(prog, path, sizeof(path)) &&
	    mate_elf_cuda_runtime(path, NULL) == MATE_CUDART_STATIC)
		mate_fe_warnx("%s links the CUDA runtime statically: its CUDA allocations, copies "
		    "and kernel launches cannot be recorded by preloading (build it with "
		    "'nvcc -cudart shared' to record them)", path);
}

/* Signals sent to mate-record by another process go on to the program; a
 * terminal's signals reach the program's process group by themselves. */
static void
forward(int sig, siginfo_t *info, void *ctx)
{
	(void)ctx;
	if (child_pid > 0 && (info == NULL || info->si_code <= 0))
		kill(child_pid, sig);
}

static void
install_forwarding(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &sa, &inherited[i]);
}

/* How the program ran: its exit status, its pid, and whether exec failed
 * (then there is nothing to sum up). */
struct outcome {
	int status;
	long pid;
	int not_run;
};

static void
run(char **argv, struct outcome *out)
{
	char pid[24];
	pid_t pid_child;
	sigset_t all, old;
	int status, fds[2], e;
	ssize_t n;

	/* the child says through fds (closed on exec) that it could not exec */
	if (pipe2(fds, O_CLOEXEC) != 0)
		mate_fe_errx(MATE_EXIT_USAGE, "pipe: %s", strerror(errno));
	/* no forwarded signal may fall between fork() and knowing the child */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if ((pid_child = fork()) < 0)
		mate_fe_errx(MATE_EXIT_USAGE, "fork: %s", strerror(errno));
	if (pid_child == 0) {
		/* the program starts with the dispositions mate-record was given (nohup's) */
		for (size_t i = 0; i < NFORWARDED; i++)
			sigaction(forwarded[i], &inherited[i], NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		snprintf(pid, sizeof(pid), "%ld", (long)getpid());
		setenv("MATE_RECORD_ROOT_PID", pid, 1);
		execvp(argv[0], argv);
		e = errno;
		fprintf(stderr, "%s: %s: %s\n", mate_fe_progname(), argv[0], strerror(e));
		if (write(fds[1], &e, sizeof(e)) < 0)
			e = errno;
		_exit(e == ENOENT ? 127 : 126);
	}
	child_pid = pid_child;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(fds[1]);
	while ((n = read(fds[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(fds[0]);
	out->not_run = n == (ssize_t)sizeof(e);
	out->pid = (long)pid_child;
	while (waitpid(pid_child, &status, 0) < 0)
		if (errno != EINTR)
			mate_fe_errx(MATE_EXIT_USAGE, "waitpid: %s", strerror(errno));
	child_pid = 0;
	if (WIFSIGNALED(status))
		out->status = 128 + WTERMSIG(status);
	else
		out->status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* The level the program ran at (what environment() set). */
static long
level(const struct options *o)
{
	const char *v = getenv(var(o, "LOGLEVEL"));

	return v != NULL ? strtol(v, NULL, 10) : 0;
}

static void
summary(const struct mate_record_totals *t, const char *dump_dir, const struct options *o)
{
	char b1[32], b2[32], procs[48] = "", dumps[PATH_MAX + 64] = "";

	if (t->processes > 0)
		snprintf(procs, sizeof(procs), " in %" PRIu64 " process%s", t->processes,
		    t->processes == 1 ? "" : "es");
	/* dumps are made at level 10 only: below, "0 dumps" says nothing */
	if (t->dumps > 0 || level(o) >= 10)
		snprintf(dumps, sizeof(dumps), "; %" PRIu64 " dump%s (%s) in %s", t->dumps,
		    mate_fe_s(t->dumps), mate_fe_human_bytes(t->dump_bytes, b1, sizeof(b1)),
		    dump_dir);
	/* at level 0 no API call is logged: "0 calls recorded" read as if the program made none
	 * (beside a memory profile counting its allocations) */
	if (level(o) == 0)
		fprintf(stderr, "%s: level 0: API calls not logged%s; peak device memory %s\n",
		    mate_fe_progname(), procs, mate_fe_human_bytes(t->peak_bytes, b2, sizeof(b2)));
	else
		fprintf(stderr, "%s: %" PRIu64 " call%s recorded%s%s; peak device memory %s\n",
		    mate_fe_progname(), t->calls, mate_fe_s(t->calls), procs, dumps,
		    mate_fe_human_bytes(t->peak_bytes, b2, sizeof(b2)));
	if (t->transfers || t->launches || t->allocations)
		fprintf(stderr, "%s: %" PRIu64 " device allocation%s, %" PRIu64 " cudaMemcpy (%s), %"
		    PRIu64 " kernel launch%s%s%s\n", mate_fe_progname(), t->allocations,
		    mate_fe_s(t->allocations), t->transfers,
		    mate_fe_human_bytes(t->transfer_bytes, b1, sizeof(b1)), t->launches, t->launches == 1 ? "" : "es",
		    o->memlog ? "; memory log: " : "", o->memlog ? o->memlog : "");
	else if (o->memlog)
		fprintf(stderr, "%s: no device allocations; memory log: %s (its header alone)\n",
		    mate_fe_progname(), o->memlog);
	if (t->static_cudart)
		fprintf(stderr, "%s: a static CUDA runtime was in use: its CUDA calls were not "
		    "recorded\n", mate_fe_progname());
	if (t->no_recorder)
		fprintf(stderr, "%s: a process could not load libmate: it was not recorded\n",
		    mate_fe_progname());
}

int
main(int argc, char **argv)
{
	struct options o;
	struct mate_record_totals t;
	mate_record_session *s;
	mate_error err;
	const char *dump_dir;
	char dumps[64];
	struct outcome run_out;
	int have_totals;

	mate_fe_set_progname(argv[0]);
	parse(argc, argv, &o);
	dump_dir = o.dump_dir ? o.dump_dir : getenv(var(&o, "DUMP_DIR")) ? getenv(var(&o, "DUMP_DIR"))
	    : default_dumps(&o, dumps, sizeof(dumps));
	environment(&o);
	if ((s = mate_record_session_new(dump_dir, &err)) == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
	set("MATE_RECORD_SUMMARY", mate_record_session_dir(s));
	check_static_runtime(o.argv[0]);
	install_forwarding();
	memset(&run_out, 0, sizeof(run_out));
	run(o.argv, &run_out);
	if (!run_out.not_run) {
		if (!(have_totals = mate_record_session_totals(s, &t, &err) == MATE_OK))
			mate_fe_warnx("%s", err.message);
		/* a run with no device allocations leaves the header the reader expects */
		if (o.memlog && have_totals && t.allocations == 0 &&
		    mate_memlog_write_header(o.memlog, run_out.pid, &err) != MATE_OK)
			mate_fe_warnx("%s", err.message);
		if (have_totals && !o.quiet)
			summary(&t, dump_dir, &o);
	}
	mate_record_session_free(s);
	return run_out.status;
}
