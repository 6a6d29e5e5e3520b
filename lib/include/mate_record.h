/* mate_record.h: libmate for mate-record and its tools: the RMM-style memory event log, statistics, profile, allocation replay, and recording sessions. */
#ifndef MATE_RECORD_H_INCLUDED
#define MATE_RECORD_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "mate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model is RAPIDS RMM's memory tooling (mate(7), spec memlog.md): a CSV
 * row per allocation and free, running statistics, a profile of the memory
 * each API call or code block allocated, and a replay of a logged pattern
 * against other allocators. */

enum mate_memlog_action {
	MATE_MEMLOG_ALLOCATE = 0,
	MATE_MEMLOG_DEALLOCATE = 1,
	MATE_MEMLOG_FAILURE = 2     /* "allocate failure" */
};

/* How the CSV spells its rows. RMM: what RMM's logging_resource_adaptor
 * writes and its REPLAY_BENCH reads ("14:21:43.123456" local time of day,
 * "free", "(nil)" for the null pointer of a failure, the stream "0" or
 * "0x7f..."). EPOCH: the spelling of RMM's documentation page ("seconds
 * since the epoch.microseconds", "deallocate", "0x0" streams). */
enum mate_memlog_format {
	MATE_MEMLOG_FORMAT_RMM = 0,
	MATE_MEMLOG_FORMAT_EPOCH = 1
};

struct mate_memlog_stats {
	uint64_t current_bytes, current_count;  /* live allocations */
	uint64_t peak_bytes, peak_count;
	uint64_t total_bytes, total_count;      /* ever allocated */
};

/* ---- Writing: the memory log of one process ------------------------------
 * Every function is thread-safe and takes NULL (then does nothing). A
 * failure to write the CSV stops the CSV (mate_memlog_error() says why);
 * tracking and statistics go on. */
typedef struct mate_memlog mate_memlog;

/*! mate_memlog_new() : a log that tracks live allocations and their
 * statistics and, when path is not NULL, appends the CSV to path (every
 * "%i" becomes the process id). The file is opened at the first event;
 * its header row is written when the file is empty. @return NULL only
 * without memory. */
mate_memlog *mate_memlog_new(const char *path, mate_error *err);
/*! mate_memlog_format_named() : the format named "rmm" (also NULL or
 * "") or "epoch"; -1 for another name. */
int mate_memlog_format_named(const char *name);
/*! mate_memlog_set_format() : the spelling of the rows written from now on
 * (default MATE_MEMLOG_FORMAT_RMM). @return MATE_OK, or MATE_ERR_ARGUMENT
 * for an unknown format. */
int mate_memlog_set_format(mate_memlog *m, int format);
/*! mate_memlog_write_header() : the CSV that path names for process pid
 * ("%i" as in mate_memlog_new()) with its header row alone, when the file
 * is missing or empty (a run with no device allocations still leaves a log
 * that readers take). @return MATE_OK, or an error naming the file. */
int mate_memlog_write_header(const char *path, long pid, mate_error *err);
/*! mate_memlog_free() : closes the CSV and frees m. NULL ok. */
void mate_memlog_free(mate_memlog *m);

/*! mate_memlog_allocate() : size bytes at ptr were allocated on stream
 * (0: the default stream). A NULL ptr is ignored. */
void mate_memlog_allocate(mate_memlog *m, uint64_t ptr, uint64_t size, uint64_t stream);
/*! mate_memlog_deallocate() : ptr was freed on stream. @return the size it
 * was allocated with, or -1 when ptr is not a live allocation of this log
 * (nothing is written then). */
int64_t mate_memlog_deallocate(mate_memlog *m, uint64_t ptr, uint64_t stream);
/*! mate_memlog_failure() : an allocation of size bytes failed. */
void mate_memlog_failure(mate_memlog *m, uint64_t size, uint64_t stream);
/*! mate_memlog_get_stats() : the statistics now (any thread, any time). */
void mate_memlog_get_stats(mate_memlog *m, struct mate_memlog_stats *s);
/*! mate_memlog_error() : why the CSV stopped, or NULL. Borrowed. */
const char *mate_memlog_error(mate_memlog *m);

/* Profile. Allocations count towards the innermost block the allocating
 * thread has pushed, and a block's counts go into its parents when it is
 * popped (RMM's memory_profile). Blocks are named "file:line(function)".
 * What a thread allocates (and frees) with no block open goes to a row of
 * its own, "<outside any call>", one block over the whole run. */
/*! mate_memlog_push() : enters a block on this thread (strings copied). */
void mate_memlog_push(mate_memlog *m, const char *file, int line, const char *function);
/*! mate_memlog_pop() : leaves the innermost block of this thread. */
void mate_memlog_pop(mate_memlog *m);
/*! mate_memlog_profile() : the report in RMM's format ("Memory Profiling",
 * ordered by memory_peak), one line per block; malloc'ed text the caller
 * frees, or NULL without memory. */
char *mate_memlog_profile(mate_memlog *m);

/* fork(): call prepare before, parent after in the parent, and child in
 * the child, which forgets the parent's allocations, statistics and
 * profile and writes to path (NULL: keep the template) from then on. */
void mate_memlog_fork_prepare(mate_memlog *m);
void mate_memlog_fork_parent(mate_memlog *m);
void mate_memlog_fork_child(mate_memlog *m, const char *path);

/* ---- Reading a CSV --------------------------------------------------------
 * Accepts mate's rows and RMM's: "free" for "deallocate", clock times
 * (HH:MM:SS.ffffff) as well as epoch seconds, pointers and streams in hex
 * with or without "0x", "(nil)" for a null pointer, CRLF line ends, and the
 * header row (optional; its column names may come in any order). */
struct mate_memlog_event {
	int action;         /* enum mate_memlog_action */
	uint32_t thread;    /* index of the logged thread, 0.. threads-1 */
	uint64_t ptr, size, stream;
	double time;        /* seconds: since the epoch, or since midnight (local
	                     * time of day: it starts again at 0 after midnight) */
	int64_t line;       /* line of the file, from 1 */
};

typedef struct mate_memlog_trace mate_memlog_trace;

/*! mate_memlog_read() : parses the CSV at path ("-": standard input).
 * Errors name the file and line. @return the trace (caller frees) or NULL. */
mate_memlog_trace *mate_memlog_read(const char *path, mate_error *err);
/*! mate_memlog_parse() : the same on len bytes of text. */
mate_memlog_trace *mate_memlog_parse(const char *buf, size_t len, mate_error *err);
void mate_memlog_trace_free(mate_memlog_trace *t);
/*! mate_memlog_trace_events() : the events in file order; *n gets their count. */
const struct mate_memlog_event *mate_memlog_trace_events(const mate_memlog_trace *t, size_t *n);
/*! mate_memlog_trace_threads() : number of distinct logged threads. */
size_t mate_memlog_trace_threads(const mate_memlog_trace *t);
/*! mate_memlog_trace_thread_id() : the logged id of thread index i. */
uint64_t mate_memlog_trace_thread_id(const mate_memlog_trace *t, size_t i);

/* ---- Allocation replay -----------------------------------------------------
 * Replays a trace against an allocator: one thread per logged thread, the
 * logged order across threads kept, each logged pointer mapped to the one
 * the allocator returned, "allocate failure" rows skipped. */
struct mate_alloc_replay_result {
	double seconds;             /* wall time of the replay itself */
	uint64_t events;            /* allocate and deallocate rows replayed */
	uint64_t skipped;           /* "allocate failure" rows */
	uint64_t peak_bytes;        /* peak of the live requested bytes */
	uint64_t peak_footprint;    /* peak bytes the allocator held */
	uint64_t leaked_count;      /* allocations the log never freed */
	uint64_t leaked_bytes;
	uint64_t size_mismatches;   /* frees logged with another size than their allocation */
	int64_t failed_line;        /* the row the replay stopped at, or 0 */
};

/*! mate_alloc_replay_allocator() : the name of allocator i ("malloc",
 * "pool", "cuda", "cuda-async"), or NULL past the last. Static string. */
const char *mate_alloc_replay_allocator(size_t i);
/*! mate_alloc_replay_available() : whether allocator name can run here;
 * MATE_OK, or MATE_ERR_UNSUPPORTED / MATE_ERR_ARGUMENT with err saying why. */
int mate_alloc_replay_available(const char *name, mate_error *err);
/*! mate_alloc_replay_check() : checks that the trace is consistent (no
 * free of a pointer that is not live, no allocation of a live one) and
 * fills res's leak and size counts. @return MATE_OK, or MATE_ERR_FORMAT
 * with err naming the row (res->failed_line set). */
int mate_alloc_replay_check(const mate_memlog_trace *t, struct mate_alloc_replay_result *res,
    mate_error *err);
/*! mate_alloc_replay() : checks the trace, then replays it against the
 * named allocator and frees what the log never freed. @return MATE_OK;
 * MATE_ERR_FORMAT for an inconsistent trace; MATE_ERR_NOMEM (or another
 * status) when the allocator failed, with err naming the row; or
 * MATE_ERR_UNSUPPORTED / MATE_ERR_ARGUMENT for an allocator that is not
 * available or not known. res is filled in every case. */
int mate_alloc_replay(const mate_memlog_trace *t, const char *allocator,
    struct mate_alloc_replay_result *res, mate_error *err);

/* ---- Recording sessions (mate-record) ---------------------------------------
 * mate-record runs a program with libmate-preload.so preloaded; each
 * process of it keeps a small summary file in the session's folder, read
 * back at the end. */
struct mate_record_totals {
	uint64_t processes;         /* processes that recorded something */
	uint64_t calls;             /* API calls recorded */
	uint64_t transfers, transfer_bytes;   /* cudaMemcpy* calls and bytes */
	uint64_t launches;          /* kernel launches */
	uint64_t allocations;       /* device allocations logged */
	uint64_t peak_bytes;        /* the highest peak of allocated bytes of one process */
	uint64_t dumps, dump_bytes; /* dump directories made in the session, their bytes */
	int static_cudart;          /* a process carried a static CUDA runtime */
	int no_recorder;            /* a process could not load libmate */
};

typedef struct mate_record_session mate_record_session;

/*! mate_record_session_new() : a session with a private folder (under
 * $TMPDIR) for the summary files; dump_dir (may be NULL) is listed now so
 * that the dumps the session makes can be told from older ones. */
mate_record_session *mate_record_session_new(const char *dump_dir, mate_error *err);
/*! mate_record_session_dir() : the folder, for MATE_RECORD_SUMMARY. Borrowed. */
const char *mate_record_session_dir(const mate_record_session *s);
/*! mate_record_session_totals() : adds up the summaries and the new dumps. */
int mate_record_session_totals(mate_record_session *s, struct mate_record_totals *t,
    mate_error *err);
/*! mate_record_session_free() : removes the folder and frees s. NULL ok. */
void mate_record_session_free(mate_record_session *s);

/*! mate_record_libmate_path() : the file of the libmate in use (for the
 * preload library to load). MATE_ERR_UNSUPPORTED when libmate is linked
 * statically. */
int mate_record_libmate_path(char *buf, size_t len, mate_error *err);
/*! mate_record_preload_path() : libmate-preload.so: $MATE_RECORD_PRELOAD,
 * else beside the libmate in use (its mate/ folder, or the same folder in
 * a build tree), else the installed one. MATE_ERR_FORMAT when
 * $MATE_RECORD_PRELOAD is not a 64-bit ELF shared object for this machine
 * (the loader would skip it and the program run unrecorded). */
int mate_record_preload_path(char *buf, size_t len, mate_error *err);

/* How an ELF file gets its CUDA runtime. */
enum mate_cuda_runtime_kind {
	MATE_CUDART_NONE = 0,       /* no CUDA runtime use seen */
	MATE_CUDART_SHARED = 1,     /* from libcudart.so (or it is libcudart.so) */
	MATE_CUDART_STATIC = 2      /* its own copy: preloading cannot see its calls */
};
/*! mate_elf_cuda_runtime() : the kind for the ELF file at path, or a
 * negative status (not a 64-bit little-endian ELF file, unreadable). */
int mate_elf_cuda_runtime(const char *path, mate_error *err);
/*! mate_elf_cuda_runtime_buf() : the same for a file's len bytes in memory. */
int mate_elf_cuda_runtime_buf(const void *buf, size_t len, mate_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MATE_RECORD_H_INCLUDED */
