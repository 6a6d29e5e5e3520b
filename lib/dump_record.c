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

	if (len > SIZE_MAX / 3)
		return NULL;
	cap = len * 3 + 1;
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

cJSON *
mate_record_parse(const char *p, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(p, len);

	if (j == NULL) {
		size_t n;
		char *q = rewrite_nonfinite(p, len, &n);

		if (q != NULL) {
			j = cJSON_ParseWithLength(q, n);
			free(q);
		}
	}
	if (j != NULL && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

/* ---- the last complete line ----------------------------------------------- */

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
	while (end > 0)
		if (b[--end] == '\n')
			return b + end;
	return NULL;
}

enum { SCAN_DONE, SCAN_MORE };

/* Scans b[0..n), the last n bytes of a file of fsize bytes, from the end. */
static int
scan_tail(const char *b, size_t n, uint64_t fsize, cJSON **rec, struct mate_notes *notes)
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
			if ((*rec = mate_record_parse(b + start, end - start)) != NULL)
				return SCAN_DONE;
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
			if ((*rec = mate_record_parse(b + start, end - 1 - start)) != NULL)
				return SCAN_DONE;
			mate_notes_add(notes, "corrupt record (%zu bytes at offset %llu) skipped",
			    end - 1 - start, (unsigned long long)(fsize - n + start));
		}
		end = start;
	}
	return SCAN_DONE;
}

int
mate_record_read_last(int dirfd, const char *name, cJSON **rec, struct mate_notes *notes)
{
	struct stat st;
	struct mate_notes local;
	char *buf = NULL;
	size_t want;
	int fd, rc = 0;

	*rec = NULL;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		mate_notes_add(notes, "metadata.jsonl is not a regular file");
		goto out;
	}
	want = st.st_size < 16384 ? (size_t)st.st_size : 16384;
	for (;;) {
		char *nb = realloc(buf, want + 1);

		if (nb == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		buf = nb;
		rc = mate_pread_all(fd, buf, want, (uint64_t)st.st_size - want);
		if (rc != 0)
			goto out;
		local.len = 0;
		local.text[0] = '\0';
		if (scan_tail(buf, want, (uint64_t)st.st_size, rec, &local) == SCAN_DONE)
			break;
		if (want >= MATE_RECORD_MAX_BYTES) {
			mate_notes_add(&local, "last record longer than %u bytes", MATE_RECORD_MAX_BYTES);
			break;
		}
		want = (uint64_t)st.st_size - want < (uint64_t)want * 3 ? (size_t)st.st_size : want * 4;
		if (want > MATE_RECORD_MAX_BYTES)
			want = MATE_RECORD_MAX_BYTES;
	}
	if (local.len > 0)
		mate_notes_add(notes, "%s", local.text);
	if (*rec == NULL && st.st_size == 0)
		mate_notes_add(notes, "metadata.jsonl is empty");
out:
	free(buf);
	close(fd);
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
	info->input_bytes = info->output_bytes = info->total_bytes = -1;
}

static const char *
get_str(const cJSON *o, const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(j) ? j->valuestring : NULL;
}

static int64_t
get_int(const cJSON *o, const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(j) || !(j->valuedouble >= -9.2e18 && j->valuedouble <= 9.2e18))
		return -1;
	return (int64_t)j->valuedouble;
}

static int
count_keys(const cJSON *ti, const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(ti, key);

	return cJSON_IsArray(j) ? cJSON_GetArraySize(j) : 0;
}

static void
sizes_from_record(struct mate_dump_info *info, const cJSON *ti)
{
	info->n_inputs = count_keys(ti, "input_tensor_keys");
	info->n_outputs = count_keys(ti, "output_tensor_keys");
	info->input_bytes = get_int(ti, "input_size_bytes");
	info->output_bytes = get_int(ti, "output_size_bytes");
	info->total_bytes = get_int(ti, "total_size_bytes");
	if (info->total_bytes < 0 && info->input_bytes >= 0)
		info->total_bytes = info->input_bytes + (info->output_bytes > 0 ? info->output_bytes : 0);
}

static void
self_id_from_record(struct mate_dump_info *info, const cJSON *rec, struct mate_arena *a)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(rec, "self_id");
	char buf[64];

	if (cJSON_IsString(j)) {
		info->self_id = mate_arena_strndup(a, j->valuestring, (size_t)-1);
	} else if (cJSON_IsNumber(j)) {
		snprintf(buf, sizeof(buf), "%.17g", j->valuedouble);
		info->self_id = mate_arena_strndup(a, buf, (size_t)-1);
	}
}

void
mate_dump_info_from_record(struct mate_dump_info *info, const cJSON *rec,
    struct mate_arena *a, struct mate_notes *notes)
{
	const char *s;

	if ((s = get_str(rec, "function_name")) != NULL)
		info->function = mate_arena_strndup(a, s, (size_t)-1);
	else
		mate_notes_add(notes, "record has no function_name");
	info->module = mate_arena_strndup(a, get_str(rec, "module"), (size_t)-1);
	if ((s = get_str(rec, "timestamp")) != NULL)
		info->timestamp = mate_arena_strndup(a, s, (size_t)-1);
	if ((s = get_str(rec, "tensor_format")) != NULL)
		info->format = mate_arena_strndup(a, s, (size_t)-1);
	if (cJSON_HasObjectItem(rec, "process_id"))
		info->process_id = get_int(rec, "process_id");
	info->call_sequence = get_int(rec, "call_sequence");
	sizes_from_record(info, cJSON_GetObjectItemCaseSensitive(rec, "tensor_info"));
	self_id_from_record(info, rec, a);
	s = get_str(rec, "execution_status");
	if (s != NULL && strcmp(s, "completed") == 0)
		info->status = MATE_DUMP_COMPLETED;
	else if (s != NULL && strcmp(s, "inputs_saved") == 0)
		info->status = MATE_DUMP_INPUTS_SAVED;
	else if (s != NULL && strcmp(s, "failed") == 0)
		info->status = MATE_DUMP_FAILED;
	else {
		info->status = MATE_DUMP_INCOMPLETE;
		mate_notes_add(notes, "unknown execution_status %s%.40s%s",
		    s ? "'" : "", s ? s : "(none)", s ? "'" : "");
	}
	if (info->status == MATE_DUMP_FAILED)
		info->error = mate_arena_strndup(a, get_str(rec, "error"), (size_t)-1);
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
