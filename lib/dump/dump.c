/* dump.c: one dump directory: its record, its arguments (tensors and decoded values) and its recorded outputs. */
#include "mate_private.h"
#include "dump_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct mate_dump {
	struct mate_arena arena;
	struct mate_dump_info info;
	cJSON *rec;
	char *dir;
};

mate_dump *
mate_dump_open(const char *dir, mate_error *err)
{
	mate_dump *d = calloc(1, sizeof(*d));
	struct mate_notes notes = { "", 0 };
	int fd, rc;

	if (d == NULL || (d->dir = strdup(dir)) == NULL) {
		free(d);
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	mate_dump_info_init(&d->info);
	d->info.path = d->dir;
	d->info.name = mate_arena_basename(&d->arena, dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		mate_set_errno(err, errno, "cannot open dump", dir);
		goto fail;
	}
	mate_dump_info_from_name(&d->info, d->info.name ? d->info.name : "", &d->arena);
	rc = mate_dump_read_record(fd, "metadata.jsonl", &d->info, &d->arena, &d->rec, &notes);
	close(fd);
	if (rc < 0) {
		char meta[4096];

		snprintf(meta, sizeof(meta), "%s/metadata.jsonl", dir);
		mate_set_errno(err, -rc, "cannot read", meta);
		goto fail;
	}
	if (d->rec == NULL) {
		mate_set_error(err, MATE_ERR_FORMAT, "%s: no readable record in metadata.jsonl%s%s",
		    dir, notes.len ? ": " : "", notes.text);
		goto fail;
	}
	if (notes.len > 0)
		d->info.problem = mate_arena_strndup(&d->arena, notes.text, notes.len);
	return d;
fail:
	mate_dump_free(d);
	return NULL;
}

const struct mate_dump_info *
mate_dump_get_info(const mate_dump *d)
{
	return &d->info;
}

const cJSON *
mate_dump_record(const mate_dump *d)
{
	return d->rec;
}

const char *
mate_dump_signature(const mate_dump *d)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(d->rec, "function_signature");

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

void
mate_dump_free(mate_dump *d)
{
	if (d == NULL)
		return;
	cJSON_Delete(d->rec);
	mate_arena_free(&d->arena);
	free(d->dir);
	free(d);
}

/* ---- tensor files --------------------------------------------------------- */

static int
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

mate_value *
mate_dump_read_tensors(const char *path, int load_data, mate_error *err)
{
	/* a dump's folder may be shared: a link planted as inputs.pt is not read through */
	int fd = mate_open_regular(AT_FDCWD, path, 1);
	mate_value *v;

	if (fd == -EFTYPE_MATE) {
		mate_set_error(err, MATE_ERR_FORMAT, "%s: not a regular file", path);
		return NULL;
	}
	if (has_suffix(path, ".safetensors"))
		return mate_safetensors_read_fd(fd, path, NULL, !load_data, err);
	{
		struct mate_pt_read_options o = { .load_data = load_data };

		v = mate_pt_read_fd(fd, path, &o, err);
	}
	if (v != NULL && mate_value_kind_of(v) != MATE_V_DICT) {
		mate_value_free(v);
		mate_set_error(err, MATE_ERR_FORMAT, "%s: not a dict of tensors", path);
		return NULL;
	}
	return v;
}

const char *
mate_dump_tensor_ext(const char *format, int i)
{
	int st = format != NULL && strcmp(format, "safetensors") == 0;

	return (i == 0) == st ? ".safetensors" : ".pt";
}

/* One tensor's dtype and shape against its tensor_details entry. */
static int
check_details(const char *rel, const char *key, const mate_tensor *t, const cJSON *det,
    mate_error *err)
{
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(det, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(det, "shape"), *x;
	mate_dtype want = cJSON_IsString(dt) ? mate_dtype_from_name(dt->valuestring) :
	    MATE_DTYPE_INVALID;
	int n = 0, same;

	if (want != MATE_DTYPE_INVALID && want != t->dtype)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: tensor '%.100s' is %s in the "
		    "file but %s in the record", rel, key, mate_dtype_name(t->dtype),
		    mate_dtype_name(want));
	if (!cJSON_IsArray(sh))
		return MATE_OK;
	same = cJSON_GetArraySize(sh) == t->ndim;
	cJSON_ArrayForEach(x, sh) {
		same &= n < t->ndim && cJSON_IsNumber(x) && x->valuedouble == (double)t->shape[n];
		n++;
	}
	if (!same)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: tensor '%.100s' has another "
		    "shape in the file than in the record", rel, key);
	return MATE_OK;
}

/* Names the first tensor of the file that keys does not list (a set of
 * them keeps this linear). */
static int
extra_key(const cJSON *keys, const char *rel, const mate_value *tensors, mate_error *err)
{
	mate_value *set = mate_value_dict();
	const cJSON *k;
	int rc = set == NULL ? mate_set_error(err, MATE_ERR_NOMEM, "out of memory") : MATE_OK;

	cJSON_ArrayForEach(k, keys)
		if (rc == MATE_OK && cJSON_IsString(k) &&
		    mate_value_set_str(set, k->valuestring, mate_value_none()) != MATE_OK)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; rc == MATE_OK && i < mate_value_len(tensors); i++) {
		const char *key = mate_value_get_str(mate_value_key(tensors, i), NULL);

		if (key == NULL || mate_value_lookup(set, key) == NULL)
			rc = mate_set_error(err, MATE_ERR_FORMAT, "%s holds '%.100s', which the record "
			    "does not list", rel, key != NULL ? key : "?");
	}
	mate_value_free(set);
	return rc;
}

int
mate_dump_check_tensors(const cJSON *rec, const char *list, const char *rel,
    const mate_value *tensors, mate_error *err)
{
	const cJSON *ti = cJSON_GetObjectItemCaseSensitive(rec, "tensor_info");
	const cJSON *td = cJSON_GetObjectItemCaseSensitive(rec, "tensor_details");
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(ti, list), *k;
	struct mate_json_index ix;
	int inplace = strcmp(list, "inplace_tensor_keys") == 0, rc = MATE_OK;

	mate_json_index_init(&ix, td);
	cJSON_ArrayForEach(k, keys) {
		const mate_value *v = cJSON_IsString(k) ? mate_value_lookup(tensors, k->valuestring) : NULL;

		if (v == NULL) {
			rc = mate_set_error(err, MATE_ERR_FORMAT, "%s lacks '%.100s', which the "
			    "record lists", rel, cJSON_IsString(k) ? k->valuestring : "?");
			break;
		}
		if (mate_value_kind_of(v) == MATE_V_TENSOR && (rc = check_details(rel, k->valuestring,
		    mate_value_get_tensor(v), mate_json_index_get(&ix, k->valuestring),
		    err)) != MATE_OK)
			break;
	}
	mate_json_index_free(&ix);
	/* every tensor listed (counting the listed keys would be fooled by a
	 * list of duplicates); a record without the in-place list lists none */
	if (rc == MATE_OK && (cJSON_IsArray(keys) || inplace) && mate_value_len(tensors) > 0)
		rc = extra_key(keys, rel, tensors, err);
	for (size_t i = 0; rc == MATE_OK && inplace && i < mate_value_len(tensors); i++) {
		const char *key = mate_value_get_str(mate_value_key(tensors, i), NULL);

		if (key == NULL || (strncmp(key, "arg_", 4) != 0 && strncmp(key, "kwarg_", 6) != 0))
			rc = mate_set_error(err, MATE_ERR_FORMAT, "%s holds '%.100s', which is not "
			    "an argument's key (arg_<i>, kwarg_<name>)", rel, key != NULL ? key : "?");
	}
	return rc;
}

/* dir/<stem>.pt or dir/<stem>.safetensors (the recorded format first), or
 * NULL when neither exists. */
static char *
tensor_file(const mate_dump *d, const char *stem)
{
	char *path;
	size_t n = strlen(d->dir) + strlen(stem) + 16;
	struct stat st;

	if ((path = malloc(n)) == NULL)
		return NULL;
	for (int i = 0; i < 2; i++) {
		snprintf(path, n, "%s/%s%s", d->dir, stem, mate_dump_tensor_ext(d->info.format, i));
		if (lstat(path, &st) == 0)  /* a link is found, to be refused by name */
			return path;
	}
	free(path);
	return NULL;
}

static int
load_file(const mate_dump *d, const char *stem, int needed, mate_value **out, mate_error *err)
{
	char *path = tensor_file(d, stem);

	*out = NULL;
	if (path == NULL) {
		if (needed)
			return mate_set_error(err, MATE_ERR_FORMAT, "%s: the record lists %s tensors "
			    "but there is no %s.pt or %s.safetensors", d->info.name, stem, stem, stem);
		return MATE_OK;
	}
	*out = mate_dump_read_tensors(path, 1, err);
	if (*out != NULL) {
		const char *rel = strrchr(path, '/') + 1;
		const char *list = strcmp(stem, "inputs") == 0 ? "input_tensor_keys" :
		    strcmp(stem, "outputs") == 0 ? "output_tensor_keys" : "inplace_tensor_keys";
		int rc = mate_dump_check_tensors(d->rec, list, rel, *out, err);

		if (rc != MATE_OK) {
			mate_value_free(*out);
			*out = NULL;
			free(path);
			return rc;
		}
	}
	free(path);
	return *out != NULL ? MATE_OK : (err ? err->code : MATE_ERR_FORMAT);
}

/* ---- arguments ------------------------------------------------------------ */

/* The length of key's "__<digits>" suffix, or 0. */
static size_t
nested_suffix(const char *key, size_t len)
{
	size_t i = len;

	while (i > 0 && key[i - 1] >= '0' && key[i - 1] <= '9')
		i--;
	if (i == len || i < 3 || key[i - 1] != '_' || key[i - 2] != '_')
		return 0;
	return len - i + 2;
}

static mate_value *build_nested(const mate_value *tensors, const char *prefix,
    const mate_value *meta, int depth);

/* Item idx of the container for prefix: a tensor "<prefix>__<idx>", a deeper
 * container, or the recorded item. */
static mate_value *
nested_item(const mate_value *tensors, const char *prefix, size_t idx,
    const mate_value *meta_item, int depth)
{
	char key[512];
	const mate_value *t;
	mate_value *sub;

	snprintf(key, sizeof(key), "%s__%zu", prefix, idx);
	if ((t = mate_value_lookup(tensors, key)) != NULL)
		return mate_value_copy(t);
	sub = build_nested(tensors, key, meta_item, depth + 1);
	if (sub != NULL)
		return sub;
	return meta_item != NULL ? mate_value_copy(meta_item) : mate_value_none();
}

/* The list for prefix when some tensor key starts with "<prefix>__<i>",
 * else NULL. The recorded value meta (a list or tuple) gives the length and
 * the non-tensor items. */
static mate_value *
build_nested(const mate_value *tensors, const char *prefix, const mate_value *meta, int depth)
{
	size_t plen = strlen(prefix), n = 0, found = 0;
	mate_value *seq;
	int is_seq = mate_value_kind_of(meta) == MATE_V_LIST || mate_value_kind_of(meta) == MATE_V_TUPLE;

	if (depth > 8 || plen > 400)
		return NULL;
	for (size_t i = 0; i < mate_value_len(tensors); i++) {
		const char *k = mate_value_get_str(mate_value_key(tensors, i), NULL);
		char *end;
		unsigned long idx;

		if (k == NULL || strncmp(k, prefix, plen) != 0 || strncmp(k + plen, "__", 2) != 0 ||
		    k[plen + 2] < '0' || k[plen + 2] > '9')
			continue;
		idx = strtoul(k + plen + 2, &end, 10);
		if ((*end != '\0' && strncmp(end, "__", 2) != 0) || idx > 100000)
			continue;
		found = 1;
		if (idx + 1 > n)
			n = idx + 1;
	}
	if (!found)
		return NULL;
	if (is_seq && mate_value_len(meta) > n)
		n = mate_value_len(meta);
	seq = mate_value_kind_of(meta) == MATE_V_TUPLE ? mate_value_tuple() : mate_value_list();
	for (size_t i = 0; seq != NULL && i < n; i++) {
		const mate_value *mi = is_seq && i < mate_value_len(meta) ? mate_value_item(meta, i) : NULL;

		if (mate_value_append(seq, nested_item(tensors, prefix, i, mi, depth)) != MATE_OK) {
			mate_value_free(seq);
			return NULL;
		}
	}
	return seq;
}

/* Adds the file's tensors to args: top-level keys as they are, nested
 * "<parent>__<i>" keys into their parent's list. */
static int
place_tensors(mate_value *args, const mate_value *tensors, mate_error *err)
{
	for (size_t i = 0; i < mate_value_len(tensors); i++) {
		const char *k = mate_value_get_str(mate_value_key(tensors, i), NULL);
		size_t klen, suf;
		char parent[512];
		mate_value *v;

		if (k == NULL)
			continue;
		klen = strlen(k);
		suf = nested_suffix(k, klen);
		if (suf == 0 || klen - suf >= sizeof(parent)) {
			v = mate_value_copy(mate_value_item(tensors, i));
		} else {
			/* only the outermost parent is rebuilt, once */
			memcpy(parent, k, klen - suf);
			parent[klen - suf] = '\0';
			while ((suf = nested_suffix(parent, strlen(parent))) != 0 &&
			    mate_value_lookup(tensors, parent) == NULL)
				parent[strlen(parent) - suf] = '\0';
			if (mate_value_lookup(tensors, parent) != NULL) {
				v = mate_value_copy(mate_value_item(tensors, i));
				k = mate_value_get_str(mate_value_key(tensors, i), NULL);
			} else {
				v = build_nested(tensors, parent, mate_value_lookup(args, parent), 0);
				k = parent;
			}
		}
		if (v == NULL || mate_value_set_str(args, k, v) != MATE_OK)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory placing tensors");
	}
	return MATE_OK;
}

static mate_value *
decode_members(const cJSON *obj, mate_error *err)
{
	mate_value *d = mate_value_dict();
	const cJSON *it;

	if (d == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	cJSON_ArrayForEach(it, obj) {
		mate_value *v = mate_record_decode_value(it, err);

		if (v == NULL || it->string == NULL || mate_value_set_str(d, it->string, v) != MATE_OK) {
			mate_value_free(d);
			return NULL;
		}
	}
	return d;
}

mate_value *
mate_dump_load_args(mate_dump *d, mate_error *err)
{
	mate_value *args, *tensors = NULL;

	args = decode_members(cJSON_GetObjectItemCaseSensitive(d->rec, "input_metadata"), err);
	if (args == NULL)
		return NULL;
	if (load_file(d, "inputs", d->info.n_inputs > 0, &tensors, err) != MATE_OK ||
	    (tensors != NULL && place_tensors(args, tensors, err) != MATE_OK)) {
		mate_value_free(tensors);
		mate_value_free(args);
		return NULL;
	}
	mate_value_free(tensors);
	return args;
}

/* A recorded output that only describes a tensor (the tensor itself is in
 * the outputs file). */
static int
is_tensor_description(const mate_value *v)
{
	const char *t = mate_value_kind_of(v) == MATE_V_OBJECT ? mate_value_object_type(v) : NULL;

	return t != NULL && (strcmp(t, "tensor") == 0 || strcmp(t, "Tensor") == 0 ||
	    strcmp(t, "torch.Tensor") == 0);
}

/* MATE_OK when every key the record's tensor_info lists under list is among
 * tensors (which may be NULL: no file); else the first one missing. */
static int
check_listed(const mate_dump *d, const char *list, const char *what,
    const mate_value *tensors, mate_error *err)
{
	const cJSON *ti = cJSON_GetObjectItemCaseSensitive(d->rec, "tensor_info");
	const cJSON *k;

	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(ti, list))
		if (!cJSON_IsString(k) || mate_value_lookup(tensors, k->valuestring) == NULL)
			return mate_set_error(err, MATE_ERR_FORMAT, "%s: the record lists %s "
			    "tensor '%.100s' but the %s file lacks it", d->info.name, what,
			    cJSON_IsString(k) ? k->valuestring : "?", what);
	return MATE_OK;
}

/* The in-place file's tensors into outs under their argument keys, each
 * listed in the record's inplace_tensor_keys and every listed one present. */
static int
load_inplace(mate_dump *d, mate_value *outs, mate_error *err)
{
	mate_value *tensors = NULL;
	int rc;

	/* load_file() checked the file against the record: each tensor listed,
	 * an argument's, and each listed one there (mate_dump_check_tensors) */
	if ((rc = load_file(d, "inplace", d->info.n_inplace > 0, &tensors, err)) != MATE_OK ||
	    tensors == NULL)
		return rc;
	for (size_t i = 0; i < mate_value_len(tensors) && rc == MATE_OK; i++) {
		const char *key = mate_value_get_str(mate_value_key(tensors, i), NULL);

		if (mate_value_set_str(outs, key, mate_value_copy(mate_value_item(tensors, i))) != MATE_OK)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	mate_value_free(tensors);
	return rc;
}

int
mate_dump_load_outputs(mate_dump *d, mate_value **out, mate_error *err)
{
	mate_value *outs, *meta, *tensors = NULL;
	int rc;

	*out = NULL;
	if (d->info.status != MATE_DUMP_COMPLETED)
		return MATE_OK;
	meta = decode_members(cJSON_GetObjectItemCaseSensitive(d->rec, "output_metadata"), err);
	if (meta == NULL)
		return err ? err->code : MATE_ERR_FORMAT;
	if ((rc = load_file(d, "outputs", d->info.n_outputs > 0, &tensors, err)) != MATE_OK ||
	    (rc = check_listed(d, "output_tensor_keys", "outputs", tensors, err)) != MATE_OK) {
		mate_value_free(meta);
		mate_value_free(tensors);
		return rc;
	}
	if ((outs = mate_value_dict()) == NULL)
		goto nomem;
	for (size_t i = 0; i < mate_value_len(meta); i++) {
		const char *k = mate_value_get_str(mate_value_key(meta, i), NULL);

		if (is_tensor_description(mate_value_item(meta, i)) ||
		    (tensors != NULL && mate_value_lookup(tensors, k) != NULL))
			continue;
		if (mate_value_set_str(outs, k, mate_value_copy(mate_value_item(meta, i))) != MATE_OK)
			goto nomem;
	}
	for (size_t i = 0; i < mate_value_len(tensors); i++) {
		const char *k = mate_value_get_str(mate_value_key(tensors, i), NULL);

		if (k != NULL && mate_value_set_str(outs, k,
		    mate_value_copy(mate_value_item(tensors, i))) != MATE_OK)
			goto nomem;
	}
	mate_value_free(meta);
	mate_value_free(tensors);
	if ((rc = load_inplace(d, outs, err)) != MATE_OK) {
		mate_value_free(outs);
		return rc;
	}
	*out = outs;
	return MATE_OK;
nomem:
	mate_value_free(meta);
	mate_value_free(tensors);
	mate_value_free(outs);
	return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
}
