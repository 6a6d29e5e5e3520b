/* dump_writer.c: level 10: crash-safe dump directories, tensor files and the metadata.jsonl/session.jsonl records. */
#include "recorder_private.h"
#include "logfile.h"
#include "backend.h"
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
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

/* A tensor's entry in tensor_details. */
struct rec_detail {
	char *key;
	char *text;           /* {"shape": ..., "device": ...} */
};

struct rec_dump {
	char *dir;
	char *path;           /* scratch: dir + "/" + a file name */
	size_t dir_len;
	pid_t pid;            /* the process that made it: a forked child never writes there */
	int meta_fd;
	off_t meta_len;       /* bytes in metadata.jsonl */
	/* The record as text, in pieces: txt holds the head ('{' through the
	 * input_metadata value), the items of input_tensor_keys, the tail
	 * ("tensor_format" through "versions") and, once the call completed,
	 * the output_metadata value, the items of output_tensor_keys and those
	 * of inplace_tensor_keys; end[i] is where piece i ends. */
	struct mate_buf txt;
	size_t end[6];
	int completed;
	struct rec_detail *details;
	size_t ndetails, cap_details;
	int64_t in_bytes, out_bytes, inplace_bytes;
	int n_inplace;        /* tensors in the in-place file */
};

enum { PIECE_HEAD, PIECE_IN_KEYS, PIECE_TAIL, PIECE_OUT_META, PIECE_OUT_KEYS, PIECE_INPLACE_KEYS };

/* The file of the arguments' post-call values (spec/dumps.md section 3):
 * "inplace" with the tensor format's extension. */
#define INPLACE_STEM "inplace"

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
	for (size_t i = 0; i < d->ndetails; i++) {
		free(d->details[i].key);
		free(d->details[i].text);
	}
	free(d->details);
	mate_buf_free(&d->txt);
	free(d->dir);
	free(d->path);
	free(d);
}

/* A dump I/O error ends dumping for the session, with one warning. */
static void
io_failed(const char *what, const char *path, int errnum)
{
	mate_rec_dump_stop();
	mate_rec_warn_once(REC_ONCE_DUMP_IO, "dumping stopped: %s %s: %s", what, path,
	    mate_log_strerror(errnum));
}

/* ---- names ------------------------------------------------------------------------ */

static int
wanted(const char *name)
{
	return mate_patterns_select(&mate_rec_cfg.include, &mate_rec_cfg.exclude, name);
}

/* The next call number of a function; -1 when out of memory. Lock held. */
static int64_t
next_call(const char *name)
{
	uint32_t h = mate_fnv1a32(name, strlen(name));
	struct fn_counter *n;

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

/* "YYYYMMDD_HHMMSS_mmm", local time, milliseconds truncated; out has 40
 * bytes. */
static void
dump_stamp(char *out)
{
	static __thread time_t last = (time_t)-1;
	static __thread char sec[20];
	struct timespec ts;
	struct tm tm;
	size_t n;
	long ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != last) {
		localtime_r(&ts.tv_sec, &tm);
		strftime(sec, sizeof(sec), "%Y%m%d_%H%M%S", &tm);
		last = ts.tv_sec;
	}
	ms = ts.tv_nsec / 1000000;
	n = strlen(sec);
	memcpy(out, sec, n);
	out[n] = '_';
	out[n + 1] = (char)('0' + ms / 100);
	out[n + 2] = (char)('0' + ms / 10 % 10);
	out[n + 3] = (char)('0' + ms % 10);
	out[n + 4] = '\0';
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

/* A process killed inside a write() that crossed a page boundary can
 * leave a torn last line; end it, so that the records appended after it
 * stay whole lines. (A concurrent append can make this an empty line.) */
static void
end_torn_line(int fd)
{
	struct stat st;
	char last;

	if (fstat(fd, &st) == 0 && st.st_size > 0 &&
	    pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
		(void)!write(fd, "\n", 1);
}

/* Appends one line in one write(). When the write fails after part of the
 * line (a full disk), the fragment is cut off again when this process is
 * the file's only writer (len: its length), else ended with a newline if
 * one still fits. */
static int
append_line(int fd, const char *p, size_t n, off_t *len)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			if (len != NULL)
				(void)!ftruncate(fd, *len);
			else if (done > 0)
				(void)!write(fd, "\n", 1);
			return -e;
		}
		done += (size_t)w;
	}
	if (len != NULL)
		*len += (off_t)n;
	return 0;
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
	tally.session_fd = mate_log_open(session, O_CREAT | O_APPEND, MATE_LOG_MADE);
	if (tally.session_fd < 0) {
		int e = -tally.session_fd;
		tally.session_fd = -1;
		io_failed("cannot open", session, e);
		free(session);
		return -e;
	}
	free(session);
	end_torn_line(tally.session_fd);
	tally.root_ready = 1;
	return 0;
}

/* ---- JSON text, spaced as Python's json.dumps -------------------------------------------- */

static void
json_dims(struct mate_buf *b, const int64_t *v, int n, const char *sep)
{
	mate_buf_putc(b, '[');
	for (int i = 0; i < n; i++) {
		if (i > 0)
			mate_buf_puts(b, sep);
		mate_buf_int(b, v[i]);
	}
	mate_buf_putc(b, ']');
}

void
mate_rec_tensor_fields(struct mate_buf *b, const mate_tensor *t, int compact)
{
	static const char *const words[2][5] = {
		{ "\"shape\": ", ", \"dtype\": \"", "\", \"stride\": ", ", \"device\": \"", ", " },
		{ "\"shape\":", ",\"dtype\":\"", "\",\"stride\":", ",\"device\":\"", "," },
	};
	const char *const *w = words[compact != 0];

	mate_buf_puts(b, w[0]);
	json_dims(b, t->shape, t->ndim, w[4]);
	mate_buf_puts(b, w[1]);
	mate_buf_dtype(b, t->dtype);       /* letters, digits and dots only */
	mate_buf_puts(b, w[2]);
	json_dims(b, t->stride, t->ndim, w[4]);
	mate_buf_puts(b, w[3]);
	if (t->device_type == MATE_DEVICE_CUDA) {
		mate_buf_puts(b, "cuda:");
		mate_buf_int(b, t->device_index);
	} else
		mate_buf_puts(b, "cpu");
	mate_buf_putc(b, '"');
}

static void
json_str(struct mate_buf *b, const char *s)
{
	mate_buf_jsonstr(b, s, strlen(s));
}

/* '{"type": TYPE, "KEY": ' (the caller writes the value and the '}'). */
static void
json_typed(struct mate_buf *b, const char *type, const char *key)
{
	mate_buf_puts(b, "{\"type\": ");
	json_str(b, type);
	mate_buf_puts(b, ", ");
	json_str(b, key);
	mate_buf_puts(b, ": ");
}

static void
json_tensor(struct mate_buf *b, const mate_call *c, const mate_value *v)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	struct rec_tensor *rt = mate_rec_find(c, v);

	mate_buf_puts(b, "{\"type\": \"torch.Tensor\", ");
	mate_rec_tensor_fields(b, t, 0);
	mate_buf_puts(b, t->requires_grad ? ", \"requires_grad\": true" : ", \"requires_grad\": false");
	mate_buf_puts(b, mate_tensor_is_contiguous(t) ? ", \"is_contiguous\": true" :
	    ", \"is_contiguous\": false");
	if (rt != NULL) {
		mate_buf_puts(b, ", \"tensor_key\": ");
		json_str(b, rt->key);
	}
	mate_buf_putc(b, '}');
}

static void
json_seq(struct mate_buf *b, const mate_call *c, const mate_value *v, int depth)
{
	mate_value_kind k = mate_value_kind_of(v);
	size_t n = mate_value_len(v);

	json_typed(b, k == MATE_V_LIST ? "list" : k == MATE_V_TUPLE ? "tuple" : "dict", "length");
	mate_buf_int(b, (int64_t)n);
	if (depth >= 8) {
		mate_buf_puts(b, ", \"truncated\": true}");
		return;
	}
	mate_buf_puts(b, ", \"items\": [");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			mate_buf_put(b, ", ", 2);
		if (k == MATE_V_DICT) {
			mate_buf_puts(b, "{\"key\": ");
			mate_rec_json_value(b, c, mate_value_key(v, i), depth + 1);
			mate_buf_puts(b, ", \"value\": ");
		}
		mate_rec_json_value(b, c, mate_value_item(v, i), depth + 1);
		if (k == MATE_V_DICT)
			mate_buf_putc(b, '}');
	}
	mate_buf_puts(b, "], \"truncated\": false}");
}

void
mate_rec_json_value(struct mate_buf *b, const mate_call *c, const mate_value *v, int depth)
{
	struct mate_buf tmp;
	size_t n;

	switch (mate_value_kind_of(v)) {
	case MATE_V_NONE:
		mate_buf_puts(b, "null");
		break;
	case MATE_V_BOOL:
		mate_buf_puts(b, mate_value_get_bool(v) ? "true" : "false");
		break;
	case MATE_V_INT:
		mate_buf_int(b, mate_value_get_int(v));
		break;
	case MATE_V_FLOAT:
		mate_buf_jsonfloat(b, mate_value_get_float(v));
		break;
	case MATE_V_STR:
		json_str(b, mate_value_get_str(v, &n));
		break;
	case MATE_V_BYTES:
		json_typed(b, "bytes", "repr");
		mate_buf_init(&tmp);
		mate_rec_fmt_inline(&tmp, v);
		json_str(b, mate_buf_str(&tmp) != NULL ? tmp.p : "");
		mate_buf_free(&tmp);
		mate_buf_putc(b, '}');
		break;
	case MATE_V_DTYPE:
		json_typed(b, "torch.dtype", "value");
		mate_buf_putc(b, '"');
		mate_buf_dtype(b, mate_value_get_dtype(v));
		mate_buf_puts(b, "\"}");
		break;
	case MATE_V_ENUM:
		json_typed(b, "enum", "name");
		json_str(b, mate_value_enum_name(v));
		mate_buf_puts(b, ", \"value\": ");
		mate_buf_int(b, mate_value_get_int(v));
		mate_buf_putc(b, '}');
		break;
	case MATE_V_OBJECT:
		json_typed(b, mate_value_object_type(v), "repr");
		json_str(b, mate_value_object_repr(v));
		mate_buf_putc(b, '}');
		break;
	case MATE_V_TENSOR:
		json_tensor(b, c, v);
		break;
	default:
		json_seq(b, c, v, depth);
	}
}

/* ---- records -------------------------------------------------------------------------- */

static void
input_metadata(struct mate_buf *b, const mate_call *c)
{
	struct rec_inputs it = { 0 };
	const struct rec_arg *a;
	char key[300];
	int first = 1;

	mate_buf_putc(b, '{');
	while ((a = mate_rec_next_input(c, &it, NULL, 0)) != NULL) {
		if (mate_value_kind_of(a->v) == MATE_V_TENSOR)
			continue;   /* in tensor_details: no key made */
		mate_rec_input_key(&it, a, key, sizeof(key));
		if (!first)
			mate_buf_put(b, ", ", 2);
		first = 0;
		json_str(b, key);
		mate_buf_put(b, ": ", 2);
		mate_rec_json_value(b, c, a->v, 0);
	}
	mate_buf_putc(b, '}');
}

static void
size_mb(struct mate_buf *b, int64_t bytes)
{
	mate_buf_jsonfloat(b, (double)bytes / (1024.0 * 1024.0));
}

/* Sets the tensor_details entry of key: in its place when there is one.
 * The text is made at the end of d->txt, copied out, and cut off again. */
static int
set_detail(struct rec_dump *d, const char *key, const mate_tensor *t)
{
	size_t at = d->txt.len, i;
	char *text;

	mate_buf_putc(&d->txt, '{');
	mate_rec_tensor_fields(&d->txt, t, 0);
	mate_buf_putc(&d->txt, '}');
	if (mate_buf_str(&d->txt) == NULL || (text = malloc(d->txt.len - at + 1)) == NULL)
		return -1;
	memcpy(text, d->txt.p + at, d->txt.len - at + 1);
	d->txt.len = at;
	for (i = 0; i < d->ndetails && strcmp(d->details[i].key, key) != 0; i++)
		;
	if (i == d->ndetails) {
		if (d->ndetails == d->cap_details) {
			size_t cap = d->cap_details ? 2 * d->cap_details : 8;
			struct rec_detail *p = realloc(d->details, cap * sizeof(*p));
			if (p == NULL) {
				free(text);
				return -1;
			}
			d->details = p;
			d->cap_details = cap;
		}
		if ((d->details[i].key = strdup(key)) == NULL) {
			free(text);
			return -1;
		}
		d->details[i].text = NULL;
		d->ndetails++;
	}
	free(d->details[i].text);
	d->details[i].text = text;
	return 0;
}

/* The tensors a key list names: the dumped inputs, the returned values, the
 * arguments written in place. */
enum key_set { KEYS_DUMPED, KEYS_RETURNED, KEYS_INPLACE };

/* Writes the keys of c's tensors in set, comma-separated, each with its
 * tensor_details entry: 0, or -1 when out of memory. */
static int
key_list(struct mate_buf *b, struct rec_dump *d, const mate_call *c, enum key_set set)
{
	int first = 1;

	for (size_t i = 0; i < c->ntensors; i++) {
		const struct rec_tensor *rt = &c->tensors[i];
		if (set == KEYS_DUMPED ? !rt->dumped : rt->inplace != (set == KEYS_INPLACE))
			continue;
		if (!first)
			mate_buf_put(b, ", ", 2);
		first = 0;
		json_str(b, rt->key);
		if (set_detail(d, rt->key, mate_value_get_tensor(rt->v)) != 0)
			return -1;
	}
	return 0;
}

/* The first record's head: '{"function_name": ...' through '"input_metadata": ' (the
 * caller writes the value). */
static void
record_head(struct mate_buf *b, const char *name, const char *module, int64_t seq,
    const char *stamp, int64_t pid)
{
	mate_buf_puts(b, "{\"function_name\": ");
	json_str(b, name);
	mate_buf_puts(b, ", \"module\": ");
	json_str(b, module);
	mate_buf_puts(b, ", \"call_sequence\": ");
	mate_buf_int(b, seq);
	mate_buf_puts(b, ", \"timestamp\": ");
	json_str(b, stamp);
	mate_buf_puts(b, ", \"process_id\": ");
	mate_buf_int(b, pid);
	mate_buf_puts(b, ", \"input_metadata\": ");
}

/* The record's tail: "tensor_format" through "versions". */
static void
record_tail(struct mate_buf *b, const char *format, const char *signature, const char *version,
    const char *backend)
{
	mate_buf_puts(b, "\"tensor_format\": ");
	json_str(b, format);
	mate_buf_puts(b, ", \"function_signature\": ");
	json_str(b, signature);
	mate_buf_puts(b, ", \"versions\": {\"mate\": ");
	json_str(b, version);
	mate_buf_puts(b, ", \"backend\": ");
	json_str(b, backend);
	mate_buf_putc(b, '}');
}

/* The pieces of the first record: everything but the outputs. */
static int
first_record(const mate_call *c, struct rec_dump *d, const char *stamp, int64_t seq)
{
	struct mate_buf *b = &d->txt;

	record_head(b, c->name, c->module, seq, stamp, mate_rec_pid());
	input_metadata(b, c);
	d->end[PIECE_HEAD] = b->len;
	if (key_list(b, d, c, KEYS_DUMPED) != 0)
		return -1;
	d->end[PIECE_IN_KEYS] = b->len;
	record_tail(b, mate_rec_cfg.safetensors ? "safetensors" : "torch", c->signature,
	    mate_version_string(), mate_backend_get()->name);
	d->end[PIECE_TAIL] = b->len;
	return mate_buf_str(b) != NULL ? 0 : -1;
}

static void
piece(struct mate_buf *b, const struct rec_dump *d, int i)
{
	size_t from = i > 0 ? d->end[i - 1] : 0;

	mate_buf_put(b, d->txt.p + from, d->end[i] - from);
}

/* The record as json.dumps writes it, without its closing brace. */
static void
record_text(struct mate_buf *b, const struct rec_dump *d)
{
	piece(b, d, PIECE_HEAD);
	mate_buf_puts(b, ", \"output_metadata\": ");
	if (d->completed)
		piece(b, d, PIECE_OUT_META);
	else
		mate_buf_put(b, "{}", 2);
	mate_buf_puts(b, ", \"tensor_info\": {\"input_tensor_keys\": [");
	piece(b, d, PIECE_IN_KEYS);
	mate_buf_puts(b, "], \"output_tensor_keys\": [");
	if (d->completed)
		piece(b, d, PIECE_OUT_KEYS);
	mate_buf_puts(b, "], \"input_size_bytes\": ");
	mate_buf_int(b, d->in_bytes);
	mate_buf_puts(b, ", \"input_size_mb\": ");
	size_mb(b, d->in_bytes);
	if (d->completed) {
		mate_buf_puts(b, ", \"output_size_bytes\": ");
		mate_buf_int(b, d->out_bytes);
		mate_buf_puts(b, ", \"output_size_mb\": ");
		size_mb(b, d->out_bytes);
		mate_buf_puts(b, ", \"total_size_bytes\": ");
		mate_buf_int(b, d->in_bytes + d->out_bytes + d->inplace_bytes);
		mate_buf_puts(b, ", \"total_size_mb\": ");
		size_mb(b, d->in_bytes + d->out_bytes + d->inplace_bytes);
	}
	if (d->completed && d->n_inplace > 0) {
		/* mate's own keys, after MATE's and FlashInfer's */
		mate_buf_puts(b, ", \"inplace_tensor_keys\": [");
		piece(b, d, PIECE_INPLACE_KEYS);
		mate_buf_puts(b, "], \"inplace_size_bytes\": ");
		mate_buf_int(b, d->inplace_bytes);
		mate_buf_puts(b, ", \"inplace_size_mb\": ");
		size_mb(b, d->inplace_bytes);
		mate_buf_puts(b, mate_rec_cfg.safetensors ? ", \"inplace_file\": \"" INPLACE_STEM ".safetensors\"" :
		    ", \"inplace_file\": \"" INPLACE_STEM ".pt\"");
	}
	mate_buf_puts(b, "}, \"tensor_details\": {");
	for (size_t i = 0; i < d->ndetails; i++) {
		if (i > 0)
			mate_buf_put(b, ", ", 2);
		json_str(b, d->details[i].key);
		mate_buf_put(b, ": ", 2);
		mate_buf_puts(b, d->details[i].text);
	}
	mate_buf_puts(b, "}, ");
	piece(b, d, PIECE_TAIL);
}

/* The record with its closing keys, a metadata.jsonl line, into b (initialised
 * here); 0, or -1 out of memory (said once). */
static int
record_line(struct mate_buf *b, int has_self, uint64_t self_id, struct rec_dump *d,
    const char *status, const char *extra_key, const char *extra)
{
	mate_buf_init(b);
	record_text(b, d);
	mate_buf_puts(b, ", \"execution_status\": ");
	json_str(b, status);
	if (extra_key != NULL) {
		mate_buf_puts(b, ", ");
		json_str(b, extra_key);
		mate_buf_puts(b, ": ");
		json_str(b, extra);
	}
	if (has_self) {
		char id[24];
		int n = 0;
		mate_buf_puts(b, ", \"self_id\": ");
		for (uint64_t v = self_id; v > 0 || n == 0; v /= 10)
			id[n++] = (char)('0' + v % 10);
		while (n > 0)
			mate_buf_putc(b, id[--n]);
	}
	mate_buf_puts(b, ", \"dump_dir\": ");
	mate_buf_jsonstr(b, d->dir, d->dir_len);
	mate_buf_puts(b, "}\n");
	if (mate_buf_str(b) == NULL) {
		mate_buf_free(b);
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a dump record was not written");
		return -1;
	}
	return 0;
}

/* Appends the record with its closing keys to metadata.jsonl and
 * session.jsonl, one write() per line. */
static int
emit(const mate_call *c, struct rec_dump *d, const char *status, const char *extra_key,
    const char *extra)
{
	struct mate_buf b;
	int rc;

	if (record_line(&b, c->has_self, c->self_id, d, status, extra_key, extra) != 0)
		return -1;
	rc = append_line(d->meta_fd, b.p, b.len, &d->meta_len);
	if (rc == 0)
		rc = append_line(tally.session_fd, b.p, b.len, NULL);
	mate_buf_free(&b);
	if (rc != 0) {
		io_failed("cannot append a record in", d->dir, -rc);
		return -1;
	}
	return 0;
}

/* dir/name in d's scratch path (name is at most 24 bytes). */
static const char *
file_path(struct rec_dump *d, const char *name)
{
	size_t n = strlen(name);

	d->path[d->dir_len] = '/';
	memcpy(d->path + d->dir_len + 1, name, n + 1);
	return d->path;
}

/* Writes the dumped tensors of the phase (inplace 1: only the arguments'
 * post-call values, 0: all others) to dir/name.pt or .safetensors.
 * 0 ok or nothing to write, 1 the writer is unavailable, -1 failed. */
static int
write_tensors(const mate_call *c, struct rec_dump *d, const char *name, int inplace)
{
	mate_value *dict = mate_value_dict();
	mate_error err;
	char file[32];
	const char *path;
	int rc = 0, any = 0;

	if (dict == NULL)
		return -1;
	for (size_t i = 0; i < c->ntensors && rc == 0; i++) {
		const struct rec_tensor *rt = &c->tensors[i];
		if (!rt->dumped || rt->inplace != inplace)
			continue;
		any = 1;
		rc = mate_value_set_str(dict, rt->key, mate_value_tensor(&rt->host, rt->st));
	}
	strcpy(file, name);
	strcat(file, mate_rec_cfg.safetensors ? ".safetensors" : ".pt");
	path = file_path(d, file);
	mate_error_clear(&err);
	if (rc == 0 && any)
		rc = mate_rec_cfg.safetensors ? mate_safetensors_write(path, dict, NULL, &err) :
		    mate_pt_write(path, dict, NULL, &err);
	mate_value_free(dict);
	if (rc == MATE_ERR_UNSUPPORTED) {
		mate_rec_warn_once(REC_ONCE_DUMP_WRITER, "%s; dumps keep their records only", err.message);
		return 1;
	}
	if (rc == MATE_ERR_ARGUMENT) {
		/* a value the format cannot hold: this call only, not the disk */
		mate_rec_warn_once(REC_ONCE_DUMP_KEY, "%s; a call's tensors were not dumped", err.message);
		return -1;
	}
	if (rc != 0) {
		mate_rec_dump_stop();
		if (err.message[0] != '\0')
			mate_rec_warn_once(REC_ONCE_DUMP_IO, "dumping stopped: %s", err.message);
		else
			io_failed("cannot write in", d->dir, EIO);
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
		if (mate_rec_stage(rt, c->ring) != 1 || !mate_add_ok(total, rt->nbytes, &total))
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
		    "dump limit reached (%s_DUMP_MAX_COUNT=%" PRId64 "); later calls are not dumped",
		    mate_rec_prefix(), cfg->max_count);
		return -1;
	}
	if (tally.bytes + (uint64_t)bytes > cfg->max_bytes || tally.bytes + (uint64_t)bytes < tally.bytes) {
		pthread_mutex_unlock(&mate_rec_dump_lock);
		mate_rec_warn_once(REC_ONCE_DUMP_SIZE,
		    "dump size limit reached (%s_DUMP_MAX_SIZE_GB=%g); %s and later calls that do not fit are not dumped",
		    mate_rec_prefix(), cfg->max_size_gb, c->name);
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

/* "STAMP_pidPID_SAFE_callNNNN" into b. */
static void
dir_base(struct mate_buf *b, const char *stamp, int64_t pid, const char *safe, int64_t seq)
{
	char num[24];
	int n = 0;

	mate_buf_puts(b, stamp);
	mate_buf_puts(b, "_pid");
	mate_buf_int(b, pid);
	mate_buf_putc(b, '_');
	mate_buf_puts(b, safe);
	mate_buf_puts(b, "_call");
	for (int64_t v = seq; v > 0 || n < 4; v /= 10)
		num[n++] = (char)('0' + v % 10);
	while (n > 0)
		mate_buf_putc(b, num[--n]);
}

/* "ROOT/STAMP_pidPID_SAFE_callNNNN" into b. */
static void
dir_name(struct mate_buf *b, const char *stamp, const char *safe, int64_t seq)
{
	mate_buf_puts(b, mate_rec_cfg.dump_dir);
	mate_buf_putc(b, '/');
	dir_base(b, stamp, mate_rec_pid(), safe, seq);
}

/* Names and makes the directory of a call (in d->dir); 0 or an errno. */
static int
new_dir(struct rec_dump *d, const char *safe, int64_t seq, char *stamp)
{
	struct mate_buf b;
	int e = 0;

	/* The name can exist only when a new session (mate_configure) restarted
	 * the call counters within the same millisecond: wait for the next one. */
	for (int tries = 0;; tries++) {
		free(d->dir);
		d->dir = NULL;
		dump_stamp(stamp);
		mate_buf_init(&b);
		dir_name(&b, stamp, safe, seq);
		if (mate_buf_str(&b) == NULL) {
			mate_buf_free(&b);
			return ENOMEM;
		}
		d->dir = b.p;
		d->dir_len = b.len;
		if (mkdir(d->dir, 0755) == 0)
			return 0;
		if ((e = errno) != EEXIST || tries == 20)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	/* the dump root vanished (removed while the program ran): make it again */
	if (e == ENOENT && remake_root() == 0 && mkdir(d->dir, 0755) == 0)
		return 0;
	return e == ENOENT ? errno : e;
}

static struct rec_dump *
make_dir(const mate_call *c, int64_t seq, char *stamp)
{
	struct rec_dump *d = calloc(1, sizeof(*d));
	char safe[128];
	int e;

	if (d == NULL)
		return NULL;
	d->meta_fd = -1;
	d->pid = mate_rec_pid();
	safe_name(safe, sizeof(safe), c->name);
	if ((e = new_dir(d, safe, seq, stamp)) == ENOMEM || d->dir == NULL ||
	    (d->path = malloc(d->dir_len + 40)) == NULL) {
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a call was not dumped");
		mate_rec_dump_free(d);
		return NULL;
	}
	memcpy(d->path, d->dir, d->dir_len);
	if (e != 0)
		io_failed("cannot create", d->dir, e);
	else if ((d->meta_fd = mate_log_open(file_path(d, "metadata.jsonl"),
	    O_CREAT | O_EXCL | O_APPEND, MATE_LOG_MADE)) < 0)  /* the folder is new */
		io_failed("cannot create", d->path, -d->meta_fd);
	if (d->meta_fd < 0) {
		mate_rec_dump_free(d);
		return NULL;
	}
	return d;
}

/* A tensor key that is not UTF-8 (from a keyword argument's name) fits
 * neither tensor format: that call is not dumped, with one warning, and
 * dumping goes on. 1 when c has one. */
static int
bad_key(const mate_call *c)
{
	char safe[128];

	for (size_t i = 0; i < c->ntensors; i++) {
		const char *k = c->tensors[i].key;
		size_t n = strlen(k);

		if (!c->tensors[i].dumped || mate_utf8_invalid_at((const unsigned char *)k, n) == n)
			continue;
		safe_name(safe, sizeof(safe), c->name);
		mate_rec_warn_once(REC_ONCE_DUMP_KEY, "a call of %s was not dumped: a keyword "
		    "argument's name is not valid UTF-8 (dumping goes on)", safe);
		return 1;
	}
	return 0;
}

/* ---- MATE_RING: the records' fields and the tensors into the ring ------------------------------
 * A call in the ring keeps what its records are made of, not their text: the reader
 * (mate_rec_ring_record()) writes them as level 10 would have. */

/* Puts an entry of kind (MATE_RING_CALL or _END) with the tensors of its phase: the dumped
 * inputs, or the returned and in-place values of a call that completed. */
static int
ring_put(const mate_call *c, int kind, const struct mate_ring_rec *r)
{
	struct mate_ring_tensor few[8] = { { 0 } }, *ts = few;
	size_t n = 0;
	int rc;

	if (c->ntensors > 8 && (ts = malloc(c->ntensors * sizeof(*ts))) == NULL) {
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a call was not kept in the ring");
		return -1;
	}
	for (size_t i = 0; i < c->ntensors; i++) {
		const struct rec_tensor *rt = &c->tensors[i];

		if (kind == MATE_RING_CALL ? !rt->dumped : !r->completed)
			continue;
		ts[n].key = rt->key;
		ts[n].file = kind == MATE_RING_CALL ? MATE_RING_INPUTS : rt->inplace ?
		    MATE_RING_INPLACE : MATE_RING_OUTPUTS;
		ts[n].t = mate_value_get_tensor(rt->v);
		ts[n].host = rt->dumped && rt->staged == 1 ? &rt->host : NULL;
		ts[n].nbytes = rt->nbytes;
		n++;
	}
	rc = mate_ring_put(kind, c->ring_id, r, ts, n);
	if (ts != few)
		free(ts);
	return rc;
}

/* The call's inputs and the fields of its first record into the ring; no directory, no
 * limits of count or size (the ring keeps the last calls). */
static void
ring_inputs(mate_call *c)
{
	char stamp[40];
	struct mate_ring_rec r;
	struct mate_buf meta;
	int64_t seq;

	if (stage_dumped(c) < 0)
		return;
	pthread_mutex_lock(&mate_rec_dump_lock);
	seq = next_call(c->name);
	pthread_mutex_unlock(&mate_rec_dump_lock);
	if (seq <= 0) {
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a call was not kept in the ring");
		return;
	}
	c->ring_id = mate_ring_next_id();
	c->ring_pid = mate_rec_pid();
	dump_stamp(stamp);
	mate_buf_init(&meta);
	input_metadata(&meta, c);
	memset(&r, 0, sizeof(r));
	r.name = c->name;
	r.module = c->module;
	r.signature = c->signature;
	r.stamp = stamp;
	r.version = mate_version_string();
	r.backend = mate_backend_get()->name;
	r.meta = meta.p;
	r.metalen = meta.len;
	r.seq = seq;
	r.pid = mate_rec_pid();
	r.has_self = c->has_self;
	r.self_id = c->self_id;
	if (mate_buf_str(&meta) == NULL || ring_put(c, MATE_RING_CALL, &r) != 0)
		c->ring_id = 0;   /* not kept: nor is its end */
	mate_buf_free(&meta);
}

/* The output_metadata value of c into b. */
static void output_metadata(struct mate_buf *b, const mate_call *c);

/* The call's end into the ring: its status (and extra_key: extra), with the returned and
 * in-place values when it completed. */
static void
ring_end(const mate_call *c, const char *status, const char *extra_key, const char *extra)
{
	struct mate_ring_rec r;
	struct mate_buf meta;

	memset(&r, 0, sizeof(r));
	mate_buf_init(&meta);
	r.status = status;
	r.extra_key = extra_key;
	r.extra = extra;
	r.completed = strcmp(status, "completed") == 0;
	if (r.completed) {
		output_metadata(&meta, c);
		if (mate_buf_str(&meta) == NULL) {
			mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a call was not kept in the ring");
			return;
		}
		r.meta = meta.p;
		r.metalen = meta.len;
	}
	ring_put(c, MATE_RING_END, &r);
	mate_buf_free(&meta);
}

void
mate_rec_dump_inputs(mate_call *c, struct mate_buf *log)
{
	char stamp[40];
	struct rec_dump *d;
	int64_t bytes, seq;
	int ring;

	if (mate_rec_dump_stopped() || !wanted(c->name) || bad_key(c))
		return;
	if ((ring = mate_ring_active()) != 0) {
		if (ring > 0)
			ring_inputs(c);
		return;
	}
	if ((bytes = stage_dumped(c)) < 0 || (seq = reserve(c, bytes)) <= 0)
		return;
	if ((d = make_dir(c, seq, stamp)) == NULL)
		return;
	d->in_bytes = bytes;
	if (write_tensors(c, d, "inputs", 0) < 0 || first_record(c, d, stamp, seq) != 0 ||
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
		mate_buf_puts(log, "Dumped inputs to: ");
		mate_buf_put(log, d->dir, d->dir_len);
		mate_buf_puts(log, " (size: ");
		mate_buf_fixed(log, (double)bytes / (1024.0 * 1024.0), 2);
		mate_buf_puts(log, " MB, total: ");
		mate_buf_int(log, count);
		mate_buf_putc(log, '/');
		mate_buf_int(log, mate_rec_cfg.max_count);
		mate_buf_puts(log, " dumps)\nInputs dumped to: ");
		mate_buf_put(log, d->dir, d->dir_len);
		mate_buf_putc(log, '\n');
	}
}

/* The output_metadata value, then the items of output_tensor_keys and of
 * inplace_tensor_keys, into d's text; the details of the outputs (an
 * in-place argument's in its place: the same shape, dtype and strides). */
static void
output_metadata(struct mate_buf *b, const mate_call *c)
{
	const mate_value *items[64];
	char key[32];
	int tuple, first = 1;
	size_t n = mate_rec_results(c, items, 64, &tuple);

	mate_buf_putc(b, '{');
	if (n == 0 && !tuple) {
		mate_buf_puts(b, "\"result\": null");
		first = 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (mate_value_kind_of(items[i]) == MATE_V_TENSOR)
			continue;
		if (tuple)
			mate_rec_key(key, sizeof(key), "result_", NULL, (int64_t)i);
		else
			mate_rec_key(key, sizeof(key), "result", NULL, -1);
		if (!first)
			mate_buf_put(b, ", ", 2);
		first = 0;
		json_str(b, key);
		mate_buf_put(b, ": ", 2);
		mate_rec_json_value(b, c, items[i], 0);
	}
	mate_buf_putc(b, '}');
}

static int
output_pieces(const mate_call *c, struct rec_dump *d)
{
	struct mate_buf *b = &d->txt;

	output_metadata(b, c);
	d->end[PIECE_OUT_META] = b->len;
	if (key_list(b, d, c, KEYS_RETURNED) != 0)
		return -1;
	d->end[PIECE_OUT_KEYS] = b->len;
	if (key_list(b, d, c, KEYS_INPLACE) != 0)
		return -1;
	d->end[PIECE_INPLACE_KEYS] = b->len;
	return mate_buf_str(b) != NULL ? 0 : -1;
}

void
mate_rec_dump_outputs(mate_call *c, struct mate_buf *log)
{
	struct rec_dump *d = c->dump;
	char note[96];
	int64_t bytes, inplace_bytes = 0;
	int n_inplace = 0;

	if (c->ring_id != 0) {
		if (c->ring_pid != mate_rec_pid())
			return;   /* begun before a fork: the parent's ring has it */
		if (stage_dumped(c) < 0)
			ring_end(c, "inputs_saved", "note", "outputs not saved: a tensor could not be read");
		else
			ring_end(c, "completed", NULL, NULL);
		return;
	}
	if (d == NULL || mate_rec_dump_stopped() || d->pid != mate_rec_pid())
		return;
	if ((bytes = stage_dumped(c)) < 0) {
		emit(c, d, "inputs_saved", "note", "outputs not saved: a tensor could not be read");
		return;
	}
	pthread_mutex_lock(&mate_rec_dump_lock);
	if (tally.bytes + (uint64_t)bytes > mate_rec_cfg.max_bytes) {
		pthread_mutex_unlock(&mate_rec_dump_lock);
		mate_rec_warn_once(REC_ONCE_DUMP_SIZE,
		    "dump size limit reached (%s_DUMP_MAX_SIZE_GB=%g); outputs of %s not dumped",
		    mate_rec_prefix(), mate_rec_cfg.max_size_gb, c->name);
		snprintf(note, sizeof(note), "outputs not saved: %s_DUMP_MAX_SIZE_GB reached",
		    mate_rec_prefix());
		emit(c, d, "inputs_saved", "note", note);
		return;
	}
	tally.bytes += (uint64_t)bytes;
	pthread_mutex_unlock(&mate_rec_dump_lock);
	for (size_t i = 0; i < c->ntensors; i++)
		if (c->tensors[i].dumped && c->tensors[i].inplace) {
			inplace_bytes += c->tensors[i].nbytes;
			n_inplace++;
		}
	/* the returned values, then the arguments' post-call values (a file
	 * MATE's and FlashInfer's replay never read), then the record */
	if (write_tensors(c, d, "outputs", 0) < 0 || write_tensors(c, d, INPLACE_STEM, 1) < 0)
		return;
	if (output_pieces(c, d) != 0) {
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; a dump record was not written");
		return;
	}
	d->out_bytes = bytes - inplace_bytes;
	d->inplace_bytes = inplace_bytes;
	d->n_inplace = n_inplace;
	d->completed = 1;
	if (emit(c, d, "completed", NULL, NULL) != 0 || log == NULL)
		return;
	mate_buf_puts(log, "Dumped outputs to: ");
	mate_buf_put(log, d->dir, d->dir_len);
	mate_buf_puts(log, " (output size: ");
	mate_buf_fixed(log, (double)bytes / (1024.0 * 1024.0), 2);
	mate_buf_puts(log, " MB)\nOutputs dumped to: ");
	mate_buf_put(log, d->dir, d->dir_len);
	mate_buf_putc(log, '\n');
}

void
mate_rec_dump_failed(mate_call *c, const char *error)
{
	mate_error err;

	if (c->ring_id != 0) {
		if (c->ring_pid != mate_rec_pid())
			return;
		ring_end(c, "failed", "error", error);
		/* MATE_RING_ON=fail: the ring's calls, this one the last, into the dump root now */
		if (mate_ring_write_on_fail() && mate_ring_flush(&err) != MATE_OK)
			mate_rec_warn_once(REC_ONCE_DUMP_IO, "%s_RING_ON=fail: %s", mate_rec_prefix(), err.message);
		return;
	}
	if (c->dump == NULL || mate_rec_dump_stopped() || c->dump->pid != mate_rec_pid())
		return;
	emit(c, c->dump, "failed", "error", error);
}

/* ---- MATE_RING's reader: a call's records from its fields -------------------------------- */

/* The keys of the tensors of file among ts, each with its tensor_details entry; their
 * bytes added to *bytes, their number to *count. 0, or -1 out of memory. */
static int
ring_keys(struct rec_dump *d, const struct mate_ring_tensor *ts, size_t n, int file,
    int64_t *bytes, int *count)
{
	int first = 1;

	for (size_t i = 0; i < n; i++) {
		if (ts[i].file != file)
			continue;
		if (!first)
			mate_buf_put(&d->txt, ", ", 2);
		first = 0;
		json_str(&d->txt, ts[i].key);
		if (set_detail(d, ts[i].key, ts[i].t) != 0)
			return -1;
		*bytes += mate_tensor_nbytes(ts[i].t);
		(*count)++;
	}
	return 0;
}

int
mate_rec_ring_record(struct mate_buf *b, const struct mate_ring_call *k)
{
	const struct mate_ring_rec *r = k->call, *e = k->end;
	struct rec_dump d;
	int rc = -1, n = 0;

	memset(&d, 0, sizeof(d));
	mate_buf_init(b);
	record_head(&d.txt, r->name, r->module, r->seq, r->stamp, r->pid);
	mate_buf_put(&d.txt, r->meta, r->metalen);
	d.end[PIECE_HEAD] = d.txt.len;
	if (ring_keys(&d, k->cts, k->ncts, MATE_RING_INPUTS, &d.in_bytes, &n) != 0)
		goto out;
	d.end[PIECE_IN_KEYS] = d.txt.len;
	record_tail(&d.txt, k->format, r->signature, r->version, r->backend);
	d.end[PIECE_TAIL] = d.txt.len;
	if (e != NULL && e->completed) {
		mate_buf_put(&d.txt, e->meta, e->metalen);
		d.end[PIECE_OUT_META] = d.txt.len;
		if (ring_keys(&d, k->ets, k->nets, MATE_RING_OUTPUTS, &d.out_bytes, &n) != 0)
			goto out;
		d.end[PIECE_OUT_KEYS] = d.txt.len;
		if (ring_keys(&d, k->ets, k->nets, MATE_RING_INPLACE, &d.inplace_bytes, &d.n_inplace) != 0)
			goto out;
		d.end[PIECE_INPLACE_KEYS] = d.txt.len;
		d.completed = 1;
	}
	if (mate_buf_str(&d.txt) == NULL)
		goto out;
	d.dir = (char *)(uintptr_t)k->dir;
	d.dir_len = strlen(k->dir);
	rc = record_line(b, r->has_self, r->self_id, &d, e != NULL ? e->status : "inputs_saved",
	    e != NULL ? e->extra_key : NULL, e != NULL ? e->extra : NULL);
	d.dir = NULL;
out:
	for (size_t i = 0; i < d.ndetails; i++) {
		free(d.details[i].key);
		free(d.details[i].text);
	}
	free(d.details);
	mate_buf_free(&d.txt);
	return rc;
}

int
mate_rec_ring_dir_name(struct mate_buf *b, const char *stamp, int64_t pid, const char *name,
    int64_t seq)
{
	char safe[128];

	safe_name(safe, sizeof(safe), name);
	mate_buf_init(b);
	dir_base(b, stamp, pid, safe, seq);
	return mate_buf_str(b) != NULL ? 0 : -1;
}
