/* dumpcheck.c: a strict checker of level-10 dump roots (files parsed, records whole and consistent) for the recorder's tests. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpcheck.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------------------ */

static void
violation(struct dc_stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
violation(struct dc_stats *st, const char *fmt, ...)
{
	va_list ap;

	if (st->errors++ < 20) {
		fprintf(stderr, "dumpcheck: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	} else if (st->errors == 21)
		fprintf(stderr, "dumpcheck: (further violations not shown)\n");
}

static uint64_t
hash_line(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h | 1; /* 0 marks an empty slot */
}

/* An open-addressing set of line hashes. */
struct hset {
	uint64_t *slot;
	size_t cap, n;
};

static int
hset_add(struct hset *s, uint64_t h)
{
	if ((s->n + 1) * 2 > s->cap) {
		struct hset t = { calloc(s->cap ? s->cap * 2 : 1024, sizeof(uint64_t)), s->cap ? s->cap * 2 : 1024, 0 };
		if (t.slot == NULL)
			return -1;
		for (size_t i = 0; i < s->cap; i++)
			if (s->slot[i] != 0)
				hset_add(&t, s->slot[i]);
		free(s->slot);
		*s = t;
	}
	for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (s->slot[i] == h)
			return 0;
		if (s->slot[i] == 0) {
			s->slot[i] = h;
			s->n++;
			return 0;
		}
	}
}

static int
hset_has(const struct hset *s, uint64_t h)
{
	if (s->cap == 0)
		return 0;
	for (size_t i = h & (s->cap - 1); s->slot[i] != 0; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == h)
			return 1;
	return 0;
}

static const char *
str_of(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* "<inputs|outputs|inplace>.<pt|safetensors>.tmp.<digits>.<digits>" */
static int
is_temp(const char *name)
{
	const char *p = strstr(name, ".tmp.");
	int dots = 0, digits = 0;

	if (p == NULL || (strncmp(name, "inputs.", 7) != 0 && strncmp(name, "outputs.", 8) != 0 &&
	    strncmp(name, "inplace.", 8) != 0))
		return 0;
	for (p += 5; *p != '\0'; p++) {
		if (*p == '.' && digits > 0 && dots == 0)
			dots++, digits = 0;
		else if (*p >= '0' && *p <= '9')
			digits++;
		else
			return 0;
	}
	return dots == 1 && digits > 0;
}

/* ---- tensor files -------------------------------------------------------------------- */

static mate_value *
read_tensors(const char *path, mate_error *err)
{
	size_t n = strlen(path);

	if (n > 12 && strcmp(path + n - 12, ".safetensors") == 0)
		return mate_safetensors_read(path, NULL, err);
	struct mate_pt_read_options opts = { 0 };
	opts.load_data = 1;
	return mate_pt_read(path, &opts, err);
}

static int
same_shape(const cJSON *shape, const mate_tensor *t)
{
	int i = 0;
	const cJSON *d;

	cJSON_ArrayForEach(d, shape) {
		if (i >= t->ndim || !cJSON_IsNumber(d) || (int64_t)d->valuedouble != t->shape[i])
			return 0;
		i++;
	}
	return i == t->ndim;
}

/* Parses path and compares its tensors with the keys and details of rec
 * (NULL: no record to compare with). */
static void
check_tensor_file(const char *path, const cJSON *rec, const char *keys_name, int is_output,
    dc_tensor_check check, void *ctx, struct dc_stats *st)
{
	mate_error err;
	mate_value *v;
	const cJSON *keys = NULL, *details = NULL, *k;
	size_t nkeys = 0;

	mate_error_clear(&err);
	st->tensor_files++;
	if ((v = read_tensors(path, &err)) == NULL) {
		violation(st, "%s: does not parse: %s", path, err.message);
		return;
	}
	if (mate_value_kind_of(v) != MATE_V_DICT) {
		violation(st, "%s: not a dict", path);
		goto out;
	}
	if (rec != NULL) {
		keys = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec, "tensor_info"),
		    keys_name);
		details = cJSON_GetObjectItemCaseSensitive(rec, "tensor_details");
		nkeys = (size_t)cJSON_GetArraySize(keys);
		if (nkeys != mate_value_len(v))
			violation(st, "%s: %zu tensors, the record lists %zu", path, mate_value_len(v), nkeys);
	}
	cJSON_ArrayForEach(k, keys) {
		const mate_value *t = cJSON_IsString(k) ? mate_value_lookup(v, k->valuestring) : NULL;
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(details, cJSON_IsString(k) ? k->valuestring : "");
		char dtype[64];
		if (t == NULL || mate_value_get_tensor(t) == NULL) {
			violation(st, "%s: tensor %s of the record is missing", path,
			    cJSON_IsString(k) ? k->valuestring : "?");
			continue;
		}
		snprintf(dtype, sizeof(dtype), "torch.%s", mate_dtype_name(mate_value_get_tensor(t)->dtype));
		if (d == NULL || str_of(d, "dtype") == NULL || strcmp(str_of(d, "dtype"), dtype) != 0 ||
		    !same_shape(cJSON_GetObjectItemCaseSensitive(d, "shape"), mate_value_get_tensor(t)))
			violation(st, "%s: tensor %s differs from its tensor_details", path, k->valuestring);
	}
	for (size_t i = 0; check != NULL && i < mate_value_len(v); i++) {
		const char *key = mate_value_get_str(mate_value_key(v, i), NULL);
		const mate_tensor *t = mate_value_get_tensor(mate_value_item(v, i));
		if (key == NULL || t == NULL || check(rec, key, t, is_output, ctx) != 0)
			violation(st, "%s: tensor %s holds the wrong values", path, key ? key : "?");
	}
out:
	mate_value_free(v);
}

/* ---- one dump directory ---------------------------------------------------------------- */

struct dirfiles {
	const char *inputs, *outputs, *inplace;  /* their names, or "" */
	int has_meta;
};

/* The tensor files a dump directory may hold: inputs, outputs and in-place values, each as
 * .pt or .safetensors. */
static const char *const tensor_files[] = {
	"inputs.pt", "inputs.safetensors", "outputs.pt", "outputs.safetensors",
	"inplace.pt", "inplace.safetensors",
};
#define NTENSOR_FILES (sizeof(tensor_files) / sizeof(tensor_files[0]))

static int
list_dir(const char *path, struct dirfiles *f, struct dc_stats *st)
{
	const char **slots[] = { &f->inputs, &f->outputs, &f->inplace };   /* tensor_files' pairs */
	DIR *d = opendir(path);
	struct dirent *e;

	f->inputs = f->outputs = f->inplace = "";
	f->has_meta = 0;
	if (d == NULL) {
		violation(st, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		size_t k = 0;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		while (k < NTENSOR_FILES && strcmp(n, tensor_files[k]) != 0)
			k++;
		if (strcmp(n, "metadata.jsonl") == 0)
			f->has_meta = 1;
		else if (k < NTENSOR_FILES)
			*slots[k / 2] = tensor_files[k];
		else if (is_temp(n))
			st->temp_files++;
		else
			violation(st, "%s: unexpected file %s", path, n);
	}
	closedir(d);
	return 0;
}

/* The pid and call number in "..._pid<PID>_<FUNC>_call<NNNN>". */
static int
parse_name(const char *name, long *pid, long *call)
{
	const char *p = strstr(name, "_pid"), *c = strrchr(name, '_');

	if (p == NULL || c == NULL || strncmp(c, "_call", 5) != 0 || strlen(name) < 20)
		return -1;
	*pid = strtol(p + 4, NULL, 10);
	*call = strtol(c + 5, NULL, 10);
	return *pid > 0 && *call > 0 ? 0 : -1;
}

static void
check_record(const char *dir, const char *name, const cJSON *r, long pid, long call,
    const struct dirfiles *f, struct dc_stats *st)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "process_id");
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(r, "call_sequence");
	const char *dd = str_of(r, "dump_dir"), *fmt = str_of(r, "tensor_format");
	const char *base = dd != NULL ? strrchr(dd, '/') : NULL;

	if (!cJSON_IsNumber(n) || (long)n->valuedouble != pid || !cJSON_IsNumber(q) ||
	    (long)q->valuedouble != call)
		violation(st, "%s: process_id or call_sequence differ from the name", dir);
	if (dd == NULL || strcmp(base != NULL ? base + 1 : dd, name) != 0)
		violation(st, "%s: dump_dir %s names another directory", dir, dd ? dd : "(none)");
	if (fmt == NULL || (f->inputs[0] != '\0' &&
	    strcmp(strchr(f->inputs, '.') + 1, strcmp(fmt, "torch") == 0 ? "pt" : fmt) != 0))
		violation(st, "%s: tensor_format %s does not match %s", dir, fmt ? fmt : "(none)", f->inputs);
}

/* Parses metadata.jsonl: its records into recs (at most 4). */
static int
read_metadata(const char *path, cJSON **recs, struct hset *lines, struct dc_stats *st)
{
	size_t len;
	char *text = test_slurp(path, &len), *p, *nl;
	int n = 0;

	if (text == NULL) {
		violation(st, "%s: cannot read", path);
		return 0;
	}
	for (p = text; p < text + len; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(text + len - p))) == NULL) {
			violation(st, "%s: torn last line (%zu bytes)", path, (size_t)(text + len - p));
			break;
		}
		hset_add(lines, hash_line(p, (size_t)(nl - p)));
		st->metadata_lines++;
		*nl = '\0';
		cJSON *r = cJSON_Parse(p);
		if (r == NULL || !cJSON_IsObject(r)) {
			violation(st, "%s: line %d is not JSON", path, n + 1);
			cJSON_Delete(r);
		} else if (n >= 4) {
			violation(st, "%s: more than 4 records", path);
			cJSON_Delete(r);
		} else
			recs[n++] = r;
	}
	free(text);
	return n;
}

/* A dump directory's tensor files against its records: in_rec lists the inputs' keys,
 * out_rec (NULL until a record says completed) the outputs' and in-place keys. A file a
 * record lists keys for must be there, unless the files were sampled out. */
static void
check_files(const char *dir, const struct dirfiles *f, const cJSON *in_rec, const cJSON *out_rec,
    int sampled_out, dc_tensor_check check, void *ctx, struct dc_stats *st)
{
	const struct {
		const char *file, *keys, *missing;
		const cJSON *rec;
		int is_output;
	} sides[] = {
		{ f->inputs, "input_tensor_keys", "a record lists inputs but there is no inputs file",
		    in_rec, 0 },
		/* a complete outputs file may precede its record (killed before the append) */
		{ f->outputs, "output_tensor_keys", "completed, but there is no outputs file", out_rec, 1 },
		/* the arguments' post-call values: outputs to the checks */
		{ f->inplace, "inplace_tensor_keys", "completed, but there is no in-place file", out_rec, 1 },
	};
	char path[4200];

	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		if (sides[i].file[0] != '\0') {
			snprintf(path, sizeof(path), "%s/%s", dir, sides[i].file);
			check_tensor_file(path, sides[i].rec, sides[i].keys, sides[i].is_output, check, ctx, st);
		} else if (sides[i].rec != NULL && !sampled_out &&
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		    sides[i].rec, "tensor_info"), sides[i].keys)) > 0)
			violation(st, "%s: %s", dir, sides[i].missing);
	}
}

static void
check_dir(const char *root, const char *name, int flags, dc_tensor_check check, void *ctx,
    struct hset *lines, struct dc_stats *st)
{
	char dir[4096], path[4200];
	struct dirfiles f;
	cJSON *recs[4];
	const cJSON *last;
	const char *s0, *sl;
	long pid, call;
	int n = 0, sampled_out = 0;

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	st->dirs++;
	if (parse_name(name, &pid, &call) != 0) {
		violation(st, "%s: not a dump directory name", dir);
		return;
	}
	if (list_dir(dir, &f, st) != 0)
		return;
	if ((flags & DC_SAMPLE_FILES) && call % 8 != 1) {
		/* listed and records checked, tensor files not parsed */
		if (f.inputs[0] != '\0')
			f.inputs = "";
		if (f.outputs[0] != '\0')
			f.outputs = "";
		f.inplace = "";
		sampled_out = 1;
	}
	if (f.has_meta) {
		snprintf(path, sizeof(path), "%s/metadata.jsonl", dir);
		n = read_metadata(path, recs, lines, st);
	}
	for (int i = 0; i < n; i++)
		check_record(dir, name, recs[i], pid, call, &f, st);
	if (n == 0) {
		if (f.outputs[0] != '\0' || f.inplace[0] != '\0')
			violation(st, "%s: outputs file without records", dir);
		if (f.inputs[0] != '\0') {
			st->no_record++;
			snprintf(path, sizeof(path), "%s/%s", dir, f.inputs);
			check_tensor_file(path, NULL, NULL, 0, check, ctx, st);
		} else
			st->empty++;
		return;
	}
	last = recs[n - 1];
	s0 = str_of(recs[0], "execution_status");
	sl = str_of(last, "execution_status");
	if (s0 == NULL || strcmp(s0, "inputs_saved") != 0 || sl == NULL || n > 2 ||
	    (n == 2 && strcmp(sl, "completed") != 0 && strcmp(sl, "failed") != 0 &&
	    (strcmp(sl, "inputs_saved") != 0 || str_of(last, "note") == NULL)))
		violation(st, "%s: statuses out of order (%d records, last %s)", dir, n, sl ? sl : "?");
	else if (strcmp(sl, "completed") == 0)
		st->completed++;
	else if (strcmp(sl, "failed") == 0)
		st->failed++;
	else
		st->inputs_saved++;
	check_files(dir, &f, recs[0], sl != NULL && strcmp(sl, "completed") == 0 ? last : NULL,
	    sampled_out, check, ctx, st);
	for (int i = 0; i < n; i++)
		cJSON_Delete(recs[i]);
}

/* ---- session.jsonl --------------------------------------------------------------------- */

static void
check_session(const char *root, int flags, const struct hset *lines, long max_unlogged,
    struct dc_stats *st)
{
	char path[4200];
	size_t len;
	char *text, *p, *nl;
	long found = 0;

	snprintf(path, sizeof(path), "%s/session.jsonl", root);
	if ((text = test_slurp(path, &len)) == NULL) {
		if (st->metadata_lines > 0)
			violation(st, "%s: missing", path);
		return;
	}
	for (p = text; p < text + len; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(text + len - p))) == NULL) {
			if (flags & DC_TORN_LAST_OK)
				st->session_torn_last++;
			else
				violation(st, "%s: torn last line (%zu bytes)", path, (size_t)(text + len - p));
			break;
		}
		st->session_lines++;
		if (hset_has(lines, hash_line(p, (size_t)(nl - p))))
			found++;
		else {
			*nl = '\0';
			cJSON *r = cJSON_Parse(p);
			violation(st, "%s: line %ld %s", path, st->session_lines,
			    r == NULL ? "is torn or not JSON" : "is in no metadata.jsonl");
			cJSON_Delete(r);
		}
	}
	free(text);
	if (st->metadata_lines - found > max_unlogged || found > st->metadata_lines)
		violation(st, "%s: %ld of %ld metadata.jsonl lines are missing from it (at most %ld may be)",
		    path, st->metadata_lines - found, st->metadata_lines, max_unlogged);
}

long
dc_check_root(const char *root, int flags, long max_unlogged, dc_tensor_check check,
    void *ctx, struct dc_stats *st)
{
	struct hset lines = { NULL, 0, 0 };
	DIR *d = opendir(root);
	struct dirent *e;

	memset(st, 0, sizeof(*st));
	if (d == NULL) {
		violation(st, "%s: cannot open: %s", root, strerror(errno));
		return st->errors;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "session.jsonl") == 0)
			continue;
		check_dir(root, e->d_name, flags, check, ctx, &lines, st);
	}
	closedir(d);
	check_session(root, flags, &lines, max_unlogged, st);
	free(lines.slot);
	if (!(flags & DC_QUIET))
		dc_print(root, st);
	return st->errors;
}

void
dc_print(const char *what, const struct dc_stats *st)
{
	printf("%s: %ld dumps (completed %ld, failed %ld, inputs_saved %ld, inputs without record %ld,"
	    " empty %ld), %ld tensor files, %ld temporary files, %ld metadata lines, %ld session lines"
	    " (%ld torn last), %ld violations\n", what, st->dirs, st->completed, st->failed,
	    st->inputs_saved, st->no_record, st->empty, st->tensor_files, st->temp_files,
	    st->metadata_lines, st->session_lines, st->session_torn_last, st->errors);
}
