/* memlog.c: the memory event log of a process: RMM-style CSV rows, live allocation tracking, statistics and the per-block profile. */
#include "mate_private.h"
#include "logfile.h"
#include "mate_record.h"
#include "events_private.h"
#include "util_map.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PROF_BUCKETS 256
#define MAX_DEPTH 64
#define NAME_CACHE 8                   /* a power of two */
#define CSV_HEADER "Thread,Time,Action,Pointer,Size,Stream\n"
#define OUTSIDE_NAME "<outside any call>"

/* One named block of the profile. */
struct prof_entry {
	struct prof_entry *next;       /* hash chain */
	struct prof_entry *order;      /* insertion order */
	char *name;                    /* "file:line(function)" */
	uint64_t ncalls, total;
	int64_t peak;
};

struct mate_memlog {
	pthread_mutex_t lock;
	char *tmpl;                    /* CSV path template, or NULL */
	int fd;                        /* -1 until opened */
	int stopped;                   /* the CSV failed: no more rows */
	int format;                    /* enum mate_memlog_format */
	char error[300];
	struct mate_map live;          /* pointer -> size of live allocations */
	struct mate_memlog_stats st;
	int tracking_lost;             /* out of memory: live map incomplete */
	struct prof_entry *buckets[PROF_BUCKETS];
	struct prof_entry *first, *last;
	struct prof_entry *outside;    /* what threads allocate with no block open, or NULL */
	int64_t outside_value;         /* its bytes allocated less those freed */
	unsigned gen;                  /* bumped in a forked child */
};

/* A thread's stack of open blocks (for one log and generation). */
struct frame {
	struct prof_entry *e;
	int64_t value, peak;
	uint64_t total;
};
static __thread struct {
	const mate_memlog *owner;
	unsigned gen;
	int depth, overflow;
	struct frame f[MAX_DEPTH];
	/* the entries of the thread's recent blocks, by the function's address:
	 * a block pushed again (the interposer's calls) costs no formatting or lock */
	struct prof_entry *cache[NAME_CACHE];
} tls_blocks;

/* ---- CSV ----------------------------------------------------------------------------------- */

/* The template with every %i replaced by pid; NULL without memory or when too long. */
static char *
expand_path(const char *tmpl, pid_t pid)
{
	char pidbuf[24], *out;
	size_t n = 0, plen = (size_t)snprintf(pidbuf, sizeof(pidbuf), "%ld", (long)pid);

	for (const char *p = tmpl; *p; p++, n++)
		if (p[0] == '%' && p[1] == 'i') {
			n += plen - 1;
			p++;
		}
	if (n > 4096 || (out = malloc(n + 1)) == NULL)
		return NULL;
	n = 0;
	for (const char *p = tmpl; *p; p++) {
		if (p[0] == '%' && p[1] == 'i') {
			memcpy(out + n, pidbuf, plen);
			n += plen;
			p++;
		} else
			out[n++] = *p;
	}
	out[n] = '\0';
	return out;
}

static void
csv_stop(mate_memlog *m, const char *what, int errnum)
{
	m->stopped = 1;
	snprintf(m->error, sizeof(m->error), "memory log: %s: %s", what, mate_log_strerror(errnum));
}

/* Opens the CSV on the first row (lock held). 0 or -1. */
static int
csv_open(mate_memlog *m)
{
	char *path;
	struct stat sb;

	if (m->fd >= 0)
		return 0;
	if (m->stopped || m->tmpl == NULL)
		return -1;
	if ((path = expand_path(m->tmpl, getpid())) == NULL) {
		csv_stop(m, m->tmpl, ENAMETOOLONG);
		return -1;
	}
	m->fd = mate_log_open(path, O_CREAT | O_APPEND, mate_log_name_of(m->tmpl));
	if (m->fd < 0) {
		csv_stop(m, path, -m->fd);
		m->fd = -1;
		free(path);
		return -1;
	}
	if (fstat(m->fd, &sb) == 0 && sb.st_size == 0 &&
	    mate_write_all(m->fd, CSV_HEADER, sizeof(CSV_HEADER) - 1) != 0) {
		csv_stop(m, path, errno);
		close(m->fd);
		m->fd = -1;
	}
	free(path);
	return m->fd >= 0 ? 0 : -1;
}

int
mate_memlog_write_header(const char *path, long pid, mate_error *err)
{
	char *name = expand_path(path, (pid_t)pid);
	struct stat sb;
	int fd, e = 0, rc = MATE_OK;

	if (name == NULL)
		return mate_set_errno(err, ENAMETOOLONG, "memory log", path);
	if ((fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0 ||
	    fstat(fd, &sb) != 0)
		e = errno;
	else if (sb.st_size == 0)
		e = -mate_write_all(fd, CSV_HEADER, sizeof(CSV_HEADER) - 1);
	if (fd >= 0 && close(fd) != 0 && e == 0)
		e = errno;
	if (e != 0)
		rc = mate_set_errno(err, e, "memory log", name);
	free(name);
	return rc;
}

/* The action words of each format, by enum mate_memlog_action. */
static const char *const action_names[][3] = {
	[MATE_MEMLOG_FORMAT_RMM] = { "allocate", "free", "allocate failure" },
	[MATE_MEMLOG_FORMAT_EPOCH] = { "allocate", "deallocate", "allocate failure" },
};

/* RMM's row: the OS thread id and the local time of day with microseconds
 * (spdlog's "%t,%H:%M:%S.%f"), then "%p,%zu,%s" of the pointer, the size
 * and the stream as an ostream prints a pointer in hex ("0", "0x7f..."). */
static int
format_rmm(char *row, size_t cap, long tid, const struct timespec *ts, const char *action,
    uint64_t ptr, uint64_t size, uint64_t stream)
{
	char p[24], st[24];
	struct tm tm;

	if (localtime_r(&ts->tv_sec, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	if (ptr != 0)
		snprintf(p, sizeof(p), "0x%" PRIx64, ptr);
	else
		strcpy(p, "(nil)");
	if (stream != 0)
		snprintf(st, sizeof(st), "0x%" PRIx64, stream);
	else
		strcpy(st, "0");
	return snprintf(row, cap, "%ld,%02d:%02d:%02d.%06ld,%s,%s,%" PRIu64 ",%s\n", tid,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, ts->tv_nsec / 1000, action, p, size, st);
}

/* Writes one row in one write() (lock held). */
static void
csv_row(mate_memlog *m, int action, uint64_t ptr, uint64_t size, uint64_t stream)
{
	char row[192];
	struct timespec ts;
	long tid;
	int n, rc;

	if (m->tmpl == NULL || m->stopped || csv_open(m) != 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	tid = (long)syscall(SYS_gettid);
	if (m->format == MATE_MEMLOG_FORMAT_RMM)
		n = format_rmm(row, sizeof(row), tid, &ts, action_names[m->format][action], ptr, size,
		    stream);
	else
		n = snprintf(row, sizeof(row), "%ld,%lld.%06ld,%s,0x%" PRIx64 ",%" PRIu64 ",0x%" PRIx64 "\n",
		    tid, (long long)ts.tv_sec, ts.tv_nsec / 1000, action_names[m->format][action], ptr,
		    size, stream);
	if ((rc = mate_write_all(m->fd, row, (size_t)n)) != 0)
		csv_stop(m, "write", -rc);
}

/* ---- the log ------------------------------------------------------------------------------ */

mate_memlog *
mate_memlog_new(const char *path, mate_error *err)
{
	mate_memlog *m = calloc(1, sizeof(*m));

	if (m == NULL || (path != NULL && (m->tmpl = strdup(path)) == NULL)) {
		free(m);
		mate_set_error(err, MATE_ERR_NOMEM, "memory log: out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->fd = -1;
	return m;
}

static void
prof_clear(mate_memlog *m)
{
	struct prof_entry *e, *next;

	for (e = m->first; e != NULL; e = next) {
		next = e->order;
		free(e->name);
		free(e);
	}
	memset(m->buckets, 0, sizeof(m->buckets));
	m->first = m->last = NULL;
	m->outside = NULL;
	m->outside_value = 0;
}

int
mate_memlog_format_named(const char *name)
{
	if (name == NULL || *name == '\0' || strcmp(name, "rmm") == 0)
		return MATE_MEMLOG_FORMAT_RMM;
	if (strcmp(name, "epoch") == 0)
		return MATE_MEMLOG_FORMAT_EPOCH;
	return -1;
}

int
mate_memlog_set_format(mate_memlog *m, int format)
{
	if (format != MATE_MEMLOG_FORMAT_RMM && format != MATE_MEMLOG_FORMAT_EPOCH)
		return MATE_ERR_ARGUMENT;
	if (m != NULL) {
		pthread_mutex_lock(&m->lock);
		m->format = format;
		pthread_mutex_unlock(&m->lock);
	}
	return MATE_OK;
}

void
mate_memlog_free(mate_memlog *m)
{
	if (m == NULL)
		return;
	if (m->fd >= 0)
		close(m->fd);
	mate_map_free(&m->live);
	prof_clear(m);
	free(m->tmpl);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct prof_entry *prof_get(mate_memlog *m, const char *name);

/* Non-zero when this thread has a block of m open. */
static int
in_block(const mate_memlog *m)
{
	return tls_blocks.owner == m && tls_blocks.gen == m->gen && tls_blocks.depth > 0;
}

/* Adds delta bytes to the profile's row of what no block takes (lock held):
 * one block, the process's whole run, as RMM's profiler would see a block
 * around the program. */
static void
attribute_outside(mate_memlog *m, int64_t delta)
{
	struct prof_entry *e = m->outside;

	m->outside_value += delta;
	if (e == NULL) {
		if (delta <= 0 || (e = m->outside = prof_get(m, OUTSIDE_NAME)) == NULL)
			return;
		e->ncalls = 1;
	}
	if (delta > 0)
		e->total += (uint64_t)delta;
	if (m->outside_value > e->peak)
		e->peak = m->outside_value;
}

/* Adds delta bytes to this thread's innermost block of m. */
static void
attribute(const mate_memlog *m, int64_t delta)
{
	struct frame *f;

	if (!in_block(m))
		return;
	f = &tls_blocks.f[tls_blocks.depth - 1];
	f->value += delta;
	if (delta > 0) {
		f->total += (uint64_t)delta;
		if (f->value > f->peak)
			f->peak = f->value;
	}
}

void
mate_memlog_allocate(mate_memlog *m, uint64_t ptr, uint64_t size, uint64_t stream)
{
	struct mate_memlog_stats *s;
	uint64_t *live;
	int found;

	if (m == NULL || ptr == 0)
		return;
	pthread_mutex_lock(&m->lock);
	s = &m->st;
	if ((live = mate_map_put(&m->live, ptr, &found)) != NULL)
		*live = size;
	else
		m->tracking_lost = 1;
	s->current_bytes += size;
	s->current_count++;
	s->total_bytes += size;
	s->total_count++;
	if (s->current_bytes > s->peak_bytes)
		s->peak_bytes = s->current_bytes;
	if (s->current_count > s->peak_count)
		s->peak_count = s->current_count;
	csv_row(m, MATE_MEMLOG_ALLOCATE, ptr, size, stream);
	if (!in_block(m))
		attribute_outside(m, size > INT64_MAX ? INT64_MAX : (int64_t)size);
	pthread_mutex_unlock(&m->lock);
	attribute(m, size > INT64_MAX ? INT64_MAX : (int64_t)size);
	mate_event_memory(MATE_EV_MEM_ALLOC, NULL, NULL, ptr,
	    size > INT64_MAX ? INT64_MAX : (int64_t)size, stream);
}

int64_t
mate_memlog_deallocate(mate_memlog *m, uint64_t ptr, uint64_t stream)
{
	int64_t size = -1;
	uint64_t taken;

	if (m == NULL || ptr == 0)
		return -1;
	pthread_mutex_lock(&m->lock);
	if (mate_map_take(&m->live, ptr, &taken))
		size = taken > INT64_MAX ? INT64_MAX : (int64_t)taken;
	if (size >= 0) {
		m->st.current_bytes -= (uint64_t)size;
		m->st.current_count--;
		csv_row(m, MATE_MEMLOG_DEALLOCATE, ptr, (uint64_t)size, stream);
		if (!in_block(m))
			attribute_outside(m, -size);
	}
	pthread_mutex_unlock(&m->lock);
	if (size >= 0) {
		attribute(m, -size);
		mate_event_memory(MATE_EV_MEM_FREE, NULL, NULL, ptr, size, stream);
	}
	return size;
}

void
mate_memlog_failure(mate_memlog *m, uint64_t size, uint64_t stream)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->lock);
	csv_row(m, MATE_MEMLOG_FAILURE, 0, size, stream);
	pthread_mutex_unlock(&m->lock);
	mate_event_memory(MATE_EV_MEM_FAIL, NULL, NULL, 0,
	    size > INT64_MAX ? INT64_MAX : (int64_t)size, stream);
}

void
mate_memlog_get_stats(mate_memlog *m, struct mate_memlog_stats *s)
{
	if (m == NULL) {
		memset(s, 0, sizeof(*s));
		return;
	}
	pthread_mutex_lock(&m->lock);
	*s = m->st;
	pthread_mutex_unlock(&m->lock);
}

const char *
mate_memlog_error(mate_memlog *m)
{
	const char *e = NULL;

	if (m == NULL)
		return NULL;
	pthread_mutex_lock(&m->lock);
	if (m->stopped)
		e = m->error;
	else if (m->tracking_lost)
		e = "memory log: out of memory tracking allocations; statistics are approximate";
	pthread_mutex_unlock(&m->lock);
	return e;
}

/* ---- profile --------------------------------------------------------------------------------- */

/* The entry named name, made on first use (lock held); NULL without memory. */
static struct prof_entry *
prof_get(mate_memlog *m, const char *name)
{
	unsigned b = mate_fnv1a32(name, strlen(name)) % PROF_BUCKETS;
	struct prof_entry *e;

	for (e = m->buckets[b]; e != NULL; e = e->next)
		if (strcmp(e->name, name) == 0)
			return e;
	if ((e = calloc(1, sizeof(*e))) == NULL || (e->name = strdup(name)) == NULL) {
		free(e);
		return NULL;
	}
	e->next = m->buckets[b];
	m->buckets[b] = e;
	if (m->last != NULL)
		m->last->order = e;
	else
		m->first = e;
	m->last = e;
	return e;
}

/* Whether name is "file:line(function)". */
static int
name_is(const char *name, const char *file, int line, const char *function)
{
	size_t n = strlen(file);
	long v = 0;
	int neg;

	if (strncmp(name, file, n) != 0 || name[n] != ':')
		return 0;
	name += n + 1;
	if ((neg = *name == '-'))
		name++;
	if (*name < '0' || *name > '9')
		return 0;
	for (; *name >= '0' && *name <= '9' && v < 100000000000L; name++)
		v = v * 10 + (*name - '0');
	if (*name++ != '(' || (neg ? -v : v) != line)
		return 0;
	n = strlen(function);
	return strncmp(name, function, n) == 0 && name[n] == ')' && name[n + 1] == '\0';
}

void
mate_memlog_push(mate_memlog *m, const char *file, int line, const char *function)
{
	char name[512];
	struct prof_entry *e, **slot;
	struct frame *f;

	if (m == NULL)
		return;
	if (tls_blocks.owner != m || tls_blocks.gen != m->gen) {
		tls_blocks.owner = m;
		tls_blocks.gen = m->gen;
		tls_blocks.depth = tls_blocks.overflow = 0;
		memset(tls_blocks.cache, 0, sizeof(tls_blocks.cache));
	}
	if (tls_blocks.depth == MAX_DEPTH) {
		tls_blocks.overflow++;
		return;
	}
	if (file == NULL)
		file = "?";
	if (function == NULL)
		function = "?";
	slot = &tls_blocks.cache[((uintptr_t)function >> 4) & (NAME_CACHE - 1)];
	if ((e = *slot) == NULL || !name_is(e->name, file, line, function)) {
		snprintf(name, sizeof(name), "%s:%d(%s)", file, line, function);
		pthread_mutex_lock(&m->lock);
		e = prof_get(m, name);
		pthread_mutex_unlock(&m->lock);
		*slot = e;
	}
	f = &tls_blocks.f[tls_blocks.depth++];
	memset(f, 0, sizeof(*f));
	f->e = e;
}

void
mate_memlog_pop(mate_memlog *m)
{
	struct frame f;

	if (m == NULL || tls_blocks.owner != m || tls_blocks.gen != m->gen)
		return;
	if (tls_blocks.overflow > 0) {
		tls_blocks.overflow--;
		return;
	}
	if (tls_blocks.depth == 0)
		return;
	f = tls_blocks.f[--tls_blocks.depth];
	if (f.e != NULL) {
		pthread_mutex_lock(&m->lock);
		f.e->ncalls++;
		f.e->total += f.total;
		if (f.peak > f.e->peak)
			f.e->peak = f.peak;
		pthread_mutex_unlock(&m->lock);
	}
	if (tls_blocks.depth > 0) {
		struct frame *p = &tls_blocks.f[tls_blocks.depth - 1];
		if (p->value + f.peak > p->peak)
			p->peak = p->value + f.peak;
		p->value += f.value;
		p->total += f.total;
	}
}

/* 1234567 -> "1,234,567" right-aligned in width. */
static void
put_grouped(struct mate_buf *b, uint64_t v, int width)
{
	char digits[32], out[48];
	int nd = snprintf(digits, sizeof(digits), "%" PRIu64, v), n = 0, pad;

	for (int i = 0; i < nd; i++) {
		if (i > 0 && (nd - i) % 3 == 0)
			out[n++] = ',';
		out[n++] = digits[i];
	}
	for (pad = width - n; pad > 0; pad--)
		mate_buf_put(b, " ", 1);
	mate_buf_put(b, out, (size_t)n);
}

static int
by_peak(const void *a, const void *b)
{
	const struct prof_entry *x = *(const struct prof_entry *const *)a;
	const struct prof_entry *y = *(const struct prof_entry *const *)b;

	if (x->peak != y->peak)
		return x->peak > y->peak ? -1 : 1;
	return 0;
}

static const char profile_head[] =
    "Memory Profiling\n"
    "================\n"
    "\n"
    "Legends:\n"
    "  ncalls       - number of times the function or code block was called\n"
    "  memory_peak  - peak memory allocated in function or code block (in bytes)\n"
    "  memory_total - total memory allocated in function or code block (in bytes)\n"
    "\n"
    "Ordered by: memory_peak\n"
    "\n"
    "ncalls     memory_peak    memory_total  filename:lineno(function)\n";

/* A stable sort by peak, descending (qsort is not stable: sort by index as tie-break). */
static struct prof_entry **
sorted_entries(mate_memlog *m, size_t *count)
{
	struct prof_entry **v, *e;
	size_t n = 0, i = 0;

	for (e = m->first; e != NULL; e = e->order)
		n++;
	if ((v = malloc((n ? n : 1) * sizeof(*v))) == NULL)
		return NULL;
	for (e = m->first; e != NULL; e = e->order)
		v[i++] = e;
	/* insertion sort keeps equal peaks in insertion order */
	for (i = 1; i < n; i++) {
		struct prof_entry *x = v[i];
		size_t j = i;
		while (j > 0 && by_peak(&v[j - 1], &x) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
	*count = n;
	return v;
}

char *
mate_memlog_profile(mate_memlog *m)
{
	struct mate_buf b = { 0 };
	struct prof_entry **v;
	size_t n;

	if (m == NULL)
		return NULL;
	pthread_mutex_lock(&m->lock);
	v = sorted_entries(m, &n);
	if (v == NULL)
		b.oom = 1;
	mate_buf_put(&b, profile_head, sizeof(profile_head) - 1);
	for (size_t i = 0; v != NULL && i < n; i++) {
		put_grouped(&b, v[i]->ncalls, 6);
		mate_buf_put(&b, " ", 1);
		put_grouped(&b, v[i]->peak > 0 ? (uint64_t)v[i]->peak : 0, 15);
		mate_buf_put(&b, " ", 1);
		put_grouped(&b, v[i]->total, 15);
		mate_buf_put(&b, "  ", 2);
		mate_buf_put(&b, v[i]->name, strlen(v[i]->name));
		mate_buf_put(&b, "\n", 1);
	}
	pthread_mutex_unlock(&m->lock);
	free(v);
	if (mate_buf_str(&b) == NULL) {
		mate_buf_free(&b);
		return NULL;
	}
	return b.p;
}

/* ---- fork ------------------------------------------------------------------------------------ */

void
mate_memlog_fork_prepare(mate_memlog *m)
{
	if (m != NULL)
		pthread_mutex_lock(&m->lock);
}

void
mate_memlog_fork_parent(mate_memlog *m)
{
	if (m != NULL)
		pthread_mutex_unlock(&m->lock);
}

void
mate_memlog_fork_child(mate_memlog *m, const char *path)
{
	if (m == NULL)
		return;
	pthread_mutex_init(&m->lock, NULL);
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	m->stopped = 0;
	m->tracking_lost = 0;
	if (path != NULL) {
		char *t = strdup(path);
		if (t != NULL) {
			free(m->tmpl);
			m->tmpl = t;
		}
	}
	mate_map_free(&m->live);
	memset(&m->st, 0, sizeof(m->st));
	prof_clear(m);
	m->gen++;
}
