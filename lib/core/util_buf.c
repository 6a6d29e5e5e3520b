/* util_buf.c: the growable text buffer (struct mate_buf) the recorder, the tensor-file writers and the reports share. */
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define LIKELY(x) (x)
#endif

void
mate_buf_init(struct mate_buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}

/* Each thread keeps a few freed buffers for its next ones: a call at
 * level 10 fills several, and malloc() of large blocks is slow when small
 * ones were freed since (glibc consolidates them first). Freed at thread
 * exit. */
#define CACHE_SLOTS 4
#define CACHE_MIN 4096
#define CACHE_MAX (64u << 10)
struct buf_cache {
	char *p[CACHE_SLOTS];
	size_t cap[CACHE_SLOTS];
};
static __thread struct buf_cache cache;
static __thread int cache_keyed;   /* 1 its destructor registered, -1 it cannot be */

/* ---- a thread's caches, freed at its exit: one thread key for them all ---- */
#define AT_EXIT_MAX 4
struct at_exit {
	struct {
		void (*fn)(void *);
		void *arg;
	} e[AT_EXIT_MAX];
	int n;
};
static __thread struct at_exit at_exit;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

static void
exit_run(void *arg)
{
	struct at_exit *t = arg;

	while (t->n > 0) {
		t->n--;
		t->e[t->n].fn(t->e[t->n].arg);
	}
}

static void
exit_make_key(void)
{
	exit_key_ok = pthread_key_create(&exit_key, exit_run) == 0;
}

int
mate_thread_at_exit(void (*fn)(void *), void *arg)
{
	pthread_once(&exit_once, exit_make_key);
	if (!exit_key_ok || at_exit.n == AT_EXIT_MAX)
		return -1;
	if (at_exit.n == 0 && pthread_setspecific(exit_key, &at_exit) != 0)
		return -1;
	at_exit.e[at_exit.n].fn = fn;
	at_exit.e[at_exit.n].arg = arg;
	at_exit.n++;
	return 0;
}

static void
cache_destroy(void *arg)
{
	struct buf_cache *c = arg;

	for (int i = 0; i < CACHE_SLOTS; i++) {
		free(c->p[i]);
		c->p[i] = NULL;
	}
}

/* Whether this thread's cache is in use (its destructor registered). */
static int
cache_ready(void)
{
	if (cache_keyed == 0)
		cache_keyed = mate_thread_at_exit(cache_destroy, &cache) == 0 ? 1 : -1;
	return cache_keyed == 1;
}

void
mate_buf_free(struct mate_buf *b)
{
	if (b->p != NULL && !b->oom && b->cap >= CACHE_MIN && b->cap <= CACHE_MAX && cache_ready()) {
		for (int i = 0; i < CACHE_SLOTS; i++)
			if (cache.p[i] == NULL) {
				cache.p[i] = b->p;
				cache.cap[i] = b->cap;
				mate_buf_init(b);
				return;
			}
	}
	free(b->p);
	mate_buf_init(b);
}

/* After a failure cap == len, so that every later reserve() comes here. */
static int
grow(struct mate_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return 0;
	if (b->p == NULL && cache_keyed)
		for (int i = 0; i < CACHE_SLOTS; i++)
			if (cache.p[i] != NULL && cache.cap[i] > n) {
				b->p = cache.p[i];
				b->cap = cache.cap[i];
				cache.p[i] = NULL;
				return 1;
			}
	cap = b->cap ? b->cap : CACHE_MIN;
	while (cap < b->len + n + 1) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (p == NULL)
		goto fail;
	b->p = p;
	b->cap = cap;
	return 1;
fail:
	b->oom = 1;
	b->cap = b->len;
	return 0;
}

/* Room for n more bytes and a NUL (cap is 0 after an allocation failure). */
static inline int
reserve(struct mate_buf *b, size_t n)
{
	return LIKELY(b->cap - b->len > n) || grow(b, n);
}

int
mate_buf_reserve(struct mate_buf *b, size_t n)
{
	return reserve(b, n) ? 0 : -1;
}

void
mate_buf_put(struct mate_buf *b, const char *s, size_t n)
{
	if (n == 0 || !reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

void
mate_buf_puts(struct mate_buf *b, const char *s)
{
	mate_buf_put(b, s, strlen(s));
}

void
mate_buf_putc(struct mate_buf *b, char ch)
{
	if (!reserve(b, 1))
		return;
	b->p[b->len++] = ch;
}

void
mate_buf_printf(struct mate_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!reserve(b, 64))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		if (!reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* The decimal digits of u, and a '-' before them if negative. */
static void
put_decimal(struct mate_buf *b, uint64_t u, int negative)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (negative)
		*--p = '-';
	mate_buf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void
mate_buf_int(struct mate_buf *b, int64_t v)
{
	put_decimal(b, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void
mate_buf_uint(struct mate_buf *b, uint64_t v)
{
	put_decimal(b, v, 0);
}

void
mate_buf_hex(struct mate_buf *b, uint64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	do
		*--p = "0123456789abcdef"[v & 15];
	while ((v >>= 4) != 0);
	*--p = 'x';
	*--p = '0';
	mate_buf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void
mate_buf_spaces(struct mate_buf *b, int n)
{
	if (n <= 0 || !reserve(b, (size_t)n))
		return;
	memset(b->p + b->len, ' ', (size_t)n);
	b->len += (size_t)n;
}

const char *
mate_buf_str(struct mate_buf *b)
{
	if (!reserve(b, 0))
		return NULL;
	b->p[b->len] = '\0';
	return b->p;
}

static void
put_buf(void *ctx, const char *p, size_t n)
{
	mate_buf_put(ctx, p, n);
}

void
mate_buf_json(struct mate_buf *b, const char *s, size_t len, unsigned flags)
{
	mate_json_string(s, len, flags, put_buf, b);
}
