/* dump_record.c: reading a dump's state: the last complete record of metadata.jsonl, and its summary fields. */
#include "mate_private.h"
#include "dump_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- arena and notes -------------------------------------------------------- */

struct mate_arena_chunk {
	struct mate_arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

#define ARENA_CHUNK (64 * 1024)

void *
mate_arena_alloc(struct mate_arena *a, size_t n)
{
	struct mate_arena_chunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15;

	if (need < n)
		return NULL;
	if (c == NULL || c->cap - c->used < need) {
		size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (c == NULL)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	c->used += need;
	return (char *)c->data + c->used - need;
}

char *
mate_arena_strndup(struct mate_arena *a, const char *s, size_t len)
{
	char *p;

	if (s == NULL)
		return NULL;
	if (len == (size_t)-1)
		len = strlen(s);
	p = mate_arena_alloc(a, len + 1);
	if (p != NULL) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

const char *
mate_arena_basename(struct mate_arena *a, const char *path)
{
	size_t end = strlen(path), start;

	while (end > 1 && path[end - 1] == '/')
		end--;
	for (start = end; start > 0 && path[start - 1] != '/'; start--)
		;
	return mate_arena_strndup(a, path + start, end - start);
}

struct mate_arena_chunk **
mate_arena_chunk_next(struct mate_arena_chunk *c)
{
	return &c->next;
}

void
mate_arena_free(struct mate_arena *a)
{
	struct mate_arena_chunk *c = a->head, *next;

	for (; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}

void
mate_notes_add(struct mate_notes *n, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (n->len >= sizeof(n->text) - 1)
		return;
	if (n->len > 0) {
		w = snprintf(n->text + n->len, sizeof(n->text) - n->len, "; ");
		n->len += (size_t)w;
		if (n->len >= sizeof(n->text))
			n->len = sizeof(n->text) - 1;
	}
	va_start(ap, fmt);
	w = vsnprintf(n->text + n->len, sizeof(n->text) - n->len, fmt, ap);
	va_end(ap);
	if (w > 0)
		n->len += (size_t)w;
	if (n->len >= sizeof(n->text))
		n->len = sizeof(n->text) - 1;
}

/* ---- parsing one record line -------------------------------------------- */

/* Python's json.dumps writes NaN, Infinity and -Infinity, which JSON lacks:
 * outside strings they become sentinel strings that the value decoder maps
 * back to floats. NULL when there is nothing to rewrite. */
static char *
rewrite_nonfinite(const char *p, size_t len, size_t *outlen)
{
	static const struct { const char *tok; const char *rep; } toks[] = {
		{ "-Infinity", "\"\\u0001mate:-inf\"" },
		{ "Infinity", "\"\\u0001mate:inf\"" },
		{ "NaN", "\"\\u0001mate:nan\"" },
	};
	char *out = NULL;
	size_t o = 0, cap = 0;
	int in_str = 0, changed = 0;

	if (len > SIZE_MAX / 6)  /* "NaN" (3 bytes) becomes 17 */
		return NULL;
	cap = len * 6 + 1;
	out = malloc(cap);
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char ch = p[i];
		size_t k;

		if (in_str) {
			if (ch == '\\' && i + 1 < len)
				out[o++] = p[i++];
			else if (ch == '"')
				in_str = 0;
			out[o++] = p[i];
			continue;
		}
		if (ch == '"')
			in_str = 1;
		for (k = 0; k < sizeof(toks) / sizeof(toks[0]); k++) {
			size_t tl = strlen(toks[k].tok);

			if (len - i >= tl && memcmp(p + i, toks[k].tok, tl) == 0) {
				size_t rl = strlen(toks[k].rep);

				memcpy(out + o, toks[k].rep, rl);
				o += rl;
				i += tl - 1;
				changed = 1;
				break;
			}
		}
		if (k == sizeof(toks) / sizeof(toks[0]))
			out[o++] = ch;
	}
	if (!changed) {
		free(out);
		return NULL;
	}
	*outlen = o;
	return out;
}

/* cJSON on p[0..len), which must hold one value and nothing after it. */
static cJSON *
parse_all(const char *p, size_t len)
{
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(p, len, &end, 0);

	while (j != NULL && end < p + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	if (j != NULL && end != p + len) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

cJSON *
mate_record_parse(const char *p, size_t len)
{
	cJSON *j = parse_all(p, len);

	if (j == NULL) {
		size_t n;
		char *q = rewrite_nonfinite(p, len, &n);

		if (q != NULL) {
			j = parse_all(q, n);
			free(q);
		}
	}
	if (j != NULL && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

/* ---- an object's members by name ------------------------------------------ */

struct mate_json_index_entry {
	const cJSON *item;
	size_t pos;
};

static int
cmp_entry(const void *pa, const void *pb)
{
	const struct mate_json_index_entry *a = pa, *b = pb;
	int c = strcmp(a->item->string, b->item->string);

	return c != 0 ? c : a->pos < b->pos ? -1 : a->pos > b->pos;
}

void
mate_json_index_init(struct mate_json_index *ix, const cJSON *obj)
{
	const cJSON *it;
	size_t n = 0;

	ix->obj = obj;
	ix->e = NULL;
	ix->n = 0;
	if (!cJSON_IsObject(obj))
		return;
	cJSON_ArrayForEach(it, obj)
		n += it->string != NULL;
	if (n == 0 || (ix->e = malloc(n * sizeof(*ix->e))) == NULL)
		return;
	cJSON_ArrayForEach(it, obj)
		if (it->string != NULL) {
			ix->e[ix->n].item = it;
			ix->e[ix->n].pos = ix->n;
			ix->n++;
		}
	qsort(ix->e, ix->n, sizeof(*ix->e), cmp_entry);
}

const cJSON *
mate_json_index_get(const struct mate_json_index *ix, const char *key)
{
	size_t lo = 0, hi = ix->n;

	if (key == NULL)
		return NULL;
	if (ix->e == NULL)
		return cJSON_GetObjectItemCaseSensitive(ix->obj, key);
	while (lo < hi) {   /* the first entry not below key */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ix->e[mid].item->string, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->n && strcmp(ix->e[lo].item->string, key) == 0 ? ix->e[lo].item : NULL;
}

void
mate_json_index_free(struct mate_json_index *ix)
{
	free(ix->e);
	ix->e = NULL;
	ix->n = 0;
}

/* ---- the last complete line ----------------------------------------------- */

/* What to do with a candidate line: fill the summary (validating it with the
 * skim) and, when rec is not NULL, parse it fully with cJSON. */
struct take {
	struct mate_dump_info *info;
	struct mate_arena *a;
	struct mate_notes *notes;
	cJSON **rec;
};

static int info_from_line(struct mate_dump_info *info, const char *p, size_t len,
    int parsed, struct mate_arena *a, struct mate_notes *notes);

static int
take_line(const struct take *t, const char *p, size_t len)
{
	if (t->rec != NULL && (*t->rec = mate_record_parse(p, len)) == NULL)
		return 0;
	if (!info_from_line(t->info, p, len, t->rec != NULL, t->a, t->notes)) {
		if (t->rec != NULL) {
			cJSON_Delete(*t->rec);
			*t->rec = NULL;
		}
		return 0;
	}
	return 1;
}

static int
is_blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return 0;
	return 1;
}

static const char *
last_newline(const char *b, size_t end)
{
	const void *nl = end > 0 ? memrchr(b, '\n', end) : NULL;

	return nl;
}

enum { SCAN_NONE, SCAN_FOUND, SCAN_MORE };

/* Scans b[0..n), the last n bytes of a file of fsize bytes, from the end. */
static int
scan_tail(const char *b, size_t n, uint64_t fsize, const struct take *t, struct mate_notes *notes)
{
	int whole = (uint64_t)n == fsize;
	size_t end = n;
	const char *nl;

	if (end > 0 && b[end - 1] != '\n') {
		nl = last_newline(b, end);
		if (nl == NULL && !whole)
			return SCAN_MORE;
		size_t start = nl != NULL ? (size_t)(nl - b) + 1 : 0;
		if (!is_blank(b + start, end - start)) {
			if (take_line(t, b + start, end - start))
				return SCAN_FOUND;
			mate_notes_add(notes, "torn last line (%zu bytes) skipped", end - start);
		}
		end = start;
	}
	while (end > 0) {
		nl = last_newline(b, end - 1);
		if (nl == NULL && !whole)
			return SCAN_MORE;
		size_t start = nl != NULL ? (size_t)(nl - b) + 1 : 0;
		if (!is_blank(b + start, end - 1 - start)) {
			if (take_line(t, b + start, end - 1 - start))
				return SCAN_FOUND;
			mate_notes_add(notes, "corrupt record (%zu bytes at offset %llu) skipped",
			    end - 1 - start, (unsigned long long)(fsize - n + start));
		}
		end = start;
	}
	return SCAN_NONE;
}

int
mate_record_scan(const char *buf, size_t len, struct mate_dump_info *info,
    struct mate_arena *a, cJSON **rec, struct mate_notes *notes)
{
	struct take t = { info, a, notes, rec };

	if (rec != NULL)
		*rec = NULL;
	return scan_tail(buf, len, len, &t, notes) == SCAN_FOUND;
}

#define FIRST_READ 16384

/* Scans the file's tail, growing the window while the last record starts
 * before it. */
static int
scan_file(int fd, char **bufp, size_t got, const struct take *t, struct mate_notes *notes)
{
	struct mate_notes local;
	struct stat st;
	size_t want = got;
	int rc;

	if (got < FIRST_READ)  /* the whole file */
		return scan_tail(*bufp, got, got, t, notes);
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))  /* a device that reads */
		return -EFTYPE_MATE;
	for (;;) {
		char *nb;

		want = (uint64_t)st.st_size - want < (uint64_t)want * 3 ? (size_t)st.st_size : want * 4;
		if (want > MATE_RECORD_MAX_BYTES)
			want = MATE_RECORD_MAX_BYTES;
		if ((nb = realloc(*bufp, want + 1)) == NULL)
			return -ENOMEM;
		*bufp = nb;
		if ((rc = mate_pread_all(fd, nb, want, (uint64_t)st.st_size - want)) != 0)
			return rc;
		local.len = 0;
		local.text[0] = '\0';
		rc = scan_tail(nb, want, (uint64_t)st.st_size, t, &local);
		if (rc != SCAN_MORE || want >= MATE_RECORD_MAX_BYTES || want == (size_t)st.st_size)
			break;
	}
	if (rc == SCAN_MORE) {
		mate_notes_add(&local, "last record longer than %u bytes", MATE_RECORD_MAX_BYTES);
		rc = SCAN_NONE;
	}
	if (local.len > 0)
		mate_notes_add(notes, "%s", local.text);
	return rc;
}

int
mate_dump_read_record(int dirfd, const char *name, struct mate_dump_info *info,
    struct mate_arena *a, cJSON **rec, struct mate_notes *notes)
{
	struct take t = { info, a, notes, rec };
	char *buf = malloc(FIRST_READ);
	ssize_t got;
	int fd, rc;

	if (rec != NULL)
		*rec = NULL;
	if (buf == NULL)
		return -ENOMEM;
	/* one open, one pread and one close for a small file: whether it is a
	 * regular file the read says (a FIFO or a folder fails it) and, where it
	 * leaves a doubt (nothing read, or a full buffer), an fstat() */
	if ((fd = mate_open_unchecked(dirfd, name, 1)) < 0) {
		free(buf);
		if (fd != -EFTYPE_MATE)
			return fd;
		mate_notes_add(notes, "metadata.jsonl is not a regular file");
		return 0;
	}
	do
		got = pread(fd, buf, FIRST_READ, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		rc = errno == ESPIPE || errno == EISDIR || errno == EINVAL ? -EFTYPE_MATE : -errno;
	} else if (got == 0) {
		struct stat st;

		rc = fstat(fd, &st) != 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EFTYPE_MATE;
		if (rc == 0)
			mate_notes_add(notes, "metadata.jsonl is empty");
	} else {
		rc = scan_file(fd, &buf, (size_t)got, &t, notes);
		rc = rc == SCAN_FOUND ? 1 : rc < 0 ? rc : 0;
	}
	free(buf);
	close(fd);
	if (rc == -EFTYPE_MATE) {
		mate_notes_add(notes, "metadata.jsonl is not a regular file");
		rc = 0;
	}
	return rc;
}

/* ---- summary fields ------------------------------------------------------- */

const char *
mate_dump_status_name(int status)
{
	switch (status) {
	case MATE_DUMP_INPUTS_SAVED: return "inputs_saved";
	case MATE_DUMP_COMPLETED: return "completed";
	case MATE_DUMP_FAILED: return "failed";
	default: return "incomplete";
	}
}

void
mate_dump_info_init(struct mate_dump_info *info)
{
	memset(info, 0, sizeof(*info));
	info->function = "?";
	info->timestamp = "";
	info->process_id = -1;
	info->call_sequence = -1;
	info->input_bytes = info->output_bytes = info->total_bytes = info->inplace_bytes = -1;
}

#define MAX_MEMBERS 48

/* The string member key (unescaped, copied into a), or NULL. */
static const char *
member_str(const struct mate_skim_member *m, size_t n, const char *key, struct mate_arena *a)
{
	const struct mate_skim_member *v = mate_skim_find(m, n, key);
	cJSON *j;
	const char *s;

	if (v == NULL || v->vlen < 2 || v->val[0] != '"')
		return NULL;
	if (memchr(v->val, '\\', v->vlen) == NULL)
		return mate_arena_strndup(a, v->val + 1, v->vlen - 2);
	j = cJSON_ParseWithLength(v->val, v->vlen);
	s = cJSON_IsString(j) ? mate_arena_strndup(a, j->valuestring, (size_t)-1) : NULL;
	cJSON_Delete(j);
	return s;
}

/* Whether member key is a number (then in *d). */
static int
member_num(const struct mate_skim_member *m, size_t n, const char *key, double *d)
{
	const struct mate_skim_member *v = mate_skim_find(m, n, key);
	char buf[64];

	if (v == NULL || v->vlen >= sizeof(buf) ||
	    !(v->val[0] == '-' || (v->val[0] >= '0' && v->val[0] <= '9')))
		return 0;
	memcpy(buf, v->val, v->vlen);
	buf[v->vlen] = '\0';
	*d = strtod(buf, NULL);
	return 1;
}

/* The integer member key, or -1 (absent, not a number, or out of range). */
static int64_t
member_int(const struct mate_skim_member *m, size_t n, const char *key)
{
	double d;

	if (!member_num(m, n, key, &d) || !(d >= -9.2e18 && d <= 9.2e18))
		return -1;
	return (int64_t)d;
}

static int
member_count(const struct mate_skim_member *m, size_t n, const char *key)
{
	const struct mate_skim_member *v = mate_skim_find(m, n, key);
	size_t c = 0;

	if (v == NULL || !mate_skim_array_len(v->val, v->vlen, &c) || c > INT32_MAX)
		return 0;
	return (int)c;
}

static void
sizes_from_record(struct mate_dump_info *info, const struct mate_skim_member *ti,
    struct mate_notes *notes)
{
	struct mate_skim_member m[MAX_MEMBERS];
	size_t n = 0;

	if (ti == NULL || !mate_skim_object(ti->val, ti->vlen, m, MAX_MEMBERS, &n))
		return;
	info->n_inputs = member_count(m, n, "input_tensor_keys");
	info->n_outputs = member_count(m, n, "output_tensor_keys");
	info->input_bytes = member_int(m, n, "input_size_bytes");
	info->output_bytes = member_int(m, n, "output_size_bytes");
	info->total_bytes = member_int(m, n, "total_size_bytes");
	info->n_inplace = member_count(m, n, "inplace_tensor_keys");
	info->inplace_bytes = member_int(m, n, "inplace_size_bytes");
	if (info->total_bytes < 0 && info->input_bytes >= 0 &&
	    !mate_add_ok(info->input_bytes, info->output_bytes > 0 ? info->output_bytes : 0,
	    &info->total_bytes)) {
		info->total_bytes = -1;
		mate_notes_add(notes, "input_size_bytes + output_size_bytes is more than 2^63");
	}
}

static void
self_id_from_record(struct mate_dump_info *info, const struct mate_skim_member *m, size_t n,
    struct mate_arena *a)
{
	char buf[64];
	double d;

	if ((info->self_id = member_str(m, n, "self_id", a)) != NULL)
		return;
	if (member_num(m, n, "self_id", &d)) {
		snprintf(buf, sizeof(buf), "%.17g", d);
		info->self_id = mate_arena_strndup(a, buf, (size_t)-1);
	}
}

/* The status a record names (mate_dump_status_name()'s inverse), or -1. */
static int
status_of(const char *s)
{
	for (int st = MATE_DUMP_INPUTS_SAVED; s != NULL && st <= MATE_DUMP_FAILED; st++)
		if (strcmp(s, mate_dump_status_name(st)) == 0)
			return st;
	return -1;
}

/* Whether p[0..len) passes the full parser (deep nesting, as Python's
 * json writes it, is beyond the skim). */
static int
parses(const char *p, size_t len)
{
	cJSON *j = mate_record_parse(p, len);

	cJSON_Delete(j);
	return j != NULL;
}

/* Fills info from one record line (parsed: cJSON accepted it already); 0
 * when the line is not a JSON object. */
static int
info_from_line(struct mate_dump_info *info, const char *p, size_t len, int parsed,
    struct mate_arena *a, struct mate_notes *notes)
{
	struct mate_skim_member m[MAX_MEMBERS];
	size_t n = 0;
	const char *s;
	int st, rc;

	if ((rc = mate_skim_object(p, len, m, MAX_MEMBERS, &n)) == 0 ||
	    (rc == 2 && !parsed && !parses(p, len)))
		return 0;
	if ((s = member_str(m, n, "function_name", a)) != NULL)
		info->function = s;
	else
		mate_notes_add(notes, "record has no function_name");
	info->module = member_str(m, n, "module", a);
	info->signature = member_str(m, n, "function_signature", a);
	if ((s = member_str(m, n, "timestamp", a)) != NULL)
		info->timestamp = s;
	info->format = member_str(m, n, "tensor_format", a);
	if (mate_skim_find(m, n, "process_id") != NULL)
		info->process_id = member_int(m, n, "process_id");
	info->call_sequence = member_int(m, n, "call_sequence");
	sizes_from_record(info, mate_skim_find(m, n, "tensor_info"), notes);
	self_id_from_record(info, m, n, a);
	s = member_str(m, n, "execution_status", a);
	if ((st = status_of(s)) >= 0) {
		info->status = st;
	} else {
		info->status = MATE_DUMP_INCOMPLETE;
		mate_notes_add(notes, "unknown execution_status %s%.40s%s",
		    s ? "'" : "", s ? s : "(none)", s ? "'" : "");
	}
	if (info->status == MATE_DUMP_FAILED)
		info->error = member_str(m, n, "error", a);
	return 1;
}

static int
digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Parses NAME; on success func and flen name the function, pid the pid. */
static int
parse_name(const char *name, const char **func, size_t *flen, int64_t *pid)
{
	size_t len = strlen(name), i;
	const char *call;

	if (len < 19 + 5 + 1 + 1 + 5 + 1 || !digits(name, 8) || name[8] != '_' ||
	    !digits(name + 9, 6) || name[15] != '_' || !digits(name + 16, 3) ||
	    strncmp(name + 19, "_pid", 4) != 0)
		return 0;
	for (i = 23; i < len && name[i] >= '0' && name[i] <= '9'; i++)
		;
	if (i == 23 || i >= len || name[i] != '_' || i - 23 > 18)
		return 0;
	*pid = strtoll(name + 23, NULL, 10);
	*func = name + i + 1;
	/* the last "_call" followed only by digits */
	for (call = name + len - 1; call > *func && call[0] >= '0' && call[0] <= '9'; call--)
		;
	if (call == name + len - 1 || call - *func < 5 || strncmp(call - 4, "_call", 5) != 0)
		return 0;
	*flen = (size_t)(call - 4 - *func);
	return *flen > 0;
}

int
mate_dump_name_matches(const char *name)
{
	const char *f;
	size_t fl;
	int64_t pid;

	return parse_name(name, &f, &fl, &pid);
}

int
mate_dump_info_from_name(struct mate_dump_info *info, const char *name, struct mate_arena *a)
{
	const char *f;
	size_t fl;
	int64_t pid;

	if (!parse_name(name, &f, &fl, &pid))
		return 0;
	info->timestamp = mate_arena_strndup(a, name, 19);
	info->process_id = pid;
	info->function = mate_arena_strndup(a, f, fl);
	return 1;
}
