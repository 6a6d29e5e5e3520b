/* mate_record.h: recording: a library's API calls (mate_call_*), work on workers, the recorder's configuration, the RMM-style memory log, allocation replay and mate-record's sessions. */
#ifndef MATE_RECORD_H_INCLUDED
#define MATE_RECORD_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "mate_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ownership: every mate_call_* function accepts NULL and reports no
 * error (the rules are below, with the recording pattern); mate_call_value()
 * takes its tree. The configuration's strings are borrowed by
 * mate_configure(), which copies them. Memory logs, traces and recording
 * sessions are the caller's, freed with their *_free (NULL ok); strings they
 * return are borrowed from them, except mate_memlog_profile(), which the
 * caller frees. */

/* ---- Recording API calls ----------------------------------------------
 * A library records each call of its public API the way MATE's and
 * FlashInfer's Python decorators do, driven by the environment (mate(7)):
 * MATE_LOGLEVEL 0 off, 1 names, 3 arguments and results, 5 with tensor
 * statistics, 10 with dump directories. The pattern (libmate(3)): the
 * public function is one branch and the body; the recording is a function
 * of its own, so that level 0 costs the branch and nothing else (written
 * inline around the body, it costs its calls' register saves every call):
 *
 *	int
 *	rmsnorm(...)
 *	{
 *		if (MATE_ACTIVE())
 *			return rmsnorm_recorded(...);
 *		return rmsnorm_impl(...);
 *	}
 *
 *	static MATE_COLD int
 *	rmsnorm_recorded(...)
 *	{
 *		mate_call *c = mate_call_begin("rmsnorm", "mylib", "(input, weight, eps=1e-06)");
 *		mate_call_tensor(c, MATE_ARG, NULL, &input);
 *		mate_call_tensor(c, MATE_ARG, NULL, &weight);
 *		mate_call_float(c, MATE_DEFAULT, "eps", 1e-6);
 *		mate_call_ready(c);
 *		rc = rmsnorm_impl(&input, &weight, 1e-6, &out);
 *		if (rc == 0) {
 *			mate_call_tensor(c, MATE_RESULT, NULL, &out);
 *			mate_call_end(c);
 *		} else
 *			mate_call_fail(c, "rmsnorm: bad shape");
 *		return rc;
 *	}
 *
 * Rules:
 * - Every mate_call_* function accepts NULL and then does nothing; none
 *   reports an error: a failure inside the recorder becomes one warning on
 *   stderr ("mate: ...") and recording degrades (the call is not recorded,
 *   or dumping stops), never the host program.
 * - Strings and tensor descriptors are copied when passed. The memory a
 *   tensor points to is read in mate_call_ready() (arguments) and in
 *   mate_call_end() (results and MATE_INPLACE arguments) and must stay valid
 *   until then. Device tensors are copied to the host on their own stream
 *   (mate_tensor.stream), which only that stream waits for.
 * - mate_call_value() takes ownership of the tree (freed even on error).
 * - A mate_call belongs to the thread that began it until mate_call_end()
 *   or mate_call_fail() frees it; any number of threads record at once.
 * - The configuration is read from the environment once, by the first
 *   mate_call_begin() (MATE_ACTIVE() is true until then), or set by
 *   mate_configure(). */
typedef struct mate_call mate_call;

/* The level in effect: -1 until the configuration is read, then 0, 1, 3,
 * 5 or 10. Read through MATE_ACTIVE(); set only by libmate. */
MATE_API extern int mate_record_level_;

#if defined(__GNUC__)
#define MATE_ACTIVE() \
	__builtin_expect(__atomic_load_n(&mate_record_level_, __ATOMIC_RELAXED) != 0, 0)
#else
#define MATE_ACTIVE() (mate_record_level_ != 0)
#endif

/* The recording function of the pattern above: never inlined into the fast
 * path, and laid out with the rarely run code. */
#if defined(__GNUC__)
#define MATE_COLD __attribute__((noinline, cold))
#else
#define MATE_COLD
#endif

/* How a value takes part in the call (the flags argument below). */
enum mate_arg_flags {
	MATE_ARG = 0,        /* positional: arg[i] in the log, arg_<i> in dumps */
	MATE_KWARG = 1,      /* keyword: name= in the log, kwarg_<name> in dumps */
	MATE_DEFAULT = 2,    /* a parameter left at its default: logged only */
	MATE_RESULT = 3,     /* the return value; several make a tuple */
	MATE_INPLACE = 0x10  /* or'ed with MATE_ARG/MATE_KWARG on a tensor the API
	                        writes: its value after the call is dumped too */
};

/*! mate_call_begin() : starts recording a call of name ("Class.method" for a
 * method), from module, whose Python-style signature is signature (both may
 * be NULL). At level 1 this writes the log line. @return the call, or NULL
 * when nothing is recorded (level 0, or the recorder failed). */
MATE_API mate_call *mate_call_begin(const char *name, const char *module,
    const char *signature);
/*! mate_call_self() : the object receiver of a Class.method call: recorded
 * as positional argument 0 (an object of type Class) and as self_id. Call it
 * before the other positional arguments. */
MATE_API void mate_call_self(mate_call *c, const void *self);

/* Arguments, defaults and results. name is the keyword or parameter name
 * (ignored for MATE_RESULT; for MATE_ARG it may be NULL, and a name given is
 * shown only in MATE_LOG_EXTRA's log, "arg[3] (M):"). */
MATE_API void mate_call_tensor(mate_call *c, int flags, const char *name, const mate_tensor *t);
MATE_API void mate_call_int(mate_call *c, int flags, const char *name, int64_t v);
MATE_API void mate_call_float(mate_call *c, int flags, const char *name, double v);
MATE_API void mate_call_bool(mate_call *c, int flags, const char *name, int v);
/*! mate_call_str() : a string argument (s NULL records None). */
MATE_API void mate_call_str(mate_call *c, int flags, const char *name, const char *s);
MATE_API void mate_call_none(mate_call *c, int flags, const char *name);
MATE_API void mate_call_dtype(mate_call *c, int flags, const char *name, mate_dtype dt);
/*! mate_call_enum() : an enum member, enum_name as "Mode.FAST". */
MATE_API void mate_call_enum(mate_call *c, int flags, const char *name,
    const char *enum_name, int64_t v);
/*! mate_call_value() : any value tree (lists, tuples, dicts, nested tensors;
 * mate_core.h); ownership of v moves to the call. */
MATE_API void mate_call_value(mate_call *c, int flags, const char *name, struct mate_value *v);

/*! mate_call_ready() : the arguments are complete: logs them (levels 3, 5)
 * and dumps them (level 10) before the API runs. Implied by the first
 * MATE_RESULT or by mate_call_end()/mate_call_fail() when not called. */
MATE_API void mate_call_ready(mate_call *c);
/*! mate_call_end() : the API returned: logs and dumps the results and the
 * MATE_INPLACE arguments, then frees c. No MATE_RESULT records None. */
MATE_API void mate_call_end(mate_call *c);
/*! mate_call_fail() : the API reported an error: the dump gets a "failed"
 * record with error (may be NULL); no output is logged. Frees c. */
MATE_API void mate_call_fail(mate_call *c, const char *error);

/* ---- Work on workers (live events) ------------------------------------------
 * With events on (MATE_INSTRUCTION_LOG or MATE_MONITOR and MATE_LOGLEVEL >= 1,
 * mate(7)), every recorded call is a RECV (its inputs are ready) and a SEND
 * (it returned) from its thread, with ids in the details ("call=N op=NAME
 * depth=D"). A library whose work runs elsewhere (a worker thread, a GPU
 * stream, a device) reports that work, so it shows as WORKER_SEND and
 * WORKER_RECV on that worker, joined to the call:
 *
 *	uint64_t call = mate_call_id(c);     // on the calling thread; 0 if off
 *	... hand call to the worker with the task, then on the worker:
 *	mate_work w;
 *	mate_work_begin(&w, call, "worker_1", "rmsnorm", in_bytes);
 *	rc = run(task);
 *	mate_work_end(&w, out_bytes, rc == 0);
 *
 * Both cost one load when events are off. A mate_work is the caller's (on
 * the stack); begin and end may run on different threads. */
typedef struct mate_work {
	uint64_t call;      /* the call it belongs to (0: none) */
	uint64_t id;        /* this work's id; 0 when not recorded */
	char worker[48];    /* the worker's name, as the log shows it */
	char op[48];
} mate_work;

/*! mate_call_id() : the id of call c in the events (call=N), for its work;
 * 0 when events are off or c is NULL. Call it on c's thread. */
MATE_API uint64_t mate_call_id(const mate_call *c);
/*! mate_work_begin() : work of call (0: of no call) starts on worker (a
 * name such as "worker_1" or "cuda:0/stream 7"; NULL: the calling thread)
 * doing op (NULL: "work") on bytes bytes: WORKER_SEND. */
MATE_API void mate_work_begin(mate_work *w, uint64_t call, const char *worker, const char *op,
    int64_t bytes);
/*! mate_work_end() : the work of w finished (ok non-zero) or failed,
 * producing bytes bytes: WORKER_RECV. Does nothing when begin did not record. */
MATE_API void mate_work_end(mate_work *w, int64_t bytes, int ok);

/* ---- Recorder configuration ----------------------------------------------
 * The environment variables of mate(7) as a struct, for tools and tests.
 * Strings are borrowed by mate_configure(), which copies them. */
struct mate_config {
	int level;                /* MATE_LOGLEVEL, 0..10 (in-between levels act as the lower named one) */
	const char *logdest;      /* "stdout", "stderr" or a path (%i: the pid); NULL: stdout */
	const char *dump_dir;     /* NULL: "mate_dumps" */
	double dump_max_size_gb;  /* GiB (1024^3 bytes) per process */
	int64_t dump_max_count;   /* dumped calls per process */
	const char *dump_include; /* comma-separated fnmatch patterns; NULL: none */
	const char *dump_exclude;
	int dump_safetensors;     /* 1: .safetensors instead of .pt */
	const char *instruction_log; /* MATE_INSTRUCTION_LOG: a path (%i: the pid); NULL: none */
	const char *monitor;      /* MATE_MONITOR: "1", "tcp", "tcp:PORT", "tcp://HOST:PORT"; NULL: off */
	const char *profile;      /* MATE_PROFILE: a path (%i: the pid) for the table of
	                             distinct calls written at exit; NULL: none */
	const char *bench_log;    /* MATE_BENCH_LOG: a path (%i: the pid) that gets a mate-bench
	                             command line per distinct call; NULL: none */
};

/*! mate_config_default() : the defaults of mate(7) (level 0, stdout, ...). */
MATE_API void mate_config_default(struct mate_config *cfg);
/*! mate_config_from_env() : the defaults overridden by the MATE_* variables;
 * a bad value gets one warning on stderr naming it and keeps the default.
 * The strings point into the environment or static storage. */
MATE_API void mate_config_from_env(struct mate_config *cfg);
/*! mate_configure() : replaces the configuration in effect (cfg NULL: read
 * the environment again) and starts a new session: call counters, limits
 * and one-time warnings reset, the log destination is reopened, and the
 * system-information header is written again before the next logged call.
 * Not to be called while another thread is recording.
 * @return MATE_OK, or MATE_ERR_ARGUMENT (err set) for an invalid cfg. */
MATE_API int mate_configure(const struct mate_config *cfg, mate_error *err);
/*! mate_ring_flush() : with a flight recorder (MATE_RING at level 10; mate(7)),
 * writes the calls its ring holds into the dump directory now, as level 10 would
 * have left them; a call an earlier flush wrote is skipped, or completed once it
 * has returned. The ring goes on. @return MATE_OK; MATE_ERR_UNSUPPORTED when this
 * process keeps no ring; another status when the dumps cannot be written. */
MATE_API int mate_ring_flush(mate_error *err);
/*! mate_set_identity() : presents the recording as another library's API
 * logging, FlashInfer's with ("FLASHINFER", "FlashInfer"): the variables are
 * read as PREFIX_LOGLEVEL, PREFIX_LOGDEST, PREFIX_DUMP_DIR,
 * PREFIX_DUMP_MAX_SIZE_GB, PREFIX_DUMP_MAX_COUNT, PREFIX_DUMP_INCLUDE,
 * PREFIX_DUMP_EXCLUDE and PREFIX_DUMP_SAFETENSORS (MATE_INSTRUCTION_LOG,
 * MATE_MONITOR and MATE_MEMLOG keep their names), the log says "NAME API
 * Call" and "NAME API Logging", and the default dump folder is "name_dumps"
 * in lower case. With the prefix FLASHINFER the text is FlashInfer's
 * decorator's: tensor blocks have no va_range line. name NULL: the prefix;
 * both NULL: mate's own (MATE). The environment is then read again, as by
 * mate_configure(NULL). MATE_IDENTITY=PREFIX[:NAME] does the same before the
 * first call (mate-record --identity). Not while another thread records.
 * @return MATE_OK, or MATE_ERR_ARGUMENT (err set): a prefix not of 1-31
 * A-Z, 0-9 and _, or a name not of 1-31 printable characters. */
MATE_API int mate_set_identity(const char *prefix, const char *name, mate_error *err);
/*! mate_dump_dir_default() : the dump root a recording started now would
 * use, for tools that read it: PREFIX_DUMP_DIR of the identity that
 * MATE_IDENTITY names (MATE_DUMP_DIR for mate's own) when set, else
 * NAME_dumps in lower case ("mate_dumps", "flashinfer_dumps"). @return buf. */
MATE_API const char *mate_dump_dir_default(char *buf, size_t cap);
/*! mate_record_level() : the effective level: 0, 1, 3, 5 or 10. */
MATE_API int mate_record_level(void);


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
MATE_API mate_memlog *mate_memlog_new(const char *path, mate_error *err);
/*! mate_memlog_format_named() : the format named "rmm" (also NULL or
 * "") or "epoch"; -1 for another name. */
MATE_API int mate_memlog_format_named(const char *name);
/*! mate_memlog_set_format() : the spelling of the rows written from now on
 * (default MATE_MEMLOG_FORMAT_RMM). @return MATE_OK, or MATE_ERR_ARGUMENT
 * for an unknown format. */
MATE_API int mate_memlog_set_format(mate_memlog *m, int format);
/*! mate_memlog_write_header() : the CSV that path names for process pid
 * ("%i" as in mate_memlog_new()) with its header row alone, when the file
 * is missing or empty (a run with no device allocations still leaves a log
 * that readers take). @return MATE_OK, or an error naming the file. */
MATE_API int mate_memlog_write_header(const char *path, long pid, mate_error *err);
/*! mate_memlog_free() : closes the CSV and frees m. NULL ok. */
MATE_API void mate_memlog_free(mate_memlog *m);

/*! mate_memlog_allocate() : size bytes at ptr were allocated on stream
 * (0: the default stream). A NULL ptr is ignored. */
MATE_API void mate_memlog_allocate(mate_memlog *m, uint64_t ptr, uint64_t size, uint64_t stream);
/*! mate_memlog_deallocate() : ptr was freed on stream. @return the size it
 * was allocated with, or -1 when ptr is not a live allocation of this log
 * (nothing is written then). */
MATE_API int64_t mate_memlog_deallocate(mate_memlog *m, uint64_t ptr, uint64_t stream);
/*! mate_memlog_failure() : an allocation of size bytes failed. */
MATE_API void mate_memlog_failure(mate_memlog *m, uint64_t size, uint64_t stream);
/*! mate_memlog_get_stats() : the statistics now (any thread, any time). */
MATE_API void mate_memlog_get_stats(mate_memlog *m, struct mate_memlog_stats *s);
/*! mate_memlog_error() : why the CSV stopped, or NULL. Borrowed. */
MATE_API const char *mate_memlog_error(mate_memlog *m);
/*! mate_event_memory_source() : with live events on, names the device
 * ("cuda:0") and the function ("cudaMalloc") of this thread's next memory
 * event, which the memory log emits (MEM_ALLOC, MEM_FREE or MEM_FAIL) for
 * the next mate_memlog_allocate(), _deallocate() or _failure() on this
 * thread; both strings are borrowed until then. @return 0 when events are
 * off (nothing is kept). */
MATE_API int mate_event_memory_source(const char *dev, const char *command);
/*! mate_event_rank() : this process is rank (0 <= rank < world) of a distributed job, as a
 * communication library told it (from, "ncclCommInitRank", names the call). Taken only where
 * the launcher's variables gave no rank and no earlier call gave one: the live events and
 * the instruction log carry it from now on (a RANK event "pid=N rank=R world=W", the
 * frames' rank and world, the .info file). @return 1 when taken, else 0. */
MATE_API int mate_event_rank(int rank, int world, const char *from);

/* Profile. Allocations count towards the innermost block the allocating
 * thread has pushed, and a block's counts go into its parents when it is
 * popped (RMM's memory_profile). Blocks are named "file:line(function)".
 * What a thread allocates (and frees) with no block open goes to a row of
 * its own, "<outside any call>", one block over the whole run. */
/*! mate_memlog_push() : enters a block on this thread (strings copied). */
MATE_API void mate_memlog_push(mate_memlog *m, const char *file, int line, const char *function);
/*! mate_memlog_pop() : leaves the innermost block of this thread. */
MATE_API void mate_memlog_pop(mate_memlog *m);
/*! mate_memlog_profile() : the report in RMM's format ("Memory Profiling",
 * ordered by memory_peak), one line per block; malloc'ed text the caller
 * frees, or NULL without memory. */
MATE_API char *mate_memlog_profile(mate_memlog *m);

/* fork(): call prepare before, parent after in the parent, and child in
 * the child, which forgets the parent's allocations, statistics and
 * profile and writes to path (NULL: keep the template) from then on. */
MATE_API void mate_memlog_fork_prepare(mate_memlog *m);
MATE_API void mate_memlog_fork_parent(mate_memlog *m);
MATE_API void mate_memlog_fork_child(mate_memlog *m, const char *path);

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
MATE_API mate_memlog_trace *mate_memlog_read(const char *path, mate_error *err);
/*! mate_memlog_parse() : the same on len bytes of text. */
MATE_API mate_memlog_trace *mate_memlog_parse(const char *buf, size_t len, mate_error *err);
MATE_API void mate_memlog_trace_free(mate_memlog_trace *t);
/*! mate_memlog_trace_events() : the events in file order; *n gets their count. */
MATE_API const struct mate_memlog_event *mate_memlog_trace_events(const mate_memlog_trace *t, size_t *n);
/*! mate_memlog_trace_threads() : number of distinct logged threads. */
MATE_API size_t mate_memlog_trace_threads(const mate_memlog_trace *t);
/*! mate_memlog_trace_thread_id() : the logged id of thread index i. */
MATE_API uint64_t mate_memlog_trace_thread_id(const mate_memlog_trace *t, size_t i);

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
MATE_API const char *mate_alloc_replay_allocator(size_t i);
/*! mate_alloc_replay_available() : whether allocator name can run here;
 * MATE_OK, or MATE_ERR_UNSUPPORTED / MATE_ERR_ARGUMENT with err saying why. */
MATE_API int mate_alloc_replay_available(const char *name, mate_error *err);
/*! mate_alloc_replay_check() : checks that the trace is consistent (no
 * free of a pointer that is not live, no allocation of a live one) and
 * fills res's leak and size counts. @return MATE_OK, or MATE_ERR_FORMAT
 * with err naming the row (res->failed_line set). */
MATE_API int mate_alloc_replay_check(const mate_memlog_trace *t, struct mate_alloc_replay_result *res,
    mate_error *err);
/*! mate_alloc_replay() : checks the trace, then replays it against the
 * named allocator and frees what the log never freed. @return MATE_OK;
 * MATE_ERR_FORMAT for an inconsistent trace; MATE_ERR_NOMEM (or another
 * status) when the allocator failed, with err naming the row; or
 * MATE_ERR_UNSUPPORTED / MATE_ERR_ARGUMENT for an allocator that is not
 * available or not known. res is filled in every case. */
MATE_API int mate_alloc_replay(const mate_memlog_trace *t, const char *allocator,
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
MATE_API mate_record_session *mate_record_session_new(const char *dump_dir, mate_error *err);
/*! mate_record_session_dir() : the folder, for MATE_RECORD_SUMMARY. Borrowed. */
MATE_API const char *mate_record_session_dir(const mate_record_session *s);
/*! mate_record_session_totals() : adds up the summaries and the new dumps. */
MATE_API int mate_record_session_totals(mate_record_session *s, struct mate_record_totals *t,
    mate_error *err);
/*! mate_record_session_free() : removes the folder and frees s. NULL ok. */
MATE_API void mate_record_session_free(mate_record_session *s);

/*! mate_record_libmate_path() : the file of the libmate in use (for the
 * preload library to load). MATE_ERR_UNSUPPORTED when libmate is linked
 * statically. */
MATE_API int mate_record_libmate_path(char *buf, size_t len, mate_error *err);
/*! mate_record_preload_path() : libmate-preload.so: $MATE_RECORD_PRELOAD,
 * else beside the libmate in use (its mate/ folder, or the same folder in
 * a build tree), else the installed one. MATE_ERR_FORMAT when
 * $MATE_RECORD_PRELOAD is not a 64-bit ELF shared object for this machine
 * (the loader would skip it and the program run unrecorded). */
MATE_API int mate_record_preload_path(char *buf, size_t len, mate_error *err);

/* How an ELF file gets its CUDA runtime. */
enum mate_cuda_runtime_kind {
	MATE_CUDART_NONE = 0,       /* no CUDA runtime use seen */
	MATE_CUDART_SHARED = 1,     /* from libcudart.so (or it is libcudart.so) */
	MATE_CUDART_STATIC = 2      /* its own copy: preloading cannot see its calls */
};
/*! mate_elf_cuda_runtime() : the kind for the ELF file at path, or a
 * negative status (not a 64-bit little-endian ELF file, unreadable). */
MATE_API int mate_elf_cuda_runtime(const char *path, mate_error *err);
/*! mate_elf_cuda_runtime_buf() : the same for a file's len bytes in memory. */
MATE_API int mate_elf_cuda_runtime_buf(const void *buf, size_t len, mate_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MATE_RECORD_H_INCLUDED */
