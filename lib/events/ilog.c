/* ilog.c: instruction logs: the GT-compatible line format (formatting and parsing), a streaming reader, op types and colours. */
#include "mate_private.h"
#include "mate_events.h"
#include "events_private.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ILOG_BUF (256 * 1024)
#define ILOG_MAX_TIME 1e9 /* seconds; later times are malformed */

/* ---- Formatting ------------------------------------------------------------ */

/* A bounded string builder: counts everything, stores what fits. */
struct sbuf {
	char *p;
	size_t cap, len;
};

static void
sb_putc(struct sbuf *b, char c)
{
	if (b->len + 1 < b->cap)
		b->p[b->len] = c;
	b->len++;
}

static void
sb_puts(struct sbuf *b, const char *s)
{
	while (*s != '\0')
		sb_putc(b, *s++);
}

static void MATE_PRINTF(2, 3)
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	sb_puts(b, tmp);
}

static void
sb_end(struct sbuf *b)
{
	if (b->cap > 0)
		b->p[b->len < b->cap ? b->len : b->cap - 1] = '\0';
}

/* Code points in s (padding counts characters, as Python's format does). */
static size_t
utf8_width(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* Whether s has a byte a terminal may take as control: C0 but newline and
 * CR (made spaces), DEL, or a non-ASCII byte (a C1 control, invalid UTF-8;
 * valid UTF-8 text comes back from mate_text_escape() as it is). */
static int
needs_escape(const char *s)
{
	for (const unsigned char *u = (const unsigned char *)s; *u != '\0'; u++)
		if ((*u < 0x20 && *u != '\n' && *u != '\r') || *u >= 0x7f)
			return 1;
	return 0;
}

/* Appends s with newlines made spaces, control bytes escaped (\x1b) and,
 * when bar, '|' made '!'; then pads with spaces to width characters
 * (left-justified). */
static void
sb_field(struct sbuf *b, const char *s, size_t width, int bar)
{
	int raw = s != NULL && needs_escape(s);
	char *esc = raw ? mate_text_escape(s, strlen(s)) : NULL;
	size_t w;

	if (esc != NULL) {
		s = esc;
		raw = 0;
	}
	w = s != NULL ? utf8_width(s) : 0;
	for (; s != NULL && *s != '\0'; s++) {
		char c = *s;
		if (c == '\n' || c == '\r')
			c = ' ';
		else if (bar && c == '|')
			c = '!';
		else if (raw && ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f))
			c = '?';   /* no memory to escape it */
		sb_putc(b, c);
	}
	for (; w < width; w++)
		sb_putc(b, ' ');
	free(esc);
}

int
mate_ilog_format_size(char out[16], int64_t bytes)
{
	if (bytes <= 0)
		out[0] = '\0';
	else if (bytes < 1024)
		snprintf(out, 16, "%lldB", (long long)bytes);
	else if (bytes < 1024 * 1024)
		snprintf(out, 16, "%.1fKB", (double)bytes / 1024.0);
	else if ((double)bytes / (1024.0 * 1024.0) < 1e9)
		snprintf(out, 16, "%.2fMB", (double)bytes / (1024.0 * 1024.0));
	else
		snprintf(out, 16, "%.0fMB", (double)bytes / (1024.0 * 1024.0));
	return (int)strlen(out);
}

int
mate_ilog_format(char *buf, size_t cap, const mate_event *ev)
{
	struct sbuf b = { buf, cap, 0 };
	double t = ev->time;
	char size[16];

	if (!(t >= 0.0))
		t = 0.0;
	else if (t > ILOG_MAX_TIME)
		t = ILOG_MAX_TIME;
	sb_printf(&b, "%10.6fs | #%04llu | ", t, (unsigned long long)ev->seq);
	sb_field(&b, ev->event, 12, 1);
	sb_puts(&b, ev->event != NULL && strstr(ev->event, "WORKER") != NULL ?
	    " | WORKER " : " | CLIENT ");
	sb_field(&b, ev->source, 20, 1);
	sb_puts(&b, " | ");
	sb_field(&b, ev->command, 15, 1);
	if (mate_ilog_format_size(size, ev->size) > 0) {
		sb_puts(&b, " | ");
		sb_printf(&b, "%10s", size);
	}
	if (ev->details != NULL && ev->details[0] != '\0') {
		sb_puts(&b, " | ");
		sb_field(&b, ev->details, 0, 0);
	}
	sb_putc(&b, '\n');
	sb_end(&b);
	return (int)(b.len > 0x7fffffff ? 0x7fffffff : b.len);
}

int
mate_ilog_format_header(char *buf, size_t cap, const char *title, time_t started)
{
	struct sbuf b = { buf, cap, 0 };
	char when[64];
	struct tm tm;
	int i;

	if (localtime_r(&started, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, sizeof(when), "%lld", (long long)started);
	for (i = 0; i < 100; i++)
		sb_putc(&b, '=');
	sb_putc(&b, '\n');
	sb_field(&b, title != NULL ? title : "mate Instruction Stream", 0, 0);
	sb_puts(&b, "\nStarted: ");
	sb_puts(&b, when);
	sb_putc(&b, '\n');
	for (i = 0; i < 100; i++)
		sb_putc(&b, '=');
	sb_puts(&b, "\n\n"
	    "This log records all instructions flowing through the dispatcher:\n"
	    "  - Client commands (RECV/SEND)\n"
	    "  - Worker operations (WORKER_SEND/WORKER_RECV)\n"
	    "  - Connection events (CONNECT/DISCONNECT)\n\n"
	    "Format: <elapsed> | #<seq> | <event_type> | <source> | <command> | <details>\n\n"
	    "Column Details:\n"
	    "  elapsed  = Seconds since dispatcher start (with microsecond precision)\n"
	    "  seq      = Sequence number (increments for each instruction)\n"
	    "  event    = Event type (CONNECT, RECV, SEND, WORKER_SEND, WORKER_RECV, DISCONNECT, ERROR)\n"
	    "  source   = Source identifier (CLIENT/WORKER with ID)\n"
	    "  command  = Command type (e.g., CreateTensor, BinaryOp, UnaryOp)\n"
	    "  details  = Additional context (tensor IDs, operation names, etc.)\n\n");
	sb_end(&b);
	return (int)(b.len > 0x7fffffff ? 0x7fffffff : b.len);
}

/* ---- Parsing one line ------------------------------------------------------- */

static int
is_blank(int c)
{
	return c == ' ' || c == '\t';
}

static char *
trim(char *s, char *end)
{
	while (s < end && is_blank(*s))
		s++;
	while (end > s && (is_blank(end[-1]) || end[-1] == '\r'))
		end--;
	*end = '\0';
	return s;
}

/* Finds " | " in [start, end). */
static char *
find_sep(char *start, char *end)
{
	char *p = start + 1;

	while (p + 1 < end) {
		p = memchr(p, '|', (size_t)(end - p));
		if (p == NULL || p + 1 >= end)
			return NULL;
		if (p[-1] == ' ' && p[1] == ' ')
			return p - 1;
		p++;
	}
	return NULL;
}

/* "123", "12.5": digits with at most one '.' between digits. */
static int
parse_decimal(const char *s, const char *end, double *out)
{
	double ip = 0.0, frac = 0.0, scale = 1.0;
	int ndig = 0, dot = 0;

	for (; s < end; s++) {
		if (*s == '.') {
			if (dot || ndig == 0)
				return -1;
			dot = 1;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -1;
		if (dot) {
			if (scale < 1e18) {
				scale *= 10.0;
				frac = frac * 10.0 + (*s - '0');
			}
		} else {
			if (++ndig > 15)
				return -1;
			ip = ip * 10.0 + (*s - '0');
		}
	}
	if (ndig == 0 || (dot && scale == 1.0))
		return -1;
	*out = ip + frac / scale;
	return 0;
}

/* A size field ("91B", "39.3KB", "4.00MB") to bytes; -1 if not a size. */
static int64_t
parse_size(const char *s)
{
	const char *end = s + strlen(s), *u;
	double v, mul;

	while (is_blank(*s))
		s++;
	if (end - s >= 2 && end[-2] == 'K' && end[-1] == 'B')
		u = end - 2, mul = 1024.0;
	else if (end - s >= 2 && end[-2] == 'M' && end[-1] == 'B')
		u = end - 2, mul = 1024.0 * 1024.0;
	else if (end - s >= 1 && end[-1] == 'B')
		u = end - 1, mul = 1.0;
	else
		return -1;
	if (parse_decimal(s, u, &v) != 0)
		return -1;
	v *= mul;
	if (v > 4e18)
		return -1;
	return (int64_t)(v + 0.5);
}

/* The line starts like an event: "^\s*[0-9.]+s\s*\|\s*#[0-9]". */
static int
looks_like_event(const char *p, const char *end)
{
	const char *q;

	while (p < end && is_blank(*p))
		p++;
	for (q = p; q < end && ((*q >= '0' && *q <= '9') || *q == '.'); q++)
		;
	if (q == p || q >= end || *q != 's')
		return 0;
	for (q++; q < end && is_blank(*q); q++)
		;
	if (q >= end || *q != '|')
		return 0;
	for (q++; q < end && is_blank(*q); q++)
		;
	return q + 1 < end && q[0] == '#' && q[1] >= '0' && q[1] <= '9';
}

static void
parse_source(char *s, mate_event *ev)
{
	if (strncmp(s, "CLIENT", 6) == 0 && (s[6] == ' ' || s[6] == '\0')) {
		ev->source_kind = MATE_SOURCE_CLIENT;
		s += 6;
	} else if (strncmp(s, "WORKER", 6) == 0 && (s[6] == ' ' || s[6] == '\0')) {
		ev->source_kind = MATE_SOURCE_WORKER;
		s += 6;
	} else {
		ev->source_kind = MATE_SOURCE_OTHER;
	}
	while (is_blank(*s))
		s++;
	ev->source = s;
}

static int
parse_seq(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s++ != '#' || *s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Splits what follows the command: a size, details, or both. */
static void
parse_tail(char *rest, char *end, mate_event *ev)
{
	char *sep = find_sep(rest, end);
	char *head;

	ev->size = -1;
	ev->details = "";
	if (sep != NULL) {
		*sep = '\0';
		head = trim(rest, sep);
		if ((ev->size = parse_size(head)) >= 0) {
			ev->details = trim(sep + 3, end);
			return;
		}
		*sep = ' ';  /* not a size: the whole tail is details */
	}
	head = trim(rest, end);
	if ((ev->size = parse_size(head)) < 0)
		ev->details = head;
}

int
mate_ilog_parse_line(char *line, size_t len, mate_event *ev, const char **why)
{
	char *end = line + len, *f[5], *fend[5], *sep;
	const char *dummy;
	int n;

	if (why == NULL)
		why = &dummy;
	*why = NULL;
	if (!looks_like_event(line, end))
		return 0;
	if (memchr(line, '\0', len) != NULL)
		return *why = "NUL byte in line", -1;
	line[len] = '\0';
	memset(ev, 0, sizeof(*ev));
	/* time, seq, event, source, command; then size and details */
	f[0] = line;
	for (n = 1; n < 5; n++) {
		if ((sep = find_sep(f[n - 1], end)) == NULL)
			return *why = "too few fields (need 5, joined by \" | \")", -1;
		*sep = '\0';
		fend[n - 1] = sep;
		f[n] = sep + 3;
	}
	sep = find_sep(f[4], end);
	if (sep != NULL)
		*sep = '\0';
	fend[4] = sep != NULL ? sep : end;
	{
		char *t = trim(f[0], fend[0]);
		size_t tl = strlen(t);
		if (tl < 2 || t[tl - 1] != 's' || parse_decimal(t, t + tl - 1, &ev->time) != 0)
			return *why = "bad time field", -1;
		if (ev->time > ILOG_MAX_TIME)
			return *why = "time out of range", -1;
	}
	if (parse_seq(trim(f[1], fend[1]), &ev->seq) != 0)
		return *why = "bad sequence number", -1;
	ev->event = trim(f[2], fend[2]);
	if (ev->event[0] == '\0')
		return *why = "empty event type", -1;
	parse_source(trim(f[3], fend[3]), ev);
	ev->command = trim(f[4], fend[4]);
	if (sep != NULL)
		parse_tail(sep + 3, end, ev);
	else {
		ev->size = -1;
		ev->details = "";
	}
	return 1;
}

/* ---- Details, op types, colours ------------------------------------------- */

/* Copies the value at v (it ends at a space, comma or ']') into buf. */
static int
detail_value(const char *v, char *buf, size_t cap)
{
	size_t vl = 0;

	while (v[vl] != '\0' && v[vl] != ' ' && v[vl] != ',' && v[vl] != ']')  /* strcspn(v, " ,]") */
		vl++;

	if (cap > 0) {
		size_t c = vl < cap - 1 ? vl : cap - 1;
		memcpy(buf, v, c);
		buf[c] = '\0';
	}
	return vl > 0x7fffffff ? 0x7fffffff : (int)vl;
}

int
mate_ilog_detail(const char *details, const char *key, char *buf, size_t cap)
{
	size_t kl = strlen(key);
	const char *p = details;

	if (details == NULL || kl == 0)
		return -1;
	while ((p = strstr(p, key)) != NULL) {
		if ((p == details || p[-1] == ' ' || p[-1] == '[' || p[-1] == ',') &&
		    p[kl] == '=')
			return detail_value(p + kl + 1, buf, cap);
		p += kl;
	}
	return -1;
}

static int
key_boundary(char c)
{
	return c == ' ' || c == '[' || c == ',';
}

/* Every place mate_ilog_detail() could match is a run of characters after
 * the start or a boundary, up to an '=' with no boundary in between (the
 * keys asked for have none): those runs are the pairs, in order. */
void
mate_ilog_details_index(struct mate_ilog_details *d, const char *details)
{
	const char *p = details != NULL ? details : "";

	d->text = details;
	d->n = d->more = 0;
	for (;;) {
		const char *k = p;

		while (*p != '\0' && *p != '=' && !key_boundary(*p))
			p++;
		if (*p == '=' && p > k) {
			if (d->n < MATE_ILOG_PAIRS) {
				d->kv[d->n].key = k;
				d->kv[d->n].klen = (size_t)(p - k);
				d->kv[d->n++].value = p + 1;
			} else {
				d->more = 1;
				return;
			}
		}
		/* the next run starts after a boundary */
		while (*p != '\0' && !key_boundary(*p))
			p++;
		if (*p == '\0')
			return;
		p++;
	}
}

int
mate_ilog_details_get(const struct mate_ilog_details *d, const char *key, char *buf, size_t cap)
{
	size_t kl = strlen(key);

	for (int i = 0; i < d->n; i++)
		if (d->kv[i].klen == kl && memcmp(d->kv[i].key, key, kl) == 0)
			return detail_value(d->kv[i].value, buf, cap);
	return d->more ? mate_ilog_detail(d->text, key, buf, cap) : -1;
}

static void
lower_copy(char *dst, size_t cap, const char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n && s[i] != '\0' && o + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':')
			dst[o++] = (char)tolower(c);
	}
	dst[o] = '\0';
}

/* The first command of a batch's details: "[2 cmds: WorkerBinaryOp, ...]". */
static const char *
batch_first(const char *details, size_t *n)
{
	const char *p = strstr(details, "cmds:");

	if (p == NULL)
		return NULL;
	p += 5;
	while (*p == ' ')
		p++;
	*n = strcspn(p, ",] ");
	return *n > 0 ? p : NULL;
}

static const char *
derive_op(const char *cmd, const char *details)
{
	static const char *const plain[] = { "add", "sub", "mul", "div", "relu",
	    "sigmoid", "tanh", "sum", "mean", "transpose", "randn", NULL };
	static const char *const unary[] = { "relu", "sigmoid", "tanh", "sum",
	    "mean", "randn", NULL };
	int i;

	if (strncmp(cmd, "worker", 6) == 0 && cmd[6] != '\0')
		cmd += 6;
	if (strstr(cmd, "matmul") || strstr(cmd, "gemm") || strcmp(cmd, "mm") == 0 ||
	    strcmp(cmd, "bmm") == 0)
		return "matmul";
	if (strstr(cmd, "getdata"))
		return "getdata";
	if (strstr(cmd, "freetensor"))
		return "freetensor";
	if (strstr(cmd, "gather"))
		return "allgather";
	if (strstr(cmd, "randn"))
		return "randn";
	if (strstr(cmd, "transpose"))
		return "transpose";
	if (strcmp(cmd, "binaryop") == 0)
		return "add";  /* GT's visualizer guesses add */
	if (strcmp(cmd, "unaryop") == 0) {
		for (i = 0; unary[i] != NULL; i++)
			if (strstr(details, unary[i]) != NULL)
				return unary[i];
		return "other";
	}
	for (i = 0; plain[i] != NULL; i++)
		if (strcmp(cmd, plain[i]) == 0)
			return plain[i];
	return "other";
}

const char *
mate_ilog_op(const mate_event *ev, char *buf, size_t cap)
{
	char op[256];

	if (mate_ilog_detail(ev->details != NULL ? ev->details : "", "op", op, sizeof(op)) > 0)
		return mate_ilog_op_of(ev, op, buf, cap);
	return mate_ilog_op_of(ev, NULL, buf, cap);
}

const char *
mate_ilog_op_of(const mate_event *ev, const char *op, char *buf, size_t cap)
{
	char cmd[64], det[256];
	const char *details = ev->details != NULL ? ev->details : "";
	const char *c = ev->command != NULL ? ev->command : "";
	size_t n;

	if (cap < 2) {
		if (cap == 1)
			buf[0] = '\0';
		return buf;
	}
	if (op != NULL && op[0] != '\0') {
		lower_copy(buf, cap, op, strlen(op));
		if (buf[0] != '\0')
			return buf;
	}
	n = strlen(c);
	if (strstr(c, "Batch") != NULL || strstr(c, "batch") != NULL) {
		const char *first = batch_first(details, &n);
		if (first != NULL)
			c = first;
		else
			n = strlen(c);
	}
	lower_copy(cmd, sizeof(cmd), c, n);
	for (n = 0; details[n] != '\0' && n + 1 < sizeof(det); n++)
		det[n] = (char)tolower((unsigned char)details[n]);
	det[n] = '\0';
	snprintf(buf, cap, "%s", derive_op(cmd, det));
	return buf;
}

static const struct { const char *name; uint32_t rgb; } palette[] = {
	{ "matmul", 0xe74c3c }, { "add", 0x3498db }, { "sub", 0x16a085 },
	{ "mul", 0x9b59b6 }, { "div", 0xf39c12 }, { "relu", 0x27ae60 },
	{ "sigmoid", 0x2980b9 }, { "tanh", 0x1abc9c }, { "sum", 0x8e44ad },
	{ "mean", 0xd35400 }, { "transpose", 0x229954 }, { "getdata", 0xc0392b },
	{ "allgather", 0xbdc3c7 }, /* GT's #ecf0f1 vanishes on white */
	{ "randn", 0xe84393 }, { "freetensor", 0x95a5a6 }, { "other", 0x7f8c8d },
};

/* Other names get one of these, chosen by a hash of the name: stable from
 * one picture to the next, and unlike GT's sixteen. */
static const uint32_t extra[] = { 0x1f3a93, 0x9a9a1f, 0x8c564b, 0xd4ac0d, 0x2e4053,
	0xf1948a, 0x0b5345, 0xa29bfe, 0xc8ad7f, 0x78281f, 0x48c9b0, 0xd98880 };

uint32_t
mate_op_color(const char *op)
{
	size_t i;

	for (i = 0; i < sizeof(palette) / sizeof(palette[0]); i++)
		if (strcmp(op, palette[i].name) == 0)
			return palette[i].rgb;
	return extra[mate_fnv1a32(op, strlen(op)) % (sizeof(extra) / sizeof(extra[0]))];
}

/* ---- The streaming reader ------------------------------------------------ */

/* What the getters report: the counts read ahead: as of the batch being read. */
struct ilog_count {
	mate_ilog_stats st;
	uint64_t bytes;
	int nbad;
};

struct mate_ilog {
	char *name;
	int fd, own_fd;
	const char *mem;       /* memory source, or NULL */
	size_t mem_len, mem_off;
	char *buf;             /* ILOG_BUF bytes */
	size_t start, end;     /* unread bytes in buf */
	int eof;
	int in_header;         /* skipping a header block */
	int seen_event;
	mate_ilog_stats st;
	uint64_t bytes;        /* read from the source so far */
	int nbad;
	uint64_t bad_line[MATE_ILOG_MALFORMED_KEEP];
	const char *bad_why[MATE_ILOG_MALFORMED_KEEP];
	struct ilog_ahead *ra;  /* mate_ilog_read_ahead(): the parsing thread */
};

static mate_ilog *
ilog_alloc(const char *name, mate_error *err)
{
	mate_ilog *r = calloc(1, sizeof(*r));

	if (r == NULL || (r->buf = malloc(ILOG_BUF + 1)) == NULL ||   /* + a NUL */
	    (r->name = strdup(name != NULL ? name : "<log>")) == NULL) {
		if (r != NULL)
			free(r->buf);
		free(r);
		mate_set_error(err, MATE_ERR_NOMEM, "instruction log: out of memory");
		return NULL;
	}
	r->fd = -1;
	r->in_header = 1;
	return r;
}

mate_ilog *
mate_ilog_open_fd(int fd, const char *name, mate_error *err)
{
	mate_ilog *r = ilog_alloc(name, err);

	if (r != NULL)
		r->fd = fd;
	return r;
}

mate_ilog *
mate_ilog_open_memory(const void *buf, size_t len, const char *name, mate_error *err)
{
	mate_ilog *r = ilog_alloc(name, err);

	if (r != NULL) {
		r->mem = buf != NULL ? buf : "";
		r->mem_len = buf != NULL ? len : 0;
	}
	return r;
}

mate_ilog *
mate_ilog_open(const char *path, mate_error *err)
{
	mate_ilog *r;
	int fd;

	if (path == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "instruction log: no path"), NULL;
	if (strcmp(path, "-") == 0)
		return mate_ilog_open_fd(0, "<stdin>", err);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		mate_set_errno(err, errno, "cannot open", path);
		return NULL;
	}
	if ((r = mate_ilog_open_fd(fd, path, err)) == NULL) {
		close(fd);
		return NULL;
	}
	r->own_fd = 1;
	return r;
}

static void ahead_stop(mate_ilog *r);

void
mate_ilog_free(mate_ilog *r)
{
	if (r == NULL)
		return;
	ahead_stop(r);
	if (r->own_fd && r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r->name);
	free(r);
}

const char *
mate_ilog_name(const mate_ilog *r)
{
	return r->name;
}

static const struct ilog_count *ahead_count(const mate_ilog *r);

void
mate_ilog_get_stats(const mate_ilog *r, mate_ilog_stats *st)
{
	*st = r->ra != NULL ? ahead_count(r)->st : r->st;
}

uint64_t
mate_ilog_bytes_read(const mate_ilog *r)
{
	return r->ra != NULL ? ahead_count(r)->bytes : r->bytes;
}

int
mate_ilog_malformed(const mate_ilog *r, int i, uint64_t *line, const char **why)
{
	if (i < 0 || i >= (r->ra != NULL ? ahead_count(r)->nbad : r->nbad))
		return -1;
	if (line != NULL)
		*line = r->bad_line[i];
	if (why != NULL)
		*why = r->bad_why[i];
	return 0;
}

/* Reads more bytes after r->end; 0 at EOF, >0 bytes read, <0 error. */
static ssize_t
ilog_fill(mate_ilog *r, mate_error *err)
{
	size_t room = ILOG_BUF - r->end;
	ssize_t n;

	if (r->mem != NULL) {
		size_t left = r->mem_len - r->mem_off;
		n = (ssize_t)(left < room ? left : room);
		memcpy(r->buf + r->end, r->mem + r->mem_off, (size_t)n);
		r->mem_off += (size_t)n;
	} else {
		do
			n = read(r->fd, r->buf + r->end, room);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return mate_set_errno(err, errno, "cannot read", r->name);
	}
	r->end += (size_t)n;
	r->bytes += (uint64_t)n;
	return n;
}

static void
ilog_bad(mate_ilog *r, const char *why)
{
	r->st.malformed++;
	if (r->nbad < MATE_ILOG_MALFORMED_KEEP) {
		r->bad_line[r->nbad] = r->st.lines;
		r->bad_why[r->nbad++] = why;
	}
}

/* The next line in line and len (not terminated); 1, 0 at EOF, <0 error.
 * Overlong lines are skipped and reported as malformed. */
static int
ilog_line(mate_ilog *r, char **line, size_t *len, mate_error *err)
{
	int toolong = 0;

	for (;;) {
		char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		if (nl != NULL) {
			*line = r->buf + r->start;
			*len = (size_t)(nl - *line);
			r->start = (size_t)(nl - r->buf) + 1;
			r->st.lines++;
			if (toolong || *len > MATE_ILOG_LINE_MAX) {
				ilog_bad(r, "line too long");
				toolong = 0;
				continue;
			}
			return 1;
		}
		if (r->end - r->start > MATE_ILOG_LINE_MAX) {
			toolong = 1;     /* drop what we have, keep looking for '\n' */
			r->start = r->end;
		}
		if (r->start > 0) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (!r->eof) {
			ssize_t n = ilog_fill(r, err);
			if (n < 0)
				return (int)n;
			if (n == 0)
				r->eof = 1;
			continue;
		}
		if (r->end == r->start && !toolong)
			return 0;
		*line = r->buf + r->start;   /* a last line without '\n' */
		*len = r->end - r->start;
		r->start = r->end;
		r->st.lines++;
		if (toolong || *len > MATE_ILOG_LINE_MAX) {
			ilog_bad(r, "line too long");
			return 0;
		}
		return 1;
	}
}

/* Header lines are words; one that starts with a number was meant as an
 * event (a malformed one before the first good line is still reported). */
static int
starts_with_digit(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_blank(s[i]))
		i++;
	return i < n && s[i] >= '0' && s[i] <= '9';
}

static int
blank_line(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_blank(s[i]) && s[i] != '\r')
			return 0;
	return 1;
}

static int
ilog_next(mate_ilog *r, mate_event *ev, mate_error *err)
{
	char *line = NULL;
	size_t len = 0;
	int rc;

	while ((rc = ilog_line(r, &line, &len, err)) > 0) {
		const char *why = NULL;
		int k = mate_ilog_parse_line(line, len, ev, &why);
		if (k > 0) {
			ev->line = r->st.lines;
			r->st.events++;
			r->seen_event = 1;
			r->in_header = 0;
			return 1;
		}
		if (k < 0) {
			ilog_bad(r, why);
			continue;
		}
		if (len >= 10 && strncmp(line, "==========", 10) == 0)
			r->in_header = 1;  /* a header: GT's, or a log appended */
		if ((r->in_header && !starts_with_digit(line, len)) || blank_line(line, len))
			r->st.skipped++;
		else
			ilog_bad(r, "not an event line");
	}
	return rc;
}

/* ---- Reading ahead on a second thread --------------------------------------
 * The thread runs ilog_next() and copies each event, its strings into the
 * batch's arena, into batches that go round a ring: full ones to the
 * reader, read ones back. A batch ends when its events or its arena
 * (which has room for a line's strings at least) are full. */

#define AHEAD_EVENTS 2048
#define AHEAD_ARENA (512 * 1024)
#define AHEAD_BATCHES 4

struct ilog_batch {
	mate_event ev[AHEAD_EVENTS];
	int n;
	int last;              /* rc is the reader's last answer */
	int rc;
	mate_error err;
	struct ilog_count count;
	char arena[AHEAD_ARENA];
};

struct ilog_ahead {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct ilog_batch *b[AHEAD_BATCHES];
	unsigned filled, taken;  /* batches filled by the thread, taken by the reader */
	int stop;
	struct ilog_batch *cur;  /* the reader's, or NULL */
	int pos;
	struct ilog_count count;
};

static const struct ilog_count *
ahead_count(const mate_ilog *r)
{
	return &r->ra->count;
}

static char *
arena_copy(struct ilog_batch *b, size_t *used, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = b->arena + *used;

	memcpy(p, s, n);
	*used += n;
	return p;
}

static void
ahead_fill(mate_ilog *r, struct ilog_batch *b)
{
	size_t used = 0;

	b->n = 0;
	b->last = 0;
	mate_error_clear(&b->err);
	while (b->n < AHEAD_EVENTS && AHEAD_ARENA - used > MATE_ILOG_LINE_MAX + 8) {
		mate_event *ev = &b->ev[b->n];
		int rc = ilog_next(r, ev, &b->err);

		if (rc <= 0) {
			b->last = 1;
			b->rc = rc;
			break;
		}
		/* the strings lie in the line, at most its length with four NULs */
		ev->event = arena_copy(b, &used, ev->event);
		ev->source = arena_copy(b, &used, ev->source);
		ev->command = arena_copy(b, &used, ev->command);
		ev->details = arena_copy(b, &used, ev->details);
		b->n++;
	}
	b->count.st = r->st;
	b->count.bytes = r->bytes;
	b->count.nbad = r->nbad;
}

static void *
ahead_thread(void *arg)
{
	mate_ilog *r = arg;
	struct ilog_ahead *a = r->ra;

	for (;;) {
		struct ilog_batch *b;
		int last;

		pthread_mutex_lock(&a->lock);
		while (!a->stop && a->filled - a->taken == AHEAD_BATCHES)
			pthread_cond_wait(&a->changed, &a->lock);
		if (a->stop) {
			pthread_mutex_unlock(&a->lock);
			return NULL;
		}
		b = a->b[a->filled % AHEAD_BATCHES];
		pthread_mutex_unlock(&a->lock);
		ahead_fill(r, b);
		last = b->last;
		pthread_mutex_lock(&a->lock);
		a->filled++;
		pthread_cond_broadcast(&a->changed);
		pthread_mutex_unlock(&a->lock);
		if (last)
			return NULL;
	}
}

static void
ahead_free(struct ilog_ahead *a)
{
	for (int i = 0; i < AHEAD_BATCHES; i++)
		free(a->b[i]);
	free(a);
}

int
mate_ilog_read_ahead(mate_ilog *r, mate_error *err)
{
	struct ilog_ahead *a;

	if (r->ra != NULL || r->st.lines > 0 || r->bytes > 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "instruction log: read ahead must be asked for before reading");
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "instruction log: out of memory");
	for (int i = 0; i < AHEAD_BATCHES; i++)
		if ((a->b[i] = malloc(sizeof(*a->b[i]))) == NULL) {
			ahead_free(a);
			return mate_set_error(err, MATE_ERR_NOMEM, "instruction log: out of memory");
		}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->changed, NULL);
	r->ra = a;
	if ((errno = pthread_create(&a->th, NULL, ahead_thread, r)) != 0) {
		int e = errno;

		r->ra = NULL;
		pthread_cond_destroy(&a->changed);
		pthread_mutex_destroy(&a->lock);
		ahead_free(a);
		return mate_set_errno(err, e, "cannot start a thread", r->name);
	}
	return MATE_OK;
}

static void
ahead_stop(mate_ilog *r)
{
	struct ilog_ahead *a = r->ra;

	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = 1;
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->th, NULL);
	pthread_cond_destroy(&a->changed);
	pthread_mutex_destroy(&a->lock);
	ahead_free(a);
	r->ra = NULL;
}

/* The next event from the thread's batches. */
static int
ahead_next(struct ilog_ahead *a, mate_event *ev, mate_error *err)
{
	while (a->cur == NULL || a->pos == a->cur->n) {
		if (a->cur != NULL) {
			if (a->cur->last) {
				if (a->cur->rc < 0 && err != NULL)
					*err = a->cur->err;
				return a->cur->rc;
			}
			pthread_mutex_lock(&a->lock);
			a->taken++;      /* the batch goes back to the thread */
			pthread_cond_broadcast(&a->changed);
			pthread_mutex_unlock(&a->lock);
			a->cur = NULL;
		}
		pthread_mutex_lock(&a->lock);
		while (a->filled == a->taken)
			pthread_cond_wait(&a->changed, &a->lock);
		a->cur = a->b[a->taken % AHEAD_BATCHES];
		pthread_mutex_unlock(&a->lock);
		a->count = a->cur->count;
		a->pos = 0;
	}
	*ev = a->cur->ev[a->pos++];
	return 1;
}

int
mate_ilog_next(mate_ilog *r, mate_event *ev, mate_error *err)
{
	return r->ra != NULL ? ahead_next(r->ra, ev, err) : ilog_next(r, ev, err);
}
