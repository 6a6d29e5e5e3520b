/* util.h: the utility layer shared inside mate (clocks, hashes, arrays, warnings, growable text, JSON strings, name patterns, settings, locales); never installed. */
#ifndef MATE_UTIL_H_INCLUDED
#define MATE_UTIL_H_INCLUDED

#include <locale.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* As mate_private.h spells them (that header is not for the frontends and
 * the preload library, which build some of these files too). */
#ifndef MATE_HIDDEN
#if defined(__GNUC__)
#define MATE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MATE_HIDDEN __attribute__((visibility("hidden")))
#else
#define MATE_PRINTF(a, b)
#define MATE_HIDDEN
#endif
#endif

/* ---- clocks ------------------------------------------------------------------- */

/* A clock (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_THREAD_CPUTIME_ID, ...) in
 * nanoseconds and in seconds (inline: the recorder reads it on every call). */
static inline uint64_t
mate_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double
mate_clock_seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The monotonic clock, which times everything mate measures. */
static inline uint64_t
mate_mono_ns(void)
{
	return mate_clock_ns(CLOCK_MONOTONIC);
}

static inline double
mate_mono_seconds(void)
{
	return mate_clock_seconds(CLOCK_MONOTONIC);
}

/* qsort()'s comparison of doubles, ascending (NaNs where they fall). */
static inline int
mate_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ---- FNV-1a hashes -------------------------------------------------------------- */

/* FNV-1a of n bytes from the offset basis h with prime. Kept to 32 bits at
 * the end, the 32-bit constants give the 32-bit hash: the low bits of a
 * product depend on the low bits of its factors only. */
static inline uint64_t
mate_fnv1a(const void *p, size_t n, uint64_t h, uint64_t prime)
{
	const unsigned char *s = (const unsigned char *)p;  /* also C++ (nvcc) */

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * prime;
	return h;
}

/* The 32-bit and 64-bit FNV-1a hashes of n bytes. */
static inline uint32_t
mate_fnv1a32(const void *p, size_t n)
{
	return (uint32_t)mate_fnv1a(p, n, 2166136261u, 16777619u);
}

#define MATE_FNV1A64_BASIS 14695981039346656037ULL
#define MATE_FNV1A64_PRIME 1099511628211ULL

static inline uint64_t
mate_fnv1a64(const void *p, size_t n)
{
	return mate_fnv1a(p, n, MATE_FNV1A64_BASIS, MATE_FNV1A64_PRIME);
}

/* ---- warnings (util_warn.c; also built into libmate-preload.so) ------------- */

/* "mate: MESSAGE\n" on stderr in one write(2), cut to 1 KiB: a recorder
 * inside someone else's program says what went wrong without stdio. */
void mate_warn(const char *fmt, ...) MATE_PRINTF(1, 2) MATE_HIDDEN;
void mate_vwarn(const char *fmt, va_list ap) MATE_PRINTF(1, 0) MATE_HIDDEN;

/* ---- growing arrays (util_array.c) --------------------------------------------- */

/* Room for one more element in the array at *arrayp (a T **, elements of
 * size bytes) holding n of *cap: a full array doubles (first elements the
 * first time). 0, or -1 out of memory, the array and *cap as they were. */
int mate_array_grow(void *arrayp, size_t n, size_t *cap, size_t size, size_t first) MATE_HIDDEN;

/* ---- a thread's caches (util_buf.c) -------------------------------------------- */

/* Has fn(arg) called when the calling thread exits (through one thread key, at most 4
 * a thread): a thread's cache of freed blocks frees them then. 0, or -1 when it cannot
 * be (the cache is then not used). */
int mate_thread_at_exit(void (*fn)(void *), void *arg) MATE_HIDDEN;

/* ---- growable text buffer (util_buf.c) ---------------------------------------- */

/* Zeroed (or mate_buf_init()) is empty. After a failed allocation oom is
 * set, later appends do nothing and mate_buf_str() returns NULL. */
struct mate_buf {
	char *p;
	size_t len, cap;
	int oom;        /* an allocation failed: the text is incomplete */
};
void mate_buf_init(struct mate_buf *b) MATE_HIDDEN;
void mate_buf_free(struct mate_buf *b) MATE_HIDDEN;
/* Room for n more bytes and a NUL (p may move; a block of 4 KiB to 64 KiB comes from
 * and goes back to the thread's cache): 0, or -1 out of memory. */
int mate_buf_reserve(struct mate_buf *b, size_t n) MATE_HIDDEN;
void mate_buf_put(struct mate_buf *b, const char *s, size_t n) MATE_HIDDEN;
void mate_buf_puts(struct mate_buf *b, const char *s) MATE_HIDDEN;
void mate_buf_putc(struct mate_buf *b, char ch) MATE_HIDDEN;
void mate_buf_printf(struct mate_buf *b, const char *fmt, ...) MATE_PRINTF(2, 3) MATE_HIDDEN;
void mate_buf_spaces(struct mate_buf *b, int n) MATE_HIDDEN;
/* Decimal and "0x" hexadecimal integers without printf. */
void mate_buf_int(struct mate_buf *b, int64_t v) MATE_HIDDEN;
void mate_buf_uint(struct mate_buf *b, uint64_t v) MATE_HIDDEN;
void mate_buf_hex(struct mate_buf *b, uint64_t v) MATE_HIDDEN;
/* NUL-terminates and returns the text (NULL after an allocation failure). */
const char *mate_buf_str(struct mate_buf *b) MATE_HIDDEN;

/* ---- JSON strings (util_json.c) ------------------------------------------------ */

/* Every writer escapes '"' and '\\' and the control bytes; these choose
 * the rest, so that each output stays what its reader (or the program it
 * copies) writes. */
enum {
	MATE_JSON_SHORT = 1,   /* \b \t \n \f \r rather than \u00XX (json.dumps, serde_json) */
	MATE_JSON_ASCII = 2,   /* DEL and all non-ASCII as \uXXXX, surrogate pairs above
	                        * U+FFFF; a byte that is not UTF-8 as \u00XX (json.dumps'
	                        * ensure_ascii) */
	MATE_JSON_UTF8 = 4     /* UTF-8 as it is, a byte that is not as \ufffd; without
	                        * this or ASCII, bytes from 0x80 are copied as they are */
};
/* Writes s (len bytes) as a JSON string, quotes included, through put(ctx,
 * bytes, n): plain runs in one call, each escape in one call. */
void mate_json_string(const char *s, size_t len, unsigned flags,
    void (*put)(void *ctx, const char *p, size_t n), void *ctx) MATE_HIDDEN;
/* The same appended to b (util_buf.c: util_json.c needs nothing but libc,
 * so that the frontends and libmate_view can build it in). */
void mate_buf_json(struct mate_buf *b, const char *s, size_t len, unsigned flags) MATE_HIDDEN;
/* The length of the well-formed UTF-8 sequence (RFC 3629: no overlong
 * form, no surrogate, nothing past U+10FFFF) at s, at most n bytes, with
 * its code point in *cp; 0 when there is none. */
int mate_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) MATE_HIDDEN;

/* ---- function-name patterns (util_match.c) --------------------------------------- */

/* MATE_DUMP_INCLUDE and EXCLUDE, mate-replay's --include and --exclude:
 * lists of fnmatch(3) patterns. Zeroed is empty. */
struct mate_patterns {
	char **p;
	size_t n;
};
/* Adds the comma-separated items of list, each trimmed of white space
 * (isspace()), empty items dropped. 0, or -1 out of memory (what was
 * added stays). */
int mate_patterns_add(struct mate_patterns *ps, const char *list) MATE_HIDDEN;
void mate_patterns_free(struct mate_patterns *ps) MATE_HIDDEN;
/* Whether name is selected: it matches one include pattern (any, when
 * there are none) and no exclude pattern. fnmatch(3) without flags, case
 * sensitive, over the whole name as recorded: a method is "Class.method",
 * "Tensor.softmax" included, as FlashInfer's _should_dump_function()
 * matches. */
int mate_patterns_select(const struct mate_patterns *include, const struct mate_patterns *exclude,
    const char *name) MATE_HIDDEN;

/* ---- settings from the environment (util_env.c) --------------------------------- */

/* 1, *v set, when the variable name holds a decimal integer (strtol(3),
 * nothing after it) in [lo, hi]; 0 when it is unset or empty; -1 when it
 * holds anything else (*v undefined). */
int mate_env_long(const char *name, long lo, long hi, long *v) MATE_HIDDEN;

/* ---- thread locales (util_locale.c) -------------------------------------------- */

enum {
	MATE_LOCALE_C,     /* "C", every category: Python-compatible numbers and text */
	MATE_LOCALE_UTF8   /* "C.UTF-8" for LC_CTYPE (the rest "C"): libarchive's zip names */
};
/* The locale which, made on first use and kept; (locale_t)0 where the
 * system has none. */
locale_t mate_locale(int which) MATE_HIDDEN;
/* Switches this thread to the locale which (uselocale(3) is per thread)
 * and returns the one to go back to with mate_locale_leave(); (locale_t)0,
 * nothing changed, where which is missing. */
locale_t mate_locale_enter(int which) MATE_HIDDEN;
void mate_locale_leave(locale_t old) MATE_HIDDEN;

/* ---- temporary files (util_tmp.c) --------------------------------------------- */

/* Creates a temporary file beside path, "<path>.tmp.<pid>.<random>" written
 * into out (room for path and 64 bytes): exclusively (O_EXCL, a new name
 * after EEXIST), never through a link, never waiting (O_NONBLOCK). Safe in
 * a signal handler. Returns the fd (write-only, close-on-exec) or -errno. */
int mate_tmp_create(char *out, const char *path) MATE_HIDDEN;
/* The name alone, "<path>.tmp.<pid>.<16 hex digits from getrandom()>", into out
 * (room for path and 64 bytes); without printf, so safe in a signal handler. */
void mate_tmp_name(char *out, const char *path) MATE_HIDDEN;

#endif /* MATE_UTIL_H_INCLUDED */
