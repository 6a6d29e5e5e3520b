/* memlog_read.c: reads memory event CSVs written by mate or by RMM's logging_resource_adaptor, with bounded lines, fields and growth. */
#include "mate_private.h"
#include "mate_record.h"
#include "util_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 4096
#define MAX_EVENTS (UINT64_C(1) << 27)
#define MAX_THREADS 4096
#define NCOLS 6

enum { COL_THREAD, COL_TIME, COL_ACTION, COL_POINTER, COL_SIZE, COL_STREAM };
static const char *const col_names[NCOLS] = { "Thread", "Time", "Action", "Pointer", "Size", "Stream" };

struct mate_memlog_trace {
	struct mate_memlog_event *ev;
	size_t n, cap;
	uint64_t *tids;            /* thread index -> logged id */
	size_t ntids, cap_tids;
	struct mate_map tindex;    /* logged id -> thread index */
};

/* Parser state: the column of each field, and where errors point. */
struct parser {
	mate_memlog_trace *t;
	const char *name;          /* file name for messages */
	int col[NCOLS];            /* field index of each column, -1 absent */
	int nfields;               /* fields a row has */
	int64_t line;
	mate_error *err;
};

static int
perr(struct parser *p, const char *fmt, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, what);
	return mate_set_error(p->err, MATE_ERR_FORMAT, "%s:%lld: %s", p->name, (long long)p->line, msg);
}

/* "bad WHAT 'text'" with the field's text (not NUL-terminated) cut to 40 bytes. */
static int
perr_field(struct parser *p, const char *what, const char *s, size_t len)
{
	char text[41], msg[96];
	size_t n = len > 40 ? 40 : len;

	memcpy(text, s, n);
	text[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] >= 0x7f)
			text[i] = '?';
	snprintf(msg, sizeof(msg), "%s '%s'", what, text);
	return perr(p, "%s", msg);
}

/* ---- fields ------------------------------------------------------------------------------------ */

/* Parses all of s (len bytes) as an unsigned number in base 10 or 16. */
static int
parse_u64(const char *s, size_t len, int base, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int d;
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* Hex with or without 0x; "(nil)" and "nullptr" are 0. */
static int
parse_hex(const char *s, size_t len, uint64_t *out)
{
	if ((len == 5 && memcmp(s, "(nil)", 5) == 0) || (len == 7 && memcmp(s, "nullptr", 7) == 0)) {
		*out = 0;
		return 0;
	}
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	return len <= 16 ? parse_u64(s, len, 16, out) : -1;
}

/* Digits then an optional fraction: "123.456" -> seconds. */
static int
parse_seconds(const char *s, size_t len, double *out)
{
	size_t i = 0;
	uint64_t ip;
	double frac = 0, scale = 1;

	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == 0 || parse_u64(s, i, 10, &ip) != 0)
		return -1;
	if (i < len) {
		if (s[i++] != '.' || i == len || len - i > 12)
			return -1;
		for (; i < len; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			scale /= 10;
			frac += (s[i] - '0') * scale;
		}
	}
	*out = (double)ip + frac;
	return 0;
}

/* Epoch seconds ("1634567890.123456") or RMM's clock time ("HH:MM:SS.ffffff"). */
static int
parse_time(const char *s, size_t len, double *out)
{
	uint64_t h, m;
	double sec;

	if (len >= 8 && s[2] == ':' && s[5] == ':') {
		if (parse_u64(s, 2, 10, &h) != 0 || parse_u64(s + 3, 2, 10, &m) != 0 ||
		    parse_seconds(s + 6, len - 6, &sec) != 0 || h > 23 || m > 59 || sec >= 61)
			return -1;
		*out = (double)(h * 3600 + m * 60) + sec;
		return 0;
	}
	return parse_seconds(s, len, out);
}

static int
parse_action(const char *s, size_t len)
{
	if (len == 8 && memcmp(s, "allocate", 8) == 0)
		return MATE_MEMLOG_ALLOCATE;
	if ((len == 10 && memcmp(s, "deallocate", 10) == 0) || (len == 4 && memcmp(s, "free", 4) == 0))
		return MATE_MEMLOG_DEALLOCATE;
	if ((len == 16 && memcmp(s, "allocate failure", 16) == 0) ||
	    (len == 16 && memcmp(s, "allocate_failure", 16) == 0))
		return MATE_MEMLOG_FAILURE;
	return -1;
}

/* ---- trace ------------------------------------------------------------------------------------- */

/* The index of logged thread id, added on first sight. -1 without memory, -2 past the limit. */
static int64_t
thread_index(mate_memlog_trace *t, uint64_t id)
{
	uint64_t *v = mate_map_get(&t->tindex, id);
	int found;

	if (v != NULL)
		return (int64_t)*v;
	if (t->ntids == MAX_THREADS)
		return -2;
	if (mate_array_grow(&t->tids, t->ntids, &t->cap_tids, sizeof(*t->tids), 16) != 0 ||
	    (v = mate_map_put(&t->tindex, id, &found)) == NULL)
		return -1;
	t->tids[t->ntids] = id;
	*v = t->ntids++;
	return (int64_t)*v;
}

static int
push_event(struct parser *p, const struct mate_memlog_event *e)
{
	mate_memlog_trace *t = p->t;

	if (t->n == t->cap && t->n >= MAX_EVENTS)
		return mate_set_error(p->err, MATE_ERR_LIMIT, "%s:%lld: more than %llu events",
		    p->name, (long long)p->line, (unsigned long long)MAX_EVENTS);
	if (mate_array_grow(&t->ev, t->n, &t->cap, sizeof(*t->ev), 1024) != 0)
		return mate_set_error(p->err, MATE_ERR_NOMEM, "%s: out of memory", p->name);
	t->ev[t->n++] = *e;
	return MATE_OK;
}

/* ---- lines ------------------------------------------------------------------------------------- */

/* Splits s at commas into at most max fields (trimmed of spaces); -1 when there are more. */
static int
split(const char *s, size_t len, const char **f, size_t *fl, int max)
{
	int n = 0;
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != ',')
			continue;
		if (n == max)
			return -1;
		size_t a = start, b = i;
		while (a < b && (s[a] == ' ' || s[a] == '\t'))
			a++;
		while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
			b--;
		f[n] = s + a;
		fl[n++] = b - a;
		start = i + 1;
	}
	return n;
}

static int
is_column_name(const char *s, size_t len)
{
	for (int c = 0; c < NCOLS; c++)
		if (strlen(col_names[c]) == len && memcmp(col_names[c], s, len) == 0)
			return 1;
	return 0;
}

static int
header(struct parser *p, const char **f, const size_t *fl, int n)
{
	for (int c = 0; c < NCOLS; c++)
		p->col[c] = -1;
	for (int i = 0; i < n; i++) {
		int c;
		for (c = 0; c < NCOLS; c++)
			if (strlen(col_names[c]) == fl[i] && memcmp(col_names[c], f[i], fl[i]) == 0)
				break;
		if (c == NCOLS) /* a column mate does not use (a newer RMM's) */
			continue;
		if (p->col[c] >= 0)
			return perr(p, "column %s given twice", col_names[c]);
		p->col[c] = i;
	}
	if (p->col[COL_ACTION] < 0 || p->col[COL_POINTER] < 0 || p->col[COL_SIZE] < 0)
		return perr(p, "%s", "the header lacks Action, Pointer or Size");
	p->nfields = n;
	return MATE_OK;
}

static const char *
field(struct parser *p, const char **f, int c, size_t *len, const size_t *fl)
{
	if (p->col[c] < 0) {
		*len = 0;
		return NULL;
	}
	*len = fl[p->col[c]];
	return f[p->col[c]];
}

static int
row(struct parser *p, const char **f, const size_t *fl)
{
	struct mate_memlog_event e;
	const char *s;
	size_t len;
	uint64_t tid = 0;
	int64_t ti;

	memset(&e, 0, sizeof(e));
	e.line = p->line;
	s = field(p, f, COL_ACTION, &len, fl);
	if ((e.action = parse_action(s, len)) < 0)
		return perr_field(p, "unknown Action", s, len);
	s = field(p, f, COL_POINTER, &len, fl);
	if (parse_hex(s, len, &e.ptr) != 0)
		return perr_field(p, "bad Pointer", s, len);
	s = field(p, f, COL_SIZE, &len, fl);
	if (parse_u64(s, len, 10, &e.size) != 0)
		return perr_field(p, "bad Size", s, len);
	if ((s = field(p, f, COL_STREAM, &len, fl)) != NULL && len > 0 && parse_hex(s, len, &e.stream) != 0)
		return perr_field(p, "bad Stream", s, len);
	if ((s = field(p, f, COL_TIME, &len, fl)) != NULL && len > 0 && parse_time(s, len, &e.time) != 0)
		return perr_field(p, "bad Time", s, len);
	if ((s = field(p, f, COL_THREAD, &len, fl)) != NULL && len > 0 &&
	    parse_u64(s, len, 10, &tid) != 0 && parse_hex(s, len, &tid) != 0)
		return perr_field(p, "bad Thread", s, len);
	if (e.action != MATE_MEMLOG_FAILURE && e.ptr == 0)
		return perr(p, "%s of a null Pointer", e.action == MATE_MEMLOG_ALLOCATE ? "allocate" : "deallocate");
	if ((ti = thread_index(p->t, tid)) < 0)
		return ti == -2 ? perr(p, "more than %s threads", "4096")
		    : mate_set_error(p->err, MATE_ERR_NOMEM, "%s: out of memory", p->name);
	e.thread = (uint32_t)ti;
	return push_event(p, &e);
}

/* One line without its end. */
static int
line(struct parser *p, const char *s, size_t len)
{
	const char *f[NCOLS * 4];
	size_t fl[NCOLS * 4];
	int n;

	if (len > 0 && s[len - 1] == '\r')
		len--;
	if (len == 0)
		return MATE_OK;
	if (len > MAX_LINE)
		return perr(p, "line longer than %s bytes", "4096");
	if ((n = split(s, len, f, fl, NCOLS * 4)) < 0)
		return perr(p, "%s", "too many fields");
	if (is_column_name(f[0], fl[0]))
		return header(p, f, fl, n);
	if (n != p->nfields)
		return mate_set_error(p->err, MATE_ERR_FORMAT, "%s:%lld: %d fields, expected %d",
		    p->name, (long long)p->line, n, p->nfields);
	for (int i = 0; i < n; i++)
		if (memchr(f[i], '\0', fl[i]) != NULL)
			return perr(p, "%s", "a NUL byte");
	return row(p, f, fl);
}

static mate_memlog_trace *
parser_start(struct parser *p, const char *name, mate_error *err)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->err = err;
	for (int c = 0; c < NCOLS; c++)
		p->col[c] = c;
	p->nfields = NCOLS;
	if ((p->t = calloc(1, sizeof(*p->t))) == NULL)
		mate_set_error(err, MATE_ERR_NOMEM, "%s: out of memory", name);
	return p->t;
}

mate_memlog_trace *
mate_memlog_parse(const char *buf, size_t len, mate_error *err)
{
	struct parser p;
	size_t start = 0;

	if (parser_start(&p, "memory log", err) == NULL)
		return NULL;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && buf[i] != '\n')
			continue;
		p.line++;
		if ((i > start || i < len) && line(&p, buf + start, i - start) != MATE_OK) {
			mate_memlog_trace_free(p.t);
			return NULL;
		}
		start = i + 1;
	}
	return p.t;
}

/* Feeds the complete lines of buf[0..*len) to the parser and keeps the
 * partial last line at the front; at eof the rest is a line too. */
static int
feed(struct parser *p, char *buf, size_t *len, int eof)
{
	size_t start = 0;
	int rc = MATE_OK;

	for (size_t i = 0; i < *len && rc == MATE_OK; i++) {
		if (buf[i] != '\n')
			continue;
		p->line++;
		rc = line(p, buf + start, i - start);
		start = i + 1;
	}
	if (rc == MATE_OK && eof && start < *len) {
		p->line++;
		rc = line(p, buf + start, *len - start);
		start = *len;
	}
	memmove(buf, buf + start, *len - start);
	*len -= start;
	if (rc == MATE_OK && *len > MAX_LINE) {
		p->line++;
		rc = perr(p, "line longer than %s bytes", "4096");
	}
	return rc;
}

mate_memlog_trace *
mate_memlog_read(const char *path, mate_error *err)
{
	enum { CHUNK = 1 << 16 };
	struct parser p;
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char *buf = malloc(CHUNK + MAX_LINE + 2);
	size_t len = 0, got;
	int rc = MATE_OK;

	if (fp == NULL) {
		free(buf);
		mate_set_errno(err, errno, "cannot open", path);
		return NULL;
	}
	if (buf == NULL || parser_start(&p, strcmp(path, "-") == 0 ? "(stdin)" : path, err) == NULL)
		rc = mate_set_error(err, MATE_ERR_NOMEM, "%s: out of memory", path);
	while (rc == MATE_OK && (got = fread(buf + len, 1, CHUNK, fp)) > 0) {
		len += got;
		rc = feed(&p, buf, &len, 0);
	}
	if (rc == MATE_OK && ferror(fp))
		rc = mate_set_errno(err, errno ? errno : EIO, "cannot read", path);
	if (rc == MATE_OK)
		rc = feed(&p, buf, &len, 1);
	if (fp != stdin)
		fclose(fp);
	free(buf);
	if (rc != MATE_OK) {
		if (buf != NULL)
			mate_memlog_trace_free(p.t);
		return NULL;
	}
	return p.t;
}

void
mate_memlog_trace_free(mate_memlog_trace *t)
{
	if (t == NULL)
		return;
	free(t->ev);
	free(t->tids);
	mate_map_free(&t->tindex);
	free(t);
}

const struct mate_memlog_event *
mate_memlog_trace_events(const mate_memlog_trace *t, size_t *n)
{
	*n = t != NULL ? t->n : 0;
	return t != NULL ? t->ev : NULL;
}

size_t
mate_memlog_trace_threads(const mate_memlog_trace *t)
{
	return t != NULL ? t->ntids : 0;
}

uint64_t
mate_memlog_trace_thread_id(const mate_memlog_trace *t, size_t i)
{
	return t != NULL && i < t->ntids ? t->tids[i] : 0;
}
