/* mate-replay.c: re-executes recorded calls (dump directories) and compares their outputs with the recorded ones. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fe.h"
#include "fi_coverage.h"
#include "fe_json.h"
#include "mate-replay-first.h"
#include "mate-replay-merge.h"
#include "mate_record.h"
#include "mate_replay.h"
#include "replay_export.h"
#include "util.h"

struct options {
	int device;
	double rtol, atol;
	struct mate_patterns include, exclude;
	long long jobs;
	int jsonl;
	int quiet;                  /* -q: no progress line */
	unsigned statuses;          /* bit per enum mate_dump_status; 0: all */
	const char **plugins;
	size_t nplugins;
	const char **paths;
	size_t npaths;
	const char *memlog;         /* --memlog: allocation replay instead */
	const char **allocators;
	size_t nallocators;
	long long repeat;
	int list_ops;               /* --list-ops: print the registry instead (2: --coverage) */
	long bench;                 /* --bench[=N]: timed runs of each replayed call */
	int first;                  /* --first: stop at the first wrong call */
	const char *export_dump;    /* --export DUMP: a standalone reproducer instead */
	const char *output;         /* -o DIR: where --export writes it */
	const char *shrink;         /* --shrink DUMP: cut it into -o DIR */
	struct mate_fe_shard shard; /* --shard K/N: that share of the selected calls */
	int merge;                  /* --merge: the paths are the shares' --jsonl files */
};

/* --bench: one timed call, for the table by shape. */
struct timed {
	const struct mate_dump_info *d;
	double median;
};

struct tally {
	int utf8;
	int jsonl;
	struct timed *timed;        /* --bench: the calls timed */
	size_t ntimed, captimed;
	int same_tty;               /* stdout is the terminal the progress line is on */
	size_t by[MATE_REPLAY_UNCHECKED + 1];
	size_t reported;
	struct mate_fe_progress progress;
	const size_t *index;        /* --shard: the calls' indices in the whole selection */
};

static void
usage(void)
{
	printf("Usage: %s [OPTION]... [--dir] PATH...\n"
	    "       %s --memlog FILE.csv [--allocator NAME]... [--repeat N]\n"
	    "       %s --export DUMP -o DIR [--rtol X] [--atol X]\n"
	    "       %s --shrink DUMP -o DIR\n"
	    "       %s --merge [--jsonl] FILE...\n"
	    "Replay recorded calls: PATH is a dump root or a single dump directory.\n"
	    "Calls run in time order; each one's outputs are compared with the recorded ones.\n\n"
	    "      --dir PATH       a dump root or dump directory (as MATE's replay --dir)\n"
	    "      --device DEV     cpu, cuda or auto (default auto)\n"
	    "      --rtol X         relative tolerance for floating outputs (default: by dtype)\n"
	    "      --atol X         absolute tolerance for floating outputs (default: by dtype)\n"
	    "      --include PAT    replay only functions matching PAT (fnmatch; repeatable,\n"
	    "                       or comma-separated)\n"
	    "      --exclude PAT    skip functions matching PAT\n"
	    "      --status LIST    replay only calls recorded with these statuses\n"
	    "                       (completed, inputs_saved, failed; comma-separated)\n"
	    "  -j, --jobs N         replay on N threads, 1 to 256 (results still print in order)\n"
	    "      --jsonl          one JSON object per call on stdout, summary on stderr\n"
	    "      --shard K/N      replay share K (0 to N-1) of N of the selected calls: those\n"
	    "                       whose dump names hash to K; with --jsonl, a closing\n"
	    "                       {\"shard\":...} line for --merge\n"
	    "      --merge          FILE... are the --jsonl --shard K/N outputs of all N shares:\n"
	    "                       print them as one replay of the root (text, or --jsonl)\n"
	    "  -q, --quiet          no progress line (on a terminal, long replays show done/total)\n"
	    "      --plugin LIB.so  load replay handlers from LIB.so (repeatable)\n"
	    "      --first          stop at the first wrong call in call order and name the\n"
	    "                       earlier calls whose outputs its inputs are (exit 1 if any)\n"
	    "      --bench[=N]      after each call's verdict, time N more runs of it on the\n"
	    "                       kernels (default 10, after one warm-up): median, min, max\n"
	    "      --export DUMP    write DIR (new or empty): a standalone reproducer of the one\n"
	    "                       call in DUMP (repro.py, or repro.c and a Makefile for BLAS),\n"
	    "                       its tensors and a README; with -o DIR\n"
	    "      --shrink DUMP    cut a failing call to the smallest slice of its inputs that\n"
	    "                       fails the same way, written as a dump root; with -o DIR\n"
	    "  -o, --output DIR     where --export and --shrink write (new or empty)\n"
	    "      --list-ops       list the replay handlers (name, signature, dtypes,\n"
	    "                       devices; tab-separated, or JSON with --jsonl) and exit;\n"
	    "                       where python3 finds FlashInfer, a line on how many of the\n"
	    "                       APIs it decorates replay\n"
	    "      --coverage       list the APIs the installed FlashInfer decorates, each\n"
	    "                       'replays' or '-' (JSON with --jsonl), and exit\n"
	    "      --memlog FILE    replay a memory log (mate-record --memlog, or RMM's) against\n"
	    "                       allocators instead of replaying dumps\n"
	    "      --allocator NAME malloc, pool, cuda or cuda-async (repeatable; default\n"
	    "                       malloc and pool)\n"
	    "      --repeat N       replay the memory log N times per allocator\n"
	    "      --max-memory SIZE  the most memory one call's tensors or a memory log's\n"
	    "                       live blocks may take (default 1G, or MATE_MAX_MEMORY)\n"
	    "  -h, --help           show this help and exit\n"
	    "  -V, --version        show the version and exit\n\n"
	    "Exit status: 0 every replayed call passed (or ran unchecked, or failed again as\n"
	    "recorded), 1 a mismatch, error or nothing replayed, 2 usage error or unreadable\n"
	    "input.\n"
	    "--export, --shrink: 0 DIR was written, 1 the call cannot be exported, or there is\n"
	    "nothing to shrink (the call passes, cannot be sliced, or its failure does not\n"
	    "survive slicing), 2 usage error, unreadable dump or a DIR that is not empty.\n",
	    mate_fe_progname(), mate_fe_progname(), mate_fe_progname(), mate_fe_progname(),
	    mate_fe_progname());
}

static void
add_patterns(struct mate_patterns *ps, const char *arg)
{
	if (mate_patterns_add(ps, arg) != 0)
		mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
}

static int
selected(const struct options *o, const struct mate_dump_info *d)
{
	if (o->statuses != 0 && !(o->statuses & (1u << d->status)))
		return 0;
	return mate_patterns_select(&o->include, &o->exclude, d->function);
}

static unsigned
parse_statuses(const char *arg)
{
	static const int all[] = { MATE_DUMP_COMPLETED, MATE_DUMP_INPUTS_SAVED, MATE_DUMP_FAILED,
	    MATE_DUMP_INCOMPLETE };
	unsigned bits = 0;
	const char *p = arg;

	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		size_t k;

		for (k = 0; k < sizeof(all) / sizeof(all[0]); k++)
			if (strlen(mate_dump_status_name(all[k])) == n &&
			    strncmp(p, mate_dump_status_name(all[k]), n) == 0)
				break;
		if (k == sizeof(all) / sizeof(all[0]))
			mate_fe_usage_error("bad value for --status: %s (completed, inputs_saved, failed, "
			    "incomplete)", arg);
		bits |= 1u << all[k];
		p += n + (p[n] == ',');
	}
	return bits;
}

static void
push(const char ***list, size_t *n, const char *s)
{
	const char **p = realloc(*list, (*n + 1) * sizeof(*p));

	if (p == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
	p[(*n)++] = s;
	*list = p;
}

static double
parse_tolerance(const char *opt, const char *arg)
{
	double v = mate_fe_parse_double(opt, arg);

	if (v < 0 || v > 1e300)
		mate_fe_usage_error("bad value for %s: '%s' (want a non-negative number)", opt, arg);
	return v;
}

#define MAX_JOBS 256
#define MAX_REPEAT 1000000

/* An integer option from lo to hi; anything else is a usage error. */
static long long
parse_between(const char *opt, const char *arg, long long lo, long long hi)
{
	long long v = mate_fe_parse_count(opt, arg);

	if (v < lo || v > hi)
		mate_fe_usage_error("bad value for %s: '%s' (want %lld to %lld)", opt, arg, lo, hi);
	return v;
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	enum { O_DIR = 256, O_DEVICE, O_RTOL, O_ATOL, O_INCLUDE, O_EXCLUDE, O_JSONL, O_PLUGIN,
		O_STATUS, O_MEMLOG, O_ALLOCATOR, O_REPEAT, O_MAX_MEMORY, O_LIST_OPS, O_BENCH, O_FIRST,
		O_EXPORT, O_SHRINK, O_SHARD, O_MERGE, O_COVERAGE };
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, O_DIR },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "rtol", required_argument, NULL, O_RTOL },
		{ "atol", required_argument, NULL, O_ATOL },
		{ "include", required_argument, NULL, O_INCLUDE },
		{ "exclude", required_argument, NULL, O_EXCLUDE },
		{ "status", required_argument, NULL, O_STATUS },
		{ "jobs", required_argument, NULL, 'j' },
		{ "jsonl", no_argument, NULL, O_JSONL },
		{ "quiet", no_argument, NULL, 'q' },
		{ "plugin", required_argument, NULL, O_PLUGIN },
		{ "memlog", required_argument, NULL, O_MEMLOG },
		{ "allocator", required_argument, NULL, O_ALLOCATOR },
		{ "repeat", required_argument, NULL, O_REPEAT },
		{ "max-memory", required_argument, NULL, O_MAX_MEMORY },

		{ "list-ops", no_argument, NULL, O_LIST_OPS },
		{ "coverage", no_argument, NULL, O_COVERAGE },
		{ "bench", optional_argument, NULL, O_BENCH },
		{ "first", no_argument, NULL, O_FIRST },
		{ "export", required_argument, NULL, O_EXPORT },
		{ "shrink", required_argument, NULL, O_SHRINK },
		{ "output", required_argument, NULL, 'o' },
		{ "shard", required_argument, NULL, O_SHARD },
		{ "merge", no_argument, NULL, O_MERGE },
		MATE_FE_LONGOPTS_END
	};
	int c;

	while ((c = mate_fe_getopt(argc, argv, "j:o:qhV", longopts, usage)) != -1) {
		switch (c) {
		case O_DIR: push(&o->paths, &o->npaths, optarg); break;
		case O_DEVICE: o->device = mate_fe_opt_device(optarg); break;
		case O_RTOL: o->rtol = parse_tolerance("--rtol", optarg); break;
		case O_ATOL: o->atol = parse_tolerance("--atol", optarg); break;
		case O_INCLUDE: add_patterns(&o->include, optarg); break;
		case O_EXCLUDE: add_patterns(&o->exclude, optarg); break;
		case O_STATUS: o->statuses |= parse_statuses(optarg); break;
		case 'j': o->jobs = parse_between("--jobs", optarg, 1, MAX_JOBS); break;
		case O_JSONL: o->jsonl = 1; break;
		case 'q': o->quiet = 1; break;
		case O_PLUGIN: push(&o->plugins, &o->nplugins, optarg); break;
		case O_MEMLOG: o->memlog = optarg; break;
		case O_ALLOCATOR: push(&o->allocators, &o->nallocators, optarg); break;
		case O_REPEAT: o->repeat = parse_between("--repeat", optarg, 1, MAX_REPEAT); break;
		case O_MAX_MEMORY: mate_memory_cap_set(mate_fe_opt_size("--max-memory", optarg)); break;

		case O_LIST_OPS: o->list_ops = 1; break;
		case O_COVERAGE: o->list_ops = 2; break;
		case O_FIRST: o->first = 1; break;
		case O_EXPORT: o->export_dump = optarg; break;
		case 'o': o->output = optarg; break;
		case O_SHRINK: o->shrink = optarg; break;
		case O_SHARD: mate_fe_opt_shard("--shard", optarg, &o->shard); break;
		case O_MERGE: o->merge = 1; break;
		case O_BENCH:
			o->bench = optarg ? mate_fe_opt_long("--bench", optarg, 1, 1000000) : 10;
			break;
		}
	}
	for (int i = optind; i < argc; i++)
		push(&o->paths, &o->npaths, argv[i]);
	if (o->memlog != NULL && o->npaths > 0)
		mate_fe_usage_error("--memlog replays a memory log, not dump directories");
	if (o->memlog == NULL && (o->nallocators > 0 || o->repeat > 0))
		mate_fe_usage_error("--allocator and --repeat go with --memlog");
	if (o->list_ops && (o->npaths > 0 || o->memlog != NULL))
		mate_fe_usage_error("--list-ops takes no dump directory or memory log");
	if (o->bench > 0 && (o->memlog != NULL || o->list_ops))
		mate_fe_usage_error("--bench times replayed calls (--repeat times a memory log)");
	if (o->first && (o->memlog != NULL || o->list_ops || o->bench > 0))
		mate_fe_usage_error("--first replays dump directories (not with --memlog, --list-ops "
		    "or --bench)");
	if (o->export_dump != NULL && o->shrink != NULL)
		mate_fe_usage_error("--export and --shrink: one at a time");
	if ((o->export_dump != NULL || o->shrink != NULL) != (o->output != NULL))
		mate_fe_usage_error("--export DUMP and --shrink DUMP go with -o DIR, and -o DIR with one of them");
	if (o->export_dump != NULL && (o->npaths > 0 || o->memlog != NULL || o->list_ops ||
	    o->bench > 0 || o->first))
		mate_fe_usage_error("--export takes one dump and -o DIR, nothing to replay");
	if (o->shrink != NULL && (o->npaths > 0 || o->memlog != NULL || o->list_ops || o->bench > 0 ||
	    o->first))
		mate_fe_usage_error("--shrink takes one dump and -o DIR, nothing else to replay");
	if ((o->shard.n > 0 || o->merge) && (o->memlog != NULL || o->list_ops || o->first ||
	    o->export_dump != NULL || o->shrink != NULL))
		mate_fe_usage_error("--shard and --merge replay dump roots (not with --memlog, --list-ops, "
		    "--first, --export or --shrink)");
	if (o->merge && (o->shard.n > 0 || o->include.n > 0 || o->exclude.n > 0 || o->statuses ||
	    o->bench > 0 || o->nplugins > 0))
		mate_fe_usage_error("--merge takes the shares' files: select, time and load plugins "
		    "when replaying them");
	if (o->merge && o->npaths == 0)
		mate_fe_usage_error("--merge: no file given (the shares' --jsonl --shard K/N output)");
	if (o->npaths == 0 && o->memlog == NULL && !o->list_ops && o->export_dump == NULL &&
	    o->shrink == NULL)
		mate_fe_usage_error("no dump directory given");
	if (o->jobs < 1)
		o->jobs = 1;  /* not given */
}

/* ---- output --------------------------------------------------------------- */

const char *
verdict_words(int v, int utf8)
{
	switch (v) {
	case MATE_REPLAY_PASSED: return utf8 ? "\u2705 Passed" : "Passed";
	case MATE_REPLAY_MISMATCH: return utf8 ? "\u26a0\ufe0f  Mismatch" : "Mismatch";
	case MATE_REPLAY_UNSUPPORTED: return utf8 ? "\u274c Unsupported" : "Unsupported";
	case MATE_REPLAY_REPRODUCED:
		return utf8 ? "\u26a0\ufe0f  Reproduced the failure" : "Reproduced the failure";
	case MATE_REPLAY_NOW_RUNS: return utf8 ? "\u26a0\ufe0f  Now runs" : "Now runs";
	case MATE_REPLAY_UNCHECKED: return utf8 ? "\u2611\ufe0f  Ran, unchecked" : "Ran, unchecked";
	default: return utf8 ? "\u274c Error" : "Error";
	}
}

void
print_text(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *r, int utf8)
{
	char b1[32], b2[32], b3[32];

	printf("[%zu] %s (%s): %s", i + 1, mate_fe_safe(d->function), mate_fe_safe(d->name),
	    verdict_words(r->verdict, utf8));
	if (r->verdict == MATE_REPLAY_PASSED)
		printf(" (%s)\n", mate_fe_safe(r->message));
	else
		printf(": %s\n", mate_fe_safe(r->message));
	if (r->bench_runs > 0) {
		printf("    bench: median %s (min %s, max %s) over %d run%s; %.3g GB/s of tensors",
		    mate_fe_duration(r->bench_median, b1, sizeof(b1)),
		    mate_fe_duration(r->bench_min, b2, sizeof(b2)),
		    mate_fe_duration(r->bench_max, b3, sizeof(b3)), r->bench_runs,
		    mate_fe_s((unsigned)r->bench_runs),
		    r->bench_median > 0 ? (double)r->bench_bytes / r->bench_median / 1e9 : 0.0);
		if (r->bench_flops >= 0 && r->bench_median > 0)
			printf("; %.3g GFLOP/s", r->bench_flops / r->bench_median / 1e9);
		putchar('\n');
	}
}

static void
print_json(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *r)
{
	cJSON *o = cJSON_CreateObject();
	int bad = r->verdict == MATE_REPLAY_MISMATCH && r->first_bad >= 0;
	char *s;

	cJSON_AddNumberToObject(o, "index", (double)(i + 1));
	cJSON_AddStringToObject(o, "function", d->function);
	cJSON_AddStringToObject(o, "dir", d->name);
	cJSON_AddStringToObject(o, "path", d->path);
	cJSON_AddStringToObject(o, "status", mate_dump_status_name(d->status));
	cJSON_AddStringToObject(o, "verdict", mate_replay_verdict_name(r->verdict));
	cJSON_AddBoolToObject(o, "bit_exact", r->verdict == MATE_REPLAY_PASSED && r->bit_exact);
	cJSON_AddNumberToObject(o, "compared", r->compared);
	mate_fe_json_num(o, "max_abs_err", r->max_abs_err);
	mate_fe_json_num(o, "max_rel_err", r->max_rel_err);
	if (r->verdict == MATE_REPLAY_MISMATCH)
		cJSON_AddStringToObject(o, "key", r->key);
	else
		cJSON_AddNullToObject(o, "key");
	if (bad) {
		cJSON_AddStringToObject(o, "first_bad_index", r->first_bad_index);
		cJSON_AddNumberToObject(o, "first_bad", (double)r->first_bad);
		mate_fe_json_num(o, "expected", r->expected);
		mate_fe_json_num(o, "got", r->got);
		cJSON_AddNumberToObject(o, "n_bad", (double)r->n_bad);
		cJSON_AddNumberToObject(o, "numel", (double)r->numel);
		mate_fe_json_num(o, "share_bad",
		    r->numel > 0 ? (double)r->n_bad / (double)r->numel : 0);
		mate_fe_json_num(o, "mean_abs_err", r->mean_abs_err);
		mate_fe_json_num(o, "mean_rel_err", r->mean_rel_err);
		cJSON_AddNumberToObject(o, "mismatched", r->mismatched);
		cJSON_AddNumberToObject(o, "n_nan", (double)r->n_nan);
		cJSON_AddNumberToObject(o, "n_inf", (double)r->n_inf);
		mate_fe_json_str(o, "first_nan_index", r->n_nan > 0 ? r->first_nan_index : NULL);
		mate_fe_json_str(o, "first_inf_index", r->n_inf > 0 ? r->first_inf_index : NULL);
		mate_fe_json_num(o, "rtol", r->rtol);
		mate_fe_json_num(o, "atol", r->atol);
	} else {
		cJSON_AddNullToObject(o, "first_bad_index");
	}
	if (r->reduction_k > 0) {  /* compared within a product's reduction bound */
		cJSON_AddNumberToObject(o, "reduction_k", (double)r->reduction_k);
		mate_fe_json_num(o, "bound_ratio", r->bound_ratio);
	}
	mate_fe_json_num(o, "seconds", r->seconds);
	if (r->bench_runs > 0) {
		cJSON_AddNumberToObject(o, "bench_runs", r->bench_runs);
		mate_fe_json_num(o, "bench_median_s", r->bench_median);
		mate_fe_json_num(o, "bench_min_s", r->bench_min);
		mate_fe_json_num(o, "bench_max_s", r->bench_max);
		cJSON_AddNumberToObject(o, "bench_bytes", (double)r->bench_bytes);
		mate_fe_json_num(o, "bench_bytes_per_s", r->bench_median > 0 ?
		    (double)r->bench_bytes / r->bench_median : NAN);
		if (r->bench_flops >= 0) {
			cJSON_AddNumberToObject(o, "bench_flops", r->bench_flops);
			mate_fe_json_num(o, "bench_flop_per_s", r->bench_median > 0 ?
			    r->bench_flops / r->bench_median : NAN);
		}
	}
	cJSON_AddStringToObject(o, "message", r->message);
	if ((s = cJSON_PrintUnformatted(o)) != NULL)
		puts(s);
	free(s);
	cJSON_Delete(o);
}

static void
report(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *r, void *ctx)
{
	struct tally *t = ctx;

	if (r->verdict >= 0 && r->verdict <= MATE_REPLAY_UNCHECKED)
		t->by[r->verdict]++;
	if (t->same_tty)   /* the line goes where the progress line is: erased first */
		mate_fe_progress_clear(&t->progress);
	if (t->index != NULL)  /* --shard: the call's number in the whole replay */
		i = t->index[i];
	if (t->jsonl)
		print_json(i, d, r);
	else
		print_text(i, d, r, t->utf8);
	fflush(stdout);
	if (r->bench_runs > 0 && !t->jsonl) {
		if (t->ntimed == t->captimed) {
			t->captimed = t->captimed ? t->captimed * 2 : 256;
			t->timed = mate_fe_grow(t->timed, t->captimed, sizeof(*t->timed));
		}
		t->timed[t->ntimed++] = (struct timed){ d, r->bench_median };
	}
	mate_fe_progress_step(&t->progress, ++t->reported);
}

static int
by_shape(const void *pa, const void *pb)
{
	const struct timed *a = pa, *b = pb;
	int c = strcmp(a->d->function, b->d->function);

	if (c == 0)
		c = strcmp(a->d->shape_key ? a->d->shape_key : "", b->d->shape_key ? b->d->shape_key : "");
	return c != 0 ? c : (a->median > b->median) - (a->median < b->median);
}

struct shape_row {
	const struct timed *first;
	size_t n;
	double median, min, max, total;
};

static int
by_total(const void *pa, const void *pb)
{
	const struct shape_row *a = pa, *b = pb;

	return (a->total < b->total) - (a->total > b->total);
}

/* --bench: the calls' medians grouped by shape (function and shape key), the
 * most time first: how many calls, the median of their medians, the least
 * and the most; one slow call of a shape stands out from the others. */
static void
print_bench_shapes(struct tally *t)
{
	struct shape_row *rows;
	size_t nrows = 0;
	char b1[32], b2[32], b3[32];

	if (t->ntimed == 0 || (rows = calloc(t->ntimed, sizeof(*rows))) == NULL)
		return;
	qsort(t->timed, t->ntimed, sizeof(*t->timed), by_shape);
	for (size_t i = 0, j; i < t->ntimed; i = j) {
		for (j = i + 1; j < t->ntimed && by_shape(&(struct timed){ t->timed[i].d, 0 },
		    &(struct timed){ t->timed[j].d, 0 }) == 0; j++)
			;
		rows[nrows++] = (struct shape_row){ &t->timed[i], j - i,
		    t->timed[i + (j - i - 1) / 2].median, t->timed[i].median, t->timed[j - 1].median,
		    t->timed[i + (j - i - 1) / 2].median * (double)(j - i) };
	}
	qsort(rows, nrows, sizeof(*rows), by_total);
	printf("\nbench by shape (%zu shape%s, the most time first; median of the calls' medians):\n",
	    nrows, mate_fe_s(nrows));
	printf("  %7s  %10s  %10s  %10s  %s\n", "calls", "median", "min", "max", "call [shape key]");
	for (size_t k = 0; k < nrows; k++) {
		const struct shape_row *s = &rows[k];
		printf("  %7zu  %10s  %10s  %10s  %s [%s]%s\n", s->n,
		    mate_fe_duration(s->median, b1, sizeof(b1)), mate_fe_duration(s->min, b2, sizeof(b2)),
		    mate_fe_duration(s->max, b3, sizeof(b3)), mate_fe_safe(s->first->d->function),
		    s->first->d->shape_key ? s->first->d->shape_key : "no record",
		    s->n > 1 && s->median > 0 && s->max > 2 * s->median ? "  spread: max over 2x the median" : "");
	}
	free(rows);
}

static void
print_summary(const struct tally *t, FILE *f)
{
	static const struct { int v; const char *one, *many; } kinds[] = {
		{ MATE_REPLAY_MISMATCH, "mismatch", "mismatches" },
		{ MATE_REPLAY_ERROR, "error", "errors" },
		{ MATE_REPLAY_UNSUPPORTED, "unsupported", "unsupported" },
		{ MATE_REPLAY_REPRODUCED, "reproduced failure", "reproduced failures" },
		{ MATE_REPLAY_NOW_RUNS, "now runs", "now run" },
	};
	size_t failed = 0;
	const char *sep = " (";

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		failed += t->by[kinds[k].v];
	fprintf(f, "%sSummary: %zu passed, %zu failed", f == stdout ? "\n" : "",
	    t->by[MATE_REPLAY_PASSED], failed);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t n = t->by[kinds[k].v];

		if (n == 0)
			continue;
		fprintf(f, "%s%zu %s", sep, n, n == 1 ? kinds[k].one : kinds[k].many);
		sep = ", ";
	}
	fprintf(f, "%s", failed ? ")" : "");
	if (t->by[MATE_REPLAY_UNCHECKED] > 0)  /* neither passed nor failed */
		fprintf(f, ", %zu ran unchecked", t->by[MATE_REPLAY_UNCHECKED]);
	fputc('\n', f);
}

/* ---- main ------------------------------------------------------------------ */

/* --list-ops: one line per handler (name, signature, dtypes, devices,
 * tab-separated; "-" for what is not stated), or one JSON object. */
static int
list_ops(const mate_replay *r, int jsonl)
{
	struct mate_replay_op op;
	char name[512];

	for (size_t i = 0; mate_replay_op_get(r, i, &op) == MATE_OK; i++) {
		snprintf(name, sizeof(name), "%s%s%s", op.module ? op.module : "", op.module ? ":" : "",
		    op.name);
		if (jsonl) {
			cJSON *o = cJSON_CreateObject();
			char *text;

			cJSON_AddStringToObject(o, "name", op.name);
			mate_fe_json_str(o, "module", op.module);
			mate_fe_json_str(o, "signature", op.signature);
			mate_fe_json_str(o, "dtypes", op.dtypes);
			mate_fe_json_str(o, "devices", op.devices);
			if ((text = cJSON_PrintUnformatted(o)) != NULL)
				printf("%s\n", text);
			cJSON_free(text);
			cJSON_Delete(o);
			continue;
		}
		printf("%s\t%s\t%s\t%s\n", name, op.signature ? op.signature : "-",
		    op.dtypes ? op.dtypes : "-", op.devices ? op.devices : "-");
	}
	return MATE_EXIT_OK;
}

/* The engine with the options applied, or NULL (message printed). */
static mate_replay *
make_engine(const struct options *o)
{
	mate_error err;
	mate_replay *r = mate_replay_new(&err);

	if (r == NULL) {
		mate_fe_warnx("%s", err.message);
		return NULL;
	}
	mate_error_clear(&err);
#ifdef MATE_REPLAY_TEST_PLUGIN
	/* tests/mate-replay-ref: the reference fixture's handlers linked in, for
	 * builds where plugins cannot be loaded (static, sanitizers) */
	if (mate_replay_plugin_init(r, &err) != MATE_OK)
		goto fail;
#endif
	mate_replay_set_tolerance(r, o->rtol, o->atol);
	mate_replay_set_bench(r, (int)o->bench);
	if (mate_replay_set_device(r, o->device, &err) != MATE_OK) {
		mate_fe_warnx("--device: %s", err.message);
		mate_replay_free(r);
		return NULL;
	}
	for (size_t i = 0; i < o->nplugins; i++)
		if (mate_replay_load_plugin(r, o->plugins[i], &err) != MATE_OK)
			goto fail;
	return r;
fail:
	mate_fe_warnx("%s", err.message);
	mate_replay_free(r);
	return NULL;
}

/* The dumps under the paths, sorted, or NULL (message printed). */
static mate_dump_list *
list_dumps(const struct options *o)
{
	mate_error err;
	/* --bench groups its figures by call shape: the records' shape keys */
	mate_dump_list *l = mate_dump_list_new(o->bench > 0 ? MATE_DUMP_LIST_SHAPE : 0, &err);

	for (size_t i = 0; l != NULL && i < o->npaths; i++) {
		mate_error_clear(&err);
		if (mate_dump_list_add(l, o->paths[i], &err) < 0) {
			mate_dump_list_free(l);
			l = NULL;
		}
	}
	if (l == NULL) {
		mate_fe_warnx("%s", err.message);
		return NULL;
	}
	mate_dump_list_sort(l);
	{
		const char *ex;
		size_t un = mate_dump_list_unordered(l, &ex);

		if (un > 0)
			mate_fe_warnx("%zu calls share a millisecond with another call of their process "
			    "and no session.jsonl gives their order: they replay in their folders' "
			    "names' order (%s)", un, ex);
	}
	return l;
}

static void
free_options(struct options *o)
{
	mate_patterns_free(&o->include);
	mate_patterns_free(&o->exclude);
	free(o->plugins);
	free(o->paths);
	free(o->allocators);
}

/* Replays the selected dumps of l; the exit status. */
static int
replay_all(const struct options *o, mate_replay *r, const mate_dump_list *l)
{
	size_t n = mate_dump_list_count(l), nsel = 0;
	const struct mate_dump_info **sel = malloc((n ? n : 1) * sizeof(*sel));
	struct replay_share share = { NULL, 0, 0 };
	struct tally t;
	mate_error err;
	int status = MATE_EXIT_OK;

	if (sel == NULL) {
		mate_fe_warnx("out of memory");
		return MATE_EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++)
		if (selected(o, mate_dump_list_get(l, i)))
			sel[nsel++] = mate_dump_list_get(l, i);
	memset(&t, 0, sizeof(t));
	if (o->shard.n > 0) {  /* after the selection, so that the shares split it */
		nsel = replay_shard_cut(&o->shard, sel, nsel, &share);
		t.index = share.index;
	}
	t.jsonl = o->jsonl;
	t.utf8 = !o->jsonl && mate_fe_use_utf8(stdout) && mate_fe_use_color(stdout);
	if (o->first) {
		status = replay_first(r, l, sel, nsel, (int)o->jobs, o->jsonl);
		free(sel);
		return status;
	}
	t.same_tty = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
	mate_fe_progress_start(&t.progress, "replayed", nsel, o->quiet);
	if (mate_replay_run(r, sel, nsel, (int)o->jobs, report, &t, &err) != MATE_OK) {
		mate_fe_progress_end(&t.progress);
		mate_fe_warnx("%s", err.message);
		free(sel);
		free(share.index);
		return MATE_EXIT_USAGE;
	}
	mate_fe_progress_end(&t.progress);
	if (o->shard.n > 0 && o->jsonl)  /* says which share this was, also when empty */
		replay_shard_close(&o->shard, o->paths, o->npaths, n, &share, nsel);
	print_bench_shapes(&t);
	free(t.timed);
	print_summary(&t, o->jsonl ? stderr : stdout);
	if (o->shard.n > 0 ? share.selected == 0 : nsel == 0) {
		mate_fe_warnx("no dumps %s", n ? "selected (--include, --exclude, --status)" : "found");
		status = MATE_EXIT_FAIL;
	} else if (nsel - t.by[MATE_REPLAY_PASSED] - t.by[MATE_REPLAY_REPRODUCED] -
	    t.by[MATE_REPLAY_UNCHECKED] > 0) {
		/* a recorded failure that fails again is what replaying a crash is for; a
		 * call with nothing recorded to check ran as the record says it did */
		status = MATE_EXIT_FAIL;
	}
	free(sel);
	free(share.index);
	return status;
}

/* --merge: one call of the shares' files, printed as replay_all() prints it. */
static void
merged(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *r,
    const char *line, void *ctx)
{
	struct tally *t = ctx;

	if (r->verdict >= 0 && r->verdict <= MATE_REPLAY_UNCHECKED)
		t->by[r->verdict]++;
	if (t->jsonl)
		puts(line);  /* as the share printed it */
	else
		print_text(i, d, r, t->utf8);
	t->reported++;
}

/* --merge FILE...: the shares' results as one replay's report; the exit
 * status replay_all() would have given. */
static int
merge_all(const struct options *o)
{
	struct tally t;
	size_t listed = 0;

	memset(&t, 0, sizeof(t));
	t.jsonl = o->jsonl;
	t.utf8 = !o->jsonl && mate_fe_use_utf8(stdout) && mate_fe_use_color(stdout);
	if (replay_merge(o->paths, o->npaths, merged, &t, &listed) != MATE_EXIT_OK)
		return MATE_EXIT_USAGE;
	print_summary(&t, o->jsonl ? stderr : stdout);
	if (t.reported == 0) {
		mate_fe_warnx("no dumps %s", listed ? "selected (--include, --exclude, --status)" :
		    "found");
		return MATE_EXIT_FAIL;
	}
	return t.reported - t.by[MATE_REPLAY_PASSED] - t.by[MATE_REPLAY_REPRODUCED] -
	    t.by[MATE_REPLAY_UNCHECKED] > 0 ? MATE_EXIT_FAIL : MATE_EXIT_OK;
}

/* ---- --memlog: allocation replay of a memory log ------------------------------ */

/* Replays the memory log at path against allocators[0..n) (n 0: malloc
 * and pool), repeat times each, a line per replay. The exit status: 0 all
 * ran, 1 the log is inconsistent or an allocator failed, 2 an unknown or
 * unavailable allocator or an unreadable log. */
static void
print_result(const char *name, const struct mate_alloc_replay_result *r)
{
	char b1[32], b2[32];
	double rate = r->seconds > 0 ? (double)r->events / r->seconds / 1e6 : 0;

	printf("%s: %" PRIu64 " event%s in %.3f s (%.2f M/s); peak %s requested, footprint %s\n",
	    mate_fe_safe(name), r->events, mate_fe_s(r->events), r->seconds, rate,
	    mate_fe_human_bytes(r->peak_bytes, b1, sizeof(b1)),
	    mate_fe_human_bytes(r->peak_footprint, b2, sizeof(b2)));
}

/* What the log itself shows, once: leaks (RMM's words), skipped rows, odd sizes. */
static void
print_log_facts(const struct mate_alloc_replay_result *r)
{
	if (r->leaked_count > 0)
		printf("LOG shows leak of %" PRIu64 " allocations of %" PRIu64 " total bytes\n",
		    r->leaked_count, r->leaked_bytes);
	if (r->skipped > 0)
		printf("skipped %" PRIu64 " 'allocate failure' row%s\n", r->skipped,
		    mate_fe_s(r->skipped));
	if (r->size_mismatches > 0)
		printf("%" PRIu64 " free%s logged with another size than the allocation's; "
		    "the allocation's size was used\n", r->size_mismatches,
		    mate_fe_s(r->size_mismatches));
}

static int
replay_memlog(const char *path, const char *const *allocators, size_t n,
    long long repeat)
{
	static const char *const defaults[] = { "malloc", "pool" };
	const char *name = strcmp(path, "-") == 0 ? "(stdin)" : path;
	struct mate_alloc_replay_result res;
	mate_memlog_trace *t;
	mate_error err;
	int status = MATE_EXIT_OK;

	if (n == 0) {
		allocators = defaults;
		n = 2;
	}
	for (size_t i = 0; i < n; i++)
		if (mate_alloc_replay_available(allocators[i], &err) != MATE_OK) {
			mate_fe_warnx("%s", err.message);
			return MATE_EXIT_USAGE;
		}
	if ((t = mate_memlog_read(path, &err)) == NULL) {
		mate_fe_warnx("%s", err.message);
		return MATE_EXIT_USAGE;
	}
	if (mate_alloc_replay_check(t, &res, &err) != MATE_OK) {
		mate_fe_warnx("%s:%s", name, err.message + (strncmp(err.message, "line ", 5) == 0 ? 5 : 0));
		mate_memlog_trace_free(t);
		return MATE_EXIT_FAIL;
	}
	printf("%s: %zu thread%s\n", mate_fe_safe(name), mate_memlog_trace_threads(t),
	    mate_fe_s(mate_memlog_trace_threads(t)));
	print_log_facts(&res);
	for (size_t i = 0; i < n && status == MATE_EXIT_OK; i++)
		for (long long k = 0; k < (repeat > 0 ? repeat : 1); k++) {
			if (mate_alloc_replay(t, allocators[i], &res, &err) != MATE_OK) {
				mate_fe_warnx("%s:%s", name, err.message +
				    (strncmp(err.message, "line ", 5) == 0 ? 5 : 0));
				status = MATE_EXIT_FAIL;
				break;
			}
			print_result(allocators[i], &res);
			fflush(stdout);
		}
	mate_memlog_trace_free(t);
	return status;
}

/* --export DUMP -o DIR (replay_export.c); the exit status. */
static int
export_dump(const struct options *o, int argc, char **argv)
{
	struct mate_export x = { o->rtol, o->atol, NULL, NULL };
	char cmd[1024];
	size_t n = 0;
	mate_error err;
	int rc;

	cmd[0] = '\0';
	for (int i = 0; i < argc && n < sizeof(cmd); i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "",
		    i ? argv[i] : mate_fe_progname());
	x.command = cmd;
	if ((rc = mate_export_dump(o->export_dump, o->output, &x, &err)) != MATE_OK) {
		mate_fe_warnx("%s", err.message);
		return rc == MATE_ERR_UNSUPPORTED ? MATE_EXIT_FAIL : MATE_EXIT_USAGE;
	}
	printf("%s: %s\n", mate_fe_safe(o->output), strcmp(x.kind, "python") == 0 ?
	    "repro.py, the tensor files and README (python3 repro.py)" :
	    strcmp(x.kind, "cuda") == 0 ?
	    "repro.cu, Makefile, the buffers (*.bin) and README (make && ./repro)" :
	    "repro.c, Makefile, the buffers (*.bin) and README (make && ./repro)");
	return MATE_EXIT_OK;
}

/* --shrink DUMP -o DIR: what was kept on stdout; the exit status. */
static int
shrink(mate_replay *r, const char *dump, const char *outdir)
{
	char report[2048];
	mate_error err;
	int rc = mate_replay_shrink(r, dump, outdir, report, sizeof(report), &err);

	if (rc == MATE_OK) {
		for (char *line = strtok(report, "\n"); line != NULL; line = strtok(NULL, "\n"))
			printf("%s\n", mate_fe_safe(line));
		printf("wrote %s\n", mate_fe_safe(outdir));
		return MATE_EXIT_OK;
	}
	mate_fe_warnx("%s", err.message);
	return rc == MATE_ERR_UNSUPPORTED ? MATE_EXIT_FAIL : MATE_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	struct options o;
	mate_dump_list *l = NULL;
	mate_replay *r;
	int status = MATE_EXIT_USAGE;

	memset(&o, 0, sizeof(o));
	o.rtol = o.atol = -1;
	o.device = MATE_REPLAY_DEVICE_AUTO;
	mate_fe_set_progname(argv[0]);
	mate_fe_check_memory_cap();
	parse_options(argc, argv, &o);
	if (o.export_dump != NULL) {
		status = export_dump(&o, argc, argv);
		r = NULL;
	} else if (o.merge) {
		status = merge_all(&o);
		r = NULL;
	} else if (o.memlog != NULL) {
		status = replay_memlog(o.memlog, o.allocators, o.nallocators, o.repeat);
		r = NULL;
	} else if ((r = make_engine(&o)) != NULL && o.shrink != NULL) {
		status = shrink(r, o.shrink, o.output);
	} else if (r != NULL && o.list_ops == 2) {
		status = mate_fi_coverage(r, 1, o.jsonl);
	} else if (r != NULL && o.list_ops) {
		if ((status = list_ops(r, o.jsonl)) == MATE_EXIT_OK)
			status = mate_fi_coverage(r, 0, o.jsonl);
	} else if (r != NULL && (l = list_dumps(&o)) != NULL)
		status = replay_all(&o, r, l);
	mate_dump_list_free(l);
	mate_replay_free(r);
	free_options(&o);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mate_fe_warnx("error writing output");
		status = MATE_EXIT_USAGE;
	}
	return status;
}
