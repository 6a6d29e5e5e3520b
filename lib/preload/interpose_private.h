/* interpose_private.h: what the files of the preload interposer (libmate-preload.so) share. */
#ifndef MATE_INTERPOSE_PRIVATE_H_INCLUDED
#define MATE_INTERPOSE_PRIVATE_H_INCLUDED

#include "config.h"
#include <fenv.h>
#include <stddef.h>
#include <stdint.h>
#include "mate_record.h"
#include "record_summary.h"
#include "util.h"

/* The preload library is built with -fvisibility=hidden: only the
 * interposed API entry points are exported. */
#define IP_EXPORT __attribute__((visibility("default")))
#define IP_TLS __attribute__((tls_model("initial-exec")))
#define IP_LIKELY(x) __builtin_expect(!!(x), 1)
#define IP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* libmate's functions, looked up in the libmate the interposer loaded
 * (RTLD_LOCAL, so that neither libmate nor its BLAS becomes visible to the
 * program). Recorder entries are NULL when that libmate has no recorder. */
struct ip_api {
	mate_call *(*call_begin)(const char *, const char *, const char *);
	void (*call_tensor)(mate_call *, int, const char *, const mate_tensor *);
	void (*call_int)(mate_call *, int, const char *, int64_t);
	void (*call_float)(mate_call *, int, const char *, double);
	void (*call_str)(mate_call *, int, const char *, const char *);
	void (*call_enum)(mate_call *, int, const char *, const char *, int64_t);
	void (*call_dtype)(mate_call *, int, const char *, mate_dtype);
	void (*call_value)(mate_call *, int, const char *, struct mate_value *);
	struct mate_value *(*value_object)(const char *, const char *);
	struct mate_value *(*value_int)(int64_t);
	struct mate_value *(*value_tuple)(void);
	int (*value_append)(struct mate_value *, struct mate_value *);
	void (*call_ready)(mate_call *);
	void (*call_end)(mate_call *);
	void (*call_fail)(mate_call *, const char *);
	int (*record_level)(void);
	mate_memlog *(*memlog_new)(const char *, mate_error *);
	void (*memlog_allocate)(mate_memlog *, uint64_t, uint64_t, uint64_t);
	int64_t (*memlog_deallocate)(mate_memlog *, uint64_t, uint64_t);
	void (*memlog_failure)(mate_memlog *, uint64_t, uint64_t);
	void (*memlog_get_stats)(mate_memlog *, struct mate_memlog_stats *);
	const char *(*memlog_error)(mate_memlog *);
	void (*memlog_push)(mate_memlog *, const char *, int, const char *);
	void (*memlog_pop)(mate_memlog *);
	char *(*memlog_profile)(mate_memlog *);
	void (*memlog_fork_prepare)(mate_memlog *);
	void (*memlog_fork_parent)(mate_memlog *);
	void (*memlog_fork_child)(mate_memlog *, const char *);
	int (*memlog_format_named)(const char *);
	int (*memlog_set_format)(mate_memlog *, int);
	int (*elf_cuda_runtime)(const char *, mate_error *);
	int (*memory_source)(const char *, const char *);   /* may be NULL */
	int (*ring_flush)(mate_error *);                     /* may be NULL */
	int (*event_rank)(int, int, const char *);           /* may be NULL */
};

extern struct ip_api mate_ip_api;
/* The environment asks for something (a level or a memory log). */
extern int mate_ip_want;
/* Set once libmate is loaded: the recording level (0: none) and the log. */
extern int mate_ip_level;
/* The level whose arguments the interposers collect: 3 at level 1 with MATE_PROFILE. */
extern int mate_ip_args_level;
extern mate_memlog *mate_ip_memlog;
/* This process's summary file, or NULL. */
extern struct mate_rec_summary *mate_ip_sum;

/* > 0 inside an interposed call: nested API calls are not recorded again
 * (memory events still are). */
extern __thread int mate_ip_depth IP_TLS;
/* > 0 inside mate's own code: nothing at all is recorded. */
extern __thread int mate_ip_inside IP_TLS;

/* 0 until libmate was loaded (or failed to load), then 1 (usable) or -1. */
extern int mate_ip_state;
/* Loads libmate and sets everything up once. 1 when it is usable. */
int mate_ip_load_slow(void);

static inline int
mate_ip_load(void)
{
	int s = __atomic_load_n(&mate_ip_state, __ATOMIC_ACQUIRE);

	return IP_LIKELY(s != 0) ? s > 0 : mate_ip_load_slow();
}

/* Whether an API call is to be recorded now (at level 0 with a memory
 * log, only as a block of the memory profile) / memory events logged now. */
static inline int
mate_ip_recording(void)
{
	return IP_UNLIKELY(mate_ip_want) && mate_ip_depth == 0 && mate_ip_inside == 0 &&
	    mate_ip_load() && (mate_ip_level > 0 || mate_ip_memlog != NULL);
}

static inline int
mate_ip_tracking(void)
{
	return IP_UNLIKELY(mate_ip_want) && mate_ip_inside == 0 && mate_ip_load() &&
	    mate_ip_memlog != NULL;
}

/* The definition of name the caller would have reached without the
 * preload: the next one in the global scope, else the one in the calling
 * object's own scope (libraries loaded with RTLD_LOCAL, as Python loads
 * numpy's), else any loaded object's. self is the interposer's own
 * definition (never returned). NULL, with a warning, when there is none. */
void *mate_ip_resolve(const char *name, void *self, void *caller);
/* The same without the warning (for optional functions). */
void *mate_ip_lookup(const char *name, void *self, void *caller);

static inline void *
mate_ip_real(void **cache, const char *name, void *self, void *caller)
{
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (IP_LIKELY(f != NULL))
		return f;
	f = mate_ip_resolve(name, self, caller);
	__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}

/* Our own cudaMemcpyAsync (interpose_cuda.c), exported like every entry point. */
IP_EXPORT int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream);

/* A definition of name in the object holding addr (or its dependencies). */
void *mate_ip_sibling(const void *addr, const char *name);

/* "mate: ..." on stderr in one write. */

/* Adds n to a counter of the summary file (when there is one). */
#define IP_COUNT(field, n) do { \
	struct mate_rec_summary *s_ = mate_ip_sum; \
	if (s_ != NULL) \
		__atomic_add_fetch(&s_->field, (uint64_t)(n), __ATOMIC_RELAXED); \
} while (0)
/* Raises the summary's peak to the log's. */
void mate_ip_note_peak(void);

/* ---- one recorded call ---------------------------------------------------------------- */
struct ip_call {
	mate_call *c;
	const char *lib, *name;
	int level;
	fenv_t fe;          /* the program's floating-point state, kept across mate's work */
};

/* Starts recording name (from library lib) when the level allows; the
 * arguments follow through mate_ip_api (inside ip_args_begin/end). */
void mate_ip_call_begin(struct ip_call *ic, const char *lib, const char *name, const char *sig);
/* Brackets the code adding arguments (keeps mate's own work unrecorded). */
static inline void mate_ip_args_begin(void) { mate_ip_inside++; }
static inline void mate_ip_args_end(void) { mate_ip_inside--; }
/* Arguments complete: logs and dumps them. */
void mate_ip_call_ready(struct ip_call *ic);
/* Around the real call: nested API calls are not recorded, allocations
 * are attributed to this call in the profile. */
void mate_ip_call_run(struct ip_call *ic);
void mate_ip_call_ran(struct ip_call *ic);
/* The call returned: error NULL for success. */
void mate_ip_call_end(struct ip_call *ic, const char *error);

/* A strided view of a stored matrix (rows x cols, leading dimension ld,
 * column or row major), batch copies bstride elements apart when batch > 0. */
void mate_ip_matrix(mate_tensor *t, mate_dtype dt, int colmajor, int64_t rows, int64_t cols,
    int64_t ld, int64_t batch, int64_t bstride, const void *data);
/* Whether a GEMM's sizes and leading dimensions are valid (else it is
 * not recorded and the library reports the error itself). */
int mate_ip_gemm_valid(int colmajor, int ta, int tb, int64_t m, int64_t n, int64_t k,
    int64_t lda, int64_t ldb, int64_t ldc);

#endif /* MATE_INTERPOSE_PRIVATE_H_INCLUDED */
