/* mate-list-dumps.c: lists recorded calls (dump directories) with their status, one line or one JSON object per dump. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dump_nonfinite.h"
#include "dump_private.h"
#include "ring.h"
#include "fe.h"
#include "mate_replay.h"
#include "util.h"

struct options {
	long long jobs;
	int details;
	int jsonl;
	int nonfinite;
	int quiet;
	int unique;
	const char *ring, *output, *into;
	struct mate_fe_shard shard; /* --shard K/N: list that share only */
};

static void
usage(void)
{
	printf("Usage: %s [OPTION]... [ROOT|DUMPDIR]...\n"
	    "List recorded calls (dump directories) in time order, one line each:\n"
	    "directory, function, [status], input and output tensor counts, bytes.\n"
	    "ROOT defaults to $MATE_DUMP_DIR, else mate_dumps (under MATE_IDENTITY=PREFIX[:NAME]:\n"
	    "$PREFIX_DUMP_DIR, else name_dumps, as the recorder writes them).\n\n"
	    "  -d, --details   a block per dump with each tensor's dtype, shape and strides\n"
	    "  -j, --jobs N    read on N threads (default: up to one per CPU)\n"
	    "      --jsonl     one JSON object per dump\n"
	    "      --nonfinite the calls whose outputs hold NaN or infinities: counts, first\n"
	    "                  index; marks the origin, the first call whose inputs were\n"
	    "                  all finite (reads every tensor file once; no replay)\n"
	    "  -u, --unique    one line per distinct call shape (function, tensors' dtypes,\n"
	    "                  shapes, strides and devices, other arguments by value) with\n"
	    "                  its count; with --jsonl, MATE_PROFILE's objects\n"
	    "      --ring FILE -o DIR\n"
	    "                  write the calls kept in a flight recorder's ring (MATE_RING:\n"
	    "                  a file left by a process that died or exited with an error)\n"
	    "                  as dumps into DIR (new or empty), then list them\n"
	    "  -o, --output DIR where --ring writes\n"
	    "      --into ROOT with --ring: write the calls into the dump root ROOT (made\n"
	    "                  when needed; calls written before are skipped), list\n"
	    "                  nothing, and remove the ring once its process is gone: what\n"
	    "                  libmate runs at a fatal signal or SIGUSR2\n"
	    "      --shard K/N list share K (0 to N-1) of N: the dumps whose names hash\n"
	    "                  to K (FNV-1a 64 mod N), in the same order; the N shares\n"
	    "                  hold every dump once, on any machine\n"
	    "  -q, --quiet     no summary line on stderr\n"
	    "  -h, --help      show this help and exit\n"
	    "  -V, --version   show the version and exit\n\n"
	    "Statuses: completed, inputs_saved (the call never returned), failed,\n"
	    "incomplete (no readable record). The summary goes to stderr.\n"
	    "Exit status: 0 clean, 1 problems found (--nonfinite: also NaN or infinite\n"
	    "outputs), 2 usage error or missing root.\n",
	    mate_fe_progname());
}

static void
format_dims(char *buf, size_t len, const int64_t *d, int n)
{
	size_t o = 0;

	o += (size_t)snprintf(buf, len, "(");
	for (int i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, i ? ", %" PRId64 : "%" PRId64, d[i]);
	if (o < len)
		snprintf(buf + o, len - o, "%s)", n == 1 ? "," : "");
}

static void
print_line(const struct mate_dump_info *d)
{
	printf("%s: %s [%s] %d in, %d out, ", mate_fe_safe(d->name), mate_fe_safe(d->function),
	    mate_dump_status_name(d->status), d->n_inputs, d->n_outputs);
	if (d->n_inplace > 0)
		printf("%d in place, ", d->n_inplace);
	if (d->total_bytes >= 0)
		printf("%" PRId64 " bytes\n", d->total_bytes);
	else
		printf("? bytes\n");
}

static void
print_tensors(const struct mate_dump_info *d, int output)
{
	char shape[512], stride[512];

	for (size_t i = 0; i < d->n_tensors; i++) {
		const struct mate_dump_tensor *t = &d->tensors[i];

		if (t->output != output)
			continue;
		format_dims(shape, sizeof(shape), t->shape, t->ndim);
		format_dims(stride, sizeof(stride), t->stride, t->ndim);
		printf("    %s: %s shape %s stride %s\n", mate_fe_safe(t->key),
		    mate_fe_safe(t->dtype_name), shape, stride);
	}
}

static void
print_details(const struct mate_dump_info *d, int first)
{
	if (!first)
		putchar('\n');
	printf("%s\n", mate_fe_safe(d->name));
	printf("  Function: %s\n", mate_fe_safe(d->function));
	if (d->module != NULL)
		printf("  Module: %s\n", mate_fe_safe(d->module));
	printf("  Status: %s\n", mate_dump_status_name(d->status));
	printf("  Timestamp: %s\n", mate_fe_safe(d->timestamp));
	if (d->process_id >= 0)
		printf("  Process: %" PRId64 "\n", d->process_id);
	if (d->call_sequence >= 0)
		printf("  Call: %" PRId64 "\n", d->call_sequence);
	if (d->self_id != NULL)
		printf("  Object: %s\n", mate_fe_safe(d->self_id));
	printf("  Inputs: %d\n", d->n_inputs);
	print_tensors(d, 0);
	printf("  Outputs: %d\n", d->n_outputs);
	print_tensors(d, 1);
	if (d->n_inplace > 0 || d->inplace_bytes >= 0) {
		printf("  In place: %d\n", d->n_inplace);
		print_tensors(d, 2);
	}
	if (d->total_bytes >= 0)
		printf("  Size: %" PRId64 " bytes\n", d->total_bytes);
	if (d->format != NULL)
		printf("  Format: %s\n", mate_fe_safe(d->format));
	if (d->error != NULL)
		printf("  Error: %s\n", mate_fe_safe(d->error));
	if (d->problem != NULL)
		printf("  Problem: %s\n", mate_fe_safe(d->problem));
}

/* ---- --jsonl, written directly (one object per dump, fast) ---------------------- */

static void
put_stdout(void *ctx, const char *p, size_t n)
{
	fwrite(p, 1, n, ctx);
}

/* A JSON string; bytes that are not UTF-8 (directory names may hold any)
 * become U+FFFD. */
static void
json_str(const char *s)
{
	if (s == NULL)
		fputs("null", stdout);
	else
		mate_json_string(s, strlen(s), MATE_JSON_UTF8, put_stdout, stdout);
}

static void
json_key_str(const char *key, const char *s)
{
	printf(",\"%s\":", key);
	json_str(s);
}

static void
json_key_num(const char *key, int64_t v)
{
	if (v >= 0)
		printf(",\"%s\":%" PRId64, key, v);
	else
		printf(",\"%s\":null", key);
}

static void
json_dims(const char *key, const int64_t *d, int n)
{
	printf(",\"%s\":[", key);
	for (int i = 0; i < n; i++)
		printf(i ? ",%" PRId64 : "%" PRId64, d[i]);
	putchar(']');
}

static void
print_json(const struct mate_dump_info *d, int details)
{
	fputs("{\"dir\":", stdout);
	json_str(d->name);
	json_key_str("path", d->path);
	json_key_str("function", d->function);
	json_key_str("module", d->module);
	json_key_str("status", mate_dump_status_name(d->status));
	json_key_str("timestamp", d->timestamp);
	json_key_num("process_id", d->process_id);
	json_key_num("call_sequence", d->call_sequence);
	json_key_str("self_id", d->self_id);
	json_key_num("inputs", d->n_inputs);
	json_key_num("outputs", d->n_outputs);
	json_key_num("input_bytes", d->input_bytes);
	json_key_num("output_bytes", d->output_bytes);
	json_key_num("inplace", d->n_inplace);
	json_key_num("inplace_bytes", d->inplace_bytes);
	json_key_num("bytes", d->total_bytes);
	json_key_str("format", d->format);
	json_key_str("error", d->error);
	json_key_str("problem", d->problem);
	if (details) {
		fputs(",\"tensors\":[", stdout);
		for (size_t i = 0; i < d->n_tensors; i++) {
			const struct mate_dump_tensor *t = &d->tensors[i];

			fputs(i ? ",{\"key\":" : "{\"key\":", stdout);
			json_str(t->key);
			printf(",\"output\":%s", t->output == 1 ? "true" : "false");
			if (t->output == 2)  /* from the in-place file */
				fputs(",\"inplace\":true", stdout);
			json_key_str("dtype", t->dtype_name);
			json_dims("shape", t->shape, t->ndim);
			json_dims("stride", t->stride, t->ndim);
			putchar('}');
		}
		putchar(']');
	}
	fputs("}\n", stdout);
}

/* ---- --nonfinite: where a NaN was born --------------------------------------------- */

static const char *const nf_kinds[] = { "input", "output", "inplace" };

/* "[origin]", "[passed on]" (an input held NaN or inf), "[inputs unread]",
 * "[inputs finite]" (born here too, after the origin). */
static const char *
nf_tag(const struct mate_nf_call *c)
{
	if (c->origin)
		return "origin";
	if (c->inputs_nonfinite > 0)
		return "passed on";
	return c->inputs_known ? "inputs finite" : "inputs unread";
}

static void
nf_print_line(const struct mate_nf_call *c)
{
	char idx[512];

	printf("%s: %s [%s]", mate_fe_safe(c->info->name), mate_fe_safe(c->info->function),
	    nf_tag(c));
	for (size_t k = 0; k < c->nt; k++) {
		const struct mate_nf_tensor *t = &c->t[k];

		mate_nf_index_format(t, idx, sizeof(idx));
		printf("%s %s %s: %" PRId64 " NaN, %" PRId64 " +inf, %" PRId64 " -inf of %" PRId64
		    " %s, first at %s", k ? ";" : "", nf_kinds[t->kind], mate_fe_safe(t->key),
		    t->nan, t->posinf, t->neginf, t->numel, mate_dtype_name(t->dtype), idx);
	}
	putchar('\n');
}

static void
nf_print_json(const struct mate_nf_call *c, size_t i)
{
	int64_t idx[MATE_MAX_DIMS];

	fputs("{\"dir\":", stdout);
	json_str(c->info->name);
	json_key_str("path", c->info->path);
	json_key_str("function", c->info->function);
	json_key_str("timestamp", c->info->timestamp);
	json_key_num("process_id", c->info->process_id);
	json_key_num("call_sequence", c->info->call_sequence);
	printf(",\"order\":%zu,\"origin\":%s,\"inputs_finite\":%s", i + 1,
	    c->origin ? "true" : "false", !c->inputs_known ? "null" :
	    c->inputs_nonfinite > 0 ? "false" : "true");
	fputs(",\"tensors\":[", stdout);
	for (size_t k = 0; k < c->nt; k++) {
		const struct mate_nf_tensor *t = &c->t[k];

		fputs(k ? ",{\"key\":" : "{\"key\":", stdout);
		json_str(t->key);
		json_key_str("kind", nf_kinds[t->kind]);
		json_key_str("dtype", mate_dtype_name(t->dtype));
		json_dims("shape", t->shape, t->ndim);
		printf(",\"numel\":%" PRId64 ",\"nan\":%" PRId64 ",\"posinf\":%" PRId64
		    ",\"neginf\":%" PRId64, t->numel, t->nan, t->posinf, t->neginf);
		mate_nf_index(t, idx);
		json_dims("first_index", idx, t->ndim);
		putchar('}');
	}
	putchar(']');
	json_key_str("problem", c->problem);
	fputs("}\n", stdout);
}

/* Progress of a scan on a terminal (mate_fe_progress): started at the first
 * report, when its total is known. */
struct scan_progress {
	struct mate_fe_progress p;
	const char *what;
	int quiet, started;
};

static void
on_progress(void *arg, size_t done, size_t total)
{
	struct scan_progress *sp = arg;

	if (!sp->started) {
		mate_fe_progress_start(&sp->p, sp->what, total, sp->quiet);
		sp->started = 1;
	}
	mate_fe_progress_step(&sp->p, done);
}

static void
progress_end(struct scan_progress *sp)
{
	if (sp->started)
		mate_fe_progress_end(&sp->p);
	sp->started = 0;
}

/* Lists the calls with non-finite outputs; @return the calls listed or with problems. */
static size_t
nonfinite(const mate_dump_list *l, const struct options *o, const char *where)
{
	struct mate_nf_scan *s;
	struct scan_progress sp = { .what = "scanned", .quiet = o->quiet };
	mate_error err;
	size_t problems = 0;

	mate_error_clear(&err);
	if (mate_dump_nonfinite_progress(l, (int)(o->jobs > 256 ? 256 : o->jobs), on_progress, &sp,
	    &s, &err) != MATE_OK)
		mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
	progress_end(&sp);
	for (size_t i = 0; i < s->n; i++) {
		const struct mate_nf_call *c = &s->calls[i];

		if (c->outputs_nonfinite > 0 && o->jsonl)
			nf_print_json(c, i);
		else if (c->outputs_nonfinite > 0)
			nf_print_line(c);
		if (c->problem != NULL || c->info->problem != NULL ||
		    c->info->status == MATE_DUMP_INCOMPLETE) {
			fflush(stdout);
			mate_fe_warnx("%s: %s", c->info->path, c->problem != NULL ? c->problem :
			    c->info->problem != NULL ? c->info->problem : "no readable record");
			problems++;
		}
	}
	if (!o->quiet) {
		char b1[32], b2[32];

		fprintf(stderr, "%zu dump%s%s%s: %zu call%s with NaN or infinite outputs", s->n,
		    mate_fe_s(s->n), where ? " in " : "", where ? mate_fe_safe(where) : "",
		    s->listed, mate_fe_s(s->listed));
		if (s->origin != (size_t)-1)
			fprintf(stderr, "; origin: %s (%s), call %s of %s",
			    mate_fe_safe(s->calls[s->origin].info->name),
			    mate_fe_safe(s->calls[s->origin].info->function),
			    mate_fe_grouped(s->origin + 1, b1, sizeof(b1)), mate_fe_grouped(s->n, b2, sizeof(b2)));
		else if (s->listed > 0 && s->first_input != (size_t)-1)
			fprintf(stderr, "; no origin: the first non-finite values are inputs of %s",
			    mate_fe_safe(s->calls[s->first_input].info->name));
		else if (s->listed > 0)
			fputs("; no origin: the inputs of those calls could not be read", stderr);
		fprintf(stderr, "; %.1f MiB of tensors read", (double)s->bytes / (1 << 20));
		if (problems > 0)
			fprintf(stderr, "; %zu with problems", problems);
		fputc('\n', stderr);
	}
	problems += s->listed;
	mate_nf_scan_free(s);
	return problems;
}

/* ---- --unique: the dumps grouped by call shape ------------------------------------ */

struct group {
	const struct mate_dump_info *first;
	size_t calls, by[4];
	size_t order;           /* first appearance */
};

static int
by_calls(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* "float32[4, 64]" (and the strides when they are not the contiguous ones; "@cuda:0"). */
static void
print_tensor_shape(const cJSON *t)
{
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
	const cJSON *stride = cJSON_GetObjectItemCaseSensitive(t, "stride");
	const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
	const cJSON *dev = cJSON_GetObjectItemCaseSensitive(t, "device");
	const char *dt = cJSON_IsString(dtype) ? dtype->valuestring : "?";
	double expect = 1;
	int n = cJSON_GetArraySize(shape), contiguous = cJSON_GetArraySize(stride) == n;
	const cJSON *d;

	printf("%s[", mate_fe_safe(strncmp(dt, "torch.", 6) == 0 ? dt + 6 : dt));
	cJSON_ArrayForEach(d, shape)
		printf("%s%.0f", d == shape->child ? "" : ", ", d->valuedouble);
	putchar(']');
	for (int i = n - 1; i >= 0 && contiguous; i--) {
		double sz = cJSON_GetArrayItem(shape, i)->valuedouble;
		if (sz != 1 && cJSON_GetArrayItem(stride, i)->valuedouble != expect)
			contiguous = 0;
		expect *= sz;
	}
	if (!contiguous) {
		fputs(" stride (", stdout);
		cJSON_ArrayForEach(d, stride)
			printf("%s%.0f", d == stride->child ? "" : ", ", d->valuedouble);
		putchar(')');
	}
	if (cJSON_IsString(dev) && strcmp(dev->valuestring, "cpu") != 0)
		printf(" on %s", mate_fe_safe(dev->valuestring));
}

/* A JSON text as it is (cJSON escapes control characters and backslashes), but
 * each run of bytes from DEL up (C1 controls, bytes that are not UTF-8) through
 * the escaper, which keeps well-formed UTF-8 text and escapes the rest. */
static void
put_json_text(const char *v)
{
	while (*v != '\0') {
		size_t n = 0;

		if ((unsigned char)*v < 0x7f) {
			while ((unsigned char)v[n] != 0 && (unsigned char)v[n] < 0x7f)
				n++;
			fwrite(v, 1, n, stdout);
		} else {
			char *e;

			while ((unsigned char)v[n] >= 0x7f)
				n++;
			e = mate_text_escape(v, n);
			fputs(e != NULL ? e : "?", stdout);
			free(e);
		}
		v += n;
	}
}

/* A record key as the user knows it: the parameter's name where the record's
 * signature gives one ("arg_6" of sgemm_ is "a"), else the key. */
static const char *
arg_label(const struct mate_dump_info *d, const char *key, char *buf, size_t cap)
{
	const char *name = mate_signature_arg_name(d->signature, key, buf, cap);

	return name != NULL ? name : key;
}

/* An integer scalar of the shape ("arg_3"), or -1. */
static long long
scalar_int(const cJSON *scalars, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(scalars, key);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15 &&
	    v->valuedouble == (double)(long long)v->valuedouble ? (long long)v->valuedouble : -1;
}

/* A GEMM of the BLAS (sgemm_, dgemm_, cblas_sgemm, ...) as the row-major product a
 * user wrote: a column-major C(m x n) = A(m x k) B(k x n), what PyTorch calls for
 * x @ w, is [n, k] @ [k, m] -> [n, m] read row-major; CblasRowMajor is as written. */
static void
print_row_major(const struct group *g, const cJSON *scalars)
{
	const char *f = g->first->function;
	const cJSON *order;
	long long m, n, k;
	int cblas = strncmp(f, "cblas_", 6) == 0, row;
	size_t len;

	if (cblas)
		f += 6;
	len = strlen(f);
	if (!(len == 5 || (len == 6 && f[5] == '_' && !cblas)) || strchr("sdchz", f[0]) == NULL ||
	    strncmp(f + 1, "gemm", 4) != 0 || (cblas && len != 5))
		return;
	m = scalar_int(scalars, cblas ? "arg_3" : "arg_2");
	n = scalar_int(scalars, cblas ? "arg_4" : "arg_3");
	k = scalar_int(scalars, cblas ? "arg_5" : "arg_4");
	if (m < 0 || n < 0 || k < 0)
		return;
	order = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(scalars, "arg_0"),
	    "value");
	row = cblas && cJSON_IsNumber(order) && order->valuedouble == 101;   /* CblasRowMajor */
	if (row)
		printf("  = [%lld, %lld] @ [%lld, %lld] -> [%lld, %lld]", m, k, k, n, m, n);
	else
		printf("  = [%lld, %lld] @ [%lld, %lld] -> [%lld, %lld] row-major", n, k, k, m, n, m);
}

/* COUNT KEY function(a=float32[4, 64], ..., causal=true): arguments by their
 * parameters' names where the record's signature gives them (else arg_0,
 * kwarg_causal), a BLAS GEMM followed by its row-major product; the record's
 * strings escaped as every other output escapes them (mate_fe_safe). */
static void
print_group_line(const struct group *g)
{
	cJSON *shape = cJSON_Parse(g->first->shape), *it;
	const char *sep = "";
	char *v, name[128];

	printf("%6zu  %s  %s(", g->calls, g->first->shape_key, mate_fe_safe(g->first->function));
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(shape, "tensors")) {
		printf("%s%s=", sep, mate_fe_safe(arg_label(g->first, it->string, name, sizeof(name))));
		print_tensor_shape(it);
		sep = ", ";
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(shape, "scalars")) {
		v = cJSON_PrintUnformatted(it);
		printf("%s%s=", sep, mate_fe_safe(arg_label(g->first, it->string, name, sizeof(name))));
		put_json_text(v ? v : "?");
		free(v);
		sep = ", ";
	}
	putchar(')');
	print_row_major(g, cJSON_GetObjectItemCaseSensitive(shape, "scalars"));
	putchar('\n');
	cJSON_Delete(shape);
}

/* The profile's object: the shape, its key, the number of calls (dumps) and of each status,
 * and one dump to replay. */
static void
print_group_json(const struct group *g)
{
	const char *shape = g->first->shape;

	fwrite(shape, 1, strlen(shape) - 1, stdout);
	json_key_str("key", g->first->shape_key);
	printf(",\"calls\":%zu,\"failed\":%zu,\"completed\":%zu,\"inputs_saved\":%zu",
	    g->calls, g->by[MATE_DUMP_FAILED & 3], g->by[MATE_DUMP_COMPLETED & 3],
	    g->by[MATE_DUMP_INPUTS_SAVED & 3]);
	json_key_str("example", g->first->path);
	fputs("}\n", stdout);
}

/* Groups the dumps by shape key; dumps without a readable record have no shape and are
 * counted apart. @return the number of groups. */
static size_t
unique(const mate_dump_list *l, int jsonl, size_t *shapeless)
{
	size_t n = mate_dump_list_count(l), cap = 16, ng = 0;
	struct group *g;
	size_t *slots;

	while (cap < 2 * n)
		cap *= 2;
	g = calloc(n ? n : 1, sizeof(*g));
	slots = malloc(cap * sizeof(*slots));
	if (g == NULL || slots == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "out of memory grouping %zu dumps", n);
	memset(slots, 0xff, cap * sizeof(*slots));
	*shapeless = 0;
	for (size_t i = 0; i < n; i++) {
		const struct mate_dump_info *d = mate_dump_list_get(l, i);
		/* the shape's key is already a 64-bit hash of it (the slot's start) */
		size_t s = d->shape_key != NULL ? (size_t)strtoull(d->shape_key, NULL, 16) : 0;

		if (d->shape == NULL) {
			(*shapeless)++;
			continue;
		}
		for (s &= cap - 1; slots[s] != (size_t)-1; s = (s + 1) & (cap - 1))
			if (strcmp(g[slots[s]].first->shape, d->shape) == 0)
				break;
		if (slots[s] == (size_t)-1) {
			slots[s] = ng;
			g[ng].first = d;
			g[ng].order = ng;
			ng++;
		}
		g[slots[s]].calls++;
		g[slots[s]].by[d->status & 3]++;
	}
	qsort(g, ng, sizeof(*g), by_calls);
	for (size_t i = 0; i < ng; i++)
		(jsonl ? print_group_json : print_group_line)(&g[i]);
	free(slots);
	free(g);
	return ng;
}

static void
summary(const mate_dump_list *l, const struct mate_fe_shard *shard, const char *where,
    size_t problems)
{
	size_t n = mate_dump_list_count(l), by[4] = { 0, 0, 0, 0 };
	static const int order[] = { MATE_DUMP_COMPLETED, MATE_DUMP_INPUTS_SAVED,
	    MATE_DUMP_FAILED, MATE_DUMP_INCOMPLETE };
	const char *sep = ": ";

	size_t all = n;

	for (size_t i = 0; i < all; i++)
		if (mate_fe_shard_has(shard, mate_dump_list_get(l, i)->name))
			by[mate_dump_list_get(l, i)->status & 3]++;
		else
			n--;
	fprintf(stderr, "%zu dump%s%s%s", n, mate_fe_s(n), where ? " in " : "", where ? mate_fe_safe(where) : "");
	if (shard->n > 0)
		fprintf(stderr, " (share %lu/%lu of %zu)", shard->k, shard->n, all);
	for (int k = 0; k < 4; k++)
		if (by[order[k]] > 0) {
			fprintf(stderr, "%s%zu %s", sep, by[order[k]], mate_dump_status_name(order[k]));
			sep = ", ";
		}
	if (problems > 0)
		fprintf(stderr, "; %zu with problems", problems);
	fputc('\n', stderr);
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "details", no_argument, NULL, 'd' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "jsonl", no_argument, NULL, 'J' },
		{ "nonfinite", no_argument, NULL, 'N' },
		{ "unique", no_argument, NULL, 'u' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "ring", required_argument, NULL, 'R' },
		{ "output", required_argument, NULL, 'o' },
		{ "into", required_argument, NULL, 'I' },
		{ "shard", required_argument, NULL, 'K' },
		MATE_FE_LONGOPTS_END
	};
	int c;

	while ((c = mate_fe_getopt(argc, argv, "dj:o:quhV", longopts, usage)) != -1) {
		switch (c) {
		case 'd': o->details = 1; break;
		case 'j': o->jobs = mate_fe_parse_count("--jobs", optarg); break;
		case 'J': o->jsonl = 1; break;
		case 'N': o->nonfinite = 1; break;
		case 'q': o->quiet = 1; break;
		case 'u': o->unique = 1; break;
		case 'R': o->ring = optarg; break;
		case 'o': o->output = optarg; break;
		case 'I': o->into = optarg; break;
		case 'K': mate_fe_opt_shard("--shard", optarg, &o->shard); break;
		}
	}
	if ((o->ring != NULL) != (o->output != NULL || o->into != NULL) ||
	    (o->output != NULL && o->into != NULL))
		mate_fe_usage_error("--ring FILE goes with one of -o DIR or --into ROOT");
	if (o->ring != NULL && (o->nonfinite || o->unique || optind < argc))
		mate_fe_usage_error("--ring lists what it writes: no ROOT, --nonfinite or --unique");
	if (o->shard.n > 0 && (o->ring != NULL || o->nonfinite || o->unique))
		mate_fe_usage_error("--shard splits the listing: not with --ring, --nonfinite or --unique");
	if (o->nonfinite && (o->details || o->unique))
		mate_fe_usage_error("--nonfinite cannot be combined with --details or --unique");
}

int
main(int argc, char **argv)
{
	struct options o = { 0 };
	char defbuf[4096];
	const char *def = mate_dump_dir_default(defbuf, sizeof(defbuf));
	struct scan_progress sp = { .what = NULL };
	mate_dump_list *l;
	mate_error err;
	size_t problems = 0, n, shown = 0;
	int status = MATE_EXIT_OK, nroots, nread = 0;

	mate_fe_set_progname(argv[0]);
	mate_fe_check_memory_cap();
	parse_options(argc, argv, &o);
	if (o.ring != NULL) {  /* the ring's calls as dumps in DIR, then the listing of DIR */
		struct mate_ring_stats rs;

		mate_error_clear(&err);
		if ((o.into != NULL ? mate_ring_write_root(o.ring, o.into, &rs, &err) :
		    mate_ring_convert(o.ring, o.output, &rs, &err)) != MATE_OK)
			mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
		if (o.into != NULL) {  /* no listing; a dead process's ring goes (its pages back) */
			if (kill((pid_t)rs.pid, 0) != 0 && errno == ESRCH && unlink(o.ring) != 0)
				mate_fe_warnx("cannot remove %s: %s", mate_fe_safe(o.ring), strerror(errno));
			return MATE_EXIT_OK;
		}
		if (!o.quiet) {
			fprintf(stderr, "%s: the ring of process %lld (the last %llu calls kept): %zu call%s "
			    "written to %s, %zu returned", mate_fe_safe(o.ring), (long long)rs.pid,
			    (unsigned long long)rs.keep, rs.calls, mate_fe_s(rs.calls), mate_fe_safe(o.output),
			    rs.completed);
			if (rs.records_only > 0)
				fprintf(stderr, ", %zu with records only (tensors larger than the ring)",
				    rs.records_only);
			if (rs.torn > 0)
				fprintf(stderr, "; %zu torn entr%s skipped", rs.torn, rs.torn == 1 ? "y" : "ies");
			fputc('\n', stderr);
		}
		def = o.output;
	}
	if ((l = mate_dump_list_new((o.details ? MATE_DUMP_LIST_DETAILS : 0) |
	    (o.unique ? MATE_DUMP_LIST_SHAPE : 0), &err)) == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "%s", err.message);
	mate_dump_list_set_threads(l, (int)(o.jobs > 256 ? 256 : o.jobs));
	sp.what = o.details ? "read" : "listed";
	sp.quiet = o.quiet;
	mate_dump_list_set_progress(l, on_progress, &sp);
	nroots = optind < argc ? argc - optind : 1;
	for (int i = 0; i < nroots; i++) {
		const char *root = optind < argc ? argv[optind + i] : def;
		int rc;

		mate_error_clear(&err);
		rc = mate_dump_list_add(l, root, &err);
		progress_end(&sp);
		if (rc < 0) {
			mate_fe_warnx("%s", err.message);
			status = MATE_EXIT_USAGE;
		} else
			nread++;
	}
	mate_dump_list_sort(l);
	n = mate_dump_list_count(l);
	if (o.nonfinite) {
		problems = nread > 0 ? nonfinite(l, &o, nroots == 1 ?
		    (optind < argc ? argv[optind] : def) : NULL) : 0;
		o.quiet = 1;
		n = 0;
	}
	if (o.unique) {
		size_t shapeless, ng = unique(l, o.jsonl, &shapeless);

		if (!o.quiet)
			fprintf(stderr, "%zu distinct call%s in %zu dump%s\n", ng, mate_fe_s(ng),
			    n, mate_fe_s(n));
		if (shapeless > 0)
			mate_fe_warnx("%zu dump%s without a readable record not counted", shapeless,
			    mate_fe_s(shapeless));
		problems = shapeless;
		o.quiet = 1;
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct mate_dump_info *d = mate_dump_list_get(l, i);

		if (!mate_fe_shard_has(&o.shard, d->name))
			continue;
		shown++;
		if (o.jsonl)
			print_json(d, o.details);
		else if (o.details)
			print_details(d, shown == 1);
		else
			print_line(d);
		if (d->problem != NULL || d->status == MATE_DUMP_INCOMPLETE) {
			fflush(stdout);
			mate_fe_warnx("%s: %s", d->path, d->problem ? d->problem : "no readable record");
			problems++;
		}
	}
	if (!o.quiet && nread > 0)  /* not "0 dumps" after the error that says why */
		summary(l, &o.shard, nroots == 1 ? (optind < argc ? argv[optind] : def) : NULL, problems);
	mate_dump_list_free(l);
	if (fflush(stdout) != 0 || ferror(stdout))
		mate_fe_errx(MATE_EXIT_USAGE, "error writing output");
	if (status == MATE_EXIT_OK && problems > 0)
		status = MATE_EXIT_FAIL;
	return status;
}
