/* tensorfile-tool.c: test driver that describes .pt/.safetensors files as JSON and writes them from a JSON spec.
 *
 * usage: tensorfile-tool describe FILE [--no-data]
 *        tensorfile-tool write SPEC.json OUT(.pt|.safetensors) [--v3] [--root NAME]
 *
 * The JSON form of a file is {"root": VALUE, "metadata": VALUE|null}
 * ("metadata" is the safetensors __metadata__ dict). A VALUE is one of:
 *   {"type":"none"}
 *   {"type":"bool","value":true}
 *   {"type":"int","value":123}            exact int64 (a string is accepted on input)
 *   {"type":"float","value":"0.5"}        a string: %.17g, "nan", "inf", "-inf"
 *   {"type":"str","value":"text"}
 *   {"type":"bytes","hex":"00ff"}
 *   {"type":"list"|"tuple","items":[VALUE,...]}
 *   {"type":"dict","ordered":false,"items":[[KEY,VALUE],...]}   KEY is a VALUE
 *   {"type":"tensor","dtype":"float32","shape":[2,3],"stride":[3,1],"offset":0,
 *    "storage":0,"storage_nbytes":24,"hex":"..."}
 *      "storage" numbers distinct storages in order of first appearance; "hex"
 *      holds the whole storage (on input only its first appearance needs it;
 *      describe --no-data leaves it out). On input, "zeros":"N" instead of
 *      "hex" makes a storage of N zero bytes, mapped but not touched (files
 *      over 4 GiB), with "marks":[[OFFSET,BYTE],...] set in it.
 *   {"type":"dtype","value":"float32"}
 *   {"type":"enum","name":"Mode.FAST","value":0}
 *   {"type":"object","name":"Type","repr":"..."}
 * Exit status: 0 ok, 1 the library reported an error (message on stderr), 2 usage.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mate_core.h"

struct storages {
	const mate_storage **list;
	size_t n, cap;
};

static int
storage_id(struct storages *s, const mate_storage *st, int *is_new)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->list[i] == st) {
			*is_new = 0;
			return (int)i;
		}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->list = realloc(s->list, s->cap * sizeof(*s->list));
		if (s->list == NULL)
			abort();
	}
	s->list[s->n] = st;
	*is_new = 1;
	return (int)s->n++;
}

static char *
to_hex(const unsigned char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *h = malloc(2 * n + 1);

	if (h == NULL)
		abort();
	for (size_t i = 0; i < n; i++) {
		h[2 * i] = digits[p[i] >> 4];
		h[2 * i + 1] = digits[p[i] & 15];
	}
	h[2 * n] = '\0';
	return h;
}

static cJSON *
int_array(const int64_t *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	char buf[32];

	for (int i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%" PRId64, v[i]);
		cJSON_AddItemToArray(a, cJSON_CreateRaw(buf));
	}
	return a;
}

static void
add_raw_int(cJSON *o, const char *key, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cJSON_AddRawToObject(o, key, buf);
}

static cJSON *describe(const mate_value *v, struct storages *s, int data);

static cJSON *
describe_tensor(cJSON *o, const mate_value *v, struct storages *s, int data)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	const mate_storage *st = mate_value_get_storage(v);
	int is_new;

	cJSON_AddStringToObject(o, "dtype", mate_dtype_name(t->dtype));
	cJSON_AddItemToObject(o, "shape", int_array(t->shape, t->ndim));
	cJSON_AddItemToObject(o, "stride", int_array(t->stride, t->ndim));
	add_raw_int(o, "offset", t->offset);
	cJSON_AddNumberToObject(o, "storage", storage_id(s, st, &is_new));
	add_raw_int(o, "storage_nbytes", (int64_t)mate_storage_size(st));
	if (data && mate_storage_data(st) != NULL) {
		char *h = to_hex(mate_storage_data(st), mate_storage_size(st));
		cJSON_AddStringToObject(o, "hex", h);
		free(h);
	}
	return o;
}

static cJSON *
describe_seq(cJSON *o, const mate_value *v, struct storages *s, int data)
{
	cJSON *items = cJSON_AddArrayToObject(o, "items");

	if (mate_value_kind_of(v) == MATE_V_DICT)
		cJSON_AddBoolToObject(o, "ordered", mate_value_is_ordered(v));
	for (size_t i = 0; i < mate_value_len(v); i++) {
		cJSON *item = describe(mate_value_item(v, i), s, data);
		if (mate_value_kind_of(v) == MATE_V_DICT) {
			cJSON *pair = cJSON_CreateArray();
			cJSON_AddItemToArray(pair, describe(mate_value_key(v, i), s, data));
			cJSON_AddItemToArray(pair, item);
			item = pair;
		}
		cJSON_AddItemToArray(items, item);
	}
	return o;
}

static cJSON *
describe(const mate_value *v, struct storages *s, int data)
{
	static const char *names[] = { "none", "bool", "int", "float", "str",
		"bytes", "list", "tuple", "dict", "tensor", "dtype", "enum", "object" };
	cJSON *o = cJSON_CreateObject();
	mate_value_kind k = mate_value_kind_of(v);
	char buf[64];
	size_t len;
	const char *str;

	cJSON_AddStringToObject(o, "type", names[k]);
	switch (k) {
	case MATE_V_NONE:
		break;
	case MATE_V_BOOL:
		cJSON_AddBoolToObject(o, "value", mate_value_get_bool(v));
		break;
	case MATE_V_INT:
		add_raw_int(o, "value", mate_value_get_int(v));
		break;
	case MATE_V_FLOAT: {
		double d = mate_value_get_float(v);
		if (isnan(d))
			strcpy(buf, "nan");
		else if (isinf(d))
			strcpy(buf, d > 0 ? "inf" : "-inf");
		else
			snprintf(buf, sizeof(buf), "%.17g", d);
		cJSON_AddStringToObject(o, "value", buf);
		break;
	}
	case MATE_V_STR:
		cJSON_AddStringToObject(o, "value", mate_value_get_str(v, NULL));
		break;
	case MATE_V_BYTES: {
		char *h;
		str = mate_value_get_str(v, &len);
		h = to_hex((const unsigned char *)str, len);
		cJSON_AddStringToObject(o, "hex", h);
		free(h);
		break;
	}
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		return describe_seq(o, v, s, data);
	case MATE_V_TENSOR:
		return describe_tensor(o, v, s, data);
	case MATE_V_DTYPE:
		cJSON_AddStringToObject(o, "value", mate_dtype_name(mate_value_get_dtype(v)));
		break;
	case MATE_V_ENUM:
		cJSON_AddStringToObject(o, "name", mate_value_enum_name(v));
		add_raw_int(o, "value", mate_value_get_int(v));
		break;
	case MATE_V_OBJECT:
		cJSON_AddStringToObject(o, "name", mate_value_object_type(v));
		cJSON_AddStringToObject(o, "repr", mate_value_object_repr(v));
		break;
	}
	return o;
}

static int
is_safetensors(const char *path)
{
	size_t n = strlen(path);

	return n >= 12 && strcmp(path + n - 12, ".safetensors") == 0;
}

static int
cmd_describe(const char *path, int data)
{
	mate_error err;
	mate_value *root, *meta = NULL;
	struct storages s = { 0 };
	cJSON *out;
	char *text;

	mate_error_clear(&err);
	if (is_safetensors(path)) {
		root = mate_safetensors_read(path, &meta, &err);
	} else {
		struct mate_pt_read_options opts = { 0 };
		opts.load_data = data;
		root = mate_pt_read(path, &opts, &err);
	}
	if (root == NULL) {
		fprintf(stderr, "tensorfile-tool: %s\n", err.message);
		return 1;
	}
	out = cJSON_CreateObject();
	cJSON_AddItemToObject(out, "root", describe(root, &s, data));
	cJSON_AddItemToObject(out, "metadata", meta ? describe(meta, &s, data) : cJSON_CreateNull());
	text = cJSON_PrintUnformatted(out);
	puts(text);
	free(text);
	cJSON_Delete(out);
	mate_value_free(root);
	mate_value_free(meta);
	free(s.list);
	return 0;
}

/* ---- write: JSON spec -> value tree --------------------------------------- */

struct spec_storages {
	mate_storage **list;
	size_t n;
};

static int64_t
json_int(const cJSON *j)
{
	if (cJSON_IsString(j))
		return strtoll(j->valuestring, NULL, 10);
	return j != NULL ? (int64_t)j->valuedouble : 0;
}

static int
json_int_array(const cJSON *a, int64_t *out)
{
	int n = 0;
	const cJSON *e;

	cJSON_ArrayForEach(e, a) {
		if (n == MATE_MAX_DIMS)
			return -1;
		out[n++] = json_int(e);
	}
	return n;
}

static unsigned char *
from_hex(const char *h, size_t *n)
{
	size_t len = h != NULL ? strlen(h) / 2 : 0;
	unsigned char *p = malloc(len + 1);

	if (p == NULL)
		abort();
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		p[i] = (unsigned char)v;
	}
	*n = len;
	return p;
}

static mate_value *build(const cJSON *j, struct spec_storages *ss);

static mate_value *
build_tensor(const cJSON *j, struct spec_storages *ss)
{
	mate_tensor t;
	int64_t shape[MATE_MAX_DIMS], stride[MATE_MAX_DIMS];
	int ndim = json_int_array(cJSON_GetObjectItem(j, "shape"), shape);
	int nstride = json_int_array(cJSON_GetObjectItem(j, "stride"), stride);
	mate_dtype dt = mate_dtype_from_name(cJSON_GetStringValue(cJSON_GetObjectItem(j, "dtype")));
	size_t id = (size_t)json_int(cJSON_GetObjectItem(j, "storage"));
	mate_value *v;

	if (ndim < 0 || nstride != ndim || dt == MATE_DTYPE_INVALID || id > 100000)
		return NULL;
	if (mate_tensor_init(&t, dt, ndim, shape, stride, NULL) != MATE_OK)
		return NULL;
	t.offset = json_int(cJSON_GetObjectItem(j, "offset"));
	if (id >= ss->n) {
		ss->list = realloc(ss->list, (id + 1) * sizeof(*ss->list));
		memset(ss->list + ss->n, 0, (id + 1 - ss->n) * sizeof(*ss->list));
		ss->n = id + 1;
	}
	if (ss->list[id] == NULL && cJSON_GetObjectItem(j, "zeros") != NULL) {
		size_t n = (size_t)json_int(cJSON_GetObjectItem(j, "zeros"));
		unsigned char *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		const cJSON *m;

		if (p == MAP_FAILED)
			return NULL;
		cJSON_ArrayForEach(m, cJSON_GetObjectItem(j, "marks")) {
			size_t at = (size_t)json_int(cJSON_GetArrayItem(m, 0));
			if (at < n)
				p[at] = (unsigned char)json_int(cJSON_GetArrayItem(m, 1));
		}
		if ((ss->list[id] = mate_storage_wrap(p, n, NULL)) == NULL)
			return NULL;
	}
	if (ss->list[id] == NULL) {
		size_t n;
		unsigned char *bytes = from_hex(cJSON_GetStringValue(cJSON_GetObjectItem(j, "hex")), &n);
		ss->list[id] = mate_storage_new(n, NULL);
		if (ss->list[id] != NULL && n > 0)
			memcpy(mate_storage_data(ss->list[id]), bytes, n);
		free(bytes);
		if (ss->list[id] == NULL)
			return NULL;
	}
	v = mate_value_tensor(&t, ss->list[id]);
	return v;
}

static mate_value *
build_seq(const cJSON *j, const char *type, struct spec_storages *ss)
{
	int dict = strcmp(type, "dict") == 0;
	mate_value *v;
	const cJSON *e;

	if (dict)
		v = cJSON_IsTrue(cJSON_GetObjectItem(j, "ordered")) ? mate_value_ordered_dict() : mate_value_dict();
	else
		v = strcmp(type, "list") == 0 ? mate_value_list() : mate_value_tuple();
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "items")) {
		int rc;
		if (dict) {
			mate_value *k = build(cJSON_GetArrayItem(e, 0), ss);
			mate_value *item = build(cJSON_GetArrayItem(e, 1), ss);
			rc = (k && item) ? mate_value_set(v, k, item) : -1;
			if (rc == -1) {
				mate_value_free(k);
				mate_value_free(item);
			}
		} else {
			mate_value *item = build(e, ss);
			rc = item ? mate_value_append(v, item) : -1;
		}
		if (rc != MATE_OK) {
			mate_value_free(v);
			return NULL;
		}
	}
	return v;
}

static mate_value *
build(const cJSON *j, struct spec_storages *ss)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(j, "type"));
	const cJSON *val = cJSON_GetObjectItem(j, "value");

	if (type == NULL)
		return NULL;
	if (strcmp(type, "none") == 0)
		return mate_value_none();
	if (strcmp(type, "bool") == 0)
		return mate_value_bool(cJSON_IsTrue(val));
	if (strcmp(type, "int") == 0)
		return mate_value_int(json_int(val));
	if (strcmp(type, "float") == 0)
		return mate_value_float(cJSON_IsString(val) ? strtod(val->valuestring, NULL) : val ? val->valuedouble : 0);
	if (strcmp(type, "str") == 0)
		return mate_value_str(cJSON_GetStringValue(val), (size_t)-1);
	if (strcmp(type, "bytes") == 0) {
		size_t n;
		unsigned char *p = from_hex(cJSON_GetStringValue(cJSON_GetObjectItem(j, "hex")), &n);
		mate_value *v = mate_value_bytes(p, n);
		free(p);
		return v;
	}
	if (strcmp(type, "list") == 0 || strcmp(type, "tuple") == 0 || strcmp(type, "dict") == 0)
		return build_seq(j, type, ss);
	if (strcmp(type, "tensor") == 0)
		return build_tensor(j, ss);
	if (strcmp(type, "dtype") == 0)
		return mate_value_dtype(mate_dtype_from_name(cJSON_GetStringValue(val)));
	if (strcmp(type, "enum") == 0)
		return mate_value_enum(cJSON_GetStringValue(cJSON_GetObjectItem(j, "name")), json_int(val));
	if (strcmp(type, "object") == 0)
		return mate_value_object(cJSON_GetStringValue(cJSON_GetObjectItem(j, "name")),
		    cJSON_GetStringValue(cJSON_GetObjectItem(j, "repr")));
	return NULL;
}

static char *
read_file(const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL)
		return NULL;
	do {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap + 1);
			if (buf == NULL)
				abort();
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (f != stdin)
		fclose(f);
	buf[len] = '\0';
	return buf;
}

static int
cmd_write(const char *spec_path, const char *out, int v3, const char *root_name)
{
	char *text = read_file(spec_path);
	cJSON *spec = text ? cJSON_Parse(text) : NULL;
	struct spec_storages ss = { 0 };
	mate_value *root = NULL, *meta = NULL;
	const cJSON *jm;
	mate_error err;
	int rc = 1;

	mate_error_clear(&err);
	free(text);
	if (spec == NULL) {
		fprintf(stderr, "tensorfile-tool: %s: cannot read or parse the JSON spec\n", spec_path);
		return 2;
	}
	root = build(cJSON_GetObjectItem(spec, "root"), &ss);
	jm = cJSON_GetObjectItem(spec, "metadata");
	if (jm != NULL && !cJSON_IsNull(jm))
		meta = build(jm, &ss);
	if (root == NULL) {
		fprintf(stderr, "tensorfile-tool: %s: invalid spec\n", spec_path);
		rc = 2;
	} else if (is_safetensors(out)) {
		rc = mate_safetensors_write(out, root, meta, &err) == MATE_OK ? 0 : 1;
	} else {
		struct mate_pt_write_options opts = { root_name, v3 };
		rc = mate_pt_write(out, root, &opts, &err) == MATE_OK ? 0 : 1;
	}
	if (rc == 1)
		fprintf(stderr, "tensorfile-tool: %s\n", err.message);
	mate_value_free(root);
	mate_value_free(meta);
	for (size_t i = 0; i < ss.n; i++)
		mate_storage_unref(ss.list[i]);
	free(ss.list);
	cJSON_Delete(spec);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "describe") == 0)
		return cmd_describe(argv[2], !(argc > 3 && strcmp(argv[3], "--no-data") == 0));
	if (argc >= 4 && strcmp(argv[1], "write") == 0) {
		int v3 = 0;
		const char *root = NULL;
		for (int i = 4; i < argc; i++) {
			if (strcmp(argv[i], "--v3") == 0)
				v3 = 1;
			else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
				root = argv[++i];
			else
				goto usage;
		}
		return cmd_write(argv[2], argv[3], v3, root);
	}
usage:
	fprintf(stderr, "usage: tensorfile-tool describe FILE [--no-data]\n"
	    "       tensorfile-tool write SPEC.json OUT [--v3] [--root NAME]\n");
	return 2;
}
