/* dump_writer.c: level 10: crash-safe dump directories, tensor files and the metadata.jsonl/session.jsonl records. */
#include "recorder_private.h"
#include "backend.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t mate_rec_dump_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per-session accounting, under mate_rec_dump_lock. */
struct fn_counter {
	struct fn_counter *next;
	int64_t calls;
	char name[];
};
#define NBUCKETS 256
static struct {
	struct fn_counter *buckets[NBUCKETS];
	int64_t count;
	uint64_t bytes;
	int root_ready;
	int session_fd;
} tally = { .session_fd = -1 };

struct rec_dump {
	char *dir;
	int meta_fd;
	cJSON *rec;           /* the record without its closing keys */
	int64_t in_bytes;
};

void
mate_rec_dump_reset(int full)
{
	pthread_mutex_lock(&mate_rec_dump_lock);
	for (int i = 0; i < NBUCKETS; i++) {
		while (tally.buckets[i] != NULL) {
			struct fn_counter *n = tally.buckets[i]->next;
			free(tally.buckets[i]);
			tally.buckets[i] = n;
		}
	}
	if (full) {
		if (tally.session_fd >= 0)
			close(tally.session_fd);
		tally.session_fd = -1;
		tally.root_ready = 0;
	}
	tally.count = 0;
	tally.bytes = 0;
	pthread_mutex_unlock(&mate_rec_dump_lock);
}

void
mate_rec_dump_free(struct rec_dump *d)
{
	if (d == NULL)
		return;
	if (d->meta_fd >= 0)
		close(d->meta_fd);
	cJSON_Delete(d->rec);
	free(d->dir);
	free(d);
}

/* A dump I/O error ends dumping for the session, with one warning. */
static void
io_failed(const char *what, const char *path, int errnum)
{
	mate_rec_dump_stop();
	mate_rec_warn_once(REC_ONCE_DUMP_IO, "dumping stopped: %s %s: %s", what, path, strerror(errnum));
}

/* ---- names ------------------------------------------------------------------------ */

static int
wanted(const char *name)
{
	const struct rec_config *cfg = &mate_rec_cfg;
	int ok = cfg->n_include == 0;

	for (size_t i = 0; i < cfg->n_include && !ok; i++)
		ok = fnmatch(cfg->include[i], name, 0) == 0;
	for (size_t i = 0; i < cfg->n_exclude && ok; i++)
		ok = fnmatch(cfg->exclude[i], name, 0) != 0;
	return ok;
}

/* The next call number of a function; -1 when out of memory. Lock held. */
static int64_t
next_call(const char *name)
{
	uint32_t h = 2166136261u;
	struct fn_counter *n;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (n = tally.buckets[h % NBUCKETS]; n != NULL; n = n->next)
		if (strcmp(n->name, name) == 0)
			return ++n->calls;
	n = malloc(sizeof(*n) + strlen(name) + 1);
	if (n == NULL)
		return -1;
	strcpy(n->name, name);
	n->calls = 1;
	n->next = tally.buckets[h % NBUCKETS];
	tally.buckets[h % NBUCKETS] = n;
	return 1;
}

/* "YYYYMMDD_HHMMSS_mmm", local time, milliseconds truncated. */
static void
dump_stamp(char *out, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char sec[20];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y%m%d_%H%M%S", &tm);
	snprintf(out, len, "%s_%03ld", sec, (long)(ts.tv_nsec / 1000000));
}

/* The function name as a safe directory-name part. */
static void
safe_name(char *out, size_t len, const char *name)
{
	size_t i;

	for (i = 0; name[i] != '\0' && i + 1 < len && i < 120; i++) {
		char ch = name[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
		out[i] = ok ? ch : '_';
	}
	out[i] = '\0';
}

/* mkdir -p of the dump root, then session.jsonl. Lock held. */
static int
prepare_root(void)
{
	const char *root = mate_rec_cfg.dump_dir;
	char *path, *p, *session;
	size_t n = strlen(root);

	if (tally.root_ready)
		return 0;
	path = strdup(root);
	session = malloc(n + 16);
	if (path == NULL || session == NULL) {
		free(path);
		free(session);
		return -ENOMEM;
	}
	for (p = path + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char saved = *p;
			*p = '\0';
			if (mkdir(path, 0755) != 0 && errno != EEXIST) {
				int e = errno;
				free(path);
				free(session);
				io_failed("cannot create", root, e);
				return -e;
			}
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	free(path);
	snprintf(session, n + 16, "%s/session.jsonl", root);
	tally.session_fd = open(session, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (tally.session_fd < 0) {
		int e = errno;
		io_failed("cannot open", session, e);
		free(session);
		return -e;
	}
	free(session);
	tally.root_ready = 1;
	return 0;
}

/* ---- JSON values -------------------------------------------------------------------- */

static cJSON *
raw_int(int64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%" PRId64, v);
	return cJSON_CreateRaw(tmp);
}

static cJSON *
raw_float(double d)
{
	struct mate_buf b;
	cJSON *j = NULL;

	mate_buf_init(&b);
	mate_buf_jsonfloat(&b, d);
	if (mate_buf_str(&b) != NULL)
		j = cJSON_CreateRaw(b.p);
	mate_buf_free(&b);
	return j;
}

static cJSON *
dims(const int64_t *v, int n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; a != NULL && i < n; i++)
		cJSON_AddItemToArray(a, raw_int(v[i]));
	return a;
}

static cJSON *
str_of(void (*fn)(struct mate_buf *, const mate_value *), const mate_value *v)
{
	struct mate_buf b;
	cJSON *j = NULL;

	mate_buf_init(&b);
	fn(&b, v);
	if (mate_buf_str(&b) != NULL)
		j = cJSON_CreateString(b.p);
	mate_buf_free(&b);
	return j;
}

static void
put_dtype(struct mate_buf *b, const mate_value *v)
{
	mate_buf_dtype(b, mate_value_get_dtype(v));
}

static cJSON *
device_of(const mate_tensor *t)
{
	char tmp[32];

	if (t->device_type == MATE_DEVICE_CUDA)
		snprintf(tmp, sizeof(tmp), "cuda:%d", t->device_index);
	else
		snprintf(tmp, sizeof(tmp), "cpu");
	return cJSON_CreateString(tmp);
}

static cJSON *
tensor_details(const mate_tensor *t)
{
	cJSON *o = cJSON_CreateObject();
	struct mate_buf b;

	mate_buf_init(&b);
	mate_buf_dtype(&b, t->dtype);
	cJSON_AddItemToObject(o, "shape", dims(t->shape, t->ndim));
	cJSON_AddItemToObject(o, "dtype", cJSON_CreateString(mate_buf_str(&b) ? b.p : "?"));
	cJSON_AddItemToObject(o, "stride", dims(t->stride, t->ndim));
	cJSON_AddItemToObject(o, "device", device_of(t));
	mate_buf_free(&b);
	return o;
}

static cJSON *
json_tensor(const mate_call *c, const mate_value *v)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	struct rec_tensor *rt = mate_rec_find(c, v);
	cJSON *o = cJSON_CreateObject(), *d = tensor_details(t), *it;

	cJSON_AddItemToObject(o, "type", cJSON_CreateString("torch.Tensor"));
	while (d != NULL && (it = d->child) != NULL)
		cJSON_AddItemToObject(o, it->string, cJSON_DetachItemViaPointer(d, it));
	cJSON_Delete(d);
	cJSON_AddItemToObject(o, "requires_grad", cJSON_CreateBool(t->requires_grad));
	cJSON_AddItemToObject(o, "is_contiguous", cJSON_CreateBool(mate_tensor_is_contiguous(t)));
	if (rt != NULL)
		cJSON_AddItemToObject(o, "tensor_key", cJSON_CreateString(rt->key));
	return o;
}

static cJSON *
json_seq(const mate_call *c, const mate_value *v, int depth)
{
	mate_value_kind k = mate_value_kind_of(v);
	size_t n = mate_value_len(v);
	cJSON *o = cJSON_CreateObject(), *items;

	cJSON_AddItemToObject(o, "type", cJSON_CreateString(k == MATE_V_LIST ? "list" :
	    k == MATE_V_TUPLE ? "tuple" : "dict"));
	cJSON_AddItemToObject(o, "length", raw_int((int64_t)n));
	if (depth >= 8) {
		cJSON_AddItemToObject(o, "truncated", cJSON_CreateTrue());
		return o;
	}
	items = cJSON_CreateArray();
	for (size_t i = 0; i < n && items != NULL; i++) {
		cJSON *item = mate_rec_json_value(c, mate_value_item(v, i), depth + 1);
		if (k == MATE_V_DICT) {
			cJSON *kv = cJSON_CreateObject();
			cJSON_AddItemToObject(kv, "key", mate_rec_json_value(c, mate_value_key(v, i), depth + 1));
			cJSON_AddItemToObject(kv, "value", item);
			item = kv;
		}
		cJSON_AddItemToArray(items, item);
	}
	cJSON_AddItemToObject(o, "items", items);
	cJSON_AddItemToObject(o, "truncated", cJSON_CreateFalse());
	return o;
}

static cJSON *
typed(const char *type, const char *key, cJSON *value)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddItemToObject(o, "type", cJSON_CreateString(type));
	cJSON_AddItemToObject(o, key, value);
	return o;
}

cJSON *
mate_rec_json_value(const mate_call *c, const mate_value *v, int depth)
{
	cJSON *o;
	size_t n;
	const char *s;

	switch (mate_value_kind_of(v)) {
	case MATE_V_NONE:
		return cJSON_CreateNull();
	case MATE_V_BOOL:
		return cJSON_CreateBool(mate_value_get_bool(v));
	case MATE_V_INT:
		return raw_int(mate_value_get_int(v));
	case MATE_V_FLOAT:
		return raw_float(mate_value_get_float(v));
	case MATE_V_STR:
		s = mate_value_get_str(v, &n);
		return cJSON_CreateString(s);
	case MATE_V_BYTES:
		return typed("bytes", "repr", str_of(mate_rec_fmt_inline, v));
	case MATE_V_DTYPE:
		return typed("torch.dtype", "value", str_of(put_dtype, v));
	case MATE_V_ENUM:
		o = typed("enum", "name", cJSON_CreateString(mate_value_enum_name(v)));
		cJSON_AddItemToObject(o, "value", raw_int(mate_value_get_int(v)));
		return o;
	case MATE_V_OBJECT:
		return typed(mate_value_object_type(v), "repr",
		    cJSON_CreateString(mate_value_object_repr(v)));
	case MATE_V_TENSOR:
		return json_tensor(c, v);
	default:
		return json_seq(c, v, depth);
	}
}

/* ---- records -------------------------------------------------------------------------- */

static cJSON *
input_metadata(const mate_call *c)
{
	cJSON *o = cJSON_CreateObject();
	char key[300];
	size_t pos = 0;

	for (int pass = 0; pass < 2 && o != NULL; pass++)
		for (size_t i = 0; i < c->nargs; i++) {
			const struct rec_arg *a = &c->args[i];
			if (pass == 0 && a->role == MATE_ARG)
				snprintf(key, sizeof(key), "arg_%zu", pos++);
			else if (pass == 1 && a->role == MATE_KWARG)
				snprintf(key, sizeof(key), "kwarg_%.280s", a->name);
			else
				continue;
			if (mate_value_kind_of(a->v) != MATE_V_TENSOR)
				cJSON_AddItemToObject(o, key, mate_rec_json_value(c, a->v, 0));
		}
	return o;
}

static cJSON *
size_mb(int64_t bytes)
{
	return raw_float((double)bytes / (1024.0 * 1024.0));
}

static cJSON *
first_record(const mate_call *c, const char *stamp, int64_t seq, int64_t in_bytes)
{
	cJSON *r = cJSON_CreateObject(), *info = cJSON_CreateObject();
	cJSON *keys = cJSON_CreateArray(), *details = cJSON_CreateObject(), *ver;

	cJSON_AddItemToObject(r, "function_name", cJSON_CreateString(c->name));
	cJSON_AddItemToObject(r, "module", cJSON_CreateString(c->module));
	cJSON_AddItemToObject(r, "call_sequence", raw_int(seq));
	cJSON_AddItemToObject(r, "timestamp", cJSON_CreateString(stamp));
	cJSON_AddItemToObject(r, "process_id", raw_int(mate_rec_pid()));
	cJSON_AddItemToObject(r, "input_metadata", input_metadata(c));
	cJSON_AddItemToObject(r, "output_metadata", cJSON_CreateObject());
	for (size_t i = 0; i < c->ntensors; i++) {
		const struct rec_tensor *rt = &c->tensors[i];
		if (!rt->dumped)
			continue;
		cJSON_AddItemToArray(keys, cJSON_CreateString(rt->key));
		cJSON_AddItemToObject(details, rt->key, tensor_details(mate_value_get_tensor(rt->v)));
	}
	cJSON_AddItemToObject(info, "input_tensor_keys", keys);
	cJSON_AddItemToObject(info, "output_tensor_keys", cJSON_CreateArray());
	cJSON_AddItemToObject(info, "input_size_bytes", raw_int(in_bytes));
	cJSON_AddItemToObject(info, "input_size_mb", size_mb(in_bytes));
	cJSON_AddItemToObject(r, "tensor_info", info);
	cJSON_AddItemToObject(r, "tensor_details", details);
	cJSON_AddItemToObject(r, "tensor_format",
	    cJSON_CreateString(mate_rec_cfg.safetensors ? "safetensors" : "torch"));
	cJSON_AddItemToObject(r, "function_signature", cJSON_CreateString(c->signature));
	ver = cJSON_CreateObject();
	cJSON_AddItemToObject(ver, "mate", cJSON_CreateString(mate_version_string()));
	cJSON_AddItemToObject(ver, "backend", cJSON_CreateString(mate_backend_get()->name));
	cJSON_AddItemToObject(r, "versions", ver);
	return r;
}

/* Appends the record with its closing keys to metadata.jsonl and
 * session.jsonl, one write() per line. */
static int
emit(const mate_call *c, struct rec_dump *d, const char *status, const char *extra_key,
    const char *extra)
{
	struct mate_buf b;
	int rc;

	mate_buf_init(&b);
	mate_buf_cjson(&b, d->rec);
	if (b.len > 0)
		b.len--;  /* reopen the object */
	mate_buf_puts(&b, ", \"execution_status\": ");
	mate_buf_jsonstr(&b, status, strlen(status));
	if (extra_key != NULL) {
		mate_buf_printf(&b, ", \"%s\": ", extra_key);
		mate_buf_jsonstr(&b, extra, strlen(extra));
	}
	if (c->has_self)
		mate_buf_printf(&b, ", \"self_id\": %" PRIu64, c->self_id);
	mate_buf_puts(&b, ", \"dump_dir\": ");
	mate_buf_jsonstr(&b, d->dir, strlen(d->dir));
	mate_buf_puts(&b, "}\n");
	if (mate_buf_str(&b) == NULL) {
		mate_buf_free(&b);
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a dump record was not written");
		return -1;
	}
	rc = mate_write_all(d->meta_fd, b.p, b.len);
	if (rc == 0)
		rc = mate_write_all(tally.session_fd, b.p, b.len);
	mate_buf_free(&b);
	if (rc != 0) {
		io_failed("cannot append a record in", d->dir, -rc);
		return -1;
	}
	return 0;
}

/* Writes the dumped tensors of the phase to dir/name.pt or .safetensors.
 * 0 ok or nothing to write, 1 the writer is unavailable, -1 failed. */
static int
write_tensors(const mate_call *c, const char *dir, const char *name)
{
	mate_value *dict = mate_value_dict();
	mate_error err;
	char *path;
	size_t n = strlen(dir) + strlen(name) + 16;
	int rc = 0, any = 0;

	path = malloc(n);
	if (dict == NULL || path == NULL) {
		mate_value_free(dict);
		free(path);
		return -1;
	}
	for (size_t i = 0; i < c->ntensors && rc == 0; i++) {
		const struct rec_tensor *rt = &c->tensors[i];
		if (!rt->dumped)
			continue;
		any = 1;
		rc = mate_value_set_str(dict, rt->key, mate_value_tensor(&rt->host, rt->st));
	}
	snprintf(path, n, "%s/%s.%s", dir, name, mate_rec_cfg.safetensors ? "safetensors" : "pt");
	mate_error_clear(&err);
	if (rc == 0 && any)
		rc = mate_rec_cfg.safetensors ? mate_safetensors_write(path, dict, NULL, &err) :
		    mate_pt_write(path, dict, NULL, &err);
	mate_value_free(dict);
	free(path);
	if (rc == MATE_ERR_UNSUPPORTED) {
		mate_rec_warn_once(REC_ONCE_DUMP_WRITER, "%s; dumps keep their records only", err.message);
		return 1;
	}
	if (rc != 0) {
		io_failed("cannot write", err.message[0] ? err.message : dir,
		    err.sys_errno ? err.sys_errno : EIO);
		return -1;
	}
	return 0;
}

/* Stages the dumped tensors; the total of their bytes, or -1. */
static int64_t
stage_dumped(mate_call *c)
{
	int64_t total = 0;

	for (size_t i = 0; i < c->ntensors; i++) {
		struct rec_tensor *rt = &c->tensors[i];
		if (!rt->dumped)
			continue;
		if (mate_rec_capturing(mate_value_get_tensor(rt->v))) {
			mate_rec_warn_once(REC_ONCE_DUMP_CAPTURE,
			    "calls made during CUDA graph capture are not dumped");
			return -1;
		}
		if (mate_rec_stage(rt) != 1 || !mate_add_ok(total, rt->nbytes, &total))
			return -1;
	}
	return total;
}

/* Takes a dump slot: limits, call number, root directory. */
static int64_t
reserve(const mate_call *c, int64_t bytes)
{
	const struct rec_config *cfg = &mate_rec_cfg;
	int64_t seq = -1;

	pthread_mutex_lock(&mate_rec_dump_lock);
	if (tally.count >= cfg->max_count) {
		pthread_mutex_unlock(&mate_rec_dump_lock);
		mate_rec_warn_once(REC_ONCE_DUMP_COUNT,
		    "dump limit reached (MATE_DUMP_MAX_COUNT=%" PRId64 "); later calls are not dumped",
		    cfg->max_count);
		return -1;
	}
	if (tally.bytes + (uint64_t)bytes > cfg->max_bytes || tally.bytes + (uint64_t)bytes < tally.bytes) {
		pthread_mutex_unlock(&mate_rec_dump_lock);
		mate_rec_warn_once(REC_ONCE_DUMP_SIZE,
		    "dump size limit reached (MATE_DUMP_MAX_SIZE_GB=%g); %s and later calls that do not fit are not dumped",
		    cfg->max_size_gb, c->name);
		return -1;
	}
	if (prepare_root() == 0 && (seq = next_call(c->name)) > 0) {
		tally.count++;
		tally.bytes += (uint64_t)bytes;
	} else if (seq < 0 && tally.root_ready)
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a call was not dumped");
	pthread_mutex_unlock(&mate_rec_dump_lock);
	return seq;
}

/* The dump root vanished (someone removed it while the program ran):
 * make it and session.jsonl again. */
static int
remake_root(void)
{
	int rc;

	pthread_mutex_lock(&mate_rec_dump_lock);
	if (tally.session_fd >= 0)
		close(tally.session_fd);
	tally.session_fd = -1;
	tally.root_ready = 0;
	rc = prepare_root();
	pthread_mutex_unlock(&mate_rec_dump_lock);
	if (rc != 0)
		errno = -rc;
	return rc;
}

static struct rec_dump *
make_dir(const mate_call *c, int64_t seq, char *stamp, size_t stamp_len)
{
	struct rec_dump *d = calloc(1, sizeof(*d));
	char safe[128], *meta;
	size_t n;

	if (d == NULL)
		return NULL;
	d->meta_fd = -1;
	dump_stamp(stamp, stamp_len);
	safe_name(safe, sizeof(safe), c->name);
	n = strlen(mate_rec_cfg.dump_dir) + strlen(stamp) + strlen(safe) + 64;
	d->dir = malloc(n);
	meta = malloc(n + 16);
	if (d->dir == NULL || meta == NULL) {
		free(meta);
		mate_rec_dump_free(d);
		return NULL;
	}
	/* The name can exist only when a new session (mate_configure) restarted
	 * the call counters within the same millisecond: wait for the next one. */
	int made;
	for (int tries = 0;; tries++) {
		snprintf(d->dir, n, "%s/%s_pid%ld_%s_call%04" PRId64, mate_rec_cfg.dump_dir,
		    stamp, (long)mate_rec_pid(), safe, seq);
		made = mkdir(d->dir, 0755) == 0;
		if (made || errno != EEXIST || tries == 20)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		dump_stamp(stamp, stamp_len);
	}
	snprintf(meta, n + 16, "%s/metadata.jsonl", d->dir);
	if (!made && (errno != ENOENT || remake_root() != 0 || mkdir(d->dir, 0755) != 0))
		io_failed("cannot create", d->dir, errno);
	else if ((d->meta_fd = open(meta, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
		io_failed("cannot create", meta, errno);
	free(meta);
	if (d->meta_fd < 0) {
		mate_rec_dump_free(d);
		return NULL;
	}
	return d;
}

void
mate_rec_dump_inputs(mate_call *c, struct mate_buf *log)
{
	char stamp[40];
	struct rec_dump *d;
	int64_t bytes, seq;

	if (mate_rec_dump_stopped() || !wanted(c->name))
		return;
	if ((bytes = stage_dumped(c)) < 0 || (seq = reserve(c, bytes)) <= 0)
		return;
	if ((d = make_dir(c, seq, stamp, sizeof(stamp))) == NULL)
		return;
	d->in_bytes = bytes;
	if (write_tensors(c, d->dir, "inputs") < 0 ||
	    (d->rec = first_record(c, stamp, seq, bytes)) == NULL ||
	    emit(c, d, "inputs_saved", NULL, NULL) != 0) {
		mate_rec_dump_free(d);
		return;
	}
	c->dump = d;
	if (log != NULL) {
		int64_t count;
		pthread_mutex_lock(&mate_rec_dump_lock);
		count = tally.count;
		pthread_mutex_unlock(&mate_rec_dump_lock);
		mate_buf_printf(log, "Dumped inputs to: %s (size: %.2f MB, total: %" PRId64 "/%" PRId64
		    " dumps)\n", d->dir, (double)bytes / (1024.0 * 1024.0), count, mate_rec_cfg.max_count);
		mate_buf_printf(log, "Inputs dumped to: %s\n", d->dir);
	}
}

static void
replace(cJSON *obj, const char *key, cJSON *item)
{
	if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
	else
		cJSON_AddItemToObject(obj, key, item);
}

static cJSON *
output_metadata(const mate_call *c)
{
	const mate_value *items[64];
	cJSON *o = cJSON_CreateObject();
	char key[32];
	int tuple;
	size_t n = mate_rec_results(c, items, 64, &tuple);

	if (n == 0 && !tuple)
		cJSON_AddItemToObject(o, "result", cJSON_CreateNull());
	for (size_t i = 0; i < n; i++) {
		if (mate_value_kind_of(items[i]) == MATE_V_TENSOR)
			continue;
		if (tuple)
			snprintf(key, sizeof(key), "result_%zu", i);
		else
			snprintf(key, sizeof(key), "result");
		cJSON_AddItemToObject(o, key, mate_rec_json_value(c, items[i], 0));
	}
	return o;
}

void
mate_rec_dump_outputs(mate_call *c, struct mate_buf *log)
{
	struct rec_dump *d = c->dump;
	cJSON *info, *details, *keys;
	int64_t bytes, total;

	if (d == NULL || mate_rec_dump_stopped())
		return;
	if ((bytes = stage_dumped(c)) < 0) {
		emit(c, d, "inputs_saved", "note", "outputs not saved: a tensor could not be read");
		return;
	}
	pthread_mutex_lock(&mate_rec_dump_lock);
	if (tally.bytes + (uint64_t)bytes > mate_rec_cfg.max_bytes) {
		pthread_mutex_unlock(&mate_rec_dump_lock);
		mate_rec_warn_once(REC_ONCE_DUMP_SIZE,
		    "dump size limit reached (MATE_DUMP_MAX_SIZE_GB=%g); outputs of %s not dumped",
		    mate_rec_cfg.max_size_gb, c->name);
		emit(c, d, "inputs_saved", "note", "outputs not saved: MATE_DUMP_MAX_SIZE_GB reached");
		return;
	}
	tally.bytes += (uint64_t)bytes;
	pthread_mutex_unlock(&mate_rec_dump_lock);
	if (write_tensors(c, d->dir, "outputs") < 0)
		return;
	info = cJSON_GetObjectItemCaseSensitive(d->rec, "tensor_info");
	details = cJSON_GetObjectItemCaseSensitive(d->rec, "tensor_details");
	keys = cJSON_CreateArray();
	for (size_t i = 0; i < c->ntensors; i++) {
		const struct rec_tensor *rt = &c->tensors[i];
		cJSON_AddItemToArray(keys, cJSON_CreateString(rt->key));
		replace(details, rt->key, tensor_details(mate_value_get_tensor(rt->v)));
	}
	total = d->in_bytes + bytes;
	replace(d->rec, "output_metadata", output_metadata(c));
	replace(info, "output_tensor_keys", keys);
	cJSON_AddItemToObject(info, "output_size_bytes", raw_int(bytes));
	cJSON_AddItemToObject(info, "output_size_mb", size_mb(bytes));
	cJSON_AddItemToObject(info, "total_size_bytes", raw_int(total));
	cJSON_AddItemToObject(info, "total_size_mb", size_mb(total));
	if (emit(c, d, "completed", NULL, NULL) != 0 || log == NULL)
		return;
	mate_buf_printf(log, "Dumped outputs to: %s (output size: %.2f MB)\n", d->dir,
	    (double)bytes / (1024.0 * 1024.0));
	mate_buf_printf(log, "Outputs dumped to: %s\n", d->dir);
}

void
mate_rec_dump_failed(mate_call *c, const char *error)
{
	if (c->dump == NULL || mate_rec_dump_stopped())
		return;
	emit(c, c->dump, "failed", "error", error);
}
