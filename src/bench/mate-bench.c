/* mate-bench: times profile entries' calls (JSONL, or the command-line form) on mate's kernels. */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "fe.h"
#include "fe_json.h"
#include "mate.h"
#include "mate_dump.h"

#define MAX_LINE (16u << 20)  /* a profile line longer than this is refused */
#define MAX_RUNS 1000000

struct options {
	const char *function;       /* -c: the command-line form */
	const char *module;         /* -m */
	const char *example;        /* --example */
	long runs;                  /* -n */
	unsigned long long seed;
	int device;
	int jsonl;
	int quiet;                  /* -q: no progress line */
	int compare;                /* --compare: the profile's recorded times beside */
	char **rest;                /* files, or -c's KEY=SPEC words */
	int nrest;
};

/* What a MATE_PROFILE entry recorded of its calls (--compare). */
struct recorded {
	int known;
	double mean, max;
	double calls;
};

struct counts {
	unsigned long ran, unsupported, failed;
	struct mate_fe_progress progress;   /* of a file's entries, on a terminal */
	uint64_t done;
};

static void
usage(void)
{
	printf(
	    "Usage: %s [OPTIONS] [FILE...]\n"
	    "       %s [OPTIONS] [-m MODULE] -c FUNCTION [KEY=SPEC...]\n"
	    "       %s --example FUNCTION\n"
	    "Times each profile entry's call (MATE_PROFILE or mate-list-dumps --unique --jsonl\n"
	    "lines, from the files or stdin) on inputs of its shapes, on mate's kernels.\n"
	    "  -c, --call FUNCTION  one entry in the command-line form: KEY=SPEC words follow,\n"
	    "                       a tensor as DTYPE[D0,...][@[S0,...]][:DEVICE], else JSON\n"
	    "  -m, --module MODULE  the -c entry's module\n"
	    "  -n, --runs N         timed runs of each call (default 10), after a warm-up\n"
	    "      --seed N         seed of the random inputs (default 1)\n"
	    "      --device DEV     cpu, cuda or auto (default cpu)\n"
	    "      --jsonl          one JSON object per entry\n"
	    "  -q, --quiet          no progress line on a terminal\n"
	    "      --compare        beside each median, the profile entry's recorded mean\n"
	    "                       (MATE_PROFILE's mean_s), their ratio, and why they differ\n"
	    "      --max-memory SIZE  the most an entry's tensors may take (default\n"
	    "                       MATE_MAX_MEMORY, else the library's limit)\n"
	    "      --example FUNC   print a runnable mate-bench line for a built-in op\n"
	    "  -h, --help           this help\n"
	    "  -V, --version        print the version\n",
	    mate_fe_progname(), mate_fe_progname(), mate_fe_progname());
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	enum { O_SEED = 256, O_DEVICE, O_JSONL, O_EXAMPLE, O_MAX_MEMORY, O_COMPARE };
	static const struct option longopts[] = {
		{ "call", required_argument, NULL, 'c' },
		{ "module", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "jsonl", no_argument, NULL, O_JSONL },
		{ "quiet", no_argument, NULL, 'q' },
		{ "compare", no_argument, NULL, O_COMPARE },
		{ "example", required_argument, NULL, O_EXAMPLE },
		{ "max-memory", required_argument, NULL, O_MAX_MEMORY },
		MATE_FE_LONGOPTS_END
	};
	static const char optstring[] = "c:m:n:qhV";
	int ch;

	while ((ch = mate_fe_getopt(argc, argv, optstring, longopts, usage)) != -1) {
		switch (ch) {
		case 'c': o->function = optarg; break;
		case 'm': o->module = optarg; break;
		case 'n': o->runs = mate_fe_opt_long("--runs", optarg, 1, MAX_RUNS); break;
		case O_SEED: o->seed = (unsigned long long)mate_fe_parse_count("--seed", optarg); break;
		case O_DEVICE: o->device = mate_fe_opt_device(optarg); break;
		case O_JSONL: o->jsonl = 1; break;
		case 'q': o->quiet = 1; break;
		case O_COMPARE: o->compare = 1; break;
		case O_EXAMPLE: o->example = optarg; break;
		case O_MAX_MEMORY: mate_memory_cap_set(mate_fe_opt_size("--max-memory", optarg)); break;
		}
	}
	if (o->module != NULL && o->function == NULL)
		mate_fe_usage_error("-m names the module of a -c entry");
	if (o->function != NULL && *o->function == '\0')
		mate_fe_usage_error("-c needs a function name");
	if (o->compare && o->function != NULL)
		mate_fe_usage_error("--compare reads the recorded times of profile entries, not -c");
	o->rest = argv + optind;
	o->nrest = argc - optind;
}

static const char *
outcome(const struct mate_bench_result *res)
{
	return res->status == MATE_OK ? "ran" : res->status == MATE_ERR_UNSUPPORTED ?
	    "unsupported" : "error";
}

/* Why a recorded mean and a bench median differ, as far as the figures tell:
 * the notes, "; "-joined, into buf (empty when they agree within 2x). */
static void
compare_notes(const struct recorded *rec, const struct mate_bench_result *res, char *buf,
    size_t cap)
{
	size_t len = 0;
	double ratio = res->median > 0 ? rec->mean / res->median : 0;
#define NOTE(...) \
	do { \
		if (len < cap) \
			len += (size_t)snprintf(buf + len, cap - len, "%s", len ? "; " : ""); \
		if (len < cap) \
			len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__); \
	} while (0)
	char lo[32], hi[32];

	buf[0] = '\0';
	if (ratio > 2)
		NOTE("recorded %.3gx slower: the recorded time is the whole call in the program "
		    "(dispatch, queues, other threads, first touches, the recorder), the bench "
		    "mate's kernel alone on warm inputs", ratio);
	else if (ratio > 0 && ratio < 0.5)
		NOTE("bench %.3gx slower: mate's kernel is slower than the program's (another "
		    "library, more threads, or a reference kernel)", 1 / ratio);
	if (res->median > 0 && (res->max - res->min) / res->median > 0.5)
		NOTE("the bench's runs spread %s..%s: a busy machine, or threads of one call "
		    "waiting on each other (OPENBLAS_NUM_THREADS=1 tells)",
		    mate_fe_duration(res->min, lo, sizeof(lo)), mate_fe_duration(res->max, hi, sizeof(hi)));
	if (rec->mean > 0 && rec->max > 3 * rec->mean)
		NOTE("the recorded calls spread (max %.3gx the mean): the first call's set-up, "
		    "load, or inputs that change the work", rec->max / rec->mean);
#undef NOTE
}

static void
print_json(const mate_bench_entry *e, const char *where, const struct mate_bench_result *res,
    const struct recorded *rec)
{
	cJSON *o = cJSON_CreateObject(), *problem;
	char *text = e ? mate_bench_entry_problem(e) : NULL;

	if (e != NULL) {
		cJSON_AddStringToObject(o, "function", mate_bench_entry_function(e));
		mate_fe_json_str(o, "module", mate_bench_entry_module(e));
		cJSON_AddStringToObject(o, "key", mate_bench_entry_key(e));
	} else
		cJSON_AddStringToObject(o, "input", where);
	cJSON_AddStringToObject(o, "outcome", outcome(res));
	if (res->status != MATE_OK)
		cJSON_AddStringToObject(o, "message", res->message);
	else {
		cJSON_AddNumberToObject(o, "warmup", 2);
		cJSON_AddNumberToObject(o, "runs", res->runs);
		mate_fe_json_num(o, "median_s", res->median);
		mate_fe_json_num(o, "min_s", res->min);
		mate_fe_json_num(o, "max_s", res->max);
		mate_fe_json_num(o, "spread",
		    res->median > 0 ? (res->max - res->min) / res->median : NAN);
		if (res->flops >= 0) {
			cJSON_AddNumberToObject(o, "flops", res->flops);
			mate_fe_json_num(o, "flop_per_s",
			    res->median > 0 ? res->flops / res->median : NAN);
		} else {
			cJSON_AddNullToObject(o, "flops");
			cJSON_AddNullToObject(o, "flop_per_s");
		}
		cJSON_AddNumberToObject(o, "bytes", res->bytes);
		mate_fe_json_num(o, "bytes_per_s",
		    res->median > 0 ? res->bytes / res->median : NAN);
		cJSON_AddNumberToObject(o, "nan", (double)res->nan);
		cJSON_AddNumberToObject(o, "inf", (double)res->inf);
	}
	if (rec != NULL && rec->known) {
		char notes[1024];
		mate_fe_json_num(o, "recorded_mean_s", rec->mean);
		mate_fe_json_num(o, "recorded_max_s", rec->max);
		cJSON_AddNumberToObject(o, "recorded_calls", rec->calls);
		if (res->status == MATE_OK && res->median > 0) {
			mate_fe_json_num(o, "recorded_over_bench", rec->mean / res->median);
			compare_notes(rec, res, notes, sizeof(notes));
			cJSON_AddStringToObject(o, "why", notes);
		}
	}
	if (text != NULL && (problem = cJSON_Parse(text)) != NULL)
		cJSON_AddItemToObject(o, "problem", problem);
	free(text);
	text = cJSON_PrintUnformatted(o);
	if (text != NULL)
		puts(text);
	free(text);
	cJSON_Delete(o);
}

static void
print_text(const mate_bench_entry *e, const char *where, const struct mate_bench_result *res,
    const struct recorded *rec)
{
	char b1[32], b2[32], b3[32];

	if (e != NULL) {
		const char *m = mate_bench_entry_module(e);

		if (m != NULL && strcmp(m, "<unknown>") == 0)
			m = NULL;   /* a call recorded without a module */
		printf("%s%s%s [%s]: ", mate_fe_safe(mate_bench_entry_function(e)), m ? " in " : "",
		    m ? mate_fe_safe(m) : "", mate_bench_entry_key(e));
	}
	else
		printf("%s: ", mate_fe_safe(where));
	if (res->status != MATE_OK) {
		printf("%s: %s\n", outcome(res), mate_fe_safe(res->message));
		return;
	}
	printf("median %s (min %s, max %s) over %d run%s after 2 warm-up; ",
	    mate_fe_duration(res->median, b1, sizeof(b1)),
	    mate_fe_duration(res->min, b2, sizeof(b2)),
	    mate_fe_duration(res->max, b3, sizeof(b3)), res->runs, mate_fe_s((unsigned)res->runs));
	if (res->flops >= 0 && res->median > 0)
		printf("%.3g GFLOP/s, ", res->flops / res->median / 1e9);
	else
		printf("- GFLOP/s, ");
	printf("%.3g GB/s", res->median > 0 ? res->bytes / res->median / 1e9 : 0.0);
	if (rec != NULL && rec->known && res->median > 0) {
		char notes[1024];
		compare_notes(rec, res, notes, sizeof(notes));
		printf("; recorded mean %s over %.0f call%s (max %s): %.3gx the median%s%s",
		    mate_fe_duration(rec->mean, b1, sizeof(b1)), rec->calls, rec->calls == 1 ? "" : "s",
		    mate_fe_duration(rec->max, b2, sizeof(b2)), rec->mean / res->median,
		    notes[0] ? ": " : "", notes);
	} else if (rec != NULL && !rec->known)
		printf("; no recorded time in the entry (not a MATE_PROFILE line)");
	putchar('\n');
}

/* Benchmarks one entry (NULL: it could not be read, err says why) and prints its line. */
/* The recorded times of a profile line (mean_s, max_s, calls). */
static void
recorded_of(const char *line, struct recorded *rec)
{
	cJSON *j = cJSON_Parse(line);
	const cJSON *mean = cJSON_GetObjectItemCaseSensitive(j, "mean_s");
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(j, "max_s");
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(j, "calls");

	memset(rec, 0, sizeof(*rec));
	if (cJSON_IsNumber(mean) && mean->valuedouble > 0 && isfinite(mean->valuedouble)) {
		rec->known = 1;
		rec->mean = mean->valuedouble;
		rec->max = cJSON_IsNumber(max) && isfinite(max->valuedouble) ? max->valuedouble : 0;
		rec->calls = cJSON_IsNumber(calls) && isfinite(calls->valuedouble) ?
		    calls->valuedouble : 0;
	}
	cJSON_Delete(j);
}

static void
bench_one(mate_replay *r, const struct options *o, const mate_bench_entry *e, const char *where,
    const mate_error *err, struct counts *n, const char *line)
{
	struct mate_bench_result res;
	struct recorded rec;

	if (e != NULL)
		mate_bench_run(r, e, o->seed, &res);
	else {
		memset(&res, 0, sizeof(res));
		res.status = err->code != MATE_OK ? err->code : MATE_ERR_FORMAT;
		snprintf(res.message, sizeof(res.message), "%s", err->message);
	}
	if (res.status == MATE_OK)
		n->ran++;
	else if (res.status == MATE_ERR_UNSUPPORTED)
		n->unsupported++;
	else
		n->failed++;
	if (o->compare && line != NULL)
		recorded_of(line, &rec);
	mate_fe_progress_clear(&n->progress);   /* a line of its own, never inside it */
	if (o->jsonl)
		print_json(e, where, &res, o->compare && line != NULL ? &rec : NULL);
	else
		print_text(e, where, &res, o->compare && line != NULL ? &rec : NULL);
	fflush(stdout);
	mate_fe_progress_step(&n->progress, ++n->done);
}

/* The entries (lines not blank) of a regular file, read once before the
 * run for the progress line's total; 0 for anything else (a pipe). */
static uint64_t
count_entries(FILE *f)
{
	struct stat st;
	uint64_t n = 0;
	int ch, blank = 1;

	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	while ((ch = getc(f)) != EOF) {
		if (ch == '\n') {
			n += !blank;
			blank = 1;
		} else if (ch != ' ' && ch != '\t' && ch != '\r')
			blank = 0;
	}
	n += !blank;
	if (ferror(f) || fseek(f, 0, SEEK_SET) != 0) {
		clearerr(f);
		return 0;
	}
	return n;
}

/* One line of f into *buf (at most MAX_LINE bytes; the rest of a longer one is skipped and
 * *toolong set). 0 at the end of the file. */
static int
read_line(FILE *f, char **buf, size_t *cap, int *toolong)
{
	size_t n = 0;
	int ch;

	*toolong = 0;
	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (n + 2 > *cap) {
			size_t c = *cap ? *cap * 2 : 4096;
			char *p;

			if (n >= MAX_LINE) {
				*toolong = 1;
				continue;
			}
			if ((p = realloc(*buf, c)) == NULL)
				mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
			*buf = p;
			*cap = c;
		}
		(*buf)[n++] = (char)ch;
	}
	if (ch == EOF && n == 0)
		return 0;
	(*buf)[n] = '\0';
	return 1;
}

/* Every entry of one file ("-": stdin). -1 when it cannot be opened or read. */
static int
bench_file(mate_replay *r, const struct options *o, const char *path, struct counts *n)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char *line = NULL, where[300];
	size_t cap = 0;
	unsigned long lineno = 0;
	int toolong, rc;

	if (f == NULL) {
		mate_fe_warn("%s", mate_fe_safe(path));
		return -1;
	}
	n->done = 0;
	mate_fe_progress_start(&n->progress, "benchmarked", count_entries(f), o->quiet);
	while (read_line(f, &line, &cap, &toolong)) {
		mate_bench_entry *e = NULL;
		mate_error err;

		lineno++;
		if (line[strspn(line, " \t\r")] == '\0')
			continue;
		snprintf(where, sizeof(where), "%.250s:%lu", strcmp(path, "-") ? path : "<stdin>", lineno);
		mate_error_clear(&err);
		if (toolong) {
			err.code = MATE_ERR_LIMIT;
			snprintf(err.message, sizeof(err.message), "a line longer than %u bytes", MAX_LINE);
		} else
			e = mate_bench_entry_from_json(line, &err);
		bench_one(r, o, e, where, &err, n, toolong ? NULL : line);
		mate_bench_entry_free(e);
	}
	mate_fe_progress_end(&n->progress);
	/* a file that cannot be read (a directory: EISDIR) is a usage error, as the page says */
	if ((rc = ferror(f) ? -1 : 0) != 0)
		mate_fe_warn("%s", mate_fe_safe(path));
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* --example: the command line of a built-in op's problem, quoted as the shell wants it. */
static int
print_example(const char *fn)
{
	char words[2048], *w, *save = NULL;
	const char *why;

	if (mate_bench_example(fn, words, sizeof(words), &why) != MATE_OK) {
		printf("%s: unsupported: %s\n", mate_fe_safe(fn), why);
		return MATE_EXIT_FAIL;
	}
	printf("mate-bench -c %s", fn);
	for (w = strtok_r(words, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		if (strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:=@/+-") ==
		    strlen(w))
			printf(" %s", w);
		else
			printf(" '%s'", w);  /* the words hold no single quote */
	}
	putchar('\n');
	return MATE_EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct options o = { .runs = 10, .seed = 1, .device = MATE_REPLAY_DEVICE_CPU };
	struct counts n = { 0 };
	mate_replay *r;
	mate_error err;
	int status = MATE_EXIT_OK;

	mate_fe_set_progname(argv[0]);
	mate_fe_check_memory_cap();
	parse_options(argc, argv, &o);
	if (o.example != NULL)
		return print_example(o.example);
	mate_error_clear(&err);
	if ((r = mate_replay_new(&err)) == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
	if (mate_replay_set_device(r, o.device, &err) != MATE_OK) {
		mate_replay_free(r);
		mate_fe_errx(MATE_EXIT_USAGE, "--device: %s", err.message);
	}
	mate_replay_set_bench(r, (int)o.runs);
	if (o.function != NULL) {
		mate_bench_entry *e = mate_bench_entry_from_words(o.module, o.function, o.nrest, o.rest, &err);

		if (e == NULL) {
			mate_replay_free(r);
			mate_fe_usage_error("-c %s: %s", mate_fe_safe(o.function), err.message);
		}
		bench_one(r, &o, e, o.function, &err, &n, NULL);
		mate_bench_entry_free(e);
	} else if (o.nrest == 0)
		status = bench_file(r, &o, "-", &n) < 0 ? MATE_EXIT_USAGE : MATE_EXIT_OK;
	else
		for (int i = 0; i < o.nrest; i++)
			if (bench_file(r, &o, o.rest[i], &n) < 0)
				status = MATE_EXIT_USAGE;
	mate_replay_free(r);
	if (n.ran + n.unsupported + n.failed > 1 || n.unsupported + n.failed > 0)
		fprintf(stderr, "%s: %lu benchmarked, %lu unsupported, %lu failed\n", mate_fe_progname(),
		    n.ran, n.unsupported, n.failed);
	if (status == MATE_EXIT_OK && (n.unsupported + n.failed > 0 || n.ran == 0)) {
		if (n.ran == 0 && n.unsupported + n.failed == 0)
			mate_fe_warnx("no entry to benchmark");
		status = MATE_EXIT_FAIL;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mate_fe_warnx("error writing output");
		status = MATE_EXIT_USAGE;
	}
	return status;
}
